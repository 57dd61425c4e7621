//! The interpreter: runs a kernel's body once for one program, op by op on whole tiles,
//! with structured `for` and `if`.
//!
//! This module holds a program's state and the table that routes each op to its family:
//! `values` (program ids, literals, tuning values, scalar parameters), `elementwise`,
//! `shape` (`arange`, reductions, `expand_dims`, `trans`, `slice`, `full`), `memory` (tensor views, loads and
//! stores), `dot`, `control` (`for`, `if`). Adding an op: one line in [`Program::block`]'s
//! table and its interpretation in its family's module.

mod control;
mod dot;
mod elementwise;
mod memory;
mod shape;
mod values;

use super::memory::{Mem, View};
use super::shared_row::SharedRow;
use super::tile::{adopt, Tile};
use crate::launch::Checked;
use tilekit_ir::{limits, Block, DType, Dim, Op, Ty, ValueId};
use values::literal;

/// An IR value at run time.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    Tile(Tile),
    View(View),
}

impl From<Tile> for Value {
    fn from(t: Tile) -> Value {
        Value::Tile(t)
    }
}

/// What every program of a launch shares: the checked launch, each value's element type
/// under the bindings, the tensor arguments as views, and the mode.
pub(crate) struct Plan<'a> {
    pub checked: &'a Checked<'a>,
    /// Element type of each value (for tiles), under the bindings.
    pub dtypes: Vec<Option<DType>>,
    /// The root view of each tensor parameter.
    pub views: Vec<Option<View>>,
    /// Exact (f64, unrounded) mode.
    pub exact: bool,
}

impl Plan<'_> {
    /// A sub-tile offset: a non-negative integer in this configuration.
    fn offset(&self, d: &Dim) -> Result<usize, String> {
        d.eval(&|p| self.checked.config.int(p))
            .and_then(|v| usize::try_from(v).ok())
            .ok_or_else(|| {
                format!("sub-tile offset `{d}` is not a non-negative integer in this configuration")
            })
    }

    fn dim(&self, d: &Dim) -> Result<usize, String> {
        let v = match d {
            Dim::Const(c) => i64::try_from(*c).ok(),
            Dim::Param(p) => self.checked.config.int(p),
            Dim::Affine(a) => a.eval(&|p| self.checked.config.int(p)).ok().flatten(),
        };
        v.and_then(|v| usize::try_from(v).ok())
            .filter(|&v| v > 0)
            .ok_or_else(|| {
                format!("tile extent `{d}` is not a positive integer in this configuration")
            })
    }

    /// The extents of a tile of shape `dims`, refused (rather than allocated) when the tile
    /// has more elements than a block of this configuration holds
    /// (`tilekit_ir::limits`: 4096 per thread; the launch check refuses such
    /// configurations first).
    fn tile_shape(&self, dims: &[Dim]) -> Result<Vec<usize>, String> {
        let shape = dims
            .iter()
            .map(|d| self.dim(d))
            .collect::<Result<Vec<_>, _>>()?;
        let elems = shape
            .iter()
            .try_fold(1u64, |acc, &n| acc.checked_mul(n as u64))
            .unwrap_or(u64::MAX);
        let limit = limits::max_tile_elems(&self.checked.config);
        if elems > limit {
            return Err(format!(
                "a tile of shape {shape:?} ({elems} elements) is more than a block of this \
                 configuration holds ({limit}: {} per thread x {} threads)",
                limits::MAX_ELEMS_PER_THREAD,
                limits::threads(&self.checked.config)
            ));
        }
        Ok(shape)
    }
}

/// Element types of every value under `checked`'s bindings.
pub(crate) fn resolve_dtypes(checked: &Checked<'_>) -> Vec<Option<DType>> {
    checked
        .types
        .tys
        .iter()
        .map(|t| match t {
            Ty::Tile { elem, .. } => elem.resolve(&checked.bindings),
            _ => None,
        })
        .collect()
}

/// One program's state.
pub(crate) struct Program<'a> {
    plan: &'a Plan<'a>,
    mem: &'a Mem<'a>,
    pid: [i64; 3],
    vals: Vec<Option<Value>>,
    /// The program's own `shared_row` buffers, in the order it made them.
    shared: std::cell::RefCell<Vec<SharedRow>>,
}

