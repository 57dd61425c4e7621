//! The Hopper engine (`tilekit_codegen::engine`): which variants take it, what their launch
//! looks like, and that NVRTC compiles them for sm_90a with wgmma kept asynchronous (no
//! "serialized" warning from ptxas) and no spills in the plain GEMM — for the library's GEMMs and for a
//! user's GEMM with a fused epilogue written as in the README.

use tilekit_codegen::engine::{engine, Engine};
use tilekit_codegen::{prelude_headers, variant_plan, variant_source, Access, Target, Variant};
use tilekit_ir::{Bindings, DType};
use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};

#[path = "common/hopper_variant.rs"]
mod hopper_variant;
use hopper_variant::variant;

/// (kernel spec, configuration) pairs the engine must take.
fn hopper_cases() -> Vec<(&'static tilekit::KernelSpec, &'static str)> {
    vec![
        (
            &tilekit_kernels::matmul::SPEC,
            "BM=128,BN=256,BK=64,STAGES=4,WARPS=8",
        ),
        (
            &tilekit_kernels::matmul::SPEC,
            "BM=64,BN=128,BK=64,STAGES=5,WARPS=4",
        ),
        (
            &tilekit_kernels::matmul_bias_act::SPEC,
            "BM=128,BN=128,BK=64,STAGES=4,WARPS=8",
        ),
        (
            &tilekit_tests::hopper_kernels::user_gemm_bias_gelu::SPEC,
            "BM=128,BN=256,BK=64,STAGES=4,WARPS=8",
        ),
        (
            &tilekit_tests::hopper_kernels::gemm_colsum::SPEC,
            "BM=128,BN=128,BK=64,STAGES=3,WARPS=8",
        ),
    ]
}

#[test]
fn eligible_variants_take_the_hopper_engine_with_a_producer_warpgroup_and_two_tensor_maps() {
    for (spec, c) in hopper_cases() {
        let k = spec.kernel().expect("kernel IR");
        for t in [DType::BF16, DType::F16] {
            let v = variant(k, c, t, Access::ROWS, Target::Sm90a);
            let e = engine(k, &v).expect("engine");
            assert!(matches!(e, Engine::Hopper(_)), "{} {c}: {e:?}", k.name);
            let plan = variant_plan(k, &v).expect("plan");
            let warps = v.config.int("WARPS").expect("WARPS") as u32;
            // One consumer warpgroup per program (WARPS = 4): two programs per block in
            // ping-pong, one barrier each.
            let programs = if warps == 4 { 2 } else { 1 };
            assert_eq!(
                plan.launch.threads,
                32 * warps * programs + 128,
                "{} {c}",
                k.name
            );
            let Engine::Hopper(hp) = &e else {
                unreachable!()
            };
            assert_eq!(hp.programs, programs, "{} {c}", k.name);
            let tma = plan.tma.expect("tensor maps");
            assert_eq!((tma[0].param, tma[1].param), (0, 1));
            assert_eq!(tma[0].box_cols, 64);
            let src = variant_source(k, spec.cuda_template, &v).expect("source");
            assert!(src.contains("tk::sm90::ws_pipeline<"), "{src}");
            // The loop's one product stays in flight across iterations (its only reader is
            // the next product): issued in place, waited for by the pipeline (ASYNC).
            assert!(
                src.contains("tk::mma_dot_async<") && src.contains(", TK_ROLE, true>("),
                "{} {c}: the product waits inside its iteration\n{src}",
                k.name
            );
            assert!(src.contains("__grid_constant__ tk::sm90::tensor_map tk_map1"));
            // tk::sync() is the consumers' barrier, defined before the prelude.
            assert_eq!(
                src.contains("#define TK_GEMM_PINGPONG 1"),
                programs == 2,
                "{} {c}",
                k.name
            );
            let define = format!("#define TK_SYNC_THREADS {}", 32 * warps);
            let (at_define, at_prelude) = (src.find(&define), src.find("#include"));
            assert!(
                at_define.is_some() && at_define < at_prelude,
                "{} {c}: no consumer barrier before the prelude",
                k.name
            );
            assert!(src.contains(&format!("__launch_bounds__({}, 1)", plan.launch.threads)));
        }
    }
}

