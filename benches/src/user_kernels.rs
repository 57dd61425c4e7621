//! Kernels written with 2-D tiles the way a new user writes them, checked in and measured
//! as written (`tilekit-bench --only user2d`): a fused x + bias + residual -> RMSNorm over
//! `[ROWS, BLOCK]` tiles, a 2-D copy, a transpose through `trans`; and (`--only stencil`)
//! a 5-point stencil from one halo tile and five slices of it; (`--only rotary`) a 3-D
//! rotary embedding from two slices of one tile and a `cat`.
//!
//! ```
//! use tilekit::prelude::*;
//! use tilekit_benches::user_kernels::transpose2d;
//! let rt = Runtime::cpu();
//! let x = Tensor2::<f32>::from_vec(&rt, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3]).unwrap();
//! let mut y = Tensor2::<f32>::zeros(&rt, [3, 2]).unwrap();
//! transpose2d::launch(&rt, &x, &mut y).unwrap();
//! assert_eq!(y.to_vec().unwrap(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
//! ```

use tilekit::prelude::*;

/// `h = x + bias + residual` (bias broadcast over rows), then
/// `y = h / sqrt(mean(h^2) + eps) * w` along each row, `ROWS` rows per program: one
/// `[ROWS, BLOCK]` tile per input, the row statistics reduced along axis 1 and broadcast
/// back. Arithmetic in f32; `h` is rounded to `T` once, and `y` is computed from the
/// rounded `h` (what a reader of `h` sees).
#[kernel(grid = [cdiv(x.rows(), ROWS)])]
#[tune(ROWS = [1, 2, 4], BLOCK = [4096, 8192], WARPS = [8, 4, 16])]
#[constraint(x.cols() <= BLOCK)]
#[shapes(x = [M, N], bias = [N], residual = [M, N], w = [N], h = [M, N], y = [M, N], eps = 1e-5)]
#[cost(flops = 6 * M * N)]
pub fn add_rmsnorm<T: Float>(
    x: &Tensor2<T>,
    bias: &Tensor1<T>,
    residual: &Tensor2<T>,
    w: &Tensor1<T>,
    h: &mut Tensor2<T>,
    y: &mut Tensor2<T>,
    eps: f32,
) {
    let r0 = program_id(0) * ROWS;
    let xv = load_tile(x, [r0, 0], [ROWS, BLOCK]).to_f32();
    let rv = load_tile(residual, [r0, 0], [ROWS, BLOCK]).to_f32();
    let b = load_tile(bias, [0], [BLOCK]).to_f32();
    let hv = (xv + b + rv).cast::<T>();
    store_tile(h, [r0, 0], hv);
    let hf = hv.to_f32();
    let mean_sq = sum(hf * hf, 1) / x.cols().to_f32();
    let inv = rsqrt(mean_sq + eps);
    let g = load_tile(w, [0], [BLOCK]).to_f32();
    store_tile(y, [r0, 0], (hf * expand_dims(inv, 1) * g).cast::<T>());
}

/// `y = 4 x - (north + south + west + east)` (0 outside `x`), one `[BM, BN]` tile per
/// program from one `[BM + 2, BN + 2]` halo tile and five slices of it — issue 29's
/// stencil as a user writes it (the same kernel as `tests/tests/stencil.rs`'s `stencil5`,
/// which checks it on the CPU, with NVRTC and on the GPU).
#[kernel(grid = [cdiv(x.rows(), BM), cdiv(x.cols(), BN)])]
#[tune(BM = [16, 8, 32], BN = [64, 32, 128], WARPS = [4, 8])]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = 5 * M * N)]
pub fn stencil5<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let r0 = program_id(0) * BM;
    let c0 = program_id(1) * BN;
    let h = load_tile(x, [r0 - 1, c0 - 1], [BM + 2, BN + 2]).to_f32();
    let centre = h.slice(1..BM + 1, 1..BN + 1);
    let north = h.slice(0..BM, 1..BN + 1);
    let south = h.slice(2..BM + 2, 1..BN + 1);
    let west = h.slice(1..BM + 1, ..BN);
    let east = h.slice(1..BM + 1, 2..);
    store_tile(
        y,
        [r0, c0],
        (4.0 * centre - north - south - west - east).cast::<T>(),
    );
}

/// Rotary embedding (rotate-half) over `[S, NH, D]` (positions, heads, head dimension) as a
/// user writes it: one `[ROWS, H, 2 HALF]` tile per program split into halves with `slice`,
/// the per-position `cos` / `sin` (`[S, HALF]`) broadcast over the heads, the two results
/// joined with `cat`: `y = [lo c - hi s, hi c + lo s]`, arithmetic in f32.
#[kernel(grid = [cdiv(x.dim(0), ROWS)])]
#[tune(ROWS = [2, 1, 4], H = [32], HALF = [64], WARPS = [8, 16])]
#[constraint(x.dim(1) == H && x.dim(2) == 2 * HALF)]
#[shapes(x = [S, NH, D], cos = [S, E], sin = [S, E], y = [S, NH, D])]
#[cost(flops = 6 * S * NH * D)]
pub fn rotary3d<T: Float>(x: &Tensor3<T>, cos: &Tensor2<T>, sin: &Tensor2<T>, y: &mut Tensor3<T>) {
    let s0 = program_id(0) * ROWS;
    let xt = load_tile(x, [s0, 0, 0], [ROWS, H, 2 * HALF]).to_f32();
    let lo = xt.slice(.., .., ..HALF);
    let hi = xt.slice(.., .., HALF..);
    let c = expand_dims(load_tile(cos, [s0, 0], [ROWS, HALF]).to_f32(), 1);
    let s = expand_dims(load_tile(sin, [s0, 0], [ROWS, HALF]).to_f32(), 1);
    store_tile(
        y,
        [s0, 0, 0],
        cat([lo * c - hi * s, hi * c + lo * s], 2).cast::<T>(),
    );
}

