//! Snapshot-style checks of generated templates and variants, launch plans, and rejection
//! of configurations outside the declared space.

mod common;

use common::*;
use tilekit_codegen::*;
use tilekit_ir::*;

fn cfg(s: &str) -> Config {
    Config::parse(s).expect("config literal")
}

fn bf16() -> Bindings {
    Bindings::single("T", DType::BF16)
}

fn has(src: &str, needle: &str) {
    assert!(src.contains(needle), "missing `{needle}` in:\n{src}");
}

fn variant(config: &str, d: DType, aligned: bool, target: Target) -> Variant {
    Variant {
        config: cfg(config),
        bindings: Bindings::single("T", d),
        access: aligned.into(),
        target,
    }
}

#[test]
fn softmax_template() {
    let src = generate(&softmax()).unwrap();
    has(&src, "#include \"tilekit/tilekit.cuh\"");
    has(
        &src,
        "template <int BLOCK, int WARPS, typename T, bool ALIGNED, int TK_VEC>",
    );
    has(&src, "struct tilekit_softmax {");
    has(&src, "static constexpr int TK_THREADS = 32 * WARPS;");
    has(&src, "using TK_L = tk::blocked<TK_VEC, TK_THREADS>;");
    has(&src, "// softmax.rs:10\n");
    has(&src, "// softmax.rs:14\n");
    has(
        &src,
        "const auto v0_row = tk::program_id<1, 0, TK_GROUP>(grid);",
    );
    has(
        &src,
        "const auto v1_cols = tk::arange<tk::shape<BLOCK>, TK_L>();",
    );
    has(&src, "const auto v2_x = tk::make_view<T, 2>(arg0_x);");
    has(
        &src,
        // Bounds mask `cols < x.cols()`: 32-bit lane compare against the clamped limit.
        "tk::arange_lt<tk::shape<BLOCK>, TK_L>(0LL, v3)",
    );
    // Contiguous offsets: vectorized load with -inf as `other`, converted to T.
    has(
        &src,
        "tk::load_prefix<ALIGNED, tk::shape<BLOCK>, TK_L>(v5, 0LL, v3, tk::cast<T>(v6))",
    );
    has(
        &src,
        "const double v6 = __longlong_as_double(0xfff0000000000000ULL);",
    );
    has(
        &src,
        "tk::reduce_all<tk::red::max>(v8_v, smem + TK_SCRATCH + 0)",
    );
    has(
        &src,
        "tk::reduce_all<tk::red::sum>(v11_e, smem + TK_SCRATCH + 0)",
    );
    has(
        &src,
        "tk::store_prefix<ALIGNED, tk::shape<BLOCK>, TK_L>(v13, 0LL, v16, v3);",
    );
    has(&src, "static constexpr long long SMEM_BYTES = tk::cmax(0LL, tk::align16((long long)(TK_THREADS / 32) * (long long)sizeof(tk::acc_t<float>)));");
    assert!(
        !src.contains("threadIdx"),
        "generated code never names threadIdx"
    );
    // Line comments appear once per line change, not per instruction.
    assert_eq!(src.matches("// softmax.rs:12\n").count(), 1);
}

#[test]
fn softmax_launch_plan_and_variant() {
    let k = softmax();
    let p = launch_plan(&k, &cfg("BLOCK=1024,WARPS=4"), &bf16()).unwrap();
    assert_eq!(
        p,
        LaunchPlan {
            threads: 128,
            smem_bytes: 16
        }
    );
    let p = launch_plan(&k, &cfg("WARPS=16,BLOCK=8192"), &bf16()).unwrap();
    assert_eq!(
        p,
        LaunchPlan {
            threads: 512,
            smem_bytes: 64
        }
    );

    let t = generate(&k).unwrap();
    let v = variant_source(
        &k,
        &t,
        &variant("BLOCK=4096,WARPS=8", DType::BF16, true, Target::Sm90a),
    )
    .unwrap();
    assert!(v.starts_with(&t));
    has(
        &v,
        "using tilekit_variant = tilekit_softmax<4096, 8, __nv_bfloat16, true, 8>;",
    );
    has(&v, "static_assert(tilekit_variant::TK_THREADS == 256,");
    has(&v, "static_assert(tilekit_variant::SMEM_BYTES == 32LL,");
    has(&v, "extern \"C\" __global__ void __launch_bounds__(256) tilekit_kernel(tk::Grid grid, tk::TensorArg p0, tk::TensorArg p1) {");
    has(
        &v,
        "tilekit_variant::run(grid, p0, p1, reinterpret_cast<char*>(tk_smem));",
    );
    // f32 tensors read `General` (unaligned): 4-byte groups, one element (VEC=1).
    let v = variant_source(
        &k,
        &t,
        &variant("BLOCK=4096,WARPS=8", DType::F32, false, Target::Sm80),
    )
    .unwrap();
    has(&v, "tilekit_softmax<4096, 8, float, false, 1>;");
    // Pure function of its inputs.
    let again = variant_source(
        &k,
        &t,
        &variant("BLOCK=4096,WARPS=8", DType::F32, false, Target::Sm80),
    )
    .unwrap();
    assert_eq!(v, again);
}

