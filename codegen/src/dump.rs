//! Each stage's result as text: what `tilekit show <kernel> --stage ...` prints, for
//! library kernels and for a user's own (`tilekit_codegen::dump(&kernel, ..)`).

use crate::analyze::Analysis;
use crate::error::CodegenError;
use crate::layout::{self, Layout};
use crate::lowered::lowered as lower;
use crate::params::check_bindings;
use crate::smem::{eval_dim, SizeEnv, SmemKind};
use crate::threads::ThreadsRule;
use crate::variant::{variant_source, variant_vec, Variant};
use std::fmt::Write as _;
use tilekit_ir::{DType, Elem, Kernel, Precision};

/// A stage of the code generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// The tile IR with inferred types.
    Ir,
    /// A layout per value, rings, conversions; with a variant, the warp arrangement and
    /// engine of every `dot`.
    Layouts,
    /// The shared-memory plan (sizes in bytes with a variant).
    Smem,
    /// The CUDA source (of the variant, or the template without one).
    Cuda,
}

impl Stage {
    /// Parses `ir`, `layouts`, `smem`, `cuda`.
    ///
    /// ```
    /// assert_eq!(tilekit_codegen::Stage::parse("smem"), Some(tilekit_codegen::Stage::Smem));
    /// ```
    pub fn parse(s: &str) -> Option<Stage> {
        Some(match s {
            "ir" => Stage::Ir,
            "layouts" => Stage::Layouts,
            "smem" => Stage::Smem,
            "cuda" => Stage::Cuda,
            _ => return None,
        })
    }
}

/// The engine a `dot` runs on for a variant.
fn engine(elem: &Elem, precision: Precision, v: &Variant, mma: bool) -> &'static str {
    let d = elem.resolve(&v.bindings);
    match (mma, d, precision) {
        (false, _, _) => "FMA (no warp arrangement fits this accumulator)",
        (true, Some(DType::BF16 | DType::F16), _) => {
            "mma.sync m16n8k16 (tensor cores, f32 accumulation)"
        }
        (true, Some(DType::F32), Precision::Tf32) => {
            "mma.sync m16n8k8 tf32 (tensor cores, operands rounded nearest-even)"
        }
        _ => "FMA (exact f32)",
    }
}

/// Where a dot's A operand comes from when it is accumulator `ka`'s value (mirror of
/// `tk::detail::a_from_acc`).
fn a_operand(
    grids: &[Option<crate::layout::WarpGrid>],
    ka: usize,
    k: usize,
    elem: &Elem,
    v: &Variant,
    kdim: &tilekit_ir::Dim,
    config: &tilekit_ir::Config,
) -> Result<String, CodegenError> {
    let half = matches!(elem.resolve(&v.bindings), Some(DType::BF16 | DType::F16));
    Ok(match (grids[ka], grids[k]) {
        (Some(ga), Some(g))
            if half && ga.wn == 1 && g.wn == 1 && ga.wm == g.wm && eval_dim(kdim, config)? % 16 == 0 =>
        {
            format!("acc{ka}'s registers (pairs of n8 tiles packed into k16 fragments)")
        }
        _ => format!(
            "staged through shared memory (acc{ka} and acc{k} do not both keep whole rows per warp, or the operands are not bf16/f16)"
        ),
    })
}

