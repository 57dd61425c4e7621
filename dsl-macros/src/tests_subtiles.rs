//! Front-end tests of extents written as expressions of tuning parameters, of sub-tiles
//! (`slice`, `x[a..b, c..]`) and of recovery from a body that does not parse.

use super::compile;
use quote::quote;
use tilekit_ir::{Affine, Dim, Op, Ty};

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

/// The shape of the value named `name`.
fn shape_of(k: &tilekit_ir::Kernel, name: &str) -> String {
    let (types, diags) = tilekit_ir::infer(k);
    assert!(diags.is_empty(), "{diags:?}");
    let i = k
        .value_names
        .iter()
        .position(|n| n.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no value `{name}`"));
    match &types.tys[i] {
        Ty::Tile { shape, .. } => shape.to_string(),
        other => panic!("`{name}` is {other:?}"),
    }
}

#[test]
fn extents_are_linear_expressions_normalised() {
    let k = ok(
        quote!(grid = [cdiv(x.rows(), BM), cdiv(x.cols(), BN)]),
        quote! {
            #[tune(BM = [16, 32], BN = [32, 64])]
            pub fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
                let (pm, pn) = (program_id(0), program_id(1));
                let halo = load_tile(x, [pm * BM - 1, pn * BN - 1], [BM + 2, 2 + BN]);
                let half = zeros::<f32, { BM / 2 }, { (BN + 1) - 1 }>();
                let twice = arange::<{ 2 * BN - BN }>();
                let third = zeros::<f32, { (2 * BM + 2) / 2 }, BN>();
                store_tile(y, [pm * BM, pn * BN], halo.slice([1, 1], [BM, BN]) + twice.to_f32() + third.slice([0, 0], [BM, BN]) + zeros::<f32, BM, BN>());
                store_tile(y, [pm * BM, pn * BN], half);
            }
        },
    );
    assert_eq!(shape_of(&k, "halo"), "[BM + 2, BN + 2]");
    assert_eq!(shape_of(&k, "half"), "[BM / 2, BN]");
    // `2 * BN - BN` is `BN` again: it broadcasts with `[BM, BN]`.
    assert_eq!(shape_of(&k, "twice"), "[BN]");
    assert_eq!(shape_of(&k, "third"), "[BM + 1, BN]");
    let Some(Op::LoadTile { shape, .. }) = k
        .body
        .insts
        .iter()
        .map(|i| &i.op)
        .find(|op| matches!(op, Op::LoadTile { .. }))
    else {
        panic!("no load_tile");
    };
    assert_eq!(
        shape[0],
        Dim::Affine(Affine::param("BM").add(&Affine::constant(2)).unwrap())
    );
}

#[test]
fn five_point_stencil_slices_one_halo_tile() {
    let k = ok(
        quote!(grid = [cdiv(x.rows(), BM), cdiv(x.cols(), BN)]),
        quote! {
            #[tune(BM = [16, 32], BN = [32, 64], WARPS = [4])]
            pub fn stencil(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
                let (pm, pn) = (program_id(0), program_id(1));
                let h = load_tile(x, [pm * BM - 1, pn * BN - 1], [BM + 2, BN + 2]);
                let c = h.slice(1..BM + 1, 1..BN + 1);
                let n = h.slice(0..BM, 1..BN + 1);
                let s = h.slice(2.., 1..BN + 1);
                let w = h.slice([1, 0], [BM, BN]);
                let e = h[1..=BM, 2..];
                store_tile(y, [pm * BM, pn * BN], 4.0 * c - n - s - w - e);
            }
        },
    );
    for v in ["c", "n", "s", "w", "e"] {
        assert_eq!(shape_of(&k, v), "[BM, BN]", "{v}");
    }
    let text = k.to_string();
    assert!(text.contains("slice %"), "{text}");
    assert!(text.contains("at [2, 1] shape [.., BN]"), "{text}");
}

#[test]
fn rank_one_ranges_index_without_rewriting() {
    let k = ok(
        quote!(grid = [1]),
        quote! {
            #[tune(BLOCK = [64, 128])]
            pub fn k(x: &Tensor1<f32>, y: &mut Tensor1<f32>) {
                let v = load_tile(x, [0], [BLOCK + 1]);
                let d = v[1..] - v[..BLOCK];
                store_tile(y, [0], d);
            }
        },
    );
    assert_eq!(shape_of(&k, "d"), "[BLOCK]");
}

