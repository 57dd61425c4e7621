//! The interpreter: runs a kernel's body once for one program, op by op on whole tiles,
//! with structured `for` and `if`.

use super::dot::dot;
use super::elementwise::{binary, compare, select, unary};
use super::memory::{Mem, View};
use super::reduce::reduce;
use super::tile::{adopt, cast, Data, Tile};
use crate::launch::{Checked, ScalarValue};
use tilekit_ir::{Block, DType, Dim, Literal, Op, TuneValue, Ty, ValueId};

/// An IR value at run time.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    Tile(Tile),
    View(View),
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
    fn dim(&self, d: &Dim) -> Result<usize, String> {
        let v = match d {
            Dim::Const(c) => i64::try_from(*c).ok(),
            Dim::Param(p) => self.checked.config.int(p),
        };
        v.and_then(|v| usize::try_from(v).ok())
            .filter(|&v| v > 0)
            .ok_or_else(|| {
                format!("tile extent `{d}` is not a positive integer in this configuration")
            })
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
}

fn scalar_tile(s: ScalarValue) -> Tile {
    match s {
        ScalarValue::F32(v) => Tile::new(DType::F32, vec![], Data::F(vec![f64::from(v)])),
        ScalarValue::I32(v) => Tile::int(DType::I32, i64::from(v)),
        ScalarValue::I64(v) => Tile::int(DType::I64, v),
        ScalarValue::Usize(v) => Tile::int(DType::I64, i64::try_from(v).unwrap_or(i64::MAX)),
        ScalarValue::Bool(v) => Tile::new(DType::Bool, vec![], Data::B(vec![v])),
    }
}

