//! Front-end tests: parse + lower + validate on token streams, without a compiler run.

use super::compile;
use quote::quote;
use tilekit_ir::{InputGen, Op, Phase};

fn ok(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> tilekit_ir::Kernel {
    let c = compile(attr, item);
    assert!(c.errors.is_empty(), "unexpected errors: {:#?}", c.errors);
    c.kernel.expect("kernel")
}

fn errors(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> Vec<String> {
    let c = compile(attr, item);
    assert!(!c.errors.is_empty(), "expected errors");
    c.errors
}

#[test]
fn brief_softmax_lowers_and_validates() {
    let k = ok(
        quote!(grid = [x.rows()]),
        quote! {
            /// y = softmax(x) along rows.
            #[tune(BLOCK = [1024, 2048, 4096, 8192], WARPS = [4, 8, 16])]
            #[constraint(x.cols() <= BLOCK)]
            #[shapes(x = [M, N], y = [M, N])]
            pub fn softmax<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
                let row = program_id(0);
                let cols = arange::<BLOCK>();
                let v = load(x.row(row), cols, cols < x.cols(), T::NEG_INF).to_f32();
                let e = exp(v - max(v, 0));
                store(y.row(row), cols, (e / sum(e, 0)).cast::<T>(), cols < x.cols());
            }
        },
    );
    assert_eq!(k.name, "softmax");
    assert_eq!(k.space.len(), 12);
    assert_eq!(k.problem.dims, vec!["M", "N"]);
    assert_eq!(k.constraints.len(), 1);
    assert_eq!(k.constraints[0].phase(), Phase::Launch);
    let text = k.to_string();
    assert!(text.contains("arange BLOCK"), "{text}");
    assert!(text.contains("reduce_max"), "{text}");
    assert!(text.contains("store %"), "{text}");
    // The mutable output is not read, so the tuner need not reset it.
    assert!(k.read_written_params().is_empty());
}

#[test]
fn matmul_with_pipelined_loop_carries_the_accumulator() {
    let k = ok(
        quote!(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)]),
        quote! {
            #[tune(BM = [64, 128], BN = [64, 128], BK = [32, 64], STAGES = [2, 3], WARPS = [4, 8],
                   SMEM = [RowMajor, Padded, Swizzle128], PAD64 = [false, true])]
            #[constraint(smem_bytes() <= max_smem())]
            #[shapes(a = [M, K], b = [K, N], bias = [N], c = [M, N])]
            #[cost(flops = 2 * M * N * K)]
            pub fn matmul<T: Float>(a: &Tensor2<T>, b: &Tensor2<T>, bias: &Tensor1<T>, c: &mut Tensor2<T>) {
                let (pm, pn) = (program_id(0), program_id(1));
                let mut acc = zeros::<f32, BM, BN>();
                for k in pipelined(0..a.cols(), BK, STAGES) {
                    acc = dot(load_tile(a, [pm * BM, k], [BM, BK]), load_tile(b, [k, pn * BN], [BK, BN]), acc);
                }
                let biased = acc + expand_dims(load_tile(bias, [pn * BN], [BN]).to_f32(), 0);
                store_tile(c, [pm * BM, pn * BN], gelu(biased).cast::<T>());
            }
        },
    );
    let for_inst = k
        .body
        .insts
        .iter()
        .find(|i| matches!(i.op, Op::For { .. }))
        .expect("for");
    let Op::For {
        inits,
        body,
        stages,
        ..
    } = &for_inst.op
    else {
        unreachable!()
    };
    assert_eq!(inits.len(), 1, "acc is loop-carried");
    assert_eq!(body.args.len(), 2);
    assert!(stages.is_some());
    assert_eq!(k.constraints[0].phase(), Phase::Target);
    assert!(k.problem.flops.is_some());
    assert_eq!(
        k.value_names[for_inst.results[0].index()].as_deref(),
        Some("acc")
    );
}

#[test]
fn if_and_loop_with_scalar_params() {
    let k = ok(
        quote!(grid = [cdiv(x.len(), BLOCK)]),
        quote! {
            #[tune(BLOCK = [1024, 4096])]
            #[shapes(x = [N], y = [N])]
            pub fn chain(x: &Tensor1<f32>, y: &mut Tensor1<f32>, repeats: usize) {
                let offs = program_id(0) * BLOCK + arange::<BLOCK>();
                let mask = offs < x.len();
                let mut v = load(x, offs, mask, 0.0);
                for _ in 0..repeats / 2 {
                    v = v * 2.0;
                    v = v * 0.5;
                }
                if repeats % 2 == 1 {
                    v *= 2.0;
                }
                store(y, offs, v, mask);
            }
        },
    );
    let n_if = k
        .body
        .insts
        .iter()
        .filter(|i| matches!(i.op, Op::If { .. }))
        .count();
    assert_eq!(n_if, 1);
}

