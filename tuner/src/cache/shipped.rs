//! The shipped layer: tuned results that come with a kernel library (for tilekit's own,
//! `tilekit_kernels::SHIPPED_TUNING`, an export file embedded at build time). Read-only:
//! the runtime never writes it; every entry is validated like any other before use.

use super::store::parse_export;
use super::{Entry, Origin, Rejected};
use std::path::Path;

/// The entries of the export file `text` (each marked `shipped`), and any that cannot be
/// read; `name` names the file in reports.
///
/// ```
/// let (entries, unreadable) = tilekit_tuner::cache::shipped::entries(
///     tilekit_kernels::SHIPPED_TUNING,
///     tilekit_kernels::SHIPPED_TUNING_NAME,
/// );
/// assert!(unreadable.is_empty());
/// assert!(entries.iter().all(|e| e.value.provenance.origin == tilekit_tuner::cache::Origin::Shipped));
/// ```
pub fn entries(text: &str, name: &str) -> (Vec<Entry>, Vec<Rejected>) {
    let name = Path::new(name);
    match parse_export(text, name) {
        Ok((mut entries, rejected)) => {
            for e in &mut entries {
                e.value.provenance.origin = Origin::Shipped;
            }
            (entries, rejected)
        }
        Err(e) => (
            Vec::new(),
            vec![Rejected {
                origin: Origin::Shipped,
                key: name.display().to_string(),
                reason: super::Reject::Unreadable(e.to_string()),
            }],
        ),
    }
}
