//! Shared by the CPU-backend tests of the training kernels: seeds, f64 references'
//! helpers, tolerance checks, strided inputs and central finite differences.

#![allow(dead_code, unused_imports, unused_macros)] // each test binary uses a subset

pub mod attention;
pub mod gpu;
pub mod nvrtc;

use tilekit::prelude::*;
use tilekit::Element;

pub use tilekit_tests::support::Rng;

/// A fresh generator per check, its seed printed (`TILEKIT_TEST_SEED` reproduces a run).
pub fn rng(what: &str) -> Rng {
    tilekit_tests::support::seeded_rng(what)
}

/// The values of `v` in f64.
pub fn f64s<T: Element>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// `v` rounded to `T` and back: what a kernel reads when given `v` as a `T` tensor.
pub fn rounded<T: Element>(v: &[f64]) -> Vec<T> {
    v.iter().map(|x| T::from_f64(*x)).collect()
}

/// Checks `got` (every element written: no NaN poison left) against `want` with an error
/// bound `rel * (|want| + 0.05 * max|want|) + abs`.
pub fn assert_close<T: Element>(what: &str, got: &[T], want: &[f64], rel: f64, abs: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs()));
    let mut bad = Vec::new();
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f64();
        let err = (g - w).abs();
        if g.is_nan() || err > rel * (w.abs() + 0.05 * scale) + abs {
            bad.push(format!("  [{i}] got {g:e}, want {w:e} (err {err:e})"));
        }
    }
    assert!(
        bad.is_empty(),
        "{what} ({:?}, rel {rel:e}, abs {abs:e}): {} of {} elements wrong (NaN = never written):\n{}",
        T::DTYPE,
        bad.len(),
        got.len(),
        bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// A `[rows, cols]` tensor holding `data` (row-major) whose rows are `cols + 3` elements
/// apart and whose first element sits one element past the start of its buffer: a
/// non-contiguous row stride and a misaligned base.
pub fn strided<T: Element>(rt: &Runtime, data: &[T], rows: usize, cols: usize) -> Tensor2<T> {
    let pitch = cols + 3;
    let mut buf = vec![T::from_f64(f64::NAN); rows * pitch + 1];
    for r in 0..rows {
        buf[1 + r * pitch..1 + r * pitch + cols].copy_from_slice(&data[r * cols..(r + 1) * cols]);
    }
    Tensor2::from_vec_strided(rt, buf, [rows, cols], [pitch, 1], 1).unwrap()
}

/// Same as [`strided`], filled with NaN (an output).
pub fn strided_nan<T: Element>(rt: &Runtime, rows: usize, cols: usize) -> Tensor2<T> {
    strided(rt, &vec![T::from_f64(f64::NAN); rows * cols], rows, cols)
}

/// A tensor of `data`, contiguous or (when `strided_rows`) with padded rows and a
/// misaligned base.
pub fn input<T: Element>(
    rt: &Runtime,
    data: &[T],
    shape: [usize; 2],
    strided_rows: bool,
) -> Tensor2<T> {
    if strided_rows {
        strided(rt, data, shape[0], shape[1])
    } else {
        Tensor2::from_vec(rt, data.to_vec(), shape).unwrap()
    }
}

/// A NaN-poisoned output, contiguous or strided like [`input`].
pub fn output<T: Element>(rt: &Runtime, shape: [usize; 2], strided_rows: bool) -> Tensor2<T> {
    if strided_rows {
        strided_nan(rt, shape[0], shape[1])
    } else {
        Tensor2::full(rt, shape, T::from_f64(f64::NAN)).unwrap()
    }
}

/// The gradient of the scalar `f` at `x` by central differences (step `h * max(1, |x|)`).
pub fn finite_diff(f: impl Fn(&[f64]) -> f64, x: &[f64], h: f64) -> Vec<f64> {
    let mut p = x.to_vec();
    (0..x.len())
        .map(|i| {
            let step = h * x[i].abs().max(1.0);
            p[i] = x[i] + step;
            let up = f(&p);
            p[i] = x[i] - step;
            let down = f(&p);
            p[i] = x[i];
            (up - down) / (2.0 * step)
        })
        .collect()
}

/// `sum(a * b)`.
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Whether a narrow-row kernel (`softmax_rows`, `rmsnorm_rows`, `layernorm_rows`) takes a
/// row of `cols` elements of `bytes` bytes at `cfg`: `BLOCK` holds the row, and a pass of
/// the blocked layout (16 bytes x 32 lanes x `WARPS`) holds whole rows or a whole number of
/// passes make `BLOCK` (the kernels' two constraints).
pub fn rows_config_fits(cfg: &tilekit::Config, cols: usize, bytes: usize) -> bool {
    let block = cfg.int("BLOCK").unwrap_or(0) as usize;
    let pass = cfg.int("WARPS").unwrap_or(0) as usize * 512 / bytes;
    cols <= block
        && block > 0
        && pass > 0
        && (block.is_multiple_of(pass) || pass.is_multiple_of(block))
}
