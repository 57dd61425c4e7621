//! `tilekit tune --all --shard I/N`: a deterministic 1/N of the problems, so that N hosts
//! (a Slurm job array, a Kubernetes indexed Job) tune the whole set between them with no
//! overlap and no gap; `tilekit cache merge` of their N exports then holds every winner.

use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count` (0-based: Slurm's `$SLURM_ARRAY_TASK_ID` with `--array=0-3`,
/// Kubernetes' `$JOB_COMPLETION_INDEX`).
///
/// ```
/// use tilekit_tuner::cli::Shard;
/// let s: Shard = "1/3".parse().unwrap();
/// assert_eq!(s.take(0..7).collect::<Vec<_>>(), vec![1, 4]);
/// assert!("3/3".parse::<Shard>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: usize,
    /// How many shards.
    pub count: usize,
}

impl Shard {
    /// The items of this shard, in their order: every `count`-th item from `index` (a
    /// round robin, so shards get problems of every kernel rather than one kernel each).
    pub fn take<I: IntoIterator>(self, items: I) -> impl Iterator<Item = I::Item> {
        items
            .into_iter()
            .enumerate()
            .filter(move |(i, _)| i % self.count == self.index)
            .map(|(_, x)| x)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Why a `--shard` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a shard: write I/N with 0 <= I < N (e.g. 0/4 .. 3/4)")]
pub struct ShardParseError(String);

impl FromStr for Shard {
    type Err = ShardParseError;

    fn from_str(s: &str) -> Result<Shard, ShardParseError> {
        let err = || ShardParseError(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(err)?;
        let index: usize = i.trim().parse().map_err(|_| err())?;
        let count: usize = n.trim().parse().map_err(|_| err())?;
        if count == 0 || index >= count {
            return Err(err());
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_every_item_once_in_order() {
        for items in [0usize, 1, 5, 47] {
            for count in 1..=6 {
                let mut seen = Vec::new();
                for index in 0..count {
                    let part: Vec<usize> = Shard { index, count }.take(0..items).collect();
                    assert!(part.windows(2).all(|w| w[0] < w[1]), "order kept");
                    // Sizes differ by at most one.
                    assert!(part.len() >= items / count && part.len() <= items.div_ceil(count));
                    seen.extend(part);
                }
                seen.sort_unstable();
                assert_eq!(
                    seen,
                    (0..items).collect::<Vec<_>>(),
                    "{count} shards of {items}"
                );
            }
        }
    }

    #[test]
    fn bad_shards_are_refused_with_the_form_to_write() {
        for bad in ["", "1", "4/4", "0/0", "-1/3", "a/3", "1/b", "1/2/3"] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.to_string().contains("I/N"), "{bad}: {e}");
        }
        assert_eq!(
            " 2 / 5 ".trim().parse::<Shard>(),
            Ok(Shard { index: 2, count: 5 })
        );
        assert_eq!(
            "0/1".parse::<Shard>().map(|s| s.to_string()),
            Ok("0/1".into())
        );
    }
}
