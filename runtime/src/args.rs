//! The arguments of a launch: [`Arg`] (a tensor by `&` or `&mut`, or a scalar), the
//! tensors' [`Layout`] held inline, [`ScalarValue`], and [`Generics`] (the element types bound
//! to a kernel's generic parameters).

use crate::backend::Backend;
use crate::launch::error::LaunchError;
use crate::tensor::geometry::{Geometry, MAX_RANK};
use crate::tensor::host::{HostSlice, HostSliceMut};
use tilekit_ir::{Bindings, DType, EvalValue, HostFloat, Kernel};

/// Most generic parameters a memoized launch may have (more: no memo, the full path).
pub(crate) const MAX_GENERICS: usize = 4;

/// A scalar kernel argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarValue {
    /// `f32`
    F32(f32),
    /// `i32`
    I32(i32),
    /// `i64`
    I64(i64),
    /// `usize` (passed to the kernel as `i64`; values above `i64::MAX` are refused).
    Usize(usize),
    /// `bool`
    Bool(bool),
}

impl ScalarValue {
    /// The type a kernel sees, or `None` for a `usize` that does not fit in `i64`.
    pub fn dtype(&self) -> Option<DType> {
        Some(match self {
            ScalarValue::F32(_) => DType::F32,
            ScalarValue::I32(_) => DType::I32,
            ScalarValue::I64(_) => DType::I64,
            ScalarValue::Usize(v) => {
                i64::try_from(*v).ok()?;
                DType::I64
            }
            ScalarValue::Bool(_) => DType::Bool,
        })
    }

    /// The value of the scalar in host expressions (`None` for a `usize` beyond `i64`).
    pub fn to_eval(&self) -> Option<EvalValue> {
        match self {
            ScalarValue::F32(v) => Some(EvalValue::Float(HostFloat(f64::from(*v)))),
            ScalarValue::I32(v) => Some(EvalValue::Int(i64::from(*v))),
            ScalarValue::I64(v) => Some(EvalValue::Int(*v)),
            ScalarValue::Usize(v) => i64::try_from(*v).ok().map(EvalValue::Int),
            ScalarValue::Bool(v) => Some(EvalValue::Bool(*v)),
        }
    }

    /// The value as written in Rust (`NaN`, `-1.0`, `7`).
    pub(crate) fn value_text(&self) -> String {
        match self {
            ScalarValue::F32(v) => format!("{v:?}"),
            ScalarValue::I32(v) => v.to_string(),
            ScalarValue::I64(v) => v.to_string(),
            ScalarValue::Usize(v) => v.to_string(),
            ScalarValue::Bool(v) => v.to_string(),
        }
    }

    fn describe(&self) -> String {
        match self {
            ScalarValue::Usize(_) => "a usize scalar".into(),
            other => match other.dtype() {
                Some(d) => format!("a {d} scalar"),
                None => "a scalar".into(),
            },
        }
    }
}

macro_rules! scalar_from {
    ($t:ty, $v:ident) => {
        impl From<$t> for ScalarValue {
            fn from(v: $t) -> ScalarValue {
                ScalarValue::$v(v)
            }
        }
        impl From<$t> for Arg<'_> {
            fn from(v: $t) -> Self {
                Arg::Scalar(ScalarValue::$v(v))
            }
        }
    };
}
scalar_from!(f32, F32);
scalar_from!(i32, I32);
scalar_from!(i64, I64);
scalar_from!(usize, Usize);
scalar_from!(bool, Bool);

/// Shape, strides (in elements), offset and element type of a tensor argument, held inline
/// (tensors have 1 to [`MAX_RANK`] axes) so that building an argument allocates nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub dtype: DType,
    pub backend: Backend,
    /// The tensor's rank `R` (1 to [`MAX_RANK`] for every tensor a constructor accepts).
    pub rank: usize,
    /// Extents of the first `min(rank, MAX_RANK)` axes; the rest 0.
    pub dims: [usize; MAX_RANK],
    /// Strides of the first `min(rank, MAX_RANK)` axes; the rest 0.
    pub stride: [usize; MAX_RANK],
    pub offset: usize,
}

impl Layout {
    /// The layout of a tensor or view of element type `dtype` on `backend`.
    pub(crate) fn new<const R: usize>(dtype: DType, backend: Backend, g: &Geometry<R>) -> Layout {
        // `n` is a constant per `R`: straight-line copies, no loop.
        let n = R.min(MAX_RANK);
        let (mut dims, mut stride) = ([0; MAX_RANK], [0; MAX_RANK]);
        dims[..n].copy_from_slice(&g.shape[..n]);
        stride[..n].copy_from_slice(&g.strides[..n]);
        Layout {
            dtype,
            backend,
            rank: R,
            dims,
            stride,
            offset: g.offset,
        }
    }

