//! Inputs of a tuning problem as data: host vectors of any element type ([`HostVec`]),
//! tensors of any element type and rank 1 to 4 ([`DynTensor`]) and a full argument list
//! ([`ArgSet`]) built from a kernel's parameters, its `#[shapes]` and a seed.

use super::problem::TuneProblem;
use super::TuneError;
use half::{bf16, f16};
use rayon::prelude::*;
use tilekit_ir::{DType, Kernel, ParamKind};
use tilekit_runtime::{Arg, Element, Runtime, ScalarValue, Tensor};

pub use super::rng::SplitMix;

/// Elements per independently seeded chunk of random data (see [`HostVec::random`]).
pub const CHUNK: usize = 1 << 16;

/// A host vector of one of the element types a tensor may hold.
#[derive(Clone, Debug, PartialEq)]
pub enum HostVec {
    /// f32
    F32(Vec<f32>),
    /// f16
    F16(Vec<f16>),
    /// bf16
    BF16(Vec<bf16>),
    /// i32
    I32(Vec<i32>),
    /// i64
    I64(Vec<i64>),
}

macro_rules! on_host {
    ($v:expr, $x:ident => $body:expr) => {
        match $v {
            HostVec::F32($x) => $body,
            HostVec::F16($x) => $body,
            HostVec::BF16($x) => $body,
            HostVec::I32($x) => $body,
            HostVec::I64($x) => $body,
        }
    };
}

