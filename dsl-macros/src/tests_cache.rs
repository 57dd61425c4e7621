//! Cache hints: `.evict_first()` / `.evict_last()` on the view of a `load` or `store`: their
//! part in the spec hash and their errors (which access each marks and the CUDA it
//! generates: `tests/tests/codegen_cache_hints.rs`).

use super::compile;
use quote::quote;

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
