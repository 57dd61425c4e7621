//! What the emitter knows about each IR value: its C++ name and type, and how to convert
//! and broadcast it to what an op expects.

use super::{layout_name, Emitter};
use crate::error::CodegenError;
use crate::layout::{ConvertPath, Layout};
use crate::names::{elem_ctype, sanitize, shape_type, value_type};
use crate::schedule::{Facts, PrefixBound};
use crate::smem::PartKey;
use tilekit_ir::{DType, Dim, Elem, Inst, Literal, Op, Shape, Ty, ValueId};

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

/// The printer met an operand conversion the layouts stage did not list.
fn unlisted(id: ValueId, inst: &Inst) -> CodegenError {
    CodegenError::Unsupported(format!(
        "internal: the layouts stage lists no conversion of %{} at line {}",
        id.0, inst.loc.line
    ))
}

/// The C++ variable name of a value: `v<id>` plus its debug name.
pub(crate) fn value_name(id: ValueId, debug: Option<&str>) -> String {
    match debug {
        Some(n) if !n.is_empty() => format!("v{}_{}", id.0, sanitize(n)),
        _ => format!("v{}", id.0),
    }
}

impl<'k> Emitter<'k> {
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

    /// Defines `id` as the tile/scalar variable `name` of element `elem` and shape `shape`.
    pub(super) fn define_named(&mut self, id: ValueId, name: String, elem: Elem, shape: Shape) {
        self.define(
            id,
            Val::Tile {
                name,
                elem,
                shape,
                lit: None,
            },
        );
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

    /// An expression for operand `operand` of `inst` (value `id`) converted to `elem` and,
    /// unless it is a scalar, broadcast to `shape` in `layout`: where the layouts stage
    /// listed a conversion point there ([`crate::layout::Conversion`]), its `tk::relayout`
    /// over the point's region; else the value itself (an operand the stage did not list
    /// must already be in that shape and layout).
    pub(super) fn coerce(
        &mut self,
        (inst, operand): (&Inst, usize),
        id: ValueId,
        elem: &Elem,
        shape: &Shape,
        layout: Layout,
    ) -> Result<String, CodegenError> {
        let expr = self.cast_to(id, elem)?;
        let (_, _, vshape, _) = self.tile(id)?;
        let Some(c) = self.layouts.conversion_at(inst, operand) else {
            if vshape.is_scalar() || (&vshape == shape && self.layout(id) == layout) {
                return Ok(expr);
            }
            if vshape.rank() > shape.rank() {
                return Err(CodegenError::Unsupported(format!(
                    "cannot broadcast a {vshape} tile to {shape}"
                )));
            }
            return Err(unlisted(id, inst));
        };
        if c.value != id || &c.elem != elem || &c.shape != shape || c.to != layout {
            return Err(unlisted(id, inst));
        }
        if c.path == ConvertPath::Reload {
            let key = (id, elem.clone(), shape.clone(), layout);
            if let Some((_, e)) = self.reloads.iter().find(|(k, _)| k == &key) {
                return Ok(e.clone());
            }
            let what = c.what.clone();
            return self.reload(id, elem, shape, layout, &what);
        }
        let (key, what, path) = (PartKey::Convert(c.id), c.what.clone(), c.path);
        let off = self.smem.scratch_offset(&key, 0)?;
        self.tmp += 1;
        let t = format!("t{}", self.tmp);
        match path {
            ConvertPath::Registers { why, .. } => {
                self.w.line(&format!("// {what}: in registers ({why})"))
            }
            ConvertPath::SharedMemory | ConvertPath::Reload => self
                .w
                .line(&format!("// [block] {what} through shared memory")),
        }
        self.w.line(&format!(
            "const auto {t} = tk::relayout<{}, {}>({expr}, smem + {off});",
            shape_type(shape),
            layout_name(layout)
        ));
        Ok(t)
    }

    /// Prints, right after the `load_tile` whose result is `load`, every broadcast of it the
    /// layouts stage loads again (`ConvertPath::Reload`), once per value, element type,
    /// shape and layout: they are then in flight with the block's other loads (a load
    /// printed at its first use waits behind the arithmetic before it) and an operand used
    /// twice reads one load.
    pub(super) fn eager_reloads(&mut self, load: ValueId) -> Result<(), CodegenError> {
        let wanted: Vec<_> = self
            .layouts
            .conversions
            .iter()
            .filter(|c| c.path == ConvertPath::Reload)
            .map(|c| {
                (
                    c.value,
                    c.elem.clone(),
                    c.shape.clone(),
                    c.to,
                    c.what.clone(),
                )
            })
            .collect();
        for (v, elem, shape, to, what) in wanted {
            let key = (v, elem.clone(), shape.clone(), to);
            let from_here = self
                .facts()
                .reload_source(v)
                .is_some_and(|(l, _)| l == load);
            if !from_here || self.reloads.iter().any(|(k, _)| k == &key) {
                continue;
            }
            let e = self.reload(v, &elem, &shape, to, &what)?;
            self.reloads.push((key, e));
        }
        Ok(())
    }

    /// `ConvertPath::Reload`: the broadcast of `v` (a `load_tile` through casts and
    /// `expand_dims`) loaded again straight into `shape` in `layout`, then cast as `v` was
    /// and to `elem` (`tk::load_broadcast`: target axis k reads the load's axis `MAP[k]`, or
    /// index 0 where `MAP[k]` is -1). The load is printed as a variable; the casts are the
    /// returned expression, evaluated where it is read (after the block's other loads).
    fn reload(
        &mut self,
        v: ValueId,
        elem: &Elem,
        shape: &Shape,
        layout: Layout,
        what: &str,
    ) -> Result<String, CodegenError> {
        let unsupported = || CodegenError::Unsupported(format!("a reload of %{}", v.0));
        let (load, chain) = self.facts().reload_source(v).ok_or_else(unsupported)?;
        let Some(Op::LoadTile {
            tensor,
            origin,
            shape: lshape,
        }) = self.defs.get(load.index()).copied().flatten()
        else {
            return Err(unsupported());
        };
        let (_, vshape) = self.ty(v)?;
        let lead = shape
            .rank()
            .checked_sub(vshape.rank())
            .ok_or_else(unsupported)?;
        let one = Dim::Const(1);
        let mut map: Vec<i64> = (0..shape.rank())
            .map(|k| match k.checked_sub(lead) {
                Some(j) if !(vshape.0[j] == one && shape.0[k] != one) => j as i64,
                _ => -1,
            })
            .collect();
        for c in chain.iter().rev() {
            if let Some(Op::ExpandDims { axis, .. }) = self.defs.get(c.index()).copied().flatten() {
                let a = i64::from(*axis);
                for m in map.iter_mut() {
                    if *m == a {
                        *m = -1;
                    } else if *m > a {
                        *m -= 1;
                    }
                }
            }
        }
        let (t, _, _) = self.view(*tensor)?;
        let o = self.origin(origin)?;
        let al = self.aligned_flag(*tensor);
        let maps: Vec<String> = map.iter().map(|m| m.to_string()).collect();
        self.tmp += 1;
        let name = format!("t{}", self.tmp);
        let (func, test) = match self.run_test_of(load) {
            Some(test) => ("load_broadcast_in", format!(", {test}")),
            None => ("load_broadcast", String::new()),
        };
        self.w.line(&format!("// {what} (no shared memory)"));
        self.w.line(&format!(
            "const auto {name} = tk::{func}<{al}, {}, {}, {}, {}>({t}, {o}{test});",
            shape_type(shape),
            layout_name(layout),
            shape_type(&Shape::new(lshape.clone())),
            maps.join(", ")
        ));
        let mut expr = name;
        for c in &chain {
            if let Some(Op::Cast { to, .. }) = self.defs.get(c.index()).copied().flatten() {
                expr = format!("tk::cast<{}>({expr})", elem_ctype(to));
            }
        }
        Ok(format!("tk::cast<{}>({expr})", elem_ctype(elem)))
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

    /// The scheduling facts ([`crate::schedule`]) of this kernel.
    pub(super) fn facts(&self) -> Facts<'_, 'k> {
        Facts {
            types: &self.types,
            defs: &self.defs,
            layouts: &self.layouts,
        }
    }

    /// See [`Facts::contiguous_base`].
    pub(super) fn contiguous_base(&self, offsets: ValueId) -> Option<Option<ValueId>> {
        self.facts().contiguous_base(offsets)
    }

    /// See [`Facts::prefix_bound`].
    pub(super) fn prefix_bound(&self, mask: ValueId) -> Option<PrefixBound> {
        self.facts().prefix_bound(mask)
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