#[test]
fn other_targets_and_ineligible_variants_keep_the_mma_sync_engine() {
    let k = tilekit_kernels::matmul::SPEC.kernel().expect("IR");
    let keep = |c: &str, t: DType, access: Access, target: Target, why: &str| {
        let v = variant(k, c, t, access, target);
        match engine(k, &v).expect("engine") {
            Engine::MmaSync(reason) => assert!(reason.contains(why), "{c}: {reason}"),
            e => panic!("{c} on {target}: {e:?}"),
        }
        let plan = variant_plan(k, &v).expect("plan");
        assert!(plan.tma.is_none());
        assert_eq!(
            plan.launch.threads,
            32 * v.config.int("WARPS").unwrap_or(4) as u32
        );
        let src = variant_source(k, tilekit_kernels::matmul::SPEC.cuda_template, &v).expect("src");
        assert!(!src.contains("ws_pipeline"));
    };
    let good = "BM=128,BN=256,BK=64,STAGES=4,WARPS=8";
    keep(good, DType::BF16, Access::ROWS, Target::Sm80, "no wgmma");
    keep(
        good,
        DType::F32,
        Access::ROWS,
        Target::Sm90a,
        "f32 without TF32",
    );
    keep(
        good,
        DType::BF16,
        Access::GENERAL,
        Target::Sm90a,
        "16-byte aligned",
    );
    keep(
        "BM=128,BN=128,BK=32,STAGES=4,WARPS=8",
        DType::BF16,
        Access::ROWS,
        Target::Sm90a,
        "128-byte panels",
    );
    keep(
        "BM=128,BN=128,BK=64,STAGES=4,WARPS=4",
        DType::BF16,
        Access::ROWS,
        Target::Sm90a,
        "64 rows per consumer",
    );
}

#[test]
fn hopper_variants_compile_with_wgmma_asynchronous_and_no_spills() {
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let opts = CompileOptions::new("sm_90a").expect("options");
    for (spec, c) in hopper_cases() {
        let k = spec.kernel().expect("kernel IR");
        let v = variant(k, c, DType::BF16, Access::ROWS, Target::Sm90a);
        let src = variant_source(k, spec.cuda_template, &v).expect("source");
        let cubin = compile_cubin(&src, &format!("{}.cu", k.name), prelude_headers(), &opts)
            .unwrap_or_else(|e| panic!("{} {c}:\n{e}", k.name));
        let log = cubin.log.to_lowercase();
        assert!(
            !log.contains("serialized") && !log.contains("c7510") && !log.contains("c7515"),
            "{} {c}: ptxas serialized wgmma:\n{}",
            k.name,
            cubin.log
        );
        // Every variant keeps its register reallocation (the producer warpgroup drops to 40
        // registers, the consumers rise to 232: `run<ROLE>` per warpgroup); the plain GEMM
        // spills nothing, a fused epilogue over a 128 x 256 accumulator (128 registers of
        // it per thread) may spill a few bytes.
        let allowed = if k.name == "matmul" { 0 } else { 16 };
        assert!(
            !log.contains("c7507"),
            "{} {c}: setmaxnreg ignored\n{}",
            k.name,
            cubin.log
        );
        assert!(
            cubin.spill_bytes.is_some_and(|b| b <= allowed),
            "{} {c}: {:?} bytes spilled\n{}",
            k.name,
            cubin.spill_bytes,
            cubin.log
        );
        eprintln!(
            "{} {c}: {:.2} s NVRTC, {:?} registers",
            k.name, cubin.seconds, cubin.registers
        );
    }
}

/// `v` without bindings (a kernel with no generics).
fn plain(mut v: Variant) -> Variant {
    v.bindings = Bindings::default();
    v
}

/// What ptxas reports against a Hopper variant, if anything: wgmma serialized (C7510,
/// C7515), `setmaxnreg` ignored (C7507), or any spilled byte.
fn ptxas_problem(c: &str, cubin: &tilekit_runtime::nvrtc::Cubin) -> Option<String> {
    let log = cubin.log.to_lowercase();
    let warned = ["serialized", "c7510", "c7515", "c7507"]
        .iter()
        .any(|w| log.contains(w));
    (warned || cubin.spill_bytes.is_none_or(|b| b > 0)).then(|| {
        format!(
            "{c}: serialized wgmma, ignored setmaxnreg or {:?} bytes spilled:\n{}",
            cubin.spill_bytes, cubin.log
        )
    })
}

/// The TF32 configurations the engine must take (the user's `dot_tf32` GEMM with a bias).
const TF32_CASES: [&str; 3] = [
    "BM=128,BN=256,BK=32,STAGES=3,WARPS=8",
    "BM=128,BN=128,BK=32,STAGES=4,WARPS=8",
    "BM=64,BN=128,BK=32,STAGES=3,WARPS=4",
];

