//! Where `PAD64` copies a read-only tensor (see `cuda/pad.rs`): the scratch layout of a
//! `General` tensor of rank 1 or 2, with a row pitch of a multiple of 64 elements. Pure
//! layout arithmetic, below both the launch check (which asks whether `PAD64` applies) and
//! the padding step, so neither imports the other.

use super::abi::access_class;
use crate::args::Layout;
use tilekit_codegen::AccessClass;

/// Row pitches of the scratch copies are multiples of this many elements.
pub(crate) const PAD_ELEMS: usize = 64;

/// `n` rounded up to a multiple of [`PAD_ELEMS`] (at least one multiple).
pub(crate) fn padded_pitch(n: usize) -> Option<usize> {
    n.max(1).checked_next_multiple_of(PAD_ELEMS)
}

/// How one read-only tensor is padded: its scratch layout (offset 0) and whether the copy
/// runs over the transposed views (a column-major copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PadLayout {
    /// The layout of the scratch copy (same element type, rank and extents).
    pub layout: Layout,
    /// The copy runs over both tensors transposed (column-major scratch).
    pub transposed: bool,
    /// Bytes of scratch.
    pub bytes: usize,
}

/// The scratch layout `PAD64` copies a read-only tensor of `layout` into, or `None` when it
/// is not copied (its class at `base` is not `General`, or its rank is not 1 or 2).
/// `cols_capable`: the kernel may read this tensor column-major.
pub(crate) fn pad_layout(base: u64, layout: &Layout, cols_capable: bool) -> Option<PadLayout> {
    if access_class(base, layout) != AccessClass::General {
        return None;
    }
    let es = layout.dtype.size_bytes();
    let mut out = layout.clone();
    out.offset = 0;
    let (transposed, elems) = match *layout.shape() {
        [n] => {
            out.stride[0] = 1;
            (false, n.max(1))
        }
        [r, c] => {
            let transposed = cols_capable && layout.strides()[0] == 1 && layout.strides()[1] != 1;
            if transposed {
                let pitch = padded_pitch(r)?;
                out.stride[0] = 1;
                out.stride[1] = pitch;
                (true, pitch.checked_mul(c.max(1))?)
            } else {
                let pitch = padded_pitch(c)?;
                out.stride[0] = pitch;
                out.stride[1] = 1;
                (false, pitch.checked_mul(r.max(1))?)
            }
        }
        _ => return None,
    };
    Some(PadLayout {
        layout: out,
        transposed,
        bytes: elems.checked_mul(es)?.max(16),
    })
}

/// Whether `PAD64` copies a read-only tensor of `layout` whose allocation starts at `base`
/// (`None`, a host tensor: taken as 16-byte aligned, so only its offset and strides count):
/// rank 1 or 2 and access class `General`. The launch check refuses `PAD64 = true` when no
/// read-only tensor needs it.
pub(crate) fn needs_padding(base: Option<u64>, layout: &Layout) -> bool {
    pad_layout(base.unwrap_or(0), layout, false).is_some()
}
