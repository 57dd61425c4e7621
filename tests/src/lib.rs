//! Integration tests of tilekit live in `tests/`: `ui.rs` (compile-fail cases under `ui/`),
//! `cpu_kernels.rs` (every library kernel on the CPU backend against plain Rust
//! references) and `nvrtc_variants.rs` (every kernel variant, or a pairwise covering
//! subset, compiled by NVRTC for sm_80 and sm_90a).
