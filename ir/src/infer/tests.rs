//! Inference tests: types of a softmax-like body, one message per error, `dot` checks.

use super::*;
use crate::builder::KernelBuilder;
use crate::expr::Expr;
use crate::kernel::Param;
use crate::op::{BinOp, Literal, UnaryOp};
use crate::shape::Dim;
use crate::space::{Space, TuneParam, TuneValue};

fn base() -> KernelBuilder {
    let mut b = KernelBuilder::new("k");
    let k = b.kernel_mut();
    k.generics = vec!["T".into()];
    k.params = vec![
        Param {
            name: "x".into(),
            kind: ParamKind::Tensor {
                rank: 2,
                elem: Elem::Generic("T".into()),
                mutable: false,
            },
            loc: Loc::default(),
        },
        Param {
            name: "y".into(),
            kind: ParamKind::Tensor {
                rank: 2,
                elem: Elem::Generic("T".into()),
                mutable: true,
            },
            loc: Loc::default(),
        },
    ];
    k.grid = vec![Expr::TensorDim { param: 0, axis: 0 }];
    k.space = Space {
        params: vec![
            TuneParam {
                name: "BLOCK".into(),
                values: vec![TuneValue::Int(1024)],
                loc: Loc::default(),
            },
            TuneParam {
                name: "BN".into(),
                values: vec![TuneValue::Int(64)],
                loc: Loc::default(),
            },
        ],
    };
    b
}

fn at(line: u32) -> Loc {
    Loc { span: line, line }
}

#[test]
fn softmax_row_types() {
    let mut b = base();
    let x = b.push(Op::TensorParam { index: 0 }, at(1));
    let pid = b.push(Op::ProgramId { axis: 0 }, at(2));
    let cols = b.push(
        Op::Arange {
            n: Dim::param("BLOCK"),
        },
        at(3),
    );
    let n = b.push(Op::TensorDim { tensor: x, axis: 1 }, at(4));
    let mask = b.push(
        Op::Cmp {
            op: crate::op::CmpOp::Lt,
            a: cols,
            b: n,
        },
        at(4),
    );
    let row = b.push(
        Op::Row {
            tensor: x,
            index: pid,
        },
        at(4),
    );
    let ninf = b.push(Op::Lit(Literal::Float(f64::NEG_INFINITY)), at(4));
    let v = b.push(
        Op::Load {
            view: row,
            offsets: cols,
            mask: Some(mask),
            other: Some(ninf),
            cache: Default::default(),
        },
        at(4),
    );
    let v32 = b.push(
        Op::Cast {
            x: v,
            to: Elem::of(DType::F32),
        },
        at(5),
    );
    let m = b.push(
        Op::Reduce {
            op: crate::op::ReduceOp::Max,
            x: v32,
            axis: 0,
        },
        at(6),
    );
    let d = b.push(
        Op::Binary {
            op: BinOp::Sub,
            a: v32,
            b: m,
        },
        at(6),
    );
    let e = b.push(
        Op::Unary {
            op: UnaryOp::Exp,
            x: d,
        },
        at(6),
    );
    b.finish_body();
    let k = b.into_kernel();
    let (t, diags) = infer(&k);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(
        t.of(e),
        &Ty::tile(Elem::of(DType::F32), Shape::new(vec![Dim::param("BLOCK")]))
    );
    assert_eq!(t.of(m), &Ty::scalar(DType::F32));
    assert_eq!(
        t.of(v),
        &Ty::tile(
            Elem::Generic("T".into()),
            Shape::new(vec![Dim::param("BLOCK")])
        )
    );
}

