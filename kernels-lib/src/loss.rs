//! Host-side companions of [`cross_entropy`](crate::cross_entropy): the kernel writes
//! per-row losses and a gradient scaled by `grad_scale`; a reduction chooses that scale
//! and folds the per-row losses into one number.

/// How per-row cross-entropy losses become one loss (PyTorch's `reduction`).
///
/// ```
/// use tilekit_kernels::CrossEntropyReduction as R;
/// let labels = [3i64, -100, 0, 7];
/// let n = tilekit_kernels::count_valid_labels(&labels, -100, 10);
/// assert_eq!(n, 3);
/// assert_eq!(R::Mean.grad_scale(1.0, n), 1.0 / 3.0);
/// assert_eq!(R::Sum.grad_scale(2.0, n), 2.0);
/// assert_eq!(R::Mean.reduce(&[1.0, 0.0, 2.0, 3.0], n), 2.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrossEntropyReduction {
    /// The mean over rows whose label is not ignored (NaN when every row is ignored, as
    /// PyTorch).
    Mean,
    /// The sum over rows (ignored rows contribute 0).
    Sum,
}

impl CrossEntropyReduction {
    /// The `grad_scale` to pass to the kernel for an upstream gradient `dloss` of the
    /// reduced loss, with `valid_rows` rows not ignored.
    pub fn grad_scale(self, dloss: f32, valid_rows: usize) -> f32 {
        match self {
            CrossEntropyReduction::Mean => dloss / valid_rows as f32,
            CrossEntropyReduction::Sum => dloss,
        }
    }

    /// The reduced loss from the kernel's per-row losses (summed in f64).
    pub fn reduce(self, losses: &[f32], valid_rows: usize) -> f32 {
        let total: f64 = losses.iter().map(|l| f64::from(*l)).sum();
        match self {
            CrossEntropyReduction::Mean => (total / valid_rows as f64) as f32,
            CrossEntropyReduction::Sum => total as f32,
        }
    }
}

/// How many labels count for the loss: not `ignore_index` and inside `0..vocab` (the
/// kernel gives any other row loss 0 and a zero gradient).
pub fn count_valid_labels(labels: &[i64], ignore_index: i64, vocab: usize) -> usize {
    labels
        .iter()
        .filter(|&&l| l != ignore_index && l >= 0 && (l as u64) < vocab as u64)
        .count()
}
