//! Variant enumeration with access classes: the kernels' column-major operands, every valid
//! access combination in the full set, and each one's pairs in the covering subset.

use std::collections::BTreeSet;
use tilekit_codegen::{Access, Target};
use tilekit_tuner::{covering_variants, kernel_accesses, valid_variants};

const TARGETS: [Target; 2] = [Target::Sm80, Target::Sm90a];

#[test]
fn matmul_operands_may_be_column_major_and_its_output_general_beside_them() {
    let k = tilekit_kernels::matmul::SPEC.kernel().unwrap();
    // a, b: ring tiles only; c: a blocked store, which may be General while a, b are not.
    assert_eq!(tilekit_codegen::cols_operands(k).unwrap(), 0b011);
    assert_eq!(tilekit_codegen::general_operands(k).unwrap(), 0b100);
    assert_eq!(
        kernel_accesses(k),
        vec![
            Access::GENERAL,
            Access::ROWS,
            Access::with_cols(0b01),
            Access::with_cols(0b10),
            Access::with_cols(0b11),
            Access::with_classes(0, 0b100),
        ]
    );
    // matmul_bias_act: bias and c General together.
    let mba = tilekit_kernels::matmul_bias_act::SPEC.kernel().unwrap();
    assert_eq!(tilekit_codegen::general_operands(mba).unwrap(), 0b1100);
    assert_eq!(kernel_accesses(mba).len(), 6);
    // Kernels without dot operands have just the two variants of before.
    let s = tilekit_kernels::softmax::SPEC.kernel().unwrap();
    assert_eq!(kernel_accesses(s), vec![Access::GENERAL, Access::ROWS]);
}

#[test]
fn valid_variants_take_every_access_of_every_configuration() {
    let k = tilekit_kernels::matmul::SPEC.kernel().unwrap();
    let all = valid_variants(k, &TARGETS);
    let per_access = |a: Access| all.iter().filter(|v| v.access == a).count();
    let n = per_access(Access::ROWS);
    assert!(n > 0);
    for a in kernel_accesses(k) {
        assert_eq!(per_access(a), n, "{a}");
    }
    assert_eq!(all.len(), 6 * n);
    // PAD64 is a launch-time choice: it never doubles the variants (every one has
    // PAD64 = false, and no two share a compiled text).
    assert!(all.iter().all(|v| !v.config.pad64()));
    let distinct: BTreeSet<String> = all.iter().map(|v| v.to_string()).collect();
    assert_eq!(distinct.len(), all.len());
    // The display names the classes.
    let v = all
        .iter()
        .find(|v| v.access == Access::with_cols(0b01))
        .unwrap();
    assert!(v.to_string().ends_with("cols(0x1)"), "{v}");
}

#[test]
fn covering_variants_pair_each_operand_class_with_every_factor() {
    let k = tilekit_kernels::matmul::SPEC.kernel().unwrap();
    let chosen = covering_variants(k, &TARGETS);
    let valid: BTreeSet<String> = valid_variants(k, &TARGETS)
        .iter()
        .map(|v| v.to_string())
        .collect();
    for v in &chosen {
        assert!(valid.contains(&v.to_string()), "{v} is not a valid variant");
    }
    // Each operand's Cols class meets every SMEM kind, every target and every element type.
    for (bit, name) in [(0b01u64, "a"), (0b10, "b")] {
        let cols: Vec<_> = chosen
            .iter()
            .filter(|v| v.access.cols() & bit != 0)
            .collect();
        for smem in ["Swizzle128", "Padded"] {
            assert!(
                cols.iter()
                    .any(|v| v.config.get("SMEM").is_some_and(|s| s.to_string() == smem)),
                "{name} = Cols never meets SMEM = {smem}"
            );
        }
        for t in TARGETS {
            assert!(cols.iter().any(|v| v.target == t), "{name}: {t:?}");
        }
        for b in ["T=f32", "T=f16", "T=bf16"] {
            assert!(
                cols.iter().any(|v| v.bindings.to_string() == b),
                "{name}: {b}"
            );
        }
    }
    // Both operands Cols together, and the default configuration with every access of
    // the defaults' set for each element type and target.
    assert!(chosen.iter().any(|v| v.access == Access::with_cols(0b11)));
    assert!(chosen.iter().all(|v| !v.config.pad64()));
    // The general output (beside row-major operands only).
    assert!(chosen
        .iter()
        .any(|v| v.access == Access::with_classes(0, 0b100)));
    assert!(!chosen.iter().any(
        |v| v.access.cols() != 0 && v.access.class(2) == tilekit_codegen::AccessClass::General
    ));
    // (The default, 128 x 256 x 64 in 3 stages, does not fit either target in f32: 288 KiB
    // of shared memory. It is there for every element type and target it fits.)
    let default = k.space.default_config();
    let valid = valid_variants(k, &TARGETS);
    for a in [
        Access::ROWS,
        Access::GENERAL,
        Access::with_cols(0b11),
        Access::with_classes(0, 0b100),
    ] {
        let count = |vs: &[tilekit_tuner::VariantKey]| {
            vs.iter()
                .filter(|v| v.config == default && v.access == a)
                .count()
        };
        assert_eq!(count(&chosen), count(&valid), "{a}");
        assert!(count(&chosen) >= 4, "{a}: bf16 and f16 on both targets");
    }
}

