//! Unit tests of the shared-memory pass and allocator: lifetimes (scratch regions of
//! sequential ops alias, the parts of one op never do), persistent regions never aliased,
//! per-part alignment, and the printer's look-ups of regions the pass did not plan.

use super::alloc::{Lifetime, Placed};
use super::pass::{self, Engine};
use super::{PartKey, SizeEnv, SmemAlloc, SmemKind};
use crate::analyze::Analysis;
use crate::schedule::Facts;
use tilekit_ir::{
    BinOp, Bindings, Config, DType, Dim, Elem, Expr, Kernel, KernelBuilder, Loc, Op, Param,
    ParamKind, Precision, ReduceOp, ValueId,
};

fn tensor(name: &str, rank: u8, dtype: DType, mutable: bool) -> Param {
    Param {
        name: name.into(),
        kind: ParamKind::Tensor {
            rank,
            elem: Elem::of(dtype),
            mutable,
        },
        loc: Loc::default(),
    }
}

fn at(line: u32) -> Loc {
    Loc { span: 0, line }
}

fn builder(name: &str, params: Vec<Param>) -> KernelBuilder {
    let mut b = KernelBuilder::new(name);
    b.kernel_mut().params = params;
    b.kernel_mut().grid = vec![Expr::Int(1)];
    b
}

/// The pass's result for `kernel` on the mma.sync engine.
fn planned(kernel: &Kernel) -> SmemAlloc {
    let analysis = Analysis::of(kernel).unwrap();
    let layouts = crate::convert::layouts(&analysis).unwrap();
    let defs: Vec<Option<&Op>> = analysis.defs.iter().map(|d| d.map(|i| &i.op)).collect();
    let facts = Facts {
        types: &analysis.types,
        defs: &defs,
        layouts: &layouts,
    };
    pass::plan(kernel, facts, Engine::MmaSync)
}

/// Every part's placement (key, lifetime, start, end, alignment) at 4 warps.
fn placed(a: &SmemAlloc) -> Vec<Placed> {
    let (config, bindings) = (Config { values: Vec::new() }, Bindings::default());
    let env = SizeEnv {
        config: &config,
        bindings: &bindings,
        threads: 128,
        kind: SmemKind::Auto,
    };
    let parts = a.placed(&env).unwrap();
    assert_eq!(
        parts.iter().map(|p| p.end).max().unwrap_or(0),
        a.plan.total(&env).unwrap(),
        "the plan's total covers every part"
    );
    parts
}

/// The placement rules every plan keeps: parts live at once never share a byte, every
/// part starts at a multiple of its alignment, and scratch starts after the persistent
/// regions.
fn check_rules(parts: &[Placed]) {
    let persistent_end = parts
        .iter()
        .filter(|p| p.lifetime == Lifetime::Kernel)
        .map(|p| p.end)
        .max()
        .unwrap_or(0);
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(p.start % p.align, 0, "{p:?} is aligned to {}", p.align);
        if p.lifetime != Lifetime::Kernel {
            assert!(
                p.start >= persistent_end,
                "{p:?} after the persistent regions"
            );
        }
        for q in &parts[i + 1..] {
            if p.lifetime.overlaps(q.lifetime) {
                assert!(
                    p.end <= q.start || q.end <= p.start,
                    "{p:?} and {q:?} are live at once"
                );
            }
        }
    }
}

/// `x[0..256]`: a loaded f32 tile, with its offsets.
fn load_x(b: &mut KernelBuilder) -> (ValueId, ValueId) {
    let x = b.push(Op::TensorParam { index: 0 }, at(1));
    let i = b.push(Op::Arange { n: Dim::Const(256) }, at(2));
    let v = b.push(
        Op::Load {
            view: x,
            offsets: i,
            mask: None,
            other: None,
            cache: Default::default(),
        },
        at(2),
    );
    (i, v)
}

fn store_y(b: &mut KernelBuilder, i: ValueId, value: ValueId) {
    let y = b.push(Op::TensorParam { index: 1 }, at(9));
    b.push_void(
        Op::Store {
            view: y,
            offsets: i,
            value,
            mask: None,
            cache: Default::default(),
        },
        at(9),
    );
}

fn bin(b: &mut KernelBuilder, op: BinOp, x: ValueId, y: ValueId, line: u32) -> ValueId {
    b.push(Op::Binary { op, a: x, b: y }, at(line))
}

fn reduce(b: &mut KernelBuilder, op: ReduceOp, x: ValueId, line: u32) -> ValueId {
    b.push(Op::Reduce { op, x, axis: 0 }, at(line))
}

