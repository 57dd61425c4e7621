//! Checks shared by the CPU tests (`cpu.rs`, CI) and the GPU tests (`gpu.rs`, the H100):
//! each tilekit op against candle's own op (candle-nn) or candle's autograd of the same
//! math, on one device, at awkward shapes and through strided layouts.

#![allow(dead_code)] // each test binary uses its own part

use candle_core::{DType, Device, Tensor, Var, D};

/// The largest absolute difference.
pub fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
    assert_eq!(a.dims(), b.dims(), "shapes differ");
    max_abs(&(a.to_dtype(DType::F32).unwrap() - b.to_dtype(DType::F32).unwrap()).unwrap())
}

/// The largest magnitude, as f32.
pub fn max_abs(t: &Tensor) -> f32 {
    t.to_dtype(DType::F32)
        .unwrap()
        .abs()
        .unwrap()
        .flatten_all()
        .unwrap()
        .max(0)
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}

/// A tolerance for `dtype` (outputs of magnitude about 1).
pub fn tol(dtype: DType) -> f32 {
    match dtype {
        DType::F32 => 2e-5,
        DType::F16 => 4e-3,
        _ => 3e-2,
    }
}

thread_local! {
    /// Each test's own generator state (a test runs on its own thread): the same inputs on
    /// every run, whatever the order the harness runs the tests in.
    static SEED: std::cell::Cell<u64> = const { std::cell::Cell::new(0x2545_f491_4f6c_dd1d) };
}