/// Issue 33: a configuration whose loop body holds more than `MAX_LOOP_TILE_ELEMS` elements
/// of one tile per thread is not a valid variant (log-softmax backward at BLOCK=8192,
/// WARPS=4: 64 per thread, 255 registers with spills, minutes of NVRTC), while the same
/// BLOCK with more threads, and a kernel without a loop at the same configuration, stay.
#[test]
fn configurations_with_huge_loop_tiles_are_not_valid() {
    let lsb = tilekit_kernels::log_softmax_bwd::SPEC.kernel().unwrap();
    let config = |text: &str| {
        lsb.space
            .validate(&tilekit_ir::Config::parse(text).unwrap())
            .unwrap()
    };
    let elems = |text: &str| tilekit_codegen::loop_tile_elems(lsb, &config(text)).unwrap();
    assert_eq!(elems("BLOCK=2048,WARPS=32"), 2);
    assert_eq!(elems("BLOCK=8192,WARPS=8"), 32);
    assert_eq!(elems("BLOCK=8192,WARPS=4"), 64);
    let bindings = tilekit_ir::Bindings::all_float(&lsb.generics).remove(0);
    let check =
        |text: &str| tilekit_tuner::target_check(lsb, &config(text), &bindings, Target::Sm90a);
    let why = check("BLOCK=8192,WARPS=4").unwrap_err();
    assert!(why.contains("64 elements per thread"), "{why}");
    check("BLOCK=8192,WARPS=8").unwrap();
    let valid = valid_variants(lsb, &TARGETS);
    assert!(valid
        .iter()
        .all(|v| v.config.to_string() != "BLOCK=8192,WARPS=4"));
    assert!(valid
        .iter()
        .any(|v| v.config.to_string() == "BLOCK=8192,WARPS=8"));
    // gelu has no loop: its BLOCK=8192, WARPS=4 stays valid.
    let gelu = tilekit_kernels::gelu::SPEC.kernel().unwrap();
    let g = gelu
        .space
        .validate(&tilekit_ir::Config::parse("BLOCK=8192,WARPS=4").unwrap())
        .unwrap();
    assert_eq!(tilekit_codegen::loop_tile_elems(gelu, &g).unwrap(), 0);
    let gb = tilekit_ir::Bindings::all_float(&gelu.generics).remove(0);
    tilekit_tuner::target_check(gelu, &g, &gb, Target::Sm90a).unwrap();
}