#[test]
fn tf32_variants_take_the_hopper_engine_with_tma_and_a_converting_producer() {
    let spec = &tilekit_tests::hopper_kernels::user_matmul_tf32_bias::SPEC;
    let k = spec.kernel().expect("kernel IR");
    for c in TF32_CASES {
        let v = plain(variant(k, c, DType::F32, Access::ROWS, Target::Sm90a));
        match engine(k, &v).expect("engine") {
            Engine::Hopper(plan) => {
                assert_eq!(plan.fill, tilekit_codegen::engine::RingFill::Convert, "{c}");
                assert_eq!(
                    (plan.tma[0].box_cols, plan.tma[1].box_cols),
                    (32, 32),
                    "{c}"
                );
            }
            e => panic!("{c}: {e:?}"),
        }
        let plan = variant_plan(k, &v).expect("plan");
        let warps = v.config.int("WARPS").expect("WARPS") as u32;
        assert_eq!(plan.launch.threads, 32 * warps + 128, "{c}");
        assert!(plan.tma.is_some() && plan.persistent, "{c}");
        let src = variant_source(k, spec.cuda_template, &v).expect("source");
        assert!(
            src.contains("tk::sm90::ws_pipeline_filled<") && src.contains("::convert(tk_ring1"),
            "{src}"
        );
        assert!(src.contains("tk::sm90::nk_ring<float"), "{src}");
        assert!(src.contains("tensor_map tk_map1"), "{c}: tensor maps");
        // On sm_80 the same variant keeps mma.sync.
        let v80 = plain(variant(k, c, DType::F32, Access::ROWS, Target::Sm80));
        assert!(matches!(
            engine(k, &v80).expect("engine"),
            Engine::MmaSync(_)
        ));
    }
}

#[test]
fn tf32_variants_compile_with_wgmma_asynchronous_and_no_spills() {
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let opts = CompileOptions::new("sm_90a").expect("options");
    let spec = &tilekit_tests::hopper_kernels::user_matmul_tf32_bias::SPEC;
    let k = spec.kernel().expect("kernel IR");
    let mut spills = Vec::new();
    for c in TF32_CASES {
        let v = plain(variant(k, c, DType::F32, Access::ROWS, Target::Sm90a));
        let src = variant_source(k, spec.cuda_template, &v).expect("source");
        let cubin = compile_cubin(&src, "tf32.cu", prelude_headers(), &opts)
            .unwrap_or_else(|e| panic!("{c}:\n{e}"));
        // No variant serializes its wgmma or spills. BN = 256: a 64 x 256 accumulator per
        // warpgroup (128 registers per thread), the A fragments of four k8 steps (16) and
        // the f32 bias epilogue fit the consumers' 208 registers after `setmaxnreg` (before
        // it, 168: serialized, 164 bytes spilled); the producer converts one panel at a
        // time in its 88.
        spills.extend(ptxas_problem(c, &cubin));
        eprintln!(
            "tf32 {c}: {:.2} s NVRTC, {:?} registers, {:?} bytes spilled",
            cubin.seconds, cubin.registers, cubin.spill_bytes
        );
    }
    assert!(spills.is_empty(), "{}", spills.join("\n"));
}

#[test]
fn show_names_the_engine_and_its_shared_memory() {
    let spec = &tilekit_kernels::matmul::SPEC;
    let k = spec.kernel().expect("IR");
    let v = variant(
        k,
        "BM=128,BN=256,BK=64,STAGES=3,WARPS=8",
        DType::BF16,
        Access::ROWS,
        Target::Sm90a,
    );
    let layouts =
        tilekit_codegen::dump(k, Some(&v), tilekit_codegen::Stage::Layouts).expect("layouts");
    assert!(layouts.contains("engine (sm_90a): Hopper"), "{layouts}");
    assert!(layouts.contains("wgmma m64nNk16"), "{layouts}");
    assert!(!layouts.contains("ping-pong"), "{layouts}");
    // One consumer warpgroup per program: two programs per block, named.
    let v4 = variant(
        k,
        "BM=64,BN=256,BK=64,STAGES=5,WARPS=4",
        DType::BF16,
        Access::ROWS,
        Target::Sm90a,
    );
    let l4 = tilekit_codegen::dump(k, Some(&v4), tilekit_codegen::Stage::Layouts).expect("layouts");
    assert!(l4.contains("two per block in ping-pong"), "{l4}");
    let smem = tilekit_codegen::dump(k, Some(&v), tilekit_codegen::Stage::Smem).expect("smem");
    assert!(smem.contains("Hopper pipeline"), "{smem}");
    let v80 = variant(
        k,
        "BM=128,BN=256,BK=64,STAGES=3,WARPS=8",
        DType::BF16,
        Access::ROWS,
        Target::Sm80,
    );
    let layouts =
        tilekit_codegen::dump(k, Some(&v80), tilekit_codegen::Stage::Layouts).expect("layouts");
    assert!(
        layouts.contains("not the Hopper engine: target sm_80 has no wgmma"),
        "{layouts}"
    );
}