#[test]
fn variant_rejects_points_outside_the_space() {
    let k = softmax();
    let t = generate(&k).unwrap();
    let bad = |c: &str| variant_source(&k, &t, &variant(c, DType::F16, true, Target::Sm80));
    assert!(matches!(
        bad("BLOCK=999,WARPS=4"),
        Err(CodegenError::Space(SpaceError::NotDeclared { .. }))
    ));
    assert!(matches!(
        bad("BLOCK=1024"),
        Err(CodegenError::Space(SpaceError::Missing(_)))
    ));
    assert!(matches!(
        bad("BLOCK=1024,WARPS=4,EVIL=1"),
        Err(CodegenError::Space(SpaceError::Unknown(_)))
    ));
    let mut v = variant("BLOCK=1024,WARPS=4", DType::F64, true, Target::Sm80);
    assert!(matches!(
        variant_source(&k, &t, &v),
        Err(CodegenError::NotFloatBinding { .. })
    ));
    v.bindings = Bindings::default();
    assert!(matches!(
        variant_source(&k, &t, &v),
        Err(CodegenError::UnboundGeneric(_))
    ));
    v.bindings = Bindings::single("U", DType::F32);
    assert!(matches!(
        variant_source(&k, &t, &v),
        Err(CodegenError::UnknownBinding(_))
    ));
    v.bindings = Bindings::single("T", DType::F32);
    assert!(matches!(
        variant_source(&k, "int x;", &v),
        Err(CodegenError::TemplateMismatch(_))
    ));
    assert!(launch_plan(&k, &cfg("BLOCK=1000,WARPS=4"), &bf16()).is_err());
}

#[test]
fn scale_chain_loop_and_if() {
    let k = scale_chain();
    let src = generate(&k).unwrap();
    // Offsets `pid * BLOCK + arange`: contiguous with a scalar base.
    has(
        &src,
        "const auto v4_offs = tk::binary<tk::op::add>(v2, tk::cast<long long>(v3));",
    );
    has(
        &src,
        "tk::load_prefix<ALIGNED, tk::shape<BLOCK>, TK_L>(v5_x, v2, v6, tk::cast<T>(v8))",
    );
    has(&src, "const auto v11_repeats = arg2_repeats;");
    has(&src, "tk::rt<float, tk::shape<BLOCK>, TK_L> v17_v = v10_v;");
    has(&src, "for (long long v16_i = tk::cast<long long>(v14); v16_i < v13; v16_i += tk::cast<long long>(v15)) {");
    has(
        &src,
        "const auto v19 = tk::binary<tk::op::mul>(v17_v, tk::cast<float>(v18));",
    );
    has(&src, "            v17_v = v21;\n        }\n");
    has(
        &src,
        "const auto v23 = tk::binary<tk::op::rem>(v11_repeats, tk::cast<long long>(v12));",
    );
    has(
        &src,
        "tk::rt<float, tk::shape<BLOCK>, TK_L> v28_v;\n        if (v25) {",
    );
    has(
        &src,
        "            v28_v = v27;\n        } else {\n            v28_v = v17_v;\n        }",
    );
    has(
        &src,
        "tk::store_prefix<ALIGNED, tk::shape<BLOCK>, TK_L>(v29_y, v2, v30, v6);",
    );
    has(
        &src,
        "        // scale_chain.rs:12\n            const double v18 = 2.0;"
            .replace("        // scale", "            // scale")
            .as_str(),
    );
    let p = launch_plan(
        &k,
        &cfg("BLOCK=2048,WARPS=8"),
        &Bindings::single("T", DType::F16),
    )
    .unwrap();
    assert_eq!(
        p,
        LaunchPlan {
            threads: 256,
            smem_bytes: 0
        }
    );
}

