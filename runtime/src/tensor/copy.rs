//! [`Tensor::copy_from`]: one tensor's elements into another of the same shape, in place,
//! on the device (no round trip through the host).

use super::{Tensor, TensorError};
use crate::element::Element;

impl<T: Element, const R: usize> Tensor<T, R> {
    /// Copies `src`'s elements into this tensor, in place: same shape, both contiguous
    /// row-major, same backend, device and stream (tensors of one runtime). On a device the
    /// copy is ordered on that stream after everything issued before it (no wait, no host
    /// copy); on the CPU backend it is a slice copy. Nothing is written when it fails.
    ///
    /// ```
    /// use tilekit_runtime::{Runtime, Tensor2, TensorError};
    /// let rt = Runtime::cpu();
    /// let src = Tensor2::from_vec(&rt, vec![1.0f32, 2.0, 3.0, 4.0], [2, 2]).unwrap();
    /// let mut dst = Tensor2::<f32>::zeros(&rt, [2, 2]).unwrap();
    /// dst.copy_from(&src).unwrap();
    /// assert_eq!(dst.to_vec().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    /// let other = Tensor2::<f32>::zeros(&rt, [4, 1]).unwrap();
    /// assert!(matches!(dst.copy_from(&other), Err(TensorError::CopyShape { .. })));
    /// ```
    pub fn copy_from(&mut self, src: &Tensor<T, R>) -> Result<(), TensorError> {
        if self.geom.shape != src.geom.shape {
            return Err(TensorError::CopyShape {
                dst: self.geom.shape.to_vec(),
                src: src.geom.shape.to_vec(),
            });
        }
        for g in [&self.geom, &src.geom] {
            if !g.is_contiguous() {
                return Err(TensorError::NotContiguous {
                    shape: g.shape.to_vec(),
                    strides: g.strides.to_vec(),
                });
            }
        }
        let n = self.geom.numel();
        if n == 0 {
            return Ok(());
        }
        let (to, from) = (self.geom.offset, src.geom.offset);
        self.storage.copy_range(to, &src.storage, from, n)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Runtime, Tensor1, Tensor2, TensorError};

    #[test]
    fn copies_in_place_and_refuses_what_it_cannot_copy() {
        let rt = Runtime::cpu();
        // A contiguous window (offset 3 of 10 elements) into a window at offset 2 of 8.
        let src = Tensor1::from_vec_strided(&rt, (0..10).map(|i| i as f32).collect(), [4], [1], 3)
            .unwrap();
        let mut dst = Tensor1::from_vec_strided(&rt, vec![-1.0f32; 8], [4], [1], 2).unwrap();
        dst.copy_from(&src).unwrap();
        assert_eq!(dst.to_vec().unwrap(), vec![3.0, 4.0, 5.0, 6.0]);
        assert_eq!(
            dst.try_clone().unwrap().to_vec().unwrap(),
            vec![3.0, 4.0, 5.0, 6.0]
        );
        // Shapes must agree; a strided tensor is refused; nothing is written either way.
        let short = Tensor1::<f32>::zeros(&rt, [3]).unwrap();
        assert!(matches!(
            dst.copy_from(&short),
            Err(TensorError::CopyShape { .. })
        ));
        let strided =
            Tensor2::from_vec_strided(&rt, (0..6).map(|i| i as f32).collect(), [3, 2], [1, 3], 0)
                .unwrap();
        let mut t = Tensor2::<f32>::full(&rt, [3, 2], 7.0).unwrap();
        assert!(matches!(
            t.copy_from(&strided),
            Err(TensorError::NotContiguous { .. })
        ));
        assert_eq!(t.to_vec().unwrap(), vec![7.0; 6]);
        assert_eq!(dst.to_vec().unwrap(), vec![3.0, 4.0, 5.0, 6.0]);
        // Empty tensors copy nothing.
        let mut e = Tensor1::<f32>::zeros(&rt, [0]).unwrap();
        e.copy_from(&Tensor1::<f32>::zeros(&rt, [0]).unwrap())
            .unwrap();
    }
}