/// The text of one stage for `kernel` (and a variant, where the stage depends on it).
///
/// ```
/// use tilekit_ir::*;
/// let mut b = KernelBuilder::new("fill");
/// b.kernel_mut().params = vec![Param { name: "y".into(),
///     kind: ParamKind::Tensor { rank: 1, elem: Elem::of(DType::F32), mutable: true }, loc: Loc::default() }];
/// b.kernel_mut().grid = vec![Expr::Int(1)];
/// let y = b.push(Op::TensorParam { index: 0 }, Loc { span: 0, line: 3 });
/// let i = b.push(Op::Arange { n: Dim::Const(256) }, Loc { span: 0, line: 4 });
/// let one = b.push(Op::Lit(Literal::Float(1.0)), Loc { span: 0, line: 4 });
/// b.push_void(Op::Store { view: y, offsets: i, value: one, mask: None, cache: Default::default() }, Loc { span: 0, line: 5 });
/// let k = b.into_kernel();
/// let text = tilekit_codegen::dump(&k, None, tilekit_codegen::Stage::Layouts).unwrap();
/// assert!(text.contains("blocked"));
/// ```
pub fn dump(
    kernel: &Kernel,
    variant: Option<&Variant>,
    stage: Stage,
) -> Result<String, CodegenError> {
    match stage {
        Stage::Ir => Ok(kernel.to_string()),
        Stage::Layouts => layouts_stage(kernel, variant),
        Stage::Smem => {
            // A Hopper-engine variant has its own plan (the TMA rings and mbarriers).
            let hopper = match variant {
                Some(v) => crate::lowered::hopper_lowering(kernel, v)?.map(|(_, l, _)| l),
                None => None,
            };
            let lowered = match hopper {
                Some(l) => l,
                None => lower(kernel)?,
            };
            match variant {
                Some(v) => {
                    let config = kernel.space.validate(&v.config)?;
                    check_bindings(kernel, &v.bindings)?;
                    let threads = lowered.threads.eval(&config)?;
                    let env = SizeEnv {
                        config: &config,
                        bindings: &v.bindings,
                        threads,
                        kind: SmemKind::of(kernel, &config)?,
                    };
                    Ok(lowered.smem.describe(Some(&env)))
                }
                None => Ok(lowered.smem.describe(None)),
            }
        }
        Stage::Cuda => {
            let template = lower(kernel)?.template.clone();
            match variant {
                Some(v) => variant_source(kernel, &template, v),
                None => Ok(template),
            }
        }
    }
}

