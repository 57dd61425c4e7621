//! Stage 4, emission: tile IR + layouts → one readable CUDA C++ template per kernel.
//!
//! [`lower`] runs the stages — [`crate::analyze`] (types, definitions, uses),
//! [`crate::layout`] (a layout per value, rings, conversions), then this printer, which
//! looks up the regions the shared-memory pass ([`crate::smem::pass`], run before it)
//! planned — and returns the template with the plan. Module map: `values` (what each IR value is in C++, conversions and broadcasts),
//! `ops` (the lowering of each op, one module per op family as in the CPU interpreter:
//! values, elementwise, shape, reduce, memory, dot, control), `pipeline` (`pipelined`
//! loops over cp.async or TMA rings), `load_group` (grouped prefix loads), `fuse`,
//! `writer` (indentation).

mod fuse;
mod header;
mod load_group;
mod load_run;
mod ops;
mod pipeline;
mod values;
mod wgmma_waits;
mod writer;

use crate::abi::param_ctype;
use crate::analyze::Analysis;
use crate::engine::HopperPlan;
use crate::error::CodegenError;
use crate::layout::{self, Layout, Layouts};
use crate::names::{dim_expr, elem_ctype, sanitize, shape_type};
use crate::params::{aligned_param, cols_param, declaration, tune_kinds, TuneKind};
use crate::schedule::{Facts, Step};
use crate::smem::pass::{self, Engine as SmemEngine};
use crate::smem::{PartKey, SmemAlloc, SmemKind, SmemPlan};
use crate::threads::ThreadsRule;
use tilekit_ir::{Block, Inst, Kernel, Op, Shape, Types};
pub(crate) use values::Val;

use writer::Writer;

/// The result of lowering a kernel.
pub(crate) struct Lowered {
    /// The template text (what [`generate`] returns).
    pub template: String,
    /// The shared-memory plan the text uses.
    pub smem: SmemPlan,
    /// Threads per block.
    pub threads: ThreadsRule,
    /// Every non-scalar tile shape of the kernel.
    pub tile_shapes: Vec<Shape>,
    /// The shapes of the tiles in the bodies of loops that touch memory or the block,
    /// without a nested loop or `dot` (what [`crate::plan::loop_tile_elems`] bounds).
    pub loop_tiles: Vec<Shape>,
    /// Each streaming loop's tile operations by shape, in source order (what its
    /// `tk::stream_unroll` reads; [`crate::plan::stream_unrolls`]).
    pub stream_loops: Vec<Vec<(Shape, u32)>>,
    /// The shapes of the tiles of the kernel's top-level block (outside loops: straight-line
    /// code, every element's operations emitted once), in a kernel without `dot`; what
    /// [`crate::plan::CodeSize::straight_tile_elems`] bounds.
    pub straight_tiles: Vec<Shape>,
    /// The layouts stage's result.
    pub layouts: Layouts,
}