    /// The layout of a CUDA tensor (device 0) of rank `shape.len()` (1 to [`MAX_RANK`]) from its
    /// extents, strides and offset, in elements.
    pub(crate) fn from_parts(
        shape: &[usize],
        strides: &[usize],
        offset: usize,
        dtype: DType,
    ) -> Layout {
        let n = shape.len().min(MAX_RANK);
        let (mut dims, mut stride) = ([0; MAX_RANK], [0; MAX_RANK]);
        dims[..n].copy_from_slice(&shape[..n]);
        stride[..n].copy_from_slice(&strides[..n.min(strides.len())]);
        Layout {
            dtype,
            backend: Backend::Cuda { ordinal: 0 },
            rank: shape.len(),
            dims,
            stride,
            offset,
        }
    }

    /// The extents.
    pub fn shape(&self) -> &[usize] {
        &self.dims[..self.rank.min(MAX_RANK)]
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[usize] {
        &self.stride[..self.rank.min(MAX_RANK)]
    }

    /// Whether no element is addressed twice, by the sufficient test: the axes of extent
    /// above 1, sorted by stride, each have a stride at least the span of the faster ones
    /// (the elements they reach, `1 + sum (extent - 1) * stride`). An empty tensor passes.
    pub fn distinct_elements(&self) -> bool {
        if self.shape().contains(&0) {
            return true;
        }
        // On the stack (a layout has at most MAX_RANK axes): this runs on every launch that
        // writes a tensor, memo hits included.
        let mut buf = [(0usize, 0usize); MAX_RANK];
        let mut n = 0;
        for (&s, &d) in self.strides().iter().zip(self.shape()) {
            if d > 1 {
                buf[n] = (s, d);
                n += 1;
            }
        }
        let axes = &mut buf[..n];
        axes.sort_unstable();
        let mut span: u128 = 1;
        for &(s, d) in axes.iter() {
            if (s as u128) < span {
                return false;
            }
            span += (d as u128 - 1) * s as u128;
        }
        true
    }

    /// The bytes `[start, end)` the tensor's elements span from `base` (the address of
    /// storage element 0), or `None` when it has no element.
    pub fn byte_range(&self, base: u128) -> Option<(u128, u128)> {
        if self.shape().contains(&0) {
            return None;
        }
        let size = self.dtype.size_bytes() as u128;
        let last = self
            .strides()
            .iter()
            .zip(self.shape())
            .map(|(&s, &d)| (d as u128 - 1) * s as u128)
            .sum::<u128>()
            + self.offset as u128;
        Some((base + self.offset as u128 * size, base + (last + 1) * size))
    }
}

/// A tensor passed by shared reference: the kernel reads it.
#[derive(Clone, Debug)]
pub struct TensorArg<'a> {
    pub(crate) layout: Layout,
    /// The elements, for a tensor in host memory.
    pub(crate) data: Option<HostSlice<'a>>,
    /// The device address of the tensor's allocation, for a tensor in device memory.
    pub(crate) device: Option<u64>,
}

/// A tensor passed by exclusive reference: the kernel may write it.
#[derive(Debug)]
pub struct TensorArgMut<'a> {
    pub(crate) layout: Layout,
    /// The elements, for a tensor in host memory.
    pub(crate) data: Option<HostSliceMut<'a>>,
    /// The device address of the tensor's allocation, for a tensor in device memory.
    pub(crate) device: Option<u64>,
}

impl TensorArg<'_> {
    /// The extents.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.layout.dtype
    }
}

impl TensorArgMut<'_> {
    /// The extents.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.layout.dtype
    }
}