#[test]
fn rmsnorm_template() {
    let k = rmsnorm();
    let src = generate(&k).unwrap();
    has(&src, "const auto v13_eps = arg3_eps;");
    has(&src, "tk::unary<tk::op::rsqrt>(");
    has(&src, "tk::reduce_all<tk::red::sum>(");
    has(&src, "static __device__ __forceinline__ void run(const tk::Grid& grid, const tk::TensorArg& arg0_x, const tk::TensorArg& arg1_w, const tk::TensorArg& arg2_y, const float arg3_eps, char* smem) {");
    // Both loads are contiguous and bounded by the same row mask: whole-tile tests.
    assert_eq!(src.matches("tk::load_prefix<ALIGNED").count(), 2);
    let t = generate(&k).unwrap();
    let v = variant_source(
        &k,
        &t,
        &variant("BLOCK=2048,WARPS=4", DType::F16, true, Target::Sm80),
    )
    .unwrap();
    has(&v, "tk::TensorArg p2, float p3)");
}

/// A misaligned output beside aligned operands: the operands' loads keep `ALIGNED`, the
/// store takes `TK_ALIGNED_c`, and the variant's arguments say which is which.
#[test]
fn matmul_general_output_variant() {
    let k = matmul();
    let t = generate(&k).unwrap();
    let src_of = |access: Access| {
        variant_source(
            &k,
            &t,
            &Variant {
                config: cfg("BM=64,BN=64,BK=32,WARPS=4,STAGES=2"),
                bindings: bf16(),
                access,
                target: Target::Sm90a,
            },
        )
    };
    let args = |src: &str| {
        src.lines()
            .find(|l| l.starts_with("using tilekit_variant = "))
            .unwrap_or_default()
            .to_string()
    };
    // ALIGNED, TK_COLS_a, TK_COLS_b, TK_ALIGNED_c, then TK_VEC.
    let general_c = src_of(Access::with_classes(0, 0b100)).unwrap();
    assert!(
        args(&general_c).ends_with(", true, false, false, false, 8>;"),
        "{}",
        args(&general_c)
    );
    has(
        &general_c,
        "// Variant: BM=64,BN=64,BK=32,WARPS=4,STAGES=2 | T=bf16 | access a=rows,b=rows,c=general",
    );
    let cols_a = src_of(Access::with_classes(0b001, 0b100)).unwrap();
    assert!(
        args(&cols_a).ends_with(", true, true, false, false, 8>;"),
        "{}",
        args(&cols_a)
    );
    let rows = src_of(Access::ROWS).unwrap();
    assert!(
        args(&rows).ends_with(", true, false, false, true, 8>;"),
        "{}",
        args(&rows)
    );
    let general = src_of(Access::GENERAL).unwrap();
    assert!(
        args(&general).ends_with(", false, false, false, false, 2>;"),
        "{}",
        args(&general)
    );
    // PAD64 never reaches the template or a variant's source: declared or not, true or
    // false, the text is the same.
    let mut kp = matmul();
    kp.space.params.push(TuneParam {
        name: "PAD64".into(),
        values: vec![TuneValue::Bool(false), TuneValue::Bool(true)],
        loc: Loc::default(),
    });
    let tp = generate(&kp).unwrap();
    assert_eq!(tp, t);
    let pad = |v: bool| {
        variant_source(
            &kp,
            &tp,
            &Variant {
                config: cfg(&format!("BM=64,BN=64,BK=32,WARPS=4,STAGES=2,PAD64={v}")),
                bindings: bf16(),
                access: Access::ROWS,
                target: Target::Sm90a,
            },
        )
        .unwrap()
    };
    assert_eq!(pad(true), pad(false));
    assert!(!pad(true).contains("PAD64=true"));
    // General for a dot operand alone, or for c without the others' classes being
    // aligned, is no variant.
    for bad in [
        Access::with_classes(0, 0b001),
        Access::with_classes(0, 0b101),
    ] {
        assert!(
            matches!(src_of(bad), Err(CodegenError::Access { .. })),
            "{bad}"
        );
    }
    // The layouts stage names the tensors that may be General beside the dot operands.
    let layouts = dump(&k, None, Stage::Layouts).unwrap();
    has(&layouts, "general with aligned dot operands (a variant may take these element-wise, together, while the dot operands stay Rows/Cols): c");
    // A kernel without dot operands has none (its template is unchanged).
    assert_eq!(general_operands(&softmax()).unwrap(), 0);
}

