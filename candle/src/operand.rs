//! The one launch path at the storage level, shared by the candle ops (which candle hands
//! storages and layouts) and [`crate::Launch`] (which locks its tensors' storages):
//! operands in the kernel's parameter order, inputs borrowed from candle storages, outputs
//! allocated here, then `tilekit_runtime::launch` on the device's runtime with the tuned
//! configurations, with every check a tilekit tensor gets.
//!
//! On a CUDA device the arguments are candle's device addresses, taken through cudarc's
//! `DevicePtr`/`DevicePtrMut` on candle's stream (so, with event tracking in a context of
//! several streams, the launch waits for pending writes and records its reads and writes
//! as candle's own kernels do); on the CPU, candle's host vectors run on tilekit's CPU
//! backend.

use crate::error::{Error, Result};
use crate::view::View;
use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, DType, DeviceLocation};
use tilekit_runtime::ir::DType as TkDType;
use tilekit_runtime::{Arg, KernelSpec, ScalarValue, TensorArg, TensorArgMut};

/// An input's storage.
#[derive(Clone, Copy)]
pub(crate) enum Src<'a> {
    /// Host elements.
    Cpu(&'a CpuStorage),
    /// Device elements.
    #[cfg(feature = "cuda")]
    Cuda(&'a candle_core::CudaStorage),
}

/// An output's storage, allocated for the launch.
pub(crate) enum Dst {
    /// Host elements.
    Cpu(CpuStorage),
    /// Device elements.
    #[cfg(feature = "cuda")]
    Cuda(candle_core::CudaStorage),
}

/// Where a launch runs.
#[derive(Clone, Copy)]
pub(crate) enum Place<'a> {
    /// tilekit's CPU backend.
    Cpu,
    /// The candle CUDA device's stream.
    #[cfg(feature = "cuda")]
    Cuda(&'a candle_core::CudaDevice),
    #[cfg(not(feature = "cuda"))]
    #[allow(dead_code)]
    Never(std::marker::PhantomData<&'a ()>),
}

/// One kernel parameter.
#[derive(Clone, Copy)]
pub(crate) enum Operand<'a> {
    /// A `&TensorN<T>` parameter.
    In(Src<'a>, View),
    /// A `&mut TensorN<T>` parameter: the launch's output `.0` (an index into its outputs).
    Out(usize, View),
    /// A scalar parameter.
    Scalar(ScalarValue),
}

impl<'a> Src<'a> {
    /// The storage of a candle CPU or CUDA tensor.
    pub fn of(op: &'static str, s: &'a candle_core::Storage) -> Result<Src<'a>> {
        match s {
            candle_core::Storage::Cpu(c) => Ok(Src::Cpu(c)),
            #[cfg(feature = "cuda")]
            candle_core::Storage::Cuda(c) => Ok(Src::Cuda(c)),
            other => Err(Error::UnsupportedDevice {
                op,
                device: other.device().location(),
            }),
        }
    }

    /// Its candle element type.
    pub fn dtype(&self) -> DType {
        match self {
            Src::Cpu(c) => c.dtype(),
            #[cfg(feature = "cuda")]
            Src::Cuda(c) => c.dtype(),
        }
    }

    /// Where its elements live.
    pub fn place(&self) -> Place<'a> {
        match self {
            Src::Cpu(_) => Place::Cpu,
            #[cfg(feature = "cuda")]
            Src::Cuda(c) => Place::Cuda(&c.device),
        }
    }
}