/// Per-kernel emission state.
pub(crate) struct Emitter<'k> {
    kernel: &'k Kernel,
    types: Types,
    layouts: Layouts,
    vals: Vec<Option<Val>>,
    defs: Vec<Option<&'k Op>>,
    w: Writer,
    /// The shared-memory pass's result: the printer looks regions up, never adds.
    smem: SmemAlloc,
    file: String,
    last_line: u32,
    tmp: usize,
    tile_shapes: Vec<Shape>,
    loop_tiles: Vec<Shape>,
    stream_loops: Vec<Vec<(Shape, u32)>>,
    /// Variables the innermost `yield` assigns: (name, element type, shape, layout).
    yield_targets: Vec<Vec<(String, tilekit_ir::Elem, Shape, Layout)>>,
    /// Ring offsets (C++ expressions), by ring index.
    ring_offsets: Vec<String>,
    /// Inside a ring loop's consumer: the resident tiles defined before the loop (made
    /// visible by the pipeline's barrier, never rewritten during it).
    settled: Option<Vec<tilekit_ir::ValueId>>,
    /// The Hopper lowering of this variant's pipelined loop (`crate::engine`), if chosen.
    hopper: Option<&'k HopperPlan>,
    /// On the Hopper engine, the printer has reached the pipelined loop: the code before it
    /// runs in both warpgroup roles (gathers there are masked off on the producer), the
    /// code after it on the consumers alone.
    hopper_loop_reached: bool,
    /// Inside a chained-form consumer body: the products issued without a wait
    /// (`wgmma_waits`).
    deferred: Option<wgmma_waits::DeferredWaits>,
    /// Inside a GEMM-form consumer body: the product left in flight across iterations and
    /// the loop-carried accumulator it writes (`wgmma_waits::gemm_product_in_flight`).
    gemm_in_flight: Option<(tilekit_ir::ValueId, tilekit_ir::ValueId)>,
    /// Tiles staged for their slices (`PartKey::SliceSource`): the first slice of each
    /// stages it, the others read the copy.
    staged_slices: Vec<tilekit_ir::ValueId>,
    /// Broadcasts loaded again (`ConvertPath::Reload`), printed where their load is
    /// (`Emitter::eager_reloads`): by converted value, element type, shape and layout, the
    /// expression every such operand reads.
    reloads: Vec<(ReloadKey, String)>,
    /// Inside a load run: the run's interior test (a C++ `bool`) and the loads it covers
    /// (`Emitter::run_interior_test`).
    run_test: Option<(String, Vec<tilekit_ir::ValueId>)>,
    /// The block barriers between `shared_row` accesses (`crate::shared_rows`).
    shared_barriers: crate::shared_rows::Barriers,
}

/// What a reload produces: the converted value, the element type, the shape, the layout.
type ReloadKey = (tilekit_ir::ValueId, tilekit_ir::Elem, Shape, Layout);

/// `TK_GROUP` of a Hopper-engine variant whose kernel declares no `GROUP_M`.
const HOPPER_GROUP: u32 = 8;

/// The C++ struct name of a kernel's template.
pub(crate) fn struct_name(kernel: &Kernel) -> String {
    format!("tilekit_{}", sanitize(&kernel.name))
}

/// The C++ name of a layout's type inside the template.
pub(crate) fn layout_name(l: Layout) -> String {
    match l {
        Layout::Acc(k) => format!("TK_ACC{k}"),
        Layout::Ring(r) => format!("TK_RING{r}"),
        Layout::Slice { acc, axis } => format!("TK_SLICE{acc}_{axis}"),
        Layout::Rows(k) => format!("TK_ROWS{k}"),
        Layout::Uniform | Layout::Blocked | Layout::Direct | Layout::Resident | Layout::Window => {
            "TK_L".to_string()
        }
    }
}

/// `TK_SMEM_KIND`: the kernel's `SMEM` value as a prelude layout kind.
fn smem_kind_expr(kernel: &Kernel) -> Result<String, CodegenError> {
    let kinds = tune_kinds(kernel)?;
    let Some((_, kind)) = kinds.iter().find(|(n, _)| n == "SMEM") else {
        return Ok(SmemKind::Auto.cpp().to_string());
    };
    let TuneKind::Enum(names) = kind else {
        return Err(CodegenError::TuneParam {
            name: "SMEM".into(),
            why: format!(
                "it takes shared-memory layout names ({})",
                SmemKind::NAMES.join(", ")
            ),
        });
    };
    let mut expr = SmemKind::Auto.cpp().to_string();
    for (i, n) in names.iter().enumerate().rev() {
        let k = SmemKind::parse(n).ok_or_else(|| CodegenError::TuneParam {
            name: "SMEM".into(),
            why: format!(
                "`{n}` is not a shared-memory layout (one of {})",
                SmemKind::NAMES.join(", ")
            ),
        })?;
        expr = format!("SMEM == {i} ? {} : {expr}", k.cpp());
    }
    Ok(expr)
}

/// What the shared-memory pass needs of the engine plan.
pub(super) fn smem_engine(hopper: Option<&HopperPlan>) -> SmemEngine {
    match hopper {
        None => SmemEngine::MmaSync,
        Some(h) => SmemEngine::Hopper {
            chain_residents: match h.form {
                crate::engine::Form::Chain { residents } => Some(residents),
                _ => None,
            },
            convert: h.fill == crate::engine::RingFill::Convert,
            staged_buffers: h.staged_buffers,
        },
    }
}