#[test]
fn reports_every_error_once() {
    let mut b = base();
    let x = b.push(Op::TensorParam { index: 0 }, at(1));
    let pid = b.push(Op::ProgramId { axis: 1 }, at(2)); // grid has one axis
    let cols = b.push(
        Op::Arange {
            n: Dim::param("BLOCK"),
        },
        at(3),
    );
    let cols2 = b.push(
        Op::Arange {
            n: Dim::param("BN"),
        },
        at(4),
    );
    let bad = b.push(
        Op::Binary {
            op: BinOp::Add,
            a: cols,
            b: cols2,
        },
        at(5),
    ); // shapes
    let _follow = b.push(
        Op::Unary {
            op: UnaryOp::Neg,
            x: bad,
        },
        at(6),
    ); // silenced
    let row = b.push(
        Op::Row {
            tensor: x,
            index: pid,
        },
        at(7),
    ); // pid poisoned: silenced
    let zero = b.push(Op::Lit(Literal::Float(0.0)), at(8));
    b.push_void(
        Op::Store {
            view: row,
            offsets: cols,
            value: zero,
            mask: None,
            cache: Default::default(),
        },
        at(8),
    );
    let xx = b.push(Op::TensorParam { index: 0 }, at(9));
    let r0 = b.push(Op::Lit(Literal::Int(0)), at(9));
    let xr = b.push(
        Op::Row {
            tensor: xx,
            index: r0,
        },
        at(9),
    );
    b.push_void(
        Op::Store {
            view: xr,
            offsets: cols,
            value: zero,
            mask: None,
            cache: Default::default(),
        },
        at(10),
    ); // write through &
    b.finish_body();
    let (_, diags) = infer(&b.into_kernel());
    let lines: Vec<u32> = diags.iter().map(|d| d.loc.line).collect();
    assert_eq!(lines, vec![2, 5, 10], "{diags:#?}");
    assert!(diags[0].message.contains("program axis 1"));
    assert!(diags[1].message.contains("do not broadcast"));
    assert!(diags[2].message.contains("cannot write through `x`"));
}

#[test]
fn dot_checks_inner_dims_and_dtypes() {
    let mut b = base();
    let bm = Dim::param("BLOCK");
    let bn = Dim::param("BN");
    let one = b.push(Op::Lit(Literal::Float(1.0)), at(1));
    let a = b.push(
        Op::Full {
            elem: Elem::of(DType::BF16),
            shape: vec![bm.clone(), bn.clone()],
            value: one,
        },
        at(1),
    );
    let bb = b.push(
        Op::Full {
            elem: Elem::of(DType::BF16),
            shape: vec![bm.clone(), bn.clone()],
            value: one,
        },
        at(2),
    );
    let acc = b.push(
        Op::Full {
            elem: Elem::of(DType::F32),
            shape: vec![bm.clone(), bn.clone()],
            value: one,
        },
        at(3),
    );
    b.push(
        Op::Dot {
            a,
            b: bb,
            acc,
            precision: crate::op::Precision::Ieee,
        },
        at(4),
    );
    b.finish_body();
    let (_, diags) = infer(&b.into_kernel());
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert!(diags[0].message.contains("inner dimensions"));
}

#[test]
fn trans_swaps_the_axes_and_needs_rank_2() {
    let mut b = base();
    let one = b.push(Op::Lit(Literal::Float(1.0)), at(1));
    let x = b.push(
        Op::Full {
            elem: Elem::of(DType::BF16),
            shape: vec![Dim::param("BLOCK"), Dim::param("BN")],
            value: one,
        },
        at(1),
    );
    let t = b.push(Op::Trans { x }, at(2));
    let v = b.push(
        Op::Full {
            elem: Elem::of(DType::I32),
            shape: vec![Dim::Const(8)],
            value: one,
        },
        at(3),
    );
    b.push(Op::Trans { x: v }, at(4));
    b.finish_body();
    let k = b.into_kernel();
    let (types, diags) = infer(&k);
    assert_eq!(
        types.of(t),
        &Ty::tile(
            Elem::of(DType::BF16),
            Shape::new(vec![Dim::param("BN"), Dim::param("BLOCK")])
        )
    );
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0].loc.line, 4);
    assert!(
        diags[0]
            .message
            .contains("`trans` takes a rank-2 tile, found rank 1"),
        "{}",
        diags[0].message
    );
    let text = k.to_string();
    assert!(text.contains("trans %"), "{text}");
}