#[test]
fn matmul_template_and_smem_plan() {
    let k = matmul();
    let src = generate(&k).unwrap();
    // Both operands are read only as ring tiles: each may be read column-major.
    assert_eq!(cols_operands(&k).unwrap(), 0b011);
    // ... and the output may be General beside them (its own alignment flag).
    assert_eq!(general_operands(&k).unwrap(), 0b100);
    has(&src, "template <int BM, int BN, int BK, int WARPS, int STAGES, typename T, bool ALIGNED, bool TK_COLS_a, bool TK_COLS_b, bool TK_ALIGNED_c, int TK_VEC>");
    // The loads feed only the dot: two STAGES-deep cp.async rings, the accumulator in the
    // MMA layout, the dot from ring slots.
    has(
        &src,
        "// [block] pipelined(stages = STAGES): 2 cp.async ring(s), STAGES - 1 iterations in flight",
    );
    has(
        &src,
        "using TK_ACC0 = typename tk::acc_layout<BM, BN, TK_THREADS / 32, TK_L>::type;",
    );
    has(
        &src,
        "using TK_RING0 = tk::ring<tk::stile_as<TK_COLS_a, T, BM, BK, TK_SMEM_KIND>, STAGES>;",
    );
    has(
        &src,
        "tk::rt<float, tk::shape<BM, BN>, TK_ACC0> v9_acc = v3_acc;",
    );
    has(
        &src,
        "tk::pipeline<STAGES>(tk::cast<long long>(v7), v5, v6, [&](const long long v8_k, const int tk_slot) {",
    );
    has(
        &src,
        "tk::copy_tile_async<ALIGNED, TK_THREADS>(tk_ring0.slot(tk_slot), v4_a, tk::coord{{v11, v8_k, 0LL}});",
    );
    has(&src, "const auto v12_ta = tk_ring0.slot(tk_slot);");
    has(
        &src,
        "const auto v17_acc = tk::mma_dot<false>(v12_ta, v16_tb, v9_acc);",
    );
    has(&src, "v9_acc = v17_acc;");
    has(
        &src,
        "tk::store_tile<TK_ALIGNED_c>(v19_c, tk::coord{{v22, v23, 0LL}}, v24);",
    );
    has(&src, "// matmul.rs:14\n");
    let plan = |c: &str, d: DType| launch_plan(&k, &cfg(c), &Bindings::single("T", d)).unwrap();
    assert_eq!(
        plan("BM=64,BN=64,BK=32,WARPS=4,STAGES=2", DType::BF16),
        LaunchPlan {
            threads: 128,
            smem_bytes: 2 * (4096 + 4096)
        }
    );
    assert_eq!(
        plan("BM=64,BN=64,BK=32,WARPS=4,STAGES=2", DType::F32),
        LaunchPlan {
            threads: 128,
            smem_bytes: 2 * (8192 + 8192)
        }
    );
    assert_eq!(
        plan("BM=128,BN=32,BK=16,WARPS=8,STAGES=2", DType::F16),
        LaunchPlan {
            threads: 256,
            smem_bytes: 2 * (4096 + 1024)
        }
    );
}

