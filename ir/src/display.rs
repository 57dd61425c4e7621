//! A readable text form of the IR (`tilekit show --ir`, snapshot tests).

use crate::kernel::{Kernel, ParamKind};
use crate::op::{Block, CachePolicy, Literal, Op, ValueId};
use std::fmt::{self, Write};

fn v(k: &Kernel, id: ValueId) -> String {
    match k.value_names.get(id.index()).cloned().flatten() {
        Some(n) => format!("%{}_{n}", id.0),
        None => format!("%{}", id.0),
    }
}

fn list(k: &Kernel, ids: &[ValueId]) -> String {
    ids.iter().map(|i| v(k, *i)).collect::<Vec<_>>().join(", ")
}

fn op_text(k: &Kernel, op: &Op) -> String {
    let o = |x: &Option<ValueId>| x.map(|x| v(k, x)).unwrap_or_else(|| "-".into());
    match op {
        Op::ProgramId { axis } => format!("program_id {axis}"),
        Op::NumPrograms { axis } => format!("num_programs {axis}"),
        Op::Arange { n } => format!("arange {n}"),
        Op::Lit(Literal::Float(x)) => format!("lit {x:?}"),
        Op::Lit(Literal::Int(x)) => format!("lit {x}"),
        Op::Lit(Literal::Bool(x)) => format!("lit {x}"),
        Op::TuneValue { name } => format!("tune {name}"),
        Op::ScalarParam { index } => format!("scalar_param {index}"),
        Op::TensorParam { index } => format!("tensor_param {index}"),
        Op::SharedRow { elem, len } => format!("shared_row {elem} {len}"),
        Op::TensorDim { tensor, axis } => format!("dim {} {axis}", v(k, *tensor)),
        Op::Row { tensor, index } => format!("row {} {}", v(k, *tensor), v(k, *index)),
        Op::Narrow { tensor, start, len } => {
            format!("narrow {} {} {}", v(k, *tensor), v(k, *start), v(k, *len))
        }
        Op::Unary { op, x } => format!("{} {}", op.name(), v(k, *x)),
        Op::Binary { op, a, b } => format!("{} {} {}", op.name(), v(k, *a), v(k, *b)),
        Op::Cmp { op, a, b } => format!("cmp {} {} {}", op.symbol(), v(k, *a), v(k, *b)),
        Op::Select { cond, a, b } => format!("select {} {} {}", v(k, *cond), v(k, *a), v(k, *b)),
        Op::Fma { a, b, c } => format!("fma {} {} {}", v(k, *a), v(k, *b), v(k, *c)),
        Op::StochasticRound { x, seed, index } => format!(
            "stochastic_round {} {} {}",
            v(k, *x),
            v(k, *seed),
            v(k, *index)
        ),
        Op::Cast { x, to } => format!("cast {} to {to}", v(k, *x)),
        Op::Reduce { op, x, axis } => format!("reduce_{} {} axis {axis}", op.name(), v(k, *x)),
        Op::ExpandDims { x, axis } => format!("expand_dims {} axis {axis}", v(k, *x)),
        Op::Trans { x } => format!("trans {}", v(k, *x)),
        Op::Cat { a, b, axis } => format!("cat {}, {} axis {axis}", v(k, *a), v(k, *b)),
        Op::AtomicAdd {
            view,
            offset,
            value,
            mask,
        } => format!(
            "atomic_add {}[{}] += {}{}",
            v(k, *view),
            v(k, *offset),
            v(k, *value),
            mask.map(|m| format!(" if {}", v(k, m))).unwrap_or_default()
        ),
        Op::Slice { x, offsets, shape } => {
            let o: Vec<String> = offsets.iter().map(|d| d.to_string()).collect();
            let s: Vec<String> = shape
                .iter()
                .map(|d| d.as_ref().map_or("..".into(), |d| d.to_string()))
                .collect();
            format!(
                "slice {} at [{}] shape [{}]",
                v(k, *x),
                o.join(", "),
                s.join(", ")
            )
        }
        Op::Full { elem, shape, value } => {
            let s: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("full {elem}[{}] {}", s.join(", "), v(k, *value))
        }
        Op::Load {
            view,
            offsets,
            mask,
            other,
            cache,
        } => {
            format!(
                "load {}[{}] mask {} other {}{}",
                v(k, *view),
                v(k, *offsets),
                o(mask),
                o(other),
                cache_suffix(*cache)
            )
        }
        Op::Store {
            view,
            offsets,
            value,
            mask,
            cache,
        } => {
            format!(
                "store {}[{}] = {} mask {}{}",
                v(k, *view),
                v(k, *offsets),
                v(k, *value),
                o(mask),
                cache_suffix(*cache)
            )
        }
        Op::LoadTile {
            tensor,
            origin,
            shape,
        } => {
            let s: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!(
                "load_tile {} at [{}] shape [{}]",
                v(k, *tensor),
                list(k, origin),
                s.join(", ")
            )
        }
        Op::StoreTile {
            tensor,
            origin,
            value,
        } => {
            format!(
                "store_tile {} at [{}] = {}",
                v(k, *tensor),
                list(k, origin),
                v(k, *value)
            )
        }
        Op::Dot {
            a,
            b,
            acc,
            precision,
        } => format!("dot {} {} {} {precision:?}", v(k, *a), v(k, *b), v(k, *acc)),
        Op::For { .. } | Op::If { .. } => String::new(),
        Op::Yield { values } => format!("yield {}", list(k, values)),
    }
}

