//! What the emitter knows about each IR value: its C++ name and type, and how to convert
//! and broadcast it to what an op expects.

use super::{layout_name, Emitter};
use crate::error::CodegenError;
use crate::layout::Layout;
use crate::names::{elem_ctype, sanitize, shape_type, value_type};
use crate::smem::Factor;
use tilekit_ir::{CmpOp, DType, Elem, Literal, Op, Shape, Ty, ValueId};

/// The lowered form of an IR value.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    /// A scalar (rank 0, replicated in every thread) or a register tile.
    Tile {
        /// C++ variable.
        name: String,
        /// Element type (for a weak literal: the type `infer` gives it).
        elem: Elem,
        /// Shape.
        shape: Shape,
        /// Weak literals are C++ `double` / `long long` / `bool` constants.
        lit: Option<Literal>,
    },
    /// A shared-memory operand tile (`tk::stile`, a ring slot); only `dot` reads it.
    Smem {
        /// C++ variable.
        name: String,
    },
    /// A tensor view (`tk::view<T, R>`).
    View {
        /// C++ variable.
        name: String,
        /// Element type.
        elem: Elem,
        /// Rank.
        rank: u8,
    },
}

/// The C++ variable name of a value: `v<id>` plus its debug name.
pub(crate) fn value_name(id: ValueId, debug: Option<&str>) -> String {
    match debug {
        Some(n) if !n.is_empty() => format!("v{}_{}", id.0, sanitize(n)),
        _ => format!("v{}", id.0),
    }
}