#[test]
fn math_ops_type_as_their_float_operands() {
    let mut b = base();
    let one = b.push(Op::Lit(Literal::Float(1.0)), at(1));
    let bf = |b: &mut KernelBuilder, e: DType, line: u32| {
        b.push(
            Op::Full {
                elem: Elem::of(e),
                shape: vec![Dim::param("BLOCK")],
                value: one,
            },
            at(line),
        )
    };
    let x = bf(&mut b, DType::BF16, 1);
    let n = bf(&mut b, DType::I32, 1);
    let two = b.push(Op::Lit(Literal::Float(2.0)), at(1));
    let p = b.push(
        Op::Binary {
            op: BinOp::Pow,
            a: x,
            b: two,
        },
        at(2),
    );
    let q = b.push(
        Op::Binary {
            op: BinOp::Powi,
            a: x,
            b: n,
        },
        at(3),
    );
    let f = b.push(Op::Fma { a: x, b: two, c: x }, at(4));
    let r = b.push(
        Op::Unary {
            op: UnaryOp::Round,
            x,
        },
        at(5),
    );
    // Errors: `pow` of integers, a float exponent of `powi`, `fma` of integers.
    b.push(
        Op::Binary {
            op: BinOp::Pow,
            a: n,
            b: n,
        },
        at(6),
    );
    b.push(
        Op::Binary {
            op: BinOp::Powi,
            a: x,
            b: x,
        },
        at(7),
    );
    b.push(Op::Fma { a: n, b: n, c: n }, at(8));
    b.finish_body();
    let k = b.into_kernel();
    let (types, diags) = infer(&k);
    let want = Ty::tile(Elem::of(DType::BF16), Shape::new(vec![Dim::param("BLOCK")]));
    for v in [p, q, f, r] {
        assert_eq!(types.of(v), &want);
    }
    let lines: Vec<u32> = diags.iter().map(|d| d.loc.line).collect();
    assert_eq!(lines, [6, 7, 8], "{diags:#?}");
    assert!(diags[1].message.contains("the exponent of `powi` is bf16"));
    assert!(k.to_string().contains("fma %"), "{k}");
}

#[test]
fn a_scalar_start_is_promoted_to_the_tile_its_loop_assigns() {
    let mut b = base();
    let ninf = b.push(Op::Lit(Literal::Float(f64::NEG_INFINITY)), at(1));
    let m0 = b.push(
        Op::Cast {
            x: ninf,
            to: Elem::of(DType::F32),
        },
        at(1),
    );
    let zero = b.push(Op::Lit(Literal::Int(0)), at(2));
    let four = b.push(Op::Lit(Literal::Int(4)), at(2));
    let one = b.push(Op::Lit(Literal::Int(1)), at(2));
    let iv = b.new_value();
    let carried = b.new_value();
    b.begin_block(vec![iv, carried]);
    let t = b.push(
        Op::Full {
            elem: Elem::of(DType::F32),
            shape: vec![Dim::param("BLOCK")],
            value: ninf,
        },
        at(3),
    );
    let m = b.push(
        Op::Binary {
            op: BinOp::Max,
            a: carried,
            b: t,
        },
        at(3),
    );
    b.push_void(Op::Yield { values: vec![m] }, at(4));
    let body = b.end_block();
    let res = b.push_n(
        Op::For {
            start: zero,
            end: four,
            step: one,
            stages: None,
            inits: vec![m0],
            body,
        },
        1,
        at(2),
    );
    b.finish_body();
    let mut k = b.into_kernel();
    let (_, before) = infer(&k);
    assert_eq!(before.len(), 1, "{before:#?}");
    assert!(before[0]
        .message
        .contains("changes type from scalar f32 to tile f32[BLOCK]"));
    let (types, diags) = infer_promoting(&mut k);
    assert!(diags.is_empty(), "{diags:#?}");
    let tile = Ty::tile(Elem::of(DType::F32), Shape::new(vec![Dim::param("BLOCK")]));
    assert_eq!(types.of(res[0]), &tile);
    assert!(k.to_string().contains("full"), "{k}");
    // Nothing left to promote: the kernel stays as it is.
    let again = k.clone();
    infer_promoting(&mut k);
    assert_eq!(k, again);
}

