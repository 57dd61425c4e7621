//! The user kernels written with 2-D tiles (`tilekit_benches::user_kernels`), measured as
//! written: `--only user2d` (a copy, a transpose, a fused add + RMSNorm, bf16) and
//! `--only stencil` (the 5-point stencil from one halo tile and five slices, f32), every
//! configuration, the declared default and the best, in GB/s and % of the copy ceiling;
//! `--only rotary` (the 3-D rotary embedding from two slices and a `cat`, bf16).

use crate::random;
use crate::sweep::sweep;
use anyhow::{anyhow, Result};
use serde_json::Value;
use tilekit::prelude::*;
use tilekit_benches::user_kernels::{add_rmsnorm, copy2d, rotary3d, stencil5, transpose2d};

/// `sweep` of a kernel `y = f(x)` over two input sets used in turn (consecutive runs read
/// different inputs), `x` read once and `y` written once; returns the result and the set
/// the last run read. `launch(cfg, x, y)`: the kernel's `launch` (`None`) or `launch_with`.
fn sweep_xy<T: tilekit::Element>(
    rt: &Runtime,
    (group, label, spec): (&str, &str, &tilekit::KernelSpec),
    xs: &[Tensor2<T>; 2],
    y: &mut Tensor2<T>,
    ceiling: f64,
    mut launch: impl FnMut(Option<&tilekit::Config>, &Tensor2<T>, &mut Tensor2<T>) -> Result<()>,
) -> Result<(Value, usize)> {
    let bytes = (xs[0].numel() + y.numel()) as f64 * std::mem::size_of::<T>() as f64;
    let mut i = 0usize;
    let r = sweep(rt, group, label, spec, bytes, ceiling, |cfg| {
        i += 1;
        launch(cfg, &xs[i % 2], y)
    })?;
    Ok((r, i % 2))
}

/// The user's 5-point stencil (`stencil5`: one halo tile, five slices), 8192^2 f32: every
/// configuration, declared default and best, in GB/s of x read once and y written once and
/// % of copy (two input sets of 256 MB, alternated); the last result checked on a sample.
pub(crate) fn stencil(rt: &Runtime, ceiling: f64) -> Result<Value> {
    let n = 8192usize;
    let xs = [
        Tensor2::<f32>::from_vec(rt, random(n * n, 21), [n, n])?,
        Tensor2::<f32>::from_vec(rt, random(n * n, 22), [n, n])?,
    ];
    let mut y = Tensor2::<f32>::zeros(rt, [n, n])?;
    let spec = ("stencil", "stencil5 8192^2 f32", &stencil5::SPEC);
    let (r, last) = sweep_xy(rt, spec, &xs, &mut y, ceiling, |cfg, x, y| {
        match cfg {
            None => stencil5::launch(rt, x, y)?,
            Some(c) => stencil5::launch_with(rt, c, x, y)?,
        }
        Ok(())
    })?;
    let (got, src) = (y.to_vec()?, xs[last].to_vec()?);
    let at = |r: isize, c: isize| -> f64 {
        if r < 0 || c < 0 || r >= n as isize || c >= n as isize {
            0.0
        } else {
            f64::from(src[r as usize * n + c as usize])
        }
    };
    for k in (0..n * n).step_by(4099) {
        let (r, c) = ((k / n) as isize, (k % n) as isize);
        let want = 4.0 * at(r, c) - at(r - 1, c) - at(r + 1, c) - at(r, c - 1) - at(r, c + 1);
        if (f64::from(got[k]) - want).abs() > 1e-4 * (1.0 + want.abs()) {
            return Err(anyhow!("stencil5: y[{r}][{c}] = {} != {want}", got[k]));
        }
    }
    Ok(r)
}

/// The user's 3-D rotary embedding (`rotary3d`: two slices of one `[ROWS, 32, 128]` tile, a
/// `cat`), `[16384, 32, 128]` bf16: every configuration, declared default and best, in GB/s
/// of x read once, y written once and cos / sin read once, and % of copy (two input sets
/// of 128 MB, alternated); the last result checked on a sample.
pub(crate) fn rotary(rt: &Runtime, ceiling: f64) -> Result<Value> {
    type B = half::bf16;
    let (s, h, d) = (16384usize, 32usize, 128usize);
    let xs = [
        Tensor3::<B>::from_vec(rt, random(s * h * d, 31), [s, h, d])?,
        Tensor3::<B>::from_vec(rt, random(s * h * d, 32), [s, h, d])?,
    ];
    let c = Tensor2::<B>::from_vec(rt, random(s * d / 2, 33), [s, d / 2])?;
    let sn = Tensor2::<B>::from_vec(rt, random(s * d / 2, 34), [s, d / 2])?;
    let mut y = Tensor3::<B>::zeros(rt, [s, h, d])?;
    let bytes = (2 * s * h * d + s * d) as f64 * 2.0;
    let mut i = 0usize;
    let r = sweep(
        rt,
        "rotary",
        "rotary3d 16384x32x128 bf16",
        &rotary3d::SPEC,
        bytes,
        ceiling,
        |cfg| {
            i += 1;
            let x = &xs[i % 2];
            match cfg {
                None => rotary3d::launch(rt, x, &c, &sn, &mut y)?,
                Some(k) => rotary3d::launch_with(rt, k, x, &c, &sn, &mut y)?,
            }
            Ok(())
        },
    )?;
    let (got, src) = (y.to_vec()?, xs[i % 2].to_vec()?);
    let (cv, sv) = (c.to_vec()?, sn.to_vec()?);
    let half = d / 2;
    for k in (0..s * h * d).step_by(4099) {
        let (p, j) = (k / (h * d), k % d);
        let row = k - j;
        let (jj, sign) = if j < half { (j, -1.0) } else { (j - half, 1.0) };
        let (lo, hi) = (f64::from(src[row + jj]), f64::from(src[row + jj + half]));
        let (cc, ss) = (f64::from(cv[p * half + jj]), f64::from(sv[p * half + jj]));
        let want = if j < half {
            lo * cc + sign * hi * ss
        } else {
            hi * cc + lo * ss
        };
        if (f64::from(got[k]) - want).abs() > 2e-2 * (1.0 + want.abs()) {
            return Err(anyhow!("rotary3d: y[{k}] = {} != {want}", got[k]));
        }
    }
    Ok(r)
}