/// Issue 33: a variant whose streaming loops cost more than `MAX_STREAM_COST` tile-element
/// operations per thread for one trip each is not valid (cross-entropy at 32 elements per
/// thread); the library's defaults keep their loops unrolled by 4, except log_softmax's
/// (16 elements per thread, four loops: by 2).
#[test]
fn streaming_code_over_budget_is_not_valid_and_defaults_keep_their_unrolling() {
    let config = |k: &tilekit_ir::Kernel, text: &str| {
        k.space
            .validate(&tilekit_ir::Config::parse(text).unwrap())
            .unwrap()
    };
    let ce = tilekit_kernels::cross_entropy::SPEC.kernel().unwrap();
    let b = tilekit_ir::Bindings::all_float(&ce.generics).remove(0);
    let c = config(ce, "BLOCK=4096,WARPS=4");
    assert_eq!(tilekit_codegen::stream_cost(ce, &c).unwrap(), Some(3616));
    let why = tilekit_tuner::target_check(ce, &c, &b, Target::Sm90a).unwrap_err();
    assert!(why.contains("3616 tile-element operations"), "{why}");
    let c = config(ce, "BLOCK=4096,WARPS=8");
    assert_eq!(tilekit_codegen::stream_unrolls(ce, &c).unwrap(), Some(1));
    tilekit_tuner::target_check(ce, &c, &b, Target::Sm90a).unwrap();
    for spec in tilekit_kernels::ALL {
        let k = spec.kernel().unwrap();
        let d = k.space.default_config();
        let want = match spec.name {
            "log_softmax" => Some(2),
            _ => tilekit_codegen::stream_cost(k, &d).unwrap().map(|_| 4),
        };
        assert_eq!(
            tilekit_codegen::stream_unrolls(k, &d).unwrap(),
            want,
            "default of `{}`",
            spec.name
        );
    }
}

/// Issue 33: the straight-line tile bound (`MAX_STRAIGHT_TILE_ELEMS`, made for a user's
/// fused add + RMSNorm over `[ROWS, BLOCK]` tiles) leaves every configuration of the
/// one-row library kernels the loop bounds keep as it was (their largest straight-line tile
/// is BLOCK=8192 at 4 warps, 64 elements per thread; the GEMMs, with `dot`, are not bounded
/// by it), but for the activations' BLOCK=8192 at 2 warps (128 elements a thread, added in
/// session 36), which it leaves out of tuning; no default is over it. The narrow-row kernels (issue 34, `*_rows`) have configurations over it,
/// left out of tuning like the user's, but none that a launch without a tuned entry takes:
/// the first configuration for each `BLOCK` (ROWS=4, WARPS=2) is within it.
#[test]
fn the_straight_line_tile_bound_keeps_every_configuration_a_library_launch_takes() {
    let within = |name: &str, k: &tilekit_ir::Kernel, config: &tilekit_ir::Config| {
        let size = tilekit_codegen::code_size(k, config).unwrap();
        let kept_by_loop_bounds = size.loop_tile_elems <= tilekit_codegen::MAX_LOOP_TILE_ELEMS
            && size
                .stream_cost
                .is_none_or(|c| c <= tilekit_codegen::MAX_STREAM_COST);
        assert!(
            !kept_by_loop_bounds
                || size.straight_tile_elems <= tilekit_codegen::MAX_STRAIGHT_TILE_ELEMS,
            "`{name}` [{config}]: {} elements per thread",
            size.straight_tile_elems
        );
        if kept_by_loop_bounds {
            size.straight_tile_elems
        } else {
            0
        }
    };
    let (mut largest, mut rows_kernels, mut over_at_two_warps) = (0, 0, 0);
    for spec in tilekit_kernels::ALL {
        let k = spec.kernel().unwrap();
        if !spec.name.ends_with("_rows") {
            within(spec.name, k, &k.space.default_config());
            for config in k.space.enumerate() {
                // The activations' 64-thread configurations (session 36): BLOCK = 8192 at
                // WARPS = 2 holds 128 elements a thread, over the bound, and is left out of
                // tuning like the narrow-row kernels' (`tilekit tune`: "rejected by
                // constraints"); no default is among them (checked above).
                let size = tilekit_codegen::code_size(k, &config).unwrap();
                if config.int("WARPS") == Some(2)
                    && size.straight_tile_elems > tilekit_codegen::MAX_STRAIGHT_TILE_ELEMS
                {
                    assert_eq!(
                        config.int("BLOCK"),
                        Some(8192),
                        "`{}` [{config}]",
                        spec.name
                    );
                    over_at_two_warps += 1;
                    continue;
                }
                largest = largest.max(within(spec.name, k, &config));
            }
            continue;
        }
        rows_kernels += 1;
        let mut blocks = Vec::new();
        for config in k.space.enumerate() {
            let block = config.int("BLOCK");
            if !blocks.contains(&block) {
                blocks.push(block);
                within(spec.name, k, &config);
            }
        }
    }
    assert_eq!(largest, 64);
    assert_eq!(rows_kernels, 3);
    // One such configuration for each of the ten activation kernels.
    assert_eq!(over_at_two_warps, 10);
}