/// Seeded inputs in `[-3, 3)`, made on the host (candle's CPU generator cannot be seeded:
/// `set_seed` refuses), SplitMix64 per element.
pub fn rand(shape: &[usize], dtype: DType, dev: &Device) -> Tensor {
    let n: usize = shape.iter().product();
    let values: Vec<f32> = (0..n)
        .map(|_| {
            let x = SEED.with(|s| {
                let z = s.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
                s.set(z);
                let z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^ (z >> 31)
            });
            (x >> 40) as f32 / (1u64 << 24) as f32 * 6.0 - 3.0
        })
        .collect();
    Tensor::from_vec(values, shape, dev)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

/// softmax / log-softmax forward against candle-nn, contiguous and strided.
pub fn softmax_matches(dev: &Device, dtype: DType) {
    for shape in [&[7usize, 33][..], &[2, 3, 1000], &[1, 4097]] {
        let x = rand(shape, dtype, dev);
        let y = tilekit_candle::softmax_last_dim(&x).unwrap();
        let want = candle_nn::ops::softmax_last_dim(&x).unwrap();
        assert!(
            max_diff(&y, &want) < tol(dtype),
            "softmax {shape:?} {dtype:?}"
        );
        let y = tilekit_candle::log_softmax_last_dim(&x).unwrap();
        // candle's log_softmax sums in the element type (a bf16 sum of 4097 terms is off by
        // ~1): the reference is computed in f32. Magnitudes up to ~10.
        let xf = x.to_dtype(DType::F32).unwrap();
        let want = candle_nn::ops::log_softmax(&xf, D::Minus1).unwrap();
        let scale = 1.0 + max_diff(&want, &want.zeros_like().unwrap());
        let d = max_diff(&y, &want);
        assert!(
            d < 2.0 * tol(dtype) * scale,
            "log_softmax {shape:?} {dtype:?}: {d}"
        );
    }
    // A view: rows padded (a narrow of the last axis), at an offset.
    let big = rand(&[9, 70], dtype, dev);
    let x = big.narrow(1, 3, 61).unwrap().narrow(0, 1, 8).unwrap();
    let y = tilekit_candle::softmax_last_dim(&x).unwrap();
    let want = candle_nn::ops::softmax_last_dim(&x.contiguous().unwrap()).unwrap();
    assert!(max_diff(&y, &want) < tol(dtype), "softmax of a view");
    // A transposed matrix (last-axis stride 9) and a transposed batch (made contiguous).
    let t = big.narrow(1, 0, 9).unwrap().t().unwrap();
    let y = tilekit_candle::softmax_last_dim(&t).unwrap();
    let want = candle_nn::ops::softmax_last_dim(&t.contiguous().unwrap()).unwrap();
    assert!(max_diff(&y, &want) < tol(dtype), "softmax of a transpose");
    let b = rand(&[3, 4, 5], dtype, dev).transpose(0, 1).unwrap();
    let y = tilekit_candle::softmax_last_dim(&b).unwrap();
    let want = candle_nn::ops::softmax_last_dim(&b.contiguous().unwrap()).unwrap();
    assert!(
        max_diff(&y, &want) < tol(dtype),
        "softmax of a transposed batch"
    );
}

/// RMSNorm and LayerNorm forward against candle-nn.
pub fn norms_match(dev: &Device, dtype: DType) {
    for shape in [&[5usize, 96][..], &[2, 3, 4097]] {
        let n = shape[shape.len() - 1];
        let x = rand(shape, dtype, dev);
        let w = rand(&[n], dtype, dev);
        let b = rand(&[n], dtype, dev);
        let y = tilekit_candle::rms_norm(&x, &w, 1e-5).unwrap();
        let want = candle_nn::ops::rms_norm(&x, &w, 1e-5).unwrap();
        assert!(
            max_diff(&y, &want) < 4.0 * tol(dtype),
            "rms_norm {shape:?} {dtype:?}"
        );
        let y = tilekit_candle::layer_norm(&x, &w, &b, 1e-5).unwrap();
        let want = candle_nn::ops::layer_norm(&x, &w, &b, 1e-5).unwrap();
        assert!(
            max_diff(&y, &want) < 8.0 * tol(dtype),
            "layer_norm {shape:?} {dtype:?}"
        );
        let (y2, mean, rstd) = tilekit_candle::layer_norm_with_stats(&x, &w, &b, 1e-5).unwrap();
        assert_eq!(max_diff(&y, &y2), 0.0);
        let xf = x.to_dtype(DType::F32).unwrap();
        let want_mean = xf.mean_keepdim(D::Minus1).unwrap().flatten_all().unwrap();
        assert!(max_diff(&mean, &want_mean) < 1e-3);
        assert_eq!(rstd.dims(), mean.dims());
        let r = rand(shape, dtype, dev);
        let (h, y) = tilekit_candle::rms_norm_residual(&x, &r, &w, 1e-5).unwrap();
        let want_h = (&x + &r).unwrap();
        assert!(max_diff(&h, &want_h) < tol(dtype));
        let want = candle_nn::ops::rms_norm(&want_h, &w, 1e-5).unwrap();
        assert!(
            max_diff(&y, &want) < 8.0 * tol(dtype),
            "rms_norm_residual {shape:?}"
        );
    }
}

/// Gradients of softmax, log-softmax, RMSNorm and LayerNorm against candle's autograd of
/// candle-nn's ops (f32).
pub fn gradients_match(dev: &Device) {
    let x = Var::from_tensor(&rand(&[6, 37], DType::F32, dev)).unwrap();
    let w = Var::from_tensor(&rand(&[37], DType::F32, dev)).unwrap();
    let b = Var::from_tensor(&rand(&[37], DType::F32, dev)).unwrap();
    let probe = rand(&[6, 37], DType::F32, dev);
    let grads = |loss: Tensor, vars: &[&Var]| -> Vec<Tensor> {
        let g = loss.backward().unwrap();
        vars.iter()
            .map(|v| g.get(v).expect("a gradient").clone())
            .collect()
    };
    /// A name, the forward (tilekit's when `true`), the variables.
    type Case<'v> = (&'static str, Box<dyn Fn(bool) -> Tensor + 'v>, Vec<&'v Var>);
    let cases: [Case<'_>; 4] = [
        (
            "softmax",
            Box::new(|tk| {
                if tk {
                    tilekit_candle::softmax_last_dim(&x).unwrap()
                } else {
                    candle_nn::ops::softmax(&x, D::Minus1).unwrap()
                }
            }),
            vec![&x],
        ),
        (
            "log_softmax",
            Box::new(|tk| {
                if tk {
                    tilekit_candle::log_softmax_last_dim(&x).unwrap()
                } else {
                    candle_nn::ops::log_softmax(&x, D::Minus1).unwrap()
                }
            }),
            vec![&x],
        ),
        (
            "rms_norm",
            Box::new(|tk| {
                if tk {
                    tilekit_candle::rms_norm(&x, &w, 1e-5).unwrap()
                } else {
                    // candle-nn's fused rms_norm has no backward: the same math in ops.
                    let ms = x.sqr().unwrap().mean_keepdim(D::Minus1).unwrap();
                    let r = (ms + 1e-5).unwrap().sqrt().unwrap();
                    x.broadcast_div(&r).unwrap().broadcast_mul(&w).unwrap()
                }
            }),
            vec![&x, &w],
        ),
        (
            "layer_norm",
            Box::new(|tk| {
                if tk {
                    tilekit_candle::layer_norm(&x, &w, &b, 1e-5).unwrap()
                } else {
                    let mean = x.mean_keepdim(D::Minus1).unwrap();
                    let c = x.broadcast_sub(&mean).unwrap();
                    let var = c.sqr().unwrap().mean_keepdim(D::Minus1).unwrap();
                    let r = (var + 1e-5).unwrap().sqrt().unwrap();
                    c.broadcast_div(&r)
                        .unwrap()
                        .broadcast_mul(&w)
                        .unwrap()
                        .broadcast_add(&b)
                        .unwrap()
                }
            }),
            vec![&x, &w, &b],
        ),
    ];
    for (name, f, vars) in cases {
        let loss = |tk: bool| (f(tk) * &probe).unwrap().sum_all().unwrap();
        let got = grads(loss(true), &vars);
        let want = grads(loss(false), &vars);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let scale = 1.0 + max_diff(w, &w.zeros_like().unwrap());
            assert!(max_diff(g, w) < 1e-4 * scale, "{name}: gradient {i}");
        }
    }
}