fn rows_params() -> Vec<Param> {
    vec![
        tensor("x", 1, DType::F32, false),
        tensor("y", 1, DType::F32, true),
    ]
}

#[test]
fn sequential_reductions_reuse_one_scratch_region() {
    // s1 = sum(x); s2 = max(x * s1): the second reads the first, so they are two rounds,
    // two steps, and their regions alias at TK_SCRATCH.
    let mut b = builder("two_rounds", rows_params());
    let (i, v) = load_x(&mut b);
    let s1 = reduce(&mut b, ReduceOp::Sum, v, 3);
    let w = bin(&mut b, BinOp::Mul, v, s1, 4);
    let s2 = reduce(&mut b, ReduceOp::Max, w, 5);
    let u = bin(&mut b, BinOp::Add, w, s2, 6);
    store_y(&mut b, i, u);
    let a = planned(&b.into_kernel());
    assert!(a.plan.persistent.is_empty());
    let keys: Vec<_> = a.lifetimes().collect();
    assert_eq!(
        keys,
        vec![
            (&PartKey::Op(s1), Lifetime::Step(0)),
            (&PartKey::Op(s2), Lifetime::Step(1)),
        ]
    );
    assert!(!Lifetime::Step(0).overlaps(Lifetime::Step(1)));
    for s in [s1, s2] {
        assert_eq!(
            a.scratch_offset(&PartKey::Op(s), 0).unwrap(),
            "TK_SCRATCH + 0"
        );
    }
    let parts = placed(&a);
    check_rules(&parts);
    assert_eq!(
        parts[0].start, parts[1].start,
        "disjoint lifetimes share their bytes"
    );
    // One partial per warp of 4-byte accumulators, 16-byte aligned: 4 warps -> 16 bytes,
    // and the total is the larger region, not the sum.
    assert_eq!((parts[0].end - parts[0].start, parts[0].align), (16, 16));
    assert_eq!(
        a.plan.uses[0].size_expr(),
        "tk::align16((long long)(TK_THREADS / 32) * (long long)sizeof(tk::acc_t<f32>))"
            .replace("f32", "float")
    );
}

#[test]
fn fused_reductions_keep_their_parts_apart() {
    // sum(x); max(x): one round (`tk::reduce_all2`), one step, two parts live at once.
    let mut b = builder("one_round", rows_params());
    let (i, v) = load_x(&mut b);
    let s1 = reduce(&mut b, ReduceOp::Sum, v, 3);
    let s2 = reduce(&mut b, ReduceOp::Max, v, 3);
    let u = bin(&mut b, BinOp::Add, s1, s2, 4);
    let w = bin(&mut b, BinOp::Mul, v, u, 5);
    store_y(&mut b, i, w);
    let a = planned(&b.into_kernel());
    let key = PartKey::FusedPair(s1);
    assert_eq!(a.lifetimes().count(), 1);
    assert_eq!(a.scratch_offset(&key, 0).unwrap(), "TK_SCRATCH + 0");
    assert_ne!(
        a.scratch_offset(&key, 0).unwrap(),
        a.scratch_offset(&key, 1).unwrap()
    );
    assert!(a.scratch_offset(&key, 2).is_err());
    let parts = placed(&a);
    check_rules(&parts);
    assert_eq!(parts.len(), 2);
    assert_eq!(
        parts[0].end, parts[1].start,
        "one lifetime: the parts follow each other"
    );
}