#[test]
fn three_errors_in_one_kernel_are_all_reported() {
    let errs = errors(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [128])]
            pub fn bad(x: &Tensor2<f32>, y: &Tensor2<f32>) {
                let cols = arange::<BLOK>();
                let v = frobnicate(cols);
                store(y.row(program_id(0)), arange::<BLOCK>(), 1.0);
            }
        },
    );
    assert_eq!(errs.len(), 3, "{errs:#?}");
    assert!(errs[0].contains("`BLOK` is used but not declared"));
    assert!(errs[1].contains("unknown operation `frobnicate`"));
    assert!(errs[2].contains("cannot write through `y`"));
}

#[test]
fn shape_rank_dtype_and_grid_errors() {
    let errs = errors(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BM = [64], BN = [32])]
            pub fn bad(x: &Tensor2<f32>, h: &Tensor2<f16>, y: &mut Tensor2<f32>, n: usize) {
                let a = arange::<BM>() + arange::<BN>();
                let t = arange::<n>();
                let r = load(x, arange::<BM>());
                let q = program_id(1);
                let d = load(x.row(0), arange::<BM>()) + load(h.row(0), arange::<BM>());
                let m = dot(zeros::<f32, BM, BN>(), zeros::<f32, BM, BN>(), zeros::<f32, BM, BN>());
            }
        },
    );
    let all = errs.join("\n");
    assert!(all.contains("do not broadcast"), "{all}");
    assert!(all.contains("non-constant tile shape"), "{all}");
    assert!(all.contains("rank mismatch"), "{all}");
    assert!(all.contains("program axis 1 is out of range"), "{all}");
    assert!(all.contains("dtype mismatch"), "{all}");
    assert!(all.contains("inner dimensions"), "{all}");
    assert_eq!(errs.len(), 6, "{all}");
}

#[test]
fn never_panics_on_odd_input() {
    let cases = vec![
        (
            quote!(),
            quote!(
                fn f() {}
            ),
        ),
        (
            quote!(grid = []),
            quote!(
                fn f() {}
            ),
        ),
        (
            quote!(grid = [1], bogus),
            quote!(
                fn f() {}
            ),
        ),
        (
            quote!(grid = [1]),
            quote!(
                struct S;
            ),
        ),
        (
            quote!(grid = [1]),
            quote!(
                fn f(x: &Tensor9<f32>) {
                    loop {}
                }
            ),
        ),
        (
            quote!(grid = [1]),
            quote!(
                async unsafe fn f<'a, const N: usize>(self) -> i32
                where
                    i32: Copy,
                {
                    x[0]
                }
            ),
        ),
        (
            quote!(grid = [1]),
            quote!(
                fn f(x: &Tensor1<f32>) {
                    let (a, b) = 1;
                    let _ = |x| x;
                    println!();
                    if true {
                    } else {
                    }
                }
            ),
        ),
        (
            quote!(grid = [q.rows()]),
            quote!(
                #[tune(A = [1, true], B = [], A = [2])]
                fn f() {
                    for i in 0..=3 {}
                }
            ),
        ),
    ];
    for (a, i) in cases {
        let c = compile(a, i);
        assert!(!c.errors.is_empty());
    }
}

/// A kernel with one scalar of each type, its `#[shapes]` given by `shapes`.
fn scalars_kernel(shapes: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    quote! {
        #[tune(BLOCK = [1024])]
        #[shapes(#shapes)]
        pub fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>, eps: f32, n: i32, big: i64, reps: usize, flag: bool) {
            let row = program_id(0);
            let cols = arange::<BLOCK>();
            let v = load(x.row(row), cols, cols < x.cols(), 0.0);
            store(y.row(row), cols, v + eps, cols < x.cols());
        }
    }
}

fn inputs(shapes: proc_macro2::TokenStream) -> Vec<InputGen> {
    ok(quote!(grid = [x.rows()]), scalars_kernel(shapes))
        .problem
        .inputs
}

