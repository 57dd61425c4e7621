//! Rank-4 tensors end to end, written as an attention user holds their data: `[B, S, H, D]`
//! activations. On the host: `Tensor4` and its views (`permute` to the head-major
//! `[B, H, S, D]` view, `narrow`, `reshape` to and from rank 3), no copy. In a kernel: a
//! `&Tensor4<T>` parameter, its extents (`x.dim(a)`, `x.rows()`), and its rows (`x.row(b)`,
//! a rank-3 view; `x.row(b).row(h)`, a rank-2 one) read and written with `load_tile` /
//! `store_tile`. On the CPU backend against plain Rust references, every variant compiled
//! by NVRTC (skipped without NVRTC, except under `CI=true`), and on a CUDA GPU against the
//! CPU backend (`#[ignore = "needs a CUDA GPU"]`). Inputs are small integers, so every
//! result is exact in every element type and comparisons are bitwise; outputs start as NaN.

use tilekit::prelude::*;
use tilekit::{Config, Element};

/// `y[b, h, s, :] = 2 x[b, h, s, :]` over a `[B, H, S, D]` view `x` (typically the
/// head-major `permute([0, 2, 1, 3])` of `[B, S, H, D]` activations): each program one
/// `[BS, BD]` tile of one (batch, head), through `x.row(b).row(h)`.
#[kernel(grid = [cdiv(x.dim(2), BS), x.dim(1), x.rows()])]
#[tune(BS = [16, 32], BD = [32, 64], WARPS = [4])]
#[constraint(x.dim(3) <= BD)]
#[shapes(x = [B, H, S, D], y = [B, H, S, D])]
pub fn heads_scale<T: Float>(x: &Tensor4<T>, y: &mut Tensor4<T>) {
    let s0 = program_id(0) * BS;
    let h = program_id(1);
    let b = program_id(2);
    let t = load_tile(x.row(b).row(h), [s0, 0], [BS, BD]).to_f32();
    store_tile(y.row(b).row(h), [s0, 0], (2.0 * t).cast::<T>());
}

/// `o[b, s, h, :] = q[b, s, h, :] + 1` for `[B, S, H, D]` tensors, a `[BM, 1, BD]` tile of
/// one head per program out of `q.row(b)` (what an attention kernel's Q block read looks
/// like on `[B, S, H, D]` data without a permuted view).
#[kernel(grid = [cdiv(q.dim(1), BM), q.rows(), q.dim(2)])]
#[tune(BM = [16, 64], BD = [64], WARPS = [4, 8])]
#[constraint(q.dim(3) <= BD)]
#[shapes(q = [B, S, H, D], o = [B, S, H, D])]
pub fn q_block_plus_one<T: Float>(q: &Tensor4<T>, o: &mut Tensor4<T>) {
    let b = program_id(1);
    let h = program_id(2);
    let r0 = program_id(0) * BM;
    let t = load_tile(q.row(b), [r0, h, 0], [BM, 1, BD]).to_f32();
    store_tile(o.row(b), [r0, h, 0], (t + 1.0).cast::<T>());
}

/// Small integers in `-8..8` (exact in every float type).
fn ints<T: Element>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            T::from_f64((s % 16) as f64 - 8.0)
        })
        .collect()
}

/// `[B, S, H, D]` shapes: edges in every axis (S and D not multiples of any tile), one
/// batch, one head.
const SHAPES: &[[usize; 4]] = &[[2, 37, 3, 24], [1, 5, 1, 64], [3, 64, 2, 17], [1, 1, 4, 1]];

fn heads_configs() -> Vec<Config> {
    heads_scale::SPEC.space().expect("space").enumerate()
}

fn q_configs() -> Vec<Config> {
    q_block_plus_one::SPEC.space().expect("space").enumerate()
}

/// `heads_scale` over the head-major view of `[B, S, H, D]` data: `y` is `[B, H, S, D]`.
fn run_heads<T: Float>(rt: &Runtime, cfg: &Config, x: &[T], [b, s, h, d]: [usize; 4]) -> Vec<T> {
    let tx = Tensor4::from_vec(rt, x.to_vec(), [b, s, h, d]).unwrap();
    let mut ty = Tensor4::full(rt, [b, h, s, d], T::from_f64(f64::NAN)).unwrap();
    heads_scale::launch_with(rt, cfg, &tx.permute([0, 2, 1, 3]).unwrap(), &mut ty).unwrap();
    ty.to_vec().unwrap()
}

