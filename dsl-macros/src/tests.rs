//! Front-end tests: parse + lower + validate on token streams, without a compiler run.

use super::compile;
use quote::quote;
use tilekit_ir::{Op, Phase};

pub(crate) fn ok(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> tilekit_ir::Kernel {
    let c = compile(attr, item);
    assert!(c.errors.is_empty(), "unexpected errors: {:#?}", c.errors);
    c.kernel.expect("kernel")
}

pub(crate) fn errors(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> Vec<String> {
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
fn size_of_a_generic_in_constraints_is_a_target_phase_expression() {
    let k = ok(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [128], WARPS = [1, 2])]
            #[constraint(BLOCK % (WARPS * 512 / size_of::<T>()) == 0 || std::mem::size_of::<f32>() == 4)]
            pub fn k<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
                let cols = arange::<BLOCK>();
                let v = load(x.row(program_id(0)), cols, cols < x.cols(), 0.0);
                store(y.row(program_id(0)), cols, v, cols < x.cols());
            }
        },
    );
    assert_eq!(k.constraints[0].phase(), Phase::Target);
    let text = k.constraints[0].expr.to_string();
    assert!(
        text.contains("sizeof(T)") && text.contains("sizeof(f32)"),
        "{text}"
    );
    let errs = errors(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [128])]
            #[constraint(BLOCK * size_of::<U>() <= 512 && size_of(4) > 0)]
            pub fn k<T: Float>(x: &Tensor2<T>) {}
        },
    );
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(
        errs.iter()
            .any(|e| e.contains("generic parameter of the kernel")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|e| e.contains("`size_of::<T>()`")),
        "{errs:?}"
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