/// `TK_GROUP`: the kernel's `GROUP_M` (an integer tuning parameter), else 1.
fn group_expr(kernel: &Kernel) -> Result<String, CodegenError> {
    match tune_kinds(kernel)?.iter().find(|(n, _)| n == "GROUP_M") {
        None => Ok("1".to_string()),
        Some((_, TuneKind::Int)) => Ok("GROUP_M".to_string()),
        Some(_) => Err(CodegenError::TuneParam {
            name: "GROUP_M".into(),
            why: "it takes positive integers (programs per band along axis 0)".into(),
        }),
    }
}

/// Runs the stages and lowers a kernel; with `hopper`, its pipelined loop on the Hopper
/// engine (`crate::engine`: TMA ring, warp-specialized wgmma): the analysis, the layouts,
/// the shared-memory pass, the body (which looks up each block-scope op's scratch), then
/// the template around it (`header.rs`).
pub(crate) fn lower_with<'k>(
    kernel: &'k Kernel,
    hopper: Option<&'k HopperPlan>,
) -> Result<Lowered, CodegenError> {
    let analysis = Analysis::of(kernel)?;
    let mut layouts = crate::convert::layouts(&analysis)?;
    if hopper.is_some() {
        // wgmma's accumulator order is the rows policy's arrangement (one warp per 16
        // rows): every accumulator, its aliases, grids and reduction scratch take it.
        for acc in &mut layouts.accs {
            acc.rows = true;
        }
    }
    // The order of the checks that can fail is the printer's before the split: the
    // template parameters, `SMEM`, `GROUP_M`, the body, then `run`'s parameters.
    let tparams = declaration(kernel, layouts.cols, layouts.general)?;
    let smem_kind = smem_kind_expr(kernel)?;
    let mut group = group_expr(kernel)?;
    if hopper.is_some() && group == "1" {
        // A persistent program's tiles are consecutive linear indices: bands of 8 programs
        // along axis 0 keep the A panels and B panels of the SMs' tiles few (L2 reuse),
        // unless the kernel tunes GROUP_M itself.
        group = HOPPER_GROUP.to_string();
    }
    let defs: Vec<Option<&Op>> = analysis.defs.iter().map(|d| d.map(|i| &i.op)).collect();
    let smem = pass::plan(
        kernel,
        Facts {
            types: &analysis.types,
            defs: &defs,
            layouts: &layouts,
        },
        smem_engine(hopper),
    );
    let file = std::path::Path::new(&kernel.source_file)
        .file_name()
        .and_then(|f| f.to_str())
        .map(str::to_string)
        .unwrap_or_else(|| format!("{}.rs", kernel.name));
    let shared_barriers = crate::shared_rows::barriers(&kernel.body, &defs);
    let mut e = Emitter {
        kernel,
        types: analysis.types,
        vals: vec![None; kernel.num_values()],
        defs,
        w: Writer::at(2),
        smem,
        file,
        last_line: 0,
        tmp: 0,
        tile_shapes: Vec::new(),
        loop_tiles: Vec::new(),
        stream_loops: Vec::new(),
        yield_targets: Vec::new(),
        ring_offsets: Vec::new(),
        settled: None,
        hopper_loop_reached: false,
        deferred: None,
        gemm_in_flight: None,
        staged_slices: Vec::new(),
        reloads: Vec::new(),
        run_test: None,
        shared_barriers,
        hopper,
        layouts,
    };
    if hopper.is_some() {
        e.hopper_pipe_offsets()?;
    } else {
        e.ring_offsets()?;
    }
    e.block(&kernel.body)?;
    let head = header::Header {
        tparams,
        smem_kind,
        group,
        threads: ThreadsRule::of(kernel),
        params: run_params(kernel, hopper)?,
    };
    let body = std::mem::take(&mut e.w).finish();
    let mut text = e.header(&head);
    text.push_str(&body);
    let mut w = Writer::at(2);
    w.close("}");
    w.close("};");
    text.push_str(&w.finish());
    let straight_tiles = if ops::contains_dot(&kernel.body) {
        Vec::new()
    } else {
        e.body_tile_ops(&kernel.body)
            .into_iter()
            .map(|(s, _)| s)
            .collect()
    };
    Ok(Lowered {
        template: text,
        smem: e.smem.plan,
        threads: head.threads,
        tile_shapes: e.tile_shapes,
        loop_tiles: e.loop_tiles,
        stream_loops: e.stream_loops,
        straight_tiles,
        layouts: e.layouts,
    })
}

