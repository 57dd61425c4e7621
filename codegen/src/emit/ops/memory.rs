//! Tensors and memory, in C++: parameter views, extents, row views, `load`/`store` (grouped
//! prefix loads are `emit/load_group.rs`) and `load_tile`/`store_tile` (mirrors
//! `runtime/src/cpu/interp/memory.rs`).

use super::{boole, i64e, misrouted};
use crate::convert::other_operand;
use crate::emit::{layout_name, param_name, Emitter, Val};
use crate::error::CodegenError;
use crate::layout::Layout;
use crate::names::{dim_expr, elem_ctype, shape_type};
use crate::smem::PartKey;
use tilekit_ir::{CachePolicy, Dim, Inst, Op, ParamKind, Shape, Ty, ValueId};

impl<'k> Emitter<'k> {
    /// Tensor views, extents, row views, `load`/`store` and `store_tile` (`load_tile` is [`Self::load_tile`]).
    pub(super) fn memory(&mut self, inst: &'k Inst) -> Result<(), CodegenError> {
        match &inst.op {
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
            Op::Narrow { tensor, start, len } => {
                let (t, elem, rank) = self.view(*tensor)?;
                let (s, n) = (self.index(*start)?, self.index(*len)?);
                let r = Self::result(inst)?;
                let name = self.cname(r);
                self.w
                    .line(&format!("const auto {name} = tk::narrow({t}, {s}, {n});"));
                self.define(r, Val::View { name, elem, rank });
                Ok(())
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
            } => self.store(inst, *view, *offsets, (*value, *mask), *cache),
            Op::StoreTile {
                tensor,
                origin,
                value,
            } if self.layouts.split_cats.contains(value) => {
                self.split_store(*tensor, origin, *value)
            }
            Op::StoreTile {
                tensor,
                origin,
                value,
            } => {
                let (t, elem, _) = self.view(*tensor)?;
                let o = self.origin(origin)?;
                let (_, _, vshape, _) = self.tile(*value)?;
                let v = self.coerce(
                    (inst, 1 + origin.len()),
                    *value,
                    &elem,
                    &vshape,
                    self.layout(*value),
                )?;
                let al = self.aligned_flag(*tensor);
                let staged = PartKey::StagedStore(*value, *tensor);
                if let (true, Some(h)) = (self.smem.has_scratch(&staged), self.hopper) {
                    let off = self.smem.scratch_offset(&staged, 0)?;
                    // The store map is C's: passed where this store writes its tensor.
                    let def = self.defs.get(tensor.index()).copied().flatten();
                    let map = match (h.store_map, def) {
                        (Some(m), Some(Op::TensorParam { index }))
                            if *index == m.param as usize =>
                        {
                            format!("tk_map{}", h.tma.len())
                        }
                        _ => "nullptr".to_string(),
                    };
                    let how = if map == "nullptr" {
                        "along their length (full sectors)"
                    } else {
                        "by TMA where C's width is a 16-byte multiple, else along their length"
                    };
                    self.w.line(&format!(
                        "// [block] staged through shared memory ({} slice(s) per warp): each warp's rows written {how}",
                        h.staged_buffers
                    ));
                    self.w.line(&format!(
                        "tk::store_tile_staged<{al}, TK_THREADS / 32, {}>({t}, {o}, {v}, smem + {off}, {map});",
                        h.staged_buffers
                    ));
                } else {
                    self.w
                        .line(&format!("tk::store_tile<{al}>({t}, {o}, {v});"));
                }
                Ok(())
            }
            Op::LoadTile { .. } => self.load_tile(inst),
            Op::SharedRow { elem, len } => {
                let r = Self::result(inst)?;
                let off = self.smem.persistent_offset(&PartKey::SharedRow(r))?;
                let name = self.cname(r);
                let n = dim_expr(len);
                self.w.line(&format!(
                    "// [block] shared_row: {n} x {elem} of the program's shared memory (16-byte aligned, unit stride), read and written by `load`/`store`"
                ));
                self.w.line(&format!(
                    "const auto {name} = tk::shared_view<{}>(smem + {off}, (long long)({n}));",
                    elem_ctype(elem)
                ));
                self.define(
                    r,
                    Val::View {
                        name,
                        elem: elem.clone(),
                        rank: 1,
                    },
                );
                Ok(())
            }
            Op::AtomicAdd {
                view,
                offset,
                value,
                mask,
            } => {
                let (t, elem, _) = self.view(*view)?;
                let off = self.index(*offset)?;
                let v = self.cast_to(*value, &elem)?;
                let m = match mask {
                    Some(m) => {
                        self.cast_to(*m, &tilekit_ir::Elem::Concrete(tilekit_ir::DType::Bool))?
                    }
                    None => "true".to_string(),
                };
                self.w
                    .line(&format!("tk::atomic_add({t}, {off}, {v}, {m});"));
                Ok(())
            }
            _ => Err(misrouted("memory")),
        }
    }

