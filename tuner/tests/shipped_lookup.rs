//! Launches find the shipped H200 entries through the cache key the runtime computes from
//! their arguments — including a kernel whose declared dimensions name no tensor axis
//! (`attention_varlen`: `B` and `SQ` are solved from `B1 = B + 1` and `TQ = B * SQ`).
//! Before `solve_dims`, such a launch had no key and ran its declared default (run 140).

use tilekit_codegen::{Access, Target};
use tilekit_ir::{Bindings, DType};
use tilekit_runtime::{ArgLayout, ConfigSource, DeviceInfo, LaunchQuery};
use tilekit_tuner::cache::{shipped, GpuId, TunedConfigs};

fn h200() -> GpuId {
    GpuId {
        name: "NVIDIA H200".into(),
        compute_capability: (9, 0),
        sm_count: 132,
    }
}

fn device(gpu: &GpuId) -> DeviceInfo {
    DeviceInfo {
        ordinal: 0,
        name: gpu.name.clone(),
        compute_capability: gpu.compute_capability,
        sm_count: gpu.sm_count,
        max_smem_optin: 232_448,
        driver_version: (13, 0),
        nvrtc_version: (13, 0),
        target: Target::Sm90a,
    }
}

fn tensor<'a>(shape: &'a [usize], strides: &'a [usize]) -> ArgLayout<'a> {
    ArgLayout {
        shape: Some(shape),
        strides: Some(strides),
        int: None,
    }
}

fn scalar(int: Option<i64>) -> ArgLayout<'static> {
    ArgLayout {
        shape: None,
        strides: None,
        int,
    }
}

/// The shipped candidates of `attention_varlen` (bf16, 32 query heads, `hk` key/value
/// heads, D = 128) over packed sequences of `lens` tokens, read through head-major views of
/// `[T, H, D]` storage.
fn varlen_candidates(src: &TunedConfigs, lens: &[usize], hk: usize) -> Vec<String> {
    let spec = &tilekit_kernels::attention_varlen::SPEC;
    let kernel = spec.kernel().unwrap();
    let (h, d) = (32usize, 128usize);
    let t: usize = lens.iter().sum();
    let view = [h, t, d];
    let view_strides = [d, h * d, 1];
    let kv_view = [hk, t, d];
    let kv_strides = [d, hk * d, 1];
    let lse = [h, t];
    let lse_strides = [t, 1];
    let cu = [lens.len() + 1];
    let cu_strides = [1];
    let max_q = *lens.iter().max().unwrap() as i64;
    // q, k, v, o, lse, cu_q, cu_k, max_seqlen_q, scale, causal.
    let args = vec![
        tensor(&view, &view_strides),
        tensor(&kv_view, &kv_strides),
        tensor(&kv_view, &kv_strides),
        tensor(&view, &view_strides),
        tensor(&lse, &lse_strides),
        tensor(&cu, &cu_strides),
        tensor(&cu, &cu_strides),
        scalar(Some(max_q)),
        scalar(None),
        scalar(None),
    ];
    assert_eq!(args.len(), kernel.params.len());
    let bindings = Bindings::single("T", DType::BF16);
    let dev = device(&h200());
    let q = LaunchQuery {
        spec,
        kernel,
        bindings: &bindings,
        args,
        device: Some(&dev),
        access: Access::ROWS,
    };
    src.candidates(&q).iter().map(ToString::to_string).collect()
}

#[test]
fn packed_batches_find_the_shipped_varlen_entry() {
    let (entries, rejected) = shipped::entries(
        tilekit_kernels::SHIPPED_TUNING,
        tilekit_kernels::SHIPPED_TUNING_NAME,
    );
    assert!(rejected.is_empty(), "{rejected:?}");
    let (src, _) = TunedConfigs::load(None, &entries, tilekit_kernels::ALL, h200());
    let want = ["BM=128,BN=128,D=128,WARPS=8,STAGES=2,SCHEDULE=pingpong"];
    // The tuned problem itself: 4 sequences of 4096.
    assert_eq!(varlen_candidates(&src, &[4096; 4], 32), want);
    // A ragged batch of 8 (mean 2304: SQ <= 4096, B <= 8): the entry tuned on 8 equal
    // sequences of 2304 (run 141), and with 8 key/value heads its own entry.
    let ragged = [4096, 1024, 3072, 512, 2048, 3584, 1536, 2560];
    assert_eq!(varlen_candidates(&src, &ragged, 32), want);
    assert_eq!(varlen_candidates(&src, &ragged, 8), want);
    // 5 sequences: `cu_q` holds 6 i64 (48 bytes, 16-byte aligned rows) where the tuned
    // problems' held 5 or 9 (8 bytes): the entry of the lower alignment class is taken.
    assert_eq!(varlen_candidates(&src, &[2304; 5], 32), want);
    // 16 sequences: B <= 16 has no entry.
    assert!(varlen_candidates(&src, &[1024; 16], 32).is_empty());
    // Short sequences: another bucket, no entry (the declared default runs).
    assert!(varlen_candidates(&src, &[256; 4], 32).is_empty());
}

/// Integer scalars join tuning keys only where they may change the work
/// (`tilekit_ir::scalar_use::shapes_work`): AdamW's `step` only enters its bias
/// corrections, so a step counter that moves on keeps the tuned entry; a repeat count (a
/// loop bound) and the heads of attention (indices) stay in the key.
#[test]
fn keys_carry_only_scalars_that_shape_the_work() {
    use tilekit_tuner::cache::int_scalars;
    let names = |spec: &tilekit::KernelSpec| -> Vec<String> {
        let k = spec.kernel().expect("kernel IR");
        int_scalars(k, |_| Some(7)).into_keys().collect()
    };
    assert!(names(&tilekit_kernels::adamw::SPEC).is_empty());
    assert_eq!(names(&tilekit_kernels::scale_chain::SPEC), ["repeats"]);
    let att = names(&tilekit_kernels::attention::SPEC);
    assert!(att.contains(&"heads".to_string()), "{att:?}");
    let ce = names(&tilekit_kernels::cross_entropy::SPEC);
    assert!(ce.contains(&"ignore_index".to_string()), "{ce:?}");
}
