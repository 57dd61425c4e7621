//! `#[shapes]`: values and ranges for scalar parameters, relations between dimensions and
//! tensors' value ranges (integer ones over dimensions, float ones between literals), the errors each reports (all at once, named), and their
//! part in the spec hash.

use super::tests::{errors, ok};
use quote::quote;
use tilekit_ir::InputGen;

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
fn a_float_tensor_takes_a_literal_value_range() {
    let got = inputs(quote!(x = [M, N], y = [M, N], x: -2..0.5));
    assert_eq!(got[0], InputGen::Uniform(-2.0, 0.5));
    assert_eq!(got[1], InputGen::Random);
    let errs = errors(
        quote!(grid = [x.rows()]),
        scalars_kernel(quote!(x = [M, N], x: 1.0..1.0, y: 0.0..=1.0)),
    );
    assert!(
        errs.iter().any(|e| e.contains("the range of `x` is empty")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|e| e.contains("must be half-open")),
        "{errs:?}"
    );
    assert_eq!(errs.len(), 2, "{errs:?}");
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
fn steps_give_an_integer_tensor_equal_cumulative_lengths() {
    use tilekit_ir::Expr;
    let k = ok(
        quote!(grid = [ids.len()]),
        embed_kernel(quote!(
            ids: steps(S),
            L = B * S,
            ids = [L],
            table = [V, D],
            y = [L, D]
        )),
    );
    assert_eq!(k.problem.inputs[0], InputGen::Steps(Expr::Dim("S".into())));
    // `--shape VxDxBxS`.
    let d = tilekit_ir::cost::parse_shape(&k, "50x8x3x7").unwrap();
    assert_eq!(
        tilekit_ir::cost::value_step(&k.problem.inputs[0], &d),
        Ok(Some(7))
    );
    assert_eq!(
        tilekit_ir::cost::value_step(&InputGen::Random, &d),
        Ok(None)
    );
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
        "the range of the float tensor `table` takes number literals",
        "`scale: lo..hi` needs a tensor parameter",
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