/// Cross-entropy against candle-nn's (mean over rows).
pub fn cross_entropy_matches(dev: &Device, dtype: DType) {
    let (rows, vocab) = (9, 1031);
    let logits = rand(&[rows, vocab], dtype, dev);
    let labels: Vec<u32> = (0..rows as u32).map(|i| (i * 97) % vocab as u32).collect();
    let labels = Tensor::new(labels.as_slice(), dev).unwrap();
    let (loss, dlogits) =
        tilekit_candle::cross_entropy(&logits, &labels, -100, 0.0, 1.0 / rows as f32).unwrap();
    let mean = loss.mean_all().unwrap();
    let want =
        candle_nn::loss::cross_entropy(&logits.to_dtype(DType::F32).unwrap(), &labels).unwrap();
    assert!(
        max_diff(&mean, &want) < 4.0 * tol(dtype),
        "cross_entropy {dtype:?}"
    );
    assert_eq!(dlogits.dims(), logits.dims());
    // The gradient of the mean loss: softmax minus one-hot, over rows.
    let p = candle_nn::ops::softmax_last_dim(&logits.to_dtype(DType::F32).unwrap()).unwrap();
    let g = (dlogits.to_dtype(DType::F32).unwrap() * rows as f64).unwrap();
    let row_sums = (g - p).unwrap().sum(D::Minus1).unwrap();
    let ones = Tensor::full(-1f32, rows, dev).unwrap();
    assert!(max_diff(&row_sums, &ones) < 1e-2, "cross_entropy gradient");
}

/// A user kernel through [`tilekit_candle::Launch`]: the library's softmax spec on a
/// strided view, bound explicitly, and its refusals.
pub fn generic_launch(dev: &Device) {
    let big = rand(&[4, 40], DType::F32, dev);
    let x = big.narrow(1, 5, 30).unwrap();
    let out = tilekit_candle::Launch::new(&tilekit_kernels::softmax::SPEC)
        .generic(DType::F32)
        .input(&x)
        .output((4, 30), DType::F32)
        .run()
        .unwrap();
    let want = candle_nn::ops::softmax_last_dim(&x.contiguous().unwrap()).unwrap();
    assert!(max_diff(&out[0], &want) < 2e-5);
    // Wrong element type for the kernel's T: tilekit's launch check refuses it.
    let e = tilekit_candle::Launch::new(&tilekit_kernels::softmax::SPEC)
        .generic(DType::BF16)
        .input(&x)
        .output((4, 30), DType::BF16)
        .run()
        .unwrap_err();
    assert!(matches!(e, tilekit_candle::Error::Launch(_)), "{e}");
    // An element type tilekit tensors cannot hold.
    let u = Tensor::zeros((4, 30), DType::U8, dev).unwrap();
    let e = tilekit_candle::Launch::new(&tilekit_kernels::softmax::SPEC)
        .generic(DType::F32)
        .input(&u)
        .output((4, 30), DType::F32)
        .run()
        .unwrap_err();
    assert!(
        matches!(
            e,
            tilekit_candle::Error::UnsupportedDType {
                dtype: DType::U8,
                ..
            }
        ),
        "{e}"
    );
    // A shape that breaks the kernel's contract (y must be x's shape).
    let e = tilekit_candle::Launch::new(&tilekit_kernels::softmax::SPEC)
        .generic(DType::F32)
        .input(&x)
        .output((4, 31), DType::F32)
        .run()
        .unwrap_err();
    assert!(matches!(e, tilekit_candle::Error::Launch(_)), "{e}");
}

