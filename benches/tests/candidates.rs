//! The issue-13 candidates of `tilekit_benches::candidates` (kernels timed beside the
//! library's by `tilekit-bench --only cand`): where their layouts put per-row inputs, and
//! each on the CPU backend against the library kernel it stands for at awkward shapes
//! (`layernorm_bwd_rows`, `_mb`, `_pair`, `_chunk` against `layernorm_bwd`; `log_softmax_hold`
//! against `log_softmax`; `rmsnorm_early_w` against `rmsnorm`). Outputs start as NaN, so an
//! element that is not written fails.

use tilekit::prelude::*;
use tilekit_benches::candidates::{
    layernorm_bwd_chunk, layernorm_bwd_mb, layernorm_bwd_pair, layernorm_bwd_rows, log_softmax_hold,
};
use tilekit_kernels as k;

mod common;
use common::random;

/// A rank-1 `load_tile` of `[ROWS]` whose every use is `expand_dims(_, 1)` (`mean`, `rstd`)
/// loads straight into the rows slice: no conversion through shared memory anywhere.
#[test]
fn per_row_inputs_load_into_the_rows_slice() {
    use tilekit_codegen::{dump, Stage};
    let kernel = layernorm_bwd_rows::SPEC.kernel().expect("kernel IR");
    let text = dump(kernel, None, Stage::Layouts).expect("layouts");
    // `layernorm_bwd_rows` in candidates.rs: `expand_dims(load_tile(mean, [r0], [ROWS]), 1)`.
    let mean_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("f32[ROWS]") && l.contains("rows0"))
        .collect();
    assert!(mean_lines.len() >= 4, "{text}");
    for want in [
        "mu         f32[ROWS, 1]       rows0",
        "inv        f32[ROWS, 1]       rows0",
        "rows0 -> blocked: broadcast to [ROWS, BLOCK] from the rows slice's registers",
        "conversions through shared memory:\n  (none)",
    ] {
        assert!(text.contains(want), "missing `{want}` in:\n{text}");
    }
}

/// dx and the dw, db partials (summed) of `layernorm_bwd_rows` (at every ROWS), of
/// `layernorm_bwd_mb` (MIN_BLOCKS=2), of `layernorm_bwd_pair` (its two row sums adjacent)
/// and of `layernorm_bwd_chunk` (each program's rows one chunk; the last programs may have
/// none) equal the library's within f32 reassociation (rows not a multiple of ROWS, more
/// programs than rows, included). `pair` and `chunk` run a configuration without
/// `MIN_BLOCKS`, which is then 1.
#[test]
fn cpu_layernorm_bwd_candidates_match_the_library() {
    let rt = Runtime::cpu();
    for (m, n, parts) in [(1, 17, 1), (7, 33, 2), (13, 100, 3), (3, 40, 5)] {
        let x = Tensor2::<f32>::from_vec(&rt, random(m * n, 1, 1.0), [m, n]).unwrap();
        let dy = Tensor2::<f32>::from_vec(&rt, random(m * n, 2, 1.0), [m, n]).unwrap();
        let w = Tensor1::<f32>::from_vec(&rt, random(n, 3, 1.0), [n]).unwrap();
        // Statistics of x (what the forward saves).
        let xv = x.to_vec().unwrap();
        let (mut mean, mut rstd) = (Vec::new(), Vec::new());
        for r in 0..m {
            let row = &xv[r * n..(r + 1) * n];
            let mu = row.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
            let var = row
                .iter()
                .map(|&v| (f64::from(v) - mu).powi(2))
                .sum::<f64>()
                / n as f64;
            mean.push(mu as f32);
            rstd.push((1.0 / (var + 1e-5).sqrt()) as f32);
        }
        let mean = Tensor1::from_vec(&rt, mean, [m]).unwrap();
        let rstd = Tensor1::from_vec(&rt, rstd, [m]).unwrap();
        let run = |which: &str| {
            let mut dx = Tensor2::<f32>::full(&rt, [m, n], f32::NAN).unwrap();
            let mut pw = Tensor2::<f32>::full(&rt, [parts, n], f32::NAN).unwrap();
            let mut pb = Tensor2::<f32>::full(&rt, [parts, n], f32::NAN).unwrap();
            let cfg = |t: &str| tilekit::Config::parse(t).expect("config");
            // The candidates take the library's arguments; only the kernel and its
            // configuration differ.
            macro_rules! with {
                ($m:path, $c:expr) => {{
                    use $m as m;
                    m::launch_with(
                        &rt, &$c, &x, &w, &mean, &rstd, &dy, &mut dx, &mut pw, &mut pb,
                    )
                }};
            }
            match which {
                "library" => k::layernorm_bwd::launch(
                    &rt, &x, &w, &mean, &rstd, &dy, &mut dx, &mut pw, &mut pb,
                ),
                "mb" => with!(layernorm_bwd_mb, cfg("BLOCK=4096,WARPS=8,MIN_BLOCKS=2")),
                "pair" => with!(layernorm_bwd_pair, cfg("BLOCK=4096,WARPS=8")),
                "chunk" => with!(layernorm_bwd_chunk, cfg("BLOCK=4096,WARPS=8")),
                rows => with!(
                    layernorm_bwd_rows,
                    cfg(&format!("ROWS={rows},BLOCK=4096,WARPS=8"))
                ),
            }
            .unwrap_or_else(|e| panic!("{m}x{n} {which}: {e}"));
            let sum = |p: &Tensor2<f32>| -> Vec<f64> {
                let v = p.to_vec().unwrap();
                (0..n)
                    .map(|j| (0..parts).map(|i| f64::from(v[i * n + j])).sum())
                    .collect()
            };
            let dx: Vec<f64> = dx.to_vec().unwrap().iter().map(|&v| f64::from(v)).collect();
            (dx, sum(&pw), sum(&pb))
        };
        let want = run("library");
        for which in ["1", "2", "4", "mb", "pair", "chunk"] {
            let got = run(which);
            for (what, g, w) in [
                ("dx", &got.0, &want.0),
                ("dw", &got.1, &want.1),
                ("db", &got.2, &want.2),
            ] {
                let scale = w.iter().fold(0f64, |a, v| a.max(v.abs())).max(1e-30);
                for (i, (a, b)) in g.iter().zip(w).enumerate() {
                    assert!(
                        (a - b).abs() <= 1e-5 * scale,
                        "{m}x{n} {which} {what}[{i}]: {a} vs {b}"
                    );
                }
            }
        }
    }
}

