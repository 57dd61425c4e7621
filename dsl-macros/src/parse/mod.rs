//! Parsing: the fn item and its attributes into plain data (no IR yet).

pub mod attrs;
pub mod index_sugar;
pub mod recover;
pub mod signature;