/// The parameters of the template's `run`: the grid, each kernel parameter, the shared
/// memory, and on the Hopper engine the tensor maps, the pipeline state and the tile (over
/// tensor lists, the member's program).
fn run_params(kernel: &Kernel, hopper: Option<&HopperPlan>) -> Result<Vec<String>, CodegenError> {
    let mut params = vec!["const tk::Grid& grid".to_string()];
    for (i, p) in kernel.params.iter().enumerate() {
        let (ct, _) = param_ctype(p)?;
        let ct = if ct.starts_with("tk::TensorArg") {
            format!("const {ct}&")
        } else {
            format!("const {ct}")
        };
        params.push(format!("{ct} {}", param_name(i, &p.name)));
    }
    params.push("char* smem".to_string());
    if let Some(h) = hopper {
        for m in 0..h.maps().len() {
            params.push(format!("const tk::sm90::tensor_map* tk_map{m}"));
        }
        params.push("tk::sm90::pipe_state& tk_state".to_string());
        params.push("const unsigned tk_block".to_string());
    } else if !kernel.lists.is_empty() {
        // Over tensor lists: the program of its member (`program_id(0)`).
        params.push("const unsigned tk_block".to_string());
    }

    Ok(params)
}

impl Emitter<'_> {
    /// The cp.async rings' offsets (mma.sync engine), from the plan.
    fn ring_offsets(&mut self) -> Result<(), CodegenError> {
        for r in 0..self.layouts.rings.len() {
            let off = self.smem.persistent_offset(&PartKey::Ring(r))?;
            self.ring_offsets.push(off);
        }
        Ok(())
    }
}

/// The tensor parameters of `kernel` that a variant may read column-major (access class
/// `Cols`; bit `i`: parameter `i`): rank-2 tensors read only by `load_tile`s that are dot
/// operands kept out of registers (cp.async rings, direct and resident operands). Each
/// gets a `bool TK_COLS_<name>` template parameter; [`crate::Access`] values may set
/// `Cols` only for these.
pub fn cols_operands(kernel: &Kernel) -> Result<u64, CodegenError> {
    let analysis = Analysis::of(kernel)?;
    Ok(layout::assign(&analysis)?.cols)
}

/// The tensor parameters of `kernel` that a variant may take `General` while its other
/// tensors stay `Rows`/`Cols` (bit `i`: parameter `i`): in a kernel with
/// [`cols_operands`], every other tensor parameter (a matmul's output and bias); none in
/// other kernels. Each gets a `bool TK_ALIGNED_<name>` template parameter, which its
/// loads and stores take in place of `ALIGNED`; [`crate::valid_accesses`] sets them all
/// `General` or none.
pub fn general_operands(kernel: &Kernel) -> Result<u64, CodegenError> {
    let analysis = Analysis::of(kernel)?;
    Ok(layout::assign(&analysis)?.general)
}

/// The C++ name of parameter `i` inside the template.
pub(crate) fn param_name(i: usize, name: &str) -> String {
    format!("arg{i}_{}", sanitize(name))
}

impl<'k> Emitter<'k> {
    /// The alignment flag a load or store through `view` takes: `TK_ALIGNED_<name>` when
    /// the view is (a row of) a tensor parameter of [`Layouts::general`], else `ALIGNED`.
    pub(super) fn aligned_flag(&self, view: tilekit_ir::ValueId) -> String {
        match crate::shared_rows::view_root(&self.defs, view) {
            // A shared row is 16-byte aligned with unit stride in every variant.
            Some(Op::SharedRow { .. }) => "true".to_string(),
            Some(Op::TensorParam { index }) => match self.kernel.params.get(*index) {
                Some(p) if *index < 64 && self.layouts.general >> index & 1 == 1 => {
                    aligned_param(&p.name)
                }
                _ => "ALIGNED".to_string(),
            },
            _ => "ALIGNED".to_string(),
        }
    }

