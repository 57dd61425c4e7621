//! [`Loc`]: where an instruction or a declaration came from in the kernel's source (a leaf
//! the ops, the space and the diagnostics all name).

use serde::{Deserialize, Serialize};

/// Where an instruction came from: a span index of the front end (for diagnostics) and the
/// source line (for the `// file.rs:LINE` comments in generated code). Not part of the spec hash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Loc {
    /// Front-end span index (0 = none).
    pub span: u32,
    /// 1-based source line (0 = unknown).
    pub line: u32,
}
