//! [`Launch`]: any `#[kernel]` on candle tensors.

use crate::dtype;
use crate::error::{Error, Result};
use crate::operand::{self, Dst, Operand, Place, Src};
use crate::view::{View, What};
use candle_core::op::BackpropOp;
use candle_core::{DType, Device, Shape, StorageRef, Tensor};
use tilekit_runtime::ir::DType as TkDType;
use tilekit_runtime::{KernelSpec, ScalarValue};

/// One argument, in the kernel's parameter order.
enum Param<'a> {
    /// An input; `rows`: as a `[rows, cols]` matrix.
    In(&'a Tensor, bool),
    /// An output; `zeroed`: filled with zeros before the launch.
    Out(Shape, DType, bool),
    Scalar(ScalarValue),
}

/// A launch of any `#[kernel]` on candle tensors: inputs are candle tensors (any layout
/// with 1 to 4 axes: start offset and strides are passed to the kernel as they are),
/// outputs are new candle tensors of the given shapes and element types, allocated on the
/// inputs' device (zeroed) and returned in order. It runs on that device: a CUDA tensor's
/// kernel is launched on candle's stream (no synchronisation), a CPU tensor's on tilekit's
/// CPU backend; the tuned configurations apply (see [`crate::register_kernels`]).
///
/// The launch is checked as a launch on tilekit tensors is (element types against the
/// kernel's, ranks, the shape contract, constraints, devices, alignment choosing the
/// variant) and nothing runs when a check fails; element types tilekit tensors cannot hold
/// are refused with [`Error::UnsupportedDType`]. Outputs carry no gradient.
///
/// ```
/// use candle_core::{DType, Device, Tensor};
/// use tilekit_candle::Launch;
/// let x = Tensor::new(&[[1f32, 2.0, 3.0], [0.0, 0.0, 0.0]], &Device::Cpu).unwrap();
/// let outs = Launch::new(&tilekit_kernels::softmax::SPEC)
///     .generic(DType::F32)
///     .input(&x)
///     .output((2, 3), DType::F32)
///     .run()
///     .unwrap();
/// let y = outs[0].to_vec2::<f32>().unwrap();
/// assert!((y[1][0] - 1.0 / 3.0).abs() < 1e-6);
/// ```
pub struct Launch<'a> {
    spec: &'a KernelSpec,
    generics: Vec<DType>,
    params: Vec<Param<'a>>,
    device: Option<&'a Device>,
}

