//! What a command line knows: its kernels, the shipped tuning layer that comes with them,
//! and the problems `tune --all` tunes. One per process ([`install`] by `cli_main`).

use crate::cache::{shipped, Entry, Rejected};
use std::sync::OnceLock;
use tilekit_runtime::KernelSpec;

/// The kernels a command line serves, with their optional shipped tuning layer and
/// representative problems.
///
/// ```
/// use tilekit_tuner::cli::Catalog;
/// # static SPEC: tilekit_runtime::KernelSpec = tilekit_runtime::KernelSpec::new("k", "{}", "", "", 0);
/// let c = Catalog::new(&[&SPEC]).with_representative(&[("k", "1024", "f32")]);
/// assert_eq!(c.kernels().len(), 1);
/// assert_eq!(c.representative().len(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct Catalog {
    kernels: Vec<&'static KernelSpec>,
    shipped: Option<(&'static str, &'static str)>,
    representative: Vec<(&'static str, &'static str, &'static str)>,
}

impl Catalog {
    /// The kernels, nothing shipped, no representative problems.
    pub fn new(kernels: &[&'static KernelSpec]) -> Catalog {
        Catalog {
            kernels: kernels.to_vec(),
            shipped: None,
            representative: Vec::new(),
        }
    }

    /// With a shipped tuning layer: an export file's text (`tilekit cache export`) and the
    /// name it is reported under.
    pub fn with_shipped(mut self, name: &'static str, export: &'static str) -> Catalog {
        self.shipped = Some((name, export));
        self
    }

    /// With the problems `tune --all` tunes: `(kernel, shape, element type)`, as `tune
    /// --kernel K --shape S --dtype D` would take them.
    pub fn with_representative(
        mut self,
        problems: &[(&'static str, &'static str, &'static str)],
    ) -> Catalog {
        self.representative = problems.to_vec();
        self
    }

    /// The kernels.
    pub fn kernels(&self) -> &[&'static KernelSpec] {
        &self.kernels
    }

    /// The problems of `tune --all`.
    pub fn representative(&self) -> &[(&'static str, &'static str, &'static str)] {
        &self.representative
    }

    /// The shipped layer's entries (none without one) and any that cannot be read.
    pub fn shipped_entries(&self) -> (Vec<Entry>, Vec<Rejected>) {
        match self.shipped {
            Some((name, text)) => shipped::entries(text, name),
            None => (Vec::new(), Vec::new()),
        }
    }
}

static CATALOG: OnceLock<Catalog> = OnceLock::new();

/// Makes `c` this process's catalog (the first one installed stays) and returns it.
pub(super) fn install(c: Catalog) -> &'static Catalog {
    CATALOG.get_or_init(|| c)
}

/// This process's catalog (empty before `cli_main` installs one).
pub(crate) fn catalog() -> &'static Catalog {
    CATALOG.get_or_init(|| Catalog::new(&[]))
}
