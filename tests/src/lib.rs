//! Integration tests of tilekit live in `tests/`: `ui.rs` (compile-fail cases under `ui/`),
//! `cpu_kernels.rs` (every library kernel on the CPU backend against plain Rust
//! references) and `nvrtc_variants.rs` (every kernel variant, or a pairwise covering
//! subset, compiled by NVRTC for sm_80 and sm_90a).

// No `unwrap()` or `expect()` outside tests: errors are values.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod support {
    //! Shared by the integration tests.

    use std::sync::atomic::{AtomicU64, Ordering};
    use tilekit::Element;

    static SEED_COUNTER: AtomicU64 = AtomicU64::new(0);

    /// Whether a test that compiles with NVRTC can run: true when NVRTC is available;
    /// otherwise false after printing `SKIPPED`, except under `CI=true`, where a missing
    /// NVRTC fails the test (CI installs it).
    pub fn nvrtc_or_skip() -> bool {
        if tilekit_runtime::nvrtc::nvrtc_available() {
            return true;
        }
        let why = "NVRTC is not available (run `cargo xtask cuda-setup` and set TILEKIT_CUDA_ROOT)";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("SKIPPED: {why}");
        false
    }

    /// A generator with a fresh seed per call, derived from `TILEKIT_TEST_SEED` (or the
    /// clock); the seed is printed with `what` so a failing run can be reproduced.
    pub fn seeded_rng(what: &str) -> Rng {
        let base = std::env::var("TILEKIT_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            });
        let seed = base
            ^ SEED_COUNTER
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0x9e37);
        eprintln!("{what}: seed {seed} (TILEKIT_TEST_SEED={base} reproduces this run)");
        Rng(seed)
    }

    /// splitmix64: a small deterministic generator; tests print their seed so a failure
    /// can be reproduced with `TILEKIT_TEST_SEED`.
    ///
    /// ```
    /// let mut r = tilekit_tests::support::Rng(7);
    /// let v: Vec<f32> = r.vec(4, 1.0);
    /// assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
    /// ```
    pub struct Rng(pub u64);

    impl Rng {
        /// The next 64 random bits.
        pub fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        /// Uniform in [-1, 1).
        pub fn uniform(&mut self) -> f64 {
            (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }

        /// `n` values uniform in [-scale, scale), rounded to `T`.
        pub fn vec<T: Element>(&mut self, n: usize, scale: f64) -> Vec<T> {
            (0..n)
                .map(|_| T::from_f64(self.uniform() * scale))
                .collect()
        }
    }
}

pub mod hopper_kernels {
    //! Kernels the Hopper-engine tests share (`hopper_engine.rs` compiles them with NVRTC,
    //! `gpu_hopper.rs` runs them): a user's GEMM with a fused epilogue, and GEMMs whose code
    //! after the pipelined loop needs a block-wide barrier, which on the engine is the
    //! consumer warpgroups' alone.

    use tilekit::prelude::*;

    /// A user's GEMM with a fused bias + GELU epilogue, as README.md writes one.
    #[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
    #[tune(BM = [128, 64], BN = [256, 128], BK = [64, 32], STAGES = [4, 3], WARPS = [8, 4])]
    #[constraint(smem_bytes() <= max_smem())]
    #[shapes(a = [M, K], b = [K, N], bias = [N], c = [M, N])]
    pub fn user_gemm_bias_gelu<T: Float>(
        a: &Tensor2<T>,
        b: &Tensor2<T>,
        bias: &Tensor1<T>,
        c: &mut Tensor2<T>,
    ) {
        let (pm, pn) = (program_id(0), program_id(1));
        let mut acc = zeros::<f32, BM, BN>();
        for k in pipelined(0..a.cols(), BK, STAGES) {
            acc = dot(
                load_tile(a, [pm * BM, k], [BM, BK]),
                load_tile(b, [k, pn * BN], [BK, BN]),
                acc,
            );
        }
        let v = acc + load_tile(bias, [pn * BN], [BN]).to_f32();
        store_tile(c, [pm * BM, pn * BN], gelu(v).cast::<T>());
    }

    /// A user's TF32 GEMM (`dot_tf32` on f32 tensors) with a fused bias, as README.md writes
    /// one: on sm_90a the Hopper engine fills its rings with the producer warpgroup
    /// (rounding to TF32, B transposed) and runs TF32 wgmma.
    #[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
    #[tune(BM = [128, 64], BN = [256, 128], BK = [32], STAGES = [4, 3], WARPS = [8, 4], CLUSTER = [1, 2], TAIL_SPLIT = [1, 4])]
    #[constraint(smem_bytes() <= max_smem())]
    #[shapes(a = [M, K], b = [K, N], bias = [N], c = [M, N])]
    pub fn user_matmul_tf32_bias(
        a: &Tensor2<f32>,
        b: &Tensor2<f32>,
        bias: &Tensor1<f32>,
        c: &mut Tensor2<f32>,
    ) {
        let (pm, pn) = (program_id(0), program_id(1));
        let mut acc = zeros::<f32, BM, BN>();
        for k in pipelined(0..a.cols(), BK, STAGES) {
            let ta = load_tile(a, [pm * BM, k], [BM, BK]);
            let tb = load_tile(b, [k, pn * BN], [BK, BN]);
            acc = dot_tf32(ta, tb, acc);
        }
        store_tile(
            c,
            [pm * BM, pn * BN],
            acc + load_tile(bias, [pn * BN], [BN]),
        );
    }

