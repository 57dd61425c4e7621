//! `tilekit tune --all --devices all|0,2,3`: the CUDA devices of this host that tune at
//! once, one worker each (see [`crate::tune::pool`]).

use std::fmt;
use std::str::FromStr;
use tilekit_runtime::{Runtime, RuntimeError};

/// Which devices tune.
///
/// ```
/// use tilekit_tuner::cli::DeviceList;
/// assert_eq!("all".parse::<DeviceList>(), Ok(DeviceList::All));
/// assert_eq!("0,2,3".parse::<DeviceList>(), Ok(DeviceList::Ordinals(vec![0, 2, 3])));
/// assert!("1,1".parse::<DeviceList>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceList {
    /// Every device this process sees (`CUDA_VISIBLE_DEVICES` applies).
    All,
    /// These ordinals, each once, in this order.
    Ordinals(Vec<usize>),
}

impl fmt::Display for DeviceList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceList::All => f.write_str("all"),
            DeviceList::Ordinals(o) => {
                let list: Vec<String> = o.iter().map(usize::to_string).collect();
                f.write_str(&list.join(","))
            }
        }
    }
}

/// Why a `--devices` value was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a device list: write `all`, or CUDA ordinals separated by commas, each once \
     (e.g. 0,2,3)"
)]
pub struct DeviceListParseError(String);

impl FromStr for DeviceList {
    type Err = DeviceListParseError;

    fn from_str(s: &str) -> Result<DeviceList, DeviceListParseError> {
        let err = || DeviceListParseError(s.to_string());
        if s.trim() == "all" {
            return Ok(DeviceList::All);
        }
        let mut ordinals = Vec::new();
        for part in s.split(',') {
            let o: usize = part.trim().parse().map_err(|_| err())?;
            if ordinals.contains(&o) {
                return Err(err());
            }
            ordinals.push(o);
        }
        Ok(DeviceList::Ordinals(ordinals))
    }
}

/// Why the devices could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenDevicesError {
    /// `all`, and not even device 0 opened.
    #[error("no CUDA device: {0}")]
    None(RuntimeError),
    /// A device of the list did not open.
    #[error("CUDA device {ordinal}: {source}")]
    Open {
        /// Its ordinal.
        ordinal: usize,
        /// Why.
        source: RuntimeError,
    },
}

impl DeviceList {
    /// A runtime on each device, in the list's order (`all`: ordinals from 0 until the first
    /// that does not exist).
    pub fn open(&self) -> Result<Vec<Runtime>, OpenDevicesError> {
        match self {
            DeviceList::Ordinals(list) => list
                .iter()
                .map(|&ordinal| {
                    Runtime::cuda(ordinal)
                        .map_err(|source| OpenDevicesError::Open { ordinal, source })
                })
                .collect(),
            DeviceList::All => {
                let mut out = Vec::new();
                loop {
                    let ordinal = out.len();
                    match Runtime::cuda(ordinal) {
                        Ok(rt) => out.push(rt),
                        Err(RuntimeError::NoDevice { .. }) if ordinal > 0 => return Ok(out),
                        Err(e) if ordinal == 0 => return Err(OpenDevicesError::None(e)),
                        Err(source) => return Err(OpenDevicesError::Open { ordinal, source }),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_print_back() {
        for (text, list) in [
            ("all", DeviceList::All),
            (" all ", DeviceList::All),
            ("0", DeviceList::Ordinals(vec![0])),
            ("3, 1,0", DeviceList::Ordinals(vec![3, 1, 0])),
        ] {
            assert_eq!(text.parse::<DeviceList>(), Ok(list.clone()), "{text}");
            assert_eq!(list.to_string().parse::<DeviceList>(), Ok(list));
        }
    }

    #[test]
    fn bad_lists_are_refused_with_the_form_to_write() {
        for bad in ["", ",", "0,", "a", "-1", "0,0", "1,2,1", "All", "0;1"] {
            let e = bad.parse::<DeviceList>().unwrap_err();
            assert!(e.to_string().contains("each once"), "{bad}: {e}");
        }
    }

    #[test]
    fn devices_that_do_not_exist_are_a_typed_error() {
        // Ordinal 9999 exists on no host; without a GPU, device 0 fails the same way.
        match DeviceList::Ordinals(vec![9999]).open() {
            Err(OpenDevicesError::Open { ordinal: 9999, .. }) => {}
            other => panic!("{:?}", other.map(|r| r.len())),
        }
    }
}
