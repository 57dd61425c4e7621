//! The Hopper engine's staged accumulator store (`tk::store_tile_staged`, planned as the
//! scratch region `PartKey::StagedStore` by the shared-memory pass): the GEMM form's
//! `store_tile` after the pipelined loop goes through one or two 2 KB shared-memory slices
//! per warp, so that C is written whole — by TMA where C is 16-byte aligned (its tensor map,
//! `VariantPlan::tma_store`, passed third), else along its rows even where C is not 16-byte
//! aligned; the chained form (attention) and the mma.sync engine keep the direct store; a
//! plan whose slices would not fit the target drops them and keeps the Hopper engine. NVRTC
//! compiles the staged variants for aligned and misaligned C, bf16 and TF32's f32, with
//! wgmma asynchronous and no spills.

use tilekit_codegen::engine::{engine, Engine};
use tilekit_codegen::{prelude_headers, variant_plan, variant_source, Access, Target, Variant};
use tilekit_ir::{Bindings, DType};
use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};

#[path = "common/hopper_variant.rs"]
mod hopper_variant;
use hopper_variant::{c_misaligned, variant};

const STAGED: &str = "tk::store_tile_staged<";

/// Bytes of one warp's staging slice (`tk::STAGED_SLICE`: 16 rows x 128 bytes).
const SLICE: u64 = 2048;

/// GEMM-form cases (kernel, configuration, element type).
fn gemm_cases() -> Vec<(&'static tilekit::KernelSpec, &'static str, DType)> {
    vec![
        (
            &tilekit_kernels::matmul::SPEC,
            "BM=128,BN=256,BK=64,STAGES=4,WARPS=8",
            DType::BF16,
        ),
        (
            &tilekit_kernels::matmul::SPEC,
            "BM=64,BN=256,BK=64,STAGES=4,WARPS=4",
            DType::F16,
        ),
        (
            &tilekit_kernels::matmul_bias_act::SPEC,
            "BM=64,BN=256,BK=64,STAGES=4,WARPS=4",
            DType::BF16,
        ),
        (
            &tilekit_tests::hopper_kernels::user_gemm_bias_gelu::SPEC,
            "BM=128,BN=256,BK=64,STAGES=4,WARPS=8",
            DType::BF16,
        ),
    ]
}

fn tf32_variant(c: &str, access: Access) -> (&'static tilekit::KernelSpec, Variant) {
    let spec = &tilekit_tests::hopper_kernels::user_matmul_tf32_bias::SPEC;
    let k = spec.kernel().expect("kernel IR");
    let mut v = variant(k, c, DType::F32, access, Target::Sm90a);
    v.bindings = Bindings::default();
    (spec, v)
}

#[test]
fn gemm_epilogues_on_the_hopper_engine_stage_their_store() {
    for (spec, c, t) in gemm_cases() {
        let k = spec.kernel().expect("kernel IR");
        // C aligned, and C misaligned (parameter 2 `General`): both stage.
        for access in [Access::ROWS, c_misaligned(k)] {
            let v = variant(k, c, t, access, Target::Sm90a);
            assert!(matches!(engine(k, &v).expect("engine"), Engine::Hopper(_)));
            let src = variant_source(k, spec.cuda_template, &v).expect("source");
            assert!(
                src.contains(STAGED),
                "{} {c} {access}: direct store\n{src}",
                k.name
            );
            // The slices are a scratch region of the plan, inside the launch's bytes.
            let plan = variant_plan(k, &v).expect("plan");
            let warps = v.config.int("WARPS").expect("WARPS") as u64;
            assert!(
                plan.launch.smem_bytes >= warps * SLICE + 1024,
                "{} {c}",
                k.name
            );
            assert!(
                src.contains("staged per warp"),
                "{} {c}: the plan's comment",
                k.name
            );
            // C aligned: its tensor map follows the rings' (the TMA path); misaligned: none.
            let c_param = k.params.iter().position(|p| p.name == "c").unwrap() as u32;
            if access == Access::ROWS {
                let m = plan.tma_store.expect("a store map for an aligned C");
                assert_eq!(
                    (m.param, m.rank, m.box_rows),
                    (c_param, 2, 16),
                    "{} {c}",
                    k.name
                );
                assert_eq!(m.box_cols as usize * t.size_bytes(), 128);
                assert!(src.contains("tensor_map tk_map2") && src.contains(", tk_map2);"));
            } else {
                assert!(
                    plan.tma_store.is_none(),
                    "{} {c}: a store map for a misaligned C",
                    k.name
                );
                assert!(!src.contains("tk_map2") && src.contains(", nullptr);"));
            }
        }
        // The same configuration on sm_80 keeps the mma.sync engine and the direct store.
        let v80 = variant(k, c, t, Access::ROWS, Target::Sm80);
        let src = variant_source(k, spec.cuda_template, &v80).expect("source");
        assert!(!src.contains(STAGED), "{} {c}: staged on sm_80", k.name);
    }
    let (spec, v) = tf32_variant("BM=128,BN=256,BK=32,STAGES=3,WARPS=8", Access::ROWS);
    let src = variant_source(spec.kernel().unwrap(), spec.cuda_template, &v).expect("source");
    assert!(src.contains(STAGED), "tf32: direct store");
}

