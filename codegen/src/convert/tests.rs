//! Unit tests of the conversion points: a reduction broadcast back is converted at the op
//! that broadcasts it, a kernel with none lists none, and two uses of one value that each
//! need shared memory are two points with two regions.

use super::layouts;
use crate::analyze::Analysis;
use crate::layout::{ConvertPath, Layout};
use crate::schedule::Facts;
use crate::smem::pass::{self, Engine};
use crate::smem::PartKey;
use tilekit_ir::{
    BinOp, DType, Dim, Elem, Expr, Kernel, KernelBuilder, Loc, Op, Param, ParamKind, ReduceOp,
    Shape, ValueId,
};

fn at(line: u32) -> Loc {
    Loc { span: 0, line }
}

fn tensor(name: &str, mutable: bool) -> Param {
    Param {
        name: name.into(),
        kind: ParamKind::Tensor {
            rank: 2,
            elem: Elem::of(DType::F32),
            mutable,
        },
        loc: Loc::default(),
    }
}

/// `x = load_tile(x, [pid, pid], [64, 32])`; `s = sum(x, axis 0)` ([32]); `e =
/// expand_dims(s, 0)` ([1, 32]); then `f(b, x, e)` at line 5 and on, whose result is
/// stored.
fn kernel(f: impl FnOnce(&mut KernelBuilder, ValueId, ValueId) -> ValueId) -> (Kernel, ValueId) {
    let mut b = KernelBuilder::new("conv");
    b.kernel_mut().params = vec![tensor("x", false), tensor("y", true)];
    b.kernel_mut().grid = vec![Expr::Int(1)];
    let xp = b.push(Op::TensorParam { index: 0 }, at(1));
    let yp = b.push(Op::TensorParam { index: 1 }, at(1));
    let pid = b.push(Op::ProgramId { axis: 0 }, at(1));
    let x = b.push(
        Op::LoadTile {
            tensor: xp,
            origin: vec![pid, pid],
            shape: vec![Dim::Const(64), Dim::Const(32)],
        },
        at(2),
    );
    let s = b.push(
        Op::Reduce {
            op: ReduceOp::Sum,
            x,
            axis: 0,
        },
        at(3),
    );
    let e = b.push(Op::ExpandDims { x: s, axis: 0 }, at(4));
    let r = f(&mut b, x, e);
    b.push_void(
        Op::StoreTile {
            tensor: yp,
            origin: vec![pid, pid],
            value: r,
        },
        at(9),
    );
    (b.into_kernel(), e)
}

fn bin(b: &mut KernelBuilder, op: BinOp, x: ValueId, y: ValueId, line: u32) -> ValueId {
    b.push(Op::Binary { op, a: x, b: y }, at(line))
}

#[test]
fn a_reduction_broadcast_back_converts_at_its_op() {
    // x - expand_dims(sum(x, 0), 0): the [1, 32] row goes through shared memory to [64, 32]
    // at the subtraction (line 5), its second operand; nothing else converts.
    let (k, e) = kernel(|b, x, e| bin(b, BinOp::Sub, x, e, 5));
    let a = Analysis::of(&k).unwrap();
    let l = layouts(&a).unwrap();
    assert_eq!(l.conversions.len(), 1, "{:#?}", l.conversions);
    let c = &l.conversions[0];
    assert_eq!((c.id, c.line, c.operand, c.value), (0, 5, 1, e));
    assert_eq!(c.op, "-");
    assert_eq!((c.from, c.to), (Layout::Blocked, Layout::Blocked));
    let shape = |d: &[u64]| Shape::new(d.iter().map(|&n| Dim::Const(n)).collect());
    assert_eq!((&c.vshape, &c.shape), (&shape(&[1, 32]), &shape(&[64, 32])));
    assert_eq!(c.path, ConvertPath::SharedMemory);
    assert_eq!(c.what, "broadcast [1, 32] -> [64, 32]");
    // The instruction id is its pre-order position: the seventh instruction.
    assert_eq!(c.inst, 6);
    let text = crate::layout::render(&a, &l);
    assert!(
        text.contains(&format!(
            "  line 5: %{} blocked [1, 32] -> blocked [64, 32] for `-` (inst 6, operand 1): via shared memory\n",
            e.0
        )),
        "{text}"
    );
}

#[test]
fn a_kernel_without_conversions_lists_none() {
    // x - x: same shape, same layout.
    let (k, _) = kernel(|b, x, _| bin(b, BinOp::Sub, x, x, 5));
    let a = Analysis::of(&k).unwrap();
    let l = layouts(&a).unwrap();
    assert!(l.conversions.is_empty(), "{:#?}", l.conversions);
    let text = crate::layout::render(&a, &l);
    assert!(text.ends_with("in registers):\n  (none)\n"), "{text}");
}

#[test]
fn two_uses_are_two_points_with_two_regions() {
    // (x - e) * e: e converted the same way at two ops (lines 5 and 6), two points, each
    // with its own region (once one key, (value, elem, shape, layout), served both).
    let (k, e) = kernel(|b, x, e| {
        let d = bin(b, BinOp::Sub, x, e, 5);
        bin(b, BinOp::Mul, d, e, 6)
    });
    let a = Analysis::of(&k).unwrap();
    let l = layouts(&a).unwrap();
    let seen: Vec<(usize, u32, ValueId)> = l
        .conversions
        .iter()
        .map(|c| (c.id, c.line, c.value))
        .collect();
    assert_eq!(seen, vec![(0, 5, e), (1, 6, e)]);
    assert!(l
        .conversions
        .iter()
        .all(|c| c.path == ConvertPath::SharedMemory));
    let defs: Vec<Option<&Op>> = a.defs.iter().map(|d| d.map(|i| &i.op)).collect();
    let facts = Facts {
        types: &a.types,
        defs: &defs,
        layouts: &l,
    };
    let alloc = pass::plan(&k, facts, Engine::MmaSync);
    let keys: Vec<PartKey> = alloc.lifetimes().map(|(k, _)| k.clone()).collect();
    let converts: Vec<&PartKey> = keys
        .iter()
        .filter(|k| matches!(k, PartKey::Convert(_)))
        .collect();
    assert_eq!(converts, vec![&PartKey::Convert(0), &PartKey::Convert(1)]);
    for id in [0, 1] {
        assert!(alloc.scratch_offset(&PartKey::Convert(id), 0).is_ok());
    }
}
