//! Views: how a candle [`Layout`] (shape, strides, start offset) is passed to a tilekit
//! kernel: as is when it has 1 to 4 axes, or as a matrix of rows (the leading axes merged)
//! for the row-wise library kernels.

use crate::error::{Error, Result};
use candle_core::Layout;
use std::fmt;
use tilekit_runtime::MAX_RANK;

/// Which operand a refusal names (`what` of [`Error::Layout`] and the other errors), made
/// into a `String` only when something is refused: a launch that passes formats nothing.
#[derive(Clone, Copy, Debug)]
pub(crate) enum What {
    /// Operand `i` of a candle op (`"operand {i}"`).
    Operand(usize),
    /// Parameter `i` of a [`crate::Launch`] (`"parameter {i}"`).
    Parameter(usize),
    /// Generic parameter `i` of a [`crate::Launch`] (`"generic parameter {i}"`).
    Generic(usize),
    /// Member `i` of a list (`"{list} {i}"`: the optimizers' `"parameter 3"`).
    Member(&'static str, usize),
}

impl fmt::Display for What {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::Operand(i) => write!(f, "operand {i}"),
            What::Parameter(i) => write!(f, "parameter {i}"),
            What::Generic(i) => write!(f, "generic parameter {i}"),
            What::Member(list, i) => write!(f, "{list} {i}"),
        }
    }
}

/// Shape, strides (in elements) and start offset of a tilekit tensor argument, inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct View {
    rank: usize,
    shape: [usize; MAX_RANK],
    strides: [usize; MAX_RANK],
    /// In elements, from the start of the storage.
    pub offset: usize,
}

impl View {
    /// A view of these axes (1 to [`MAX_RANK`]).
    fn new(shape: &[usize], strides: &[usize], offset: usize) -> Option<View> {
        let rank = shape.len();
        if !(1..=MAX_RANK).contains(&rank) || strides.len() != rank {
            return None;
        }
        let (mut s, mut st) = ([0; MAX_RANK], [0; MAX_RANK]);
        s[..rank].copy_from_slice(shape);
        st[..rank].copy_from_slice(strides);
        Some(View {
            rank,
            shape: s,
            strides: st,
            offset,
        })
    }

    /// A contiguous row-major view of `shape` from element 0 (an output).
    pub fn contiguous(op: &'static str, what: impl fmt::Display, shape: &[usize]) -> Result<View> {
        let rank = shape.len();
        if !(1..=MAX_RANK).contains(&rank) {
            let mut strides = vec![1; rank];
            for a in (0..rank.saturating_sub(1)).rev() {
                strides[a] = strides[a + 1] * shape[a + 1].max(1);
            }
            return Err(layout_error(op, what, shape, &strides));
        }
        let mut strides = [1; MAX_RANK];
        for a in (0..rank - 1).rev() {
            strides[a] = strides[a + 1] * shape[a + 1].max(1);
        }
        let strides = &strides[..rank];
        View::new(shape, strides, 0).ok_or_else(|| layout_error(op, what, shape, strides))
    }

    /// [`View::rows`] of a contiguous candle layout of `dims` (a new output), without
    /// building the layout.
    pub fn rows_of_contiguous(
        op: &'static str,
        what: impl fmt::Display,
        dims: &[usize],
    ) -> Result<View> {
        let Some((&cols, lead)) = dims.split_last() else {
            return Err(layout_error(op, what, dims, &[]));
        };
        let rows: usize = lead.iter().product();
        // A contiguous layout's leading axes always merge; the merged axis's stride is the
        // innermost leading axis of extent > 1's, `cols` (candle's contiguous strides do not
        // skip zero extents), else one row's `cols.max(1)`.
        let row_stride = if lead.iter().any(|&d| d != 1) {
            cols
        } else {
            cols.max(1)
        };
        View::new(&[rows, cols], &[row_stride, 1], 0)
            .ok_or_else(|| layout_error(op, what, &[rows, cols], &[row_stride, 1]))
    }

    /// A contiguous candle layout as one axis of all its elements from its start offset
    /// (any rank, a scalar included: an optimizer's parameter); a strided layout is
    /// refused.
    pub fn flat(op: &'static str, what: impl fmt::Display, layout: &Layout) -> Result<View> {
        if !layout.is_contiguous() {
            return Err(layout_error(op, what, layout.dims(), layout.stride()));
        }
        let n = layout.shape().elem_count();
        View::new(&[n], &[1], layout.start_offset())
            .ok_or_else(|| layout_error(op, what, layout.dims(), layout.stride()))
    }

