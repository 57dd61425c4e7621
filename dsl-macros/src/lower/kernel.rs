//! Assembles the whole `Kernel`: signature, tuning space, grid, problem, constraints, body;
//! then validates it with `tilekit_ir::infer`.

use crate::ctxt::Ctxt;
use crate::lower::body::lower_body;
use crate::lower::host::{self, HostScope};
use crate::parse::attrs::{KernelArgs, KernelAttrs, TuneLit};
use crate::parse::signature::Signature;
use std::collections::HashSet;
use syn::spanned::Spanned;
use tilekit_ir::{
    Constraint, InputGen, Kernel, KernelBuilder, Param, ParamKind, Problem, Space, TuneParam,
    TuneValue,
};

fn space(attrs: &KernelAttrs, cx: &mut Ctxt) -> Space {
    let mut params: Vec<TuneParam> = Vec::new();
    let mut seen = HashSet::new();
    for entry in &attrs.tune {
        let name = entry.name.to_string();
        if !seen.insert(name.clone()) {
            cx.error(
                entry.name.span(),
                format!("tuning parameter `{name}` is declared twice"),
            );
            continue;
        }
        if entry.values.is_empty() {
            cx.error(
                entry.list_span,
                format!("tuning parameter `{name}` needs at least one value"),
            );
            continue;
        }
        let mut values = Vec::new();
        let mut kinds = HashSet::new();
        for (v, span) in &entry.values {
            let tv = match v {
                TuneLit::Int(i) => TuneValue::Int(*i),
                TuneLit::Bool(b) => TuneValue::Bool(*b),
                TuneLit::Enum(e) => TuneValue::Enum(e.clone()),
            };
            kinds.insert(std::mem::discriminant(&tv));
            if values.contains(&tv) {
                cx.error(*span, format!("`{tv}` is listed twice for `{name}`"));
            }
            values.push(tv);
        }
        if kinds.len() > 1 {
            cx.error(
                entry.list_span,
                format!("the values of `{name}` mix integers, booleans and names"),
            );
            continue;
        }
        if name == "WARPS"
            && !values
                .iter()
                .all(|v| matches!(v, TuneValue::Int(w) if (1..=32).contains(w)))
        {
            cx.error(
                entry.list_span,
                "`WARPS` values must be integers from 1 to 32",
            );
        }
        let loc = cx.loc(entry.name.span());
        params.push(TuneParam { name, values, loc });
    }
    Space { params }
}

fn problem(sig: &Signature, attrs: &KernelAttrs, cx: &mut Ctxt) -> Problem {
    let mut dims: Vec<String> = Vec::new();
    let mut shapes: Vec<Vec<String>> = vec![Vec::new(); sig.params.len()];
    let mut declared = vec![false; sig.params.len()];
    for entry in &attrs.shapes {
        let Some(i) = sig.params.iter().position(|p| p.ident == entry.param) else {
            cx.error(
                entry.param.span(),
                format!("`{}` is not a parameter of this kernel", entry.param),
            );
            continue;
        };
        let ParamKind::Tensor { rank, .. } = sig.params[i].kind else {
            cx.error(
                entry.param.span(),
                format!(
                    "`{}` is a scalar; `#[shapes]` names tensor dimensions",
                    entry.param
                ),
            );
            continue;
        };
        if entry.dims.len() != usize::from(rank) {
            cx.error(
                entry.param.span(),
                format!(
                    "rank mismatch: `{}` has rank {rank} but `#[shapes]` names {} dimension(s)",
                    entry.param,
                    entry.dims.len()
                ),
            );
            continue;
        }
        declared[i] = true;
        shapes[i] = entry.dims.iter().map(|d| d.to_string()).collect();
        for d in &entry.dims {
            let d = d.to_string();
            if !dims.contains(&d) {
                dims.push(d);
            }
        }
    }
    // Undeclared tensors get one name per axis.
    for (i, p) in sig.params.iter().enumerate() {
        if let ParamKind::Tensor { rank, .. } = p.kind {
            if !declared[i] {
                shapes[i] = (0..rank).map(|a| format!("{}{a}", p.ident)).collect();
                dims.extend(shapes[i].iter().cloned());
            }
        }
    }
    Problem {
        dims,
        shapes,
        flops: None,
        inputs: vec![InputGen::Random; sig.params.len()],
    }
}

/// Builds and validates the kernel. Returns it even when errors were reported (the caller
/// checks `cx`).
pub fn build(
    f: &syn::ItemFn,
    args: &KernelArgs,
    sig: &Signature,
    attrs: &KernelAttrs,
    cx: &mut Ctxt,
) -> Kernel {
    let mut b = KernelBuilder::new(&sig.name.to_string());
    let source_file = sig.name.span().file();
    {
        let k = b.kernel_mut();
        k.source_file = source_file;
        k.generics = sig.generics.iter().map(|g| g.to_string()).collect();
    }
    let params: Vec<Param> = sig
        .params
        .iter()
        .map(|p| Param {
            name: p.ident.to_string(),
            kind: p.kind.clone(),
            loc: cx.loc(p.span),
        })
        .collect();
    b.kernel_mut().params = params;
    let space = space(attrs, cx);
    b.kernel_mut().space = space;
    let problem = problem(sig, attrs, cx);
    b.kernel_mut().problem = problem;

    // Host expressions see the signature, the space and the dimension names.
    let snapshot = b.kernel_mut().clone();
    let scope = HostScope {
        kernel: &snapshot,
        dims: &snapshot.problem.dims,
    };
    let mut grid = Vec::new();
    for g in &args.grid {
        if let Some(e) = host::lower(g, &scope, cx) {
            grid.push(e);
        }
    }
    if args.parsed && (args.grid.is_empty() || args.grid.len() > 3) {
        cx.error(
            args.grid_span,
            format!("the grid has {} axes; it must have 1 to 3", args.grid.len()),
        );
    }
    let mut constraints = Vec::new();
    for c in &attrs.constraints {
        if let Some(expr) = host::lower(c, &scope, cx) {
            let loc = cx.loc(c.span());
            constraints.push(Constraint {
                expr,
                text: quote::quote!(#c).to_string(),
                loc,
            });
        }
    }
    let mut flops = None;
    for c in &attrs.costs {
        if c.key == "flops" {
            flops = host::lower(&c.expr, &scope, cx);
        } else {
            cx.error(
                c.key.span(),
                format!(
                    "unknown cost `{}`; expected `flops = ..` (bytes are derived from the tensors)",
                    c.key
                ),
            );
        }
    }
    {
        let k = b.kernel_mut();
        k.grid = grid;
        k.constraints = constraints;
        k.problem.flops = flops;
    }

    lower_body(f, &mut b, cx);
    b.finish_body();
    let kernel = b.into_kernel();
    // Inference diagnostics are reported alongside front-end errors (poisoned values are
    // silent by construction); after a front-end error, only those with a span.
    let front_end_failed = cx.has_errors();
    let (_, diags) = tilekit_ir::infer(&kernel);
    cx.diagnostics(
        diags
            .into_iter()
            .filter(|d| !front_end_failed || d.loc.span != 0)
            .collect(),
    );
    kernel
}