impl HostVec {
    /// Uniform random values in `[lo, hi)` from `rng`.
    ///
    /// Generated in parallel in chunks of [`CHUNK`] elements, chunk `i` from a generator
    /// seeded by `rng`'s next value and `i`: the same seed gives the same data on any
    /// number of threads.
    pub fn random(
        dtype: DType,
        n: usize,
        lo: f64,
        hi: f64,
        rng: &mut SplitMix,
    ) -> Result<HostVec, TuneError> {
        let base = rng.next_u64();
        let seed_of = move |chunk: usize| base ^ (chunk as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
        fn par_fill<T: Element + Send>(
            n: usize,
            lo: f64,
            hi: f64,
            seed_of: impl Fn(usize) -> u64 + Sync,
        ) -> Vec<T> {
            let mut out: Vec<T> = Vec::with_capacity(n);
            out.resize_with(n, || T::from_f64(0.0));
            out.par_chunks_mut(CHUNK)
                .enumerate()
                .for_each(|(c, chunk)| {
                    let mut r = SplitMix::new(seed_of(c));
                    for v in chunk {
                        *v = T::from_f64(lo + (hi - lo) * r.unit());
                    }
                });
            out
        }
        Ok(match dtype {
            DType::F32 => HostVec::F32(par_fill(n, lo, hi, seed_of)),
            DType::F16 => HostVec::F16(par_fill(n, lo, hi, seed_of)),
            DType::BF16 => HostVec::BF16(par_fill(n, lo, hi, seed_of)),
            DType::I32 => HostVec::I32(par_fill(n, lo, hi, seed_of)),
            DType::I64 => HostVec::I64(par_fill(n, lo, hi, seed_of)),
            other => {
                return Err(TuneError::Problem(format!(
                    "tensors of {other} are not supported"
                )))
            }
        })
    }

    /// Uniform random integers in `[lo, hi)` from `rng` (an integer tensor's declared value
    /// range, `#[shapes(ids: 0..V)]`), generated in chunks as [`HostVec::random`] does.
    pub fn random_ints(
        dtype: DType,
        n: usize,
        lo: i64,
        hi: i64,
        rng: &mut SplitMix,
    ) -> Result<HostVec, TuneError> {
        let span = hi
            .checked_sub(lo)
            .filter(|s| *s > 0)
            .ok_or_else(|| TuneError::Problem(format!("the value range {lo}..{hi} is empty")))?
            as u64;
        let base = rng.next_u64();
        fn fill<T: Element + Send>(n: usize, lo: i64, span: u64, base: u64) -> Vec<T> {
            let mut out: Vec<T> = vec![T::from_f64(0.0); n];
            out.par_chunks_mut(CHUNK)
                .enumerate()
                .for_each(|(c, chunk)| {
                    let mut r =
                        SplitMix::new(base ^ (c as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
                    for v in chunk {
                        // `span` is at most 2^63: the remainder's bias is negligible here.
                        let x = lo.wrapping_add((r.next_u64() % span) as i64);
                        *v = T::from_f64(x as f64);
                    }
                });
            out
        }
        Ok(match dtype {
            DType::I32 => {
                if i32::try_from(lo).is_err() || i32::try_from(hi - 1).is_err() {
                    return Err(TuneError::Problem(format!(
                        "the value range {lo}..{hi} does not fit in i32"
                    )));
                }
                HostVec::I32(fill(n, lo, span, base))
            }
            DType::I64 => HostVec::I64(fill(n, lo, span, base)),
            other => {
                return Err(TuneError::Problem(format!(
                    "a value range needs an integer tensor, not {other}"
                )))
            }
        })
    }

    /// `0, step, 2 step, ..` (`InputGen::Steps`: equal sequences' cumulative lengths).
    pub fn steps(dtype: DType, n: usize, step: i64) -> Result<HostVec, TuneError> {
        let last = step.checked_mul(n.saturating_sub(1) as i64);
        Ok(match dtype {
            DType::I32 if last.and_then(|l| i32::try_from(l).ok()).is_some() => {
                HostVec::I32((0..n).map(|i| i as i32 * step as i32).collect())
            }
            DType::I64 if last.is_some() => HostVec::I64((0..n).map(|i| i as i64 * step).collect()),
            DType::I32 | DType::I64 => {
                return Err(TuneError::Problem(format!(
                    "{n} steps of {step} do not fit in {dtype}"
                )))
            }
            other => {
                return Err(TuneError::Problem(format!(
                    "steps need an integer tensor, not {other}"
                )))
            }
        })
    }

    /// `n` copies of `value` (rounded to the type).
    pub fn filled(dtype: DType, n: usize, value: f64) -> Result<HostVec, TuneError> {
        fn f<T: Element>(n: usize, v: f64) -> Vec<T> {
            vec![T::from_f64(v); n]
        }
        Ok(match dtype {
            DType::F32 => HostVec::F32(f(n, value)),
            DType::F16 => HostVec::F16(f(n, value)),
            DType::BF16 => HostVec::BF16(f(n, value)),
            DType::I32 => HostVec::I32(f(n, value)),
            DType::I64 => HostVec::I64(f(n, value)),
            other => {
                return Err(TuneError::Problem(format!(
                    "tensors of {other} are not supported"
                )))
            }
        })
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            HostVec::F32(_) => DType::F32,
            HostVec::F16(_) => DType::F16,
            HostVec::BF16(_) => DType::BF16,
            HostVec::I32(_) => DType::I32,
            HostVec::I64(_) => DType::I64,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        on_host!(self, v => v.len())
    }

    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every element as f64.
    pub fn to_f64(&self) -> Vec<f64> {
        on_host!(self, v => v.par_iter().map(|x| x.to_f64()).collect())
    }
}

/// A tensor of any supported element type and rank 1 to 4.
#[derive(Debug)]
pub enum DynTensor {
    /// f32 tensors.
    F32(Ranked<f32>),
    /// f16 tensors.
    F16(Ranked<f16>),
    /// bf16 tensors.
    BF16(Ranked<bf16>),
    /// i32 tensors.
    I32(Ranked<i32>),
    /// i64 tensors.
    I64(Ranked<i64>),
}

/// A tensor of element type `T` and rank 1 to 4.
#[derive(Debug)]
pub enum Ranked<T: Element> {
    /// Rank 1.
    R1(Tensor<T, 1>),
    /// Rank 2.
    R2(Tensor<T, 2>),
    /// Rank 3.
    R3(Tensor<T, 3>),
    /// Rank 4.
    R4(Tensor<T, 4>),
}

fn ranked<T: Element>(rt: &Runtime, data: Vec<T>, shape: &[usize]) -> Result<Ranked<T>, TuneError> {
    let e = |e: tilekit_runtime::TensorError| TuneError::Runtime(e.to_string());
    Ok(match *shape {
        [a] => Ranked::R1(Tensor::from_vec(rt, data, [a]).map_err(e)?),
        [a, b] => Ranked::R2(Tensor::from_vec(rt, data, [a, b]).map_err(e)?),
        [a, b, c] => Ranked::R3(Tensor::from_vec(rt, data, [a, b, c]).map_err(e)?),
        [a, b, c, d] => Ranked::R4(Tensor::from_vec(rt, data, [a, b, c, d]).map_err(e)?),
        _ => {
            return Err(TuneError::Problem(format!(
                "tensors of rank {} are not supported",
                shape.len()
            )))
        }
    })
}

impl<T: Element> Ranked<T> {
    fn arg(&self) -> Arg<'_> {
        match self {
            Ranked::R1(t) => Arg::from(t),
            Ranked::R2(t) => Arg::from(t),
            Ranked::R3(t) => Arg::from(t),
            Ranked::R4(t) => Arg::from(t),
        }
    }

    fn arg_mut(&mut self) -> Arg<'_> {
        match self {
            Ranked::R1(t) => Arg::from(t),
            Ranked::R2(t) => Arg::from(t),
            Ranked::R3(t) => Arg::from(t),
            Ranked::R4(t) => Arg::from(t),
        }
    }

    /// Copies `src` into this tensor in place (same rank and shape), on the device.
    fn copy_from(&mut self, src: &Ranked<T>) -> Result<(), TuneError> {
        let r = match (self, src) {
            (Ranked::R1(d), Ranked::R1(s)) => d.copy_from(s),
            (Ranked::R2(d), Ranked::R2(s)) => d.copy_from(s),
            (Ranked::R3(d), Ranked::R3(s)) => d.copy_from(s),
            (Ranked::R4(d), Ranked::R4(s)) => d.copy_from(s),
            _ => {
                return Err(TuneError::Problem(
                    "a copy between tensors of two ranks".into(),
                ))
            }
        };
        r.map_err(|e| TuneError::Runtime(e.to_string()))
    }

    fn to_vec(&self) -> Result<Vec<T>, TuneError> {
        let r = match self {
            Ranked::R1(t) => t.to_vec(),
            Ranked::R2(t) => t.to_vec(),
            Ranked::R3(t) => t.to_vec(),
            Ranked::R4(t) => t.to_vec(),
        };
        r.map_err(|e| TuneError::Runtime(e.to_string()))
    }
}

macro_rules! on_tensor {
    ($v:expr, $x:ident => $body:expr) => {
        match $v {
            DynTensor::F32($x) => $body,
            DynTensor::F16($x) => $body,
            DynTensor::BF16($x) => $body,
            DynTensor::I32($x) => $body,
            DynTensor::I64($x) => $body,
        }
    };
}

impl DynTensor {
    /// Copies `src` into this tensor in place (same element type, rank and shape): on a
    /// device a device-to-device copy, no host round trip.
    pub fn copy_from(&mut self, src: &DynTensor) -> Result<(), TuneError> {
        match (self, src) {
            (DynTensor::F32(d), DynTensor::F32(s)) => d.copy_from(s),
            (DynTensor::F16(d), DynTensor::F16(s)) => d.copy_from(s),
            (DynTensor::BF16(d), DynTensor::BF16(s)) => d.copy_from(s),
            (DynTensor::I32(d), DynTensor::I32(s)) => d.copy_from(s),
            (DynTensor::I64(d), DynTensor::I64(s)) => d.copy_from(s),
            _ => Err(TuneError::Problem(
                "a copy between tensors of two element types".into(),
            )),
        }
    }