impl<'a> Program<'a> {
    pub(crate) fn new(plan: &'a Plan<'a>, mem: &'a Mem<'a>, pid: [i64; 3]) -> Program<'a> {
        Program {
            plan,
            mem,
            pid,
            vals: vec![None; plan.checked.kernel.num_values()],
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

    /// Runs a block; returns the values it yields.
    fn block(&mut self, b: &Block) -> Result<Vec<Value>, String> {
        let exact = self.plan.exact;
        for inst in &b.insts {
            let first = inst.results.first().copied();
            let out: Option<Value> = match &inst.op {
                Op::ProgramId { axis } => Some(Value::Tile(Tile::int(
                    DType::I64,
                    self.pid[usize::from(*axis).min(2)],
                ))),
                Op::NumPrograms { axis } => {
                    let g = self
                        .plan
                        .checked
                        .grid
                        .get(usize::from(*axis))
                        .copied()
                        .unwrap_or(1);
                    Some(Value::Tile(Tile::int(DType::I64, g)))
                }
                Op::Arange { n } => {
                    let n = self.plan.dim(n)?;
                    Some(Value::Tile(Tile::new(
                        DType::I32,
                        vec![n],
                        Data::I((0..n as i64).map(|i| i64::from(i as i32)).collect()),
                    )))
                }
                Op::Lit(l) => {
                    let (dtype, data) = match l {
                        Literal::Float(v) => (DType::F32, Data::F(vec![*v])),
                        Literal::Int(v) => (DType::I32, Data::I(vec![*v])),
                        Literal::Bool(v) => (DType::Bool, Data::B(vec![*v])),
                    };
                    Some(Value::Tile(Tile {
                        dtype,
                        weak: true,
                        shape: vec![],
                        data,
                    }))
                }
                Op::TuneValue { name } => {
                    Some(Value::Tile(match self.plan.checked.config.get(name) {
                        Some(TuneValue::Int(v)) => Tile::int(DType::I64, *v),
                        Some(TuneValue::Bool(v)) => {
                            Tile::new(DType::Bool, vec![], Data::B(vec![*v]))
                        }
                        _ => {
                            return Err(format!(
                            "malformed IR: tuning parameter `{name}` has no integer or bool value"
                        ))
                        }
                    }))
                }
                Op::ScalarParam { index } => {
                    match self.plan.checked.scalars.get(*index).copied().flatten() {
                        Some(s) => Some(Value::Tile(scalar_tile(s))),
                        None => {
                            return Err(format!("malformed IR: parameter {index} is not a scalar"))
                        }
                    }
                }
                Op::TensorParam { index } => match self.plan.views.get(*index).cloned().flatten() {
                    Some(v) => Some(Value::View(v)),
                    None => return Err(format!("malformed IR: parameter {index} is not a tensor")),
                },
                Op::TensorDim { tensor, axis } => {
                    let v = self.view(*tensor)?;
                    let d = v.shape.get(usize::from(*axis)).copied().ok_or_else(|| {
                        format!(
                            "malformed IR: axis {axis} of a rank-{} view of `{}`",
                            v.shape.len(),
                            self.name(v.param)
                        )
                    })?;
                    Some(Value::Tile(Tile::int(DType::I64, d)))
                }
                Op::Row { tensor, index } => {
                    let i = self.int(*index, "a row index")?;
                    let v = self.view(*tensor)?;
                    Some(Value::View(v.row(i, self.name(v.param))?))
                }
                Op::Unary { op, x } => Some(Value::Tile(unary(*op, self.tile(*x)?, exact)?)),
                Op::Binary { op, a, b } => {
                    let d =
                        self.dtype(first.ok_or("malformed IR: a binary op without a result")?)?;
                    Some(Value::Tile(binary(
                        *op,
                        self.tile(*a)?,
                        self.tile(*b)?,
                        d,
                        exact,
                    )?))
                }
                Op::Cmp { op, a, b } => Some(Value::Tile(compare(
                    *op,
                    self.tile(*a)?,
                    self.tile(*b)?,
                    exact,
                )?)),
                Op::Select { cond, a, b } => {
                    let d = self.dtype(first.ok_or("malformed IR: `where_` without a result")?)?;
                    Some(Value::Tile(select(
                        self.tile(*cond)?,
                        self.tile(*a)?,
                        self.tile(*b)?,
                        d,
                        exact,
                    )?))
                }
                Op::Cast { x, to } => {
                    let to = to
                        .resolve(&self.plan.checked.bindings)
                        .ok_or_else(|| format!("malformed IR: unbound type `{to}`"))?;
                    Some(Value::Tile(cast(self.tile(*x)?, to, exact)))
                }
                Op::Reduce { op, x, axis } => Some(Value::Tile(reduce(
                    *op,
                    self.tile(*x)?,
                    usize::from(*axis),
                    exact,
                )?)),
                Op::ExpandDims { x, axis } => {
                    let mut t = self.tile(*x)?.clone();
                    let a = usize::from(*axis);
                    if a > t.shape.len() {
                        return Err(format!(
                            "malformed IR: `expand_dims` at axis {a} of a rank-{} tile",
                            t.shape.len()
                        ));
                    }
                    t.shape.insert(a, 1);
                    Some(Value::Tile(t))
                }
                Op::Full { elem, shape, value } => {
                    let d = elem
                        .resolve(&self.plan.checked.bindings)
                        .ok_or_else(|| format!("malformed IR: unbound type `{elem}`"))?;
                    let shape = shape
                        .iter()
                        .map(|s| self.plan.dim(s))
                        .collect::<Result<Vec<_>, _>>()?;
                    let n: usize = shape.iter().product();
                    let v = cast(self.tile(*value)?, d, exact);
                    let data = match v.data {
                        Data::F(x) if x.len() == 1 => Data::F(vec![x[0]; n]),
                        Data::I(x) if x.len() == 1 => Data::I(vec![x[0]; n]),
                        Data::B(x) if x.len() == 1 => Data::B(vec![x[0]; n]),
                        _ => return Err("malformed IR: the fill value is not a scalar".into()),
                    };
                    Some(Value::Tile(Tile::new(d, shape, data)))
                }
                Op::Load {
                    view,
                    offsets,
                    mask,
                    other,
                } => {
                    let mask = mask.map(|m| self.tile(m)).transpose()?;
                    let other = other.map(|o| self.tile(o)).transpose()?;
                    Some(Value::Tile(self.mem.load(
                        self.view(*view)?,
                        self.tile(*offsets)?,
                        mask,
                        other,
                        exact,
                    )?))
                }
                Op::Store {
                    view,
                    offsets,
                    value,
                    mask,
                } => {
                    let mask = mask.map(|m| self.tile(m)).transpose()?;
                    self.mem.store(
                        self.view(*view)?,
                        self.tile(*offsets)?,
                        self.tile(*value)?,
                        mask,
                        exact,
                    )?;
                    None
                }
                Op::LoadTile {
                    tensor,
                    origin,
                    shape,
                } => {
                    let origin = origin
                        .iter()
                        .map(|o| self.int(*o, "a tile origin"))
                        .collect::<Result<Vec<_>, _>>()?;
                    let shape = shape
                        .iter()
                        .map(|s| self.plan.dim(s))
                        .collect::<Result<Vec<_>, _>>()?;
                    Some(Value::Tile(self.mem.load_tile(
                        self.view(*tensor)?,
                        &origin,
                        &shape,
                    )?))
                }
                Op::StoreTile {
                    tensor,
                    origin,
                    value,
                } => {
                    let origin = origin
                        .iter()
                        .map(|o| self.int(*o, "a tile origin"))
                        .collect::<Result<Vec<_>, _>>()?;
                    self.mem
                        .store_tile(self.view(*tensor)?, &origin, self.tile(*value)?, exact)?;
                    None
                }
                Op::Dot {
                    a,
                    b,
                    acc,
                    precision,
                } => Some(Value::Tile(dot(
                    self.tile(*a)?,
                    self.tile(*b)?,
                    self.tile(*acc)?,
                    *precision,
                    exact,
                )?)),
                Op::For {
                    start,
                    end,
                    step,
                    inits,
                    body,
                    ..
                } => {
                    let (start, end) = (
                        self.int(*start, "a loop bound")?,
                        self.int(*end, "a loop bound")?,
                    );
                    let step = self.int(*step, "a loop step")?;
                    if step <= 0 {
                        return Err(format!("loop step must be positive, found {step}"));
                    }
                    let mut carried = Vec::with_capacity(inits.len());
                    for (init, r) in inits.iter().zip(&inst.results) {
                        carried.push(self.strong(*r, self.value(*init)?.clone())?);
                    }
                    let mut i = start;
                    while i < end {
                        let Some((iv, args)) = body.args.split_first() else {
                            return Err(
                                "malformed IR: a loop body without an induction variable".into()
                            );
                        };
                        self.set(*iv, Value::Tile(Tile::int(DType::I64, i)));
                        for (a, c) in args.iter().zip(carried.drain(..)) {
                            self.set(*a, c);
                        }
                        let ys = self.block(body)?;
                        if ys.len() != inst.results.len() {
                            return Err(
                                "malformed IR: a loop body yields the wrong number of values"
                                    .into(),
                            );
                        }
                        for (y, r) in ys.into_iter().zip(&inst.results) {
                            carried.push(self.strong(*r, y)?);
                        }
                        match i.checked_add(step) {
                            Some(n) => i = n,
                            None => break,
                        }
                    }
                    for (r, c) in inst.results.iter().zip(carried) {
                        self.set(*r, c);
                    }
                    None
                }
                Op::If {
                    cond,
                    then_block,
                    else_block,
                } => {
                    let c = self.tile(*cond)?.as_bool("the condition of `if`")?;
                    let ys = self.block(if c { then_block } else { else_block })?;
                    for (y, r) in ys.into_iter().zip(&inst.results) {
                        let y = self.strong(*r, y)?;
                        self.set(*r, y);
                    }
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