/// The chained form (`tilekit_codegen::engine::Form::Chain`): the library's attention forward
/// configurations the engine must take (BM = 64 rows per consumer warpgroup).
/// D = 256 takes the engine at BM = 128 (a [64, 256] f32 accumulator per consumer
/// warpgroup: 128 registers a thread, within `setmaxnreg`'s budget).
const ATTENTION_CASES: [&str; 8] = [
    "BM=128,BN=64,D=128,WARPS=8,STAGES=2",
    "BM=128,BN=128,D=128,WARPS=8,STAGES=2",
    "BM=128,BN=128,D=128,WARPS=8,STAGES=2,SCHEDULE=pingpong",
    "BM=128,BN=32,D=64,WARPS=8,STAGES=3",
    "BM=64,BN=64,D=128,WARPS=4,STAGES=2",
    "BM=64,BN=32,D=64,WARPS=4,STAGES=3",
    "BM=128,BN=64,D=256,WARPS=8,STAGES=2",
    "BM=128,BN=32,D=256,WARPS=8,STAGES=3,SCHEDULE=pingpong",
];

#[test]
fn attention_takes_the_chained_hopper_engine_with_rank3_tensor_maps() {
    let spec = &tilekit_kernels::attention::SPEC;
    let k = spec.kernel().expect("kernel IR");
    for c in ATTENTION_CASES {
        for t in [DType::BF16, DType::F16] {
            let v = variant(k, c, t, Access::ROWS, Target::Sm90a);
            match engine(k, &v).expect("engine") {
                Engine::Hopper(plan) => {
                    assert!(
                        matches!(plan.form, tilekit_codegen::engine::Form::Chain { .. }),
                        "{c}"
                    );
                    // k and v (parameters 1 and 2), rank 3, boxes of 64 columns x BN rows.
                    let bn = v.config.int("BN").expect("BN") as u32;
                    for (m, param) in plan.tma.iter().zip([1, 2]) {
                        assert_eq!(
                            (m.param, m.rank, m.box_cols, m.box_rows),
                            (param, 3, 64, bn),
                            "{c}"
                        );
                    }
                }
                e => panic!("{c}: {e:?}"),
            }
            let plan = variant_plan(k, &v).expect("plan");
            let warps = v.config.int("WARPS").expect("WARPS") as u32;
            assert_eq!(plan.launch.threads, 32 * warps + 128, "{c}");
            let src = variant_source(k, spec.cuda_template, &v).expect("source");
            for want in [
                "tk::sm90::ws_pipeline<",
                "const tk::sm90::tma_tile<T, BM, D> v",
                "if constexpr (TK_ROLE == tk::sm90::ROLE_CONSUMER) tk::stage_tile(",
                "tk::mma_dot_bt_into_zeros<false>(",
                "tk::dot_acc_a<false, TK_SMEM_KIND, false>(",
                "tk_full, tk::coord{{",
            ] {
                assert!(src.contains(want), "{c}: no `{want}` in\n{src}");
            }
            // `SCHEDULE = pingpong`: the turn barriers are compiled in and warpgroup 1
            // passes the first turn; `cooperative` (also what an omitted SCHEDULE means)
            // has neither.
            let pingpong = c.contains("SCHEDULE=pingpong");
            for want in ["#define TK_PINGPONG 1", "tk::sm90::pingpong_init();"] {
                assert_eq!(src.contains(want), pingpong, "{c}: `{want}`");
            }
        }
    }
    // Variants outside the form keep mma.sync, each with its reason.
    let keep = |c: &str, t: DType, target: Target, why: &str| {
        let v = variant(k, c, t, Access::ROWS, target);
        match engine(k, &v).expect("engine") {
            Engine::MmaSync(reason) => assert!(reason.contains(why), "{c}: {reason}"),
            e => panic!("{c} on {target}: {e:?}"),
        }
    };
    let good = ATTENTION_CASES[0];
    keep(good, DType::BF16, Target::Sm80, "no wgmma");
    keep(good, DType::F32, Target::Sm90a, "bf16 and f16");
    keep(
        "BM=64,BN=64,D=128,WARPS=8,STAGES=2",
        DType::BF16,
        Target::Sm90a,
        "64 rows per consumer",
    );
    let v = variant(k, good, DType::BF16, Access::GENERAL, Target::Sm90a);
    assert!(matches!(engine(k, &v).expect("engine"), Engine::MmaSync(_)));
}