    /// The candle layout as is (1 to [`MAX_RANK`] axes).
    pub fn of(op: &'static str, what: impl fmt::Display, layout: &Layout) -> Result<View> {
        View::new(layout.dims(), layout.stride(), layout.start_offset())
            .ok_or_else(|| layout_error(op, what, layout.dims(), layout.stride()))
    }

    /// The candle layout as a `[rows, cols]` matrix: `cols` the last axis, `rows` every
    /// other axis merged (a rank-1 tensor is one row). The leading axes must be mergeable
    /// without a copy (each one's stride the next one's times its extent, axes of extent 1
    /// aside); any last-axis stride and row stride is kept.
    pub fn rows(op: &'static str, what: impl fmt::Display, layout: &Layout) -> Result<View> {
        let (dims, strides) = (layout.dims(), layout.stride());
        let err = || layout_error(op, &what, dims, strides);
        let Some((&cols, lead)) = dims.split_last() else {
            return Err(err());
        };
        let col_stride = strides[dims.len() - 1];
        let rows: usize = lead.iter().product();
        // The stride of the merged axis: the innermost leading axis of extent > 1.
        let mut row_stride = None;
        let mut expect: Option<usize> = None;
        for (&d, &s) in lead.iter().zip(strides).rev() {
            if d == 1 {
                continue;
            }
            match expect {
                None => row_stride = Some(s),
                Some(e) if e == s => {}
                Some(_) => return Err(err()),
            }
            expect = Some(s * d);
        }
        let row_stride = row_stride.unwrap_or(cols.max(1) * col_stride.max(1));
        View::new(
            &[rows, cols],
            &[row_stride, col_stride],
            layout.start_offset(),
        )
        .ok_or_else(err)
    }

    /// A `[B, H, S, D]` candle layout as attention's `[B * H, S, D]` (the batch and head
    /// axes merged without a copy: see [`heads_stride`]); any other layout is refused.
    pub fn heads(op: &'static str, what: impl fmt::Display, layout: &Layout) -> Result<View> {
        let (dims, strides) = (layout.dims(), layout.stride());
        let err = || layout_error(op, &what, dims, strides);
        let z_stride = heads_stride(dims, strides).ok_or_else(err)?;
        View::new(
            &[dims[0] * dims[1], dims[2], dims[3]],
            &[z_stride, strides[2], strides[3]],
            layout.start_offset(),
        )
        .ok_or_else(err)
    }

