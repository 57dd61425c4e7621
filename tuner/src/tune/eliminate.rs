//! The search policy as pure functions over timing tables, so it is tested without a GPU:
//! adaptive elimination (drop a candidate slower than `factor` x the leader after the first
//! samples, keeping at least `keep_at_least`), the choice of finalists, and the pick from
//! an interleaved re-timing.

use serde::{Deserialize, Serialize};

/// How hard the search works.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// Untimed launches before a candidate's first samples.
    pub warmup: usize,
    /// Samples every candidate gets before elimination.
    pub first_samples: usize,
    /// A candidate whose median exceeds `factor` x the leader's is dropped.
    pub factor: f64,
    /// Never drop below this many candidates.
    pub keep_at_least: usize,
    /// Samples a surviving candidate has after the second round.
    pub full_samples: usize,
    /// Candidates re-timed interleaved at the end.
    pub finalists: usize,
    /// Rounds of the interleaved re-timing.
    pub rounds: usize,
    /// Time every candidate fully (no elimination).
    pub exhaustive: bool,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            warmup: 2,
            first_samples: 3,
            factor: 1.5,
            keep_at_least: 2,
            full_samples: 10,
            finalists: 4,
            rounds: 15,
            exhaustive: false,
        }
    }
}

/// The median of samples (`None` if empty or any is not finite).
///
/// ```
/// use tilekit_tuner::tune::eliminate::median;
/// assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
/// assert_eq!(median(&[1.0, 2.0, 3.0, 4.0]), Some(2.5));
/// assert_eq!(median(&[]), None);
/// ```
pub fn median(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() || samples.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    })
}

/// Indices of candidates that survive elimination: every measured candidate within
/// `factor` x the best median, and at least the `keep_at_least` fastest. Failed candidates
/// (`None`) never survive. Order: fastest first.
///
/// ```
/// use tilekit_tuner::tune::eliminate::survivors;
/// let t = vec![Some(vec![1.0, 1.0, 1.0]), Some(vec![3.0; 3]), None, Some(vec![1.4; 3])];
/// assert_eq!(survivors(&t, 1.5, 2), vec![0, 3]);
/// assert_eq!(survivors(&t, 1.5, 3), vec![0, 3, 1]);
/// ```
pub fn survivors(samples: &[Option<Vec<f64>>], factor: f64, keep_at_least: usize) -> Vec<usize> {
    let ranked = ranking(samples);
    let Some(&(_, best)) = ranked.first() else {
        return Vec::new();
    };
    ranked
        .iter()
        .enumerate()
        .filter(|(rank, (_, m))| *m <= factor * best || *rank < keep_at_least)
        .map(|(_, (i, _))| *i)
        .collect()
}

/// Measured candidates by median, fastest first: `(index, median)`.
pub fn ranking(samples: &[Option<Vec<f64>>]) -> Vec<(usize, f64)> {
    let mut v: Vec<(usize, f64)> = samples
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, median(s.as_deref()?)?)))
        .collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    v
}

/// The `n` fastest measured candidates, fastest first.
pub fn finalists(samples: &[Option<Vec<f64>>], n: usize) -> Vec<usize> {
    ranking(samples)
        .into_iter()
        .take(n)
        .map(|(i, _)| i)
        .collect()
}

/// The entries of an interleaved re-timing, lowest median first (ties: the earlier entry;
/// an entry with no finite median is left out): the order the correctness gate checks them.
///
/// ```
/// use tilekit_tuner::tune::eliminate::by_median;
/// assert_eq!(by_median(&[vec![2.0, 2.1], vec![1.9, 1.95], vec![]]), vec![1, 0]);
/// ```
pub fn by_median(interleaved: &[Vec<f64>]) -> Vec<usize> {
    let t: Vec<Option<Vec<f64>>> = interleaved.iter().map(|v| Some(v.clone())).collect();
    ranking(&t).into_iter().map(|(i, _)| i).collect()
}

/// The winner of an interleaved re-timing: the lowest median (ties: the earlier entry).
///
/// ```
/// use tilekit_tuner::tune::eliminate::pick;
/// assert_eq!(pick(&[vec![2.0, 2.1, 2.0], vec![1.9, 2.5, 1.95]]), Some(1));
/// assert_eq!(pick(&[]), None);
/// ```
pub fn pick(interleaved: &[Vec<f64>]) -> Option<usize> {
    by_median(interleaved).first().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[&[f64]]) -> Vec<Option<Vec<f64>>> {
        rows.iter()
            .map(|r| if r.is_empty() { None } else { Some(r.to_vec()) })
            .collect()
    }

    /// A recorded table from a softmax-like sweep: most configurations are far from the
    /// leader after three samples and are dropped; the near ones stay.
    #[test]
    fn drops_slow_candidates_after_three_samples() {
        let t = table(&[
            &[0.190, 0.188, 0.191],
            &[0.410, 0.405, 0.409],
            &[0.201, 0.199, 0.200],
            &[],
            &[0.290, 0.300, 0.284],
            &[0.260, 0.262, 0.999],
        ]);
        assert_eq!(survivors(&t, 1.5, 2), vec![0, 2, 5]);
        assert_eq!(survivors(&t, 1.2, 2), vec![0, 2]);
    }

    #[test]
    fn keeps_at_least_two_even_when_one_dominates() {
        let t = table(&[&[1.0, 1.0, 1.0], &[10.0, 10.0, 10.0], &[20.0, 20.0, 20.0]]);
        assert_eq!(survivors(&t, 1.5, 2), vec![0, 1]);
    }

    #[test]
    fn nothing_measured_nothing_survives() {
        assert!(survivors(&table(&[&[], &[]]), 1.5, 2).is_empty());
        assert!(finalists(&table(&[&[]]), 4).is_empty());
    }

    #[test]
    fn a_non_finite_sample_disqualifies() {
        let t = table(&[&[1.0, f64::NAN, 1.0], &[2.0, 2.0, 2.0]]);
        assert_eq!(survivors(&t, 1.5, 1), vec![1]);
    }

    #[test]
    fn median_resists_one_outlier() {
        let t = table(&[&[1.0, 1.0, 9.0], &[1.1, 1.1, 1.1]]);
        assert_eq!(finalists(&t, 1), vec![0]);
    }

    #[test]
    fn interleaved_pick_uses_medians() {
        let w = pick(&[vec![1.00, 1.30, 1.01, 1.02], vec![1.02, 1.02, 1.03, 0.90]]);
        assert_eq!(w, Some(0));
    }
}