    /// `store_tile` of a `cat` (through casts; `Layouts::split_cats`): each part stored at
    /// its offset along the cat's axis, in its own layout, cast to the tensor's element type
    /// (a store writes only the in-bounds elements, so the parts write exactly what the
    /// joined tile would).
    fn split_store(
        &mut self,
        tensor: ValueId,
        origin: &[ValueId],
        value: ValueId,
    ) -> Result<(), CodegenError> {
        let (t, elem, _) = self.view(tensor)?;
        let mut parts = Vec::new();
        self.cat_parts(value, vec![String::new(); origin.len()], &mut parts)?;
        let al = self.aligned_flag(tensor);
        for (part, shift) in parts {
            let (name, pe, _, _) = self.tile(part)?;
            let mut c = Vec::new();
            for (o, d) in origin.iter().zip(&shift) {
                c.push(format!("{}{d}", self.index(*o)?));
            }
            while c.len() < 3 {
                c.push("0LL".into());
            }
            let v = if pe == elem {
                name
            } else {
                format!("tk::cast<{}>({name})", elem_ctype(&elem))
            };
            self.w.line(&format!(
                "tk::store_tile<{al}>({t}, tk::coord{{{{{}}}}}, {v});",
                c.join(", ")
            ));
        }
        Ok(())
    }

    /// The leaves of a split `cat` tree under `v` (through casts), each with the C++ terms
    /// added to the origin per axis (`" + (long long)(extent)"`...).
    fn cat_parts(
        &self,
        v: ValueId,
        shift: Vec<String>,
        out: &mut Vec<(ValueId, Vec<String>)>,
    ) -> Result<(), CodegenError> {
        if !self.layouts.split_cats.contains(&v) {
            out.push((v, shift));
            return Ok(());
        }
        match self.defs.get(v.index()).copied().flatten() {
            Some(Op::Cast { x, .. }) => self.cat_parts(*x, shift, out),
            Some(Op::Cat { a, b, axis }) => {
                let (_, ashape) = self.ty(*a)?;
                let ext = ashape
                    .0
                    .get(*axis as usize)
                    .ok_or_else(|| CodegenError::Unsupported(format!("cat along axis {axis}")))?;
                self.cat_parts(*a, shift.clone(), out)?;
                let mut sb = shift;
                if let Some(s) = sb.get_mut(*axis as usize) {
                    s.push_str(&format!(" + (long long)({})", dim_expr(ext)));
                }
                self.cat_parts(*b, sb, out)
            }
            _ => Err(CodegenError::Unsupported(
                "a split cat that is neither a cat nor a cast".into(),
            )),
        }
    }

