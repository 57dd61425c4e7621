//! The rows slice: a kernel over `[ROWS, BLOCK]` tiles whose per-row inputs (`mean`, `rstd`
//! as `[ROWS]` tiles, used through `expand_dims(_, 1)`) load straight into the rows slice's
//! registers with no conversion through shared memory (the layouts stage), and the kernel
//! computes what the library's `layernorm_bwd` computes on the CPU backend at awkward shapes
//! (rows not a multiple of ROWS, more programs than rows). Outputs start as NaN, so an
//! element that is not written fails.

use tilekit::prelude::*;
use tilekit_kernels as k;
use tilekit_tests::support::Rng;

/// `n` values uniform in [-scale, scale) from the splitmix64 stream of `seed`.
fn random<T: tilekit::Element>(n: usize, seed: u64, scale: f64) -> Vec<T> {
    Rng(seed).vec(n, scale)
}

/// `layernorm_bwd` over `[ROWS, BLOCK]` tiles: ROWS rows per step, their statistics
/// reduced along axis 1 in registers, the per-row inputs `mean` and `rstd` loaded as
/// `[ROWS]` tiles and broadcast along the row (a former issue-13 candidate, measured slower
/// than the library's one-row body: BENCHMARKS run 55; kept as the fixture of the layout
/// test below).
#[kernel(grid = [dw_partial.rows()])]
#[tune(ROWS = [2, 4, 1], BLOCK = [4096], WARPS = [16, 32, 8])]
#[constraint(x.cols() <= BLOCK)]
#[shapes(x = [M, N], w = [N], mean = [M], rstd = [M], dy = [M, N], dx = [M, N], dw_partial = [P, N], db_partial = [P, N])]
#[cost(flops = 11 * M * N)]
pub fn layernorm_bwd_rows<T: Float>(
    x: &Tensor2<T>,
    w: &Tensor1<T>,
    mean: &Tensor1<f32>,
    rstd: &Tensor1<f32>,
    dy: &Tensor2<T>,
    dx: &mut Tensor2<T>,
    dw_partial: &mut Tensor2<f32>,
    db_partial: &mut Tensor2<f32>,
) {
    let pid = program_id(0);
    let step = num_programs(0);
    let groups = (x.rows() + ROWS - 1) / ROWS;
    let rn = 1.0 / x.cols().to_f32();
    let wv = load_tile(w, [0], [BLOCK]).to_f32();
    let mut acc_w = zeros::<f32, ROWS, BLOCK>();
    let mut acc_b = zeros::<f32, ROWS, BLOCK>();
    for grp in (pid..groups).step_by(step) {
        let r0 = grp * ROWS;
        // Outside the tensor (rows past the end, columns past the row) every tile is 0:
        // so are xh and g there, and nothing is stored.
        let v = load_tile(x, [r0, 0], [ROWS, BLOCK]).to_f32();
        let d = load_tile(dy, [r0, 0], [ROWS, BLOCK]).to_f32();
        let mu = expand_dims(load_tile(mean, [r0], [ROWS]), 1);
        let inv = expand_dims(load_tile(rstd, [r0], [ROWS]), 1);
        let xh = (v - mu) * inv;
        let g = d * wv;
        let s1 = expand_dims(sum(g, 1), 1);
        let s2 = expand_dims(sum(g * xh, 1), 1);
        let a = inv * rn;
        store_tile(dx, [r0, 0], (inv * g - s1 * a - xh * (s2 * a)).cast::<T>());
        acc_w = acc_w + d * xh;
        acc_b = acc_b + d;
    }
    let cols = arange::<BLOCK>();
    let mask = cols < x.cols();
    store(dw_partial.row(pid), cols, sum(acc_w, 0), mask);
    store(db_partial.row(pid), cols, sum(acc_b, 0), mask);
}

/// A rank-1 `load_tile` of `[ROWS]` whose every use is `expand_dims(_, 1)` (`mean`, `rstd`)
/// loads straight into the rows slice: no conversion through shared memory anywhere.
#[test]
fn per_row_inputs_load_into_the_rows_slice() {
    use tilekit_codegen::{dump, Stage};
    let kernel = layernorm_bwd_rows::SPEC.kernel().expect("kernel IR");
    let text = dump(kernel, None, Stage::Layouts).expect("layouts");
    // `layernorm_bwd_rows` above: `expand_dims(load_tile(mean, [r0], [ROWS]), 1)`.
    let mean_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("f32[ROWS]") && l.contains("rows0"))
        .collect();
    assert!(mean_lines.len() >= 4, "{text}");
    for want in [
        "mu         f32[ROWS, 1]       rows0",
        "inv        f32[ROWS, 1]       rows0",
        "%40 `mu` rows0 [ROWS, 1] -> blocked [ROWS, BLOCK] for `-` (inst 41, operand 1): in registers (every thread holds every row; shared memory only where the blocked passes straddle rows)",
    ] {
        assert!(text.contains(want), "missing `{want}` in:\n{text}");
    }
    // The conversion points are listed, none through shared memory.
    assert!(text.contains("\nconversions (in program order"), "{text}");
    assert!(!text.contains("via shared memory"), "{text}");
}

/// dx and the dw, db partials (summed) of `layernorm_bwd_rows` at every ROWS equal the
/// library's within f32 reassociation.
#[test]
fn cpu_layernorm_bwd_rows_matches_the_library() {
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
            // The fixture takes the library's arguments; only the kernel and its
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
        for which in ["1", "2", "4"] {
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