/// The user kernels with 2-D tiles (`tilekit_benches::user_kernels`), bf16: copy2d and
/// transpose2d at 8192^2, the fused add + RMSNorm at 32768x4096.
pub(crate) fn user2d(rt: &Runtime, ceiling: f64) -> Result<Value> {
    type B = half::bf16;
    let mut out = serde_json::Map::new();
    // Copy and transpose, 8192^2: two input sets of 128 MB each (every run reads 128 MB
    // and writes 128 MB, and consecutive runs read different inputs).
    let n = 8192usize;
    let xs = [
        Tensor2::<B>::from_vec(rt, random(n * n, 11), [n, n])?,
        Tensor2::<B>::from_vec(rt, random(n * n, 12), [n, n])?,
    ];
    let mut y = Tensor2::<B>::zeros(rt, [n, n])?;
    let spec = ("user2d", "copy2d 8192^2", &copy2d::SPEC);
    let (copy, _) = sweep_xy(rt, spec, &xs, &mut y, ceiling, |cfg, x, y| {
        match cfg {
            None => copy2d::launch(rt, x, y)?,
            Some(c) => copy2d::launch_with(rt, c, x, y)?,
        }
        Ok(())
    })?;
    out.insert("copy2d".into(), copy);
    let spec = ("user2d", "transpose2d 8192^2", &transpose2d::SPEC);
    let (tr, last) = sweep_xy(rt, spec, &xs, &mut y, ceiling, |cfg, x, y| {
        match cfg {
            None => transpose2d::launch(rt, x, y)?,
            Some(c) => transpose2d::launch_with(rt, c, x, y)?,
        }
        Ok(())
    })?;
    out.insert("transpose2d".into(), tr);
    // The transpose of the last run, checked on a sample of elements.
    let (got, src) = (y.to_vec()?, xs[last].to_vec()?);
    for k in (0..n * n).step_by(4099) {
        let (r, c) = (k / n, k % n);
        if got[c * n + r] != src[k] {
            return Err(anyhow!("transpose2d: y[{c}][{r}] != x[{r}][{c}]"));
        }
    }
    drop((xs, y));
    // Fused add + RMSNorm, 32768x4096: two sets of (x, residual), 512 MB each.
    let (m, n) = (32768usize, 4096usize);
    let sets = [
        (
            Tensor2::<B>::from_vec(rt, random(m * n, 13), [m, n])?,
            Tensor2::<B>::from_vec(rt, random(m * n, 14), [m, n])?,
        ),
        (
            Tensor2::<B>::from_vec(rt, random(m * n, 15), [m, n])?,
            Tensor2::<B>::from_vec(rt, random(m * n, 16), [m, n])?,
        ),
    ];
    let bias = Tensor1::<B>::from_vec(rt, random(n, 17), [n])?;
    let w = Tensor1::<B>::from_vec(rt, random(n, 18), [n])?;
    let mut h = Tensor2::<B>::zeros(rt, [m, n])?;
    let mut yy = Tensor2::<B>::zeros(rt, [m, n])?;
    // Reads x and residual, writes h and y (bias and w are 8 KB each).
    let bytes = 4.0 * (m * n * 2) as f64 + 2.0 * (n * 2) as f64;
    let mut i = 0usize;
    let norm = sweep(
        rt,
        "user2d",
        "add_rmsnorm 32768x4096",
        &add_rmsnorm::SPEC,
        bytes,
        ceiling,
        |cfg| {
            i += 1;
            let (x, r) = &sets[i % 2];
            match cfg {
                None => add_rmsnorm::launch(rt, x, &bias, r, &w, &mut h, &mut yy, 1e-5)?,
                Some(c) => add_rmsnorm::launch_with(rt, c, x, &bias, r, &w, &mut h, &mut yy, 1e-5)?,
            }
            Ok(())
        },
    )?;
    out.insert("add_rmsnorm".into(), norm);
    Ok(Value::Object(out))
}
