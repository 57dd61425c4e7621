//! `#[tile_fn]` helpers on the CPU backend: from another module, from another crate
//! (`tilekit_kernels::welford`, also from a helper of this crate), generic over the
//! element type (f32 and bf16), nested,
//! with tuple results and inside a loop; results against plain Rust.

use tilekit::prelude::*;

mod helpers {
    use tilekit::prelude::*;

    /// `x * a + b`, computed in f32, in the element type of `x`.
    #[tile_fn]
    pub fn axpb<T: Float>(x: Tile<T, BLOCK>, a: f32, b: f32) -> Tile<T, BLOCK> {
        let y = x.to_f32() * a + b;
        y.cast::<T>()
    }

    /// A helper calling a helper of its own module: `(x * a + b)^2`, as T.
    #[tile_fn]
    pub fn axpb_squared<T: Float>(x: Tile<T, BLOCK>, a: f32, b: f32) -> Tile<T, BLOCK> {
        let y = axpb(x, a, b).to_f32();
        (y * y).cast::<T>()
    }

    /// A helper calling a helper of another crate: the variance of the masked lanes.
    #[tile_fn]
    pub fn variance(v: Tile<f32, BLOCK>, mask: Tile<bool, BLOCK>, n: f32) -> f32 {
        let (_, m2, _) = tilekit_kernels::welford(v, mask, n);
        m2 / n
    }

    /// The largest and the smallest of the masked lanes.
    #[tile_fn]
    pub fn extremes(v: Tile<f32, BLOCK>, mask: Tile<bool, BLOCK>) -> (f32, f32) {
        let hi = max(where_(mask, v, f32::NEG_INF), 0);
        let lo = min(where_(mask, v, f32::INF), 0);
        (hi, lo)
    }
}

use helpers::extremes;

fn rows(m: usize, n: usize) -> Vec<f32> {
    (0..m * n)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 8.0)
        .collect()
}

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [64, 128])]
#[constraint(x.cols() <= BLOCK)]
fn affine<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>, z: &mut Tensor2<T>) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let mask = cols < x.cols();
    let v = load(x.row(row), cols, mask, 0.0);
    store(y.row(row), cols, helpers::axpb(v, 2.0, 1.0), mask);
    store(z.row(row), cols, helpers::axpb_squared(v, 0.5, -1.0), mask);
}

#[test]
fn a_generic_helper_from_another_module_runs_with_f32_and_bf16() {
    let rt = Runtime::cpu();
    let (m, n) = (3, 50);
    let xs = rows(m, n);
    let x = Tensor2::<f32>::from_vec(&rt, xs.clone(), [m, n]).unwrap();
    let mut y = Tensor2::<f32>::zeros(&rt, [m, n]).unwrap();
    let mut z = Tensor2::<f32>::zeros(&rt, [m, n]).unwrap();
    affine::launch(&rt, &x, &mut y, &mut z).unwrap();
    let want_y: Vec<f32> = xs.iter().map(|v| v * 2.0 + 1.0).collect();
    let want_z: Vec<f32> = xs
        .iter()
        .map(|v| (v * 0.5 - 1.0) * (v * 0.5 - 1.0))
        .collect();
    assert_eq!(y.to_vec().unwrap(), want_y);
    assert_eq!(z.to_vec().unwrap(), want_z);

    let xb: Vec<bf16> = xs.iter().map(|&v| bf16::from_f32(v)).collect();
    let x = Tensor2::<bf16>::from_vec(&rt, xb.clone(), [m, n]).unwrap();
    let mut y = Tensor2::<bf16>::zeros(&rt, [m, n]).unwrap();
    let mut z = Tensor2::<bf16>::zeros(&rt, [m, n]).unwrap();
    affine::launch(&rt, &x, &mut y, &mut z).unwrap();
    let want_y: Vec<bf16> = xb
        .iter()
        .map(|v| bf16::from_f32(v.to_f32() * 2.0 + 1.0))
        .collect();
    // The nested helper rounds to bf16 between the two helpers, as written.
    let want_z: Vec<bf16> = xb
        .iter()
        .map(|v| {
            let t = bf16::from_f32(v.to_f32() * 0.5 - 1.0).to_f32();
            bf16::from_f32(t * t)
        })
        .collect();
    assert_eq!(y.to_vec().unwrap(), want_y);
    assert_eq!(z.to_vec().unwrap(), want_z);
}

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [64])]
#[constraint(x.cols() <= BLOCK)]
fn row_stats(
    x: &Tensor2<f32>,
    mean: &mut Tensor1<f32>,
    var: &mut Tensor1<f32>,
    var2: &mut Tensor1<f32>,
    spread: &mut Tensor1<f32>,
) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let mask = cols < x.cols();
    let v = load(x.row(row), cols, mask, 0.0);
    let n = x.cols().to_f32();
    let (mu, m2, _) = tilekit_kernels::welford(v, mask, n);
    let (hi, lo) = extremes(v, mask);
    store(mean, row, mu);
    store(var, row, m2 / n);
    store(var2, row, helpers::variance(v, mask, n));
    store(spread, row, hi - lo);
}