#[test]
fn shapes_gives_scalar_values() {
    let k = ok(
        quote!(grid = [x.rows()]),
        scalars_kernel(quote!(
            x = [M, N],
            y = [M, N],
            eps = 1e-5,
            n = -3,
            big = 9007199254740992,
            reps = 64,
            flag = true
        )),
    );
    assert_eq!(k.problem.dims, vec!["M", "N"]);
    assert_eq!(k.problem.shapes[2], Vec::<String>::new());
    assert_eq!(
        k.problem.inputs,
        vec![
            InputGen::Random,
            InputGen::Random,
            InputGen::Value(1e-5),
            InputGen::Value(-3.0),
            InputGen::Value(9007199254740992.0),
            InputGen::Value(64.0),
            InputGen::Value(1.0),
        ]
    );
    // An integer literal for a float scalar; suffixes are accepted; `false` is 0; scalars
    // not given stay `Random`.
    assert_eq!(
        inputs(quote!(
            eps = 2,
            reps = 8usize,
            flag = false,
            n = -2147483648
        )),
        vec![
            InputGen::Random,
            InputGen::Random,
            InputGen::Value(2.0),
            InputGen::Value(-2147483648.0),
            InputGen::Random,
            InputGen::Value(8.0),
            InputGen::Value(0.0),
        ]
    );
}

#[test]
fn shapes_gives_scalar_ranges() {
    assert_eq!(
        inputs(quote!(
            eps = -1e-4..1e-4,
            n = -8..8,
            reps = 1..1025,
            big = 0..1
        )),
        vec![
            InputGen::Random,
            InputGen::Random,
            InputGen::Uniform(-1e-4, 1e-4),
            InputGen::Uniform(-8.0, 8.0),
            InputGen::Uniform(0.0, 1.0),
            InputGen::Uniform(1.0, 1025.0),
            InputGen::Random,
        ]
    );
}

#[test]
fn shapes_scalar_value_errors_are_all_reported() {
    let errs = errors(
        quote!(grid = [x.rows()]),
        scalars_kernel(quote!(
            eps = 1e-5 * 2,
            n = 3.0,
            reps = -1,
            big = 9007199254740993,
            flag = 1
        )),
    );
    let all = errs.join("\n");
    assert_eq!(errs.len(), 5, "{all}");
    assert!(
        errs[0].contains("the value of `eps` must be a numeric literal, not `1e-5 * 2`"),
        "{all}"
    );
    assert!(
        errs[1].contains("`n` is `i32`, but `3.0` is not an integer literal"),
        "{all}"
    );
    assert!(
        errs[2].contains("`-1` is out of range for `reps` (`usize`): expected 0 to 2^53"),
        "{all}"
    );
    assert!(!errs[2].contains("stored as f64"), "{all}");
    assert!(
        errs[3].contains(
            "`9007199254740993` is out of range for `big` (`i64`): expected -2^53 to 2^53"
        ),
        "{all}"
    );
    assert!(errs[3].contains("limited to 2^53"), "{all}");
    assert!(
        errs[4].contains("`flag` is `bool`; it takes `true` or `false`, not `1`"),
        "{all}"
    );
}

#[test]
fn shapes_scalar_values_must_fit_their_types() {
    let errs = errors(
        quote!(grid = [x.rows()]),
        scalars_kernel(quote!(
            eps = 1e39,
            n = 2147483648,
            reps = true,
            big = -1.5..1
        )),
    );
    let all = errs.join("\n");
    assert_eq!(errs.len(), 4, "{all}");
    assert!(errs[0].contains("`1e39` overflows `eps` (`f32`)"), "{all}");
    assert!(
        errs[1].contains(
            "`2147483648` is out of range for `n` (`i32`): expected -2147483648 to 2147483647"
        ),
        "{all}"
    );
    assert!(errs[2].contains("`reps` is `usize`, not `bool`"), "{all}");
    assert!(
        errs[3].contains("`big` is `i64`, but `-1.5` is not an integer literal"),
        "{all}"
    );
}