/// `--stage layouts`: each value's layout, the rings, the conversions and, for a variant,
/// each dot's warp arrangement, the rows layouts' passes and the engine.
fn layouts_stage(kernel: &Kernel, variant: Option<&Variant>) -> Result<String, CodegenError> {
    let a = Analysis::of(kernel)?;
    let l = crate::convert::layouts(&a)?;
    let mut s = layout::render(&a, &l);
    if let Some(v) = variant {
        let config = kernel.space.validate(&v.config)?;
        check_bindings(kernel, &v.bindings)?;
        let warps = ThreadsRule::of(kernel).eval(&config)? / 32;
        let _ = writeln!(s, "for {config} [{}]:", v.bindings);
        let mut chosen = crate::engine::engine(kernel, v)?;
        // What the variant really runs: the engine also needs its shared memory to
        // fit, and ping-pong its programs' (`hopper_lowering`, as `variant_source` and
        // `variant_plan` decide).
        if matches!(chosen, crate::engine::Engine::Hopper(_)) {
            chosen = match crate::lowered::hopper_lowering(kernel, v)? {
                Some((plan, _, _)) => crate::engine::Engine::Hopper(plan),
                None => crate::engine::Engine::MmaSync(
                    "the Hopper engine's shared memory does not fit the target".into(),
                ),
            };
        }
        let hopper = matches!(chosen, crate::engine::Engine::Hopper(_));
        let mut grids = Vec::new();
        for acc in &l.accs {
            let (m, n) = (eval_dim(&acc.m, &config)?, eval_dim(&acc.n, &config)?);
            // The Hopper engine's accumulators take the rows policy (wgmma's order).
            grids.push(if hopper {
                layout::warp_grid_rows(m, n, warps)
            } else {
                acc.grid(m, n, warps)
            });
        }
        for (k, acc) in l.accs.iter().enumerate() {
            let g = grids[k];
            let _ = match g {
                Some(g) => writeln!(
                    s,
                    "  acc{k}: {} x {} warps, warp tiles {} x {}",
                    g.wm,
                    g.wn,
                    eval_dim(&acc.m, &config)? / u64::from(g.wm),
                    eval_dim(&acc.n, &config)? / u64::from(g.wn)
                ),
                None => writeln!(s, "  acc{k}: blocked (no warp arrangement fits)"),
            };
            for d in l.dots.iter().filter(|d| d.acc == k) {
                let _ = writeln!(
                    s,
                    "  dot at line {}: {}",
                    d.line,
                    if hopper {
                        "wgmma m64nNk16 from the TMA ring (Hopper engine, f32 accumulation)"
                    } else {
                        engine(&d.elem, d.precision, v, g.is_some())
                    }
                );
                if let Some(ka) = d.a_from_acc {
                    let _ = writeln!(
                        s,
                        "    A operand: {}",
                        a_operand(&grids, ka, k, &d.elem, v, &l.accs[ka].n, &config)?
                    );
                }
            }
        }
        let reduced = l.in_registers.iter().filter_map(|u| match (u.from, u.to) {
            (Layout::Acc(_), to @ Layout::Slice { .. }) => Some(to),
            _ => None,
        });
        let mut seen = Vec::new();
        for sl in reduced {
            if seen.contains(&sl) {
                continue;
            }
            seen.push(sl);
            if let Layout::Slice { acc, axis } = sl {
                let split = grids[acc].map(|g| if axis == 1 { g.wn } else { g.wm });
                let _ = writeln!(
                    s,
                    "  {sl}: {}",
                    match split {
                        None => "blocked (its accumulator is)".to_string(),
                        Some(1) => "reduced in registers and warp shuffles only".to_string(),
                        Some(w) => format!(
                            "reduced in registers and shuffles, then {w} warps' partials through shared memory"
                        ),
                    }
                );
            }
        }
        let kind = SmemKind::of(kernel, &config)?;
        if !l.rows.is_empty() {
            let lowered = lower(kernel)?;
            let threads = warps * 32;
            let vec = variant_vec(kernel, &lowered, &config, v, threads)?;
            let chunk = u64::from(vec) * u64::from(threads);
            for (k, p) in l.rows.iter().enumerate() {
                let (r, n) = (eval_dim(&p.r, &config)?, eval_dim(&p.n, &config)?);
                let whole = n % chunk == 0 && (1..=16).contains(&r);
                let _ = writeln!(
                    s,
                    "  rows{k}: {}",
                    if whole {
                        format!("every row's value in every thread ({r} rows; passes of {chunk} elements are whole rows of {n})")
                    } else {
                        format!("blocked, through shared memory ({r} rows; passes of {chunk} elements straddle rows of {n}, or more than 16 rows)")
                    }
                );
            }
        }
        let _ = writeln!(s, "  shared-memory tiles: {kind:?} (resolved per tile)");
        if !l.loops.is_empty() {
            let _ = match chosen {
                crate::engine::Engine::Hopper(p) => writeln!(
                    s,
                    "  engine ({}): Hopper — TMA ring filled by a producer warpgroup, wgmma on {} consumer warpgroup(s), persistent programs{}{}{}",
                    v.target,
                    p.consumers,
                    if p.programs > 1 {
                        ", two per block in ping-pong (one's epilogue under the other's products; SCHEDULE = cooperative keeps one)"
                    } else {
                        ""
                    },
                    match (&p.cluster_refused, p.cluster) {
                        (Some(why), _) => format!("; no clusters: {why}"),
                        (None, 2) => ", in clusters of 2 (vertically adjacent tiles; B's tile loaded once per pair, multicast)".to_string(),
                        _ => String::new(),
                    },
                    match (&p.tail_refused, p.tail_split) {
                        (Some(why), _) => format!("; no split tail: {why}"),
                        (None, n) if n > 1 => format!(", the last partial turn's tiles split along K into up to {n} pieces (added in piece order)"),
                        _ => String::new(),
                    }
                ),
                crate::engine::Engine::MmaSync(why) => writeln!(
                    s,
                    "  engine ({}): cp.async rings and mma.sync (not the Hopper engine: {why})",
                    v.target
                ),
            };
        }
    }
    Ok(s)
}