impl Place<'_> {
    /// As candle names it.
    pub fn location(&self) -> DeviceLocation {
        match self {
            Place::Cpu => DeviceLocation::Cpu,
            #[cfg(feature = "cuda")]
            Place::Cuda(d) => {
                use candle_core::backend::BackendDevice;
                d.location()
            }
            #[cfg(not(feature = "cuda"))]
            Place::Never(_) => DeviceLocation::Cpu,
        }
    }

    /// Whether `other` is the same device (for CUDA: the same candle device, so the same
    /// stream).
    pub fn same(&self, other: &Place<'_>) -> bool {
        match (self, other) {
            (Place::Cpu, Place::Cpu) => true,
            #[cfg(feature = "cuda")]
            (Place::Cuda(a), Place::Cuda(b)) => a.id() == b.id(),
            _ => false,
        }
    }

    /// A new output of `len` elements of `dtype` on this device; zeroed when `zeroed`,
    /// else uninitialised on CUDA (only for kernels that write every element).
    pub fn alloc(&self, dtype: DType, len: usize, zeroed: bool) -> Result<Dst> {
        match self {
            Place::Cpu => {
                let _ = zeroed;
                Ok(Dst::Cpu(match dtype {
                    DType::F32 => CpuStorage::F32(vec![0.0; len]),
                    DType::F16 => CpuStorage::F16(vec![half::f16::ZERO; len]),
                    DType::BF16 => CpuStorage::BF16(vec![half::bf16::ZERO; len]),
                    DType::I32 => CpuStorage::I32(vec![0; len]),
                    DType::I64 => CpuStorage::I64(vec![0; len]),
                    other => {
                        return Err(Error::UnsupportedDType {
                            op: "output",
                            what: "an output".into(),
                            dtype: other,
                            supported: crate::dtype::ELEMENTS,
                        })
                    }
                }))
            }
            #[cfg(feature = "cuda")]
            Place::Cuda(d) => cuda::alloc(d, dtype, len, zeroed).map(Dst::Cuda),
            #[cfg(not(feature = "cuda"))]
            Place::Never(_) => unreachable!("no such place"),
        }
    }
}

impl Dst {
    /// The host elements of a CPU output.
    fn cpu_mut(&mut self) -> Option<&mut CpuStorage> {
        match self {
            Dst::Cpu(s) => Some(s),
            #[cfg(feature = "cuda")]
            Dst::Cuda(_) => None,
        }
    }

    /// As a candle storage.
    pub fn into_storage(self) -> candle_core::Storage {
        match self {
            Dst::Cpu(c) => candle_core::Storage::Cpu(c),
            #[cfg(feature = "cuda")]
            Dst::Cuda(c) => candle_core::Storage::Cuda(c),
        }
    }
}