#[test]
fn shapes_range_and_kind_errors_name_the_parameters() {
    let errs = errors(
        quote!(grid = [x.rows()]),
        scalars_kernel(quote!(
            epsilon = 1e-5,
            x = 2.0,
            eps = [N],
            y = [M, N],
            y = [M, N],
            reps = 1..=4,
            n = 4..4,
            big = 1..,
            flag = false..true
        )),
    );
    let all = errs.join("\n");
    assert_eq!(errs.len(), 8, "{all}");
    assert!(
        errs[0].contains("`epsilon` is not a parameter of this kernel")
            && errs[0].contains(
                "the parameters are: tensors `x`, `y`; scalars `eps`, `n`, `big`, `reps`, `flag`"
            ),
        "{all}"
    );
    assert!(
        errs[1]
            .contains("`x` is a tensor; `#[shapes]` gives it dimension names, e.g. `x = [M, N]`")
            && errs[1].contains("the scalar parameters are `eps`, `n`, `big`, `reps`, `flag`"),
        "{all}"
    );
    assert!(
        errs[2].contains(
            "`eps` is a scalar (`f32`); `#[shapes]` gives dimension names only to tensors"
        ),
        "{all}"
    );
    assert!(
        errs[3].contains("`y` is given twice in `#[shapes]`"),
        "{all}"
    );
    assert!(
        errs[4].contains("the range of `reps` must be half-open"),
        "{all}"
    );
    assert!(errs[5].contains("the range of `n` is empty"), "{all}");
    assert!(
        errs[6].contains("the range of `big` needs both ends"),
        "{all}"
    );
    assert!(
        errs[7].contains("`flag` is `bool`; it takes `true` or `false`, not a range"),
        "{all}"
    );
}

#[test]
fn shapes_value_of_a_rejected_parameter_is_not_reported_again() {
    let errs = errors(
        quote!(grid = [1]),
        quote! {
            #[shapes(x = [N], s = 3)]
            fn k(x: &Tensor1<f32>, s: u8) {}
        },
    );
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(
        errs[0].contains("unsupported parameter type `u8`"),
        "{errs:#?}"
    );
}

/// Scalar values are part of the tuning problem, hence of the spec hash.
#[test]
fn shapes_values_are_part_of_the_spec_hash() {
    let hash = |shapes| {
        tilekit_ir::hash::spec_hash(&ok(quote!(grid = [x.rows()]), scalars_kernel(shapes)))
    };
    let given = hash(quote!(eps = 1e-5));
    assert_eq!(given, hash(quote!(eps = 1e-5)));
    assert_ne!(given, hash(quote!(eps = 1e-6)));
    assert_ne!(given, hash(quote!(eps = 1e-6..1e-4)));
    assert_ne!(given, hash(quote!(x = [x0, x1])));
}

/// Stage snapshots: the IR text of the brief's softmax and the launcher module of a kernel
/// with a scalar parameter (payload stubbed so the snapshot shows only the generated Rust).
#[test]
fn snapshots_of_ir_and_launcher() {
    let k = ok(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [1024, 2048], WARPS = [4, 8])]
            #[constraint(x.cols() <= BLOCK)]
            #[shapes(x = [M, N], y = [M, N])]
            pub fn softmax<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
                let row = program_id(0);
                let cols = arange::<BLOCK>();
                let v = load(x.row(row), cols, cols < x.cols(), T::NEG_INF).to_f32();
                let e = exp(v - max(v, 0));
                store(y.row(row), cols, (e / sum(e, 0)).cast::<T>(), cols < x.cols());
            }
        },
    );
    insta::assert_snapshot!("softmax_ir", k.to_string());

    let item: syn::ItemFn = syn::parse2(quote! {
        pub fn scale<T: Float>(x: &Tensor1<T>, y: &mut Tensor1<T>, factor: f32, n: usize) {}
    })
    .expect("fn");
    let mut cx = crate::ctxt::Ctxt::new();
    let sig = crate::parse::signature::parse(&item, &mut cx);
    let payload = crate::generate::launcher::Payload {
        ir_json: "<ir>",
        cuda: "<cuda>",
        doc: "",
        spec_hash: 42,
    };
    let tokens = crate::generate::launcher::module(&sig, &quote!(), Some(&payload));
    let file: syn::File = syn::parse2(tokens).expect("generated module parses");
    insta::assert_snapshot!("scale_launcher", prettyplease::unparse(&file));
}

#[test]
fn trans_lowers_as_call_and_method_and_rejects_rank_1() {
    let k = ok(
        quote!(grid = [cdiv(x.rows(), BM), cdiv(x.cols(), BN)]),
        quote! {
            #[tune(BM = [32, 64], BN = [32, 64])]
            pub fn tr<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
                let r0 = program_id(0) * BM;
                let c0 = program_id(1) * BN;
                let t = trans(load_tile(x, [r0, c0], [BM, BN]));
                store_tile(y, [c0, r0], t.t().t());
            }
        },
    );
    let n = k
        .body
        .insts
        .iter()
        .filter(|i| matches!(i.op, Op::Trans { .. }))
        .count();
    assert_eq!(n, 3);
    let errs = errors(
        quote!(grid = [1]),
        quote! {
            pub fn bad(x: &Tensor1<f32>, y: &mut Tensor1<f32>) {
                store_tile(y, [0], trans(load_tile(x, [0], [64])));
                let z = trans(load_tile(x, [0], [64]), 1);
            }
        },
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("`trans` takes a rank-2 tile, found rank 1")),
        "{errs:#?}"
    );
    assert!(
        errs.iter().any(|e| e.contains("usage: `trans(tile)`")),
        "{errs:#?}"
    );
}

