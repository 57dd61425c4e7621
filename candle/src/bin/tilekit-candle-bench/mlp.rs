//! A transformer block step with candle's fused ops or tilekit's, checked and timed.

use crate::timing::median_us;
use candle_core::{DType, Device, Module, Tensor};
use serde_json::{json, Value};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Which implementation of the normalisations and the softmax.
#[derive(Clone, Copy, Debug)]
enum Ops {
    Candle,
    Tilekit,
}

impl Ops {
    fn rms_norm(self, x: &Tensor, w: &Tensor) -> Res<Tensor> {
        Ok(match self {
            Ops::Candle => candle_nn::ops::rms_norm(x, w, 1e-5)?,
            Ops::Tilekit => tilekit_candle::rms_norm(x, w, 1e-5)?,
        })
    }
    fn layer_norm(self, x: &Tensor, w: &Tensor, b: &Tensor) -> Res<Tensor> {
        Ok(match self {
            Ops::Candle => candle_nn::ops::layer_norm(x, w, b, 1e-5)?,
            Ops::Tilekit => tilekit_candle::layer_norm(x, w, b, 1e-5)?,
        })
    }
    fn softmax(self, x: &Tensor) -> Res<Tensor> {
        Ok(match self {
            Ops::Candle => candle_nn::ops::softmax_last_dim(x)?,
            Ops::Tilekit => tilekit_candle::softmax_last_dim(x)?,
        })
    }
}

/// The block's sizes and weights.
struct Block {
    batch: usize,
    seq: usize,
    heads: usize,
    dim: usize,
    g1: Tensor,
    g2: Tensor,
    b2: Tensor,
    wq: Tensor,
    wk: Tensor,
    wv: Tensor,
    wo: Tensor,
    w1: Tensor,
    w2: Tensor,
}

fn weight(shape: &[usize], scale: f64, dtype: DType, dev: &Device) -> Res<Tensor> {
    Ok((Tensor::randn(0f32, 1f32, shape, dev)? * scale)?.to_dtype(dtype)?)
}

impl Block {
    fn new(
        batch: usize,
        seq: usize,
        heads: usize,
        dim: usize,
        dtype: DType,
        dev: &Device,
    ) -> Res<Self> {
        let s = 1.0 / (dim as f64).sqrt();
        Ok(Block {
            batch,
            seq,
            heads,
            dim,
            g1: (weight(&[dim], 0.1, DType::F32, dev)? + 1.0)?.to_dtype(dtype)?,
            g2: (weight(&[dim], 0.1, DType::F32, dev)? + 1.0)?.to_dtype(dtype)?,
            b2: weight(&[dim], 0.1, dtype, dev)?,
            wq: weight(&[dim, dim], s, dtype, dev)?,
            wk: weight(&[dim, dim], s, dtype, dev)?,
            wv: weight(&[dim, dim], s, dtype, dev)?,
            wo: weight(&[dim, dim], s, dtype, dev)?,
            w1: weight(&[dim, 4 * dim], s, dtype, dev)?,
            w2: weight(&[4 * dim, dim], 0.5 * s, dtype, dev)?,
        })
    }

    /// `[B*T, C]` -> `[B*H, T, C/H]`.
    fn heads(&self, t: &Tensor) -> Res<Tensor> {
        let d = self.dim / self.heads;
        Ok(t.reshape((self.batch, self.seq, self.heads, d))?
            .transpose(1, 2)?
            .reshape((self.batch * self.heads, self.seq, d))?)
    }

    /// One step: pre-norm attention (RMSNorm, softmax) and a LayerNorm + GELU MLP.
    fn step(&self, ops: Ops, x: &Tensor) -> Res<Tensor> {
        let d = self.dim / self.heads;
        let h = ops.rms_norm(x, &self.g1)?;
        let q = self.heads(&h.matmul(&self.wq)?)?;
        let k = self.heads(&h.matmul(&self.wk)?)?;
        let v = self.heads(&h.matmul(&self.wv)?)?;
        let s = (q.matmul(&k.t()?)? * (1.0 / (d as f64).sqrt()))?;
        let p = ops.softmax(&s)?;
        let o = p
            .matmul(&v)?
            .reshape((self.batch, self.heads, self.seq, d))?
            .transpose(1, 2)?
            .reshape((self.batch * self.seq, self.dim))?;
        let x = (x + o.matmul(&self.wo)?)?;
        let h2 = ops.layer_norm(&x, &self.g2, &self.b2)?;
        let u = candle_nn::Activation::GeluPytorchTanh.forward(&h2.matmul(&self.w1)?)?;
        Ok((x + u.matmul(&self.w2)?)?)
    }
}

/// The largest difference between the two steps' outputs, relative to the largest output.
fn rel_diff(a: &Tensor, b: &Tensor) -> Res<f64> {
    let (a, b) = (a.to_dtype(DType::F32)?, b.to_dtype(DType::F32)?);
    let d: f32 = (&a - &b)?.abs()?.max_all()?.to_scalar()?;
    let m: f32 = b.abs()?.max_all()?.to_scalar()?;
    Ok(f64::from(d) / f64::from(m.max(1e-12)))
}

