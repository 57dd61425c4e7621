//! Lowering of straight-line ops, one function per op family.

use super::{layout_name, param_name, Emitter, Val};
use crate::error::CodegenError;
use crate::layout::Layout;
use crate::names::{dim_expr, elem_ctype, f64_literal, i64_literal, shape_type};
use crate::smem::Factor;
use tilekit_ir::{
    BinOp, CachePolicy, CmpOp, DType, Elem, Inst, Literal, Op, ParamKind, ReduceOp, Shape, Ty,
    UnaryOp, ValueId,
};

fn unary_op(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Neg => "neg",
        UnaryOp::Not => "lnot",
        UnaryOp::Exp => "exp",
        UnaryOp::Log => "log",
        UnaryOp::Sqrt => "sqrt",
        UnaryOp::Rsqrt => "rsqrt",
        UnaryOp::Tanh => "tanh",
        UnaryOp::Sigmoid => "sigmoid",
        UnaryOp::Abs => "abs",
        UnaryOp::Gelu => "gelu",
        UnaryOp::Erf => "erf",
        UnaryOp::Relu => "relu",
    }
}

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
    }
}

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

fn reduce_op(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Sum => "sum",
        ReduceOp::Max => "max",
        ReduceOp::Min => "min",
    }
}

fn i64e() -> Elem {
    Elem::Concrete(DType::I64)
}

fn boole() -> Elem {
    Elem::Concrete(DType::Bool)
}

impl<'k> Emitter<'k> {
    fn result(inst: &Inst) -> Result<ValueId, CodegenError> {
        inst.results
            .first()
            .copied()
            .ok_or_else(|| CodegenError::Unsupported("an op without a result value".into()))
    }

    /// `const auto <result> = <expr>;` with the inferred type.
    fn assign(&mut self, r: ValueId, expr: &str) -> Result<(), CodegenError> {
        let name = self.define_typed(r)?;
        self.w.line(&format!("const auto {name} = {expr};"));
        Ok(())
    }

    /// The element type both operands of a comparison are converted to.
    fn unified(&self, a: ValueId, b: ValueId) -> Result<Elem, CodegenError> {
        let parts = |v: ValueId| match self.types.of(v) {
            Ty::Tile { elem, weak, .. } => Ok((elem.clone(), *weak)),
            t => Err(CodegenError::Unsupported(format!(
                "comparison operand is {t:?}"
            ))),
        };
        let ((ea, wa), (eb, wb)) = (parts(a)?, parts(b)?);
        Ok(match (wa, wb) {
            (true, true) if ea.is_float() || eb.is_float() => Elem::Concrete(DType::F32),
            (true, true) => ea,
            (true, false) => eb,
            (false, true) => ea,
            (false, false) if ea == eb => ea,
            (false, false) => i64e(),
        })
    }

