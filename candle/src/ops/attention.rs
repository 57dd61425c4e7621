//! Attention on candle tensors `[B, H, S, D]`: the library's
//! [`attention`](tilekit_kernels::attention) forward and its two-pass backward, as two
//! explicit calls through [`crate::Launch`] ([`attention`], [`attention_backward`]: no
//! gradient recorded), or as one differentiable op ([`scaled_dot_product_attention`]: a
//! candle `CustomOp3` whose backward is candle's autograd calling the library's backward
//! with the log-sum-exp the forward kept).

use super::custom::on_cpu;
#[cfg(feature = "cuda")]
use super::custom::on_cuda;
use crate::error::{Error, Result};
use crate::operand::{self, Operand, Src};
use crate::view::{heads_stride, View, What};
use crate::Launch;
use candle_core::op::BackpropOp;
use candle_core::{CpuStorage, CustomOp3, DType, Layout, Shape, Tensor};
use std::sync::Mutex;

const OP: &str = "tilekit-attention";

/// The four extents of a `[B, H, S, D]` operand.
fn dims4(what: &str, t: &Tensor) -> Result<(usize, usize, usize, usize)> {
    match *t.dims() {
        [b, h, s, d] => Ok((b, h, s, d)),
        _ => Err(Error::Shape {
            op: OP,
            message: format!(
                "{what} has shape {:?}; attention takes [B, H, S, D]",
                t.dims()
            ),
        }),
    }
}

/// Checked extents: `(batch, heads, kv_heads, queries, keys, head dim)`.
struct Heads {
    b: usize,
    h: usize,
    hk: usize,
    sq: usize,
    sk: usize,
    d: usize,
}