#[test]
fn a_helper_from_another_crate_and_tuple_results() {
    let rt = Runtime::cpu();
    let (m, n) = (5, 37);
    let xs = rows(m, n);
    let x = Tensor2::<f32>::from_vec(&rt, xs.clone(), [m, n]).unwrap();
    let mut mean = Tensor1::<f32>::zeros(&rt, [m]).unwrap();
    let mut var = Tensor1::<f32>::zeros(&rt, [m]).unwrap();
    let mut var2 = Tensor1::<f32>::zeros(&rt, [m]).unwrap();
    let mut spread = Tensor1::<f32>::zeros(&rt, [m]).unwrap();
    row_stats::launch(&rt, &x, &mut mean, &mut var, &mut var2, &mut spread).unwrap();
    let (mean, var, var2, spread) = (
        mean.to_vec().unwrap(),
        var.to_vec().unwrap(),
        var2.to_vec().unwrap(),
        spread.to_vec().unwrap(),
    );
    for (r, row) in xs.chunks(n).enumerate() {
        let mu = row.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
        let v = row
            .iter()
            .map(|&v| (f64::from(v) - mu).powi(2))
            .sum::<f64>()
            / n as f64;
        let hi = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let lo = row.iter().cloned().fold(f32::INFINITY, f32::min);
        assert!((f64::from(mean[r]) - mu).abs() < 1e-5, "mean of row {r}");
        assert!((f64::from(var[r]) - v).abs() < 1e-4, "variance of row {r}");
        assert_eq!(var2[r], var[r], "variance through a nested helper, row {r}");
        assert_eq!(spread[r], hi - lo, "spread of row {r}");
    }
}

/// A helper called in a loop, on a loop-carried value.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [16])]
fn chunked_max(x: &Tensor2<f32>, y: &mut Tensor1<f32>) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let mut m = f32::NEG_INF;
    for c in (0..x.cols()).step_by(BLOCK) {
        let mask = cols + c < x.cols();
        let v = load(x.row(row), cols + c, mask, 0.0);
        let (hi, _) = extremes(v, mask);
        m = maximum(m, hi);
    }
    store(y, row, m);
}

#[test]
fn a_helper_inside_a_loop() {
    let rt = Runtime::cpu();
    let (m, n) = (4, 53);
    let xs = rows(m, n);
    let x = Tensor2::<f32>::from_vec(&rt, xs.clone(), [m, n]).unwrap();
    let mut y = Tensor1::<f32>::zeros(&rt, [m]).unwrap();
    chunked_max::launch(&rt, &x, &mut y).unwrap();
    let want: Vec<f32> = xs
        .chunks(n)
        .map(|r| r.iter().cloned().fold(f32::NEG_INFINITY, f32::max))
        .collect();
    assert_eq!(y.to_vec().unwrap(), want);
}

#[test]
fn layernorm_through_the_welford_helper_matches_the_reference() {
    let rt = Runtime::cpu();
    let (m, n) = (3, 41);
    let xs = rows(m, n);
    let ws: Vec<f32> = (0..n).map(|i| 1.0 + i as f32 / 64.0).collect();
    let bs: Vec<f32> = (0..n).map(|i| i as f32 / 128.0 - 0.1).collect();
    let x = Tensor2::<f32>::from_vec(&rt, xs.clone(), [m, n]).unwrap();
    let w = Tensor1::<f32>::from_vec(&rt, ws.clone(), [n]).unwrap();
    let b = Tensor1::<f32>::from_vec(&rt, bs.clone(), [n]).unwrap();
    let mut y = Tensor2::<f32>::zeros(&rt, [m, n]).unwrap();
    let mut mean = Tensor1::<f32>::zeros(&rt, [m]).unwrap();
    let mut rstd = Tensor1::<f32>::zeros(&rt, [m]).unwrap();
    let eps = 1e-5f32;
    tilekit_kernels::layernorm::launch(&rt, &x, &w, &b, &mut y, &mut mean, &mut rstd, eps).unwrap();
    let y = y.to_vec().unwrap();
    for (r, row) in xs.chunks(n).enumerate() {
        let mu = row.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
        let var = row
            .iter()
            .map(|&v| (f64::from(v) - mu).powi(2))
            .sum::<f64>()
            / n as f64;
        let inv = 1.0 / (var + f64::from(eps)).sqrt();
        for c in 0..n {
            let want = (f64::from(row[c]) - mu) * inv * f64::from(ws[c]) + f64::from(bs[c]);
            assert!((f64::from(y[r * n + c]) - want).abs() < 1e-4, "y[{r}, {c}]");
        }
    }
}

/// The kernels that inline helpers compile with NVRTC, every variant, for sm_80 and
/// sm_90a (layernorm's variants: `nvrtc_variants.rs`).
#[test]
fn kernels_with_helpers_compile_with_nvrtc() {
    use tilekit_codegen::{prelude_headers, variant_source, Target};
    use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let mut n = 0;
    for spec in [&affine::SPEC, &row_stats::SPEC, &chunked_max::SPEC] {
        let kernel = spec.kernel().expect("kernel IR");
        for v in tilekit_tuner::valid_variants(kernel, &[Target::Sm80, Target::Sm90a]) {
            let src = variant_source(kernel, spec.cuda_template, &v.to_variant())
                .unwrap_or_else(|e| panic!("{v}: {e}"));
            let opts = CompileOptions::new(v.target.arch()).expect("options");
            let name = format!("{}.cu", spec.name);
            if let Err(e) = compile_cubin(&src, &name, prelude_headers(), &opts) {
                panic!("NVRTC failed for {} variant {v}\n{e}", spec.name);
            }
            n += 1;
        }
    }
    eprintln!("{n} variants compiled");
}