/// `c = a @ b` of 64x32 and 32x64 f16 tiles, in a `pipelined` loop (`ring`: two
/// cp.async rings) or straight-line (the operands staged at the dot).
fn matmul(ring: bool) -> Kernel {
    let mut b = builder(
        if ring { "mm_ring" } else { "mm_staged" },
        vec![
            tensor("a", 2, DType::F16, false),
            tensor("b", 2, DType::F16, false),
            tensor("c", 2, DType::F32, true),
        ],
    );
    let z = b.push(Op::Lit(tilekit_ir::Literal::Float(0.0)), at(1));
    let acc0 = b.push(
        Op::Full {
            elem: Elem::of(DType::F32),
            shape: vec![Dim::Const(64), Dim::Const(64)],
            value: z,
        },
        at(1),
    );
    let ta_param = b.push(Op::TensorParam { index: 0 }, at(2));
    let tb_param = b.push(Op::TensorParam { index: 1 }, at(2));
    let s0 = b.push(Op::Lit(tilekit_ir::Literal::Int(0)), at(2));
    let tiles = |b: &mut KernelBuilder, k: ValueId| {
        let ta = b.push(
            Op::LoadTile {
                tensor: ta_param,
                origin: vec![s0, k],
                shape: vec![Dim::Const(64), Dim::Const(32)],
            },
            at(3),
        );
        let tb = b.push(
            Op::LoadTile {
                tensor: tb_param,
                origin: vec![k, s0],
                shape: vec![Dim::Const(32), Dim::Const(64)],
            },
            at(4),
        );
        (ta, tb)
    };
    let dot = |b: &mut KernelBuilder, (ta, tb): (ValueId, ValueId), acc: ValueId| {
        b.push(
            Op::Dot {
                a: ta,
                b: tb,
                acc,
                precision: Precision::Ieee,
            },
            at(5),
        )
    };
    let out = if ring {
        let kend = b.push(
            Op::TensorDim {
                tensor: ta_param,
                axis: 1,
            },
            at(2),
        );
        let step = b.push(Op::Lit(tilekit_ir::Literal::Int(32)), at(2));
        let (k, acc) = (b.new_value(), b.new_value());
        b.begin_block(vec![k, acc]);
        let t = tiles(&mut b, k);
        let acc2 = dot(&mut b, t, acc);
        b.push_void(Op::Yield { values: vec![acc2] }, at(6));
        let body = b.end_block();
        b.push_n(
            Op::For {
                start: s0,
                end: kend,
                step,
                stages: Some(Dim::Const(3)),
                inits: vec![acc0],
                body,
            },
            1,
            at(2),
        )[0]
    } else {
        let t = tiles(&mut b, s0);
        dot(&mut b, t, acc0)
    };
    let c = b.push(Op::TensorParam { index: 2 }, at(7));
    b.push_void(
        Op::StoreTile {
            tensor: c,
            origin: vec![s0, s0],
            value: out,
        },
        at(7),
    );
    b.into_kernel()
}

#[test]
fn staged_dot_operands_are_tile_aligned_and_apart() {
    let k = matmul(false);
    let a = planned(&k);
    let dot = k
        .body
        .insts
        .iter()
        .find(|i| matches!(i.op, Op::Dot { .. }))
        .map(|i| i.results[0])
        .unwrap();
    let key = PartKey::Op(dot);
    assert!(a.lifetimes().any(|(k, _)| k == &key));
    assert!(a.plan.uses[0]
        .size_expr()
        .contains("tk::align_to(tk::stile<"));
    assert!(a.plan.uses[0].size_expr().contains(", 128)"));
    let parts = placed(&a);
    check_rules(&parts);
    let staged: Vec<_> = parts.iter().filter(|p| p.key == key).collect();
    assert_eq!(staged.len(), 2);
    assert!(staged.iter().all(|p| p.align == 128));
    // 64x32 and 32x64 halves, 128-byte swizzled rows: 4096 bytes each, back to back.
    assert_eq!(
        (staged[0].start, staged[0].end, staged[1].end),
        (0, 4096, 8192)
    );
}

#[test]
fn rings_are_persistent_and_never_aliased() {
    let a = planned(&matmul(true));
    let keys: Vec<_> = a.lifetimes().map(|(k, l)| (k.clone(), l)).collect();
    assert_eq!(keys[0], (PartKey::Ring(0), Lifetime::Kernel));
    assert_eq!(keys[1], (PartKey::Ring(1), Lifetime::Kernel));
    assert_eq!(a.persistent_offset(&PartKey::Ring(0)).unwrap(), "0LL");
    assert_eq!(
        a.persistent_offset(&PartKey::Ring(1)).unwrap(),
        "tk::align_to(TK_RING0::BYTES, 128)"
    );
    assert!(Lifetime::Kernel.overlaps(Lifetime::Step(0)));
    let parts = placed(&a);
    check_rules(&parts);
    // Three stages of 4096-byte slots each.
    assert_eq!(
        parts
            .iter()
            .filter(|p| p.lifetime == Lifetime::Kernel)
            .map(|p| (p.start, p.end))
            .collect::<Vec<_>>(),
        vec![(0, 12288), (12288, 24576)]
    );
}

#[test]
fn the_printer_cannot_look_up_an_unplanned_region() {
    let a = planned(&matmul(true));
    // A ring is persistent: no scratch region has its key, and no op planned scratch here.
    assert!(a.scratch_offset(&PartKey::Ring(0), 0).is_err());
    assert!(a.persistent_offset(&PartKey::Ring(2)).is_err());
    assert!(a.persistent_offset(&PartKey::HopperPipe).is_err());
    let e = SmemAlloc::default()
        .scratch_offset(&PartKey::Op(ValueId(0)), 0)
        .unwrap_err();
    assert!(e.to_string().contains("internal"), "{e}");
}
