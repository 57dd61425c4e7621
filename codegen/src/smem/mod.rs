//! Stage 3, the shared-memory plan: every region the generated code uses, with its size
//! as a C++ constant expression and as a number under a configuration.
//!
//! `pass` plans it before printing (walking the kernel and its layouts in print order)
//! and the allocator (`alloc`) places each region by its key and lifetime:
//! - **persistent** (cp.async rings, the Hopper pipeline, resident tiles): live for the
//!   whole kernel, laid out one after another from offset 0, each part 128-byte aligned
//!   (swizzled tiles need whole 128-byte lines);
//! - **scratch** (reductions, broadcasts, layout conversions, staged `dot` operands): each
//!   ends with a barrier, so they never overlap in time and share one region at
//!   `TK_SCRATCH` (the persistent total) of the largest one's size.
//!
//! **Invariant:** this plan is the only source of shared-memory sizes. The emitter looks
//! offsets up in it (never adds), renders the template's `SMEM_BYTES` from it,
//! [`crate::launch_plan`] evaluates the same structure, and every variant
//! `static_assert`s that the two agree.

mod alloc;
pub(crate) mod pass;
#[cfg(test)]
mod tests;

pub(crate) use alloc::{PartKey, SmemAlloc};

use crate::error::CodegenError;
use crate::names::{dim_expr, elem_ctype};
use tilekit_ir::{Bindings, Config, DType, Dim, Elem, Kernel, TuneValue};

/// Shared-memory tile layouts: the values of the reserved tuning parameter `SMEM`
/// (prelude `types/smem.cuh`, `tk::smem_kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SmemKind {
    /// Rows back to back.
    RowMajor,
    /// One 16-byte chunk of padding after each row.
    Padded,
    /// 16-byte chunks XOR-swizzled over 32-byte groups.
    Swizzle32,
    /// ... over 64-byte groups.
    Swizzle64,
    /// ... over 128-byte lines.
    Swizzle128,
    /// `Swizzle128` where the tile allows it (the default without `SMEM`).
    Auto,
}

impl SmemKind {
    /// Every name `SMEM` accepts.
    pub const NAMES: [&'static str; 6] = tilekit_ir::space::SMEM_LAYOUTS;

    /// Parses a `SMEM` value name.
    pub fn parse(name: &str) -> Option<SmemKind> {
        Some(match name {
            "RowMajor" => SmemKind::RowMajor,
            "Padded" => SmemKind::Padded,
            "Swizzle32" => SmemKind::Swizzle32,
            "Swizzle64" => SmemKind::Swizzle64,
            "Swizzle128" => SmemKind::Swizzle128,
            "Auto" => SmemKind::Auto,
            _ => return None,
        })
    }

    /// The prelude constant.
    pub fn cpp(self) -> &'static str {
        match self {
            SmemKind::RowMajor => "tk::smem_kind::row_major",
            SmemKind::Padded => "tk::smem_kind::padded",
            SmemKind::Swizzle32 => "tk::smem_kind::swizzle32",
            SmemKind::Swizzle64 => "tk::smem_kind::swizzle64",
            SmemKind::Swizzle128 => "tk::smem_kind::swizzle128",
            SmemKind::Auto => "tk::smem_kind::automatic",
        }
    }

    /// The kind a `rows` x `rb`-byte tile really uses (mirror of `tk::smem_resolve`).
    pub fn resolve(self, rb: u64, rows: u64) -> SmemKind {
        let chunks = rb.is_multiple_of(16);
        let lines = if rb <= 128 {
            rb > 0 && 128 % rb == 0 && (rows * rb).is_multiple_of(128)
        } else {
            rb.is_multiple_of(128)
        };
        let want = if self == SmemKind::Auto {
            SmemKind::Swizzle128
        } else {
            self
        };
        let swizzled = matches!(
            want,
            SmemKind::Swizzle32 | SmemKind::Swizzle64 | SmemKind::Swizzle128
        );
        match (swizzled, chunks, lines) {
            (true, true, true) => want,
            (true, true, false) => SmemKind::Padded,
            (true, false, _) => SmemKind::RowMajor,
            (false, false, _) if want == SmemKind::Padded => SmemKind::RowMajor,
            _ => want,
        }
    }

    /// Bytes of a `rows` x `cols` tile of `size`-byte elements (mirror of `tk::stile::BYTES`).
    pub fn tile_bytes(self, rows: u64, cols: u64, size: u64) -> Option<u64> {
        let rb = cols.checked_mul(size)?;
        let pitch = if self.resolve(rb, rows) == SmemKind::Padded {
            rb.checked_add(16)?
        } else {
            rb
        };
        rows.checked_mul(pitch)
    }