impl Heads {
    fn of(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Heads> {
        crate::dtype::float(OP, "q", q.dtype())?;
        for (what, t) in [("k", k), ("v", v)] {
            if t.dtype() != q.dtype() {
                return Err(Error::DTypeMismatch {
                    op: OP,
                    what: what.into(),
                    found: t.dtype(),
                    expected: q.dtype(),
                });
            }
        }
        let (b, h, sq, d) = dims4("q", q)?;
        let (bk, hk, sk, dk) = dims4("k", k)?;
        let shape_err = |message: String| Error::Shape { op: OP, message };
        if v.dims() != k.dims() {
            return Err(shape_err(format!(
                "v has shape {:?} and k {:?}: they must be equal",
                v.dims(),
                k.dims()
            )));
        }
        if bk != b || dk != d {
            return Err(shape_err(format!(
                "q is {:?} and k {:?}: batch and head dimension must agree",
                q.dims(),
                k.dims()
            )));
        }
        if hk == 0 || h % hk != 0 {
            return Err(shape_err(format!(
                "{h} query heads cannot share {hk} key/value heads (a whole number each)"
            )));
        }
        Ok(Heads {
            b,
            h,
            hk,
            sq,
            sk,
            d,
        })
    }

    /// `t` (`[B, heads, S, D]`) as the kernels' `[B * heads, S, D]` (a copy only where it
    /// is not contiguous).
    fn merge(t: &Tensor) -> Result<Tensor> {
        let (b, h, s, d) = t.dims4()?;
        Ok(t.contiguous()?.reshape((b * h, s, d))?)
    }
}

/// The scalar arguments every attention kernel ends with.
#[derive(Clone, Copy)]
struct Scalars {
    scale: f32,
    heads: i64,
    kv_heads: i64,
    causal: bool,
}

impl Scalars {
    fn add(self, l: Launch<'_>) -> Launch<'_> {
        l.scalar(self.scale)
            .scalar(self.heads)
            .scalar(self.kv_heads)
            .scalar(self.causal)
    }
}

/// `softmax(q k^T * scale + mask) v` and the log-sum-exp of each query row: `(o, lse)`,
/// `o` `[B, H, S_q, D]` of `q`'s type, `lse` `[B, H, S_q]` f32 (what
/// [`attention_backward`] takes). `q` is `[B, H, S_q, D]`, `k` and `v` `[B, H_kv, S_k,
/// D]` with `H` a multiple of `H_kv` (grouped-query attention), `D` 64, 128 or 256; f32,
/// f16 or bf16. `causal` masks key `j` from query `i` where `j > i + S_k - S_q` (aligned
/// at the bottom right); a query that sees no key gets `o = 0` and `lse = +inf`.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let q = Tensor::zeros((1, 2, 3, 64), candle_core::DType::F32, &Device::Cpu).unwrap();
/// let k = Tensor::zeros((1, 1, 4, 64), candle_core::DType::F32, &Device::Cpu).unwrap();
/// let v = Tensor::ones((1, 1, 4, 64), candle_core::DType::F32, &Device::Cpu).unwrap();
/// let (o, lse) = tilekit_candle::attention(&q, &k, &v, 0.125, true).unwrap();
/// assert_eq!(o.dims(), &[1, 2, 3, 64]);
/// // Query 0 sees keys 0 and 1 (the band ends 4 - 3 = 1 past it): lse = ln 2.
/// let lse = lse.to_vec3::<f32>().unwrap();
/// assert!((lse[0][0][0] - 2f32.ln()).abs() < 1e-6);
/// assert!(o.flatten_all().unwrap().to_vec1::<f32>().unwrap().iter().all(|x| (x - 1.0).abs() < 1e-6));
/// ```
pub fn attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    scale: f32,
    causal: bool,
) -> Result<(Tensor, Tensor)> {
    let s = Heads::of(q, k, v)?;
    let (q3, k3, v3) = (Heads::merge(q)?, Heads::merge(k)?, Heads::merge(v)?);
    let z = s.b * s.h;
    // SAFETY: the kernel writes every element of o ([Z, S_q, D]) and lse ([Z, S_q]).
    let outs = unsafe {
        Launch::new(&tilekit_kernels::attention::SPEC)
            .generic(q.dtype())
            .input(&q3)
            .input(&k3)
            .input(&v3)
            .output_uninit((z, s.sq, s.d), q.dtype())
            .output_uninit((z, s.sq), DType::F32)
    };
    let outs = Scalars {
        scale,
        heads: s.h as i64,
        kv_heads: s.hk as i64,
        causal,
    }
    .add(outs)
    .run()?;
    Ok((
        outs[0].reshape((s.b, s.h, s.sq, s.d))?,
        outs[1].reshape((s.b, s.h, s.sq))?,
    ))
}

/// The gradients `(dq, dk, dv)` of [`attention`] for the upstream gradient `dout` (`o`'s
/// shape and type), given the forward's `o` and `lse` and the same `scale` and `causal`:
/// the library's deterministic two-pass backward
/// ([`tilekit_kernels::attention_backward`]); `dk` and `dv` sum the query heads that share
/// each key/value head.
///
/// ```
/// use candle_core::{DType, Device, Tensor};
/// let dev = Device::Cpu;
/// let q = Tensor::zeros((1, 1, 1, 64), DType::F32, &dev).unwrap();
/// let k = Tensor::zeros((1, 1, 2, 64), DType::F32, &dev).unwrap();
/// let v = Tensor::ones((1, 1, 2, 64), DType::F32, &dev).unwrap();
/// let (o, lse) = tilekit_candle::attention(&q, &k, &v, 0.125, false).unwrap();
/// let dout = Tensor::ones((1, 1, 1, 64), DType::F32, &dev).unwrap();
/// let (dq, dk, dv) = tilekit_candle::attention_backward(&q, &k, &v, &o, &lse, &dout, 0.125, false).unwrap();
/// assert_eq!((dq.dims(), dk.dims()), (&[1, 1, 1, 64][..], &[1, 1, 2, 64][..]));
/// // Equal scores and value rows: dv = p^T dout = 0.5, dq = dk = 0.
/// assert!(dv.flatten_all().unwrap().to_vec1::<f32>().unwrap().iter().all(|x| (x - 0.5).abs() < 1e-6));
/// ```
#[allow(clippy::too_many_arguments)] // the forward's operands, its results and dout
pub fn attention_backward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &Tensor,
    lse: &Tensor,
    dout: &Tensor,
    scale: f32,
    causal: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    let s = Heads::of(q, k, v)?;
    for (what, t) in [("o", o), ("dout", dout)] {
        if t.dims() != q.dims() || t.dtype() != q.dtype() {
            return Err(Error::Shape {
                op: OP,
                message: format!(
                    "{what} is {:?} {:?}; it must be q's shape and type ({:?} {:?})",
                    t.dims(),
                    t.dtype(),
                    q.dims(),
                    q.dtype()
                ),
            });
        }
    }
    if lse.dims() != [s.b, s.h, s.sq] || lse.dtype() != DType::F32 {
        return Err(Error::Shape {
            op: OP,
            message: format!(
                "lse is {:?} {:?}; the forward's is [{}, {}, {}] f32",
                lse.dims(),
                lse.dtype(),
                s.b,
                s.h,
                s.sq
            ),
        });
    }
    let (q3, k3, v3) = (Heads::merge(q)?, Heads::merge(k)?, Heads::merge(v)?);
    let (o3, do3) = (Heads::merge(o)?, Heads::merge(dout)?);
    let lse2 = lse.contiguous()?.reshape((s.b * s.h, s.sq))?;
    let (z, zk) = (s.b * s.h, s.b * s.hk);
    let scalars = Scalars {
        scale,
        heads: s.h as i64,
        kv_heads: s.hk as i64,
        causal,
    };
    // SAFETY: attention_bwd_delta writes every element of delta.
    let delta = unsafe {
        Launch::new(&tilekit_kernels::attention_bwd_delta::SPEC)
            .generic(q.dtype())
            .input(&o3)
            .input(&do3)
            .output_uninit((z, s.sq), DType::F32)
    }
    .run()?;
    // SAFETY: attention_bwd_dq writes every element of dq.
    let first = unsafe {
        Launch::new(&tilekit_kernels::attention_bwd_dq::SPEC)
            .generic(q.dtype())
            .input(&q3)
            .input(&k3)
            .input(&v3)
            .input(&do3)
            .input(&lse2)
            .input(&delta[0])
            .output_uninit((z, s.sq, s.d), q.dtype())
    };
    let first = scalars.add(first).run()?;
    // SAFETY: attention_bwd_dkdv writes every element of dk and dv.
    let second = unsafe {
        Launch::new(&tilekit_kernels::attention_bwd_dkdv::SPEC)
            .generic(q.dtype())
            .input(&q3)
            .input(&k3)
            .input(&v3)
            .input(&do3)
            .input(&lse2)
            .input(&delta[0])
            .output_uninit((zk, s.sk, s.d), q.dtype())
            .output_uninit((zk, s.sk, s.d), q.dtype())
    };
    let second = scalars.add(second).run()?;
    Ok((
        first[0].reshape(q.dims())?,
        second[0].reshape(k.dims())?,
        second[1].reshape(k.dims())?,
    ))
}