impl Emitter<'_> {
    pub(super) fn cname(&self, id: ValueId) -> String {
        value_name(
            id,
            self.kernel
                .value_names
                .get(id.index())
                .and_then(|n| n.as_deref()),
        )
    }

    pub(super) fn ty(&self, id: ValueId) -> Result<(Elem, Shape), CodegenError> {
        match self.types.of(id) {
            Ty::Tile { elem, shape, .. } => Ok((elem.clone(), shape.clone())),
            t => Err(CodegenError::Unsupported(format!(
                "value %{} is {t:?}, expected a tile or scalar",
                id.0
            ))),
        }
    }

    pub(super) fn val(&self, id: ValueId) -> Result<&Val, CodegenError> {
        self.vals
            .get(id.index())
            .and_then(|v| v.as_ref())
            .ok_or_else(|| {
                CodegenError::Unsupported(format!("value %{} is used before it is defined", id.0))
            })
    }

    pub(super) fn tile(
        &self,
        id: ValueId,
    ) -> Result<(String, Elem, Shape, Option<Literal>), CodegenError> {
        match self.val(id)? {
            Val::Tile {
                name,
                elem,
                shape,
                lit,
            } => Ok((name.clone(), elem.clone(), shape.clone(), *lit)),
            Val::View { .. } | Val::Smem { .. } => Err(CodegenError::Unsupported(format!(
                "value %{} is a tensor or a shared-memory tile, expected a register tile",
                id.0
            ))),
        }
    }

    pub(super) fn view(&self, id: ValueId) -> Result<(String, Elem, u8), CodegenError> {
        match self.val(id)? {
            Val::View { name, elem, rank } => Ok((name.clone(), elem.clone(), *rank)),
            Val::Tile { .. } | Val::Smem { .. } => Err(CodegenError::Unsupported(format!(
                "value %{} is a tile, expected a tensor",
                id.0
            ))),
        }
    }

    pub(super) fn define(&mut self, id: ValueId, v: Val) {
        if let Some(slot) = self.vals.get_mut(id.index()) {
            if let Val::Tile { shape, .. } = &v {
                if !shape.is_scalar() {
                    self.tile_shapes.push(shape.clone());
                }
            }
            *slot = Some(v);
        }
    }

    /// Defines `id` as a tile/scalar named after it, with its inferred type.
    pub(super) fn define_typed(&mut self, id: ValueId) -> Result<String, CodegenError> {
        let (elem, shape) = self.ty(id)?;
        let name = self.cname(id);
        self.define(
            id,
            Val::Tile {
                name: name.clone(),
                elem,
                shape,
                lit: None,
            },
        );
        Ok(name)
    }

    /// An expression for value `id` converted to `elem` (exactly the type a C++ variable of
    /// that element type has).
    pub(super) fn cast_to(&self, id: ValueId, elem: &Elem) -> Result<String, CodegenError> {
        let (name, e, _, lit) = self.tile(id)?;
        if lit.is_some() || &e != elem {
            Ok(format!("tk::cast<{}>({name})", elem_ctype(elem)))
        } else {
            Ok(name)
        }
    }

    /// The layout of value `id`.
    pub(super) fn layout(&self, id: ValueId) -> Layout {
        self.layouts.get(id)
    }

    /// An expression for value `id` converted to `elem` and, unless it is a scalar,
    /// broadcast to `shape` in `layout` (through shared memory when the shape or the
    /// layout differs: `tk::relayout`).
    pub(super) fn coerce(
        &mut self,
        id: ValueId,
        elem: &Elem,
        shape: &Shape,
        layout: Layout,
    ) -> Result<String, CodegenError> {
        let expr = self.cast_to(id, elem)?;
        let (_, _, vshape, _) = self.tile(id)?;
        let from = self.layout(id);
        if vshape.is_scalar() || (&vshape == shape && from == layout) {
            return Ok(expr);
        }
        if vshape.rank() > shape.rank() {
            return Err(CodegenError::Unsupported(format!(
                "cannot broadcast a {vshape} tile to {shape}"
            )));
        }
        let mut factors: Vec<Factor> = vshape.0.iter().cloned().map(Factor::Dim).collect();
        factors.push(Factor::SizeOf(elem.clone()));
        if self
            .layouts
            .slice_in_registers(from, &vshape, layout, shape)
        {
            // A slice into accumulator fragments it covers, a rows slice into its blocked
            // tile, a row vector over whole-row blocked passes: a register copy; the region
            // is used only by a variant where that does not hold.
            let what = format!("{from} {vshape} -> {layout} {shape}");
            let (unless, why) = match from {
                Layout::Slice { .. } => (
                    "only where the warp arrangements disagree",
                    "the slice covers the fragments",
                ),
                Layout::Rows(_) => (
                    "only where the blocked passes straddle rows",
                    "every thread holds every row",
                ),
                _ => (
                    "only where the blocked passes straddle rows",
                    "where the blocked passes are whole rows: the same columns in the same thread",
                ),
            };
            let u = self.smem.add(format!("{what} ({unless})"), vec![factors]);
            let off = self.smem.scratch_offset(u, 0);
            self.tmp += 1;
            let t = format!("t{}", self.tmp);
            self.w.line(&format!("// {what}: in registers ({why})"));
            self.w.line(&format!(
                "const auto {t} = tk::relayout<{}, {}>({expr}, smem + {off});",
                shape_type(shape),
                layout_name(layout)
            ));
            return Ok(t);
        }
        let what = if &vshape == shape {
            format!("convert {vshape} {from} -> {layout}")
        } else if from == layout {
            format!("broadcast {vshape} -> {shape}")
        } else {
            format!("broadcast {vshape} {from} -> {shape} {layout}")
        };
        let u = self.smem.add(what.clone(), vec![factors]);
        let off = self.smem.scratch_offset(u, 0);
        self.tmp += 1;
        let t = format!("t{}", self.tmp);
        self.w
            .line(&format!("// [block] {what} through shared memory"));
        self.w.line(&format!(
            "const auto {t} = tk::relayout<{}, {}>({expr}, smem + {off});",
            shape_type(shape),
            layout_name(layout)
        ));
        Ok(t)
    }

    /// A 64-bit integer scalar expression.
    pub(super) fn index(&self, id: ValueId) -> Result<String, CodegenError> {
        let (_, _, shape, _) = self.tile(id)?;
        if !shape.is_scalar() {
            return Err(CodegenError::Unsupported(format!(
                "value %{} must be a scalar",
                id.0
            )));
        }
        self.cast_to(id, &Elem::Concrete(DType::I64))
    }

    /// The C++ type of a strongly typed value of `elem` and `shape` in `layout`.
    pub(super) fn ctype(elem: &Elem, shape: &Shape, layout: Layout) -> String {
        value_type(elem, shape, &layout_name(layout))
    }

    /// True for an integer scalar (rank 0).
    pub(super) fn is_int_scalar(&self, v: ValueId) -> bool {
        matches!(self.types.of(v), Ty::Tile { elem, shape, .. } if shape.is_scalar() && elem.is_int())
    }

    /// `Some(base)` when `offsets` is `arange(N)` (base `None`) or `arange(N) + s` for an
    /// integer scalar `s`: the offsets of one group of VEC lanes are then contiguous.
    pub(super) fn contiguous_base(&self, offsets: ValueId) -> Option<Option<ValueId>> {
        let is_arange = |v: ValueId| {
            matches!(
                self.defs.get(v.index()).copied().flatten(),
                Some(Op::Arange { .. })
            )
        };
        let is_int_scalar = |v: ValueId| matches!(self.types.of(v), Ty::Tile { elem, shape, .. } if shape.is_scalar() && elem.is_int());
        if is_arange(offsets) {
            return Some(None);
        }
        if let Some(Op::Binary {
            op: tilekit_ir::BinOp::Add,
            a,
            b,
        }) = self.defs.get(offsets.index()).copied().flatten()
        {
            if is_arange(*a) && is_int_scalar(*b) {
                return Some(Some(*b));
            }
            if is_arange(*b) && is_int_scalar(*a) {
                return Some(Some(*a));
            }
        }
        None
    }

    /// A bounds mask `arange (+ base) < limit` / `<= limit` over a rank-1 tile, by value:
    /// its offsets' base (`None` for a bare `arange`), the limit, and whether it is `<=`.
    pub(super) fn prefix_bound(&self, mask: ValueId) -> Option<PrefixBound> {
        let Some(Op::Cmp { op, a, b }) = self.defs.get(mask.index()).copied().flatten() else {
            return None;
        };
        let rank1 = matches!(self.types.of(mask), Ty::Tile { shape, .. } if shape.rank() == 1);
        let inclusive = match op {
            CmpOp::Lt => false,
            CmpOp::Le => true,
            _ => return None,
        };
        let base = self.contiguous_base(*a)?;
        (self.is_int_scalar(*b) && rank1).then_some(PrefixBound {
            base,
            limit: *b,
            inclusive,
        })
    }

    /// The limit of a [`PrefixBound`] as a C++ expression (`limit + 1` for `<=`).
    pub(super) fn bound_limit(&self, bound: &PrefixBound) -> Result<String, CodegenError> {
        let limit = self.index(bound.limit)?;
        Ok(if bound.inclusive {
            format!("({limit}) + 1LL")
        } else {
            limit
        })
    }

    /// A bounds mask `arange (+ base) < limit` / `<= limit` over a rank-1 tile: the base
    /// (`None` for a bare `arange`) and the limit as a C++ expression (`limit + 1` for
    /// `<=`). The emitter computes such masks with `tk::arange_lt`, and a load or store
    /// whose offsets have the same base uses the whole-tile test `tk::*_prefix`.
    pub(super) fn prefix_mask(
        &self,
        mask: ValueId,
    ) -> Result<Option<(Option<ValueId>, String)>, CodegenError> {
        match self.prefix_bound(mask) {
            Some(bound) => Ok(Some((bound.base, self.bound_limit(&bound)?))),
            None => Ok(None),
        }
    }
}

/// A bounds mask `arange (+ base) < limit` (or `<=`) by value ([`Emitter::prefix_bound`]).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct PrefixBound {
    /// The offsets' base (`None`: a bare `arange`).
    pub base: Option<ValueId>,
    /// The integer scalar the offsets are compared with.
    pub limit: ValueId,
    /// `<=` rather than `<`.
    pub inclusive: bool,
}
