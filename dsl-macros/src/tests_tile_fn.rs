//! `#[tile_fn]` on token streams: the helper's expansion (snapshot), the chain a kernel
//! starts, and a kernel compiled with a helper's bundle, which lowers to the IR of the
//! same kernel written out.

use crate::tile_fn::bundle::{Bundle, ChainState};
use crate::tile_fn::{chain_impl, tile_fn_impl};
use crate::{compile, compile_with, kernel_impl};
use proc_macro2::TokenStream;
use quote::quote;

fn helper() -> TokenStream {
    quote! {
        /// Mean and M2 of the masked lanes.
        #[tile_fn]
        pub fn stats(v: Tile<f32, BLOCK>, mask: Tile<bool, BLOCK>, n: f32) -> (f32, f32) {
            let mu = sum(v, 0) / n;
            let d = where_(mask, v - mu, 0.0);
            (mu, sum(d * d, 0))
        }
    }
}

fn kernel_attr() -> TokenStream {
    quote!(grid = [x.rows()])
}

fn kernel_with_helper() -> TokenStream {
    quote! {
        #[tune(BLOCK = [256])]
        fn k(x: &Tensor2<f32>, var: &mut Tensor1<f32>) {
            let cols = arange::<BLOCK>();
            let mask = cols < x.cols();
            let v = load(x.row(program_id(0)), cols, mask, 0.0);
            let (mu, m2) = stats(v, mask, x.cols().to_f32());
            store(var, program_id(0), m2 / x.cols().to_f32() + mu * 0.0);
        }
    }
}

/// The helper's bundle, as its callback macro carries it.
fn bundle() -> Bundle {
    Bundle {
        id: quote::format_ident!("__tile_fn_stats_0"),
        item: helper(),
        deps: Vec::new(),
    }
}

#[test]
fn a_helper_expands_to_a_callback_macro_and_a_reexport() {
    let out = tile_fn_impl(TokenStream::new(), helper());
    let file: syn::File = syn::parse2(out).expect("items");
    insta::assert_snapshot!("tile_fn_expansion", prettyplease::unparse(&file));
}

#[test]
fn a_kernel_calling_a_helper_asks_for_its_tokens() {
    let out = kernel_impl(kernel_attr(), kernel_with_helper()).to_string();
    assert!(
        out.starts_with("stats ! { { :: tilekit :: __tile_fn_chain }"),
        "{out}"
    );
    assert!(out.contains("@ requested \"stats\""), "{out}");
}

#[test]
fn the_chain_compiles_the_kernel_with_the_bundle_and_the_ir_is_the_written_out_one() {
    let b = bundle();
    let state = ChainState {
        target: crate::tile_fn::bundle::Target::Kernel,
        attr: kernel_attr(),
        item: kernel_with_helper(),
        resolved: Vec::new(),
        requested: Some("stats".into()),
        bundle: Some(b.clone()),
    };
    let out = chain_impl(state.to_tokens()).to_string();
    assert!(out.contains("pub static SPEC"), "{out}");

    let with = compile_with(
        kernel_attr(),
        kernel_with_helper(),
        Some(&[("stats".into(), b)]),
        Vec::new(),
    );
    assert!(with.errors.is_empty(), "{:?}", with.errors);
    let inline = compile(
        kernel_attr(),
        quote! {
            #[tune(BLOCK = [256])]
            fn k(x: &Tensor2<f32>, var: &mut Tensor1<f32>) {
                let cols = arange::<BLOCK>();
                let mask = cols < x.cols();
                let v = load(x.row(program_id(0)), cols, mask, 0.0);
                let n = x.cols().to_f32();
                let mu = sum(v, 0) / n;
                let d = where_(mask, v - mu, 0.0);
                let m2 = sum(d * d, 0);
                store(var, program_id(0), m2 / x.cols().to_f32() + mu * 0.0);
            }
        },
    );
    assert!(inline.errors.is_empty(), "{:?}", inline.errors);
    let hash =
        |c: &crate::Compiled| tilekit_ir::hash::spec_hash(c.kernel.as_ref().expect("kernel"));
    assert_eq!(hash(&with), hash(&inline));
}

/// A helper's parameter names only the arguments the caller left unnamed: the caller's
/// variables and kernel parameters keep their names in the generated code (a helper
/// called with a kernel's `logits` as its `dlogits` does not rename it), while an
/// unnamed argument (here `x.cols().to_f32()`) takes the parameter's name.
#[test]
fn a_helper_does_not_rename_the_callers_values() {
    let with = compile_with(
        kernel_attr(),
        quote! {
            #[tune(BLOCK = [256])]
            fn k(x: &Tensor2<f32>, var: &mut Tensor1<f32>) {
                let cols = arange::<BLOCK>();
                let keep = cols < x.cols();
                let row = load(x.row(program_id(0)), cols, keep, 0.0);
                let (mu, m2) = stats(row, keep, x.cols().to_f32());
                store(var, program_id(0), m2 / x.cols().to_f32() + mu * 0.0);
            }
        },
        Some(&[("stats".into(), bundle())]),
        Vec::new(),
    );
    assert!(with.errors.is_empty(), "{:?}", with.errors);
    let k = with.kernel.as_ref().expect("kernel");
    let names: Vec<&str> = k.value_names.iter().flatten().map(String::as_str).collect();
    for kept in ["row", "keep", "cols"] {
        assert!(names.contains(&kept), "`{kept}` lost its name: {names:?}");
    }
    // The helper's `v` and `mask` were the caller's `row` and `keep`: no value took them.
    assert!(
        !names.contains(&"v") && !names.contains(&"mask"),
        "{names:?}"
    );
    // The unnamed argument took the parameter's name.
    assert!(names.contains(&"n"), "{names:?}");
}
