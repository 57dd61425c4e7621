//! Cache hints: `.evict_first()` / `.evict_last()` on the view of a `load` or `store`.

use super::compile;
use quote::quote;
use tilekit_ir::{CachePolicy, Kernel, Op};

/// The cache policies of the kernel's loads and stores, in program order.
fn policies(k: &Kernel) -> Vec<(&'static str, CachePolicy)> {
    fn walk(b: &tilekit_ir::Block, out: &mut Vec<(&'static str, CachePolicy)>) {
        for inst in &b.insts {
            match &inst.op {
                Op::Load { cache, .. } => out.push(("load", *cache)),
                Op::Store { cache, .. } => out.push(("store", *cache)),
                Op::For { body, .. } => walk(body, out),
                Op::If {
                    then_block,
                    else_block,
                    ..
                } => {
                    walk(then_block, out);
                    walk(else_block, out);
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&k.body, &mut out);
    out
}

#[test]
fn hints_mark_their_access_and_nothing_else() {
    let c = compile(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [1024])]
            pub fn two_pass<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
                let row = program_id(0);
                let cols = arange::<BLOCK>();
                let m = cols < x.cols();
                let a = load(x.row(row).evict_last(), cols, m, 0.0).to_f32();
                let b = load((x.row(row)).evict_first(), cols, m, 0.0).to_f32();
                let c = load(x.row(row), cols, m, 0.0).to_f32();
                store(y.row(row).evict_first(), cols, (a + b + c).cast::<T>(), m);
                store(y.row(row), cols, (a * b).cast::<T>(), m);
            }
        },
    );
    assert!(c.errors.is_empty(), "{:#?}", c.errors);
    let k = c.kernel.expect("kernel");
    assert_eq!(
        policies(&k),
        vec![
            ("load", CachePolicy::EvictLast),
            ("load", CachePolicy::EvictFirst),
            ("load", CachePolicy::Normal),
            ("store", CachePolicy::EvictFirst),
            ("store", CachePolicy::Normal),
        ]
    );
    let text = k.to_string();
    assert_eq!(text.matches(" evict_first").count(), 2, "{text}");
    assert_eq!(text.matches(" evict_last").count(), 1, "{text}");
    // The CUDA template passes the policy to the prelude's access; unhinted ones keep the
    // default (no argument). The three loads share one bounds test (`tk::load_prefix3`),
    // each with its own policy, in order.
    let cuda = super::stage_codegen(&k).expect("codegen");
    let grouped: Vec<&str> = cuda
        .lines()
        .filter(|l| l.contains("tk::load_prefix3<"))
        .collect();
    assert_eq!(grouped.len(), 1, "{cuda}");
    assert!(
        grouped[0].contains(
            "tk::load_prefix3<ALIGNED, tk::EVICT_LAST, ALIGNED, tk::EVICT_FIRST, ALIGNED, tk::CACHE_NORMAL,"
        ),
        "{}",
        grouped[0]
    );
    let stores: Vec<&str> = cuda
        .lines()
        .filter(|l| l.contains("tk::load_prefix<") || l.contains("tk::store_prefix<"))
        .collect();
    assert_eq!(stores.len(), 2, "{cuda}");
    assert!(
        stores[0].contains("tk::store_prefix<") && stores[0].contains("TK_L, tk::EVICT_FIRST>"),
        "{}",
        stores[0]
    );
    assert!(stores[1].contains("TK_L>"), "{}", stores[1]);
}

#[test]
fn a_hint_is_part_of_the_spec_hash_and_no_hint_changes_nothing() {
    let hash = |body: proc_macro2::TokenStream| {
        let c = compile(
            quote!(grid = [x.rows()]),
            quote! {
                #[tune(BLOCK = [1024])]
                pub fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) { #body }
            },
        );
        assert!(c.errors.is_empty(), "{:#?}", c.errors);
        let k = c.kernel.expect("kernel");
        let json = serde_json::to_string(&k).expect("json");
        (tilekit_ir::hash::spec_hash(&k), json.contains("cache"))
    };
    let plain = hash(quote! {
        let cols = arange::<BLOCK>();
        store(y.row(program_id(0)), cols, load(x.row(program_id(0)), cols, cols < x.cols()), cols < x.cols());
    });
    let hinted = hash(quote! {
        let cols = arange::<BLOCK>();
        store(y.row(program_id(0)).evict_first(), cols, load(x.row(program_id(0)), cols, cols < x.cols()), cols < x.cols());
    });
    assert!(
        !plain.1,
        "a kernel without hints serializes no `cache` field"
    );
    assert!(hinted.1);
    assert_ne!(plain.0, hinted.0);
}

#[test]
fn misplaced_or_malformed_hints_are_spanned_errors() {
    let c = compile(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [1024])]
            pub fn bad(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
                let cols = arange::<BLOCK>();
                let v = x.row(program_id(0)).evict_first();
                let w = load(x.row(program_id(0)).evict_last(1), cols);
                let t = load_tile(x.evict_first(), [0, 0], [1, BLOCK]);
                store(y.row(program_id(0)), cols, w);
            }
        },
    );
    assert_eq!(c.errors.len(), 3, "{:#?}", c.errors);
    assert!(c.errors[0].contains("`.evict_first()` is a cache hint for one access"));
    assert!(c.errors[1].contains("`.evict_last()` takes no arguments"));
    assert!(c.errors[2].contains("`.evict_first()` is a cache hint for one access"));
}
