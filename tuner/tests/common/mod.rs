//! What the cache tests share: a softmax key on an H100, tuned values, raw sled writes.
#![allow(dead_code)]

use std::path::Path;
use tilekit_ir::{Bindings, Config, DType};
use tilekit_runtime::KernelSpec;
use tilekit_tuner::cache::{CacheKey, GpuId, Origin, ShapeBucket, Timing, TuneCache, TunedValue};

pub fn softmax() -> &'static KernelSpec {
    &tilekit_kernels::softmax::SPEC
}

pub fn h100() -> GpuId {
    GpuId {
        name: "NVIDIA H100 80GB HBM3".into(),
        compute_capability: (9, 0),
        sm_count: 132,
    }
}

pub fn bf16() -> Bindings {
    Bindings::single("T", DType::BF16)
}

pub fn key_for(spec: &KernelSpec, shape: &str) -> CacheKey {
    let k = spec.kernel().unwrap();
    let dims = tilekit_ir::cost::parse_shape(k, shape).unwrap();
    let bucket = ShapeBucket::of(k, &dims, &bf16()).unwrap();
    CacheKey::new(h100(), spec, bf16(), bucket, Default::default())
}

/// A distinct softmax key per `i` (only the bucket differs).
pub fn key_n(i: usize) -> CacheKey {
    let mut k = key_for(softmax(), "4096x4096");
    k.shape.dims.insert("M".into(), i as u64);
    k
}

pub fn value(config: &str, best: f64, origin: Origin) -> TunedValue {
    let mut v = TunedValue::new(&Config::parse(config).unwrap());
    v.best_us = Some(best);
    v.timings = vec![Timing {
        config: v.config.clone(),
        samples_us: vec![best, best * 1.01],
        error: None,
    }];
    v.provenance.origin = origin;
    v.provenance.driver = Some("13.0".into());
    v
}

pub fn cache_in(dir: &Path) -> TuneCache {
    TuneCache::at(dir.join("tune.sled"))
}

pub fn raw_insert(cache: &TuneCache, tree: &str, k: &[u8], v: &[u8]) {
    let db = sled::open(cache.path()).unwrap();
    db.open_tree(tree).unwrap().insert(k, v).unwrap();
    db.flush().unwrap();
}