#[test]
fn constraints_see_the_plan() {
    let mut k = matmul();
    k.space.params[0].values.push(TuneValue::Int(512));
    k.space.params[1].values.push(TuneValue::Int(512));
    let c = Expr::bin(
        ExprOp::Le,
        Expr::Call(Func::SmemBytes, vec![]),
        Expr::Call(Func::MaxSmem, vec![]),
    );
    let big = cfg("BM=512,BN=512,BK=32,WARPS=4,STAGES=2");
    // Two stages of (512*32 + 32*512) f32 = 256 KiB: over both targets; bf16 fits.
    let env = ResourceEnv::new(&k, &big, &Bindings::single("T", DType::F32), Target::Sm80).unwrap();
    assert_eq!(env.plan().smem_bytes, 262_144);
    assert_eq!(c.eval_bool(&env), Ok(false));
    let env16 =
        ResourceEnv::new(&k, &big, &Bindings::single("T", DType::BF16), Target::Sm80).unwrap();
    assert_eq!(env16.plan().smem_bytes, 131_072);
    assert_eq!(c.eval_bool(&env16), Ok(true));
    let mut k2 = k.clone();
    k2.space.params[2].values.push(TuneValue::Int(64));
    let bigger = cfg("BM=512,BN=512,BK=64,WARPS=4,STAGES=2");
    let env80 = ResourceEnv::new(
        &k2,
        &bigger,
        &Bindings::single("T", DType::F32),
        Target::Sm80,
    )
    .unwrap();
    let env90 = ResourceEnv::new(
        &k2,
        &bigger,
        &Bindings::single("T", DType::F32),
        Target::Sm90a,
    )
    .unwrap();
    assert_eq!(env80.plan().smem_bytes, 524_288);
    assert_eq!(c.eval_bool(&env80), Ok(false));
    assert_eq!(c.eval_bool(&env90), Ok(false));
    let t = Expr::Call(Func::Threads, vec![]);
    assert_eq!(t.eval_int(&env90), Ok(128));
    assert_eq!(
        Expr::SizeOf(Elem::Generic("T".into())).eval_int(&env90),
        Ok(4)
    );
}

#[test]
fn kitchen_sink_covers_every_op() {
    let k = kitchen_sink();
    let src = generate(&k).unwrap();
    has(&src, "template <int R, int C, bool FLAG, int SMEM /* 0=RowMajor, 1=Padded */, typename T, bool ALIGNED, int TK_VEC>");
    has(&src, "static constexpr int TK_THREADS = 128;");
    has(
        &src,
        "tk::reduce_rows<tk::red::max, tk::shape<R>, TK_ROWS0>(",
    );
    has(
        &src,
        "using TK_ROWS0 = typename tk::rows_layout<TK_L, C, R>::type;",
    );
    has(&src, "tk::reduce_axis<tk::red::sum, 2, tk::shape<1, R>>(");
    has(
        &src,
        "// rows0 [R, 1] -> blocked [R, C]: in registers (every thread holds every row)",
    );
    has(&src, "tk::relayout<tk::shape<R, C>, TK_L>(");
    has(&src, "tk::dot_regs<true, TK_SMEM_KIND>(");
    has(&src, "tk::reshape<tk::shape<R, 1>>(");
    has(&src, "tk::select(");
    has(&src, "tk::num_programs(grid, 1)");
    has(&src, "(arg3_flag != 0)");
    has(&src, "const auto v34 = FLAG;");
    // Gathers with data-dependent offsets are not vectorized.
    has(&src, "tk::load<ALIGNED>(v65, v64, v67, tk::cast<T>(0))");
    has(
        &src,
        "tk::load<ALIGNED>(v65, tk::cast<long long>(v70), v36_flag, tk::cast<T>(0))",
    );
    has(
        &src,
        "tk::store<ALIGNED>(v69, tk::cast<long long>(v5), v77, tk::no_mask{});",
    );
    has(
        &src,
        "// blocked [C] -> blocked [R, C]: in registers (where the blocked passes are whole rows: the same columns in the same thread)",
    );
    has(&src, "tk::store<ALIGNED>(v69, v64, v68, v67);");
    let p = launch_plan(&k, &cfg("R=8,C=128,FLAG=true,SMEM=Padded"), &bf16()).unwrap();
    // Largest use: the dot's operands staged in Padded tiles (16 bytes after each row):
    // 8 rows of 128 bf16 (pitch 272) and 128 rows of 128 bf16, each 128-byte aligned.
    assert_eq!(
        p,
        LaunchPlan {
            threads: 128,
            smem_bytes: 8 * 272 + 128 * 272
        }
    );
    let v = variant_source(
        &k,
        &src,
        &variant(
            "R=4,C=64,FLAG=false,SMEM=Padded",
            DType::F16,
            false,
            Target::Sm80,
        ),
    )
    .unwrap();
    has(
        &v,
        "tilekit_kitchen_sink<4, 64, false, 1, __half, false, 2>;",
    );
    has(&v, "tk::TensorArg p2, int p3, int p4)");
}

