//! What the launch gives a program, in C++: its ids and the grid, literals, tuning values
//! and scalar parameters (mirrors `runtime/src/cpu/interp/values.rs`).

use super::{boole, misrouted};
use crate::emit::{param_name, Emitter, Val};
use crate::error::CodegenError;
use crate::names::{f64_literal, i64_literal};
use tilekit_ir::{DType, Inst, Literal, Op, ParamKind};

impl<'k> Emitter<'k> {
    /// `program_id`, `num_programs`, literals, tuning values and scalar parameters.
    pub(super) fn values(&mut self, inst: &'k Inst) -> Result<(), CodegenError> {
        match &inst.op {
            Op::ProgramId { axis } => self.assign(
                Self::result(inst)?,
                &format!(
                    "tk::program_id<{}, {axis}, TK_GROUP{}>(grid{})",
                    self.kernel.grid.len(),
                    // Clusters of two: the scheduler passes the tile in the padded order.
                    if self.hopper.is_some_and(|h| h.cluster > 1) {
                        ", tk::sm90::CLUSTER"
                    } else {
                        ""
                    },
                    // A persistent (Hopper-engine) program runs the tile it is given; a
                    // program over tensor lists, its program of its member.
                    if self.hopper.is_some() || !self.kernel.lists.is_empty() {
                        ", tk_block"
                    } else {
                        ""
                    }
                ),
            ),
            Op::NumPrograms { axis } => self.assign(
                Self::result(inst)?,
                &format!("tk::num_programs(grid, {axis})"),
            ),
            Op::Lit(l) => {
                let r = Self::result(inst)?;
                let (elem, shape) = self.ty(r)?;
                let name = self.cname(r);
                let (ct, text) = match l {
                    Literal::Float(v) => ("double", f64_literal(*v)),
                    Literal::Int(v) => ("long long", i64_literal(*v)),
                    Literal::Bool(v) => ("bool", v.to_string()),
                };
                self.w.line(&format!("const {ct} {name} = {text};"));
                self.define(
                    r,
                    Val::Tile {
                        name,
                        elem,
                        shape,
                        lit: Some(*l),
                    },
                );
                Ok(())
            }
            Op::TuneValue { name } => {
                if tilekit_ir::space::is_launch_only(name) {
                    return Err(CodegenError::Unsupported(format!(
                        "`{name}` is a launch-time choice of the runtime; kernel code cannot read it"
                    )));
                }
                let r = Self::result(inst)?;
                let (elem, _) = self.ty(r)?;
                let expr = if elem == boole() {
                    name.clone()
                } else {
                    format!("(long long){name}")
                };
                self.assign(r, &expr)
            }
            Op::ScalarParam { index } => {
                let r = Self::result(inst)?;
                let p = self
                    .kernel
                    .params
                    .get(*index)
                    .ok_or_else(|| CodegenError::Unsupported(format!("parameter {index}")))?;
                let arg = param_name(*index, &p.name);
                let expr = match p.kind {
                    ParamKind::Scalar { dtype: DType::Bool } => format!("({arg} != 0)"),
                    _ => arg,
                };
                self.assign(r, &expr)
            }
            _ => Err(misrouted("values")),
        }
    }
}