#[test]
fn extent_errors_name_the_expression_and_the_configuration() {
    let e = errors(
        quote!(grid = [1]),
        quote! {
            #[tune(BM = [64, 96], BN = [64, 128])]
            pub fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
                let a = zeros::<f32, { BM * BN }, 1>();
                let b = zeros::<f32, { BM / 64 }, 1>();
                let c = zeros::<f32, { BN - 64 }, 1>();
                let t = load_tile(x, [0, 0], [BM + 2, BN]);
                let d = t.slice(0..BM + 3, ..);
                let f = t.slice(BM..BM, ..);
                let g = t[3];
            }
        },
    );
    let all = e.join("\n");
    assert!(
        all.contains("one side of `*` must be an integer literal"),
        "{all}"
    );
    assert!(
        all.contains("tile extent `BM / 64` is not an integer (the division leaves a remainder) when BM = 96"),
        "{all}"
    );
    assert!(
        all.contains("tile extent `BN - 64` is not positive (0) when BN = 64"),
        "{all}"
    );
    assert!(
        all.contains(
            "the slice `0..BM + 3` of axis 0 (extent `BM + 2`) reaches past the tile by 1"
        ),
        "{all}"
    );
    assert!(
        all.contains("empty sub-tile: this range has 0 elements"),
        "{all}"
    );
    assert!(
        all.contains("tiles are indexed with ranges, one per axis"),
        "{all}"
    );
    assert_eq!(e.len(), 6, "{all}");
}

#[test]
fn a_body_that_does_not_parse_gives_one_error_and_keeps_the_launchers() {
    let c = compile(
        quote!(grid = [1]),
        quote! {
            #[tune(BM = [64])]
            pub fn k(x: &Tensor1<f32>, y: &mut Tensor1<f32>) {
                let a = ;
            }
        },
    );
    assert_eq!(c.errors.len(), 1, "{:?}", c.errors);
    let out = c.tokens.to_string();
    assert!(
        !out.contains("# [tune"),
        "the fn and its attributes are not re-emitted: {out}"
    );
    assert!(out.contains("pub fn launch"), "{out}");
}

#[test]
fn a_typed_constant_accumulator_mismatch_points_at_its_let() {
    let e = errors(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [128])]
            pub fn k<T: Float>(x: &Tensor2<T>, y: &mut Tensor1<f32>) {
                let cols = arange::<BLOCK>();
                let mut m = T::NEG_INF;
                for i in 0..x.rows() {
                    let v = load(x.row(i), cols, cols < x.cols(), T::NEG_INF).to_f32();
                    m = maximum(m, max(v, 0));
                }
                store(y, arange::<1>(), m + 1.0);
            }
        },
    );
    let all = e.join("\n");
    assert!(
        all.contains("dtype mismatch: `maximum` between T and f32"),
        "{all}"
    );
    assert!(
        all.contains("`m` is a T scalar from its first value here, in the loop too; a constant like `T::NEG_INF` has the type it names"),
        "{all}"
    );
    // The third: storing the T sum into the f32 `y`.
    assert_eq!(e.len(), 3, "{all}");
}

#[test]
fn the_documented_scalar_accumulator_lowers() {
    // docs/semantics.md, "Types".
    ok(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [128])]
            pub fn k<T: Float>(x: &Tensor2<T>, y: &mut Tensor1<f32>) {
                let row = program_id(0);
                let cols = arange::<BLOCK>();
                let mut m = f32::NEG_INF;
                let mut s = 0.0f32;
                for c in (0..x.cols()).step_by(BLOCK) {
                    let v = load(x.row(row), cols + c, cols + c < x.cols(), T::NEG_INF).to_f32();
                    let m_new = maximum(m, max(v, 0));
                    s = s * exp(m - m_new) + sum(exp(v - m_new), 0);
                    m = m_new;
                }
                store(y, row, m + log(s));
            }
        },
    );
}