#[test]
fn the_chained_form_keeps_the_direct_store() {
    let spec = &tilekit_kernels::attention::SPEC;
    let k = spec.kernel().expect("kernel IR");
    let v = variant(
        k,
        "BM=128,BN=128,D=128,WARPS=8,STAGES=2",
        DType::BF16,
        Access::ROWS,
        Target::Sm90a,
    );
    assert!(matches!(engine(k, &v).expect("engine"), Engine::Hopper(_)));
    let src = variant_source(k, spec.cuda_template, &v).expect("source");
    assert!(src.contains("tk::sm90::"), "not the Hopper engine");
    assert!(!src.contains(STAGED), "attention staged its output");
}

/// Every Hopper-engine variant of `matmul`'s sm_90a space (bf16, aligned) either stages its
/// store or could not fit one warp-group's slices beside the rest; none loses the Hopper
/// engine to them (its pipeline is in the source whenever the plan without slices fits).
#[test]
fn staging_never_costs_a_variant_the_hopper_engine() {
    let spec = &tilekit_kernels::matmul::SPEC;
    let k = spec.kernel().expect("kernel IR");
    let limit = Target::Sm90a.limits().max_dynamic_smem;
    let (mut staged, mut direct) = (0, 0);
    for config in k.space.enumerate() {
        if config.for_codegen() != config {
            continue;
        }
        let v = Variant {
            config,
            bindings: Bindings::single("T", DType::BF16),
            access: Access::ROWS,
            target: Target::Sm90a,
        };
        if !matches!(engine(k, &v), Ok(Engine::Hopper(_))) {
            continue;
        }
        let Ok(src) = variant_source(k, spec.cuda_template, &v) else {
            continue;
        };
        let plan = variant_plan(k, &v).expect("plan");
        if !src.contains("tk::sm90::ws_pipeline") {
            // Over the limit even without slices: the ring alone.
            assert!(
                plan.launch.smem_bytes > limit || plan.tma.is_none(),
                "{}",
                v.config
            );
            continue;
        }
        if src.contains(STAGED) {
            staged += 1;
        } else {
            direct += 1;
            assert!(
                plan.launch.smem_bytes + 4 * SLICE + 1024 > limit,
                "{}: {} bytes, the slices would have fit",
                v.config,
                plan.launch.smem_bytes
            );
        }
    }
    eprintln!("matmul sm_90a bf16: {staged} staged, {direct} direct");
    assert!(staged > 0);
}

#[test]
fn staged_variants_compile_with_wgmma_asynchronous_and_no_spills() {
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let opts = CompileOptions::new("sm_90a").expect("options");
    let mut problems = Vec::new();
    let mut check = |what: String, spec: &tilekit::KernelSpec, v: &Variant, allowed: u32| {
        let k = spec.kernel().expect("kernel IR");
        let src = variant_source(k, spec.cuda_template, v).expect("source");
        assert!(src.contains(STAGED), "{what}");
        let cubin = compile_cubin(&src, "staged.cu", prelude_headers(), &opts)
            .unwrap_or_else(|e| panic!("{what}:\n{e}"));
        let log = cubin.log.to_lowercase();
        let warned = ["serialized", "c7510", "c7515", "c7507"]
            .iter()
            .any(|w| log.contains(w));
        if warned || cubin.spill_bytes.is_none_or(|b| b > allowed) {
            problems.push(format!(
                "{what}: {:?} bytes spilled\n{}",
                cubin.spill_bytes, cubin.log
            ));
        }
        eprintln!(
            "{what}: {:.2} s NVRTC, {:?} registers",
            cubin.seconds, cubin.registers
        );
    };
    for (spec, c, t) in gemm_cases() {
        let k = spec.kernel().expect("kernel IR");
        for access in [Access::ROWS, c_misaligned(k)] {
            let v = variant(k, c, t, access, Target::Sm90a);
            let allowed = if k.name == "matmul" { 0 } else { 16 };
            check(format!("{} {c} {t:?} {access}", k.name), spec, &v, allowed);
        }
    }
    let (spec, v) = tf32_variant("BM=128,BN=256,BK=32,STAGES=3,WARPS=8", Access::ROWS);
    check("tf32 128x256".into(), spec, &v, 0);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