/// Typed refusals before anything runs.
pub fn refusals(dev: &Device) {
    use tilekit_candle::Error;
    let x64 = Tensor::zeros((2, 3), DType::F64, dev).unwrap();
    assert!(matches!(
        tilekit_candle::softmax_last_dim(&x64),
        Err(Error::UnsupportedDType {
            dtype: DType::F64,
            ..
        })
    ));
    let x = rand(&[2, 3], DType::F32, dev);
    let w16 = rand(&[3], DType::F16, dev);
    assert!(matches!(
        tilekit_candle::rms_norm(&x, &w16, 1e-5),
        Err(Error::DTypeMismatch { .. })
    ));
    let w4 = rand(&[4], DType::F32, dev);
    assert!(matches!(
        tilekit_candle::rms_norm(&x, &w4, 1e-5),
        Err(Error::Shape { .. })
    ));
    let wide = rand(&[1, 8193], DType::F32, dev);
    let w = rand(&[8193], DType::F32, dev);
    assert!(matches!(
        tilekit_candle::rms_norm(&wide, &w, 1e-5),
        Err(Error::Shape { .. })
    ));
    let f = rand(&[2], DType::F32, dev);
    assert!(matches!(
        tilekit_candle::cross_entropy(&x, &f, -100, 0.0, 1.0),
        Err(Error::UnsupportedDType { .. })
    ));
}

/// `softmax(q k^T * scale + mask) v` with candle's own ops (`[B, H, S, D]`, key/value heads
/// repeated for grouped-query attention, the causal band aligned at the bottom right), for
/// values and for candle's autograd.
fn attention_reference(q: &Tensor, k: &Tensor, v: &Tensor, scale: f64, causal: bool) -> Tensor {
    let (b, h, sq, d) = q.dims4().unwrap();
    let (_, hk, sk, _) = k.dims4().unwrap();
    let rep = |t: &Tensor| {
        t.unsqueeze(2)
            .unwrap()
            .expand((b, hk, h / hk, sk, d))
            .unwrap()
            .reshape((b, h, sk, d))
            .unwrap()
    };
    let (k, v) = (rep(k), rep(v));
    let q = q.contiguous().unwrap();
    let s = (q.matmul(&k.t().unwrap().contiguous().unwrap()).unwrap() * scale).unwrap();
    let s = if causal {
        let mask: Vec<f32> = (0..sq)
            .flat_map(|i| {
                (0..sk).map(move |j| {
                    if j as i64 > i as i64 + sk as i64 - sq as i64 {
                        f32::NEG_INFINITY
                    } else {
                        0.0
                    }
                })
            })
            .collect();
        let mask = Tensor::from_vec(mask, (sq, sk), q.device()).unwrap();
        s.broadcast_add(&mask).unwrap()
    } else {
        s
    };
    candle_nn::ops::softmax(&s, D::Minus1)
        .unwrap()
        .matmul(&v)
        .unwrap()
}