    /// `TK_COLS_<name>` when `tensor` is a parameter a variant may read column-major.
    pub(super) fn cols_flag(&self, tensor: tilekit_ir::ValueId) -> Option<String> {
        let Some(Op::TensorParam { index }) = self.defs.get(tensor.index()).copied().flatten()
        else {
            return None;
        };
        let p = self.kernel.params.get(*index)?;
        (*index < 64 && self.layouts.cols >> index & 1 == 1).then(|| cols_param(&p.name))
    }

    /// The shared-memory tile type of a dot operand: `tk::stile<..>`, or
    /// `tk::stile_as<TK_COLS_x, ..>` (stored transposed in a variant that reads `x`
    /// column-major).
    pub(super) fn stile_type(
        &self,
        cols: Option<&str>,
        elem: &tilekit_ir::Elem,
        rows: &tilekit_ir::Dim,
        cols_dim: &tilekit_ir::Dim,
    ) -> String {
        let (e, r, c) = (elem_ctype(elem), dim_expr(rows), dim_expr(cols_dim));
        match cols {
            Some(f) => format!("tk::stile_as<{f}, {e}, {r}, {c}, TK_SMEM_KIND>"),
            None => format!("tk::stile<{e}, {r}, {c}, TK_SMEM_KIND>"),
        }
    }

    /// A block in the printer's order ([`crate::schedule::Facts::steps`]).
    fn block(&mut self, b: &'k Block) -> Result<(), CodegenError> {
        for step in self.facts().steps(&b.insts) {
            match step {
                Step::Group(window, g) => {
                    self.settle_all("a grouped load");
                    self.grouped_prefix_loads(window, &g)?
                }
                Step::Fused(pair, reduces) => {
                    self.settle_all("fused reductions");
                    self.fused_reductions(pair, reduces)?
                }
                Step::Ordered(run, order) => self.load_run(run, &order)?,
                Step::One(inst) => self.inst(inst)?,
            }
        }
        Ok(())
    }

    /// `// file:line` of `inst`'s source line, unless the last comment named it already.
    fn source_line(&mut self, inst: &Inst) {
        if inst.loc.line != 0 && inst.loc.line != self.last_line {
            self.last_line = inst.loc.line;
            self.w.line(&format!("// {}:{}", self.file, inst.loc.line));
        }
    }

    fn inst(&mut self, inst: &'k Inst) -> Result<(), CodegenError> {
        self.source_line(inst);
        if self.shared_barriers.before(inst) {
            self.w.line(&format!(
                "tk::sync(); // [block] shared_row: {} waits for the other threads' {}",
                match inst.op {
                    Op::Store { .. } => "this store",
                    Op::For { .. } => "the loop",
                    _ => "this load",
                },
                match inst.op {
                    Op::Store { .. } => "loads before it",
                    Op::Load { .. } => "stores before it",
                    _ => "accesses before it",
                }
            ));
        }
        self.settle_reads(inst);
        match &inst.op {
            Op::For { .. } | Op::If { .. } => {
                self.deferred_nesting(true);
                let r = self.control(inst);
                self.deferred_nesting(false);
                r
            }
            Op::Yield { .. } => self.control(inst),
            _ => self.op(inst),
        }
    }
}

/// `TK_STREAM_COST`: the C++ sum over the streaming loops of each tile operation count times
/// its tile's elements per thread (`tk::cdiv(S::size, TK_THREADS)`), shapes merged.
fn stream_cost_expr(loops: &[Vec<(Shape, u32)>]) -> String {
    let mut merged: Vec<(Shape, u32)> = Vec::new();
    for (shape, n) in loops.iter().flatten() {
        match merged.iter_mut().find(|(s, _)| s == shape) {
            Some((_, count)) => *count += n,
            None => merged.push((shape.clone(), *n)),
        }
    }
    let terms: Vec<String> = merged
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{n} * tk::cdiv({}::size, TK_THREADS)", shape_type(s)))
        .collect();
    if terms.is_empty() {
        "0".to_string()
    } else {
        terms.join(" + ")
    }
}