/// `q`, `k` or `v` as the differentiable op takes it: as is where its batch and head axes
/// merge without a copy and its rows are contiguous, else a contiguous copy (recorded by
/// candle's autograd like any op).
fn mergeable(t: &Tensor) -> Result<Tensor> {
    let l = t.layout();
    let rows_contiguous = l.stride().last() == Some(&1);
    if rows_contiguous && heads_stride(l.dims(), l.stride()).is_some() {
        Ok(t.clone())
    } else {
        Ok(t.contiguous()?)
    }
}

/// The differentiable forward: `o` from candle's operands, the log-sum-exp kept for the
/// backward (candle's `bwd` sees only the operands, `o` and `dout`).
struct Sdpa {
    dims: Heads,
    scalars: Scalars,
    lse: Mutex<Option<Tensor>>,
}

impl Sdpa {
    /// Runs the forward kernel on the storages; keeps the log-sum-exp, returns `o`.
    fn run(&self, srcs: &[(Src<'_>, &Layout)]) -> Result<(operand::Dst, Shape)> {
        let Heads { b, h, sq, d, .. } = self.dims;
        let Some(&(q, _)) = srcs.first() else {
            return Err(Error::Shape {
                op: OP,
                message: "no operand".into(),
            });
        };
        let generic = crate::dtype::float(OP, What::Operand(0), q.dtype())?;
        let place = q.place();
        let z = b * h;
        let mut operands = [Operand::Scalar(0i64.into()); 9];
        for (i, (src, layout)) in srcs.iter().enumerate() {
            operands[i] = Operand::In(*src, View::heads(OP, What::Operand(i), layout)?);
        }
        operands[3] = Operand::Out(0, View::contiguous(OP, "o", &[z, sq, d])?);
        operands[4] = Operand::Out(1, View::contiguous(OP, "lse", &[z, sq])?);
        let Scalars {
            scale,
            heads,
            kv_heads,
            causal,
        } = self.scalars;
        operands[5] = Operand::Scalar(scale.into());
        operands[6] = Operand::Scalar(heads.into());
        operands[7] = Operand::Scalar(kv_heads.into());
        operands[8] = Operand::Scalar(causal.into());
        let mut outs = [
            place.alloc(q.dtype(), z * sq * d, false)?,
            place.alloc(DType::F32, z * sq, false)?,
        ];
        operand::run(
            place,
            &tilekit_kernels::attention::SPEC,
            &[generic],
            &operands,
            &mut outs,
        )?;
        let [o, lse] = outs;
        let lse = Tensor::from_storage(lse.into_storage(), (b, h, sq), BackpropOp::none(), false);
        *self.lse.lock().unwrap_or_else(|e| e.into_inner()) = Some(lse);
        Ok((o, Shape::from((b, h, sq, d))))
    }
}

impl CustomOp3 for Sdpa {
    fn name(&self) -> &'static str {
        OP
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        on_cpu([(s1, l1), (s2, l2), (s3, l3)], |s| self.run(s))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
        s3: &candle_core::CudaStorage,
        l3: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        on_cuda([(s1, l1), (s2, l2), (s3, l3)], |s| self.run(s))
    }

    fn bwd(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        o: &Tensor,
        dout: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let lse = self.lse.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let lse = lse.ok_or_else(|| Error::Shape {
            op: OP,
            message: "the backward ran before the forward kept its log-sum-exp".into(),
        })?;
        let Scalars { scale, causal, .. } = self.scalars;
        let (dq, dk, dv) = attention_backward(q, k, v, o, &lse, dout, scale, causal)?;
        Ok((Some(dq), Some(dk), Some(dv)))
    }
}

/// [`attention`]'s output `o` as a differentiable op: candle's autograd
/// (`loss.backward()`) runs the library's backward ([`attention_backward`]) with the
/// log-sum-exp this forward kept, and gives `q`, `k` and `v` their gradients. Operands and
/// refusals are [`attention`]'s; a `[B, H, S, D]` operand whose batch and head axes do not
/// merge without a copy (a transposed `[B, S, H, D]` tensor with `B > 1`) is copied first.
///
/// ```
/// use candle_core::{DType, Device, Tensor, Var};
/// let dev = Device::Cpu;
/// let q = Var::zeros((1, 1, 1, 64), DType::F32, &dev).unwrap();
/// let k = Var::zeros((1, 1, 2, 64), DType::F32, &dev).unwrap();
/// let v = Var::ones((1, 1, 2, 64), DType::F32, &dev).unwrap();
/// let o = tilekit_candle::scaled_dot_product_attention(&q, &k, &v, 0.125, false).unwrap();
/// let grads = o.sum_all().unwrap().backward().unwrap();
/// // Equal scores: each value row gets half of the upstream gradient (ones).
/// let dv = grads.get(&v).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
/// assert!(dv.iter().all(|x| (x - 0.5).abs() < 1e-6));
/// ```
pub fn scaled_dot_product_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    scale: f32,
    causal: bool,
) -> Result<Tensor> {
    let dims = Heads::of(q, k, v)?;
    let scalars = Scalars {
        scale,
        heads: dims.h as i64,
        kv_heads: dims.hk as i64,
        causal,
    };
    let (q, k, v) = (mergeable(q)?, mergeable(k)?, mergeable(v)?);
    let op = Sdpa {
        dims,
        scalars,
        lse: Mutex::new(None),
    };
    Ok(q.apply_op3(&k, &v, op)?)
}
