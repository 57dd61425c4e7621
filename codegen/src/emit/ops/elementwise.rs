//! Elementwise ops in C++: unary math, binary arithmetic and math (`pow`, `atan2`, `powi`),
//! `fma`, comparisons (with the 32-bit bounds-mask fast path), `where_` and casts (mirrors `runtime/src/cpu/interp/elementwise.rs`).

use super::{boole, misrouted};
use crate::emit::{layout_name, Emitter};
use crate::error::CodegenError;
use crate::layout::Layout;
use crate::names::{elem_ctype, shape_type};
use tilekit_ir::{BinOp, CmpOp, DType, Elem, Inst, Op, Ty, UnaryOp};

/// The prelude's functor of a unary op (`tk::op::<name>`): the DSL name
/// ([`UnaryOp::name`]), but for `not`, a C++ alternative token, which is `lnot`.
fn unary_op(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Not => "lnot",
        other => other.name(),
    }
}

/// The prelude's functor of a binary op (the DSL spells these as symbols, see
/// [`BinOp::name`]).
fn binary_op(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        BinOp::Div => "div",
        BinOp::Rem => "rem",
        BinOp::Max => "max",
        BinOp::Min => "min",
        BinOp::And => "land",
        BinOp::Or => "lor",
        BinOp::Pow => "pow",
        BinOp::Atan2 => "atan2",
        // Not a `tk::binary` (its operands have two element types): `tk::powi`.
        BinOp::Powi => "powi",
    }
}

/// The prelude's functor of a comparison (the DSL spells these as symbols, see
/// [`CmpOp::symbol`]).
fn cmp_op(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Lt => "lt",
        CmpOp::Le => "le",
        CmpOp::Gt => "gt",
        CmpOp::Ge => "ge",
        CmpOp::Eq => "eq",
        CmpOp::Ne => "ne",
    }
}

impl<'k> Emitter<'k> {
    /// Unary and binary math, comparisons, `where_` and casts.
    pub(super) fn elementwise(&mut self, inst: &'k Inst) -> Result<(), CodegenError> {
        match &inst.op {
            Op::Unary { op, x } => {
                let r = Self::result(inst)?;
                let (elem, shape) = self.ty(r)?;
                let xe = self.coerce((inst, 0), *x, &elem, &shape, self.layout(r))?;
                self.assign(r, &format!("tk::unary<tk::op::{}>({xe})", unary_op(*op)))
            }
            Op::Binary {
                op: BinOp::Powi,
                a,
                b,
            } => {
                // The base in the result's type, the integer exponent in its own.
                let r = Self::result(inst)?;
                let (elem, shape) = self.ty(r)?;
                let l = self.layout(r);
                let ne = match self.types.of(*b) {
                    Ty::Tile { elem, .. } => elem.clone(),
                    t => {
                        return Err(CodegenError::Unsupported(format!(
                            "the exponent of `powi` is {t:?}"
                        )))
                    }
                };
                let ae = self.coerce((inst, 0), *a, &elem, &shape, l)?;
                let be = self.coerce((inst, 1), *b, &ne, &shape, l)?;
                self.assign(r, &format!("tk::powi({ae}, {be})"))
            }
            Op::Binary { op, a, b } => {
                let r = Self::result(inst)?;
                let (elem, shape) = self.ty(r)?;
                let l = self.layout(r);
                let ae = self.coerce((inst, 0), *a, &elem, &shape, l)?;
                let be = self.coerce((inst, 1), *b, &elem, &shape, l)?;
                self.assign(
                    r,
                    &format!("tk::binary<tk::op::{}>({ae}, {be})", binary_op(*op)),
                )
            }
            Op::Cmp { op, a, b } => {
                let r = Self::result(inst)?;
                let (_, shape) = self.ty(r)?;
                // Bounds masks `arange (+ s) < n` / `<= n`: compare lane indices with
                // `n - s` in 32 bits instead of widening every lane to i64.
                if let Some((base, limit)) = self.prefix_mask(r)? {
                    let base = match base {
                        Some(s) => self.index(s)?,
                        None => "0LL".to_string(),
                    };
                    let l = layout_name(self.layout(r));
                    return self.assign(
                        r,
                        &format!(
                            "tk::arange_lt<{}, {l}>({base}, {limit})",
                            shape_type(&shape)
                        ),
                    );
                }
                let u = crate::analyze::cmp_elem(&self.types, *a, *b)?;
                let l = self.layout(r);
                let ae = self.coerce((inst, 0), *a, &u, &shape, l)?;
                let be = self.coerce((inst, 1), *b, &u, &shape, l)?;
                self.assign(
                    r,
                    &format!("tk::compare<tk::op::{}>({ae}, {be})", cmp_op(*op)),
                )
            }
            Op::Select { cond, a, b } => {
                let r = Self::result(inst)?;
                let (elem, shape) = self.ty(r)?;
                let l = self.layout(r);
                let ce = self.coerce((inst, 0), *cond, &boole(), &shape, l)?;
                let ae = self.coerce((inst, 1), *a, &elem, &shape, l)?;
                let be = self.coerce((inst, 2), *b, &elem, &shape, l)?;
                self.assign(r, &format!("tk::select({ce}, {ae}, {be})"))
            }
            Op::Fma { a, b, c } => {
                let r = Self::result(inst)?;
                let (elem, shape) = self.ty(r)?;
                let l = self.layout(r);
                let ae = self.coerce((inst, 0), *a, &elem, &shape, l)?;
                let be = self.coerce((inst, 1), *b, &elem, &shape, l)?;
                let ce = self.coerce((inst, 2), *c, &elem, &shape, l)?;
                self.assign(r, &format!("tk::fma({ae}, {be}, {ce})"))
            }
            Op::StochasticRound { x, seed, index } => {
                let r = Self::result(inst)?;
                let (_, shape) = self.ty(r)?;
                let l = self.layout(r);
                let xe = self.coerce((inst, 0), *x, &Elem::Concrete(DType::F32), &shape, l)?;
                let (se, _) = self.ty(*seed)?;
                let se = self.coerce((inst, 1), *seed, &se, &shape, l)?;
                let (ie, _) = self.ty(*index)?;
                let ie = self.coerce((inst, 2), *index, &ie, &shape, l)?;
                self.assign(r, &format!("tk::stochastic_round({xe}, {se}, {ie})"))
            }
            Op::Cast { x, to } => {
                let r = Self::result(inst)?;
                if self.layouts.split_cats.contains(&r) {
                    // A cast of a cat stored as its parts: each part is cast as it is stored.
                    return Ok(());
                }
                let (name, xe, xshape, _) = self.tile(*x)?;
                if self.layout(r) == Layout::Window {
                    // The window's slices convert its elements as they read them.
                    self.w.line(&format!(
                        "// [block] {name} read as {to} by its slices (a staged window)"
                    ));
                    let (elem, shape) = self.ty(r)?;
                    self.define_named(r, name, elem, shape);
                    return Ok(());
                }
                let name = if xshape.is_scalar() || self.layout(*x) == self.layout(r) {
                    name
                } else {
                    self.coerce((inst, 0), *x, &xe, &xshape, self.layout(r))?
                };
                self.assign(r, &format!("tk::cast<{}>({name})", elem_ctype(to)))
            }
            _ => Err(misrouted("elementwise")),
        }
    }
}