#[test]
fn invalid_kernels_report_diagnostics() {
    let mut k = softmax();
    k.grid.clear();
    match generate(&k) {
        Err(CodegenError::Invalid { diagnostics, .. }) => {
            assert!(diagnostics[0].message.contains("grid"))
        }
        other => panic!("expected diagnostics, got {other:?}"),
    }
    let mut k = softmax();
    k.space.params[0].name = "TK_BLOCK".into();
    assert!(generate(&k).is_err());
}

/// Every header the prelude includes is embedded, and every embedded header is reachable.
#[test]
fn prelude_is_self_contained() {
    let hs = prelude_headers();
    let names: Vec<&str> = hs.iter().map(|(n, _)| *n).collect();
    let mut reached = vec!["tilekit/tilekit.cuh"];
    let mut i = 0;
    while i < reached.len() {
        let src = hs
            .iter()
            .find(|(n, _)| *n == reached[i])
            .map(|(_, s)| *s)
            .expect("embedded");
        for line in src.lines() {
            if let Some(rest) = line.trim().strip_prefix("#include ") {
                let inc = rest.trim_matches(|c| c == '"' || c == '<' || c == '>');
                if rest.starts_with('<') {
                    assert!(
                        ["cuda_fp16.h", "cuda_bf16.h"].contains(&inc),
                        "host header {inc}"
                    );
                } else {
                    assert!(
                        names.contains(&inc),
                        "{} includes unknown {inc}",
                        reached[i]
                    );
                    if !reached.contains(&inc) {
                        reached.push(inc);
                    }
                }
            }
        }
        assert!(src.contains("#pragma once"), "{}", reached[i]);
        i += 1;
    }
    assert_eq!(reached.len(), names.len(), "unreachable headers");
}

/// Every configuration x dtype x access classes x target yields source. With
/// `TILEKIT_CODEGEN_DUMP=<dir>` the sources are written there (for compiling with NVRTC).
#[test]
fn every_variant_generates() {
    let dump = std::env::var("TILEKIT_CODEGEN_DUMP").ok();
    let mut count = 0;
    for k in [
        softmax(),
        scale_chain(),
        rmsnorm(),
        matmul(),
        kitchen_sink(),
    ] {
        let t = generate(&k).unwrap();
        let accesses = valid_accesses(cols_operands(&k).unwrap(), general_operands(&k).unwrap());
        for config in k.space.enumerate() {
            for b in Bindings::all_float(&k.generics) {
                for &access in &accesses {
                    for target in Target::ALL {
                        let v = Variant {
                            config: config.clone(),
                            bindings: b.clone(),
                            access,
                            target,
                        };
                        let src = variant_source(&k, &t, &v).unwrap();
                        let plan = launch_plan(&k, &config, &b).unwrap();
                        assert!(src.contains(&format!("__launch_bounds__({})", plan.threads)));
                        assert!(src.contains(&format!("SMEM_BYTES == {}LL", plan.smem_bytes)));
                        count += 1;
                        if let Some(dir) = &dump {
                            let name =
                                format!("{}__{}__{}__{}__{}.cu", k.name, config, b, access, target)
                                    .replace(['=', ','], "_");
                            std::fs::write(std::path::Path::new(dir).join(name), &src).unwrap();
                        }
                    }
                }
            }
        }
    }
    assert!(count > 500, "{count}");
}

/// `tk::stream_unroll` in the prelude and [`STREAM_UNROLL_BUDGET`] (what [`stream_unroll`]
/// and the tuner read) are the same rule: the prelude's budget is the constant's value.
#[test]
fn the_prelude_unrolls_streaming_loops_by_the_code_generators_budget() {
    let base = prelude_headers()
        .iter()
        .find(|(name, _)| name.ends_with("common/base.cuh"))
        .map(|(_, text)| *text)
        .expect("base.cuh");
    let rule = format!(
        "return cost * 4 <= {b} ? 4 : cost * 2 <= {b} ? 2 : 1;",
        b = STREAM_UNROLL_BUDGET
    );
    has(base, &rule);
}
