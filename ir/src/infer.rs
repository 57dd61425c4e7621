//! Type and shape inference with validation: every error in a kernel is reported at once,
//! each at the instruction it concerns. An erroneous value gets [`Ty::Error`], which
//! silences follow-on errors so that one mistake yields one message.

use crate::diag::Diagnostic;
use crate::dtype::{DType, Elem};
use crate::kernel::{Kernel, ParamKind};
use crate::op::{BinOp, Block, Inst, Literal, Loc, Op, ValueId};
use crate::shape::{Dim, Shape};
use crate::space::TuneValue;

/// The type of an IR value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// A tile (rank 0: a scalar). `weak` marks untyped literals, which adopt the other
    /// operand's element type.
    Tile {
        /// Element type.
        elem: Elem,
        /// Shape.
        shape: Shape,
        /// Literal without a fixed type.
        weak: bool,
    },
    /// A tensor argument or a view of one (`x.row(i)` has one less rank).
    Tensor {
        /// The parameter it refers to.
        param: usize,
        /// Remaining rank.
        rank: u8,
        /// Element type.
        elem: Elem,
        /// Writable.
        mutable: bool,
    },
    /// The value of an erroneous expression (already reported).
    Error,
}

impl Ty {
    /// A strongly typed tile.
    pub fn tile(elem: Elem, shape: Shape) -> Ty {
        Ty::Tile {
            elem,
            shape,
            weak: false,
        }
    }

    /// A strongly typed scalar.
    pub fn scalar(d: DType) -> Ty {
        Ty::tile(Elem::Concrete(d), Shape::scalar())
    }

    /// The shape of a tile.
    pub fn shape(&self) -> Option<&Shape> {
        match self {
            Ty::Tile { shape, .. } => Some(shape),
            _ => None,
        }
    }

    /// The element type of a tile or tensor.
    pub fn elem(&self) -> Option<&Elem> {
        match self {
            Ty::Tile { elem, .. } | Ty::Tensor { elem, .. } => Some(elem),
            Ty::Error => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Ty::Tile { elem, shape, .. } if shape.is_scalar() => format!("scalar {elem}"),
            Ty::Tile { elem, shape, .. } => format!("tile {elem}{shape}"),
            Ty::Tensor { rank, elem, .. } => format!("Tensor{rank}<{elem}>"),
            Ty::Error => "<error>".into(),
        }
    }
}

/// The inferred type of every value of a kernel.
#[derive(Clone, Debug, Default)]
pub struct Types {
    /// Indexed by [`ValueId::index`].
    pub tys: Vec<Ty>,
}

impl Types {
    /// The type of `v`.
    pub fn of(&self, v: ValueId) -> &Ty {
        self.tys.get(v.index()).unwrap_or(&Ty::Error)
    }
}

struct Checker<'k> {
    kernel: &'k Kernel,
    types: Types,
    diags: Vec<Diagnostic>,
}

/// Infers every value's type and reports every error. The kernel is valid when the
/// returned list is empty.
pub fn infer(kernel: &Kernel) -> (Types, Vec<Diagnostic>) {
    let mut c = Checker {
        kernel,
        types: Types {
            tys: vec![Ty::Error; kernel.num_values()],
        },
        diags: Vec::new(),
    };
    c.check_signature();
    c.block(&kernel.body);
    (c.types, c.diags)
}

fn elem_name(e: &Elem) -> String {
    e.to_string()
}

impl<'k> Checker<'k> {
    fn err(&mut self, loc: Loc, msg: impl Into<String>) {
        self.diags.push(Diagnostic::new(loc, msg));
    }

    fn err_help(&mut self, loc: Loc, msg: impl Into<String>, help: impl Into<String>) {
        self.diags.push(Diagnostic::new(loc, msg).with_help(help));
    }

    fn ty(&self, v: ValueId) -> Ty {
        self.types.of(v).clone()
    }

    fn set(&mut self, v: ValueId, t: Ty) {
        if let Some(slot) = self.types.tys.get_mut(v.index()) {
            *slot = t;
        }
    }

    fn name(&self, v: ValueId) -> String {
        self.kernel
            .value_names
            .get(v.index())
            .cloned()
            .flatten()
            .unwrap_or_else(|| "value".into())
    }