    /// C = A @ B and, per program, the column sums of its f32 accumulator tile:
    /// `s[pm, pn * BN + j] = sum_i acc[i, j]`. The column sum reduces across the 8 warps
    /// that split the tile's rows, through shared memory and `tk::sync()`.
    #[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
    #[tune(BM = [128, 64], BN = [128, 256], BK = [64], STAGES = [3, 4], WARPS = [8, 4])]
    #[constraint(smem_bytes() <= max_smem())]
    #[shapes(a = [M, K], b = [K, N], c = [M, N], s = [P, N])]
    pub fn gemm_colsum<T: Float>(
        a: &Tensor2<T>,
        b: &Tensor2<T>,
        c: &mut Tensor2<T>,
        s: &mut Tensor2<f32>,
    ) {
        let (pm, pn) = (program_id(0), program_id(1));
        let mut acc = zeros::<f32, BM, BN>();
        for k in pipelined(0..a.cols(), BK, STAGES) {
            acc = dot(
                load_tile(a, [pm * BM, k], [BM, BK]),
                load_tile(b, [k, pn * BN], [BK, BN]),
                acc,
            );
        }
        store_tile(c, [pm * BM, pn * BN], acc.cast::<T>());
        store_tile(s, [pm, pn * BN], expand_dims(sum(acc, 0), 0));
    }

    /// The library's GEMM with `SCHEDULE` in its space: `cooperative` keeps one program per
    /// block where `WARPS = 4` would otherwise run two in ping-pong.
    #[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
    #[tune(BM = [64, 128], BN = [256, 128], BK = [64], STAGES = [4], WARPS = [4, 8], SCHEDULE = [pingpong, cooperative], TAIL_SPLIT = [1, 4])]
    #[shapes(a = [M, K], b = [K, N], c = [M, N])]
    pub fn gemm_scheduled<T: Float>(a: &Tensor2<T>, b: &Tensor2<T>, c: &mut Tensor2<T>) {
        let (pm, pn) = (program_id(0), program_id(1));
        let mut acc = zeros::<f32, BM, BN>();
        for k in pipelined(0..a.cols(), BK, STAGES) {
            acc = dot(
                load_tile(a, [pm * BM, k], [BM, BK]),
                load_tile(b, [k, pn * BN], [BK, BN]),
                acc,
            );
        }
        store_tile(c, [pm * BM, pn * BN], acc.cast::<T>());
    }

    /// A GEMM with a SwiGLU epilogue on halves of its accumulator (`c = silu(acc[:, :BN/2]) *
    /// acc[:, BN/2:]`): the slices read a shared-memory copy of the accumulator that lives
    /// outside the scratch region, so it keeps one program per block.
    #[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
    #[tune(BM = [64], BN = [128], BK = [64], STAGES = [2], WARPS = [4])]
    #[shapes(a = [M, K], b = [K, N], c = [M, H])]
    pub fn gemm_swiglu_halves<T: Float>(a: &Tensor2<T>, b: &Tensor2<T>, c: &mut Tensor2<T>) {
        let (pm, pn) = (program_id(0), program_id(1));
        let mut acc = zeros::<f32, BM, BN>();
        for k in pipelined(0..a.cols(), BK, STAGES) {
            acc = dot(
                load_tile(a, [pm * BM, k], [BM, BK]),
                load_tile(b, [k, pn * BN], [BK, BN]),
                acc,
            );
        }
        let g = acc.slice(0..BM, 0..BN / 2);
        let u = acc.slice(0..BM, BN / 2..BN);
        store_tile(
            c,
            [pm * BM, pn * (BN / 2)],
            (g * sigmoid(g) * u).cast::<T>(),
        );
    }

    /// A GEMM whose loop's trips depend on the program (row block `pm` sums the first
    /// `pm + 1` K tiles): the two ping-pong programs would read different numbers of ring
    /// stages per tile, so it keeps one program per block.
    #[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
    #[tune(BM = [64], BN = [256], BK = [64], STAGES = [4], WARPS = [4], CLUSTER = [1, 2], TAIL_SPLIT = [1, 4])]
    #[shapes(a = [M, K], b = [K, N], c = [M, N])]
    pub fn gemm_prefix<T: Float>(a: &Tensor2<T>, b: &Tensor2<T>, c: &mut Tensor2<T>) {
        let (pm, pn) = (program_id(0), program_id(1));
        let mut acc = zeros::<f32, BM, BN>();
        for k in pipelined(0..(pm + 1) * BK, BK, STAGES) {
            acc = dot(
                load_tile(a, [pm * BM, k], [BM, BK]),
                load_tile(b, [k, pn * BN], [BK, BN]),
                acc,
            );
        }
        store_tile(c, [pm * BM, pn * BN], acc.cast::<T>());
    }
}

pub mod references {
    //! Plain f64 references shared by the CPU and GPU tests.

    use tilekit_kernels::AdamW;

    /// AdamW in f64 on one tensor, `grads.len()` steps from zero moments: PyTorch's formula
    /// (decoupled weight decay, bias corrections).
    pub fn adamw_ref(p: &mut [f64], grads: &[Vec<f64>], h: &AdamW) {
        let (b1, b2) = (f64::from(h.beta1), f64::from(h.beta2));
        let (lr, eps, wd) = (f64::from(h.lr), f64::from(h.eps), f64::from(h.weight_decay));
        let (mut m, mut v) = (vec![0.0; p.len()], vec![0.0; p.len()]);
        for (t, g) in grads.iter().enumerate() {
            let step = i32::try_from(t + 1).unwrap_or(i32::MAX);
            let (bc1, bc2) = (1.0 - b1.powi(step), 1.0 - b2.powi(step));
            for i in 0..p.len() {
                p[i] *= 1.0 - lr * wd;
                m[i] = b1 * m[i] + (1.0 - b1) * g[i];
                v[i] = b2 * v[i] + (1.0 - b2) * g[i] * g[i];
                p[i] -= lr / bc1 * m[i] / (v[i].sqrt() / bc2.sqrt() + eps);
            }
        }
    }
}