#[test]
fn float_literals_and_float_scalars_in_launch_constraints() {
    let k = ok(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [128])]
            #[constraint(eps > 0.0 && eps < 1e-2)]
            pub fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>, eps: f32) {
                let cols = arange::<BLOCK>();
                let v = load(x.row(program_id(0)), cols, cols < x.cols(), 0.0);
                store(y.row(program_id(0)), cols, v + eps, cols < x.cols());
            }
        },
    );
    assert_eq!(k.constraints[0].phase(), Phase::Launch);
    assert_eq!(
        k.constraints[0].expr.to_string(),
        "((arg2 > 0.0) && (arg2 < 0.01))"
    );
    let errs = errors(
        quote!(grid = [x.rows()]),
        quote! {
            #[constraint(x.rows() > "1")]
            pub fn k(x: &Tensor2<f32>) {}
        },
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("integer, float and bool literals")),
        "{errs:?}"
    );
}

#[test]
fn argument_checks_are_kept_apart_and_left_out_of_the_spec_hash() {
    let body = quote! {
        pub fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>, eps: f32) {
            let cols = arange::<BLOCK>();
            let v = load(x.row(program_id(0)), cols, cols < x.cols(), 0.0);
            store(y.row(program_id(0)), cols, v + eps, cols < x.cols());
        }
    };
    let plain = ok(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [128])]
            #[constraint(x.cols() <= BLOCK)]
            #body
        },
    );
    let checked = ok(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [128])]
            #[constraint(x.cols() <= BLOCK)]
            #[check(eps > 0.0 && eps.is_finite())]
            #[check(is_finite(eps) || x.rows() == 0)]
            #body
        },
    );
    assert_eq!(checked.constraints, plain.constraints);
    assert_eq!(checked.checks.len(), 2);
    assert_eq!(
        checked.checks[0].expr.to_string(),
        "((arg2 > 0.0) && is_finite(arg2))"
    );
    assert_eq!(
        checked.checks[1].expr.to_string(),
        "(is_finite(arg2) || (arg0.dim(0) == 0))"
    );
    assert_eq!(
        tilekit_ir::hash::spec_hash(&checked),
        tilekit_ir::hash::spec_hash(&plain)
    );
    let errs = errors(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [128])]
            #[check(x.cols() <= BLOCK)]
            #[check(true)]
            pub fn k(x: &Tensor2<f32>, eps: f32) {}
        },
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("reads the tuning parameter `BLOCK`")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|e| e.contains("reads no argument")),
        "{errs:?}"
    );
}

#[test]
fn the_reserved_names_are_one_list_in_code_and_docs() {
    let docs = include_str!("../../docs/semantics.md");
    let rows: Vec<&str> = docs
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("| `"))
        .collect();
    assert_eq!(rows.len(), tilekit_ir::space::RESERVED.len(), "{rows:?}");
    for (row, r) in rows.iter().zip(tilekit_ir::space::RESERVED.iter()) {
        assert!(row.starts_with(&format!("| `{}` |", r.name)), "{row}");
        assert!(row.ends_with(&format!("| {} |", r.meaning)), "{row}");
        if let tilekit_ir::space::ReservedValues::Names(names) = r.values {
            for n in names {
                assert!(row.contains(&format!("`{n}`")), "{row}: {n}");
            }
        }
    }
    assert_eq!(
        tilekit_ir::space::SMEM_LAYOUTS,
        tilekit_codegen::smem::SmemKind::NAMES
    );
}

#[test]
fn names_that_clash_with_tuning_names_or_builtins_are_errors() {
    let errs = errors(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [16], SMEM = [Padded, Diagonal])]
            fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>, BLOCK: usize, arange: f32) {
                let BLOCK = 64;
                let cols = arange::<16>();
                store(y.row(0), cols, load(x.row(0), cols, cols < x.cols(), 0.0), cols < x.cols());
            }
        },
    );
    let has = |s: &str| errs.iter().any(|e| e.contains(s));
    assert!(
        has("parameter `BLOCK` has a name kernel code already uses: `BLOCK` is a tuning parameter"),
        "{errs:?}"
    );
    assert!(
        has("parameter `arange` has a name kernel code already uses: `arange` is a builtin"),
        "{errs:?}"
    );
    assert!(has("`BLOCK` cannot be rebound in a kernel"), "{errs:?}");
    assert!(has("`Diagonal` is not a value of `SMEM`"), "{errs:?}");
}

