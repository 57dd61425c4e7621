//! Lowering: parsed attributes and the fn body into a `tilekit_ir::Kernel`.

pub mod body;
pub mod helpers;
pub mod host;
pub mod kernel;
pub mod relations;

/// The hidden method that `parse::index_sugar` rewrites a multi-axis index to
/// (`x[a..b, c..d]` becomes `x.__tk_index(a..b, c..d)`), lowered as a sub-tile.
pub const INDEX_METHOD: &str = "__tk_index";
