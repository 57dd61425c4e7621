//! Clusters of two CTAs on the Hopper engine (`CLUSTER = 2`, `HopperPlan::cluster`,
//! `ops/hopper/cluster.cuh`): which variants take them (the GEMM form with bf16/f16 rings,
//! a 2-d grid, B's tile an even number of 128-byte panels, the same trips in every
//! program), what their source and launch plan look like, the reasons the others give,
//! the tuner leaving out `CLUSTER = 2` where it would compile the `CLUSTER = 1` variant
//! again, and NVRTC compiling the clustered variants for sm_90a with no serialized wgmma.
//! The GPU side is `gpu_hopper.rs` (`gpu_hopper_clusters_exact_bitwise`).

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

#[test]
fn cluster_of_two_where_the_pair_can_share_b() {
    let m = &matmul::SPEC;
    for c in [
        "BM=128,BN=256,WARPS=8,CLUSTER=2",
        "BM=64,BN=256,WARPS=4,CLUSTER=2",
        "BM=128,BN=128,WARPS=8,CLUSTER=2",
    ] {
        let p = plan(m, c, DType::BF16);
        assert_eq!((p.cluster, p.cluster_refused.as_deref()), (2, None), "{c}");
        assert_eq!(plan(m, c, DType::F16).cluster, 2, "{c} f16");
        assert_eq!(
            plan(&matmul_bias_act::SPEC, c, DType::BF16).cluster,
            2,
            "{c} epilogue"
        );
    }
    // The ping-pong schedule keeps its two programs in a cluster.
    assert_eq!(
        plan(m, "BM=64,BN=256,WARPS=4,CLUSTER=2", DType::BF16).programs,
        2
    );
    // Not asked: no cluster and no reason.
    let p = plan(m, "BM=128,BN=256,WARPS=8,CLUSTER=1", DType::BF16);
    assert_eq!((p.cluster, p.cluster_refused), (1, None));
    // B's tile of one 128-byte panel cannot be split in halves.
    let p = plan(m, "BM=128,BN=64,WARPS=8,CLUSTER=2", DType::BF16);
    assert_eq!(p.cluster, 1);
    assert!(
        p.cluster_refused
            .as_deref()
            .is_some_and(|w| w.contains("even number")),
        "{p:?}"
    );
    // TF32: the producer converts its own slots.
    let tf32 = &tilekit_tests::hopper_kernels::user_matmul_tf32_bias::SPEC;
    let p = plan(tf32, "BM=128,BN=256,WARPS=8,CLUSTER=2", DType::F32);
    assert_eq!(p.cluster, 1);
    assert!(
        p.cluster_refused
            .as_deref()
            .is_some_and(|w| w.contains("TF32")),
        "{p:?}"
    );
    // Trips that depend on the program: the pair would leave the ring out of step.
    let prefix = &tilekit_tests::hopper_kernels::gemm_prefix::SPEC;
    let p = plan(prefix, "BM=64,BN=256,WARPS=4,CLUSTER=2", DType::BF16);
    assert_eq!(p.cluster, 1);
    assert!(
        p.cluster_refused
            .as_deref()
            .is_some_and(|w| w.contains("same trips")),
        "{p:?}"
    );
    // `--stage layouts` says which.
    let k = m.kernel().unwrap();
    let v = variant(
        k,
        "BM=128,BN=64,WARPS=8,CLUSTER=2",
        DType::BF16,
        Access::ROWS,
        Target::Sm90a,
    );
    let layouts = tilekit_codegen::dump(k, Some(&v), tilekit_codegen::Stage::Layouts).unwrap();
    assert!(
        layouts.contains("no clusters: CLUSTER = 2 splits B's tile"),
        "{layouts}"
    );
    let v = variant(
        k,
        "BM=128,BN=256,WARPS=8,CLUSTER=2",
        DType::BF16,
        Access::ROWS,
        Target::Sm90a,
    );
    let layouts = tilekit_codegen::dump(k, Some(&v), tilekit_codegen::Stage::Layouts).unwrap();
    assert!(layouts.contains("in clusters of 2"), "{layouts}");
}

#[test]
fn a_clustered_variant_has_cluster_dims_multicast_and_the_phantom_guard() {
    let spec = &matmul::SPEC;
    let k = spec.kernel().unwrap();
    // Two consumer warpgroups, or two ping-pong programs of one: 384 threads either way.
    for c in [
        "BM=128,BN=256,WARPS=8,CLUSTER=2",
        "BM=64,BN=256,WARPS=4,CLUSTER=2",
    ] {
        let v = variant(k, c, DType::BF16, Access::ROWS, Target::Sm90a);
        let vp = variant_plan(k, &v).unwrap();
        assert_eq!((vp.cluster, vp.persistent), (2, true), "{c}");
        assert_eq!(vp.launch.threads, 384, "{c}");
        let src = variant_source(k, spec.cuda_template, &v).unwrap();
        for needle in [
            "#define TK_CLUSTER 2",
            "__cluster_dims__(2, 1, 1) tilekit_kernel(",
            "tk::sm90::tma_load_tile_multicast(tk_ring1",
            "if (tk::sm90::phantom_tile(grid, tk_block)) return;",
            "tk::program_id<2, 0, TK_GROUP, tk::sm90::CLUSTER>(grid, tk_block)",
            "tk::sm90::cluster_sync(); // the cluster leaves together",
        ] {
            assert!(src.contains(needle), "{c}: no `{needle}`");
        }
        // A only from this CTA: one plain TMA load of ring 0.
        assert!(src.contains("tk::sm90::tma_load_tile(tk_ring0"), "{c}");
        let one = variant(
            k,
            &c.replace("CLUSTER=2", "CLUSTER=1"),
            DType::BF16,
            Access::ROWS,
            Target::Sm90a,
        );
        let src1 = variant_source(k, spec.cuda_template, &one).unwrap();
        assert!(
            !src1.contains("TK_CLUSTER") && !src1.contains("__cluster_dims__"),
            "{c}"
        );
        assert_eq!(variant_plan(k, &one).unwrap().cluster, 1);
    }
    // Off the Hopper engine (sm_80): CLUSTER means nothing; the plan says 1.
    let v = variant(
        k,
        "BM=128,BN=256,WARPS=8,CLUSTER=2",
        DType::BF16,
        Access::ROWS,
        Target::Sm80,
    );
    assert_eq!(variant_plan(k, &v).unwrap().cluster, 1);
}