/// `y = x` one `[BM, BN]` tile per program.
#[kernel(grid = [cdiv(x.rows(), BM), cdiv(x.cols(), BN)])]
#[tune(BM = [32, 16, 64], BN = [256, 128, 512], WARPS = [4, 8])]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = 0)]
pub fn copy2d<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let r0 = program_id(0) * BM;
    let c0 = program_id(1) * BN;
    store_tile(y, [r0, c0], load_tile(x, [r0, c0], [BM, BN]));
}

/// `y = x^T` (`x` `[M, N]`, `y` `[N, M]`): the `[BM, BN]` tile at `(r0, c0)` of `x`
/// becomes the `[BN, BM]` tile at `(c0, r0)` of `y`.
#[kernel(grid = [cdiv(x.rows(), BM), cdiv(x.cols(), BN)])]
#[tune(BM = [64, 32, 128], BN = [64, 32, 128], WARPS = [4, 8])]
#[shapes(x = [M, N], y = [N, M])]
#[cost(flops = 0)]
pub fn transpose2d<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let r0 = program_id(0) * BM;
    let c0 = program_id(1) * BN;
    store_tile(y, [c0, r0], trans(load_tile(x, [r0, c0], [BM, BN])));
}

/// The three kernels' specs.
pub static ALL: &[&tilekit::KernelSpec] = &[
    &add_rmsnorm::SPEC,
    &copy2d::SPEC,
    &transpose2d::SPEC,
    &matmul_tf32::SPEC,
    &matmul_f32::SPEC,
    &rotary3d::SPEC,
];

/// `C = A @ B` on f32 tensors with TF32 tensor cores (`dot_tf32`: operands rounded to TF32
/// nearest-even, f32 accumulation), written as a user would: the library matmul's body
/// with `dot_tf32`. On sm_90a, `BM = 16 x WARPS` variants run the Hopper engine's TF32 path
/// (producer-filled rings, TF32 wgmma). Measured by `tilekit-bench --only matmul` (tf32
/// 4096^3).
#[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
#[tune(BM = [128, 64], BN = [128, 256, 64], BK = [32, 16], STAGES = [4, 3, 2, 6], WARPS = [8, 4])]
#[constraint(smem_bytes() <= max_smem())]
#[constraint(BM * BN <= 4096 * WARPS)]
#[shapes(a = [M, K], b = [K, N], c = [M, N])]
#[cost(flops = 2 * M * N * K)]
pub fn matmul_tf32(a: &Tensor2<f32>, b: &Tensor2<f32>, c: &mut Tensor2<f32>) {
    let (pm, pn) = (program_id(0), program_id(1));
    let mut acc = zeros::<f32, BM, BN>();
    for k in pipelined(0..a.cols(), BK, STAGES) {
        let ta = load_tile(a, [pm * BM, k], [BM, BK]);
        let tb = load_tile(b, [k, pn * BN], [BK, BN]);
        acc = dot_tf32(ta, tb, acc);
    }
    store_tile(c, [pm * BM, pn * BN], acc);
}

/// `C = A @ B` on f32 tensors, exact (`dot`: f32 products summed with fmaf in k order on
/// FMA units, no TF32), written as a user would: the library matmul's body with `dot` on
/// f32. The FMA engine blocks registers like an SGEMM (each thread the outer product of its
/// rows of A and columns of B, 8 x 8 or more), so the space keeps to tiles of at least 64
/// accumulators per thread; `Padded` shared memory makes every operand read an immediate
/// offset from one register, and `MIN_BLOCKS = 2` trades registers for a second program per
/// SM. Measured by `tilekit-bench --only matmul` (f32 4096^3, beside cuBLAS SGEMM without
/// TF32).
#[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
#[tune(BM = [128, 64, 256], BN = [128, 64], BK = [16, 8], STAGES = [3], WARPS = [8, 4],
       SMEM = [Padded, Swizzle128], MIN_BLOCKS = [1, 2])]
#[constraint(smem_bytes() <= max_smem())]
#[constraint(BM * BN <= 4096 * WARPS)]
#[constraint(BM * BN >= 2048 * WARPS)]
#[shapes(a = [M, K], b = [K, N], c = [M, N])]
#[cost(flops = 2 * M * N * K)]
pub fn matmul_f32(a: &Tensor2<f32>, b: &Tensor2<f32>, c: &mut Tensor2<f32>) {
    let (pm, pn) = (program_id(0), program_id(1));
    let mut acc = zeros::<f32, BM, BN>();
    for k in pipelined(0..a.cols(), BK, STAGES) {
        let ta = load_tile(a, [pm * BM, k], [BM, BK]);
        let tb = load_tile(b, [k, pn * BN], [BK, BN]);
        acc = dot(ta, tb, acc);
    }
    store_tile(c, [pm * BM, pn * BN], acc);
}