#[test]
fn attention_hopper_variants_compile_with_wgmma_asynchronous_and_no_spills() {
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let opts = CompileOptions::new("sm_90a").expect("options");
    let spec = &tilekit_kernels::attention::SPEC;
    let k = spec.kernel().expect("kernel IR");
    let mut bad = Vec::new();
    for c in ATTENTION_CASES {
        let v = variant(k, c, DType::BF16, Access::ROWS, Target::Sm90a);
        let src = variant_source(k, spec.cuda_template, &v).expect("source");
        let cubin = compile_cubin(&src, "attention.cu", prelude_headers(), &opts)
            .unwrap_or_else(|e| panic!("{c}:\n{e}"));
        bad.extend(ptxas_problem(c, &cubin));
        eprintln!(
            "attention {c}: {:.2} s NVRTC, {:?} registers, {:?} bytes spilled",
            cubin.seconds, cubin.registers, cubin.spill_bytes
        );
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `smem_bytes()` reads the plan of the variant that would run: attention at BN = 128 with
/// 3 stages fits sm_90a's 227 KiB on the Hopper engine (the rings and the resident q, no
/// staged operands) while its mma.sync twin does not, so the tuner's target check, the
/// runtime's resource environment for aligned tensors and the cache's validation keep it on
/// sm_90a and refuse it on sm_80 and for unaligned tensors (mma.sync on both).
#[test]
fn shared_memory_constraints_read_the_engine_that_runs() {
    use tilekit_codegen::ResourceEnv;
    let k = tilekit_kernels::attention::SPEC
        .kernel()
        .expect("kernel IR");
    let c = "BM=128,BN=128,D=128,WARPS=8,STAGES=3";
    let smem = |access, target| {
        let v = variant(k, c, DType::BF16, access, target);
        ResourceEnv::for_variant(k, &v)
            .expect("plan")
            .plan()
            .smem_bytes
    };
    let max = Target::Sm90a.limits().max_dynamic_smem;
    let hopper = smem(Access::ROWS, Target::Sm90a);
    assert!(hopper <= max, "Hopper plan {hopper} > {max}");
    assert!(smem(Access::GENERAL, Target::Sm90a) > max);
    assert!(smem(Access::ROWS, Target::Sm80) > max);
    let v = variant(k, c, DType::BF16, Access::ROWS, Target::Sm90a);
    assert!(tilekit_tuner::target_check(k, &v.config, &v.bindings, Target::Sm90a).is_ok());
    assert!(tilekit_tuner::target_check(k, &v.config, &v.bindings, Target::Sm80).is_err());
}

/// `hopper_engine()` in a constraint reads the variant that runs: attention's
/// `BM * D <= 2048 * WARPS || hopper_engine()` admits the [128, 256] accumulator (D = 256,
/// BM = 128) on sm_90a for aligned tensors (the Hopper engine, `setmaxnreg`'s budget) and
/// refuses it where the variant would run on mma.sync (sm_80, or unaligned tensors on
/// sm_90a), as the tuner's target check does.
#[test]
fn hopper_engine_constraints_read_the_engine_that_runs() {
    use tilekit_codegen::ResourceEnv;
    let k = tilekit_kernels::attention::SPEC
        .kernel()
        .expect("kernel IR");
    let regs = k
        .constraints
        .iter()
        .find(|c| c.text.contains("hopper_engine()"))
        .expect("attention's register constraint");
    let c = "BM=128,BN=64,D=256,WARPS=8,STAGES=2";
    let holds = |access, target| {
        let v = variant(k, c, DType::BF16, access, target);
        regs.expr
            .eval_bool(&ResourceEnv::for_variant(k, &v).expect("plan"))
            .expect("evaluates")
    };
    assert!(holds(Access::ROWS, Target::Sm90a));
    assert!(!holds(Access::GENERAL, Target::Sm90a));
    assert!(!holds(Access::ROWS, Target::Sm80));
    let v = variant(k, c, DType::BF16, Access::ROWS, Target::Sm90a);
    assert!(tilekit_tuner::target_check(k, &v.config, &v.bindings, Target::Sm90a).is_ok());
    assert!(tilekit_tuner::target_check(k, &v.config, &v.bindings, Target::Sm80).is_err());
    // D = 128 at BM = 128 holds on every engine (the mma.sync budget).
    let v = variant(
        k,
        "BM=128,BN=64,D=128,WARPS=8,STAGES=2",
        DType::BF16,
        Access::ROWS,
        Target::Sm80,
    );
    assert!(regs
        .expr
        .eval_bool(&ResourceEnv::for_variant(k, &v).expect("plan"))
        .expect("evaluates"));
}

/// The attention backward's passes on the chained form (two resident tiles, three or four
/// products): `attention_bwd_dq` (`q` and `dout` resident, rings `k` and `v`) and
/// `attention_bwd_dkdv` (`k` and `v` resident, rings `q` and `dout`), 64 rows per consumer
/// warpgroup.
const ATTENTION_BWD_CASES: [(&str, &str); 10] = [
    ("attention_bwd_dq", "BM=128,BN=64,D=128,WARPS=8,STAGES=2"),
    ("attention_bwd_dq", "BM=64,BN=64,D=128,WARPS=4,STAGES=2"),
    ("attention_bwd_dq", "BM=128,BN=64,D=64,WARPS=8,STAGES=3"),
    ("attention_bwd_dq", "BM=128,BN=32,D=256,WARPS=8,STAGES=2"),
    ("attention_bwd_dkdv", "BN=128,BM=64,D=128,WARPS=8,STAGES=2"),
    ("attention_bwd_dkdv", "BN=64,BM=64,D=128,WARPS=4,STAGES=2"),
    ("attention_bwd_dkdv", "BN=128,BM=64,D=64,WARPS=8,STAGES=3"),
    ("attention_bwd_dkdv", "BN=128,BM=32,D=128,WARPS=8,STAGES=2"),
    (
        "attention_bwd_dq",
        "BM=128,BN=64,D=128,WARPS=8,STAGES=2,SCHEDULE=pingpong",
    ),
    (
        "attention_bwd_dkdv",
        "BN=128,BM=64,D=128,WARPS=8,STAGES=2,SCHEDULE=pingpong",
    ),
];

fn attention_bwd_spec(name: &str) -> &'static tilekit::KernelSpec {
    match name {
        "attention_bwd_dq" => &tilekit_kernels::attention_bwd_dq::SPEC,
        _ => &tilekit_kernels::attention_bwd_dkdv::SPEC,
    }
}

#[test]
fn attention_backward_takes_the_chained_hopper_engine_with_two_resident_tiles() {
    for (name, c) in ATTENTION_BWD_CASES {
        let spec = attention_bwd_spec(name);
        let k = spec.kernel().expect("kernel IR");
        for t in [DType::BF16, DType::F16] {
            let v = variant(k, c, t, Access::ROWS, Target::Sm90a);
            let plan = match engine(k, &v).expect("engine") {
                Engine::Hopper(plan) => plan,
                e => panic!("{name} {c}: {e:?}"),
            };
            let tilekit_codegen::engine::Form::Chain { residents } = plan.form else {
                panic!("{name} {c}: {:?}", plan.form);
            };
            assert_eq!(residents.iter().count(), 2, "{name} {c}");
            // The rings: k and v (parameters 1, 2) for dq; q and dout (0, 3) for dk/dv.
            let params: Vec<u32> = plan.tma.iter().map(|m| m.param).collect();
            let want = if name == "attention_bwd_dq" {
                [1, 2]
            } else {
                [0, 3]
            };
            assert_eq!(params, want, "{name} {c}");
            let src = variant_source(k, spec.cuda_template, &v).expect("source");
            // Both resident tiles staged, the second after the first; the score products
            // from descriptors, the accumulating ones with A from registers; the gathers
            // before the loop masked off on the producer.
            assert_eq!(
                src.matches("if constexpr (TK_ROLE == tk::sm90::ROLE_CONSUMER) tk::stage_tile(")
                    .count(),
                2,
                "{name} {c}"
            );
            // dq issues both score products before the first is read: the second stays in
            // flight under the softmax (`wgmma_settle<1>`: one younger product left); dk/dv
            // keeps its order (both first spill 48 bytes at D = 128): each score product
            // is deferred (tile work comes before its reader), though the grouped gathers of
            // `lse` and `delta` settle everything before them, so little runs under it.
            let settle = if name == "attention_bwd_dq" {
                "tk::sm90::wgmma_settle<1>("
            } else {
                "tk::sm90::wgmma_settle<0>("
            };
            let deferred = 2;
            assert_eq!(
                src.matches("tk::mma_dot_bt_into_zeros_async<false>(")
                    .count(),
                deferred,
                "{name} {c}"
            );
            assert!(src.contains(settle), "{name} {c}");
            assert!(
                src.contains("tk::dot_acc_a<false, TK_SMEM_KIND, false>("),
                "{name} {c}"
            );
            if name == "attention_bwd_dq" {
                assert!(
                    src.contains("tk::role_mask<TK_ROLE == tk::sm90::ROLE_CONSUMER>("),
                    "{name} {c}"
                );
            }
        }
    }
}

#[test]
fn attention_backward_hopper_variants_compile_with_wgmma_asynchronous_and_no_spills() {
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let opts = CompileOptions::new("sm_90a").expect("options");
    let mut bad = Vec::new();
    for (name, c) in ATTENTION_BWD_CASES {
        let spec = attention_bwd_spec(name);
        let k = spec.kernel().expect("kernel IR");
        let v = variant(k, c, DType::BF16, Access::ROWS, Target::Sm90a);
        let src = variant_source(k, spec.cuda_template, &v).expect("source");
        let cubin = compile_cubin(&src, "attention_bwd.cu", prelude_headers(), &opts)
            .unwrap_or_else(|e| panic!("{name} {c}:\n{e}"));
        bad.extend(ptxas_problem(c, &cubin).map(|p| format!("{name} {p}")));
        eprintln!(
            "{name} {c}: {:.2} s NVRTC, {:?} registers, {:?} bytes spilled",
            cubin.seconds, cubin.registers, cubin.spill_bytes
        );
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `matmul_batched` on the GEMM form: its rings are row views (`a.row(z)`, `b.row(z)`) of
/// rank-3 tensors, read through 3-D tensor maps; the persistent programs cover every batch's
/// tiles.
#[test]
fn batched_gemm_takes_the_hopper_engine_through_rank3_tensor_maps() {
    let spec = &tilekit_kernels::matmul_batched::SPEC;
    let k = spec.kernel().expect("kernel IR");
    for c in [
        "BM=128,BN=128,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128",
        "BM=64,BN=128,BK=64,STAGES=3,WARPS=4,SMEM=Padded",
    ] {
        let v = variant(k, c, DType::BF16, Access::ROWS, Target::Sm90a);
        let plan = match engine(k, &v).expect("engine") {
            Engine::Hopper(plan) => plan,
            e => panic!("{c}: {e:?}"),
        };
        assert!(
            matches!(plan.form, tilekit_codegen::engine::Form::Gemm),
            "{c}"
        );
        let bn = v.config.int("BN").expect("BN") as u32;
        let bm = v.config.int("BM").expect("BM") as u32;
        // a [Z, M, K]: boxes of 64 columns x BM rows; b [Z, K, N]: 64 columns x BK rows.
        let maps: Vec<(u32, u8, u32, u32)> = plan
            .tma
            .iter()
            .map(|m| (m.param, m.rank, m.box_cols, m.box_rows))
            .collect();
        assert_eq!(maps, vec![(0, 3, 64, bm), (1, 3, 64, 64)], "{c} (BN {bn})");
        let src = variant_source(k, spec.cuda_template, &v).expect("source");
        assert!(src.contains("tk::sm90::ws_pipeline<"), "{c}");
        assert_eq!(src.matches("tk::sm90::tma_load_tile(").count(), 2, "{c}");
    }
    // Misaligned rows and the BK = 32 tiles keep mma.sync.
    let v = variant(
        k,
        "BM=128,BN=128,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128",
        DType::BF16,
        Access::GENERAL,
        Target::Sm90a,
    );
    assert!(matches!(engine(k, &v).expect("engine"), Engine::MmaSync(_)));
    let v = variant(
        k,
        "BM=128,BN=128,BK=32,STAGES=4,WARPS=8,SMEM=Swizzle128",
        DType::BF16,
        Access::ROWS,
        Target::Sm90a,
    );
    assert!(matches!(engine(k, &v).expect("engine"), Engine::MmaSync(_)));
}

#[test]
fn batched_gemm_hopper_variants_compile_with_wgmma_asynchronous_and_no_spills() {
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let opts = CompileOptions::new("sm_90a").expect("options");
    let spec = &tilekit_kernels::matmul_batched::SPEC;
    let k = spec.kernel().expect("kernel IR");
    let c = "BM=128,BN=128,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128";
    let v = variant(k, c, DType::BF16, Access::ROWS, Target::Sm90a);
    let src = variant_source(k, spec.cuda_template, &v).expect("source");
    let cubin = compile_cubin(&src, "matmul_batched.cu", prelude_headers(), &opts)
        .unwrap_or_else(|e| panic!("{c}:\n{e}"));
    assert!(ptxas_problem(c, &cubin).is_none(), "{}", cubin.log);
}

/// A chained-form kernel whose key/value rows start at an offset read from a tensor before
/// the loop (a packed sequence's start, as variable-length attention reads it): the scalar
/// gather feeds the ring origins, so the producer warpgroup must read it too (no role mask);
/// a tile gather before the loop is masked off on the producer.
mod offset_chain {
    use tilekit::prelude::*;

    #[kernel(grid = [cdiv(q.dim(1), BM), q.dim(0)])]
    #[tune(BM = [128], BN = [64], D = [128], WARPS = [8], STAGES = [2])]
    #[constraint(q.dim(2) == D)]
    #[shapes(q = [Z, M, E], k = [Z, N, E], v = [Z, N, E], o = [Z, M, E], starts = [Z], bias = [Z, M])]
    pub fn offset_chain<T: Float>(
        q: &Tensor3<T>,
        k: &Tensor3<T>,
        v: &Tensor3<T>,
        o: &mut Tensor3<T>,
        starts: &Tensor1<i64>,
        bias: &Tensor2<f32>,
    ) {
        let (pm, z) = (program_id(0), program_id(1));
        let r0 = pm * BM;
        let first = load(starts, z);
        let rows = arange::<BM>() + r0;
        let b = load(bias.row(z), rows, rows < q.dim(1), 0.0);
        let qt = load_tile(q.row(z), [r0, 0], [BM, D]);
        let mut acc = zeros::<f32, BM, D>();
        for j in pipelined(first..k.dim(1), BN, STAGES) {
            let kt = load_tile(k.row(z), [j, 0], [BN, D]);
            let s = dot(qt, trans(kt), zeros::<f32, BM, BN>()) + expand_dims(b, 1);
            let vt = load_tile(v.row(z), [j, 0], [BN, D]);
            acc = dot(s.cast::<T>(), vt, acc);
        }
        store_tile(o.row(z), [r0, 0], acc.cast::<T>());
    }
}

#[test]
fn a_scalar_gather_before_the_chained_loop_is_read_by_both_roles() {
    let spec = &offset_chain::offset_chain::SPEC;
    let k = spec.kernel().expect("kernel IR");
    let c = "BM=128,BN=64,D=128,WARPS=8,STAGES=2";
    let v = variant(k, c, DType::BF16, Access::ROWS, Target::Sm90a);
    match engine(k, &v).expect("engine") {
        Engine::Hopper(plan) => assert!(
            matches!(plan.form, tilekit_codegen::engine::Form::Chain { .. }),
            "{:?}",
            plan.form
        ),
        e => panic!("{e:?}"),
    }
    let src = variant_source(k, spec.cuda_template, &v).expect("source");
    // One role-masked gather (the bias rows), and the scalar start read unmasked.
    assert_eq!(
        src.matches("tk::role_mask<TK_ROLE == tk::sm90::ROLE_CONSUMER>(")
            .count(),
        1,
        "{src}"
    );
    if tilekit_tests::support::nvrtc_or_skip() {
        let opts = CompileOptions::new("sm_90a").expect("options");
        let cubin = compile_cubin(&src, "offset_chain.cu", prelude_headers(), &opts)
            .unwrap_or_else(|e| panic!("{c}:\n{e}"));
        assert!(ptxas_problem(c, &cubin).is_none(), "{}", cubin.log);
    }
}

/// [`offset_chain`] on the GPU (the Hopper engine at its only configuration) against the
/// CPU backend, bitwise: small integers keep every product and sum exact. Starts that are
/// not multiples of the key block, a partial query block, a start past every key.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_a_scalar_gather_feeds_the_producers_ring_origins() {
    use tilekit::prelude::*;
    let g = Runtime::cuda(0).expect("a CUDA device");
    let cpu = Runtime::cpu();
    let mut r = tilekit_tests::support::Rng(0x0ff5);
    let (z, m, n, d) = (3usize, 130usize, 200usize, 128usize);
    let mut ints = |len: usize| -> Vec<half::bf16> {
        (0..len)
            .map(|_| half::bf16::from_f32((r.next_u64() % 3) as f32 - 1.0))
            .collect()
    };
    let (qv, kv, vv) = (ints(z * m * d), ints(z * n * d), ints(z * n * d));
    let bias: Vec<f32> = (0..z * m).map(|i| (i % 5) as f32 - 2.0).collect();
    let starts = vec![0i64, 37, 250];
    let run = |rt: &Runtime| -> Vec<half::bf16> {
        let t3 = |v: &[half::bf16], s: [usize; 3]| Tensor3::from_vec(rt, v.to_vec(), s).unwrap();
        let (q, k, v) = (t3(&qv, [z, m, d]), t3(&kv, [z, n, d]), t3(&vv, [z, n, d]));
        let st = Tensor1::from_vec(rt, starts.clone(), [z]).unwrap();
        let b = Tensor2::from_vec(rt, bias.clone(), [z, m]).unwrap();
        let mut o = Tensor3::full(rt, [z, m, d], half::bf16::NAN).unwrap();
        offset_chain::offset_chain::launch(rt, &q, &k, &v, &mut o, &st, &b).unwrap();
        o.to_vec().unwrap()
    };
    let (got, want) = (run(&g), run(&cpu));
    assert_eq!(got.len(), want.len());
    let bad = got
        .iter()
        .zip(&want)
        .position(|(a, b)| a.to_bits() != b.to_bits());
    assert!(bad.is_none(), "first difference at {bad:?}");
}
