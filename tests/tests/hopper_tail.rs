//! The split tail on the Hopper engine (`TAIL_SPLIT`, `HopperPlan::tail_split`,
//! `ops/hopper/tail.cuh`): which variants take it (the GEMM form with bf16/f16 rings, one
//! program per block, no clusters, the same trips in every program, a loop carrying only
//! its accumulator from zero), what their source and launch plan look like, the reasons
//! the others give, the tuner leaving out `TAIL_SPLIT = 4` where it would compile the
//! `TAIL_SPLIT = 1` variant again, and NVRTC compiling the split variants for sm_90a with
//! no serialized wgmma. The GPU side is `gpu_hopper.rs`
//! (`gpu_hopper_tail_split_exact_and_repeatable`).

use tilekit_codegen::engine::{engine, Engine, HopperPlan};
use tilekit_codegen::{variant_plan, variant_source, Access, Target};
use tilekit_ir::DType;
use tilekit_kernels::{matmul, matmul_bias_act};

#[path = "common/hopper_variant.rs"]
mod hopper_variant;
use hopper_variant::{c_misaligned, nvrtc_compiles, variant};

fn plan(spec: &tilekit::KernelSpec, c: &str, t: DType) -> HopperPlan {
    let k = spec.kernel().expect("kernel IR");
    match engine(k, &variant(k, c, t, Access::ROWS, Target::Sm90a)).expect("engine") {
        Engine::Hopper(p) => p,
        e => panic!("{c}: {e:?}"),
    }
}

fn refused(p: &HopperPlan, why: &str) -> bool {
    p.tail_split == 1 && p.tail_refused.as_deref().is_some_and(|w| w.contains(why))
}

#[test]
fn the_tail_splits_where_the_pieces_add_up() {
    for spec in [&matmul::SPEC, &matmul_bias_act::SPEC] {
        for c in [
            "BM=128,BN=256,WARPS=8,TAIL_SPLIT=4",
            "BM=128,BN=128,WARPS=8,TAIL_SPLIT=4",
        ] {
            let p = plan(spec, c, DType::BF16);
            assert_eq!((p.tail_split, p.tail_refused.as_deref()), (4, None), "{c}");
            assert_eq!(plan(spec, c, DType::F16).tail_split, 4, "{c} f16");
        }
    }
    // One consumer warpgroup with `SCHEDULE = cooperative`: one program per block, split.
    let sched = &tilekit_tests::hopper_kernels::gemm_scheduled::SPEC;
    let c = "BM=64,BN=256,WARPS=4,SCHEDULE=cooperative,TAIL_SPLIT=4";
    assert_eq!(plan(sched, c, DType::BF16).tail_split, 4);
    let m = &matmul::SPEC;
    // Not asked: whole tiles, no reason.
    let p = plan(m, "BM=128,BN=256,WARPS=8,TAIL_SPLIT=1", DType::BF16);
    assert_eq!((p.tail_split, p.tail_refused), (1, None));
    // GEMM ping-pong (two programs per block), clusters, TF32, program-dependent trips.
    assert!(refused(
        &plan(m, "BM=64,BN=256,WARPS=4,TAIL_SPLIT=4", DType::BF16),
        "ping-pong"
    ));
    assert!(refused(
        &plan(
            m,
            "BM=128,BN=256,WARPS=8,CLUSTER=2,TAIL_SPLIT=4",
            DType::BF16
        ),
        "CLUSTER"
    ));
    let tf32 = &tilekit_tests::hopper_kernels::user_matmul_tf32_bias::SPEC;
    assert!(refused(
        &plan(tf32, "BM=128,BN=256,WARPS=8,TAIL_SPLIT=4", DType::F32),
        "TF32"
    ));
    let prefix = &tilekit_tests::hopper_kernels::gemm_prefix::SPEC;
    assert!(refused(
        &plan(prefix, "BM=64,BN=256,WARPS=4,TAIL_SPLIT=4", DType::BF16),
        "same trips"
    ));
    // `--stage layouts` says which.
    let k = m.kernel().unwrap();
    let layouts = |c: &str| {
        let v = variant(k, c, DType::BF16, Access::ROWS, Target::Sm90a);
        tilekit_codegen::dump(k, Some(&v), tilekit_codegen::Stage::Layouts).unwrap()
    };
    let l = layouts("BM=128,BN=256,WARPS=8,TAIL_SPLIT=4");
    assert!(l.contains("split along K into up to 4 pieces"), "{l}");
    let l = layouts("BM=64,BN=256,WARPS=4,TAIL_SPLIT=4");
    assert!(
        l.contains("no split tail: TAIL_SPLIT splits tiles across blocks"),
        "{l}"
    );
}