impl<'a> Program<'a> {
    pub(crate) fn new(plan: &'a Plan<'a>, mem: &'a Mem<'a>, pid: [i64; 3]) -> Program<'a> {
        Program {
            plan,
            mem,
            pid,
            vals: vec![None; plan.checked.kernel.num_values()],
            shared: Default::default(),
        }
    }

    /// Runs the kernel's body.
    pub(crate) fn run(&mut self) -> Result<(), String> {
        self.block(&self.plan.checked.kernel.body).map(|_| ())
    }

    fn value(&self, v: ValueId) -> Result<&Value, String> {
        self.vals
            .get(v.index())
            .and_then(Option::as_ref)
            .ok_or_else(|| format!("malformed IR: value %{} used before its definition", v.0))
    }

    fn tile(&self, v: ValueId) -> Result<&Tile, String> {
        match self.value(v)? {
            Value::Tile(t) => Ok(t),
            Value::View(_) => Err(format!("malformed IR: %{} is a tensor, not a tile", v.0)),
        }
    }

    fn view(&self, v: ValueId) -> Result<&View, String> {
        match self.value(v)? {
            Value::View(t) => Ok(t),
            Value::Tile(_) => Err(format!("malformed IR: %{} is a tile, not a tensor", v.0)),
        }
    }

    fn int(&self, v: ValueId, what: &str) -> Result<i64, String> {
        self.tile(v)?.as_int(what)
    }

    fn dtype(&self, v: ValueId) -> Result<DType, String> {
        self.plan
            .dtypes
            .get(v.index())
            .copied()
            .flatten()
            .ok_or_else(|| format!("malformed IR: %{} has no element type", v.0))
    }

    fn set(&mut self, v: ValueId, x: Value) {
        if let Some(slot) = self.vals.get_mut(v.index()) {
            *slot = Some(x);
        }
    }

    /// `x` as the strongly typed value `v` is declared as (loop-carried values and branch
    /// results adopt their inferred type).
    fn strong(&self, v: ValueId, x: Value) -> Result<Value, String> {
        Ok(match x {
            Value::Tile(t) if t.weak => Value::Tile(adopt(&t, self.dtype(v)?, self.plan.exact)),
            x => x,
        })
    }

    fn name(&self, p: usize) -> &str {
        self.plan
            .checked
            .kernel
            .params
            .get(p)
            .map(|p| p.name.as_str())
            .unwrap_or("?")
    }

    /// Runs a block; returns the values it yields. Each op is interpreted by the module of
    /// its family; this table only routes it.
    fn block(&mut self, b: &Block) -> Result<Vec<Value>, String> {
        for inst in &b.insts {
            let first = inst.results.first().copied();
            let out: Option<Value> = match &inst.op {
                // What the launch gives a program (`values`).
                Op::ProgramId { axis } => Some(self.program_id(*axis).into()),
                Op::NumPrograms { axis } => Some(self.num_programs(*axis).into()),
                Op::Lit(l) => Some(literal(l).into()),
                Op::TuneValue { name } => Some(self.tune_value(name)?.into()),
                Op::ScalarParam { index } => Some(self.scalar_param(*index)?.into()),
                // Elementwise (`elementwise`).
                Op::Unary { op, x } => Some(self.unary(*op, *x)?.into()),
                Op::Binary { op, a, b } => Some(self.binary(*op, *a, *b, first)?.into()),
                Op::Cmp { op, a, b } => Some(self.compare(*op, *a, *b)?.into()),
                Op::Select { cond, a, b } => Some(self.select(*cond, *a, *b, first)?.into()),
                Op::Fma { a, b, c } => Some(self.fma([*a, *b, *c], first)?.into()),
                Op::StochasticRound { x, seed, index } => {
                    Some(self.stochastic_round(*x, *seed, *index)?.into())
                }
                Op::Cast { x, to } => Some(self.cast(*x, to)?.into()),
                // Reductions and shapes (`shape`).
                Op::Arange { n } => Some(self.arange(n)?.into()),
                Op::Reduce { op, x, axis } => Some(self.reduce(*op, *x, *axis)?.into()),
                Op::ExpandDims { x, axis } => Some(self.expand_dims(*x, *axis)?.into()),
                Op::Trans { x } => Some(self.trans(*x)?.into()),
                Op::Slice { x, offsets, shape } => Some(self.slice(*x, offsets, shape)?.into()),
                Op::Cat { a, b, axis } => Some(self.cat(*a, *b, *axis)?.into()),
                Op::Full { elem, shape, value } => Some(self.full(elem, shape, *value)?.into()),
                // Tensors and memory (`memory`).
                Op::TensorParam { index } => Some(Value::View(self.tensor_param(*index)?)),
                Op::SharedRow { elem, len } => Some(Value::View(self.shared_row(elem, len)?)),
                Op::TensorDim { tensor, axis } => Some(self.tensor_dim(*tensor, *axis)?.into()),
                Op::Row { tensor, index } => Some(Value::View(self.row(*tensor, *index)?)),
                Op::Narrow { tensor, start, len } => {
                    Some(Value::View(self.narrow(*tensor, *start, *len)?))
                }
                Op::Load {
                    view,
                    offsets,
                    mask,
                    other,
                    ..
                } => Some(self.load(*view, *offsets, *mask, *other)?.into()),
                Op::Store {
                    view,
                    offsets,
                    value,
                    mask,
                    ..
                } => {
                    self.store(*view, *offsets, *value, *mask)?;
                    None
                }
                Op::LoadTile {
                    tensor,
                    origin,
                    shape,
                } => Some(self.load_tile(*tensor, origin, shape)?.into()),
                Op::AtomicAdd {
                    view,
                    offset,
                    value,
                    mask,
                } => {
                    self.atomic_add(*view, *offset, *value, *mask)?;
                    None
                }
                Op::StoreTile {
                    tensor,
                    origin,
                    value,
                } => {
                    self.store_tile(*tensor, origin, *value)?;
                    None
                }
                // Matrix products (`dot`).
                Op::Dot {
                    a,
                    b,
                    acc,
                    precision,
                } => Some(self.dot(*a, *b, *acc, *precision)?.into()),
                // Structured control flow (`control`).
                Op::For {
                    start,
                    end,
                    step,
                    inits,
                    body,
                    ..
                } => {
                    self.for_loop([*start, *end, *step], inits, body, &inst.results)?;
                    None
                }
                Op::If {
                    cond,
                    then_block,
                    else_block,
                } => {
                    self.if_else(*cond, then_block, else_block, &inst.results)?;
                    None
                }
                Op::Yield { values } => {
                    return values.iter().map(|v| self.value(*v).cloned()).collect();
                }
            };
            if let (Some(r), Some(x)) = (first, out) {
                self.set(r, x);
            }
        }
        Ok(Vec::new())
    }
}
