//! Typing of the values a kernel starts from: program ids and counts, literals, tuning
//! values and parameters.

use super::{Checker, Ty, SHARED_ROW};
use crate::dtype::{DType, Elem};
use crate::kernel::ParamKind;
use crate::op::{Literal, Loc};
use crate::shape::{Dim, Shape};
use crate::space::TuneValue;

/// A literal: a weakly typed scalar that adopts the other operand's element type.
pub(super) fn literal(l: &Literal) -> Ty {
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

impl Checker<'_> {
    /// `program_id(axis)` and `num_programs(axis)`: an i64 scalar on an axis of the grid.
    pub(super) fn program_axis(&mut self, axis: u8, loc: Loc) -> Option<Ty> {
        let k = self.kernel;
        if usize::from(axis) >= k.grid.len() {
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
        Some(Ty::scalar(DType::I64))
    }

    /// A tuning parameter's value in kernel code: integers and bools only.
    pub(super) fn tune_value(&mut self, name: &str, loc: Loc) -> Ty {
        let k = self.kernel;
        match k.space.param(name) {
            None => {
                self.err(loc, format!("`{name}` is not a declared tuning parameter"));
                Ty::Error
            }
            Some(p) => match p.values.first() {
                Some(TuneValue::Int(_)) => Ty::scalar(DType::I64),
                Some(TuneValue::Bool(_)) => Ty::scalar(DType::Bool),
                // Declared without values: the front end reported why (poisoned, silent).
                None => Ty::Error,
                Some(TuneValue::Enum(_)) => {
                    self.err(loc, format!("enumeration parameter `{name}` has no value in kernel code; it selects a lowering"));
                    Ty::Error
                }
            },
        }
    }

    /// A scalar parameter.
    pub(super) fn scalar_param(&mut self, index: usize, loc: Loc) -> Ty {
        let k = self.kernel;
        match k.params.get(index).map(|p| &p.kind) {
            Some(ParamKind::Scalar { dtype }) => Ty::scalar(*dtype),
            _ => {
                self.err(loc, format!("parameter {index} is not a scalar"));
                Ty::Error
            }
        }
    }

    /// `shared_row::<E, N>()`: a writable rank-1 view of the program's shared memory
    /// (`param` [`SHARED_ROW`]); its extent is checked as a tile extent.
    pub(super) fn shared_row(&mut self, elem: &Elem, len: &Dim, loc: Loc) -> Option<Ty> {
        if !self.dims_ok(std::slice::from_ref(len), loc) {
            return Some(Ty::Error);
        }
        Some(Ty::Tensor {
            param: SHARED_ROW,
            rank: 1,
            elem: elem.clone(),
            mutable: true,
        })
    }

    /// A tensor parameter.
    pub(super) fn tensor_param(&mut self, index: usize, loc: Loc) -> Ty {
        let k = self.kernel;
        match k.params.get(index).map(|p| &p.kind) {
            Some(ParamKind::Tensor {
                rank,
                elem,
                mutable,
            }) => Ty::Tensor {
                param: index,
                rank: *rank,
                elem: elem.clone(),
                mutable: *mutable,
            },
            _ => {
                self.err(loc, format!("parameter {index} is not a tensor"));
                Ty::Error
            }
        }
    }
}