/// `rmsnorm_early_w` computes what the library's RMSNorm computes, in the same order:
/// bitwise equal on the CPU backend (bf16 and f32, rows of 1, 17 and 4097).
#[test]
fn cpu_rmsnorm_early_w_equals_the_library() {
    use tilekit_benches::candidates::rmsnorm_early_w;
    fn case<T: tilekit::Float>(rt: &Runtime, m: usize, n: usize) {
        let x = Tensor2::<T>::from_vec(rt, random(m * n, 4, 2.0), [m, n]).unwrap();
        let w = Tensor1::<T>::from_vec(rt, random(n, 5, 1.0), [n]).unwrap();
        let mut a = Tensor2::<T>::full(rt, [m, n], T::from_f64(f64::NAN)).unwrap();
        let mut b = Tensor2::<T>::full(rt, [m, n], T::from_f64(f64::NAN)).unwrap();
        k::rmsnorm::launch(rt, &x, &w, &mut a, 1e-5).unwrap();
        rmsnorm_early_w::launch(rt, &x, &w, &mut b, 1e-5).unwrap();
        let bits = |t: &Tensor2<T>| -> Vec<u64> {
            t.to_vec()
                .unwrap()
                .iter()
                .map(|v| v.to_f64().to_bits())
                .collect()
        };
        assert_eq!(bits(&a), bits(&b), "{m}x{n} {:?}", T::DTYPE);
        assert!(a.to_vec().unwrap().iter().all(|v| !v.to_f64().is_nan()));
    }
    let rt = Runtime::cpu();
    for (m, n) in [(1, 1), (3, 17), (2, 4097)] {
        case::<f32>(&rt, m, n);
        case::<half::bf16>(&rt, m, n);
    }
}

/// `log_softmax_hold` against the library's `log_softmax` at BLOCK=1024: rows wider than
/// BLOCK with no whole trip (the held chunks all masked off), exactly one whole trip (all
/// of the row held), a loop trip before the held one and a ragged tail, and a row that fits
/// BLOCK. The same per-lane arithmetic in the same order: equal within f32 rounding.
#[test]
fn cpu_log_softmax_hold_matches_the_library() {
    let rt = Runtime::cpu();
    let cfg = tilekit::Config::parse("BLOCK=1024,WARPS=16").expect("config");
    for (m, n) in [(2, 1500), (3, 4096), (2, 5000), (1, 9000), (2, 300)] {
        let x = Tensor2::<f32>::from_vec(&rt, random(m * n, 7, 4.0), [m, n]).unwrap();
        let mut want = Tensor2::<f32>::full(&rt, [m, n], f32::NAN).unwrap();
        let mut got = Tensor2::<f32>::full(&rt, [m, n], f32::NAN).unwrap();
        k::log_softmax::launch_with(&rt, &cfg, &x, &mut want).unwrap();
        log_softmax_hold::launch_with(&rt, &cfg, &x, &mut got).unwrap();
        let (want, got) = (want.to_vec().unwrap(), got.to_vec().unwrap());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-6 * w.abs().max(1.0),
                "{m}x{n} [{i}]: {g} vs {w}"
            );
        }
    }
}
