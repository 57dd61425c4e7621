//! Pairwise (2-way) covering subsets of a constrained product space.
//!
//! CI cannot compile every variant of a large space; it compiles a subset in which every
//! pair of factor values that occurs in *some* valid point occurs in at least one chosen
//! point. Element types and targets are factors like any tuning parameter, so they do not
//! multiply the count.

use std::collections::HashSet;

/// Greedy pairwise cover of the valid points among `radices` (factor `k` takes values
/// `0..radices[k]`). `valid` filters points. Returns chosen points as index vectors; every
/// value pair that appears in a valid point appears in a chosen one.
///
/// ```
/// // 3 binary factors, all points valid: 4 points cover every pair (of 8 in the product).
/// let cover = tilekit_ir::pairwise_cover(&[2, 2, 2], |_| true);
/// assert!(cover.len() <= 6 && cover.len() >= 4);
/// ```
pub fn pairwise_cover(radices: &[usize], valid: impl Fn(&[usize]) -> bool) -> Vec<Vec<usize>> {
    let total: usize = radices.iter().product();
    let mut points = Vec::new();
    for mut n in 0..total {
        let mut idx = vec![0; radices.len()];
        for (k, r) in radices.iter().enumerate().rev() {
            idx[k] = n % r;
            n /= r;
        }
        if valid(&idx) {
            points.push(idx);
        }
    }
    let pairs_of = |p: &[usize]| -> Vec<(usize, usize, usize, usize)> {
        let mut v = Vec::new();
        for i in 0..p.len() {
            for j in i + 1..p.len() {
                v.push((i, p[i], j, p[j]));
            }
        }
        v
    };
    let mut uncovered: HashSet<(usize, usize, usize, usize)> =
        points.iter().flat_map(|p| pairs_of(p)).collect();
    let mut chosen = Vec::new();
    if radices.len() < 2 {
        // Every value alone: one point per distinct value of the single factor.
        let mut seen = HashSet::new();
        for p in points {
            if seen.insert(p.clone()) {
                chosen.push(p);
            }
        }
        return chosen;
    }
    while !uncovered.is_empty() {
        let best = points
            .iter()
            .max_by_key(|p| pairs_of(p).iter().filter(|q| uncovered.contains(q)).count())
            .cloned();
        let Some(best) = best else { break };
        let gained: Vec<_> = pairs_of(&best)
            .into_iter()
            .filter(|q| uncovered.contains(q))
            .collect();
        if gained.is_empty() {
            break;
        }
        for q in gained {
            uncovered.remove(&q);
        }
        chosen.push(best);
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_every_valid_pair() {
        let radices = [3, 3, 2, 3, 2];
        let valid = |p: &[usize]| !(p[0] == 2 && p[1] == 2);
        let cover = pairwise_cover(&radices, valid);
        let total: usize = radices.iter().product();
        assert!(cover.len() < total / 4, "cover has {} points", cover.len());
        for p in &cover {
            assert!(valid(p));
        }
        // Every pair in a valid point is covered.
        for a in 0..3 {
            for b in 0..3 {
                if a == 2 && b == 2 {
                    continue;
                }
                assert!(cover.iter().any(|p| p[0] == a && p[1] == b));
            }
        }
        for i in 0..radices.len() {
            for j in i + 1..radices.len() {
                for vi in 0..radices[i] {
                    for vj in 0..radices[j] {
                        let exists = (0..total).any(|mut n| {
                            let mut idx = vec![0; radices.len()];
                            for (k, r) in radices.iter().enumerate().rev() {
                                idx[k] = n % r;
                                n /= r;
                            }
                            valid(&idx) && idx[i] == vi && idx[j] == vj
                        });
                        let covered = cover.iter().any(|p| p[i] == vi && p[j] == vj);
                        assert_eq!(exists, covered, "pair ({i}={vi}, {j}={vj})");
                    }
                }
            }
        }
    }
}
