//! GEMM ping-pong on the Hopper engine (`HopperPlan::programs`): which variants run two
//! programs per block — one consumer warpgroup (`WARPS = 4`), the same trips in every
//! program, no `SCHEDULE = cooperative`, nothing but the ring shared between the programs
//! (`lowered::hopper_lowering` falls back to one) — and what their launch looks like. The
//! GPU side is `gpu_hopper.rs`.

use tilekit_codegen::engine::{engine, Engine};
use tilekit_codegen::{variant_plan, variant_source, Access, Target};
use tilekit_ir::DType;

#[path = "common/hopper_variant.rs"]
mod hopper_variant;
use hopper_variant::variant;

/// GEMM ping-pong (two programs per block) only where it is safe and wanted: `WARPS = 4`,
/// unless the kernel asks `SCHEDULE = cooperative` or its loop's trips depend on the program.
#[test]
fn gemm_ping_pong_needs_one_warpgroup_uniform_trips_and_no_cooperative_schedule() {
    use tilekit_tests::hopper_kernels::{gemm_prefix, gemm_scheduled};
    let programs = |spec: &tilekit::KernelSpec, c: &str| {
        let k = spec.kernel().expect("kernel IR");
        let v = variant(k, c, DType::BF16, Access::ROWS, Target::Sm90a);
        match engine(k, &v).expect("engine") {
            Engine::Hopper(p) => {
                let plan = variant_plan(k, &v).expect("plan");
                assert_eq!(
                    plan.launch.threads,
                    128 * p.programs * p.consumers + 128,
                    "{c}"
                );
                p.programs
            }
            e => panic!("{c}: {e:?}"),
        }
    };
    let s = &gemm_scheduled::SPEC;
    assert_eq!(programs(s, "BM=64,BN=256,WARPS=4,SCHEDULE=pingpong"), 2);
    assert_eq!(programs(s, "BM=64,BN=256,WARPS=4,SCHEDULE=cooperative"), 1);
    assert_eq!(programs(s, "BM=128,BN=256,WARPS=8,SCHEDULE=pingpong"), 1);
    assert_eq!(programs(&gemm_prefix::SPEC, "BM=64,BN=256,WARPS=4"), 1);
    // An epilogue whose slices read a shared-memory copy outside the scratch region: the
    // engine offers ping-pong, the lowering keeps one program (the copy would be shared).
    let k = tilekit_tests::hopper_kernels::gemm_swiglu_halves::SPEC
        .kernel()
        .expect("kernel IR");
    let v = variant(
        k,
        "BM=64,BN=128,WARPS=4",
        DType::BF16,
        Access::ROWS,
        Target::Sm90a,
    );
    match engine(k, &v).expect("engine") {
        Engine::Hopper(p) => assert_eq!(p.programs, 2, "the engine's offer"),
        e => panic!("{e:?}"),
    }
    let layouts =
        tilekit_codegen::dump(k, Some(&v), tilekit_codegen::Stage::Layouts).expect("layouts");
    assert!(layouts.contains("engine (sm_90a): Hopper"), "{layouts}");
    assert!(!layouts.contains("ping-pong"), "{layouts}");
    let plan = variant_plan(k, &v).expect("plan");
    assert_eq!(plan.launch.threads, 256, "{plan:?}");
    let src = variant_source(
        k,
        tilekit_tests::hopper_kernels::gemm_swiglu_halves::SPEC.cuda_template,
        &v,
    )
    .expect("source");
    assert!(!src.contains("TK_GEMM_PINGPONG"), "{src}");
}