    /// The kind a kernel's configuration selects: its `SMEM` value, else `Auto`.
    pub fn of(kernel: &Kernel, config: &Config) -> Result<SmemKind, CodegenError> {
        if kernel.space.param("SMEM").is_none() {
            return Ok(SmemKind::Auto);
        }
        match config.get("SMEM") {
            Some(TuneValue::Enum(name)) => SmemKind::parse(name).ok_or_else(|| bad_smem(name)),
            Some(v) => Err(bad_smem(&v.to_string())),
            None => Err(CodegenError::Eval("`SMEM` has no value".into())),
        }
    }
}

fn bad_smem(v: &str) -> CodegenError {
    CodegenError::TuneParam {
        name: "SMEM".into(),
        why: format!(
            "`{v}` is not a shared-memory layout (one of {})",
            SmemKind::NAMES.join(", ")
        ),
    }
}

/// One factor of a shared-memory size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Factor {
    /// A tile extent.
    Dim(Dim),
    /// `sizeof` an element type.
    SizeOf(Elem),
    /// `sizeof(tk::acc_t<E>)`: the reduction accumulator of an element type.
    AccSizeOf(Elem),
    /// Warps per block.
    Warps,
    /// `tk::stile<E, R, C, TK_SMEM_KIND>::BYTES`.
    Stile { rows: Dim, cols: Dim, elem: Elem },
    /// The partials of a reduction of accumulator `acc` along `axis` per kept index: the
    /// warps splitting that axis when a warp arrangement fits (`TK_GRID<acc>::WN` for rows,
    /// `WM` for columns), else the reduced extent (the blocked fallback stages the tile).
    ReduceSpan {
        acc: usize,
        axis: u8,
        m: Dim,
        n: Dim,
        rows: bool,
    },
    /// `tk::window_pitch<E>(cols)`: a staged window's row pitch in elements
    /// (`Layout::Window`: room for `cols` elements at any offset in a 16-byte chunk).
    WindowPitch { cols: Dim, elem: Elem },
    /// `TK_RING<index>::BYTES`: `stages` slots of a tile, each rounded up to 128 bytes.
    Ring {
        index: usize,
        rows: Dim,
        cols: Dim,
        elem: Elem,
        stages: Dim,
    },
}

impl Factor {
    fn align(&self) -> u64 {
        match self {
            Factor::Stile { .. } | Factor::Ring { .. } => 128,
            _ => 16,
        }
    }
}

/// One region: consecutive parts, each aligned (16 bytes, 128 for shared-memory tiles),
/// each the product of its factors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SmemUse {
    /// What uses it (for comments).
    pub what: String,
    /// Parts, in address order.
    pub parts: Vec<Vec<Factor>>,
}

/// All shared-memory regions of a kernel (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SmemPlan {
    /// Regions live across a loop (rings), back to back from offset 0.
    pub persistent: Vec<SmemUse>,
    /// Barrier-delimited scratch regions, all at `TK_SCRATCH`.
    pub uses: Vec<SmemUse>,
}

fn render_factor(f: &Factor) -> String {
    match f {
        Factor::Dim(d) => format!("(long long)({})", dim_expr(d)),
        Factor::SizeOf(e) => format!("(long long)sizeof({})", elem_ctype(e)),
        Factor::AccSizeOf(e) => format!("(long long)sizeof(tk::acc_t<{}>)", elem_ctype(e)),
        Factor::Warps => "(long long)(TK_THREADS / 32)".to_string(),
        Factor::Stile { rows, cols, elem } => format!(
            "tk::stile<{}, {}, {}, TK_SMEM_KIND>::BYTES",
            elem_ctype(elem),
            dim_expr(rows),
            dim_expr(cols)
        ),
        Factor::Ring { index, .. } => format!("TK_RING{index}::BYTES"),
        Factor::WindowPitch { cols, elem } => format!(
            "tk::window_pitch<{}>((long long)({}))",
            elem_ctype(elem),
            dim_expr(cols)
        ),
        Factor::ReduceSpan {
            acc, axis, m, n, ..
        } => {
            let (split, extent) = if *axis == 1 { ("WN", n) } else { ("WM", m) };
            format!(
                "(TK_GRID{acc}::ok ? (long long)TK_GRID{acc}::{split} : (long long)({}))",
                dim_expr(extent)
            )
        }
    }
}

fn part_align(p: &[Factor]) -> u64 {
    p.iter().map(Factor::align).max().unwrap_or(16)
}