    /// A tensor on `rt` holding `data` in the given shape (row-major).
    pub fn upload(rt: &Runtime, data: HostVec, shape: &[usize]) -> Result<DynTensor, TuneError> {
        Ok(match data {
            HostVec::F32(v) => DynTensor::F32(ranked(rt, v, shape)?),
            HostVec::F16(v) => DynTensor::F16(ranked(rt, v, shape)?),
            HostVec::BF16(v) => DynTensor::BF16(ranked(rt, v, shape)?),
            HostVec::I32(v) => DynTensor::I32(ranked(rt, v, shape)?),
            HostVec::I64(v) => DynTensor::I64(ranked(rt, v, shape)?),
        })
    }

    /// The tensor as a read-only argument.
    pub fn arg(&self) -> Arg<'_> {
        on_tensor!(self, t => t.arg())
    }

    /// The tensor as a writable argument.
    pub fn arg_mut(&mut self) -> Arg<'_> {
        on_tensor!(self, t => t.arg_mut())
    }

    /// Downloads every element as f64.
    pub fn to_f64(&self) -> Result<Vec<f64>, TuneError> {
        on_tensor!(self, t => Ok(t.to_vec()?.into_par_iter().map(Element::to_f64).collect()))
    }
}

/// One argument of a launch, owned.
#[derive(Debug)]
pub enum OwnedArg {
    /// A tensor the kernel reads.
    Tensor(DynTensor),
    /// A tensor the kernel may write.
    TensorMut(DynTensor),
    /// A scalar.
    Scalar(ScalarValue),
}