fn heads_reference<T: Element>(x: &[T], [b, s, h, d]: [usize; 4]) -> Vec<f64> {
    let mut y = vec![f64::NAN; x.len()];
    for (bi, si, hi, di) in indices([b, s, h, d]) {
        y[((bi * h + hi) * s + si) * d + di] = 2.0 * x[((bi * s + si) * h + hi) * d + di].to_f64();
    }
    y
}

fn run_q<T: Float>(rt: &Runtime, cfg: &Config, q: &[T], shape: [usize; 4]) -> Vec<T> {
    let tq = Tensor4::from_vec(rt, q.to_vec(), shape).unwrap();
    let mut to = Tensor4::full(rt, shape, T::from_f64(f64::NAN)).unwrap();
    q_block_plus_one::launch_with(rt, cfg, &tq, &mut to).unwrap();
    to.to_vec().unwrap()
}

fn indices([b, s, h, d]: [usize; 4]) -> impl Iterator<Item = (usize, usize, usize, usize)> {
    (0..b).flat_map(move |bi| {
        (0..s).flat_map(move |si| (0..h).flat_map(move |hi| (0..d).map(move |di| (bi, si, hi, di))))
    })
}

fn same(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g == w, "{what}: element {i}: got {g}, want {w}");
    }
}

fn f64s<T: Element>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

#[test]
fn cpu_rank4_kernels_match_the_references() {
    let rt = Runtime::cpu();
    for &shape in SHAPES {
        let n: usize = shape.iter().product();
        let x = ints::<f32>(n, n as u64);
        let xb = ints::<bf16>(n, 7 * n as u64);
        for cfg in heads_configs() {
            if shape[3] > cfg.int("BD").unwrap() as usize {
                continue;
            }
            let what = format!("heads_scale {shape:?} [{cfg}]");
            same(
                &what,
                &f64s(&run_heads(&rt, &cfg, &x, shape)),
                &heads_reference(&x, shape),
            );
            same(
                &what,
                &f64s(&run_heads(&rt, &cfg, &xb, shape)),
                &heads_reference(&xb, shape),
            );
        }
        for cfg in q_configs() {
            if shape[3] > 64 {
                continue;
            }
            let want: Vec<f64> = x.iter().map(|v| f64::from(*v) + 1.0).collect();
            same(
                &format!("q_block_plus_one {shape:?} [{cfg}]"),
                &f64s(&run_q(&rt, &cfg, &x, shape)),
                &want,
            );
        }
    }
}

/// The declared constraint refuses a head dimension wider than every `BD`, before
/// anything is written; the plain `launch` picks a configuration that fits.
#[test]
fn rank4_launches_are_checked() {
    let rt = Runtime::cpu();
    let x = Tensor4::from_vec(&rt, ints::<f32>(2 * 3 * 4 * 65, 1), [2, 3, 4, 65]).unwrap();
    let mut y = Tensor4::full(&rt, [2, 4, 3, 65], f32::NAN).unwrap();
    let e = heads_scale::launch(&rt, &x.permute([0, 2, 1, 3]).unwrap(), &mut y).unwrap_err();
    assert!(e.to_string().contains("BD"), "{e}");
    assert!(y.to_vec().unwrap().iter().all(|v| v.is_nan()));
    // A rank-3 argument for a rank-4 parameter is refused by the typed launcher at compile
    // time; through the untyped API it is a rank error.
    let x3 = Tensor3::<f32>::zeros(&rt, [2, 3, 4]).unwrap();
    let mut y4 = Tensor4::<f32>::zeros(&rt, [2, 3, 4, 1]).unwrap();
    let e = tilekit::launch(
        &rt,
        &heads_scale::SPEC,
        &[tilekit::ir::DType::F32],
        &mut [(&x3).into(), (&mut y4).into()],
    )
    .unwrap_err();
    assert!(e.to_string().contains("rank"), "{e}");
    // Shapes: a [B, S, H, D] tensor and the [B * S, H, D] reshape see the same elements.
    let data: Vec<f32> = (0..2 * 3 * 4 * 5).map(|i| i as f32).collect();
    let t = Tensor4::from_vec(&rt, data.clone(), [2, 3, 4, 5]).unwrap();
    assert_eq!(t.reshape([6, 4, 5]).unwrap().to_vec().unwrap(), data);
    let heads = t.permute([0, 2, 1, 3]).unwrap();
    assert_eq!(
        (heads.shape(), heads.strides()),
        ([2, 4, 3, 5], [60, 5, 20, 1])
    );
    let one = heads.narrow(1, 2, 1).unwrap().to_vec().unwrap();
    let want: Vec<f32> = indices([2, 3, 1, 5])
        .map(|(b, s, _, d)| data[((b * 3 + s) * 4 + 2) * 5 + d])
        .collect();
    assert_eq!(one, want);
    assert!(t.permute([0, 2, 1, 3]).unwrap().reshape([120]).is_err());
}

