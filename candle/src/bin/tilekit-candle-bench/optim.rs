//! An optimizer step over GPT-2 small's parameters (148 tensors, 124,439,808 f32
//! parameters) on candle `Var`s: `tilekit_candle::optim::AdamW` (one launch over the list)
//! against `candle_nn::AdamW` (a dozen candle ops per parameter), from the same
//! parameters and gradients; and the bf16-parameter form (f32 master weights) alone.
//! Bytes counted as the issue counts them: per parameter, the parameter, gradient and both
//! moments read and the parameter and moments written (28 bytes in f32; the bf16 form
//! reads and writes the master weights too and the 2-byte parameter and gradient).

use crate::timing::median_us;
use candle_core::backprop::GradStore;
use candle_core::{DType, Device, Tensor, Var};
use candle_nn::Optimizer;
use serde_json::{json, Value};
use tilekit_candle::optim::{AdamW, ParamsAdamW};

/// GPT-2 small's parameter lengths: the two embeddings, 12 blocks of (LayerNorm weight and
/// bias, QKV, attention projection, LayerNorm, MLP up and down, each with a bias), the final
/// LayerNorm.
fn gpt2_small() -> Vec<usize> {
    let d = 768;
    let block = [
        d,
        d,
        3 * d * d,
        3 * d,
        d * d,
        d,
        d,
        d,
        4 * d * d,
        4 * d,
        4 * d * d,
        d,
    ];
    let mut v = vec![50257 * d, 1024 * d];
    (0..12).for_each(|_| v.extend(block));
    v.extend([d, d]);
    v
}

/// Parameters (uniform in [-1, 1)) and a gradient store for them.
fn model(dev: &Device, dtype: DType) -> candle_core::Result<(Vec<Var>, GradStore)> {
    let mut vars = Vec::new();
    let mut grads = GradStore::default();
    for n in gpt2_small() {
        let v = Var::from_tensor(&Tensor::rand(-1f32, 1f32, n, dev)?.to_dtype(dtype)?)?;
        grads.insert(
            v.as_tensor(),
            Tensor::rand(-1f32, 1f32, n, dev)?.to_dtype(dtype)?,
        );
        vars.push(v);
    }
    Ok((vars, grads))
}

/// The largest difference between the parameters of two runs.
fn max_diff(a: &[Var], b: &[Var]) -> candle_core::Result<f32> {
    let mut m = 0f32;
    for (x, y) in a.iter().zip(b) {
        let d = (x.as_tensor() - y.as_tensor())?
            .abs()?
            .max(0)?
            .to_scalar::<f32>()?;
        m = m.max(d);
    }
    Ok(m)
}

/// Times both optimizers' steps; `check.ok` when one step of each from the same state
/// agrees within 1e-5.
pub fn adamw_benchmark(dev: &Device, quick: bool) -> Result<Value, Box<dyn std::error::Error>> {
    let params = ParamsAdamW {
        lr: 1e-3,
        weight_decay: 0.1,
        ..Default::default()
    };
    let reps = if quick { 5 } else { 15 };
    let n: usize = gpt2_small().iter().sum();
    let (ours, grads) = model(dev, DType::F32)?;
    let theirs: Vec<Var> = ours
        .iter()
        .map(|v| Var::from_tensor(&v.as_tensor().copy()?))
        .collect::<candle_core::Result<_>>()?;
    let mut theirs_grads = GradStore::default();
    for (o, t) in ours.iter().zip(&theirs) {
        if let Some(g) = grads.get(o.as_tensor()) {
            theirs_grads.insert(t.as_tensor(), g.clone());
        }
    }
    let mut opt = AdamW::new(ours.clone(), params.clone())?;
    let mut reference = candle_nn::AdamW::new(theirs.clone(), params.clone())?;
    opt.step(&grads)?;
    reference.step(&theirs_grads)?;
    dev.synchronize()?;
    let diff = max_diff(&ours, &theirs)?;
    let ours_us = median_us(dev, 3, reps, 5, || opt.step(&grads).map_err(Into::into))?;
    let theirs_us = median_us(dev, 2, reps, 2, || reference.step(&theirs_grads))?;
    drop((opt, reference, ours, theirs, grads, theirs_grads));
    let (half, half_grads) = model(dev, DType::BF16)?;
    let mut opt16 = AdamW::new(half.clone(), params)?;
    let bf16_us = median_us(dev, 3, reps, 5, || {
        opt16.step(&half_grads).map_err(Into::into)
    })?;
    let gbs = |bytes_per: usize, us: f64| (bytes_per * n) as f64 / (us * 1e3);
    eprintln!(
        "adamw gpt2-small f32: tilekit {:.3} ms ({:.0} GB/s), candle-nn {:.3} ms ({:.0} GB/s); \
         bf16 + master: {:.3} ms ({:.0} GB/s); max diff after one step {diff:e}",
        ours_us / 1e3,
        gbs(28, ours_us),
        theirs_us / 1e3,
        gbs(28, theirs_us),
        bf16_us / 1e3,
        gbs(34, bf16_us)
    );
    Ok(json!({
        "tensors": gpt2_small().len(),
        "params": n,
        "tilekit_f32_us": ours_us,
        "tilekit_f32_gbs": gbs(28, ours_us),
        "candle_nn_f32_us": theirs_us,
        "candle_nn_f32_gbs": gbs(28, theirs_us),
        "speedup": theirs_us / ours_us,
        "tilekit_bf16_master_us": bf16_us,
        "tilekit_bf16_master_gbs": gbs(34, bf16_us),
        "check": { "max_diff": diff, "ok": diff < 1e-5 },
    }))
}
