//! Compile-fail tests: each `ui/*.rs` kernel must fail to compile with exactly the
//! messages and spans in its `.stderr` (regenerate with `TRYBUILD=overwrite`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
}