/// One argument of a launch, in the order of the kernel's parameters.
///
/// ```
/// use tilekit_runtime::{Arg, Runtime, Tensor1};
/// let rt = Runtime::cpu();
/// let x = Tensor1::<f32>::zeros(&rt, [4]).unwrap();
/// let mut y = Tensor1::<f32>::zeros(&rt, [4]).unwrap();
/// let args = [Arg::from(&x), Arg::from(&mut y), Arg::from(2.0f32), Arg::from(7usize)];
/// assert!(matches!(args[1], Arg::TensorMut(_)));
/// ```
#[derive(Debug)]
pub enum Arg<'a> {
    /// A `&TensorR<T>` parameter (a tensor or any view of one).
    Tensor(TensorArg<'a>),
    /// A `&mut TensorR<T>` parameter (a tensor or an exclusive view of one).
    TensorMut(TensorArgMut<'a>),
    /// A scalar parameter.
    Scalar(ScalarValue),
}

impl Arg<'_> {
    /// The bytes the tensor's elements span in its address space (host or one device), or
    /// `None` for a scalar or an empty tensor.
    pub(crate) fn byte_range(&self) -> Option<(u128, u128)> {
        let (layout, base) = match self {
            Arg::Tensor(t) => (&t.layout, t.device.or(t.data.map(|d| d.address() as u64))),
            Arg::TensorMut(t) => (
                &t.layout,
                t.device
                    .or(t.data.as_ref().map(|d| d.as_ref().address() as u64)),
            ),
            Arg::Scalar(_) => return None,
        };
        layout.byte_range(u128::from(base?))
    }

    pub(crate) fn layout(&self) -> Option<&Layout> {
        match self {
            Arg::Tensor(t) => Some(&t.layout),
            Arg::TensorMut(t) => Some(&t.layout),
            Arg::Scalar(_) => None,
        }
    }

    /// The value of an integer scalar argument (`usize` above `i64::MAX` saturates).
    pub(crate) fn int_scalar(&self) -> Option<i64> {
        match self {
            Arg::Scalar(ScalarValue::I32(v)) => Some(i64::from(*v)),
            Arg::Scalar(ScalarValue::I64(v)) => Some(*v),
            Arg::Scalar(ScalarValue::Usize(v)) => Some(i64::try_from(*v).unwrap_or(i64::MAX)),
            _ => None,
        }
    }

    pub(super) fn describe(&self) -> String {
        match self {
            Arg::Tensor(t) => format!("&Tensor{}<{}>", t.layout.rank, t.layout.dtype),
            Arg::TensorMut(t) => format!("&mut Tensor{}<{}>", t.layout.rank, t.layout.dtype),
            Arg::Scalar(s) => s.describe(),
        }
    }
}

/// The element types bound to a kernel's generic parameters: by name ([`Bindings`]), or in
/// the order the kernel declares its generics (what generated launchers pass: no map, no
/// strings).
///
/// ```
/// use tilekit_runtime::Generics;
/// use tilekit_runtime::ir::{Bindings, DType};
/// let b = Bindings::single("T", DType::F32);
/// assert!(matches!(Generics::from(&b), Generics::Named(_)));
/// assert!(matches!(Generics::from(&[DType::BF16]), Generics::Ordered(&[DType::BF16])));
/// ```
#[derive(Clone, Copy, Debug)]
pub enum Generics<'a> {
    /// Each generic parameter by name.
    Named(&'a Bindings),
    /// One element type per generic parameter, in declaration order.
    Ordered(&'a [DType]),
}

impl<'a> From<&'a Bindings> for Generics<'a> {
    fn from(b: &'a Bindings) -> Self {
        Generics::Named(b)
    }
}

impl<'a> From<&'a [DType]> for Generics<'a> {
    fn from(d: &'a [DType]) -> Self {
        Generics::Ordered(d)
    }
}

impl<'a, const N: usize> From<&'a [DType; N]> for Generics<'a> {
    fn from(d: &'a [DType; N]) -> Self {
        Generics::Ordered(d)
    }
}

impl<'a> Generics<'a> {
    /// The bindings by name (allocates; only the full check needs them).
    pub(crate) fn to_bindings(self, kernel: &Kernel) -> Bindings {
        match self {
            Generics::Named(b) => b.clone(),
            Generics::Ordered(d) => Bindings(
                kernel
                    .generics
                    .iter()
                    .cloned()
                    .zip(d.iter().copied())
                    .collect(),
            ),
        }
    }

    /// The element types in the kernel's generic order (named bindings written to `buf`,
    /// ordered ones as given); `Ok(None)` when named bindings do not bind exactly the
    /// kernel's generics (the full check then reports what is wrong) or there are more than
    /// the memo holds.
    #[inline]
    pub(crate) fn ordered<'b>(
        self,
        kernel: &Kernel,
        buf: &'b mut [DType; MAX_GENERICS],
    ) -> Result<Option<&'b [DType]>, LaunchError>
    where
        'a: 'b,
    {
        let n = kernel.generics.len();
        match self {
            Generics::Ordered(d) if d.len() != n => Err(miscounted(kernel, d.len())),
            _ if n > buf.len() => Ok(None),
            Generics::Ordered(d) => Ok(Some(d)),
            Generics::Named(b) => {
                if b.0.len() != n {
                    return Ok(None);
                }
                for (slot, g) in buf.iter_mut().zip(&kernel.generics) {
                    match b.get(g) {
                        Some(d) => *slot = d,
                        None => return Ok(None),
                    }
                }
                Ok(Some(&buf[..n]))
            }
        }
    }
}

/// The error of ordered generics of the wrong count (out of line: launches pass the
/// generated launcher's count).
#[cold]
fn miscounted(kernel: &Kernel, given: usize) -> LaunchError {
    let n = kernel.generics.len();
    LaunchError::Bindings {
        kernel: kernel.name.clone(),
        message: format!("{given} element types given for {n} generic parameters"),
    }
}
