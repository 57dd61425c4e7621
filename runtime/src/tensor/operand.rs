//! What a launcher accepts for a tensor parameter: [`ReadTensor`] (`&TensorR<T>` in the
//! kernel: a [`Tensor`], a [`TensorRef`], a [`TensorMut`] or a [`TensorView`]) and
//! [`WriteTensor`] (`&mut TensorR<T>`: a [`Tensor`], a [`TensorMut`] or a [`TensorView`]).
//! Both are sealed: the launch checks rely on every operand being one of these.
//!
//! ```
//! use tilekit_runtime::{ReadTensor, Runtime, Tensor2};
//! fn rows<T: tilekit_runtime::Element>(x: &impl ReadTensor<T, 2>) -> usize {
//!     x.dims()[0]
//! }
//! let x = Tensor2::<f32>::zeros(&Runtime::cpu(), [2, 5]).unwrap();
//! assert_eq!((rows(&x), rows(&x.t())), (2, 5));
//! ```

use super::interop::TensorView;
use super::view::{TensorMut, TensorRef};
use super::Tensor;
use crate::element::Element;
use crate::launch::{Arg, Layout, TensorArg, TensorArgMut};

mod sealed {
    pub trait Sealed {}
}

/// A tensor (or view) a kernel reads; see the [module docs](self).
pub trait ReadTensor<T: Element, const R: usize>: sealed::Sealed {
    /// The extents, one per axis.
    fn dims(&self) -> [usize; R];
    /// The launch argument (what generated launchers pass to [`crate::launch()`]).
    fn read_arg(&self) -> Arg<'_>;
}

/// A tensor (or exclusive view) a kernel may write; see the [module docs](self).
pub trait WriteTensor<T: Element, const R: usize>: ReadTensor<T, R> {
    /// The writable launch argument.
    fn write_arg(&mut self) -> Arg<'_>;
}

impl<T: Element, const R: usize> sealed::Sealed for Tensor<T, R> {}
impl<T: Element, const R: usize> sealed::Sealed for TensorRef<'_, T, R> {}
impl<T: Element, const R: usize> sealed::Sealed for TensorMut<'_, T, R> {}
impl<T: Element, const R: usize> sealed::Sealed for TensorView<'_, T, R> {}

impl<T: Element, const R: usize> ReadTensor<T, R> for Tensor<T, R> {
    fn dims(&self) -> [usize; R] {
        self.geom.shape
    }
    fn read_arg(&self) -> Arg<'_> {
        Arg::from(self.view())
    }
}

impl<T: Element, const R: usize> WriteTensor<T, R> for Tensor<T, R> {
    fn write_arg(&mut self) -> Arg<'_> {
        Arg::from(self.view_mut())
    }
}

impl<T: Element, const R: usize> ReadTensor<T, R> for TensorRef<'_, T, R> {
    fn dims(&self) -> [usize; R] {
        self.geom.shape
    }
    fn read_arg(&self) -> Arg<'_> {
        Arg::from(*self)
    }
}

impl<T: Element, const R: usize> ReadTensor<T, R> for TensorMut<'_, T, R> {
    fn dims(&self) -> [usize; R] {
        self.geom.shape
    }
    fn read_arg(&self) -> Arg<'_> {
        Arg::from(self.view())
    }
}

impl<T: Element, const R: usize> WriteTensor<T, R> for TensorMut<'_, T, R> {
    fn write_arg(&mut self) -> Arg<'_> {
        Arg::from(self.view_mut())
    }
}

impl<T: Element, const R: usize> ReadTensor<T, R> for TensorView<'_, T, R> {
    fn dims(&self) -> [usize; R] {
        self.tensor.geom.shape
    }
    fn read_arg(&self) -> Arg<'_> {
        self.tensor.read_arg()
    }
}

impl<T: Element, const R: usize> WriteTensor<T, R> for TensorView<'_, T, R> {
    fn write_arg(&mut self) -> Arg<'_> {
        self.tensor.write_arg()
    }
}

impl<'a, T: Element, const R: usize> From<TensorRef<'a, T, R>> for Arg<'a> {
    fn from(v: TensorRef<'a, T, R>) -> Self {
        Arg::Tensor(TensorArg {
            layout: Layout::new(T::DTYPE, v.storage.backend(), &v.geom),
            data: v.storage.host_parts(),
            device: v.storage.device_address(),
        })
    }
}

impl<'a, T: Element, const R: usize> From<TensorMut<'a, T, R>> for Arg<'a> {
    fn from(v: TensorMut<'a, T, R>) -> Self {
        let layout = Layout::new(T::DTYPE, v.storage.backend(), &v.geom);
        let device = v.storage.device_address();
        Arg::TensorMut(TensorArgMut {
            layout,
            data: v.storage.host_parts_mut(),
            device,
        })
    }
}

impl<'a, T: Element, const R: usize> From<&'a Tensor<T, R>> for Arg<'a> {
    fn from(t: &'a Tensor<T, R>) -> Self {
        Arg::from(t.view())
    }
}

impl<'a, T: Element, const R: usize> From<&'a mut Tensor<T, R>> for Arg<'a> {
    fn from(t: &'a mut Tensor<T, R>) -> Self {
        Arg::from(t.view_mut())
    }
}

/// `(&view).into()` and `(&mut view).into()` as `(&tensor).into()` and `(&mut
/// tensor).into()`: a view behind a shared reference is a read argument, an exclusive
/// view behind `&mut` a written one.
///
/// ```
/// use tilekit_runtime::{Arg, Runtime, Tensor2};
/// let x = Tensor2::<f32>::zeros(&Runtime::cpu(), [2, 3]).unwrap();
/// let t = x.t();
/// let a: Arg = (&t).into();
/// assert!(matches!(a, Arg::Tensor(_)));
/// let mut y = Tensor2::<f32>::zeros(&Runtime::cpu(), [4, 3]).unwrap();
/// let mut v = y.narrow_mut(0, 1, 2).unwrap();
/// assert!(matches!(Arg::from(&v), Arg::Tensor(_)));
/// let a: Arg = (&mut v).into();
/// assert!(matches!(a, Arg::TensorMut(_)));
/// ```
macro_rules! arg_from_view {
    ($($view:ident $(=> $write:ident)?;)*) => {$(
        impl<'a, T: Element, const R: usize> From<&'a $view<'_, T, R>> for Arg<'a> {
            fn from(v: &'a $view<'_, T, R>) -> Self {
                v.read_arg()
            }
        }
        $(
            impl<'a, T: Element, const R: usize> From<&'a mut $view<'_, T, R>> for Arg<'a> {
                fn from(v: &'a mut $view<'_, T, R>) -> Self {
                    v.$write()
                }
            }
        )?
    )*};
}

arg_from_view! {
    TensorRef;
    TensorMut => write_arg;
    TensorView => write_arg;
}
