//! Where a tensor's elements are in its storage: [`Geometry`] (shape, strides in elements,
//! offset), the checks every constructor and view runs, and the view transformations
//! (permute, narrow, reshape, as_strided) as pure functions of a geometry and the storage's
//! length. No element is touched here.

use crate::tensor::error::TensorError;

/// Shape, strides (in elements) and offset of a tensor or view of rank `R`.
///
/// Invariant (kept by every constructor and transformation): the rank is 1 to
/// [`MAX_RANK`], the
/// element count and every address fit in 63 bits, and every index of the view is inside
/// the storage it was checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry<const R: usize> {
    pub shape: [usize; R],
    pub strides: [usize; R],
    pub offset: usize,
}

/// Row-major strides of `shape` (axes of extent 0 count as 1, so strides stay non-zero).
pub(crate) fn row_major<const R: usize>(shape: &[usize; R]) -> Result<[usize; R], TensorError> {
    let mut strides = [1usize; R];
    let mut acc = 1usize;
    for a in (0..R).rev() {
        strides[a] = acc;
        acc = acc
            .checked_mul(shape[a].max(1))
            .ok_or_else(|| TensorError::Overflow {
                shape: shape.to_vec(),
            })?;
    }
    Ok(strides)
}

/// The highest rank of a tensor or view (`Tensor4`: `[B, S, H, D]` data).
pub const MAX_RANK: usize = 4;

/// Checks rank and extents; returns the number of elements (at most `i64::MAX`).
pub(crate) fn check_shape(shape: &[usize]) -> Result<usize, TensorError> {
    if !(1..=MAX_RANK).contains(&shape.len()) {
        return Err(TensorError::Rank { rank: shape.len() });
    }
    let overflow = || TensorError::Overflow {
        shape: shape.to_vec(),
    };
    // Every extent must fit even when another is zero (strides are products of extents).
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d.max(1)))
        .filter(|&n| i64::try_from(n).is_ok())
        .ok_or_else(overflow)?;
    Ok(shape.iter().product())
}

/// The largest storage index a view addresses, or `None` for an empty view.
pub(crate) fn reach(
    shape: &[usize],
    strides: &[usize],
    offset: usize,
) -> Result<Option<usize>, TensorError> {
    if shape.contains(&0) {
        return Ok(None);
    }
    let overflow = || TensorError::Overflow {
        shape: shape.to_vec(),
    };
    let mut last = offset;
    for (d, s) in shape.iter().zip(strides) {
        let r = (d - 1).checked_mul(*s).ok_or_else(overflow)?;
        last = last.checked_add(r).ok_or_else(overflow)?;
    }
    if i64::try_from(last).is_err() {
        return Err(overflow());
    }
    Ok(Some(last))
}

impl<const R: usize> Geometry<R> {
    /// Evaluated by every constructor: a tensor of rank 0 or above 4 is a compile error
    /// where it is named (`Tensor::<f32, 5>::zeros`), not a run-time one.
    pub(crate) const RANK_SUPPORTED: () = assert!(
        R >= 1 && R <= MAX_RANK,
        "tilekit tensors have rank 1 to 4: merge axes with a reshape (a contiguous [A, B, S, H, D] is an [A * B, S, H, D] tensor)"
    );

    /// A contiguous row-major geometry at offset 0.
    pub fn row_major(shape: [usize; R]) -> Result<Self, TensorError> {
        let () = Self::RANK_SUPPORTED;
        check_shape(&shape)?;
        Ok(Geometry {
            shape,
            strides: row_major(&shape)?,
            offset: 0,
        })
    }

    /// A strided geometry, checked to address only elements below `len`.
    pub fn strided(
        shape: [usize; R],
        strides: [usize; R],
        offset: usize,
        len: usize,
    ) -> Result<Self, TensorError> {
        let () = Self::RANK_SUPPORTED;
        check_shape(&shape)?;
        if let Some(last) = reach(&shape, &strides, offset)? {
            if last >= len {
                return Err(TensorError::ViewOutOfBounds {
                    shape: shape.to_vec(),
                    strides: strides.to_vec(),
                    offset,
                    last,
                    len,
                });
            }
        }
        Ok(Geometry {
            shape,
            strides,
            offset,
        })
    }

