//! Prefix loads behind one bounds test (`tk::load_prefix2/3`, the code generator's
//! `emit/load_group.rs`): which loads are grouped and where the work between them goes.

use super::{compile, stage_codegen};
use proc_macro2::TokenStream;
use quote::quote;

/// The CUDA template of a kernel over rows of `x`, `dy` (and `dx` written).
fn cuda(body: TokenStream) -> String {
    let c = compile(
        quote!(grid = [x.rows()]),
        quote! {
            #[tune(BLOCK = [1024])]
            pub fn k<T: Float>(
                x: &Tensor2<T>,
                dy: &Tensor2<T>,
                mean: &Tensor1<f32>,
                dx: &mut Tensor2<T>,
            ) { #body }
        },
    );
    assert!(c.errors.is_empty(), "{:#?}", c.errors);
    stage_codegen(&c.kernel.expect("kernel")).expect("codegen")
}

/// Line index of the first line containing `needle`.
fn line_of(src: &str, needle: &str) -> usize {
    src.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("missing `{needle}` in:\n{src}"))
}

#[test]
fn two_loads_of_one_row_share_a_bounds_test_and_their_users_follow() {
    let src = cuda(quote! {
        let row = program_id(0);
        let cols = arange::<BLOCK>();
        let m = cols < x.cols();
        let a = load(x.row(row), cols, m, 0.0).to_f32();
        let b = load(dy.row(row), cols, m, 0.0).to_f32();
        let mu = load(mean, row, true, 0.0);
        store(dx.row(row), cols, ((a - mu) * b).cast::<T>(), m);
    });
    assert_eq!(src.matches("tk::load_prefix2<").count(), 1, "{src}");
    assert_eq!(src.matches("tk::load_prefix<").count(), 0, "{src}");
    let group = line_of(&src, "tk::load_prefix2<");
    // The scalar load after them goes ahead of the group; the widening of `a` (written
    // between the two loads) after it.
    assert!(line_of(&src, "tk::load<ALIGNED>(") < group, "{src}");
    assert!(line_of(&src, "_a = tk::cast<float>(") > group, "{src}");
    assert!(line_of(&src, "tk::store_prefix<") > group, "{src}");
}

#[test]
fn loads_with_different_limits_or_a_store_between_stay_apart() {
    let src = cuda(quote! {
        let row = program_id(0);
        let cols = arange::<BLOCK>();
        let a = load(x.row(row), cols, cols < x.cols(), 0.0);
        let b = load(dy.row(row), cols, cols < dy.cols() - 1, 0.0);
        store(dx.row(row), cols, a + b, cols < x.cols());
        let c = load(x.row(row), cols, cols < x.cols(), 0.0);
        store(dx.row(row), cols, c, cols < x.cols());
    });
    assert_eq!(src.matches("tk::load_prefix2<").count(), 0, "{src}");
    assert_eq!(src.matches("tk::load_prefix<").count(), 3, "{src}");
}

#[test]
fn a_row_loaded_ahead_for_the_next_trip_is_not_grouped() {
    let src = cuda(quote! {
        let pid = program_id(0);
        let step = num_programs(0);
        let cols = arange::<BLOCK>();
        let m = cols < x.cols();
        let mut xa = load(x.row(pid), cols, m, 0.0);
        let mut da = load(dy.row(pid), cols, m, 0.0);
        for row in (pid..x.rows()).step_by(step) {
            let v = xa.to_f32() * da.to_f32();
            xa = load(x.row(row + step), cols, m, 0.0);
            da = load(dy.row(row + step), cols, m, 0.0);
            store(dx.row(row), cols, v.cast::<T>(), m);
        }
    });
    // Both pairs feed the loop (its initial values, its `yield`): each load alone.
    assert_eq!(src.matches("tk::load_prefix2<").count(), 0, "{src}");
    assert_eq!(src.matches("tk::load_prefix<").count(), 4, "{src}");
}