/// `tilekit_candle::attention` and `attention_backward` against candle's ops and autograd
/// (f32): full and causal (fewer queries than keys), grouped-query heads, a strided `q`.
pub fn attention_matches(dev: &Device) {
    for (sq, sk, causal) in [(17, 17, false), (9, 33, true), (33, 33, true)] {
        let (b, h, hk, d) = (2, 4, 2, 64);
        let q = Var::from_tensor(&rand(&[b, sq, h, d], DType::F32, dev)).unwrap();
        // [B, S, H, D] transposed: a strided [B, H, S, D] view (merged with a copy).
        let qv = q.transpose(1, 2).unwrap();
        let k = Var::from_tensor(&rand(&[b, hk, sk, d], DType::F32, dev)).unwrap();
        let v = Var::from_tensor(&rand(&[b, hk, sk, d], DType::F32, dev)).unwrap();
        let scale = 0.125;
        let (o, lse) = tilekit_candle::attention(&qv, &k, &v, scale as f32, causal).unwrap();
        let want = attention_reference(&qv, &k, &v, scale, causal);
        let what = format!("attention {sq}x{sk} causal={causal}");
        assert!(
            max_diff(&o, &want) < 1e-4,
            "{what}: o off by {}",
            max_diff(&o, &want)
        );
        assert_eq!(lse.dims(), &[b, h, sq]);
        // Gradients of sum(o * probe) both ways.
        let probe = rand(&[b, h, sq, d], DType::F32, dev);
        let g = (want * &probe)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        let (dq, dk, dv) =
            tilekit_candle::attention_backward(&qv, &k, &v, &o, &lse, &probe, scale as f32, causal)
                .unwrap();
        let dq_want = g.get(&q).expect("dq").transpose(1, 2).unwrap();
        for (name, got, want) in [
            ("dq", dq, dq_want),
            ("dk", dk, g.get(&k).expect("dk").clone()),
            ("dv", dv, g.get(&v).expect("dv").clone()),
        ] {
            let diff = max_diff(&got, &want);
            assert!(diff < 1e-3, "{what}: {name} off by {diff}");
        }
    }
    // Refused: mismatched head dimension, heads that do not divide.
    let q = rand(&[1, 3, 8, 64], DType::F32, dev);
    let k = rand(&[1, 2, 8, 64], DType::F32, dev);
    assert!(tilekit_candle::attention(&q, &k, &k, 0.125, false).is_err());
    let k = rand(&[1, 3, 8, 32], DType::F32, dev);
    assert!(tilekit_candle::attention(&q, &k, &k, 0.125, false).is_err());
}

/// Largest difference relative to the largest magnitude of `want`.
fn rel_diff(got: &Tensor, want: &Tensor) -> f32 {
    max_diff(got, want) / max_abs(want).max(1e-30)
}

/// One transformer block's attention half, trained one step both ways: `y = x +
/// attention(rms_norm(x) W_q, rms_norm(x) W_k, rms_norm(x) W_v) W_o` with grouped-query heads
/// (4 query heads, 2 key/value heads, D = 64), the heads split from `[B, S, H * D]`
/// projections by a transpose (strided `[B, H, S, D]` views), causal and full. Through
/// tilekit-candle's differentiable ops (`rms_norm`, `scaled_dot_product_attention`) and
/// through candle's own ops: `y` and the gradients of `sum(y * probe)` for `x`, the norm's
/// weight and the four projections agree (f32).
pub fn attention_block_trains_like_candle(dev: &Device) {
    let (b, s, e, h, hk, d) = (2, 33, 96, 4, 2, 64);
    let eps = 1e-5;
    let scale = 1.0 / (d as f64).sqrt();
    let var = |shape: &[usize], k: f64| {
        Var::from_tensor(&(rand(shape, DType::F32, dev) * k).unwrap()).unwrap()
    };
    let x = var(&[b, s, e], 1.0);
    let g = Var::from_tensor(&Tensor::rand(0.5f32, 1.5, e, dev).unwrap()).unwrap();
    let (wq, wk, wv) = (
        var(&[e, h * d], 0.1),
        var(&[e, hk * d], 0.1),
        var(&[e, hk * d], 0.1),
    );
    let wo = var(&[h * d, e], 0.05);
    let probe = rand(&[b, s, e], DType::F32, dev);
    let rms_candle = |x: &Tensor| {
        let ms = x.sqr().unwrap().mean_keepdim(D::Minus1).unwrap();
        let r = (ms + eps).unwrap().sqrt().unwrap();
        x.broadcast_div(&r).unwrap().broadcast_mul(&g).unwrap()
    };
    for causal in [true, false] {
        let block = |tilekit: bool| {
            let xn = if tilekit {
                tilekit_candle::rms_norm(&x, &g, eps as f32).unwrap()
            } else {
                rms_candle(&x)
            };
            let heads = |w: &Var, n: usize| {
                xn.broadcast_matmul(w)
                    .unwrap()
                    .reshape((b, s, n, d))
                    .unwrap()
                    .transpose(1, 2)
                    .unwrap()
            };
            let (q, k, v) = (heads(&wq, h), heads(&wk, hk), heads(&wv, hk));
            let o = if tilekit {
                tilekit_candle::scaled_dot_product_attention(&q, &k, &v, scale as f32, causal)
                    .unwrap()
            } else {
                attention_reference(&q, &k, &v, scale, causal)
            };
            let o = o.transpose(1, 2).unwrap().contiguous().unwrap();
            let o = o.reshape((b, s, h * d)).unwrap();
            (x.as_tensor() + o.broadcast_matmul(&wo).unwrap()).unwrap()
        };
        let (got, want) = (block(true), block(false));
        let what = format!("attention block causal={causal}");
        let diff = rel_diff(&got, &want);
        assert!(diff < 1e-5, "{what}: y off by {diff} (relative)");
        let grads = |y: &Tensor| (y * &probe).unwrap().sum_all().unwrap().backward().unwrap();
        let (gg, gw) = (grads(&got), grads(&want));
        for (name, p) in [
            ("x", &x),
            ("rms weight", &g),
            ("w_q", &wq),
            ("w_k", &wk),
            ("w_v", &wv),
            ("w_o", &wo),
        ] {
            let got = gg
                .get(p)
                .unwrap_or_else(|| panic!("{what}: no gradient for {name}"));
            let want = gw.get(p).expect("candle's gradient");
            let diff = rel_diff(got, want);
            assert!(diff < 2e-4, "{what}: d{name} off by {diff} (relative)");
        }
    }
}

