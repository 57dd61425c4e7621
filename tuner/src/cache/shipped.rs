//! The shipped layer: tuned results that come with the kernel library
//! (`tilekit_kernels::SHIPPED_TUNING`, an export file embedded at build time). Read-only:
//! the runtime never writes it; every entry is validated like any other before use.

use super::store::parse_export;
use super::{Entry, Origin, Rejected};
use std::path::Path;

/// The shipped entries (each marked `shipped`), and any that cannot be read.
///
/// ```
/// let (entries, unreadable) = tilekit_tuner::cache::shipped::entries();
/// assert!(unreadable.is_empty());
/// assert!(entries.iter().all(|e| e.value.provenance.origin == tilekit_tuner::cache::Origin::Shipped));
/// ```
pub fn entries() -> (Vec<Entry>, Vec<Rejected>) {
    let name = Path::new("tilekit-kernels/tuned/h100.json");
    match parse_export(tilekit_kernels::SHIPPED_TUNING, name) {
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
