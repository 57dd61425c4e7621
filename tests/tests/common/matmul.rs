//! Shared by the GPU tests of `matmul` (`gpu_matmul.rs`, `gpu_matmul_cols.rs`): the device,
//! small-integer inputs that keep every sum exact, bitwise comparison, and the
//! configurations that cover the kernel's space. Included with `#[path]`.

#![allow(dead_code)] // each test binary uses a subset

use tilekit::prelude::*;
use tilekit::{Config, Element};
use tilekit_tests::support::Rng;

pub fn gpu() -> Runtime {
    match Runtime::cuda(0) {
        Ok(rt) => rt,
        Err(e) => panic!("cannot open CUDA device 0: {e}"),
    }
}

pub fn cfg(s: &str) -> Config {
    Config::parse(s).unwrap_or_else(|e| panic!("bad config {s}: {e}"))
}

/// Integers in -2..=2 (exact in every float type).
pub fn small_ints<T: Element>(r: &mut Rng, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| T::from_f64((r.next_u64() % 5) as f64 - 2.0))
        .collect()
}

pub fn bits<T: Element>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

pub fn assert_bitwise<T: Element>(what: &str, got: &[T], want: &[T]) {
    let (g, w) = (bits(got), bits(want));
    if g != w {
        let bad: Vec<String> = got
            .iter()
            .zip(want)
            .enumerate()
            .filter(|(_, (a, b))| a.to_f64().to_bits() != b.to_f64().to_bits())
            .take(20)
            .map(|(i, (a, b))| format!("  [{i}] got {} want {}", a.to_f64(), b.to_f64()))
            .collect();
        panic!("{what}: results differ bitwise:\n{}", bad.join("\n"));
    }
}

/// Configurations covering every SMEM layout, STAGES 2..5, BK 32/64, WARPS 4/8 and the
/// three tile sizes.
pub fn covering() -> Vec<Config> {
    [
        "BM=128,BN=256,BK=32,STAGES=4,WARPS=8,SMEM=Swizzle128",
        "BM=128,BN=128,BK=64,STAGES=3,WARPS=4,SMEM=Padded",
        "BM=64,BN=64,BK=32,STAGES=2,WARPS=4,SMEM=Padded",
        "BM=256,BN=128,BK=32,STAGES=5,WARPS=8,SMEM=Swizzle128",
        "BM=64,BN=128,BK=64,STAGES=2,WARPS=8,SMEM=Padded",
        "BM=128,BN=64,BK=32,STAGES=3,WARPS=4,SMEM=Swizzle128",
    ]
    .iter()
    .map(|s| cfg(s))
    .collect()
}

/// The elements of a buffer `all` for which `in_view(index)` holds, in order; every other
/// element must still be `sentinel` (bitwise): a write outside the view fails.
pub fn inside_view<T: Element>(
    what: &str,
    all: &[T],
    sentinel: T,
    in_view: impl Fn(usize) -> bool,
) -> Vec<T> {
    let mut inside = Vec::new();
    for (i, v) in all.iter().enumerate() {
        if in_view(i) {
            inside.push(*v);
        } else {
            assert_eq!(
                v.to_f64().to_bits(),
                sentinel.to_f64().to_bits(),
                "{what}: element {i} outside the view changed"
            );
        }
    }
    inside
}