impl<'a> Launch<'a> {
    /// A launch of `spec` (a `#[kernel]`'s `SPEC`).
    pub fn new(spec: &'a KernelSpec) -> Launch<'a> {
        Launch {
            spec,
            generics: Vec::new(),
            params: Vec::new(),
            device: None,
        }
    }

    /// Binds the next generic parameter (`T` of `fn k<T: Float>`), in declaration order.
    pub fn generic(mut self, dtype: DType) -> Self {
        self.generics.push(dtype);
        self
    }

    /// The next parameter is a `&TensorN<T>`: this tensor.
    pub fn input(mut self, t: &'a Tensor) -> Self {
        self.params.push(Param::In(t, false));
        self
    }

    /// The next parameter is a `&Tensor2<T>`: this tensor as a `[rows, cols]` matrix, its
    /// last axis the columns and every other axis merged into rows (without a copy: the
    /// leading axes must be mergeable, as for a contiguous tensor or a narrow of its last
    /// axis, else [`Error::Layout`]). How the row-wise library kernels take `[B, T, C]`.
    pub fn input_rows(mut self, t: &'a Tensor) -> Self {
        self.params.push(Param::In(t, true));
        self
    }

    /// The next parameter is a `&mut TensorN<T>`: a new contiguous tensor of this shape and
    /// element type, zero-filled, returned by [`Launch::run`].
    pub fn output(mut self, shape: impl Into<Shape>, dtype: DType) -> Self {
        self.params.push(Param::Out(shape.into(), dtype, true));
        self
    }

    /// As [`Launch::output`], without the zero fill on a CUDA device (one memset less).
    ///
    /// # Safety
    ///
    /// The kernel must write every element of this output (else the returned tensor holds
    /// whatever the allocation held before).
    pub unsafe fn output_uninit(mut self, shape: impl Into<Shape>, dtype: DType) -> Self {
        self.params.push(Param::Out(shape.into(), dtype, false));
        self
    }

    /// The next parameter is a scalar (`f32`, `i32`, `i64`, `usize`, `bool`).
    pub fn scalar(mut self, v: impl Into<ScalarValue>) -> Self {
        self.params.push(Param::Scalar(v.into()));
        self
    }

    /// The device to run on when no input says (a launch with outputs only).
    pub fn on(mut self, device: &'a Device) -> Self {
        self.device = Some(device);
        self
    }

    /// Runs the kernel; returns the outputs in parameter order.
    pub fn run(self) -> Result<Vec<Tensor>> {
        let op = self.spec.name;
        let generics = self
            .generics
            .iter()
            .enumerate()
            .map(|(i, d)| dtype::element(op, What::Generic(i), *d))
            .collect::<Result<Vec<TkDType>>>()?;
        // Lock every input's storage (read) for the whole launch.
        let mut locked: Vec<(StorageRef<'_>, &candle_core::Layout)> = Vec::new();
        for p in &self.params {
            if let Param::In(t, _) = p {
                locked.push(t.storage_and_layout());
            }
        }
        let mut place: Option<Place<'_>> = None;
        let mut operands = Vec::with_capacity(self.params.len());
        let mut shapes = Vec::new();
        let mut dtypes = Vec::new();
        let mut inputs = locked.iter();
        for (i, p) in self.params.iter().enumerate() {
            let what = What::Parameter(i);
            operands.push(match p {
                Param::In(_, rows) => {
                    let Some((storage, layout)) = inputs.next() else {
                        unreachable!("one lock per input");
                    };
                    let src = Src::of(op, storage)?;
                    dtype::element(op, what, src.dtype())?;
                    let here = src.place();
                    match &place {
                        None => place = Some(here),
                        Some(p) if p.same(&here) => {}
                        Some(p) => {
                            return Err(Error::DeviceMismatch {
                                op,
                                what: what.to_string(),
                                expected: p.location(),
                                found: here.location(),
                            })
                        }
                    }
                    let view = if *rows {
                        View::rows(op, what, layout)?
                    } else {
                        View::of(op, what, layout)?
                    };
                    Operand::In(src, view)
                }
                Param::Out(shape, dt, zeroed) => {
                    dtype::element(op, what, *dt)?;
                    let view = View::contiguous(op, what, shape.dims())?;
                    shapes.push(shape.clone());
                    dtypes.push((*dt, *zeroed));
                    Operand::Out(shapes.len() - 1, view)
                }
                Param::Scalar(s) => Operand::Scalar(*s),
            });
        }
        let place = match (place, self.device) {
            (Some(p), _) => p,
            (None, Some(d)) => place_of(op, d)?,
            (None, None) => Place::Cpu,
        };
        let mut outputs: Vec<Dst> = shapes
            .iter()
            .zip(&dtypes)
            .map(|(s, (d, zeroed))| place.alloc(*d, s.elem_count(), *zeroed))
            .collect::<Result<_>>()?;
        operand::run(place, self.spec, &generics, &operands, &mut outputs)?;
        drop(operands);
        drop(locked);
        Ok(outputs
            .into_iter()
            .zip(shapes)
            .map(|(d, s)| Tensor::from_storage(d.into_storage(), s, BackpropOp::none(), false))
            .collect())
    }
}

/// The place of a candle device.
pub(crate) fn place_of<'d>(op: &'static str, d: &'d Device) -> Result<Place<'d>> {
    match d {
        Device::Cpu => Ok(Place::Cpu),
        #[cfg(feature = "cuda")]
        Device::Cuda(c) => Ok(Place::Cuda(c)),
        other => Err(Error::UnsupportedDevice {
            op,
            device: other.location(),
        }),
    }
}