fn render_part(p: &[Factor]) -> String {
    let f: Vec<String> = p.iter().map(render_factor).collect();
    let body = if f.is_empty() {
        "1LL".to_string()
    } else {
        f.join(" * ")
    };
    match part_align(p) {
        16 => format!("tk::align16({body})"),
        a => format!("tk::align_to({body}, {a})"),
    }
}

/// Everything a size evaluates against.
pub(crate) struct SizeEnv<'a> {
    pub config: &'a Config,
    pub bindings: &'a Bindings,
    pub threads: u32,
    pub kind: SmemKind,
}

fn elem_size(e: &Elem, b: &Bindings) -> Result<u64, CodegenError> {
    let d = e
        .resolve(b)
        .ok_or_else(|| CodegenError::UnboundGeneric(e.to_string()))?;
    Ok(d.size_bytes() as u64)
}

/// `sizeof` an element type under bindings.
pub(crate) fn size_of(e: &Elem, b: &Bindings) -> Result<u64, CodegenError> {
    elem_size(e, b)
}

fn acc_size(e: &Elem, b: &Bindings) -> Result<u64, CodegenError> {
    let d = e
        .resolve(b)
        .ok_or_else(|| CodegenError::UnboundGeneric(e.to_string()))?;
    Ok(match d {
        DType::F32 | DType::F16 | DType::BF16 | DType::I32 => 4,
        DType::F64 | DType::I64 => 8,
        DType::Bool => 1,
    })
}

/// Evaluates a tile extent under a configuration.
pub(crate) fn eval_dim(d: &Dim, config: &Config) -> Result<u64, CodegenError> {
    match d {
        Dim::Const(c) => Ok(*c),
        Dim::Param(p) => match config.get(p) {
            Some(TuneValue::Int(v)) if *v > 0 => Ok(*v as u64),
            _ => Err(CodegenError::Eval(format!(
                "tile extent `{p}` has no positive integer value"
            ))),
        },
        Dim::Affine(_) => d
            .eval(&|p| config.int(p))
            .filter(|&v| v > 0)
            .ok_or_else(|| {
                CodegenError::Eval(format!("tile extent `{d}` is not a positive integer"))
            }),
    }
}

fn overflow(what: &str) -> CodegenError {
    CodegenError::Eval(format!("shared memory of {what} overflows"))
}

fn eval_factor(f: &Factor, env: &SizeEnv, what: &str) -> Result<u64, CodegenError> {
    let tile = |rows: &Dim, cols: &Dim, elem: &Elem| -> Result<u64, CodegenError> {
        env.kind
            .tile_bytes(
                eval_dim(rows, env.config)?,
                eval_dim(cols, env.config)?,
                elem_size(elem, env.bindings)?,
            )
            .ok_or_else(|| overflow(what))
    };
    match f {
        Factor::Dim(d) => eval_dim(d, env.config),
        Factor::SizeOf(e) => elem_size(e, env.bindings),
        Factor::AccSizeOf(e) => acc_size(e, env.bindings),
        Factor::Warps => Ok(u64::from(env.threads / 32)),
        Factor::Stile { rows, cols, elem } => tile(rows, cols, elem),
        Factor::WindowPitch { cols, elem } => {
            let ch = 16 / elem_size(elem, env.bindings)?.max(1);
            let w = eval_dim(cols, env.config)?;
            w.checked_add(2 * ch - 2)
                .map(|x| x / ch * ch)
                .ok_or_else(|| overflow(what))
        }
        Factor::ReduceSpan {
            axis, m, n, rows, ..
        } => {
            let (bm, bn) = (eval_dim(m, env.config)?, eval_dim(n, env.config)?);
            let acc = crate::layout::AccLayout {
                m: m.clone(),
                n: n.clone(),
                line: 0,
                rows: *rows,
            };
            Ok(match acc.grid(bm, bn, env.threads / 32) {
                Some(g) if *axis == 1 => u64::from(g.wn),
                Some(g) => u64::from(g.wm),
                None if *axis == 1 => bn,
                None => bm,
            })
        }
        Factor::Ring {
            rows,
            cols,
            elem,
            stages,
            ..
        } => {
            let slot = align_to(tile(rows, cols, elem)?, 128).ok_or_else(|| overflow(what))?;
            slot.checked_mul(eval_dim(stages, env.config)?)
                .ok_or_else(|| overflow(what))
        }
    }
}

fn align_to(x: u64, a: u64) -> Option<u64> {
    x.checked_add(a - 1).map(|v| v / a * a)
}