/// A full argument list for a kernel, with the host data it was made from.
#[derive(Debug)]
pub struct ArgSet {
    /// In the kernel's parameter order.
    pub args: Vec<OwnedArg>,
    /// The host data of every tensor (`None` for scalars), as uploaded.
    pub host: Vec<Option<HostVec>>,
    /// Shapes of tensors (`None` for scalars).
    pub shapes: Vec<Option<Vec<usize>>>,
    /// Which parameters the kernel both reads and writes (in place: AdamW's `p`, `m`, `v`).
    in_place: Vec<bool>,
    /// Copies of the in-place tensors' initial data on the same backend, made at the first
    /// [`ArgSet::reset_outputs`]: later resets copy from them on the device instead of
    /// uploading the host data again (an in-place kernel is reset before every timed
    /// launch: AdamW's 3 x 256 MiB from the host made its tune take ~2 minutes, run 124).
    /// Cleared by [`ArgSet::restore_all`] (a stray write may have reached them).
    pristine: Vec<Option<DynTensor>>,
}

/// The value written into outputs before a candidate runs, so an element the candidate
/// fails to write is caught: NaN for floats, a sentinel for integers.
pub const POISON: f64 = f64::NAN;

/// The poison of an element type: NaN for floats, [`INT_POISON`] for integers.
pub fn poison_for(dtype: DType) -> f64 {
    if dtype.is_float() {
        POISON
    } else {
        INT_POISON
    }
}

/// The value written into integer outputs before a candidate runs (integers have no NaN).
pub const INT_POISON: f64 = -123_456_789.0;

impl ArgSet {
    /// Host data for every parameter of `kernel` under `problem`: tensors the kernel only
    /// reads get uniform values in `[-1, 1)` (integers in `[0, 16)`), or the kernel's
    /// declared range (`#[shapes(ids: 0..V)]`, evaluated with the problem's dimensions,
    /// derived ones included); tensors it
    /// only writes get the poison value; tensors it reads and writes get random values.
    pub fn host_data(
        kernel: &Kernel,
        problem: &TuneProblem,
        seed: u64,
    ) -> Result<Vec<Option<HostVec>>, TuneError> {
        let read = read_params(kernel);
        let mut rng = SplitMix::new(seed);
        let mut out = Vec::with_capacity(kernel.params.len());
        for (i, p) in kernel.params.iter().enumerate() {
            let ParamKind::Tensor { elem, mutable, .. } = &p.kind else {
                out.push(None);
                continue;
            };
            let dtype = elem.resolve(&problem.bindings).ok_or_else(|| {
                TuneError::Problem(format!("element type of `{}` is not bound", p.name))
            })?;
            let n: usize = problem.tensor_shape(kernel, i)?.iter().product();
            let gen = kernel.problem.inputs.get(i).cloned().unwrap_or_default();
            let range = tilekit_ir::cost::value_range(&gen, &problem.dims)
                .map_err(|e| TuneError::Problem(format!("`{}`: {e}", p.name)))?;
            if let Some((lo, hi)) = range.filter(|_| !*mutable || read[i]) {
                out.push(Some(HostVec::random_ints(dtype, n, lo, hi, &mut rng)?));
                continue;
            }
            let step = tilekit_ir::cost::value_step(&gen, &problem.dims)
                .map_err(|e| TuneError::Problem(format!("`{}`: {e}", p.name)))?;
            if let Some(step) = step.filter(|_| !*mutable || read[i]) {
                out.push(Some(HostVec::steps(dtype, n, step)?));
                continue;
            }
            let (lo, hi) = match kernel.problem.inputs.get(i) {
                Some(tilekit_ir::InputGen::Uniform(lo, hi)) => (*lo, *hi),
                Some(tilekit_ir::InputGen::Value(v)) => (*v, *v),
                _ if dtype.is_float() => (-1.0, 1.0),
                _ => (0.0, 16.0),
            };
            let v = if *mutable && !read[i] {
                HostVec::filled(dtype, n, poison_for(dtype))?
            } else {
                HostVec::random(dtype, n, lo, hi, &mut rng)?
            };
            out.push(Some(v));
        }
        Ok(out)
    }