#[test]
fn a_split_variant_runs_pieces_and_takes_the_workspace() {
    let spec = &matmul::SPEC;
    let k = spec.kernel().unwrap();
    let c = "BM=128,BN=128,WARPS=8,TAIL_SPLIT=4";
    let v = variant(k, c, DType::BF16, Access::ROWS, Target::Sm90a);
    let vp = variant_plan(k, &v).unwrap();
    assert_eq!((vp.tail_split, vp.persistent, vp.cluster), (4, true, 1));
    let src = variant_source(k, spec.cuda_template, &v).unwrap();
    for needle in [
        "#define TK_TAIL_SPLIT 4",
        "const tk::sm90::tail_args tk_tail)",
        "tk_state.tail = tk_tail;",
        "tk::sm90::turn_piece<tilekit_variant::TK_GROUP>(grid, tk_turn, tk_block, tk_state.piece)",
        "tk::sm90::piece_start(",
        "tk::sm90::piece_end(",
        "if (!tk::sm90::tail_reduce<TK_THREADS>(",
    ] {
        assert!(src.contains(needle), "no `{needle}`");
    }
    // The reduction comes before the epilogue's store.
    let reduce = src.find("tail_reduce<TK_THREADS>").unwrap();
    let store = src.find("tk::store_tile_staged").unwrap();
    assert!(reduce < store);
    let whole = variant(
        k,
        &c.replace("TAIL_SPLIT=4", "TAIL_SPLIT=1"),
        DType::BF16,
        Access::ROWS,
        Target::Sm90a,
    );
    let src1 = variant_source(k, spec.cuda_template, &whole).unwrap();
    assert!(!src1.contains("TK_TAIL_SPLIT") && !src1.contains("tail_args"));
    assert_eq!(variant_plan(k, &whole).unwrap().tail_split, 1);
    // Off the Hopper engine (sm_80): the plan says 1.
    let v = variant(
        k,
        "BM=128,BN=256,BK=32,WARPS=8,TAIL_SPLIT=4",
        DType::BF16,
        Access::ROWS,
        Target::Sm80,
    );
    assert_eq!(variant_plan(k, &v).unwrap().tail_split, 1);
}

/// The tuner leaves out `TAIL_SPLIT = 4` wherever it would compile the `TAIL_SPLIT = 1`
/// variant again, and keeps it where it applies.
#[test]
fn the_tuner_skips_a_split_that_changes_nothing() {
    use tilekit_tuner::variants::target_check;
    let k = matmul::SPEC.kernel().unwrap();
    let check = |c: &str, t: Target| {
        let v = variant(k, c, DType::BF16, Access::ROWS, t);
        target_check(k, &v.config, &v.bindings, t)
    };
    assert!(check("BM=128,BN=256,BK=64,WARPS=8,TAIL_SPLIT=4", Target::Sm90a).is_ok());
    let e = check("BM=64,BN=256,BK=64,WARPS=4,TAIL_SPLIT=4", Target::Sm90a).unwrap_err();
    assert!(e.contains("TAIL_SPLIT = 1 variant again"), "{e}");
    assert!(check(
        "BM=128,BN=128,BK=32,STAGES=3,WARPS=8,TAIL_SPLIT=4",
        Target::Sm80
    )
    .is_err());
}

/// NVRTC compiles the split variants (C aligned and not, with an epilogue) for sm_90a,
/// with no wgmma serialized by ptxas and no spills beyond their whole-tile twins'.
#[test]
fn nvrtc_compiles_the_split_variants() {
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    for (spec, allowed) in [(&matmul::SPEC, 0), (&matmul_bias_act::SPEC, 16)] {
        let k = spec.kernel().unwrap();
        for c in [
            "BM=128,BN=256,WARPS=8,TAIL_SPLIT=4",
            "BM=128,BN=128,WARPS=8,STAGES=5,TAIL_SPLIT=4",
        ] {
            nvrtc_compiles(
                spec,
                c,
                &[Access::ROWS, c_misaligned(k)],
                "#define TK_TAIL_SPLIT 4",
                allowed,
            );
        }
    }
}
