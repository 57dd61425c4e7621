//! Wide, unaligned rows (issue 13): the unit-stride paths of the prelude's contiguous
//! `load`/`store` in an unaligned variant (`tk::detail::load_unit`/`store_unit`: aligned
//! 16-byte blocks around each group, bytes moved with `__byte_perm`, the block shared with
//! the next lane assembled through a shuffle). Every element misalignment (views at base
//! offsets 0..8 of one allocation, 0..4 for f32) and row pitches whose rows start at every
//! misalignment (50257, 50304, 4097, 17, ..), row lengths 1, 7, 8, 9, 17, 4097 and 50257.
//!
//! Each output view lies inside a larger buffer filled with a sentinel, its own elements
//! NaN-poisoned: after the launch every element of the view must hold the CPU backend's
//! result and every element outside it the sentinel. A user kernel that copies rows
//! through contiguous loads and stores (unmasked whole chunks, a masked tail, and a mask
//! with holes) is compared bitwise; the library's wide-row kernels with their tolerances.
//!
//! Ignored in CI; on the GPU machine run
//! `.gpu/tests/gpu_unaligned_rows-* --ignored --test-threads=1`
//! (and under `compute-sanitizer --tool memcheck`: no access may leave a view).

mod common;

use common::gpu::{compare, covering_cases, precompile, project, with_dtype};
use common::{f64s, rng, Rng};
use tilekit::ir::DType;
use tilekit::prelude::*;
use tilekit::{Config, Element, KernelSpec, LaunchError};
use tilekit_kernels::{
    cross_entropy, cross_entropy_inplace, log_softmax, log_softmax_bwd, softmax_bwd, softmax_online,
};

/// `y = x`, row by row: two whole chunks per trip through unmasked contiguous loads and
/// stores, then the rest through `offs < n` masks (the prefix forms).
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [1024, 64, 256, 512, 4096], WARPS = [4, 1, 8, 16])]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = M * N)]
pub fn row_copy<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(0);
    let n = x.cols();
    let cols = arange::<BLOCK>();
    let whole = n - n % (2 * BLOCK);
    for start in (0..whole).step_by(2 * BLOCK) {
        let a = load(x.row(row), start + cols);
        let b = load(x.row(row), start + BLOCK + cols);
        store(y.row(row), start + cols, a);
        store(y.row(row), start + BLOCK + cols, b);
    }
    for start in (whole..n).step_by(BLOCK) {
        let offs = start + cols;
        let mask = offs < n;
        store(y.row(row), offs, load(x.row(row), offs, mask, 0.0), mask);
    }
}

/// `y = x` where `column % 3 != 1`, other elements untouched: masks with holes (groups
/// neither whole nor empty, next to whole ones).
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [256, 1024, 64], WARPS = [1, 4])]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = M * N)]
pub fn row_copy_holes<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(0);
    let n = x.cols();
    let cols = arange::<BLOCK>();
    for start in (0..n).step_by(BLOCK) {
        let offs = start + cols;
        let mask = (offs < n) & (offs % 3 != 1);
        store(y.row(row), offs, load(x.row(row), offs, mask, 0.0), mask);
    }
}

fn gpu() -> Runtime {
    Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"))
}

/// Row lengths of the cases, each with row pitches: the row length itself (rows
/// start at every misalignment when it is odd) and padded ones.
const SHAPES: &[(usize, &[usize])] = &[
    (1, &[1, 17]),
    (7, &[7, 17]),
    (8, &[8, 17]),
    (9, &[9, 17]),
    (17, &[17, 4097]),
    (4097, &[4097, 4104]),
    (50257, &[50257, 50304]),
];

/// Rows per case: enough that consecutive rows start at different misalignments.
fn rows_for(cols: usize) -> usize {
    if cols > 10_000 {
        3
    } else {
        9
    }
}

/// Base offsets (elements) of the views: every element misalignment of a 16-byte block.
fn offsets<T: Element>() -> std::ops::Range<usize> {
    0..16 / T::DTYPE.size_bytes()
}

/// A view `[rows, cols]` with row pitch `pitch` at element `off` of a buffer one row and 11
/// elements longer than it needs.
#[derive(Clone, Copy, Debug)]
struct Layout {
    rows: usize,
    cols: usize,
    pitch: usize,
    off: usize,
}

impl Layout {
    fn len(&self) -> usize {
        self.off + self.rows * self.pitch + 11
    }
    /// `Some((row, col))` when buffer element `i` belongs to the view.
    fn at(&self, i: usize) -> Option<(usize, usize)> {
        let j = i.checked_sub(self.off)?;
        let (r, c) = (j / self.pitch, j % self.pitch);
        (r < self.rows && c < self.cols).then_some((r, c))
    }
}

/// The sentinel outside every output view.
const SENTINEL: f64 = -7.5;

