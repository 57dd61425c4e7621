//! Ops that make or reshape tiles, in C++: `arange`, `expand_dims`, `trans`, `slice` and
//! `cat` (through shared memory unless fused into a dot) and `full` (mirrors
//! `runtime/src/cpu/interp/shape.rs`; reductions are `reduce.rs`).

use super::misrouted;
use crate::emit::{layout_name, Emitter, Val};
use crate::error::CodegenError;
use crate::layout::Layout;
use crate::names::{dim_expr, elem_ctype, shape_type};
use crate::smem::PartKey;
use tilekit_ir::{Inst, Op, Shape};

impl<'k> Emitter<'k> {
    /// `arange`, `expand_dims`, `trans`, `slice`, `cat` and `full`.
    pub(super) fn shape_op(&mut self, inst: &'k Inst) -> Result<(), CodegenError> {
        match &inst.op {
            Op::Arange { n } => {
                let s = Shape::new(vec![n.clone()]);
                let r = Self::result(inst)?;
                let l = layout_name(self.layout(r));
                self.assign(r, &format!("tk::arange<{}, {l}>()", shape_type(&s)))
            }
            Op::ExpandDims { x, .. } => {
                let r = Self::result(inst)?;
                let (elem, shape) = self.ty(r)?;
                let (_, _, xshape, _) = self.tile(*x)?;
                // A slice stays in its registers ([M] -> [M, 1]: the same flat indices).
                let l = match self.layout(r) {
                    l @ (Layout::Slice { .. } | Layout::Rows(_)) => l,
                    _ => Layout::Blocked,
                };
                let xe = self.coerce((inst, 0), *x, &elem, &xshape, l)?;
                let expr = if xshape.is_scalar() {
                    format!(
                        "tk::full<{}, {}, {}>({xe})",
                        elem_ctype(&elem),
                        shape_type(&shape),
                        layout_name(l)
                    )
                } else {
                    format!("tk::reshape<{}>({xe})", shape_type(&shape))
                };
                self.assign(r, &expr)
            }
            Op::Trans { x } => {
                let r = Self::result(inst)?;
                if self.layouts.fused_trans.contains(&r) {
                    // Read by its dot from x's rows: nothing to compute here.
                    if let Val::Smem { name } = self.val(*x)?.clone() {
                        self.w.line(&format!(
                            "// trans {name}: fused into its dot (B read from the ring slot's rows)"
                        ));
                        self.define(r, Val::Smem { name });
                        return Ok(());
                    }
                    let (name, elem, _, _) = self.tile(*x)?;
                    let (_, shape) = self.ty(r)?;
                    self.w.line(&format!(
                        "// trans {name}: fused into its dot (B read from {name}'s rows)"
                    ));
                    self.define_named(r, name, elem, shape);
                    return Ok(());
                }
                // [block] through a swizzled shared-memory tile of the operand's shape.
                let (elem, shape) = self.ty(r)?;
                let (_, _, xshape, _) = self.tile(*x)?;
                let xe = self.coerce((inst, 0), *x, &elem, &xshape, Layout::Blocked)?;
                let off = self.smem.scratch_offset(&PartKey::Op(r), 0)?;
                self.w.line(&format!(
                    "// [block] trans {xshape} -> {shape}: through a swizzled shared-memory tile"
                ));
                let l = layout_name(self.layout(r));
                self.assign(
                    r,
                    &format!(
                        "tk::transpose<{}, {l}>({xe}, smem + {off})",
                        shape_type(&shape)
                    ),
                )
            }
            Op::Slice { offsets, .. } => {
                // [block] through a row-major shared-memory copy of the operand.
                let r = Self::result(inst)?;
                let (elem, shape) = self.ty(r)?;
                let x = inst.op.operands()[0];
                let (xn, _, xshape, _) = self.tile(x)?;
                let at = offsets.iter().map(dim_expr).collect::<Vec<_>>().join(", ");
                let (ds, l) = (shape_type(&shape), layout_name(self.layout(r)));
                let ec = elem_ctype(&elem);
                if self.layout(x) == Layout::Window {
                    // Read in the window's own element type; the conversion is the value's
                    // expression, evaluated where it is used (after the block's other loads:
                    // a conversion here would wait for this read before the next issues).
                    self.w.line(&format!(
                        "// [block] slice {xshape} at [{at}] -> {shape}: from the staged window"
                    ));
                    let raw = self.cname(r);
                    self.w.line(&format!(
                        "const auto {raw} = tk::window_read_raw<{ds}, {l}>({xn}, tk::corner<{at}>{{}});"
                    ));
                    self.define_named(r, format!("tk::cast<{ec}>({raw})"), elem, shape);
                    return Ok(());
                }
                let source = PartKey::SliceSource(x);
                if self.smem.has_persistent(&source) {
                    // Every slice of the operand reads one staged copy: the first stages it.
                    let off = self.smem.persistent_offset(&source)?;
                    if !self.staged_slices.contains(&x) {
                        self.w.line(&format!(
                            "// [block] {xn} {xshape} staged row-major once: every slice of it reads this copy"
                        ));
                        self.w
                            .line(&format!("tk::slice_stage({xn}, smem + {off});"));
                        self.staged_slices.push(x);
                    }
                    self.w.line(&format!(
                        "// [block] slice {xshape} at [{at}] -> {shape}: from the staged copy"
                    ));
                    return self.assign(
                        r,
                        &format!(
                            "tk::slice_read<{ds}, {l}, {}, {ec}>(smem + {off}, tk::corner<{at}>{{}})",
                            shape_type(&xshape)
                        ),
                    );
                }
                let xe = self.coerce((inst, 0), x, &elem, &xshape, Layout::Blocked)?;
                let off = self.smem.scratch_offset(&PartKey::Op(r), 0)?;
                self.w.line(&format!(
                    "// [block] slice {xshape} at [{at}] -> {shape}: through shared memory"
                ));
                self.assign(
                    r,
                    &format!("tk::slice<{ds}, {l}>({xe}, tk::corner<{at}>{{}}, smem + {off})"),
                )
            }
            Op::Cat { a, b, axis } => {
                // [block] through a row-major shared-memory copy of the result.
                let r = Self::result(inst)?;
                if self.layouts.split_cats.contains(&r) {
                    self.w.line(
                        "// cat: stored as its parts (each written at its offset by the store below)",
                    );
                    return Ok(());
                }
                let (elem, shape) = self.ty(r)?;
                let (_, _, ashape, _) = self.tile(*a)?;
                let (_, _, bshape, _) = self.tile(*b)?;
                let ae = self.coerce((inst, 0), *a, &elem, &ashape, Layout::Blocked)?;
                let be = self.coerce((inst, 1), *b, &elem, &bshape, Layout::Blocked)?;
                let off = self.smem.scratch_offset(&PartKey::Op(r), 0)?;
                self.w.line(&format!(
                    "// [block] cat {ashape} and {bshape} along axis {axis} -> {shape}: through shared memory"
                ));
                let l = layout_name(self.layout(r));
                self.assign(
                    r,
                    &format!(
                        "tk::cat<{}, {l}, {axis}>({ae}, {be}, smem + {off})",
                        shape_type(&shape)
                    ),
                )
            }
            Op::Full { elem, shape, value } => {
                let r = Self::result(inst)?;
                let ve = self.cast_to(*value, elem)?;
                let s = Shape::new(shape.clone());
                let l = layout_name(self.layout(r));
                self.assign(
                    r,
                    &format!(
                        "tk::full<{}, {}, {l}>({ve})",
                        elem_ctype(elem),
                        shape_type(&s)
                    ),
                )
            }
            _ => Err(misrouted("shape")),
        }
    }
}
