//! Compile-fail tests: each `ui/*.rs` kernel must fail to compile with exactly the
//! messages and spans in its `.stderr` (regenerate with `TRYBUILD=overwrite`).

#[test]
fn ui() {
    // `cargo xtask test` builds this binary with clippy-driver as the workspace's rustc
    // wrapper (xtask/src/lint.rs), and cargo passes that environment on to the tests.
    // trybuild's cargo would then lint each case with `-D warnings`, adding clippy's
    // messages to the expected rustc ones: the cases compile with rustc alone, as a
    // user's crate does. (The only test in this binary: no other thread reads the
    // environment.)
    std::env::remove_var("RUSTC_WORKSPACE_WRAPPER");
    std::env::remove_var("CLIPPY_ARGS");
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
}