    /// Uploads host data (from [`ArgSet::host_data`]) to `rt` with scalars from `problem`.
    pub fn upload(
        rt: &Runtime,
        kernel: &Kernel,
        problem: &TuneProblem,
        host: &[Option<HostVec>],
    ) -> Result<ArgSet, TuneError> {
        let mut args = Vec::with_capacity(kernel.params.len());
        let mut shapes = Vec::with_capacity(kernel.params.len());
        for (i, p) in kernel.params.iter().enumerate() {
            match (&p.kind, host.get(i).and_then(Option::as_ref)) {
                (ParamKind::Tensor { mutable, .. }, Some(data)) => {
                    let shape = problem.tensor_shape(kernel, i)?;
                    let t = DynTensor::upload(rt, data.clone(), &shape)?;
                    args.push(if *mutable {
                        OwnedArg::TensorMut(t)
                    } else {
                        OwnedArg::Tensor(t)
                    });
                    shapes.push(Some(shape));
                }
                (ParamKind::Scalar { dtype }, _) => {
                    args.push(OwnedArg::Scalar(scalar(
                        *dtype,
                        problem.scalar_value(kernel, i),
                    )?));
                    shapes.push(None);
                }
                _ => {
                    return Err(TuneError::Problem(format!(
                        "no data for parameter `{}`",
                        p.name
                    )))
                }
            }
        }
        let read_written = kernel.read_written_params();
        Ok(ArgSet {
            in_place: (0..args.len()).map(|i| read_written.contains(&i)).collect(),
            pristine: (0..args.len()).map(|_| None).collect(),
            args,
            host: host.to_vec(),
            shapes,
        })
    }

    /// The arguments to pass to a launch.
    pub fn launch_args(&mut self) -> Vec<Arg<'_>> {
        self.args
            .iter_mut()
            .map(|a| match a {
                OwnedArg::Tensor(t) => t.arg(),
                OwnedArg::TensorMut(t) => t.arg_mut(),
                OwnedArg::Scalar(s) => Arg::Scalar(*s),
            })
            .collect()
    }

    /// Restores every writable tensor to its host data (poison for pure outputs, uploaded);
    /// an in-place tensor from a copy on the same backend kept since its first reset, so
    /// resetting it moves no data over the host link.
    pub fn reset_outputs(&mut self, rt: &Runtime) -> Result<(), TuneError> {
        for (i, a) in self.args.iter_mut().enumerate() {
            if let OwnedArg::TensorMut(t) = a {
                let (Some(data), Some(shape)) = (&self.host[i], &self.shapes[i]) else {
                    continue;
                };
                if !self.in_place[i] {
                    *t = DynTensor::upload(rt, data.clone(), shape)?;
                    continue;
                }
                if self.pristine[i].is_none() {
                    self.pristine[i] = Some(DynTensor::upload(rt, data.clone(), shape)?);
                }
                if let Some(p) = &self.pristine[i] {
                    t.copy_from(p)?;
                }
            }
        }
        Ok(())
    }

    /// Uploads every tensor again from its host data (inputs included): after a candidate
    /// that may have written where it should not.
    pub fn restore_all(&mut self, rt: &Runtime) -> Result<(), TuneError> {
        // The kept copies lie in the same device memory a stray write may have reached.
        self.pristine.iter_mut().for_each(|p| *p = None);
        for (i, a) in self.args.iter_mut().enumerate() {
            if let OwnedArg::Tensor(t) | OwnedArg::TensorMut(t) = a {
                let (Some(data), Some(shape)) = (&self.host[i], &self.shapes[i]) else {
                    continue;
                };
                *t = DynTensor::upload(rt, data.clone(), shape)?;
            }
        }
        Ok(())
    }

    /// Indices of writable tensor parameters.
    pub fn outputs(&self) -> Vec<usize> {
        (0..self.args.len())
            .filter(|&i| matches!(self.args[i], OwnedArg::TensorMut(_)))
            .collect()
    }

    /// Downloads tensor `i` as f64.
    pub fn read(&self, i: usize) -> Result<Vec<f64>, TuneError> {
        match &self.args[i] {
            OwnedArg::Tensor(t) | OwnedArg::TensorMut(t) => t.to_f64(),
            OwnedArg::Scalar(_) => Err(TuneError::Problem(format!("parameter {i} is a scalar"))),
        }
    }
}

/// Per parameter: whether the kernel reads it (every `&` tensor; `&mut` tensors the body
/// loads from).
fn read_params(kernel: &Kernel) -> Vec<bool> {
    let rw = kernel.read_written_params();
    kernel
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| match p.kind {
            ParamKind::Tensor { mutable, .. } => !mutable || rw.contains(&i),
            _ => false,
        })
        .collect()
}

fn scalar(dtype: DType, v: f64) -> Result<ScalarValue, TuneError> {
    Ok(match dtype {
        DType::F32 => ScalarValue::F32(v as f32),
        DType::I32 => ScalarValue::I32(v as i32),
        DType::I64 => ScalarValue::I64(v as i64),
        DType::Bool => ScalarValue::Bool(v != 0.0),
        other => {
            return Err(TuneError::Problem(format!(
                "scalars of {other} are not supported"
            )))
        }
    })
}