/// The tuner leaves out `CLUSTER = 2` wherever it would compile the `CLUSTER = 1` variant
/// again (another engine or target, or a refused cluster), and keeps it where it applies.
#[test]
fn the_tuner_skips_cluster_two_where_it_changes_nothing() {
    use tilekit_tuner::variants::target_check;
    let k = matmul::SPEC.kernel().unwrap();
    let check = |c: &str, t: Target| {
        let v = variant(k, c, DType::BF16, Access::ROWS, t);
        target_check(k, &v.config, &v.bindings, t)
    };
    assert!(check("BM=128,BN=256,BK=64,WARPS=8,CLUSTER=2", Target::Sm90a).is_ok());
    assert!(check("BM=128,BN=256,BK=64,WARPS=8,CLUSTER=1", Target::Sm90a).is_ok());
    let refused = check("BM=128,BN=64,BK=64,WARPS=8,CLUSTER=2", Target::Sm90a).unwrap_err();
    assert!(refused.contains("CLUSTER = 1 variant again"), "{refused}");
    assert!(check(
        "BM=128,BN=128,BK=32,STAGES=3,WARPS=8,CLUSTER=2",
        Target::Sm80
    )
    .is_err());
    assert!(check(
        "BM=128,BN=128,BK=32,STAGES=3,WARPS=8,CLUSTER=1",
        Target::Sm80
    )
    .is_ok());
}

/// NVRTC compiles the clustered variants (cooperative and ping-pong, C aligned and not) for
/// sm_90a, with no wgmma serialized by ptxas and no more spills than their unclustered
/// twins are allowed (`hopper_staged_store.rs`).
#[test]
fn nvrtc_compiles_the_clustered_variants() {
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    for (spec, allowed) in [(&matmul::SPEC, 0), (&matmul_bias_act::SPEC, 16)] {
        let k = spec.kernel().unwrap();
        for c in [
            "BM=128,BN=256,WARPS=8,CLUSTER=2",
            "BM=64,BN=256,WARPS=4,CLUSTER=2",
        ] {
            nvrtc_compiles(
                spec,
                c,
                &[Access::ROWS, c_misaligned(k)],
                "__cluster_dims__(2, 1, 1)",
                allowed,
            );
        }
    }
}

/// On the Hopper engine the library GEMM's code never reads `SMEM` (TMA's swizzle is the
/// ring's layout), so the tuner times one of the two `SMEM` values; on mma.sync (another
/// target, or operands the engine cannot take) `SMEM` is the ring's layout and both count.
#[test]
fn smem_changes_nothing_on_the_hopper_engine_and_everything_off_it() {
    use tilekit_codegen::smem_layout_unused;
    let k = matmul::SPEC.kernel().unwrap();
    let unused =
        |c: &str, access, t| smem_layout_unused(k, &variant(k, c, DType::BF16, access, t)).unwrap();
    let c = "BM=128,BN=256,BK=64,WARPS=8,SMEM=Padded";
    assert!(unused(c, Access::ROWS, Target::Sm90a));
    assert!(unused(
        &format!("{c},CLUSTER=2"),
        Access::ROWS,
        Target::Sm90a
    ));
    assert!(!unused(c, Access::GENERAL, Target::Sm90a));
    assert!(!unused(
        "BM=128,BN=128,BK=32,WARPS=8,SMEM=Padded",
        Access::ROWS,
        Target::Sm80
    ));
    // The two SMEM values' sources differ only in the template argument.
    let src = |smem: &str| {
        let v = variant(
            k,
            &format!("BM=128,BN=256,BK=64,WARPS=8,SMEM={smem}"),
            DType::BF16,
            Access::ROWS,
            Target::Sm90a,
        );
        variant_source(k, matmul::SPEC.cuda_template, &v).unwrap()
    };
    let (a, b) = (src("Padded"), src("Swizzle128"));
    let differing: Vec<_> = a.lines().zip(b.lines()).filter(|(x, y)| x != y).collect();
    assert!(
        differing
            .iter()
            .all(|(x, _)| x.starts_with("// Variant:") || x.starts_with("using tilekit_variant")),
        "{differing:?}"
    );
}