    fn check_signature(&mut self) {
        let k = self.kernel;
        if k.grid.is_empty() || k.grid.len() > 3 {
            self.err(
                Loc::default(),
                format!("the grid has {} axes; it must have 1 to 3", k.grid.len()),
            );
        }
        for p in &k.params {
            if let ParamKind::Tensor { rank, elem, .. } = &p.kind {
                if !(1..=3).contains(rank) {
                    self.err(
                        p.loc,
                        format!(
                            "tensor `{}` has rank {rank}; ranks 1 to 3 are supported",
                            p.name
                        ),
                    );
                }
                if let Elem::Generic(g) = elem {
                    if !k.generics.contains(g) {
                        self.err(
                            p.loc,
                            format!("element type `{g}` is not a generic parameter of the kernel"),
                        );
                    }
                }
            }
        }
    }

    fn dims_ok(&mut self, dims: &[Dim], loc: Loc) -> bool {
        let mut ok = true;
        for d in dims {
            match d {
                Dim::Const(0) => {
                    self.err(loc, "tile extents must be positive");
                    ok = false;
                }
                Dim::Const(_) => {}
                Dim::Param(p) => {
                    match self.kernel.space.param(p) {
                        None => {
                            self.err(loc, format!("tile shape uses `{p}`, which is not a declared tuning parameter"));
                            ok = false;
                        }
                        Some(tp)
                            if !tp
                                .values
                                .iter()
                                .all(|v| matches!(v, TuneValue::Int(x) if *x > 0)) =>
                        {
                            self.err(loc, format!("tuning parameter `{p}` is used as a tile extent, so all its values must be positive integers"));
                            ok = false;
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        ok
    }

    fn block(&mut self, b: &Block) {
        for inst in &b.insts {
            self.inst(inst);
        }
    }

    fn int_scalar(&mut self, v: ValueId, what: &str, loc: Loc) -> bool {
        match self.ty(v) {
            Ty::Error => false,
            Ty::Tile { elem, shape, .. } if shape.is_scalar() && elem.is_int() => true,
            t => {
                self.err(
                    loc,
                    format!("{what} must be an integer scalar, found {}", t.describe()),
                );
                false
            }
        }
    }

    /// Unifies element types for arithmetic; `None` after reporting.
    fn unify(&mut self, a: &Ty, b: &Ty, loc: Loc, op: &str) -> Option<(Elem, bool)> {
        let (
            Ty::Tile {
                elem: ea, weak: wa, ..
            },
            Ty::Tile {
                elem: eb, weak: wb, ..
            },
        ) = (a, b)
        else {
            return None;
        };
        let float_or_int = |e: &Elem| e.is_float() || e.is_int();
        match (wa, wb) {
            (true, true) => {
                if ea.is_float() || eb.is_float() {
                    Some((Elem::Concrete(DType::F32), true))
                } else {
                    Some((ea.clone(), true))
                }
            }
            (true, false) | (false, true) => {
                let (weak, strong) = if *wa { (ea, eb) } else { (eb, ea) };
                let fits = (strong.is_float() && float_or_int(weak))
                    || (strong.is_int() && weak.is_int())
                    || (strong.is_bool() && weak.is_bool());
                if fits {
                    Some((strong.clone(), false))
                } else {
                    self.err(
                        loc,
                        format!(
                            "`{op}` mixes a {} literal with {} values",
                            elem_name(weak),
                            elem_name(strong)
                        ),
                    );
                    None
                }
            }
            (false, false) => {
                if ea == eb {
                    Some((ea.clone(), false))
                } else if ea.is_int() && eb.is_int() {
                    Some((Elem::Concrete(DType::I64), false))
                } else {
                    self.err_help(
                        loc,
                        format!(
                            "dtype mismatch: `{op}` between {} and {}",
                            elem_name(ea),
                            elem_name(eb)
                        ),
                        "convert one side explicitly with `.to_f32()` or `.cast::<T>()`",
                    );
                    None
                }
            }
        }
    }

    fn broadcast(&mut self, a: &Shape, b: &Shape, loc: Loc, op: &str) -> Option<Shape> {
        let r = a.broadcast(b);
        if r.is_none() {
            self.err_help(
                loc,
                format!("tile shapes {a} and {b} do not broadcast in `{op}`"),
                "shapes align on the right and each pair of extents must be equal or 1; use `expand_dims` to add an axis",
            );
        }
        r
    }

    fn tile_parts(&self, t: &Ty) -> Option<(Elem, Shape, bool)> {
        match t {
            Ty::Tile { elem, shape, weak } => Some((elem.clone(), shape.clone(), *weak)),
            _ => None,
        }
    }

    fn expect_tile(&mut self, v: ValueId, loc: Loc, what: &str) -> Option<(Elem, Shape, bool)> {
        let t = self.ty(v);
        match &t {
            Ty::Error => None,
            Ty::Tile { .. } => self.tile_parts(&t),
            _ => {
                self.err(
                    loc,
                    format!(
                        "{what} must be a tile, found {} `{}`",
                        t.describe(),
                        self.name(v)
                    ),
                );
                None
            }
        }
    }

    fn expect_tensor(
        &mut self,
        v: ValueId,
        loc: Loc,
        what: &str,
    ) -> Option<(usize, u8, Elem, bool)> {
        match self.ty(v) {
            Ty::Error => None,
            Ty::Tensor {
                param,
                rank,
                elem,
                mutable,
            } => Some((param, rank, elem, mutable)),
            t => {
                self.err(
                    loc,
                    format!("{what} must be a tensor, found {}", t.describe()),
                );
                None
            }
        }
    }

    fn param_name(&self, p: usize) -> String {
        self.kernel
            .params
            .get(p)
            .map(|p| p.name.clone())
            .unwrap_or_default()
    }

    fn inst(&mut self, inst: &Inst) {
        let result = self.result_ty(inst);
        if let (Some(t), Some(r)) = (result, inst.results.first()) {
            self.set(*r, t);
        }
    }

    fn result_ty(&mut self, inst: &Inst) -> Option<Ty> {
        let loc = inst.loc;
        let k = self.kernel;
        Some(match &inst.op {
            Op::ProgramId { axis } | Op::NumPrograms { axis } => {
                if usize::from(*axis) >= k.grid.len() {
                    self.err_help(
                        loc,
                        format!(
                            "program axis {axis} is out of range: the grid has {} axis(es)",
                            k.grid.len()
                        ),
                        format!("valid axes are 0..{}", k.grid.len()),
                    );
                    return Some(Ty::Error);
                }
                Ty::scalar(DType::I64)
            }
            Op::Arange { n } => {
                if !self.dims_ok(std::slice::from_ref(n), loc) {
                    return Some(Ty::Error);
                }
                Ty::tile(Elem::Concrete(DType::I32), Shape::new(vec![n.clone()]))
            }
            Op::Lit(l) => {
                let d = match l {
                    Literal::Float(_) => DType::F32,
                    Literal::Int(_) => DType::I32,
                    Literal::Bool(_) => DType::Bool,
                };
                Ty::Tile {
                    elem: Elem::Concrete(d),
                    shape: Shape::scalar(),
                    weak: true,
                }
            }
            Op::TuneValue { name } => match k.space.param(name) {
                None => {
                    self.err(loc, format!("`{name}` is not a declared tuning parameter"));
                    Ty::Error
                }
                Some(p) => match p.values.first() {
                    Some(TuneValue::Int(_)) => Ty::scalar(DType::I64),
                    Some(TuneValue::Bool(_)) => Ty::scalar(DType::Bool),
                    _ => {
                        self.err(loc, format!("enumeration parameter `{name}` has no value in kernel code; it selects a lowering"));
                        Ty::Error
                    }
                },
            },
            Op::ScalarParam { index } => match k.params.get(*index).map(|p| &p.kind) {
                Some(ParamKind::Scalar { dtype }) => Ty::scalar(*dtype),
                _ => {
                    self.err(loc, format!("parameter {index} is not a scalar"));
                    Ty::Error
                }
            },
            Op::TensorParam { index } => match k.params.get(*index).map(|p| &p.kind) {
                Some(ParamKind::Tensor {
                    rank,
                    elem,
                    mutable,
                }) => Ty::Tensor {
                    param: *index,
                    rank: *rank,
                    elem: elem.clone(),
                    mutable: *mutable,
                },
                _ => {
                    self.err(loc, format!("parameter {index} is not a tensor"));
                    Ty::Error
                }
            },
            Op::TensorDim { tensor, axis } => {
                let (p, rank, ..) =
                    self.expect_tensor(*tensor, loc, "the receiver of a shape query")?;
                if *axis >= rank {
                    self.err(
                        loc,
                        format!(
                            "rank mismatch: axis {axis} of `{}`, which has rank {rank}",
                            self.param_name(p)
                        ),
                    );
                    return Some(Ty::Error);
                }
                Ty::scalar(DType::I64)
            }
            Op::Row { tensor, index } => {
                let (param, rank, elem, mutable) =
                    self.expect_tensor(*tensor, loc, "the receiver of `.row()`")?;
                let idx_ok = self.int_scalar(*index, "a row index", loc);
                if rank < 2 {
                    self.err_help(
                        loc,
                        format!(
                            "rank mismatch: `.row()` of `{}`, which has rank 1",
                            self.param_name(param)
                        ),
                        "a rank-1 tensor is already a row: pass it to `load`/`store` directly",
                    );
                    return Some(Ty::Error);
                }
                if !idx_ok {
                    return Some(Ty::Error);
                }
                Ty::Tensor {
                    param,
                    rank: rank - 1,
                    elem,
                    mutable,
                }
            }
            Op::Unary { op, x } => {
                let (elem, shape, weak) = self.expect_tile(*x, loc, "an operand")?;
                let ok = match op {
                    crate::op::UnaryOp::Not => elem.is_bool(),
                    _ if op.needs_float() => elem.is_float(),
                    _ => elem.is_float() || elem.is_int(),
                };
                if !ok {
                    self.err_help(
                        loc,
                        format!("dtype mismatch: `{}` of a {elem} tile", op.name()),
                        if op.needs_float() {
                            "convert first, e.g. `.to_f32()`"
                        } else {
                            "use a numeric or mask operand"
                        },
                    );
                    return Some(Ty::Error);
                }
                Ty::Tile { elem, shape, weak }
            }
            Op::Binary { op, a, b } => {
                let (ta, tb) = (self.ty(*a), self.ty(*b));
                if ta == Ty::Error || tb == Ty::Error {
                    return Some(Ty::Error);
                }
                self.expect_tile(*a, loc, "an operand")?;
                self.expect_tile(*b, loc, "an operand")?;
                let (elem, weak) = self.unify(&ta, &tb, loc, op.name())?;
                let shape = self.broadcast(ta.shape()?, tb.shape()?, loc, op.name())?;
                if op.is_logical() && !elem.is_bool() {
                    self.err(
                        loc,
                        format!("`{}` needs masks (bool tiles), found {elem}", op.name()),
                    );
                    return Some(Ty::Error);
                }
                if !op.is_logical() && elem.is_bool() {
                    self.err(loc, format!("`{}` is not defined on masks", op.name()));
                    return Some(Ty::Error);
                }
                if *op == BinOp::Rem && !elem.is_int() {
                    self.err(loc, "`%` needs integer operands");
                    return Some(Ty::Error);
                }
                Ty::Tile { elem, shape, weak }
            }
            Op::Cmp { op, a, b } => {
                let (ta, tb) = (self.ty(*a), self.ty(*b));
                if ta == Ty::Error || tb == Ty::Error {
                    return Some(Ty::Error);
                }
                self.expect_tile(*a, loc, "an operand")?;
                self.expect_tile(*b, loc, "an operand")?;
                self.unify(&ta, &tb, loc, op.symbol())?;
                let shape = self.broadcast(ta.shape()?, tb.shape()?, loc, op.symbol())?;
                Ty::tile(Elem::Concrete(DType::Bool), shape)
            }
            Op::Select { cond, a, b } => {
                let (ce, cs, _) = self.expect_tile(*cond, loc, "the condition of `where_`")?;
                let (ta, tb) = (self.ty(*a), self.ty(*b));
                self.expect_tile(*a, loc, "an operand")?;
                self.expect_tile(*b, loc, "an operand")?;
                if !ce.is_bool() {
                    self.err(
                        loc,
                        format!("the condition of `where_` must be a mask, found {ce}"),
                    );
                    return Some(Ty::Error);
                }
                let (elem, weak) = self.unify(&ta, &tb, loc, "where_")?;
                let s = self.broadcast(ta.shape()?, tb.shape()?, loc, "where_")?;
                let shape = self.broadcast(&cs, &s, loc, "where_")?;
                Ty::Tile { elem, shape, weak }
            }
            Op::Cast { x, to } => {
                let (_, shape, _) = self.expect_tile(*x, loc, "the operand of a cast")?;
                Ty::tile(to.clone(), shape)
            }
            Op::Reduce { op, x, axis } => {
                let (elem, shape, _) = self.expect_tile(*x, loc, "the operand of a reduction")?;
                if usize::from(*axis) >= shape.rank() {
                    self.err(
                        loc,
                        format!(
                            "rank mismatch: `{}` over axis {axis} of a tile of rank {} ({shape})",
                            op.name(),
                            shape.rank()
                        ),
                    );
                    return Some(Ty::Error);
                }
                if elem.is_bool() {
                    self.err(loc, format!("`{}` of a mask; cast it first", op.name()));
                    return Some(Ty::Error);
                }
                let mut dims = shape.0.clone();
                dims.remove(usize::from(*axis));
                Ty::tile(elem, Shape::new(dims))
            }
            Op::ExpandDims { x, axis } => {
                let (elem, shape, weak) =
                    self.expect_tile(*x, loc, "the operand of `expand_dims`")?;
                if usize::from(*axis) > shape.rank() {
                    self.err(
                        loc,
                        format!(
                            "rank mismatch: `expand_dims` at axis {axis} of a tile of rank {}",
                            shape.rank()
                        ),
                    );
                    return Some(Ty::Error);
                }
                let mut dims = shape.0.clone();
                dims.insert(usize::from(*axis), Dim::Const(1));
                Ty::Tile {
                    elem,
                    shape: Shape::new(dims),
                    weak,
                }
            }
            Op::Full { elem, shape, value } => {
                if !self.dims_ok(shape, loc) {
                    return Some(Ty::Error);
                }
                let (_, vs, _) = self.expect_tile(*value, loc, "the fill value")?;
                if !vs.is_scalar() {
                    self.err(loc, "the fill value must be a scalar");
                    return Some(Ty::Error);
                }
                Ty::tile(elem.clone(), Shape::new(shape.clone()))
            }
            Op::Load {
                view,
                offsets,
                mask,
                other,
            } => {
                let (param, rank, elem, _) =
                    self.expect_tensor(*view, loc, "the first argument of `load`")?;
                let (oe, os, _) = self.expect_tile(*offsets, loc, "the offsets of `load`")?;
                if rank != 1 {
                    self.err_help(
                        loc,
                        format!("rank mismatch: `load` needs a rank-1 tensor or row view; `{}` has rank {rank} here", self.param_name(param)),
                        "select a row first, e.g. `x.row(i)`, or use `load_tile`",
                    );
                    return Some(Ty::Error);
                }
                if !oe.is_int() {
                    self.err(
                        loc,
                        format!("the offsets of `load` must be integers, found {oe}"),
                    );
                    return Some(Ty::Error);
                }
                if let Some(m) = mask {
                    self.mask_fits(*m, &os, loc, "load")?;
                }
                if let Some(o) = other {
                    let (ote, ots, weak) =
                        self.expect_tile(*o, loc, "the `other` value of `load`")?;
                    if !weak && ote != elem {
                        self.err_help(
                            loc,
                            format!(
                                "dtype mismatch: `other` is {ote} but `{}` holds {elem}",
                                self.param_name(param)
                            ),
                            "use a literal or a value of the tensor's type",
                        );
                        return Some(Ty::Error);
                    }
                    if ots.broadcast(&os).as_ref() != Some(&os) {
                        self.err(loc, format!("the `other` value's shape {ots} does not broadcast to the offsets' shape {os}"));
                        return Some(Ty::Error);
                    }
                }
                Ty::tile(elem, os)
            }
            Op::Store {
                view,
                offsets,
                value,
                mask,
            } => {
                let (param, rank, elem, mutable) =
                    self.expect_tensor(*view, loc, "the first argument of `store`")?;
                let (oe, os, _) = self.expect_tile(*offsets, loc, "the offsets of `store`")?;
                let (ve, vs, weak) = self.expect_tile(*value, loc, "the value of `store`")?;
                self.writable(param, mutable, loc);
                if rank != 1 {
                    self.err_help(
                        loc,
                        format!("rank mismatch: `store` needs a rank-1 tensor or row view; `{}` has rank {rank} here", self.param_name(param)),
                        "select a row first, e.g. `y.row(i)`, or use `store_tile`",
                    );
                }
                if !oe.is_int() {
                    self.err(
                        loc,
                        format!("the offsets of `store` must be integers, found {oe}"),
                    );
                }
                if !weak && ve != elem {
                    self.err_help(
                        loc,
                        format!(
                            "dtype mismatch: storing {ve} values into `{}`, which holds {elem}",
                            self.param_name(param)
                        ),
                        format!("convert with `.cast::<{elem}>()`"),
                    );
                }
                if vs.broadcast(&os).as_ref() != Some(&os) {
                    self.err(loc, format!("tile shapes: the stored value's shape {vs} does not broadcast to the offsets' shape {os}"));
                }
                if let Some(m) = mask {
                    self.mask_fits(*m, &os, loc, "store");
                }
                return None;
            }
            Op::LoadTile {
                tensor,
                origin,
                shape,
            } => {
                let (param, rank, elem, _) =
                    self.expect_tensor(*tensor, loc, "the first argument of `load_tile`")?;
                let mut ok = self.dims_ok(shape, loc);
                for o in origin {
                    ok &= self.int_scalar(*o, "a tile origin", loc);
                }
                if origin.len() != usize::from(rank) || shape.len() != usize::from(rank) {
                    self.err(
                        loc,
                        format!(
                            "rank mismatch: `{}` has rank {rank} but `load_tile` was given a {}-d origin and a {}-d shape",
                            self.param_name(param),
                            origin.len(),
                            shape.len()
                        ),
                    );
                    return Some(Ty::Error);
                }
                if !ok {
                    return Some(Ty::Error);
                }
                Ty::tile(elem, Shape::new(shape.clone()))
            }
            Op::StoreTile {
                tensor,
                origin,
                value,
            } => {
                let (param, rank, elem, mutable) =
                    self.expect_tensor(*tensor, loc, "the first argument of `store_tile`")?;
                self.writable(param, mutable, loc);
                for o in origin {
                    self.int_scalar(*o, "a tile origin", loc);
                }
                let (ve, vs, weak) = self.expect_tile(*value, loc, "the value of `store_tile`")?;
                if origin.len() != usize::from(rank) || vs.rank() != usize::from(rank) {
                    self.err(
                        loc,
                        format!(
                            "rank mismatch: `{}` has rank {rank} but `store_tile` was given a {}-d origin and a tile of shape {vs}",
                            self.param_name(param),
                            origin.len()
                        ),
                    );
                }
                if !weak && ve != elem {
                    self.err_help(
                        loc,
                        format!(
                            "dtype mismatch: storing a {ve} tile into `{}`, which holds {elem}",
                            self.param_name(param)
                        ),
                        format!("convert with `.cast::<{elem}>()`"),
                    );
                }
                return None;
            }
            Op::Dot { a, b, acc, .. } => {
                let (ea, sa, _) = self.expect_tile(*a, loc, "the left operand of `dot`")?;
                let (eb, sb, _) = self.expect_tile(*b, loc, "the right operand of `dot`")?;
                let (ec, sc, _) = self.expect_tile(*acc, loc, "the accumulator of `dot`")?;
                if sa.rank() != 2 || sb.rank() != 2 || sc.rank() != 2 {
                    self.err(
                        loc,
                        format!("rank mismatch: `dot` needs 2-d tiles, found {sa}, {sb} and {sc}"),
                    );
                    return Some(Ty::Error);
                }
                let mut ok = true;
                if sa.0[1] != sb.0[0] {
                    self.err_help(
                        loc,
                        format!(
                            "`dot` inner dimensions differ: {sa} @ {sb} ({} vs {})",
                            sa.0[1], sb.0[0]
                        ),
                        "the left operand's columns must equal the right operand's rows",
                    );
                    ok = false;
                }
                if ok && (sc.0[0] != sa.0[0] || sc.0[1] != sb.0[1]) {
                    self.err(
                        loc,
                        format!(
                            "tile shapes: `dot` of {sa} @ {sb} into an accumulator of shape {sc}"
                        ),
                    );
                    ok = false;
                }
                if ea != eb {
                    self.err_help(
                        loc,
                        format!("dtype mismatch: `dot` of {ea} and {eb} tiles"),
                        "cast both operands to one type",
                    );
                    ok = false;
                }
                if !ea.is_float() {
                    self.err(
                        loc,
                        format!("`dot` needs floating-point operands, found {ea}"),
                    );
                    ok = false;
                }
                if ec != Elem::Concrete(DType::F32) {
                    self.err_help(
                        loc,
                        format!("the accumulator of `dot` must be f32, found {ec}"),
                        "start from `zeros::<f32, BM, BN>()`",
                    );
                    ok = false;
                }
                if !ok {
                    return Some(Ty::Error);
                }
                Ty::tile(ec, sc)
            }
            Op::For {
                start,
                end,
                step,
                stages,
                inits,
                body,
            } => {
                self.int_scalar(*start, "a loop bound", loc);
                self.int_scalar(*end, "a loop bound", loc);
                self.int_scalar(*step, "a loop step", loc);
                if let Some(s) = stages {
                    self.dims_ok(std::slice::from_ref(s), loc);
                }
                let carried: Vec<Ty> = inits
                    .iter()
                    .map(|v| match self.ty(*v) {
                        Ty::Tile { elem, shape, .. } => Ty::tile(elem, shape),
                        t => t,
                    })
                    .collect();
                if let Some(iv) = body.args.first() {
                    self.set(*iv, Ty::scalar(DType::I64));
                }
                for (a, t) in body.args.iter().skip(1).zip(&carried) {
                    self.set(*a, t.clone());
                }
                self.block(body);
                self.check_yield(body, &carried, loc, "loop-carried");
                for (r, t) in inst.results.iter().zip(carried) {
                    self.set(*r, t);
                }
                return None;
            }
            Op::If {
                cond,
                then_block,
                else_block,
            } => {
                if let Some((e, s, _)) = self.expect_tile(*cond, loc, "the condition of `if`") {
                    if !e.is_bool() || !s.is_scalar() {
                        self.err(
                            loc,
                            format!("the condition of `if` must be a scalar bool, found {e}{s}"),
                        );
                    }
                }
                self.block(then_block);
                self.block(else_block);
                let then_tys: Vec<Ty> = yields(then_block)
                    .iter()
                    .map(|v| strong(self.ty(*v)))
                    .collect();
                self.check_yield(else_block, &then_tys, loc, "`if` branch");
                for (r, t) in inst.results.iter().zip(then_tys) {
                    self.set(*r, t);
                }
                return None;
            }
            Op::Yield { .. } => return None,
        })
    }

    fn writable(&mut self, param: usize, mutable: bool, loc: Loc) {
        if !mutable {
            let n = self.param_name(param);
            self.err_help(
                loc,
                format!("cannot write through `{n}`: it is a `&` tensor"),
                format!("declare it as `{n}: &mut TensorN<..>` to let the kernel write it"),
            );
        }
    }

    fn mask_fits(&mut self, m: ValueId, target: &Shape, loc: Loc, op: &str) -> Option<()> {
        let (me, ms, _) = self.expect_tile(m, loc, "a mask")?;
        if !me.is_bool() {
            self.err(
                loc,
                format!("the mask of `{op}` must be a bool tile, found {me}"),
            );
            return None;
        }
        if ms.broadcast(target).as_ref() != Some(target) {
            self.err(
                loc,
                format!(
                    "tile shapes: the mask's shape {ms} does not broadcast to {target} in `{op}`"
                ),
            );
            return None;
        }
        Some(())
    }

    fn check_yield(&mut self, b: &Block, expected: &[Ty], loc: Loc, what: &str) {
        let ys = yields(b);
        for (i, (y, t)) in ys.iter().zip(expected).enumerate() {
            let yt = strong(self.ty(*y));
            if yt == Ty::Error || *t == Ty::Error {
                continue;
            }
            let compatible = match (&self.ty(*y), t) {
                (
                    Ty::Tile {
                        elem: ye,
                        shape: ys,
                        weak: true,
                    },
                    Ty::Tile {
                        elem: te,
                        shape: ts,
                        ..
                    },
                ) => {
                    ys == ts
                        && (ye == te
                            || te.is_float() && (ye.is_float() || ye.is_int())
                            || te.is_int() && ye.is_int())
                }
                _ => yt == *t,
            };
            if !compatible {
                let name = self.name(*y);
                self.err_help(
                    loc,
                    format!(
                        "{what} value #{i} (`{name}`) changes type from {} to {}",
                        t.describe(),
                        yt.describe()
                    ),
                    "a value assigned in a loop or branch must keep its dtype and shape",
                );
            }
        }
    }
}

fn strong(t: Ty) -> Ty {
    match t {
        Ty::Tile { elem, shape, .. } => Ty::tile(elem, shape),
        t => t,
    }
}

fn yields(b: &Block) -> Vec<ValueId> {
    match b.insts.last().map(|i| &i.op) {
        Some(Op::Yield { values }) => values.clone(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::KernelBuilder;
    use crate::expr::Expr;
    use crate::kernel::Param;
    use crate::op::UnaryOp;
    use crate::space::{Space, TuneParam};

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
}
