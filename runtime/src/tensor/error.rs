//! [`TensorError`]: why a tensor could not be built, viewed or copied (raised by
//! `crate::tensor` and by tensor arguments over foreign memory).

/// Why a tensor could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TensorError {
    /// Tensors have rank 1 to 4.
    #[error("tensors have rank 1 to 4, not {rank}")]
    Rank {
        /// The requested rank.
        rank: usize,
    },
    /// The number of elements (or an address) does not fit in 63 bits.
    #[error("shape {shape:?} overflows: its size or an address does not fit in 63 bits")]
    Overflow {
        /// The requested shape.
        shape: Vec<usize>,
    },
    /// The data does not have as many elements as the shape.
    #[error("shape {shape:?} has {expected} elements but {found} were given")]
    Length {
        /// The requested shape.
        shape: Vec<usize>,
        /// Elements the shape needs.
        expected: usize,
        /// Elements given.
        found: usize,
    },
    /// A strided view reaches past the end of its data.
    #[error(
        "a view of shape {shape:?}, strides {strides:?} and offset {offset} reaches element {last}, \
         but the data has {len} elements"
    )]
    ViewOutOfBounds {
        /// Shape.
        shape: Vec<usize>,
        /// Strides in elements.
        strides: Vec<usize>,
        /// Offset in elements.
        offset: usize,
        /// The largest element index the view addresses.
        last: usize,
        /// Length of the data.
        len: usize,
    },
    /// A view names an axis the tensor does not have.
    #[error("axis {axis} is out of range for a tensor of rank {rank}")]
    Axis {
        /// The axis asked for.
        axis: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// `permute` was given axes that are not a permutation of `0..rank`.
    #[error("{axes:?} is not a permutation of the tensor's axes")]
    Permutation {
        /// The axes given.
        axes: Vec<usize>,
    },
    /// `narrow` asked for indices past the end of an axis.
    #[error("narrowing axis {axis} to {start}..{start}+{len} goes past its extent {extent}")]
    Narrow {
        /// The axis.
        axis: usize,
        /// First index asked for.
        start: usize,
        /// Number of indices asked for.
        len: usize,
        /// The axis' extent.
        extent: usize,
    },
    /// [`crate::Tensor::copy_from`] between tensors of different shapes.
    #[error("cannot copy a tensor of shape {src:?} into one of shape {dst:?}")]
    CopyShape {
        /// The destination's shape.
        dst: Vec<usize>,
        /// The source's shape.
        src: Vec<usize>,
    },
    /// `reshape` to a shape with another number of elements.
    #[error("cannot reshape {from:?} into {to:?}: the element counts differ")]
    Reshape {
        /// The view's shape.
        from: Vec<usize>,
        /// The shape asked for.
        to: Vec<usize>,
    },
    /// `reshape` of a view that is not contiguous row-major (a transpose, a narrowed inner
    /// axis): its elements have no row-major order in memory.
    #[error(
        "cannot reshape a view of shape {shape:?} and strides {strides:?}: it is not \
         contiguous (copy it into a new tensor first)"
    )]
    NotContiguous {
        /// The view's shape.
        shape: Vec<usize>,
        /// The view's strides.
        strides: Vec<usize>,
    },
    /// Host memory for a tensor's elements (its storage on the CPU backend, or a host copy:
    /// [`crate::Tensor::to_vec`], a download, a clone) could not be allocated. Allocation is
    /// fallible: a request the system refuses is this error, never an abort.
    #[error(
        "could not allocate {bytes} bytes of host memory for {what} ({elements} elements of \
         {elem_bytes} bytes)"
    )]
    HostAlloc {
        /// What the memory was for (`"a tensor's storage"`, `"a copy of a view"`, ...).
        what: &'static str,
        /// Elements asked for.
        elements: usize,
        /// Bytes per element.
        elem_bytes: usize,
        /// Bytes asked for (`elements * elem_bytes`, exact).
        bytes: u128,
    },
    /// A CUDA driver call failed while allocating, copying or freeing device memory.
    #[error("CUDA {what} failed: {message}")]
    Device {
        /// What was being done (`allocation`, `upload`, `download`, ...).
        what: &'static str,
        /// The driver's error.
        message: String,
    },
    /// The operation needs a tensor or runtime of another backend (for example wrapping a
    /// `CudaSlice` with a CPU runtime, or a slice of another device).
    #[error("{message}")]
    Backend {
        /// What is wrong.
        message: String,
    },
}