fn block(k: &Kernel, b: &Block, depth: usize, out: &mut String) -> fmt::Result {
    let pad = "  ".repeat(depth);
    for inst in &b.insts {
        let lhs = if inst.results.is_empty() {
            String::new()
        } else {
            format!("{} = ", list(k, &inst.results))
        };
        match &inst.op {
            Op::For {
                start,
                end,
                step,
                stages,
                inits,
                body,
            } => {
                let iv = body.args.first().map(|a| v(k, *a)).unwrap_or_default();
                let carried = list(k, body.args.get(1..).unwrap_or(&[]));
                let st = stages
                    .as_ref()
                    .map(|s| format!(" stages {s}"))
                    .unwrap_or_default();
                writeln!(
                    out,
                    "{pad}{lhs}for {iv} in {}..{} step {}{st} carry ({carried}) = ({}) {{",
                    v(k, *start),
                    v(k, *end),
                    v(k, *step),
                    list(k, inits)
                )?;
                block(k, body, depth + 1, out)?;
                writeln!(out, "{pad}}}")?;
            }
            Op::If {
                cond,
                then_block,
                else_block,
            } => {
                writeln!(out, "{pad}{lhs}if {} {{", v(k, *cond))?;
                block(k, then_block, depth + 1, out)?;
                writeln!(out, "{pad}}} else {{")?;
                block(k, else_block, depth + 1, out)?;
                writeln!(out, "{pad}}}")?;
            }
            op => writeln!(out, "{pad}{lhs}{}", op_text(k, op))?,
        }
    }
    Ok(())
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        let params: Vec<String> = self
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| match &p.kind {
                ParamKind::Tensor {
                    rank,
                    elem,
                    mutable,
                } => {
                    let (open, close) = if self.is_list(i) {
                        ("[", "]")
                    } else {
                        ("", "")
                    };
                    format!(
                        "{}: &{}{open}Tensor{rank}<{elem}>{close}",
                        p.name,
                        if *mutable { "mut " } else { "" }
                    )
                }
                ParamKind::Scalar { dtype } => format!("{}: {dtype}", p.name),
            })
            .collect();
        let generics = if self.generics.is_empty() {
            String::new()
        } else {
            format!("<{}>", self.generics.join(", "))
        };
        let grid: Vec<String> = self.grid.iter().map(|g| g.to_string()).collect();
        writeln!(
            out,
            "kernel {}{generics}({}) grid [{}]",
            self.name,
            params.join(", "),
            grid.join(", ")
        )?;
        for p in &self.space.params {
            let vals: Vec<String> = p.values.iter().map(|v| v.to_string()).collect();
            writeln!(out, "  tune {} = [{}]", p.name, vals.join(", "))?;
        }
        for c in &self.constraints {
            writeln!(out, "  constraint {} ({:?})", c.expr, c.phase())?;
        }
        for c in &self.checks {
            writeln!(out, "  check {}", c.expr)?;
        }
        let shapes: Vec<String> = self
            .params
            .iter()
            .zip(&self.problem.shapes)
            .filter(|(_, s)| !s.is_empty())
            .map(|(p, s)| format!("{}=[{}]", p.name, s.join(", ")))
            .collect();
        writeln!(
            out,
            "  problem dims [{}] shapes {}",
            self.problem.dims.join(", "),
            shapes.join(" ")
        )?;
        if let Some(fl) = &self.problem.flops {
            writeln!(out, "  flops {fl}")?;
        }
        block(self, &self.body, 1, &mut out)?;
        f.write_str(&out)
    }
}

/// ` evict_first` / ` evict_last` after a hinted `load` or `store`; nothing for the default.
fn cache_suffix(cache: CachePolicy) -> String {
    if cache.is_normal() {
        String::new()
    } else {
        format!(" {}", cache.method())
    }
}