/// Both steps on one input: the check and the timings.
pub fn step_benchmark(dev: &Device, dtype: DType, quick: bool) -> Res<Value> {
    let (batch, seq, heads, dim) = if quick {
        (2, 256, 8, 512)
    } else {
        (8, 512, 16, 1024)
    };
    let block = Block::new(batch, seq, heads, dim, dtype, dev)?;
    let x = weight(&[batch * seq, dim], 1.0, dtype, dev)?;
    let want = block.step(Ops::Candle, &x)?;
    let got = block.step(Ops::Tilekit, &x)?;
    let diff = rel_diff(&got, &want)?;
    let limit = if dtype == DType::F32 { 1e-4 } else { 5e-2 };
    let time = |ops: Ops| -> Res<f64> {
        Ok(median_us(dev, 3, 7, 5, || {
            block
                .step(ops, &x)
                .map(drop)
                .map_err(candle_core::Error::msg)
        })?)
    };
    let (candle, tilekit) = (time(Ops::Candle)?, time(Ops::Tilekit)?);
    eprintln!(
        "step {dtype:?} B={batch} T={seq} H={heads} C={dim}: candle {candle:.1} us, tilekit {tilekit:.1} us, rel diff {diff:.2e}"
    );
    Ok(json!({
        "shape": {"batch": batch, "seq": seq, "heads": heads, "dim": dim},
        "dtype": format!("{dtype:?}"),
        "candle_us": candle,
        "tilekit_us": tilekit,
        "speedup": candle / tilekit,
        "check": {"max_rel_diff": diff, "limit": limit, "ok": diff <= limit},
    }))
}

/// Bytes an op moves: each input and output once.
fn gbps(bytes: usize, us: f64) -> f64 {
    bytes as f64 / (us * 1e3)
}

/// The ops alone, candle's against tilekit's.
pub fn ops_benchmark(dev: &Device, quick: bool) -> Res<Value> {
    let mut rows = Vec::new();
    let shapes: &[(usize, usize)] = if quick {
        &[(4096, 512), (8192, 1024)]
    } else {
        // Narrow rows (hidden sizes 256-1024, issue 34) and the brief's wide ones.
        &[
            (65536, 256),
            (65536, 512),
            (65536, 768),
            (4096, 1024),
            (32768, 4096),
        ]
    };
    for &dtype in &[DType::BF16, DType::F32] {
        for &(m, n) in shapes {
            let x = weight(&[m, n], 1.0, dtype, dev)?;
            let w = (weight(&[n], 0.1, DType::F32, dev)? + 1.0)?.to_dtype(dtype)?;
            let b = weight(&[n], 0.1, dtype, dev)?;
            let bytes = 2 * m * n * dtype.size_in_bytes();
            for op in ["softmax", "rms_norm", "layer_norm"] {
                let run = |ops: Ops| -> Res<Tensor> {
                    match op {
                        "softmax" => ops.softmax(&x),
                        "rms_norm" => ops.rms_norm(&x, &w),
                        _ => ops.layer_norm(&x, &w, &b),
                    }
                };
                let diff = rel_diff(&run(Ops::Tilekit)?, &run(Ops::Candle)?)?;
                let t = |ops: Ops| -> Res<f64> {
                    Ok(median_us(dev, 3, 9, 10, || {
                        run(ops).map(drop).map_err(candle_core::Error::msg)
                    })?)
                };
                let (c, k) = (t(Ops::Candle)?, t(Ops::Tilekit)?);
                eprintln!(
                    "{op:<10} {dtype:?} {m}x{n}: candle {c:.1} us ({:.0} GB/s), tilekit {k:.1} us ({:.0} GB/s), {:.2}x candle, rel diff {diff:.1e}",
                    gbps(bytes, c),
                    gbps(bytes, k),
                    c / k
                );
                rows.push(json!({
                    "op": op, "dtype": format!("{dtype:?}"), "shape": [m, n],
                    "candle_us": c, "tilekit_us": k,
                    "candle_gbps": gbps(bytes, c), "tilekit_gbps": gbps(bytes, k),
                    "speedup": c / k, "max_rel_diff": diff,
                }));
            }
        }
    }
    let speedups: Vec<f64> = rows.iter().filter_map(|r| r["speedup"].as_f64()).collect();
    let (lowest, geomean) = summary(&speedups);
    eprintln!(
        "ops summary: {} op/shape/dtype cases, tilekit-candle / candle: lowest {lowest:.2}x, geometric mean {geomean:.2}x, {} under 1.0x",
        speedups.len(),
        speedups.iter().filter(|s| **s < 1.0).count()
    );
    rows.push(json!({
        "summary": {"cases": speedups.len(), "lowest_speedup": lowest, "geomean_speedup": geomean},
    }));
    Ok(Value::Array(rows))
}

/// The lowest value and the geometric mean of `v` (NaN, NaN when empty).
fn summary(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let lowest = v.iter().copied().fold(f64::INFINITY, f64::min);
    let geomean = (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
    (lowest, geomean)
}