/// A buffer holding `data` (row-major `[rows, cols]`) in the view of `l`, random values
/// elsewhere.
fn input_buf<T: Element>(rt: &Runtime, l: Layout, data: &[T], r: &mut Rng) -> Tensor1<T> {
    let noise: Vec<T> = r.vec(l.len(), 50.0);
    let buf: Vec<T> = (0..l.len())
        .map(|i| match l.at(i) {
            Some((row, c)) => data[row * l.cols + c],
            None => noise[i],
        })
        .collect();
    Tensor1::from_vec(rt, buf, [l.len()]).unwrap()
}

/// A buffer of the sentinel with NaN in the view of `l`.
fn output_buf<T: Element>(rt: &Runtime, l: Layout) -> Tensor1<T> {
    let buf: Vec<T> = (0..l.len())
        .map(|i| {
            T::from_f64(if l.at(i).is_some() {
                f64::NAN
            } else {
                SENTINEL
            })
        })
        .collect();
    Tensor1::from_vec(rt, buf, [l.len()]).unwrap()
}

/// The view's elements of a buffer (row-major), after checking that every element
/// outside it still holds the sentinel.
fn view_of<T: Element>(what: &str, buf: &Tensor1<T>, l: Layout) -> Vec<f64> {
    let all = f64s(&buf.to_vec().unwrap());
    let mut out = vec![0.0; l.rows * l.cols];
    let mut touched = Vec::new();
    for (i, v) in all.iter().enumerate() {
        match l.at(i) {
            Some((r, c)) => out[r * l.cols + c] = *v,
            None if v.to_bits() != SENTINEL.to_bits() => touched.push(format!("  [{i}] = {v:e}")),
            None => {}
        }
    }
    assert!(
        touched.is_empty(),
        "{what}: {} elements outside the view changed:\n{}",
        touched.len(),
        touched
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    out
}

/// The outputs' views, then any other output, as f64.
type Outputs = Vec<Vec<f64>>;

/// A launch on buffers: the inputs, the outputs (written through views of them); returns
/// any output that is not a buffer.
type Run<'a, T> =
    dyn Fn(&Runtime, &[Tensor1<T>], &mut [Tensor1<T>]) -> Result<Vec<f64>, LaunchError> + 'a;

/// Runs `run(rt, x buffers, y buffers)` on the CPU backend and on the GPU with freshly
/// made buffers, checks the outputs' outside elements, and returns (CPU, GPU) outputs
/// (`None` when both refused with a per-launch constraint).
fn both<T: Element>(
    g: &Runtime,
    what: &str,
    ins: &[(Layout, Vec<T>)],
    outs: &[Layout],
    seed: &str,
    run: &Run<'_, T>,
) -> Option<(Outputs, Outputs)> {
    let go = |rt: &Runtime| -> Result<Outputs, LaunchError> {
        let mut r = rng(seed);
        let xs: Vec<Tensor1<T>> = ins
            .iter()
            .map(|(l, d)| input_buf(rt, *l, d, &mut r))
            .collect();
        let mut ys: Vec<Tensor1<T>> = outs.iter().map(|l| output_buf(rt, *l)).collect();
        let extra = run(rt, &xs, &mut ys)?;
        let mut v: Outputs = ys
            .iter()
            .zip(outs)
            .map(|(y, l)| view_of(what, y, *l))
            .collect();
        v.push(extra);
        Ok(v)
    };
    match (go(&Runtime::cpu()), go(g)) {
        (Ok(want), Ok(got)) => Some((want, got)),
        (Err(LaunchError::Constraint { .. }), Err(LaunchError::Constraint { .. })) => None,
        (c, gv) => panic!("{what}: CPU {:?} but GPU {:?}", c.err(), gv.err()),
    }
}

fn view2<T: Element>(b: &Tensor1<T>, l: Layout) -> TensorRef<'_, T, 2> {
    b.as_strided([l.rows, l.cols], [l.pitch, 1], l.off).unwrap()
}

fn view2_mut<T: Element>(b: &mut Tensor1<T>, l: Layout) -> TensorMut<'_, T, 2> {
    b.as_strided_mut([l.rows, l.cols], [l.pitch, 1], l.off)
        .unwrap()
}

/// Every (input offset, output offset, pitch) of one row length: the input and output at
/// the same and at different misalignments.
fn layouts<T: Element>(cols: usize, pitches: &[usize]) -> Vec<(Layout, Layout)> {
    let rows = rows_for(cols);
    let n = offsets::<T>().len();
    let mut out = Vec::new();
    for &pitch in pitches {
        for off in offsets::<T>() {
            let x = Layout {
                rows,
                cols,
                pitch,
                off,
            };
            let y = Layout {
                off: (off * 3 + 1) % n,
                ..x
            };
            out.push((x, y));
        }
    }
    out
}