#[test]
fn rank4_variants_compile_with_nvrtc() {
    use rayon::prelude::*;
    use tilekit_codegen::{prelude_headers, variant_source, Target};
    use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let targets = [Target::Sm80, Target::Sm90a];
    for (name, spec) in [
        ("heads_scale", &heads_scale::SPEC),
        ("q_block_plus_one", &q_block_plus_one::SPEC),
    ] {
        let kernel = spec.kernel().expect("kernel IR");
        let valid = tilekit_tuner::valid_variants(kernel, &targets);
        assert!(!valid.is_empty(), "{name}");
        valid.par_iter().for_each(|v| {
            let src = variant_source(kernel, spec.cuda_template, &v.to_variant())
                .unwrap_or_else(|e| panic!("{name} {v}: {e}"));
            assert!(src.contains("const tk::TensorArg4&"), "{name}: {src}");
            let opts = CompileOptions::new(v.target.arch()).expect("options");
            if let Err(e) = compile_cubin(&src, &format!("{name}.cu"), prelude_headers(), &opts) {
                panic!("NVRTC failed for {name} variant {v}\n{e}");
            }
        });
        eprintln!("{name}: {} valid variants compiled", valid.len());
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_rank4_kernels_match_cpu() {
    let gpu = Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"));
    let cpu = Runtime::cpu();
    let shapes = [
        [2usize, 37, 3, 24],
        [3, 300, 5, 64],
        [1, 1, 4, 1],
        [2, 129, 2, 17],
    ];
    for shape in shapes {
        let n: usize = shape.iter().product();
        let x = ints::<f32>(n, n as u64);
        let xb = ints::<bf16>(n, 3 * n as u64);
        for cfg in heads_configs() {
            if shape[3] > cfg.int("BD").unwrap() as usize {
                continue;
            }
            let what = format!("heads_scale {shape:?} [{cfg}]");
            assert_eq!(
                run_heads(&gpu, &cfg, &x, shape),
                run_heads(&cpu, &cfg, &x, shape),
                "{what} f32"
            );
            assert_eq!(
                run_heads(&gpu, &cfg, &xb, shape),
                run_heads(&cpu, &cfg, &xb, shape),
                "{what} bf16"
            );
            same(
                &what,
                &f64s(&run_heads(&gpu, &cfg, &x, shape)),
                &heads_reference(&x, shape),
            );
        }
        for cfg in q_configs() {
            let what = format!("q_block_plus_one {shape:?} [{cfg}]");
            assert_eq!(
                run_q(&gpu, &cfg, &xb, shape),
                run_q(&cpu, &cfg, &xb, shape),
                "{what}"
            );
        }
        // A strided rank-4 argument on the GPU: the head-major view of a narrowed batch.
        let tx = Tensor4::from_vec(&gpu, x.clone(), shape).unwrap();
        let cfg = heads_configs()
            .into_iter()
            .find(|c| c.int("BD") == Some(64))
            .unwrap();
        if shape[0] > 1 && shape[3] <= 64 {
            let view = tx
                .narrow(0, 1, shape[0] - 1)
                .unwrap()
                .permute([0, 2, 1, 3])
                .unwrap();
            let [b, s, h, d] = shape;
            let mut ty = Tensor4::full(&gpu, [b - 1, h, s, d], f32::NAN).unwrap();
            heads_scale::launch_with(&gpu, &cfg, &view, &mut ty).unwrap();
            let want = heads_reference(&x[s * h * d..], [b - 1, s, h, d]);
            same("narrowed heads_scale", &f64s(&ty.to_vec().unwrap()), &want);
        }
    }
}