    pub(super) fn op(&mut self, inst: &'k Inst) -> Result<(), CodegenError> {
        match &inst.op {
            Op::ProgramId { axis } => self.assign(
                Self::result(inst)?,
                &format!(
                    "tk::program_id<{}, {axis}, TK_GROUP>(grid{})",
                    self.kernel.grid.len(),
                    // A persistent (Hopper-engine) program runs the tile it is given.
                    if self.hopper.is_some() {
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
            Op::Arange { n } => {
                let s = Shape::new(vec![n.clone()]);
                let r = Self::result(inst)?;
                let l = layout_name(self.layout(r));
                self.assign(r, &format!("tk::arange<{}, {l}>()", shape_type(&s)))
            }
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
            Op::TensorParam { index } => {
                let r = Self::result(inst)?;
                let p = self
                    .kernel
                    .params
                    .get(*index)
                    .ok_or_else(|| CodegenError::Unsupported(format!("parameter {index}")))?;
                let ParamKind::Tensor { rank, elem, .. } = &p.kind else {
                    return Err(CodegenError::Unsupported(format!(
                        "parameter `{}` is not a tensor",
                        p.name
                    )));
                };
                let name = self.cname(r);
                self.w.line(&format!(
                    "const auto {name} = tk::make_view<{}, {rank}>({});",
                    elem_ctype(elem),
                    param_name(*index, &p.name)
                ));
                self.define(
                    r,
                    Val::View {
                        name,
                        elem: elem.clone(),
                        rank: *rank,
                    },
                );
                Ok(())
            }
            Op::TensorDim { tensor, axis } => {
                let (t, _, _) = self.view(*tensor)?;
                self.assign(Self::result(inst)?, &format!("{t}.shape[{axis}]"))
            }
            Op::Row { tensor, index } => {
                let (t, elem, rank) = self.view(*tensor)?;
                let idx = self.index(*index)?;
                let r = Self::result(inst)?;
                let name = self.cname(r);
                self.w
                    .line(&format!("const auto {name} = tk::row({t}, {idx});"));
                self.define(
                    r,
                    Val::View {
                        name,
                        elem,
                        rank: rank.saturating_sub(1),
                    },
                );
                Ok(())
            }
            Op::Unary { op, x } => {
                let r = Self::result(inst)?;
                let (elem, shape) = self.ty(r)?;
                let xe = self.coerce(*x, &elem, &shape, self.layout(r))?;
                self.assign(r, &format!("tk::unary<tk::op::{}>({xe})", unary_op(*op)))
            }
            Op::Binary { op, a, b } => {
                let r = Self::result(inst)?;
                let (elem, shape) = self.ty(r)?;
                let l = self.layout(r);
                let ae = self.coerce(*a, &elem, &shape, l)?;
                let be = self.coerce(*b, &elem, &shape, l)?;
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
                let u = self.unified(*a, *b)?;
                let l = self.layout(r);
                let ae = self.coerce(*a, &u, &shape, l)?;
                let be = self.coerce(*b, &u, &shape, l)?;
                self.assign(
                    r,
                    &format!("tk::compare<tk::op::{}>({ae}, {be})", cmp_op(*op)),
                )
            }
            Op::Select { cond, a, b } => {
                let r = Self::result(inst)?;
                let (elem, shape) = self.ty(r)?;
                let l = self.layout(r);
                let ce = self.coerce(*cond, &boole(), &shape, l)?;
                let ae = self.coerce(*a, &elem, &shape, l)?;
                let be = self.coerce(*b, &elem, &shape, l)?;
                self.assign(r, &format!("tk::select({ce}, {ae}, {be})"))
            }
            Op::Cast { x, to } => {
                let r = Self::result(inst)?;
                let (name, xe, xshape, _) = self.tile(*x)?;
                let name = if xshape.is_scalar() || self.layout(*x) == self.layout(r) {
                    name
                } else {
                    self.coerce(*x, &xe, &xshape, self.layout(r))?
                };
                self.assign(r, &format!("tk::cast<{}>({name})", elem_ctype(to)))
            }
            Op::Reduce { op, x, axis } => self.reduce(inst, *op, *x, *axis),
            Op::ExpandDims { x, .. } => {
                let r = Self::result(inst)?;
                let (elem, shape) = self.ty(r)?;
                let (_, _, xshape, _) = self.tile(*x)?;
                // A slice stays in its registers ([M] -> [M, 1]: the same flat indices).
                let l = match self.layout(r) {
                    l @ (Layout::Slice { .. } | Layout::Rows(_)) => l,
                    _ => Layout::Blocked,
                };
                let xe = self.coerce(*x, &elem, &xshape, l)?;
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
                    self.define(
                        r,
                        Val::Tile {
                            name,
                            elem,
                            shape,
                            lit: None,
                        },
                    );
                    return Ok(());
                }
                // [block] through a swizzled shared-memory tile of the operand's shape.
                let (elem, shape) = self.ty(r)?;
                let (_, _, xshape, _) = self.tile(*x)?;
                let xe = self.coerce(*x, &elem, &xshape, Layout::Blocked)?;
                let mut f: Vec<Factor> = xshape.0.iter().cloned().map(Factor::Dim).collect();
                f.push(Factor::SizeOf(elem.clone()));
                let u = self.smem.add(format!("trans of {xshape}"), vec![f]);
                let off = self.smem.scratch_offset(u, 0);
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
                let (_, _, xshape, _) = self.tile(x)?;
                let xe = self.coerce(x, &elem, &xshape, Layout::Blocked)?;
                let mut f: Vec<Factor> = xshape.0.iter().cloned().map(Factor::Dim).collect();
                f.push(Factor::SizeOf(elem.clone()));
                let u = self.smem.add(format!("slice of {xshape}"), vec![f]);
                let off = self.smem.scratch_offset(u, 0);
                let at: Vec<String> = offsets.iter().map(dim_expr).collect();
                self.w.line(&format!(
                    "// [block] slice {xshape} at [{}] -> {shape}: through shared memory",
                    at.join(", ")
                ));
                let l = layout_name(self.layout(r));
                self.assign(
                    r,
                    &format!(
                        "tk::slice<{}, {l}>({xe}, tk::corner<{}>{{}}, smem + {off})",
                        shape_type(&shape),
                        at.join(", ")
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
            Op::Load {
                view,
                offsets,
                mask,
                other,
                cache,
            } => self.load(inst, *view, *offsets, (*mask, *other), *cache),
            Op::Store {
                view,
                offsets,
                value,
                mask,
                cache,
            } => self.store(*view, *offsets, *value, *mask, *cache),
            Op::LoadTile {
                tensor,
                origin,
                shape,
            } => {
                let r = Self::result(inst)?;
                if let Layout::Ring(ring) = self.layout(r) {
                    return self.ring_slot(r, ring);
                }
                let (t, _, _) = self.view(*tensor)?;
                let o = self.origin(origin)?;
                let s = Shape::new(shape.clone());
                let al = self.aligned_flag(*tensor);
                if self.layout(r) == Layout::Resident {
                    let (_, elem, _) = self.view(*tensor)?;
                    let off = self.smem.add_persistent(
                        format!(
                            "resident [{}] {elem} (line {})",
                            shape
                                .iter()
                                .map(|d| d.to_string())
                                .collect::<Vec<_>>()
                                .join(", "),
                            inst.loc.line
                        ),
                        vec![vec![Factor::Stile {
                            rows: shape[0].clone(),
                            cols: shape[1].clone(),
                            elem: elem.clone(),
                        }]],
                    );
                    let name = self.define_typed(r)?;
                    let cols = self.cols_flag(*tensor);
                    self.w.line("// [block] resident: copied once into a persistent shared-memory tile its dots read in place");
                    if let Some(c) = &cols {
                        self.w.line(&format!(
                            "// (stored transposed, copied along the tensor's first axis, when {c}: a column-major tensor)"
                        ));
                    }
                    self.w.line(&format!(
                        "const {} {name}{{smem + {off}}};",
                        self.stile_type(cols.as_deref(), &elem, &shape[0], &shape[1])
                    ));
                    self.w.line(&format!(
                        "tk::stage_tile({name}, tk::global_tile<{al}, TK_THREADS, {}{}>({t}, {o}));",
                        shape_type(&s),
                        cols_arg(&cols)
                    ));
                    return Ok(());
                }
                if self.layout(r) == Layout::Direct {
                    let cols = self.cols_flag(*tensor);
                    self.w.line(&format!(
                        "// direct: its dot copies it global -> shared memory (cp.async), never in registers{}",
                        match &cols {
                            Some(c) => format!(" (into a transposed tile when {c}: a column-major tensor)"),
                            None => String::new(),
                        }
                    ));
                    return self.assign(
                        r,
                        &format!(
                            "tk::global_tile<{al}, TK_THREADS, {}{}>({t}, {o})",
                            shape_type(&s),
                            cols_arg(&cols)
                        ),
                    );
                }
                let l = layout_name(self.layout(r));
                self.assign(
                    r,
                    &format!("tk::load_tile<{al}, {}, {l}>({t}, {o})", shape_type(&s)),
                )
            }
            Op::StoreTile {
                tensor,
                origin,
                value,
            } => {
                let (t, elem, _) = self.view(*tensor)?;
                let o = self.origin(origin)?;
                let (_, _, vshape, _) = self.tile(*value)?;
                let v = self.coerce(*value, &elem, &vshape, self.layout(*value))?;
                let al = self.aligned_flag(*tensor);
                self.w
                    .line(&format!("tk::store_tile<{al}>({t}, {o}, {v});"));
                Ok(())
            }
            Op::Dot {
                a,
                b,
                acc,
                precision,
            } => self.dot(inst, *a, *b, *acc, *precision),
            Op::For { .. } | Op::If { .. } | Op::Yield { .. } => self.control(inst),
        }
    }

    pub(super) fn origin(&self, origin: &[ValueId]) -> Result<String, CodegenError> {
        if origin.is_empty() || origin.len() > 3 {
            return Err(CodegenError::Unsupported(format!(
                "a {}-d tile origin",
                origin.len()
            )));
        }
        let mut c = Vec::new();
        for o in origin {
            c.push(self.index(*o)?);
        }
        while c.len() < 3 {
            c.push("0LL".into());
        }
        Ok(format!("tk::coord{{{{{}}}}}", c.join(", ")))
    }

    fn reduce(
        &mut self,
        inst: &'k Inst,
        op: ReduceOp,
        x: ValueId,
        axis: u8,
    ) -> Result<(), CodegenError> {
        let r = Self::result(inst)?;
        let (elem, out_shape) = self.ty(r)?;
        let (_, _, xshape, _) = self.tile(x)?;
        let red = reduce_op(op);
        if let (Layout::Acc(k), l @ Layout::Slice { .. }) = (self.layout(x), self.layout(r)) {
            // An accumulator along either axis, into its slice: registers and shuffles (the
            // region is for the warps' partials where the arrangement splits the axis, and
            // for the blocked fallback).
            let xe = self.cast_to(x, &elem)?;
            let acc = &self.layouts.accs[k];
            let kept = if axis == 1 { &acc.m } else { &acc.n };
            let f = vec![
                Factor::Dim(kept.clone()),
                Factor::ReduceSpan {
                    acc: k,
                    axis,
                    m: acc.m.clone(),
                    n: acc.n.clone(),
                    rows: acc.rows,
                },
                Factor::AccSizeOf(elem.clone()),
            ];
            let u = self.smem.add(
                format!("{red} of accumulator {xshape} over axis {axis} (partials of warps sharing a row or column)"),
                vec![f],
            );
            let off = self.smem.scratch_offset(u, 0);
            self.w.line(&format!(
                "// [warp] {red} over axis {axis} of an accumulator: fragment registers, then shuffles; shared memory only where warps split the axis"
            ));
            return self.assign(
                r,
                &format!(
                    "tk::reduce_acc<tk::red::{red}, {axis}, {}, {}>({xe}, smem + {off})",
                    shape_type(&out_shape),
                    layout_name(l)
                ),
            );
        }
        let xe = self.coerce(x, &elem, &xshape, Layout::Blocked)?;
        if let Layout::Rows(k) = self.layout(r) {
            // Rows of a blocked tile: registers and warp shuffles, one partial per (row,
            // warp) in shared memory, every thread adding up every row's partials; the
            // whole tile only for a variant whose blocked passes straddle rows.
            let mut f: Vec<Factor> = xshape.0.iter().cloned().map(Factor::Dim).collect();
            f.push(Factor::AccSizeOf(elem.clone()));
            let u = self.smem.add(
                format!("{red} of {xshape} over axis 1 (per-row partials of the warps)"),
                vec![f],
            );
            let off = self.smem.scratch_offset(u, 0);
            self.w.line(&format!(
                "// [block] {red} over axis 1 into rows{k}: registers, warp shuffles, one partial per (row, warp) in shared memory; every thread holds every row"
            ));
            return self.assign(
                r,
                &format!(
                    "tk::reduce_rows<tk::red::{red}, {}, TK_ROWS{k}>({xe}, smem + {off})",
                    shape_type(&out_shape)
                ),
            );
        }
        if xshape.rank() == 1 {
            let u = self.smem.add(
                format!("{red} of {xshape} to a scalar"),
                vec![vec![Factor::Warps, Factor::AccSizeOf(elem.clone())]],
            );
            let off = self.smem.scratch_offset(u, 0);
            self.w.line(&format!("// [block] {red} over axis 0: warp shuffles + one partial per warp in shared memory"));
            self.assign(
                r,
                &format!("tk::reduce_all<tk::red::{red}>({xe}, smem + {off})"),
            )
        } else {
            let mut f: Vec<Factor> = xshape.0.iter().cloned().map(Factor::Dim).collect();
            f.push(Factor::AccSizeOf(elem.clone()));
            let u = self
                .smem
                .add(format!("{red} of {xshape} over axis {axis}"), vec![f]);
            let off = self.smem.scratch_offset(u, 0);
            self.w.line(&format!(
                "// [block] {red} over axis {axis}: staged through shared memory"
            ));
            self.assign(
                r,
                &format!(
                    "tk::reduce_axis<tk::red::{red}, {axis}, {}>({xe}, smem + {off})",
                    shape_type(&out_shape)
                ),
            )
        }
    }

    fn load(
        &mut self,
        inst: &'k Inst,
        view: ValueId,
        offsets: ValueId,
        (mask, other): (Option<ValueId>, Option<ValueId>),
        cache: CachePolicy,
    ) -> Result<(), CodegenError> {
        let r = Self::result(inst)?;
        let cp = cache_arg(cache);
        let (v, elem, _) = self.view(view)?;
        let al = self.aligned_flag(view);
        let (_, _, shape, _) = self.tile(offsets)?;
        let m = match mask {
            Some(m) => self.coerce(m, &boole(), &shape, Layout::Blocked)?,
            None => "tk::no_mask{}".to_string(),
        };
        let o = match other {
            Some(o) => self.coerce(o, &elem, &shape, Layout::Blocked)?,
            None => format!("tk::cast<{}>(0)", elem_ctype(&elem)),
        };
        let expr = match (shape.rank(), self.contiguous_base(offsets)) {
            (1, Some(base)) => {
                let b = match base {
                    Some(b) => self.index(b)?,
                    None => "0LL".to_string(),
                };
                match self.same_base_prefix(mask, base)? {
                    // The bounds mask of these very offsets: one whole-tile test.
                    Some(limit) => format!(
                        "tk::load_prefix<{al}, {}, TK_L{cp}>({v}, {b}, {limit}, {o})",
                        shape_type(&shape)
                    ),
                    None => format!(
                        "tk::load_contig<{al}, {}, TK_L{cp}>({v}, {b}, {m}, {o})",
                        shape_type(&shape)
                    ),
                }
            }
            _ => {
                let off = self.offsets_expr(offsets)?;
                format!("tk::load<{al}{cp}>({v}, {off}, {m}, {o})")
            }
        };
        self.assign(r, &expr)
    }

    /// The limit of `mask` when it is the bounds mask `arange + base < limit` of offsets
    /// with this same `base` (then every lane is in bounds iff `limit - base >= size`).
    fn same_base_prefix(
        &self,
        mask: Option<ValueId>,
        base: Option<ValueId>,
    ) -> Result<Option<String>, CodegenError> {
        let Some(m) = mask else { return Ok(None) };
        Ok(match self.prefix_mask(m)? {
            Some((mb, limit)) if mb == base => Some(limit),
            _ => None,
        })
    }

    fn offsets_expr(&self, offsets: ValueId) -> Result<String, CodegenError> {
        let (name, elem, shape, lit) = self.tile(offsets)?;
        if shape.is_scalar() {
            return self.index(offsets);
        }
        if lit.is_some() || !elem.is_int() {
            return self.cast_to(offsets, &i64e());
        }
        Ok(name)
    }

    fn store(
        &mut self,
        view: ValueId,
        offsets: ValueId,
        value: ValueId,
        mask: Option<ValueId>,
        cache: CachePolicy,
    ) -> Result<(), CodegenError> {
        let cp = cache_arg(cache);
        let (v, elem, _) = self.view(view)?;
        let al = self.aligned_flag(view);
        let (_, _, shape, _) = self.tile(offsets)?;
        let val = self.coerce(value, &elem, &shape, Layout::Blocked)?;
        let m = match mask {
            Some(m) => self.coerce(m, &boole(), &shape, Layout::Blocked)?,
            None => "tk::no_mask{}".to_string(),
        };
        match (shape.rank(), self.contiguous_base(offsets)) {
            (1, Some(base)) => {
                let b = match base {
                    Some(b) => self.index(b)?,
                    None => "0LL".to_string(),
                };
                match self.same_base_prefix(mask, base)? {
                    Some(limit) => self.w.line(&format!(
                        "tk::store_prefix<{al}, {}, TK_L{cp}>({v}, {b}, {val}, {limit});",
                        shape_type(&shape)
                    )),
                    None => self.w.line(&format!(
                        "tk::store_contig<{al}, {}, TK_L{cp}>({v}, {b}, {val}, {m});",
                        shape_type(&shape)
                    )),
                }
            }
            _ => {
                let off = self.offsets_expr(offsets)?;
                self.w
                    .line(&format!("tk::store<{al}{cp}>({v}, {off}, {val}, {m});"));
            }
        }
        Ok(())
    }
}

/// The trailing template argument of a hinted `load`/`store` (`, tk::EVICT_FIRST`), else
/// nothing (the prelude's default, `tk::CACHE_NORMAL`).
fn cache_arg(cache: CachePolicy) -> String {
    match cache {
        CachePolicy::Normal => String::new(),
        hint => format!(", {}", cache_policy(hint)),
    }
}

/// The prelude's `cache_policy` value of a hint (`tk::CACHE_NORMAL` for none).
pub(super) fn cache_policy(cache: CachePolicy) -> &'static str {
    match cache {
        CachePolicy::Normal => "tk::CACHE_NORMAL",
        CachePolicy::EvictFirst => "tk::EVICT_FIRST",
        CachePolicy::EvictLast => "tk::EVICT_LAST",
    }
}

/// The trailing `global_tile` template argument of a tensor a variant may read
/// column-major (`, TK_COLS_x`), else nothing.
fn cols_arg(cols: &Option<String>) -> String {
    cols.as_ref().map(|c| format!(", {c}")).unwrap_or_default()
}