/// `tilekit_candle::optim::AdamW` against `candle_nn::AdamW` over five steps of a small
/// model: f32 parameters of several shapes (a scalar, one without a gradient, one whose
/// gradient is strided), and 300 parameters (more than one launch's worth); then bf16 and
/// f16 parameters against candle-nn's AdamW on f32 copies (the master weights), each
/// parameter the master weights rounded to its type.
pub fn adamw_matches(dev: &Device) {
    use candle_core::backprop::GradStore;
    use candle_nn::Optimizer;
    use tilekit_candle::optim::{AdamW, ParamsAdamW};
    let params = ParamsAdamW {
        lr: 0.05,
        weight_decay: 0.1,
        ..Default::default()
    };
    let shapes: &[&[usize]] = &[&[], &[7], &[3, 5], &[2, 3, 4], &[4]];
    let mut shapes: Vec<Vec<usize>> = shapes.iter().map(|s| s.to_vec()).collect();
    shapes.extend((0..300).map(|i| vec![1 + i % 37]));
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let init: Vec<Tensor> = shapes.iter().map(|s| rand(s, dtype, dev)).collect();
        // Copies: a `Var` made from a tensor shares its storage.
        let ours: Vec<Var> = init
            .iter()
            .map(|t| Var::from_tensor(&t.copy().unwrap()).unwrap())
            .collect();
        // candle-nn's run on f32 copies (for f32: the same values).
        let theirs: Vec<Var> = init
            .iter()
            .map(|t| Var::from_tensor(&t.to_dtype(DType::F32).unwrap().copy().unwrap()).unwrap())
            .collect();
        let mut opt = AdamW::new(ours.clone(), params.clone()).unwrap();
        let mut reference = candle_nn::AdamW::new(theirs.clone(), params.clone()).unwrap();
        for step in 0..5 {
            let (mut g_ours, mut g_theirs) = (GradStore::default(), GradStore::default());
            for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
                if i == 4 {
                    continue; // no gradient: left as it is
                }
                let g = rand(o.dims(), dtype, dev);
                // Parameter 2's gradient strided: the transpose of a contiguous one.
                let g = if i == 2 {
                    rand(&[5, 3], dtype, dev).t().unwrap()
                } else {
                    g
                };
                g_theirs.insert(t.as_tensor(), g.to_dtype(DType::F32).unwrap());
                g_ours.insert(o.as_tensor(), g);
            }
            opt.step(&g_ours).unwrap();
            reference.step(&g_theirs).unwrap();
            assert_eq!(opt.steps(), step + 1);
        }
        for (i, ((o, t), x0)) in ours.iter().zip(&theirs).zip(&init).enumerate() {
            let master = match dtype {
                DType::F32 => o.as_tensor().clone(),
                _ => opt.master_weights(o).unwrap().clone(),
            };
            let d = max_diff(&master, t.as_tensor());
            assert!(d < 1e-5, "{dtype:?} parameter {i}: master differs by {d}");
            if dtype != DType::F32 {
                let rounded = master.to_dtype(dtype).unwrap();
                assert_eq!(
                    max_diff(o.as_tensor(), &rounded),
                    0.0,
                    "{dtype:?} parameter {i}"
                );
            }
            if i == 4 {
                assert_eq!(
                    max_diff(o.as_tensor(), x0),
                    0.0,
                    "parameter 4 had no gradient"
                );
            } else {
                assert!(
                    max_diff(o.as_tensor(), x0) > 0.0,
                    "{dtype:?} parameter {i} did not move"
                );
            }
        }
    }
}