    /// The extents.
    pub fn shape(&self) -> &[usize] {
        &self.shape[..self.rank]
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[usize] {
        &self.strides[..self.rank]
    }
}

/// The stride of the merged `B * H` axis of a rank-4 `[B, H, S, D]` layout, where the two
/// merge without a copy (`B`'s stride is `H`'s times `H`, or either extent is 1); `None`
/// for any other layout.
pub(crate) fn heads_stride(dims: &[usize], strides: &[usize]) -> Option<usize> {
    match (dims, strides) {
        ([_, 1, _, _], [sb, ..]) => Some(*sb),
        ([1, _, _, _], [_, sh, ..]) => Some(*sh),
        ([_, h, _, _], [sb, sh, _, _]) if *sb == sh * h => Some(*sh),
        _ => None,
    }
}

fn layout_error(
    op: &'static str,
    what: impl fmt::Display,
    shape: &[usize],
    strides: &[usize],
) -> Error {
    Error::Layout {
        op,
        what: what.to_string(),
        shape: shape.to_vec(),
        strides: strides.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Shape;

    fn layout(shape: &[usize], strides: &[usize], offset: usize) -> Layout {
        Layout::new(Shape::from(shape), strides.to_vec(), offset)
    }

    #[test]
    fn rows_merge_leading_axes() {
        let v = View::rows("t", "x", &layout(&[2, 3, 5], &[15, 5, 1], 7)).unwrap();
        assert_eq!(
            (v.shape(), v.strides(), v.offset),
            (&[6, 5][..], &[5, 1][..], 7)
        );
        // Padded rows (a narrow of the last axis) keep their stride.
        let v = View::rows("t", "x", &layout(&[2, 3, 5], &[24, 8, 1], 0)).unwrap();
        assert_eq!(v.strides(), &[8, 1]);
        // A transposed matrix: any strides on two axes.
        let v = View::rows("t", "x", &layout(&[4, 3], &[1, 4], 0)).unwrap();
        assert_eq!(v.strides(), &[1, 4]);
        // Axes of extent 1 do not matter; a vector is one row.
        let v = View::rows("t", "x", &layout(&[1, 3, 1, 5], &[99, 5, 7, 1], 0)).unwrap();
        assert_eq!((v.shape(), v.strides()), (&[3, 5][..], &[5, 1][..]));
        let v = View::rows("t", "x", &layout(&[5], &[1], 2)).unwrap();
        assert_eq!(v.shape(), &[1, 5]);
        // Leading axes that do not merge: a transposed batch.
        assert!(matches!(
            View::rows("t", "x", &layout(&[2, 3, 5], &[5, 10, 1], 0)),
            Err(Error::Layout { .. })
        ));
        assert!(View::rows("t", "x", &layout(&[], &[], 0)).is_err());
    }

    #[test]
    fn rows_of_contiguous_is_rows_of_a_contiguous_layout() {
        let shapes: [&[usize]; 12] = [
            &[],
            &[5],
            &[0],
            &[1, 5],
            &[3, 5],
            &[3, 0],
            &[0, 5],
            &[2, 3, 5],
            &[2, 1, 0],
            &[1, 1, 4],
            &[2, 3, 4, 5],
            &[1, 0, 1, 3],
        ];
        for dims in shapes {
            let want = View::rows("t", "x", &Layout::contiguous(dims));
            let got = View::rows_of_contiguous("t", "x", dims);
            match (want, got) {
                (Ok(w), Ok(g)) => assert_eq!(w, g, "{dims:?}"),
                (Err(w), Err(g)) => assert_eq!(w.to_string(), g.to_string(), "{dims:?}"),
                (w, g) => panic!("{dims:?}: {w:?} vs {g:?}"),
            }
        }
    }

    #[test]
    fn what_names_the_operand_only_when_refused() {
        let e = View::rows("t", What::Operand(2), &layout(&[], &[], 0)).unwrap_err();
        assert!(e.to_string().contains("operand 2"), "{e}");
        let e = View::contiguous("t", What::Parameter(1), &[1, 2, 3, 4, 5]).unwrap_err();
        assert!(
            matches!(&e, Error::Layout { what, strides, .. } if what == "parameter 1" && strides == &[120, 60, 20, 5, 1]),
            "{e:?}"
        );
        assert_eq!(What::Generic(0).to_string(), "generic parameter 0");
        assert_eq!(
            What::Member("gradient of parameter", 3).to_string(),
            "gradient of parameter 3"
        );
    }

    #[test]
    fn flat_views_are_contiguous_layouts_of_any_rank() {
        let v = View::flat("t", "p", &layout(&[2, 3, 4], &[12, 4, 1], 5)).unwrap();
        assert_eq!((v.shape(), v.strides(), v.offset), (&[24][..], &[1][..], 5));
        let v = View::flat("t", "p", &layout(&[], &[], 0)).unwrap();
        assert_eq!(v.shape(), &[1]);
        assert!(View::flat("t", "p", &layout(&[3, 2], &[1, 3], 0)).is_err());
    }

    #[test]
    fn heads_merge_batch_and_head_axes_where_no_copy_is_needed() {
        // Contiguous [2, 3, 5, 64]: Z = 6 rows of 5 x 64, stride 320.
        let l = layout(&[2, 3, 5, 64], &[960, 320, 64, 1], 7);
        let v = View::heads("t", "q", &l).unwrap();
        assert_eq!(
            (v.shape(), v.strides(), v.offset),
            (&[6, 5, 64][..], &[320, 64, 1][..], 7)
        );
        // [B, S, H, D] transposed to [B, H, S, D]: B and H do not merge (B > 1)...
        let t = layout(&[2, 3, 5, 64], &[960, 64, 192, 1], 0);
        assert!(View::heads("t", "q", &t).is_err());
        // ... unless B = 1 (the head stride serves) or H = 1 (the batch stride serves).
        let one = layout(&[1, 3, 5, 64], &[960, 64, 192, 1], 0);
        assert_eq!(
            View::heads("t", "q", &one).unwrap().strides(),
            &[64, 192, 1]
        );
        let h1 = layout(&[2, 1, 5, 64], &[640, 320, 64, 1], 0);
        assert_eq!(View::heads("t", "q", &h1).unwrap().strides(), &[640, 64, 1]);
        // Not rank 4.
        assert!(View::heads("t", "q", &layout(&[6, 5, 64], &[320, 64, 1], 0)).is_err());
    }

    #[test]
    fn views_as_is() {
        assert!(View::of("t", "x", &layout(&[2, 2, 2, 2, 2], &[16, 8, 4, 2, 1], 0)).is_err());
        let v = View::of("t", "x", &layout(&[2, 2, 2, 2], &[8, 4, 2, 1], 3)).unwrap();
        assert_eq!((v.shape(), v.offset), (&[2, 2, 2, 2][..], 3));
        let v = View::contiguous("t", "y", &[2, 3, 4]).unwrap();
        assert_eq!(v.strides(), &[12, 4, 1]);
    }
}
