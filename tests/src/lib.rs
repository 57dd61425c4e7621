//! Integration tests of tilekit live in `tests/`: `ui.rs` (compile-fail cases under `ui/`),
//! `cpu_kernels.rs` (every library kernel on the CPU backend against plain Rust
//! references) and `nvrtc_variants.rs` (every kernel variant, or a pairwise covering
//! subset, compiled by NVRTC for sm_80 and sm_90a).

// No `unwrap()` or `expect()` outside tests: errors are values.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod support {
    //! Shared by the integration tests.

    use std::sync::atomic::{AtomicU64, Ordering};
    use tilekit::Element;

    static SEED_COUNTER: AtomicU64 = AtomicU64::new(0);

    /// A generator with a fresh seed per call, derived from `TILEKIT_TEST_SEED` (or the
    /// clock); the seed is printed with `what` so a failing run can be reproduced.
    pub fn seeded_rng(what: &str) -> Rng {
        let base = std::env::var("TILEKIT_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            });
        let seed = base
            ^ SEED_COUNTER
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0x9e37);
        eprintln!("{what}: seed {seed} (TILEKIT_TEST_SEED={base} reproduces this run)");
        Rng(seed)
    }

    /// splitmix64: a small deterministic generator; tests print their seed so a failure
    /// can be reproduced with `TILEKIT_TEST_SEED`.
    ///
    /// ```
    /// let mut r = tilekit_tests::support::Rng(7);
    /// let v: Vec<f32> = r.vec(4, 1.0);
    /// assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
    /// ```
    pub struct Rng(pub u64);

    impl Rng {
        /// The next 64 random bits.
        pub fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        /// Uniform in [-1, 1).
        pub fn uniform(&mut self) -> f64 {
            (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }

        /// `n` values uniform in [-scale, scale), rounded to `T`.
        pub fn vec<T: Element>(&mut self, n: usize, scale: f64) -> Vec<T> {
            (0..n)
                .map(|_| T::from_f64(self.uniform() * scale))
                .collect()
        }
    }
}