/// What `optim::AdamW` refuses, with nothing changed: f64 parameters, two parameters
/// sharing a storage, a gradient of the wrong shape or element type, a non-finite
/// learning rate (the kernel's check; the step count stays).
pub fn adamw_refusals(dev: &Device) {
    use candle_core::backprop::GradStore;
    use tilekit_candle::optim::{AdamW, ParamsAdamW};
    let e = AdamW::new(
        vec![Var::zeros(3, DType::F64, dev).unwrap()],
        ParamsAdamW::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("F64"), "{e}");
    let w = Var::from_tensor(&rand(&[4], DType::F32, dev)).unwrap();
    let before = w.as_tensor().copy().unwrap();
    let mut opt = AdamW::new(vec![w.clone(), w.clone()], ParamsAdamW::default()).unwrap();
    let mut g = GradStore::default();
    g.insert(w.as_tensor(), rand(&[4], DType::F32, dev));
    let e = opt.step(&g).unwrap_err();
    assert!(e.to_string().contains("share one storage"), "{e}");
    let mut opt = AdamW::new(vec![w.clone()], ParamsAdamW::default()).unwrap();
    for bad in [rand(&[5], DType::F32, dev), rand(&[4], DType::BF16, dev)] {
        let mut g = GradStore::default();
        g.insert(w.as_tensor(), bad);
        assert!(opt.step(&g).is_err());
    }
    opt.set_params(ParamsAdamW {
        lr: f64::NAN,
        ..Default::default()
    });
    let e = opt.step(&g).unwrap_err();
    assert!(e.to_string().contains("lr"), "{e}");
    assert_eq!(opt.steps(), 0);
    assert_eq!(max_diff(w.as_tensor(), &before), 0.0);
}

/// `optim::Sgd` against PyTorch's SGD written with candle ops, four steps, momentum with
/// dampening and weight decay, then Nesterov; parameter 1 gets its first gradient at the
/// second step (its buffer starts then, as PyTorch's); 300 more parameters (two launches).
pub fn sgd_matches(dev: &Device) {
    use candle_core::backprop::GradStore;
    use tilekit_candle::optim::{ParamsSgd, Sgd};
    for h in [
        ParamsSgd {
            lr: 0.1,
            momentum: 0.9,
            dampening: 0.25,
            weight_decay: 0.01,
            nesterov: false,
        },
        ParamsSgd {
            lr: 0.05,
            momentum: 0.8,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: true,
        },
    ] {
        let mut shapes: Vec<Vec<usize>> = vec![vec![3, 4], vec![5], vec![]];
        shapes.extend((0..300).map(|i| vec![1 + i % 19]));
        let init: Vec<Tensor> = shapes.iter().map(|s| rand(s, DType::F32, dev)).collect();
        let vars: Vec<Var> = init
            .iter()
            .map(|t| Var::from_tensor(&t.copy().unwrap()).unwrap())
            .collect();
        let mut opt = Sgd::new(vars.clone(), h).unwrap();
        let mut p: Vec<Tensor> = init.clone();
        let mut buf: Vec<Option<Tensor>> = vec![None; init.len()];
        let f = |x: f32| f64::from(x);
        for step in 0..4 {
            let mut g = GradStore::default();
            let mut gs = Vec::new();
            for (i, v) in vars.iter().enumerate() {
                if i == 1 && step == 0 {
                    gs.push(None);
                    continue;
                }
                let gi = rand(v.dims(), DType::F32, dev);
                g.insert(v.as_tensor(), gi.clone());
                gs.push(Some(gi));
            }
            opt.step(&g).unwrap();
            // The reference: torch.optim.SGD's update with candle ops.
            for i in 0..p.len() {
                let Some(gi) = &gs[i] else { continue };
                let d = (gi + (&p[i] * f(h.weight_decay)).unwrap()).unwrap();
                let b = match &buf[i] {
                    None => d.clone(),
                    Some(b) => ((b * f(h.momentum)).unwrap()
                        + (&d * (1.0 - f(h.dampening))).unwrap())
                    .unwrap(),
                };
                let upd = if h.nesterov {
                    (&d + (&b * f(h.momentum)).unwrap()).unwrap()
                } else {
                    b.clone()
                };
                buf[i] = Some(b);
                p[i] = (&p[i] - (upd * f(h.lr)).unwrap()).unwrap();
            }
        }
        for (i, (v, want)) in vars.iter().zip(&p).enumerate() {
            let d = max_diff(v.as_tensor(), want);
            assert!(d < 1e-5, "{h:?} parameter {i}: {d}");
        }
    }
    // Refused: a bf16 parameter, a NaN learning rate (nothing changes).
    assert!(Sgd::new(
        vec![Var::zeros(2, DType::BF16, dev).unwrap()],
        ParamsSgd::default()
    )
    .is_err());
    let w = Var::from_tensor(&rand(&[4], DType::F32, dev).copy().unwrap()).unwrap();
    let before = w.as_tensor().copy().unwrap();
    let mut opt = Sgd::new(
        vec![w.clone()],
        ParamsSgd {
            lr: f32::NAN,
            ..Default::default()
        },
    )
    .unwrap();
    let mut g = GradStore::default();
    g.insert(w.as_tensor(), rand(&[4], DType::F32, dev));
    assert!(opt.step(&g).is_err());
    assert_eq!(max_diff(w.as_tensor(), &before), 0.0);
}