    /// `load_tile`: a ring slot, a resident shared-memory tile, a direct operand its dot
    /// copies, or registers in the tile's layout.
    fn load_tile(&mut self, inst: &'k Inst) -> Result<(), CodegenError> {
        match &inst.op {
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
                if self.layout(r) == Layout::Resident && self.chain_resident(r) {
                    return self.resident_hopper(inst, r, *tensor, shape, (&t, &o, &al));
                }
                if self.layout(r) == Layout::Resident {
                    let (_, elem, _) = self.view(*tensor)?;
                    let off = self.smem.persistent_offset(&PartKey::Resident(r))?;
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
                if self.layout(r) == Layout::Window {
                    let read_only =
                        matches!(self.types.of(*tensor), Ty::Tensor { mutable: false, .. });
                    return self.window_load(r, &s, (&t, &o, &al), read_only);
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
                let load = match self.run_test_of(r) {
                    Some(test) => format!(
                        "tk::load_tile_in<{al}, {}, {l}>({t}, {o}, {test})",
                        shape_type(&s)
                    ),
                    None => format!("tk::load_tile<{al}, {}, {l}>({t}, {o})", shape_type(&s)),
                };
                self.assign(r, &load)?;
                self.eager_reloads(r)
            }
            _ => Err(misrouted("load_tile")),
        }
    }

    /// A tile loaded only to be sliced (`Layout::Window`): staged from global memory into
    /// the region its slices share (`PartKey::SliceSource` of the sliced value: the load,
    /// or the cast of it the slices read), never in registers.
    fn window_load(
        &mut self,
        r: ValueId,
        s: &Shape,
        (t, o, al): (&str, &str, &str),
        read_only: bool,
    ) -> Result<(), CodegenError> {
        let sliced = self.window_sliced(r);
        let off = self.smem.persistent_offset(&PartKey::SliceSource(sliced))?;
        let direct = self.window_direct(r, al, read_only)?;
        self.w.line(&format!(
            "// [block] window {s}: loaded only to be sliced, never in registers: staged global -> shared memory once (16-byte cp.async chunks at the tensor's alignment), or where every slice starts and ends on whole TK_VEC groups, each slice loaded directly"
        ));
        let stage = match self.run_test_of(r) {
            Some(test) => format!(
                "tk::stage_window_in<{al}, {}, TK_THREADS, {direct}, TK_L>({t}, {o}, smem + {off}, {test})",
                shape_type(s)
            ),
            None => format!(
                "tk::stage_window<{al}, {}, TK_THREADS, {direct}>({t}, {o}, smem + {off})",
                shape_type(s)
            ),
        };
        self.assign(r, &stage)
    }

    /// The value the slices of window `r` read: the load, or the cast of it they slice.
    fn window_sliced(&self, r: ValueId) -> ValueId {
        (0..self.defs.len())
            .map(|i| ValueId(i as u32))
            .find(|&c| {
                self.layout(c) == Layout::Window
                    && matches!(self.defs[c.index()], Some(Op::Cast { x, .. }) if *x == r)
            })
            .unwrap_or(r)
    }

    /// Whether window `r`'s slices load directly (`tk::window_direct`, a constant of the
    /// variant): every slice's last offset and extent on whole TK_VEC groups, and a tensor
    /// the kernel never writes.
    fn window_direct(&self, r: ValueId, al: &str, read_only: bool) -> Result<String, CodegenError> {
        // Direct reads happen at each slice, later than the load and with no barrier: only
        // from a tensor the kernel never writes (the runtime keeps a read-only argument
        // apart from every written one), else a store between could change what they read.
        if !read_only {
            return Ok("false".to_string());
        }
        let sliced = self.window_sliced(r);
        let (_, sshape) = self.ty(sliced)?;
        let mut groups = Vec::new();
        for (offsets, shape) in slices_of(&self.kernel.body, sliced) {
            let last = offsets.len().saturating_sub(1);
            let at = offsets.get(last).map(dim_expr).unwrap_or_default();
            let ext = match shape.get(last).cloned().flatten() {
                Some(d) => dim_expr(&d),
                None => format!(
                    "({} - {at})",
                    sshape.0.get(last).map(dim_expr).unwrap_or_default()
                ),
            };
            groups.push(format!("{{{at}, {ext}}}"));
        }
        Ok(format!(
            "tk::window_direct<{al}, TK_L>({{{}}})",
            groups.join(", ")
        ))
    }

    /// The run's interior test where `load` is one of the loads it covers.
    pub(in crate::emit) fn run_test_of(&self, load: ValueId) -> Option<String> {
        let (test, loads) = self.run_test.as_ref()?;
        loads.contains(&load).then(|| test.clone())
    }

    /// Prints a load run's interior test (`tk::interior_or_free` of each `load_tile` into
    /// registers, and of each directly sliced window, ANDed) when it covers two loads or
    /// more, and returns its name and the loads it covers. Each covered load takes its fast
    /// path on this one test: the compiler can then branch once for the run and join the
    /// slow paths after every fast load is issued (a test per tile joined each tile's paths
    /// before the next tile's loads, and the join's register copies waited for the data).
    pub(in crate::emit) fn run_interior_test(
        &mut self,
        run: &'k [Inst],
    ) -> Result<Option<(String, Vec<ValueId>)>, CodegenError> {
        let mut terms = Vec::new();
        let mut loads = Vec::new();
        for inst in run {
            let Op::LoadTile {
                tensor,
                origin,
                shape,
            } = &inst.op
            else {
                continue;
            };
            let r = Self::result(inst)?;
            let (t, _, _) = self.view(*tensor)?;
            let o = self.origin(origin)?;
            let al = self.aligned_flag(*tensor);
            let s = shape_type(&Shape::new(shape.clone()));
            match self.layout(r) {
                Layout::Blocked => {
                    let l = layout_name(Layout::Blocked);
                    terms.push(format!("tk::interior_or_free<{al}, {s}, {l}>({t}, {o})"));
                }
                Layout::Window => {
                    let read_only =
                        matches!(self.types.of(*tensor), Ty::Tensor { mutable: false, .. });
                    if !read_only {
                        continue;
                    }
                    let direct = self.window_direct(r, &al, read_only)?;
                    terms.push(format!(
                        "(!{direct} || tk::interior_or_free<{al}, {s}, TK_L>({t}, {o}))"
                    ));
                }
                _ => continue,
            }
            loads.push(r);
        }
        if loads.len() < 2 {
            return Ok(None);
        }
        self.tmp += 1;
        let name = format!("tk_in{}", self.tmp);
        self.w.line(
            "// the load run's interior test: every tile below inside its tensor (one branch to the fast loads)",
        );
        self.w
            .line(&format!("const bool {name} = {};", terms.join(" && ")));
        Ok(Some((name, loads)))
    }

    /// Whether `r` is one of the Hopper engine's chained form's resident tiles
    /// (`crate::engine::Form::Chain`).
    fn chain_resident(&self, r: ValueId) -> bool {
        match self.hopper.map(|h| h.form) {
            Some(crate::engine::Form::Chain { residents }) => residents.position(r).is_some(),
            _ => false,
        }
    }

    /// The chained form's resident tile: 128-byte swizzled panels (1024-byte aligned, as
    /// wgmma's descriptors need) that the consumer warpgroups fill once per tile
    /// (`tk::sm90::stage_tile`); the producer warpgroup skips the copy.
    fn resident_hopper(
        &mut self,
        inst: &'k Inst,
        r: ValueId,
        tensor: ValueId,
        shape: &[Dim],
        (t, o, al): (&str, &str, &str),
    ) -> Result<(), CodegenError> {
        let [rows, cols] = shape else {
            return Err(CodegenError::Unsupported(
                "a resident tile that is not rank 2".into(),
            ));
        };
        let (_, elem, _) = self.view(tensor)?;
        // The first bytes of the Hopper pipeline's region (`add_hopper_pipe`), 1024-aligned.
        let off = self
            .ring_offsets
            .first()
            .cloned()
            .unwrap_or_else(|| "0".into());
        // After the resident tiles before it (`chain_residents_bytes`).
        let before = self.chain_residents_bytes(Some(r)).unwrap_or_default();
        let at = if before.is_empty() {
            String::new()
        } else {
            format!(" + {before}")
        };
        let name = self.define_typed(r)?;
        let s = Shape::new(shape.to_vec());
        self.w.line(&format!("// [block] resident (line {}): the consumer warpgroups copy it once per tile into 128-byte swizzled panels at the start of the Hopper pipeline's region, which wgmma reads in place (the producer warpgroup skips it)", inst.loc.line));
        self.w.line(&format!(
            "const tk::sm90::tma_tile<{}, {}, {}> {name}{{tk::sm90::align1024(smem + {off}){at}}};",
            elem_ctype(&elem),
            dim_expr(rows),
            dim_expr(cols)
        ));
        self.w.line(&format!(
            "if constexpr (TK_ROLE == tk::sm90::ROLE_CONSUMER) tk::stage_tile({name}, tk::global_tile<{al}, TK_THREADS, {}>({t}, {o}));",
            shape_type(&s)
        ));
        Ok(())
    }

    pub(in crate::emit) fn origin(&self, origin: &[ValueId]) -> Result<String, CodegenError> {
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

    fn load(
        &mut self,
        inst: &'k Inst,
        view: ValueId,
        offsets: ValueId,
        (mask, other): (Option<ValueId>, Option<ValueId>),
        cache: CachePolicy,
    ) -> Result<(), CodegenError> {
        let r = Self::result(inst)?;
        let cp = self.access_policy(view, cache);
        let (v, elem, _) = self.view(view)?;
        let al = self.aligned_flag(view);
        let (_, oelem, shape, _) = self.tile(offsets)?;
        // The layout the gather creates its result in (`crate::layout`: blocked, or the
        // accumulator slice its uses want); offsets, mask and fill value meet it there.
        let l = match self.layout(r) {
            Layout::Uniform => Layout::Blocked,
            l => l,
        };
        let m = match mask {
            Some(m) => self.coerce((inst, 2), m, &boole(), &shape, l)?,
            None => "tk::no_mask{}".to_string(),
        };
        // Before the Hopper engine's loop both warpgroup roles run this code: the producer's
        // threads (outside the layout's thread range) must not read a tile, so its lanes are
        // masked. A scalar gather reads one address in every thread, and the producer may
        // need its value (a loop bound, a ring origin): it reads it too.
        let role = self.hopper.is_some() && !self.hopper_loop_reached && !shape.is_scalar();
        let m = if role {
            self.w.line("// before the Hopper loop: the producer warpgroup reads nothing (its lanes masked off)");
            format!("tk::role_mask<TK_ROLE == tk::sm90::ROLE_CONSUMER>({m})")
        } else {
            m
        };
        let o = match other {
            Some(o) => self.coerce((inst, other_operand(&inst.op)), o, &elem, &shape, l)?,
            None => format!("tk::cast<{}>(0)", elem_ctype(&elem)),
        };
        if !shape.is_scalar() && self.layout(offsets) != l {
            let off = self.coerce((inst, 1), offsets, &oelem, &shape, l)?;
            return self.assign(r, &format!("tk::load<{al}{cp}>({v}, {off}, {m}, {o})"));
        }
        let blocked = l == Layout::Blocked;
        let expr = match (
            shape.rank(),
            self.contiguous_base(offsets).filter(|_| blocked),
        ) {
            (1, Some(base)) => {
                let b = match base {
                    Some(b) => self.index(b)?,
                    None => "0LL".to_string(),
                };
                match self.same_base_prefix(mask, base)?.filter(|_| !role) {
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
        inst: &'k Inst,
        view: ValueId,
        offsets: ValueId,
        (value, mask): (ValueId, Option<ValueId>),
        cache: CachePolicy,
    ) -> Result<(), CodegenError> {
        let cp = self.access_policy(view, cache);
        let (v, elem, _) = self.view(view)?;
        let al = self.aligned_flag(view);
        let (_, _, shape, _) = self.tile(offsets)?;
        let val = self.coerce((inst, 2), value, &elem, &shape, Layout::Blocked)?;
        let m = match mask {
            Some(m) => self.coerce((inst, 3), m, &boole(), &shape, Layout::Blocked)?,
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

impl Emitter<'_> {
    /// The trailing template argument of a `load`/`store` through `view`: `, tk::SHARED_MEM`
    /// for a `shared_row` (plain shared-memory accesses; a cache hint does not apply),
    /// else the hint's ([`cache_arg`]).
    fn access_policy(&self, view: ValueId, cache: CachePolicy) -> String {
        if crate::shared_rows::shared_root(&self.defs, view).is_some() {
            ", tk::SHARED_MEM".to_string()
        } else {
            cache_arg(cache)
        }
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
pub(in crate::emit) fn cache_policy(cache: CachePolicy) -> &'static str {
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

/// The offsets and shapes of every `slice` of `x` in `b` and the blocks nested in it.
type SliceAt = (Vec<tilekit_ir::Dim>, Vec<Option<tilekit_ir::Dim>>);
fn slices_of(b: &tilekit_ir::Block, x: ValueId) -> Vec<SliceAt> {
    let mut out = Vec::new();
    for i in &b.insts {
        if let Op::Slice {
            x: s,
            offsets,
            shape,
        } = &i.op
        {
            if *s == x {
                out.push((offsets.clone(), shape.clone()));
            }
        }
        for nb in crate::analyze::nested_blocks(&i.op) {
            out.extend(slices_of(nb, x));
        }
    }
    out
}
