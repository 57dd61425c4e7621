//! What `cache import` and `cache merge` decided for each entry of a file: added,
//! replaced, kept (and why) or refused, and the merge rule that keeps the faster value.

use super::{validate, Entry, Origin, Reject, Rejected, TunedValue};
use std::fmt;
use tilekit_runtime::KernelSpec;

/// A merge's decision between the stored value `old` and the file's valid entry `new`.
pub(crate) fn keep_faster(old: &[u8], new: &Entry, specs: &[&KernelSpec]) -> ImportAction {
    let old = match TunedValue::from_bytes(old) {
        Ok(v) => v,
        Err(e) => {
            return ImportAction::Replaced {
                why: format!("the stored entry is unreadable ({e})"),
            }
        }
    };
    let old_entry = Entry {
        key: new.key.clone(),
        value: old,
    };
    if let Err(r) = validate(&old_entry, specs) {
        return ImportAction::Replaced {
            why: format!("the stored entry is invalid ({r})"),
        };
    }
    match (old_entry.value.best_us, new.value.best_us) {
        (_, None) => ImportAction::Kept {
            why: "the file's entry has no time".into(),
        },
        (None, Some(n)) => ImportAction::Replaced {
            why: format!("the stored entry has no time; the file's took {n:.2} us"),
        },
        (Some(o), Some(n)) if n < o => ImportAction::Replaced {
            why: format!("faster: {n:.2} us against {o:.2} us"),
        },
        (Some(o), Some(n)) => ImportAction::Kept {
            why: format!("the stored entry is as fast or faster: {o:.2} us against {n:.2} us"),
        },
    }
}

/// What [`TuneCache::import`](super::TuneCache::import) did with one entry of the file.
#[derive(Clone, Debug, PartialEq)]
pub enum ImportAction {
    /// Stored: the imported layer had no entry under its key.
    Added,
    /// Stored over the imported layer's entry of the same key.
    Replaced {
        /// Why (`import replaces`, `faster: ..`, `the stored entry is invalid`).
        why: String,
    },
    /// Not stored: the imported layer's entry of the same key was kept.
    Kept {
        /// Why (the stored one is faster, the kernel is not known here, ...).
        why: String,
    },
    /// Not stored: the entry is wrong; nothing stored was touched.
    Refused(Reject),
}

impl ImportAction {
    /// True when the file's entry was written.
    pub fn stores(&self) -> bool {
        matches!(self, ImportAction::Added | ImportAction::Replaced { .. })
    }
}

/// One entry of an imported file and what became of it.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportOutcome {
    /// The entry's key, as far as it could be read (`#3 of FILE` for an unreadable one).
    pub key: String,
    /// What was done.
    pub action: ImportAction,
}

impl ImportOutcome {
    pub(crate) fn new(e: &Entry, action: ImportAction) -> ImportOutcome {
        ImportOutcome {
            key: e.key.to_string(),
            action,
        }
    }
}

impl fmt::Display for ImportOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.action {
            ImportAction::Added => write!(f, "added {}", self.key),
            ImportAction::Replaced { why } => write!(f, "replaced {}: {why}", self.key),
            ImportAction::Kept { why } => write!(f, "kept the stored {}: {why}", self.key),
            ImportAction::Refused(r) => write!(f, "refused {}: {r}", self.key),
        }
    }
}

/// What [`TuneCache::import`](super::TuneCache::import) did, entry by entry: the
/// unreadable entries first, then the others in the file's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportReport {
    /// One outcome per entry of the file.
    pub outcomes: Vec<ImportOutcome>,
}

impl ImportReport {
    pub(crate) fn push(&mut self, key: String, action: ImportAction) {
        self.outcomes.push(ImportOutcome { key, action });
    }

    /// Number of entries written (added or replacing).
    pub fn stored(&self) -> usize {
        self.outcomes.iter().filter(|o| o.action.stores()).count()
    }

    /// Entries not stored because the stored entry was kept.
    pub fn kept(&self) -> impl Iterator<Item = &ImportOutcome> {
        self.outcomes
            .iter()
            .filter(|o| matches!(o.action, ImportAction::Kept { .. }))
    }

    /// Entries refused as wrong, with the reason.
    pub fn refused(&self) -> impl Iterator<Item = Rejected> + '_ {
        self.outcomes.iter().filter_map(|o| match &o.action {
            ImportAction::Refused(r) => Some(Rejected {
                origin: Origin::Imported,
                key: o.key.clone(),
                reason: r.clone(),
            }),
            _ => None,
        })
    }
}