fn copy_case<T: Float>(g: &Runtime, spec: &KernelSpec, cfg: &Config, holes: bool, r: &mut Rng) {
    for &(cols, pitches) in SHAPES {
        for (lx, ly) in layouts::<T>(cols, pitches) {
            let data: Vec<T> = r.vec(lx.rows * cols, 100.0);
            let what = format!(
                "{} {:?} [{cfg}] {}x{cols} pitch {} x@{} y@{}",
                spec.name,
                T::DTYPE,
                lx.rows,
                lx.pitch,
                lx.off,
                ly.off
            );
            let res = both::<T>(g, &what, &[(lx, data)], &[ly], &what, &|rt, xs, ys| {
                let x = view2(&xs[0], lx);
                let mut y = view2_mut(&mut ys[0], ly);
                if holes {
                    row_copy_holes::launch_with(rt, cfg, &x, &mut y)?;
                } else {
                    row_copy::launch_with(rt, cfg, &x, &mut y)?;
                }
                Ok(vec![])
            });
            if let Some((want, got)) = res {
                // Bitwise: a copy is exact (NaN, an element never written, differs).
                let bad: Vec<String> = want[0]
                    .iter()
                    .zip(&got[0])
                    .enumerate()
                    .filter(|(_, (w, g))| w.to_bits() != g.to_bits())
                    .map(|(i, (w, g))| format!("  [{i}] got {g:e}, want {w:e}"))
                    .collect();
                assert!(
                    bad.is_empty(),
                    "{what}: {} of {} elements differ:\n{}",
                    bad.len(),
                    want[0].len(),
                    bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_row_copy_every_misalignment_bitwise() {
    let g = gpu();
    let mut r = rng("gpu unaligned row copy");
    let cases = covering_cases(&row_copy::SPEC);
    precompile(&g, &[&row_copy::SPEC], &cases);
    for (cfg, d) in &cases {
        with_dtype!(*d, copy_case, &g, &row_copy::SPEC, cfg, false, &mut r);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_row_copy_masks_with_holes_every_misalignment_bitwise() {
    let g = gpu();
    let mut r = rng("gpu unaligned row copy holes");
    let cases = covering_cases(&row_copy_holes::SPEC);
    precompile(&g, &[&row_copy_holes::SPEC], &cases);
    for (cfg, d) in &cases {
        with_dtype!(*d, copy_case, &g, &row_copy_holes::SPEC, cfg, true, &mut r);
    }
}

fn tol<T: Element>() -> f64 {
    match T::DTYPE {
        DType::F32 => 2e-5,
        DType::F16 => 2e-3,
        _ => 1.6e-2,
    }
}

/// f16 probabilities below its smallest normal keep only absolute precision.
fn floor<T: Element>() -> f64 {
    match T::DTYPE {
        DType::F16 => 2.0 * 2f64.powi(-24),
        _ => 0.0,
    }
}

/// The softmax family and cross-entropy on unaligned views, one configuration.
fn library_case<T: Float>(g: &Runtime, cfg: &Config, r: &mut Rng) {
    for &(cols, pitches) in SHAPES {
        for (lx, ly) in layouts::<T>(cols, pitches) {
            let rows = lx.rows;
            let xs: Vec<T> = r.vec(rows * cols, 6.0);
            let dys: Vec<T> = r.vec(rows * cols, 1.0);
            let shape = format!("{rows}x{cols} pitch {} x@{} y@{}", lx.pitch, lx.off, ly.off);
            let what = |k: &str| format!("{k} {:?} [{cfg}] {shape}", T::DTYPE);
            // Each kernel's outputs (views, then any other) within the tolerances.
            let check = |k: &str, ins: &[(Layout, Vec<T>)], outs: &[Layout], run: &Run<'_, T>| {
                if let Some((want, got)) = both::<T>(g, &what(k), ins, outs, k, run) {
                    for (i, (w, gv)) in want.iter().zip(&got).enumerate() {
                        let what = format!("{}, output {i}", what(k));
                        compare(&what, gv, w, tol::<T>(), floor::<T>());
                    }
                }
            };
            // Probability-like rows (sums below 1) and their logarithms, as the backward
            // passes receive them.
            let probs: Vec<f64> = f64s(&xs)
                .iter()
                .map(|v| v.abs() / (3.0 * cols as f64))
                .collect();
            let p: Vec<T> = probs.iter().map(|&v| T::from_f64(v)).collect();
            let logp: Vec<T> = probs
                .iter()
                .map(|&v| T::from_f64(v.max(1e-30).ln()))
                .collect();
            for (k, log) in [("log_softmax", true), ("softmax_online", false)] {
                check(k, &[(lx, xs.clone())], &[ly], &|rt, x, y| {
                    let (x, mut y) = (view2(&x[0], lx), view2_mut(&mut y[0], ly));
                    if log {
                        log_softmax::launch_with(
                            rt,
                            &project(cfg, &log_softmax::SPEC),
                            &x,
                            &mut y,
                        )?;
                    } else {
                        softmax_online::launch_with(
                            rt,
                            &project(cfg, &softmax_online::SPEC),
                            &x,
                            &mut y,
                        )?;
                    }
                    Ok(vec![])
                });
            }
            for (k, log, y) in [("log_softmax_bwd", true, &logp), ("softmax_bwd", false, &p)] {
                let ins = [(lx, y.clone()), (ly, dys.clone())];
                check(k, &ins, &[ly], &|rt, x, dx| {
                    let (y, dy) = (view2(&x[0], lx), view2(&x[1], ly));
                    let mut dx = view2_mut(&mut dx[0], ly);
                    if log {
                        log_softmax_bwd::launch_with(
                            rt,
                            &project(cfg, &log_softmax_bwd::SPEC),
                            &y,
                            &dy,
                            &mut dx,
                        )?;
                    } else {
                        softmax_bwd::launch_with(
                            rt,
                            &project(cfg, &softmax_bwd::SPEC),
                            &y,
                            &dy,
                            &mut dx,
                        )?;
                    }
                    Ok(vec![])
                });
            }
            let labels: Vec<i64> = (0..rows)
                .map(|i| match i % 5 {
                    1 => -100,
                    _ => (r.next_u64() % cols as u64) as i64,
                })
                .collect();
            check("cross_entropy", &[(lx, xs.clone())], &[ly], &|rt, x, dx| {
                let lab = Tensor1::from_vec(rt, labels.clone(), [rows]).unwrap();
                let mut loss = Tensor1::<f32>::full(rt, [rows], f32::NAN).unwrap();
                let (x, mut dx) = (view2(&x[0], lx), view2_mut(&mut dx[0], ly));
                cross_entropy::launch_with(
                    rt,
                    &project(cfg, &cross_entropy::SPEC),
                    &x,
                    &lab,
                    &mut loss,
                    &mut dx,
                    -100,
                    0.1,
                    0.5,
                )?;
                Ok(f64s(&loss.to_vec().unwrap()))
            });
            // In place: the logits are written into the (NaN-poisoned) view first.
            check("cross_entropy_inplace", &[], &[ly], &|rt, _, x| {
                let mut host = x[0].to_vec().unwrap();
                for (i, v) in host.iter_mut().enumerate() {
                    if let Some((row, c)) = ly.at(i) {
                        *v = xs[row * cols + c];
                    }
                }
                x[0] = Tensor1::from_vec(rt, host, [ly.len()]).unwrap();
                let lab = Tensor1::from_vec(rt, labels.clone(), [rows]).unwrap();
                let mut loss = Tensor1::<f32>::full(rt, [rows], f32::NAN).unwrap();
                let mut x = view2_mut(&mut x[0], ly);
                cross_entropy_inplace::launch_with(
                    rt,
                    &project(cfg, &cross_entropy_inplace::SPEC),
                    &mut x,
                    &lab,
                    &mut loss,
                    -100,
                    0.1,
                    1.0,
                )?;
                Ok(f64s(&loss.to_vec().unwrap()))
            });
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_wide_row_kernels_every_misalignment() {
    let g = gpu();
    let mut r = rng("gpu unaligned wide rows");
    // log_softmax's declared default (4096/8 with MIN_BLOCKS=2), log_softmax_bwd's
    // (2048/32), the run-45 best (1024/16, the other kernels' default) and 8192/32, with
    // every dtype; the softmax family and cross-entropy share BLOCK and WARPS (log_softmax
    // alone declares MIN_BLOCKS: each launch takes the parameters its kernel declares,
    // `project`, so the others run 4096/8 there).
    let mut cases: Vec<(Config, DType)> = Vec::new();
    let space = &log_softmax::SPEC.kernel().unwrap().space;
    let bwd_default = log_softmax_bwd::SPEC
        .kernel()
        .unwrap()
        .space
        .default_config();
    for cfg in [
        space.default_config(),
        bwd_default,
        Config::parse("BLOCK=1024,WARPS=16").unwrap(),
        Config::parse("BLOCK=8192,WARPS=32").unwrap(),
    ] {
        for d in DType::FLOATS {
            cases.push((cfg.clone(), d));
        }
    }
    let specs: [&KernelSpec; 6] = [
        &log_softmax::SPEC,
        &softmax_online::SPEC,
        &softmax_bwd::SPEC,
        &log_softmax_bwd::SPEC,
        &cross_entropy::SPEC,
        &cross_entropy_inplace::SPEC,
    ];
    precompile(&g, &specs, &cases);
    for (cfg, d) in &cases {
        with_dtype!(*d, library_case, &g, cfg, &mut r);
    }
}