#[test]
fn cat_adds_the_extents_along_its_axis_and_needs_the_others_equal() {
    let mut b = base();
    let one = b.push(Op::Lit(Literal::Float(1.0)), at(1));
    let full = |b: &mut KernelBuilder, shape: Vec<Dim>, dtype: DType, line: u32| {
        b.push(
            Op::Full {
                elem: Elem::of(dtype),
                shape,
                value: one,
            },
            at(line),
        )
    };
    let x = full(&mut b, vec![Dim::Const(1), Dim::param("BN")], DType::F32, 2);
    let y = full(&mut b, vec![Dim::Const(1), Dim::param("BN")], DType::F32, 2);
    let z = full(&mut b, vec![Dim::Const(2), Dim::param("BN")], DType::F32, 2);
    let i = full(&mut b, vec![Dim::Const(1), Dim::param("BN")], DType::I32, 2);
    let along1 = b.push(
        Op::Cat {
            a: x,
            b: y,
            axis: 1,
        },
        at(3),
    );
    let along0 = b.push(
        Op::Cat {
            a: x,
            b: z,
            axis: 0,
        },
        at(4),
    );
    b.push(
        Op::Cat {
            a: x,
            b: z,
            axis: 1,
        },
        at(5),
    );
    b.push(
        Op::Cat {
            a: x,
            b: i,
            axis: 0,
        },
        at(6),
    );
    b.push(
        Op::Cat {
            a: x,
            b: y,
            axis: 2,
        },
        at(7),
    );
    b.finish_body();
    let k = b.into_kernel();
    let (types, diags) = infer(&k);
    let two_bn = crate::Affine::param("BN").scale(2).expect("2 BN").to_dim();
    let f32_tile = |s: Vec<Dim>| Ty::tile(Elem::of(DType::F32), Shape::new(s));
    assert_eq!(types.of(along1), &f32_tile(vec![Dim::Const(1), two_bn]));
    assert_eq!(
        types.of(along0),
        &f32_tile(vec![Dim::Const(3), Dim::param("BN")])
    );
    let lines: Vec<u32> = diags.iter().map(|d| d.loc.line).collect();
    assert_eq!(lines, vec![5, 6, 7], "{diags:#?}");
    assert!(
        diags[0].message.contains("equal extents on axis 0"),
        "{}",
        diags[0].message
    );
    assert!(
        diags[1].message.contains("one element type"),
        "{}",
        diags[1].message
    );
    assert!(
        diags[2].message.contains("out of range"),
        "{}",
        diags[2].message
    );
    assert!(k.to_string().contains("cat %"));
}

/// `shared_row::<T, BLOCK>()` is a writable rank-1 view that `load` and `store` take; a
/// `load_tile` of it and a zero extent are errors, each at its own line.
#[test]
fn shared_row_is_a_writable_row_for_load_and_store_only() {
    let mut b = base();
    let buf = b.push(
        Op::SharedRow {
            elem: Elem::Generic("T".into()),
            len: Dim::param("BLOCK"),
        },
        at(1),
    );
    let cols = b.push(
        Op::Arange {
            n: Dim::param("BLOCK"),
        },
        at(2),
    );
    let v = b.push(
        Op::Load {
            view: buf,
            offsets: cols,
            mask: None,
            other: None,
            cache: Default::default(),
        },
        at(3),
    );
    b.push_void(
        Op::Store {
            view: buf,
            offsets: cols,
            value: v,
            mask: None,
            cache: Default::default(),
        },
        at(4),
    );
    let zero = b.push(Op::Lit(Literal::Int(0)), at(5));
    b.push(
        Op::LoadTile {
            tensor: buf,
            origin: vec![zero],
            shape: vec![Dim::param("BLOCK")],
        },
        at(5),
    );
    b.push(
        Op::SharedRow {
            elem: Elem::of(DType::F32),
            len: Dim::Const(0),
        },
        at(6),
    );
    let k = b.into_kernel();
    let (t, diags) = infer(&k);
    assert_eq!(
        t.of(buf),
        &Ty::Tensor {
            param: SHARED_ROW,
            rank: 1,
            elem: Elem::Generic("T".into()),
            mutable: true,
        }
    );
    assert_eq!(
        t.of(v),
        &Ty::tile(
            Elem::Generic("T".into()),
            Shape::new(vec![Dim::param("BLOCK")])
        )
    );
    let lines: Vec<u32> = diags.iter().map(|d| d.loc.line).collect();
    assert_eq!(lines, vec![5, 6], "{diags:?}");
    assert!(
        diags[0].message.contains("`load_tile` of a `shared_row`"),
        "{diags:?}"
    );
}