    /// The largest storage index addressed (`None` when empty).
    pub fn last(&self) -> Option<usize> {
        // Checked when the geometry was made.
        reach(&self.shape, &self.strides, self.offset)
            .ok()
            .flatten()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// The storage index of `idx` (which must be inside the shape).
    pub fn address(&self, idx: [usize; R]) -> usize {
        self.offset
            + idx
                .iter()
                .zip(&self.strides)
                .map(|(i, s)| i * s)
                .sum::<usize>()
    }

    /// Row-major without gaps (axes of extent 1 may have any stride).
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1usize;
        for a in (0..R).rev() {
            if self.shape[a] != 1 && self.strides[a] != expected {
                return false;
            }
            expected = expected.saturating_mul(self.shape[a]);
        }
        true
    }

    fn check_axis(axis: usize) -> Result<(), TensorError> {
        if axis < R {
            Ok(())
        } else {
            Err(TensorError::Axis { axis, rank: R })
        }
    }

    /// Axes reordered: axis `a` of the result is axis `axes[a]` of `self`.
    pub fn permute(&self, axes: [usize; R]) -> Result<Self, TensorError> {
        let mut seen = [false; R];
        for &a in &axes {
            if a >= R || std::mem::replace(&mut seen[a], true) {
                return Err(TensorError::Permutation {
                    axes: axes.to_vec(),
                });
            }
        }
        Ok(Geometry {
            shape: axes.map(|a| self.shape[a]),
            strides: axes.map(|a| self.strides[a]),
            offset: self.offset,
        })
    }

    /// Indices `start..start + len` of `axis`.
    pub fn narrow(&self, axis: usize, start: usize, len: usize) -> Result<Self, TensorError> {
        Self::check_axis(axis)?;
        let extent = self.shape[axis];
        if start.checked_add(len).is_none_or(|end| end > extent) {
            return Err(TensorError::Narrow {
                axis,
                start,
                len,
                extent,
            });
        }
        let mut g = *self;
        g.shape[axis] = len;
        // An empty result keeps the offset (it addresses nothing).
        if len > 0 {
            g.offset += start * self.strides[axis];
        }
        Ok(g)
    }

    /// The same elements in row-major order under another shape. The view must be
    /// contiguous (a transposed or narrowed view is not; copy it first).
    pub fn reshape<const S: usize>(&self, shape: [usize; S]) -> Result<Geometry<S>, TensorError> {
        let () = Geometry::<S>::RANK_SUPPORTED;
        let n = check_shape(&shape)?;
        if n != self.numel() {
            return Err(TensorError::Reshape {
                from: self.shape.to_vec(),
                to: shape.to_vec(),
            });
        }
        if !self.is_contiguous() {
            return Err(TensorError::NotContiguous {
                shape: self.shape.to_vec(),
                strides: self.strides.to_vec(),
            });
        }
        Ok(Geometry {
            shape,
            strides: row_major(&shape)?,
            offset: self.offset,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transformations_keep_addresses() {
        let g = Geometry::row_major([4, 6]).unwrap();
        let t = g.permute([1, 0]).unwrap();
        assert_eq!((t.shape, t.strides), ([6, 4], [1, 6]));
        assert_eq!(t.address([5, 3]), g.address([3, 5]));
        let n = g.narrow(1, 2, 3).unwrap();
        assert_eq!((n.shape, n.offset), ([4, 3], 2));
        assert_eq!(n.address([1, 0]), g.address([1, 2]));
        assert!(!n.is_contiguous());
        let r = g.narrow(0, 1, 2).unwrap().reshape([3, 4]).unwrap();
        assert_eq!((r.shape, r.strides, r.offset), ([3, 4], [4, 1], 6));
        assert_eq!(g.narrow(0, 4, 0).unwrap().numel(), 0);
    }

    #[test]
    fn bad_transformations_are_typed_errors() {
        let g = Geometry::row_major([4, 6]).unwrap();
        assert_eq!(
            g.permute([0, 0]),
            Err(TensorError::Permutation { axes: vec![0, 0] })
        );
        assert_eq!(
            g.narrow(2, 0, 1),
            Err(TensorError::Axis { axis: 2, rank: 2 })
        );
        assert!(matches!(
            g.narrow(1, 4, 3),
            Err(TensorError::Narrow { extent: 6, .. })
        ));
        assert!(matches!(
            g.narrow(1, usize::MAX, 2),
            Err(TensorError::Narrow { .. })
        ));
        assert!(matches!(
            g.reshape([5, 5]),
            Err(TensorError::Reshape { .. })
        ));
        assert!(matches!(
            g.permute([1, 0]).unwrap().reshape([24]),
            Err(TensorError::NotContiguous { .. })
        ));
        assert!(matches!(
            Geometry::strided([3, 3], [3, 1], 1, 9),
            Err(TensorError::ViewOutOfBounds {
                last: 9,
                len: 9,
                ..
            })
        ));
    }
}