#[test]
fn a_bad_tuning_value_is_reported_alone() {
    let errs = errors(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [-5, 128, 1.5], WARPS = [4], GROUP = [true, 2])]
            fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
                let cols = arange::<BLOCK>();
                let g = GROUP;
                store(y.row(0), cols, load(x.row(0), cols, cols < x.cols(), 0.0), cols < x.cols());
            }
        },
    );
    assert_eq!(
        errs.iter()
            .filter(|e| e.contains("tuning values are non-negative integers"))
            .count(),
        2,
        "{errs:?}"
    );
    assert!(errs.iter().any(|e| e.contains("mix integers")), "{errs:?}");
    assert!(
        !errs.iter().any(|e| e.contains("used but not declared")),
        "{errs:?}"
    );
    assert_eq!(errs.len(), 3, "{errs:?}");
}

/// A gather over a flattened batch, with the `#[shapes]` given.
fn embed_kernel(shapes: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    quote! {
        #[tune(BLOCK = [64])]
        #[shapes(#shapes)]
        fn embed<T: Float>(ids: &Tensor1<i64>, table: &Tensor2<T>, y: &mut Tensor2<T>, scale: f32) {
            let row = program_id(0);
            let id = load(ids, row);
            let cols = arange::<BLOCK>();
            let mask = cols < table.cols();
            store(y.row(row), cols, load(table.row(id), cols, mask, 0.0), mask);
        }
    }
}

#[test]
fn shapes_relate_dimensions_and_give_integer_tensors_a_range() {
    use tilekit_ir::{DerivedDim, Expr, ExprOp};
    let k = ok(
        quote!(grid = [ids.len()]),
        embed_kernel(quote!(
            ids: 0..V,
            D = L + 1,
            L = B * S,
            ids = [L],
            table = [V, D],
            y = [L, D]
        )),
    );
    // Derived dimensions leave `dims` (the `--shape` order); new ones from relations
    // follow; each derived one comes after those it reads.
    assert_eq!(k.problem.dims, ["V", "B", "S"]);
    let dim = |n: &str| Expr::Dim(n.into());
    assert_eq!(
        k.problem.derived,
        [
            DerivedDim {
                name: "L".into(),
                expr: Expr::bin(ExprOp::Mul, dim("B"), dim("S")),
            },
            DerivedDim {
                name: "D".into(),
                expr: Expr::bin(ExprOp::Add, dim("L"), Expr::Int(1)),
            },
        ]
    );
    assert_eq!(k.problem.inputs[0], InputGen::Range(Expr::Int(0), dim("V")));
    assert_eq!(k.problem.inputs[1], InputGen::Random);
    let d = tilekit_ir::cost::parse_shape(&k, "50x3x7").unwrap();
    assert_eq!((d["L"], d["D"]), (21, 22));
    // Without relations, the problem (and so the spec hash) serializes as before.
    let plain = ok(
        quote!(grid = [ids.len()]),
        embed_kernel(quote!(ids = [L], table = [V, D], y = [L, D])),
    );
    assert!(!plain.to_json().contains("derived"));
}

#[test]
fn bad_relations_and_ranges_are_reported_together() {
    let errs = errors(
        quote!(grid = [ids.len()]),
        embed_kernel(quote!(
            ids = [L],
            table = [V, D],
            y = [L, D],
            L = L * 2,
            D = table * 2,
            V = 1.5,
            table: 0..V,
            scale: 0..4,
            ids: 0..W,
            ids: 4..4
        )),
    );
    let want = [
        "dimension `L` is defined in terms of itself",
        "`table` is a parameter, not a dimension",
        "this is not a dimension expression",
        "`table: lo..hi` needs an integer tensor",
        "`scale: lo..hi` needs an integer tensor",
        "`W` is not a dimension of this kernel",
        "the range of `ids` is empty",
    ];
    for w in want {
        assert!(
            errs.iter().any(|e| e.contains(w)),
            "missing `{w}` in {errs:#?}"
        );
    }
    assert_eq!(errs.len(), want.len(), "{errs:#?}");
}