impl SmemUse {
    /// C++ expression of the byte offset of part `i` within the region.
    pub fn offset_expr(&self, i: usize) -> String {
        if i == 0 {
            return "0".to_string();
        }
        let terms: Vec<String> = self.parts[..i].iter().map(|p| render_part(p)).collect();
        terms.join(" + ")
    }

    /// C++ expression of the total size.
    pub fn size_expr(&self) -> String {
        let terms: Vec<String> = self.parts.iter().map(|p| render_part(p)).collect();
        if terms.is_empty() {
            "0LL".to_string()
        } else {
            terms.join(" + ")
        }
    }

    /// Each part's size (rounded up to its alignment) and alignment, under a configuration.
    fn part_sizes(&self, env: &SizeEnv) -> Result<Vec<(u64, u64)>, CodegenError> {
        let mut out = Vec::new();
        for p in &self.parts {
            let mut size = 1u64;
            for f in p {
                size = size
                    .checked_mul(eval_factor(f, env, &self.what)?)
                    .ok_or_else(|| overflow(&self.what))?;
            }
            let align = part_align(p);
            out.push((
                align_to(size, align).ok_or_else(|| overflow(&self.what))?,
                align,
            ));
        }
        Ok(out)
    }

    fn eval(&self, env: &SizeEnv) -> Result<u64, CodegenError> {
        let mut total = 0u64;
        for (size, _) in self.part_sizes(env)? {
            total = total
                .checked_add(size)
                .ok_or_else(|| overflow(&self.what))?;
        }
        Ok(total)
    }
}

impl SmemPlan {
    /// C++ expression of the persistent regions' total (`TK_SCRATCH`).
    pub fn persistent_expr(&self) -> String {
        let terms: Vec<String> = self.persistent.iter().map(SmemUse::size_expr).collect();
        if terms.is_empty() {
            "0LL".to_string()
        } else {
            terms.join(" + ")
        }
    }

    /// The C++ constant expression of the whole plan (`SMEM_BYTES`).
    pub fn total_expr(&self) -> String {
        let mut seen: Vec<String> = Vec::new();
        for u in &self.uses {
            let e = u.size_expr();
            if !seen.contains(&e) {
                seen.push(e);
            }
        }
        let scratch = seen
            .into_iter()
            .fold("0LL".to_string(), |acc, e| format!("tk::cmax({acc}, {e})"));
        if self.persistent.is_empty() {
            scratch
        } else {
            format!("TK_SCRATCH + {scratch}")
        }
    }

    /// The scratch region's size in bytes under a configuration (`SMEM_BYTES -
    /// TK_SCRATCH`: the largest block-scope op's).
    pub fn scratch(&self, env: &SizeEnv) -> Result<u64, CodegenError> {
        let mut m = 0;
        for u in &self.uses {
            m = m.max(u.eval(env)?);
        }
        Ok(m)
    }

    /// The plan's size in bytes under a configuration.
    pub fn total(&self, env: &SizeEnv) -> Result<u64, CodegenError> {
        let mut p = 0u64;
        for u in &self.persistent {
            p = p
                .checked_add(u.eval(env)?)
                .ok_or_else(|| overflow(&u.what))?;
        }
        p.checked_add(self.scratch(env)?)
            .ok_or_else(|| overflow("the kernel"))
    }

    /// A readable listing under a configuration (`tilekit show --stage smem`).
    pub fn describe(&self, env: Option<&SizeEnv>) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let size = |u: &SmemUse| match env {
            Some(env) => u
                .eval(env)
                .map(|b| format!("{b} bytes"))
                .unwrap_or_else(|e| e.to_string()),
            None => u.size_expr(),
        };
        let _ = writeln!(
            s,
            "persistent (live across their loop, back to back from 0):"
        );
        if self.persistent.is_empty() {
            let _ = writeln!(s, "  (none)");
        }
        for u in &self.persistent {
            let _ = writeln!(s, "  {}: {}", u.what, size(u));
        }
        let _ = writeln!(s, "scratch (each ends with a barrier; all at TK_SCRATCH):");
        if self.uses.is_empty() {
            let _ = writeln!(s, "  (none)");
        }
        for u in &self.uses {
            let _ = writeln!(s, "  {}: {}", u.what, size(u));
        }
        if let Some(env) = env {
            let _ = writeln!(
                s,
                "total: {}",
                self.total(env)
                    .map(|b| format!("{b} bytes"))
                    .unwrap_or_else(|e| e.to_string())
            );
        }
        s
    }
}
