//! [`Variant`]: one point to compile (a leaf: the engine choice reads it below the
//! printer, which `variant_source` drives).

use crate::access::Access;
use crate::target::Target;
use tilekit_ir::{Bindings, Config};

/// One point to compile: a configuration of the kernel's space, bindings of its generics,
/// the access class of each tensor (see [`crate::access`] and [`crate::abi`]), and the
/// target.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    /// Tuning values; must be a point of the kernel's declared space.
    pub config: Config,
    /// Concrete types of the generics (f32, f16 or bf16 each).
    pub bindings: Bindings,
    /// The access class assumed of each tensor: [`Access::ROWS`] (16-byte aligned bases,
    /// unit last strides and 16-byte aligned rows), [`Access::GENERAL`] (anything), or
    /// `Rows` with some dot operands `Cols` ([`Access::with_cols`]).
    pub access: Access,
    /// Compilation target.
    pub target: Target,
}