/// `optim::clip_grad_norm` against the norm computed with candle ops: f32 and bf16
/// gradients, clipping and not clipping; a bad `max_norm` refused with nothing written.
pub fn clip_matches(dev: &Device) {
    use candle_core::backprop::GradStore;
    use tilekit_candle::optim::clip_grad_norm;
    for dtype in [DType::F32, DType::BF16] {
        for max_norm in [1.0f32, 1e6] {
            let shapes: Vec<Vec<usize>> = (0..40).map(|i| vec![1 + (i * 7) % 23]).collect();
            let vars: Vec<Var> = shapes
                .iter()
                .map(|s| Var::zeros(s.as_slice(), dtype, dev).unwrap())
                .collect();
            let mut g = GradStore::default();
            let mut orig = Vec::new();
            for v in &vars {
                let gi = rand(v.dims(), dtype, dev);
                orig.push(gi.copy().unwrap());
                g.insert(v.as_tensor(), gi);
            }
            let norm = clip_grad_norm(&vars, &g, max_norm).unwrap();
            let want: f32 = orig
                .iter()
                .map(|t| {
                    t.to_dtype(DType::F32)
                        .unwrap()
                        .sqr()
                        .unwrap()
                        .sum_all()
                        .unwrap()
                        .to_scalar::<f32>()
                        .unwrap()
                })
                .sum::<f32>()
                .sqrt();
            let got = norm.to_scalar::<f32>().unwrap();
            assert!(
                (got - want).abs() <= 1e-4 * want,
                "{dtype:?}: norm {got} vs {want}"
            );
            let coef = (max_norm / (want + 1e-6)).min(1.0);
            for (v, o) in vars.iter().zip(&orig) {
                let scaled = (o.to_dtype(DType::F32).unwrap() * f64::from(coef)).unwrap();
                let d = max_diff(g.get(v.as_tensor()).unwrap(), &scaled);
                assert!(d <= tol(dtype) * 3.0, "{dtype:?} max_norm {max_norm}: {d}");
            }
        }
    }
    let v = Var::zeros(3, DType::F32, dev).unwrap();
    let mut g = GradStore::default();
    g.insert(v.as_tensor(), rand(&[3], DType::F32, dev));
    let before = g.get(v.as_tensor()).unwrap().copy().unwrap();
    assert!(clip_grad_norm(std::slice::from_ref(&v), &g, f32::NAN).is_err());
    assert_eq!(max_diff(g.get(v.as_tensor()).unwrap(), &before), 0.0);
}