/// Runs `spec` with `generics` (one element type per generic parameter, in declaration
/// order) on `operands`, writing `outputs`, on `place`'s runtime.
pub(crate) fn run(
    place: Place<'_>,
    spec: &KernelSpec,
    generics: &[TkDType],
    operands: &[Operand<'_>],
    outputs: &mut [Dst],
) -> Result<()> {
    match place {
        Place::Cpu => run_cpu(spec, generics, operands, outputs),
        #[cfg(feature = "cuda")]
        Place::Cuda(dev) => crate::runtimes::with_cuda(dev, |rt| {
            cuda::run(rt, dev, spec, generics, operands, outputs)
        })?,
        #[cfg(not(feature = "cuda"))]
        Place::Never(_) => unreachable!("no such place"),
    }
}

/// Output `i`'s view: where the operands pass it.
fn out_views(operands: &[Operand<'_>], n: usize) -> Vec<Option<View>> {
    let mut views = vec![None; n];
    for o in operands {
        if let Operand::Out(i, v) = o {
            if let Some(slot) = views.get_mut(*i) {
                *slot = Some(*v);
            }
        }
    }
    views
}

fn missing_output(spec: &KernelSpec, i: usize) -> Error {
    Error::Shape {
        op: "launch",
        message: format!(
            "{}: output {i} is passed to no parameter, or to two",
            spec.name
        ),
    }
}

/// `$ctor` (`TensorArg::host` or `TensorArgMut::host`) over a CPU storage's elements with
/// a view, or the launch's `UnsupportedDType` for an element type tilekit does not take.
macro_rules! host_arg {
    ($ctor:path, $storage:expr, $view:expr, $op:expr) => {
        match $storage {
            CpuStorage::F32(d) => $ctor(d, $view.shape(), $view.strides(), $view.offset)?,
            CpuStorage::F16(d) => $ctor(d, $view.shape(), $view.strides(), $view.offset)?,
            CpuStorage::BF16(d) => $ctor(d, $view.shape(), $view.strides(), $view.offset)?,
            CpuStorage::I32(d) => $ctor(d, $view.shape(), $view.strides(), $view.offset)?,
            CpuStorage::I64(d) => $ctor(d, $view.shape(), $view.strides(), $view.offset)?,
            other => {
                return Err(Error::UnsupportedDType {
                    op: $op,
                    what: "an operand".into(),
                    dtype: other.dtype(),
                    supported: crate::dtype::ELEMENTS,
                })
            }
        }
    };
}

pub(crate) use host_arg;

fn run_cpu(
    spec: &KernelSpec,
    generics: &[TkDType],
    operands: &[Operand<'_>],
    outputs: &mut [Dst],
) -> Result<()> {
    let views = out_views(operands, outputs.len());
    let mut outs: Vec<Option<Arg<'_>>> = Vec::with_capacity(outputs.len());
    for (i, (d, v)) in outputs.iter_mut().zip(views).enumerate() {
        let v = v.ok_or_else(|| missing_output(spec, i))?;
        let s = d.cpu_mut().ok_or_else(|| missing_output(spec, i))?;
        outs.push(Some(Arg::TensorMut(host_arg!(
            TensorArgMut::host,
            s,
            v,
            spec.name
        ))));
    }
    let mut args = Vec::with_capacity(operands.len());
    for o in operands {
        args.push(match o {
            Operand::In(Src::Cpu(s), v) => {
                Arg::Tensor(host_arg!(TensorArg::host, *s, v, spec.name))
            }
            #[cfg(feature = "cuda")]
            Operand::In(Src::Cuda(s), _) => {
                use candle_core::backend::BackendDevice;
                return Err(Error::DeviceMismatch {
                    op: spec.name,
                    what: "an input".into(),
                    expected: DeviceLocation::Cpu,
                    found: s.device().location(),
                });
            }
            Operand::Out(i, _) => outs
                .get_mut(*i)
                .and_then(Option::take)
                .ok_or_else(|| missing_output(spec, *i))?,
            Operand::Scalar(s) => Arg::Scalar(*s),
        });
    }
    tilekit_runtime::launch(crate::runtimes::cpu(), spec, generics, &mut args)?;
    Ok(())
}

#[cfg(feature = "cuda")]
pub(crate) mod cuda {
    use super::{missing_output, Dst, Operand, Src};
    use crate::error::{Error, Result};
    use crate::view::View;
    use candle_core::backend::{BackendDevice, BackendStorage};
    use candle_core::cuda::CudaStorageSlice as S;
    use candle_core::{CudaDevice, CudaStorage, DType, DeviceLocation};
    use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};
    use std::sync::Arc;
    use tilekit_runtime::ir::DType as TkDType;
    use tilekit_runtime::{Arg, KernelSpec, Runtime, ScalarValue, TensorArg, TensorArgMut};

    /// A new device allocation of `len` elements (one at least: every argument needs an
    /// address).
    pub(super) fn alloc(
        dev: &CudaDevice,
        dtype: DType,
        len: usize,
        zeroed: bool,
    ) -> Result<CudaStorage> {
        macro_rules! alloc {
            ($t:ty, $v:ident) => {{
                let n = len.max(1);
                let s = if zeroed {
                    dev.alloc_zeros::<$t>(n)?
                } else {
                    // SAFETY: the caller launches a kernel that writes every element
                    // before anything reads the output (the library kernels' outputs).
                    unsafe { dev.alloc::<$t>(n) }?
                };
                S::$v(s)
            }};
        }
        let slice = match dtype {
            DType::F32 => alloc!(f32, F32),
            DType::F16 => alloc!(half::f16, F16),
            DType::BF16 => alloc!(half::bf16, BF16),
            DType::I32 => alloc!(i32, I32),
            DType::I64 => alloc!(i64, I64),
            other => {
                return Err(Error::UnsupportedDType {
                    op: "output",
                    what: "an output".into(),
                    dtype: other,
                    supported: crate::dtype::ELEMENTS,
                })
            }
        };
        Ok(CudaStorage {
            slice,
            device: dev.clone(),
        })
    }

    fn wrong_device(op: &'static str, dev: &CudaDevice, found: DeviceLocation) -> Error {
        Error::DeviceMismatch {
            op,
            what: "an operand".into(),
            expected: dev.location(),
            found,
        }
    }

    /// A writable argument over a CUDA storage's elements viewed by `v`, and the cudarc
    /// guard that records the kernel's write on `stream` when dropped (after the launch
    /// was issued).
    ///
    /// # Safety
    ///
    /// Nothing else may read or write the storage until the launch was issued (the
    /// caller holds it mutably: an output it owns, or a candle storage's write lock), and
    /// the launch runs on `stream`.
    pub(crate) unsafe fn device_out<'s>(
        op: &'static str,
        stream: &'s Arc<CudaStream>,
        ordinal: usize,
        s: &'s mut CudaStorage,
        v: &View,
    ) -> Result<(TensorArgMut<'static>, SyncOnDrop<'s>)> {
        let dtype = s.dtype();
        macro_rules! out {
            ($slice:expr, $dt:expr) => {{
                let len = $slice.len();
                let (ptr, g) = $slice.device_ptr_mut(stream);
                // SAFETY: `ptr` addresses `len` live elements of this device that nothing
                // else touches until the launch was issued on `stream` (the contract).
                let a = unsafe {
                    TensorArgMut::device($dt, ordinal, ptr, len, v.shape(), v.strides(), v.offset)
                }?;
                (a, g)
            }};
        }
        Ok(match &mut s.slice {
            S::F32(x) => out!(x, TkDType::F32),
            S::F16(x) => out!(x, TkDType::F16),
            S::BF16(x) => out!(x, TkDType::BF16),
            S::I32(x) => out!(x, TkDType::I32),
            S::I64(x) => out!(x, TkDType::I64),
            _ => return Err(unsupported(op, "an output", dtype)),
        })
    }

    /// A read-only argument over a CUDA storage's elements viewed by `v`, and the cudarc
    /// guard that records the kernel's read on `stream` when dropped.
    ///
    /// # Safety
    ///
    /// The storage stays borrowed (its candle lock held) until the launch was issued on
    /// `stream`; candle frees device memory in stream order, after the kernel.
    pub(crate) unsafe fn device_in<'s>(
        op: &'static str,
        stream: &'s Arc<CudaStream>,
        ordinal: usize,
        s: &'s CudaStorage,
        v: &View,
    ) -> Result<(TensorArg<'static>, SyncOnDrop<'s>)> {
        macro_rules! inp {
            ($slice:expr, $dt:expr) => {{
                let len = $slice.len();
                let (ptr, g) = $slice.device_ptr(stream);
                // SAFETY: `ptr` addresses `len` live elements of this device, borrowed
                // until the launch was issued (the contract).
                let a = unsafe {
                    TensorArg::device($dt, ordinal, ptr, len, v.shape(), v.strides(), v.offset)
                }?;
                (a, g)
            }};
        }
        Ok(match &s.slice {
            S::F32(x) => inp!(x, TkDType::F32),
            S::F16(x) => inp!(x, TkDType::F16),
            S::BF16(x) => inp!(x, TkDType::BF16),
            S::I32(x) => inp!(x, TkDType::I32),
            S::I64(x) => inp!(x, TkDType::I64),
            _ => return Err(unsupported(op, "an input", s.dtype())),
        })
    }

    fn unsupported(op: &'static str, what: &str, dtype: DType) -> Error {
        Error::UnsupportedDType {
            op,
            what: what.into(),
            dtype,
            supported: crate::dtype::ELEMENTS,
        }
    }

    /// The device ordinal of a candle CUDA device.
    pub(crate) fn ordinal(dev: &CudaDevice) -> usize {
        match dev.location() {
            DeviceLocation::Cuda { gpu_id } => gpu_id,
            _ => 0,
        }
    }

    /// Operands passed without a heap allocation: the library's ops have at most seven
    /// (three inputs, an output and two statistics, a scalar); a [`crate::Launch`] with more
    /// takes a `Vec`.
    const INLINE: usize = 8;

    /// Where output `i` is passed: its operand's index and view, or [`missing_output`] when
    /// no operand or more than one passes it.
    fn output_slot(spec: &KernelSpec, operands: &[Operand<'_>], i: usize) -> Result<(usize, View)> {
        let mut found = None;
        for (k, o) in operands.iter().enumerate() {
            if let Operand::Out(j, v) = o {
                if *j == i {
                    if found.is_some() {
                        return Err(missing_output(spec, i));
                    }
                    found = Some((k, *v));
                }
            }
        }
        found.ok_or_else(|| missing_output(spec, i))
    }

    /// Runs the launch on `rt`, the device's runtime (candle's stream).
    pub(super) fn run(
        rt: &Runtime,
        dev: &CudaDevice,
        spec: &KernelSpec,
        generics: &[TkDType],
        operands: &[Operand<'_>],
        outputs: &mut [Dst],
    ) -> Result<()> {
        let Some(stream) = rt.cuda_stream() else {
            unreachable!("a CUDA runtime has a stream");
        };
        let ordinal = ordinal(dev);
        let (n, n_out) = (operands.len(), outputs.len());
        // The arguments in parameter order (each slot written once below), and the cudarc
        // access guards: reads and writes are recorded when they drop, after the launch was
        // issued (a `Record(None)` slot records nothing).
        let mut args_inline = [const { Arg::Scalar(ScalarValue::I64(0)) }; INLINE];
        let mut guards_inline = [const { SyncOnDrop::Record(None) }; INLINE];
        let mut args_heap = Vec::new();
        let mut guards_heap = Vec::new();
        let (args, guards): (&mut [Arg<'_>], &mut [SyncOnDrop<'_>]) = if n <= INLINE {
            (&mut args_inline[..n], &mut guards_inline[..n])
        } else {
            args_heap.resize_with(n, || Arg::Scalar(ScalarValue::I64(0)));
            guards_heap.resize_with(n, || SyncOnDrop::Record(None));
            (&mut args_heap, &mut guards_heap)
        };
        for (i, d) in outputs.iter_mut().enumerate() {
            let (k, v) = output_slot(spec, operands, i)?;
            let Dst::Cuda(s) = d else {
                return Err(missing_output(spec, i));
            };
            // SAFETY: the output is owned here (nothing else holds it) until the launch
            // was issued on the stream candle orders its work on.
            let (arg, g) = unsafe { device_out(spec.name, stream, ordinal, s, &v) }?;
            guards[k] = g;
            args[k] = Arg::TensorMut(arg);
        }
        for (k, o) in operands.iter().enumerate() {
            args[k] = match o {
                Operand::In(Src::Cuda(s), v) => {
                    if s.device.id() != dev.id() {
                        return Err(wrong_device(spec.name, dev, s.device.location()));
                    }
                    // SAFETY: the candle storage is borrowed (its lock held by the caller)
                    // until after the launch is issued.
                    let (arg, g) = unsafe { device_in(spec.name, stream, ordinal, s, v) }?;
                    guards[k] = g;
                    Arg::Tensor(arg)
                }
                Operand::In(Src::Cpu(_), _) => {
                    return Err(wrong_device(spec.name, dev, DeviceLocation::Cpu))
                }
                // Placed above; an index past the outputs is passed to no output.
                Operand::Out(i, _) if *i < n_out => continue,
                Operand::Out(i, _) => return Err(missing_output(spec, *i)),
                Operand::Scalar(s) => Arg::Scalar(*s),
            };
        }
        tilekit_runtime::launch(rt, spec, generics, args)?;
        Ok(())
    }
}
