//! Assembles the whole `Kernel`: signature, tuning space, grid, problem, constraints, body;
//! then validates it with `tilekit_ir::infer`.

use crate::ctxt::Ctxt;
use crate::lower::body::{is_builtin, lower_body, tuning_name_clash};
use crate::lower::host::{self, HostScope};
use crate::lower::relations;
use crate::parse::attrs::{KernelArgs, KernelAttrs, ShapeValue, TuneLit};
use crate::parse::signature::Signature;
use crate::tile_fn::bundle::Bundle;
use quote::ToTokens;
use std::collections::HashSet;
use syn::spanned::Spanned;
use tilekit_ir::{
    Constraint, DType, InputGen, Kernel, KernelBuilder, Param, ParamKind, Problem, Space,
    TuneParam, TuneValue,
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
            // Declared all the same (without values), so that its uses report nothing more;
            // a list whose values were all refused has been reported value by value.
            if entry.bad.is_empty() {
                cx.error(
                    entry.list_span,
                    format!("tuning parameter `{name}` needs at least one value"),
                );
            }
            let loc = cx.loc(entry.name.span());
            params.push(TuneParam {
                name,
                values: Vec::new(),
                loc,
            });
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
            // Declared without values (see above).
            let loc = cx.loc(entry.name.span());
            params.push(TuneParam {
                name,
                values: Vec::new(),
                loc,
            });
            continue;
        }
        if let Some(r) = tilekit_ir::space::reserved(&name) {
            for (tv, (_, span)) in values.iter().zip(&entry.values) {
                if !r.values.admits(tv) {
                    cx.error_help(
                        *span,
                        format!(
                            "`{tv}` is not a value of `{name}`: `{name}` takes {}",
                            r.values.describe()
                        ),
                        format!(
                            "`{name}` is a reserved tuning name: {}; see \"Names\" in \
                             docs/semantics.md",
                            r.meaning
                        ),
                    );
                }
            }
        }
        let loc = cx.loc(entry.name.span());
        params.push(TuneParam { name, values, loc });
    }
    Space { params }
}

/// A parameter may not take a tuning name (declared or reserved) or a builtin's name.
fn check_param_names(sig: &Signature, space: &Space, cx: &mut Ctxt) {
    for p in &sig.params {
        let name = p.ident.to_string();
        let why = match tuning_name_clash(&name, space) {
            Some(why) => why,
            None if is_builtin(&name) => format!("`{name}` is a builtin of kernel code"),
            None => continue,
        };
        cx.error_help(
            p.ident.span(),
            format!("parameter `{name}` has a name kernel code already uses: {why}"),
            "rename the parameter",
        );
    }
}

/// `x, w, y (tensors); eps (scalar)`: the parameters, for messages.
fn param_list(sig: &Signature) -> String {
    let names = |scalar: bool| {
        sig.params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Scalar { .. }) == scalar)
            .map(|p| format!("`{}`", p.ident))
            .collect::<Vec<_>>()
    };
    let (tensors, scalars) = (names(false), names(true));
    let mut parts = Vec::new();
    if !tensors.is_empty() {
        parts.push(format!("tensors {}", tensors.join(", ")));
    }
    if !scalars.is_empty() {
        parts.push(format!("scalars {}", scalars.join(", ")));
    }
    if parts.is_empty() {
        "this kernel has no parameters".to_string()
    } else {
        format!("the parameters are: {}", parts.join("; "))
    }
}

/// Example dimension names for a tensor of `rank`.
fn example_dims(rank: u8) -> &'static str {
    match rank {
        1 => "[N]",
        2 => "[M, N]",
        _ => "[B, M, N]",
    }
}

/// What a scalar parameter's type allows in `#[shapes]`.
#[derive(Clone, Copy)]
enum ScalarTy {
    Float,
    /// Inclusive bounds (values are stored as `f64`, so at most 2^53 in magnitude).
    Int(i128, i128),
    Bool,
}

/// Integers up to 2^53 in magnitude are exact in the `f64` of an `InputGen`.
const EXACT: i128 = 1 << 53;

fn scalar_ty(dtype: DType, written: &str) -> ScalarTy {
    match dtype {
        DType::Bool => ScalarTy::Bool,
        DType::I32 => ScalarTy::Int(i32::MIN.into(), i32::MAX.into()),
        DType::I64 if written == "usize" => ScalarTy::Int(0, EXACT),
        DType::I64 => ScalarTy::Int(-EXACT, EXACT),
        _ => ScalarTy::Float,
    }
}

/// Example value and range for a scalar of `ty`, for messages.
fn example_value(ty: ScalarTy) -> &'static str {
    match ty {
        ScalarTy::Float => "a value (`1e-5`, `-0.5`) or a range (`1e-6..1e-4`)",
        ScalarTy::Int(..) => "a value (`64`) or a range (`1..128`)",
        ScalarTy::Bool => "`true` or `false`",
    }
}

enum Num {
    Int(i128),
    Float(f64),
}

/// A numeric literal, possibly negated: `64`, `1e-5`, `-2`. `Ok(None)`: not a literal.
fn number(e: &syn::Expr) -> Result<Option<Num>, String> {
    let (lit, negated) = match e {
        syn::Expr::Group(g) => return number(&g.expr),
        syn::Expr::Lit(l) => (&l.lit, false),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => match &**expr {
            syn::Expr::Lit(l) => (&l.lit, true),
            _ => return Ok(None),
        },
        _ => return Ok(None),
    };
    let n = match lit {
        syn::Lit::Int(i) => match i.base10_parse::<i128>() {
            Ok(v) => Num::Int(v),
            Err(_) => return Err(format!("integer literal `{i}` is out of range")),
        },
        syn::Lit::Float(f) => match f.base10_parse::<f64>() {
            Ok(v) if v.is_finite() => Num::Float(v),
            _ => return Err(format!("`{f}` is not a finite number")),
        },
        _ => return Ok(None),
    };
    Ok(Some(match (n, negated) {
        (Num::Int(v), true) => Num::Int(-v),
        (Num::Float(v), true) => Num::Float(-v),
        (n, false) => n,
    }))
}

/// One end of a range, or a value, checked against the scalar's type.
fn scalar_number(
    name: &str,
    written: &str,
    ty: ScalarTy,
    e: &syn::Expr,
    cx: &mut Ctxt,
) -> Option<f64> {
    let text = quote::quote!(#e).to_string().replace("- ", "-");
    let n = match number(e) {
        Ok(Some(n)) => n,
        Ok(None) => {
            let help = format!("`{name}` is `{written}`: give it {}", example_value(ty));
            cx.error_spanned(
                e,
                format!("the value of `{name}` must be a numeric literal, not `{text}`"),
                Some(&help),
            );
            return None;
        }
        Err(msg) => {
            cx.error_spanned(e, msg, None);
            return None;
        }
    };
    match (ty, n) {
        (ScalarTy::Int(lo, hi), Num::Int(v)) => {
            if (lo..=hi).contains(&v) {
                return Some(v as f64);
            }
            // Past 2^53 the limit is the f64 of `InputGen`, not the type: say so.
            let f64_limit = (v > hi && hi == EXACT) || (v < lo && lo == -EXACT);
            let help = "values in `#[shapes]` are stored as f64, so integers are limited to 2^53 in magnitude";
            let bound = |b: i128| match b {
                EXACT => "2^53".to_string(),
                b if b == -EXACT => "-2^53".to_string(),
                b => b.to_string(),
            };
            cx.error_spanned(
                e,
                format!(
                    "`{text}` is out of range for `{name}` (`{written}`): expected {} to {}",
                    bound(lo),
                    bound(hi)
                ),
                f64_limit.then_some(&help as &dyn std::fmt::Display),
            );
            None
        }
        (ScalarTy::Int(..), Num::Float(_)) => {
            let help = format!("give it {}", example_value(ty));
            cx.error_spanned(
                e,
                format!("`{name}` is `{written}`, but `{text}` is not an integer literal"),
                Some(&help),
            );
            None
        }
        (ScalarTy::Float, n) => {
            let v = match n {
                Num::Int(v) => v as f64,
                Num::Float(v) => v,
            };
            if v.abs() > f64::from(f32::MAX) {
                cx.error_spanned(
                    e,
                    format!("`{text}` overflows `{name}` (`{written}`)"),
                    None,
                );
                return None;
            }
            Some(v)
        }
        (ScalarTy::Bool, _) => {
            cx.error_spanned(
                e,
                format!("`{name}` is `bool`; it takes `true` or `false`, not `{text}`"),
                Some(&"`true` stands for 1 and `false` for 0 in the problem description"),
            );
            None
        }
    }
}

/// The input generator `#[shapes(name = e)]` declares for a scalar parameter.
fn scalar_input(
    name: &str,
    written: &str,
    ty: ScalarTy,
    e: &syn::Expr,
    cx: &mut Ctxt,
) -> Option<InputGen> {
    match e {
        syn::Expr::Group(g) => scalar_input(name, written, ty, &g.expr, cx),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Bool(b),
            ..
        }) => match ty {
            ScalarTy::Bool => Some(InputGen::Value(if b.value { 1.0 } else { 0.0 })),
            _ => {
                let help = format!("give it {}", example_value(ty));
                cx.error_spanned(
                    e,
                    format!("`{name}` is `{written}`, not `bool`"),
                    Some(&help),
                );
                None
            }
        },
        syn::Expr::Range(r) => {
            if let ScalarTy::Bool = ty {
                cx.error_spanned(
                    e,
                    format!("`{name}` is `bool`; it takes `true` or `false`, not a range"),
                    None,
                );
                return None;
            }
            if let syn::RangeLimits::Closed(dots) = r.limits {
                cx.error_spanned(
                    &dots,
                    format!(
                        "the range of `{name}` must be half-open, `lo..hi` (values in [lo, hi))"
                    ),
                    None,
                );
                return None;
            }
            let (Some(start), Some(end)) = (&r.start, &r.end) else {
                cx.error_spanned(
                    e,
                    format!("the range of `{name}` needs both ends, `lo..hi`"),
                    None,
                );
                return None;
            };
            let lo = scalar_number(name, written, ty, start, cx);
            let hi = scalar_number(name, written, ty, end, cx);
            let (lo, hi) = (lo?, hi?);
            if lo >= hi {
                cx.error_spanned(
                    e,
                    format!("the range of `{name}` is empty: `lo..hi` needs lo < hi"),
                    None,
                );
                return None;
            }
            Some(InputGen::Uniform(lo, hi))
        }
        _ => scalar_number(name, written, ty, e, cx).map(InputGen::Value),
    }
}

fn problem(sig: &Signature, attrs: &KernelAttrs, cx: &mut Ctxt) -> Problem {
    let mut dims: Vec<String> = Vec::new();
    let mut shapes: Vec<Vec<String>> = vec![Vec::new(); sig.params.len()];
    let mut inputs = vec![InputGen::Random; sig.params.len()];
    let mut given = vec![false; sig.params.len()];
    let mut declared = vec![false; sig.params.len()];
    let mut relations = Vec::new();
    let mut ranges = Vec::new();
    let named_dims: Vec<&syn::Ident> = (attrs.shapes.iter())
        .filter_map(|e| match &e.value {
            ShapeValue::Dims(names, _) => Some(names),
            _ => None,
        })
        .flatten()
        .collect();
    for entry in &attrs.shapes {
        if let ShapeValue::Values(e) = &entry.value {
            ranges.push((&entry.param, &**e));
            continue;
        }
        let Some(i) = sig.params.iter().position(|p| p.ident == entry.param) else {
            if sig.rejected.contains(&entry.param) {
                continue; // its type is already reported
            }
            // `L = M * N`: a dimension some tensor names, defined from others.
            if let ShapeValue::Scalar(e) = &entry.value {
                if named_dims.contains(&&entry.param) {
                    relations.push(relations::Relation {
                        dim: &entry.param,
                        expr: e,
                    });
                    continue;
                }
            }
            cx.error_help(
                entry.param.span(),
                format!("`{}` is not a parameter of this kernel", entry.param),
                param_list(sig),
            );
            continue;
        };
        if std::mem::replace(&mut given[i], true) {
            cx.error(
                entry.param.span(),
                format!("`{}` is given twice in `#[shapes]`", entry.param),
            );
            continue;
        }
        let p = &sig.params[i];
        let written = p.written.to_token_stream().to_string();
        match (&p.kind, &entry.value) {
            (ParamKind::Scalar { dtype }, ShapeValue::Scalar(e)) => {
                let ty = scalar_ty(*dtype, &written);
                if let Some(gen) = scalar_input(&p.ident.to_string(), &written, ty, e, cx) {
                    inputs[i] = gen;
                }
            }
            (ParamKind::Scalar { dtype }, ShapeValue::Dims(_, span)) => {
                let ty = scalar_ty(*dtype, &written);
                cx.error_help(
                    *span,
                    format!(
                        "`{}` is a scalar (`{written}`); `#[shapes]` gives dimension names only to tensors",
                        entry.param
                    ),
                    format!("give `{}` {}", entry.param, example_value(ty)),
                );
            }
            (ParamKind::Tensor { rank, .. }, ShapeValue::Scalar(e)) => {
                let scalars: Vec<String> = sig
                    .params
                    .iter()
                    .filter(|p| matches!(p.kind, ParamKind::Scalar { .. }))
                    .map(|p| format!("`{}`", p.ident))
                    .collect();
                let scalars = if scalars.is_empty() {
                    "this kernel has no scalar parameters".to_string()
                } else {
                    format!("the scalar parameters are {}", scalars.join(", "))
                };
                let help = format!("only scalar parameters take a value; {scalars}");
                cx.error_spanned(
                    e,
                    format!(
                        "`{}` is a tensor; `#[shapes]` gives it dimension names, e.g. `{} = {}`",
                        entry.param,
                        entry.param,
                        example_dims(*rank)
                    ),
                    Some(&help),
                );
            }
            // Value ranges were set aside above.
            (_, ShapeValue::Values(_)) => {}
            (ParamKind::Tensor { rank, .. }, ShapeValue::Dims(names, _)) => {
                if names.len() != usize::from(*rank) {
                    cx.error(
                        entry.param.span(),
                        format!(
                            "rank mismatch: `{}` has rank {rank} but `#[shapes]` names {} dimension(s)",
                            entry.param,
                            names.len()
                        ),
                    );
                    continue;
                }
                declared[i] = true;
                shapes[i] = names.iter().map(|d| d.to_string()).collect();
                for d in names {
                    let d = d.to_string();
                    if !dims.contains(&d) {
                        dims.push(d);
                    }
                }
            }
        }
    }
    let derived = relations::derived(&relations, sig, &mut dims, cx);
    let known: Vec<String> = dims
        .iter()
        .cloned()
        .chain(derived.iter().map(|d| d.name.clone()))
        .collect();
    for (param, e) in ranges {
        if let Some(gen) = relations::value_range(param, e, sig, &known, cx) {
            if let Some(i) = sig.params.iter().position(|p| p.ident == *param) {
                inputs[i] = gen;
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
        inputs,
        derived,
    }
}

/// The span indices of the loops, branches and yields in `b`.
fn control_locs(b: &tilekit_ir::Block) -> HashSet<u32> {
    let mut out = HashSet::new();
    for inst in &b.insts {
        match &inst.op {
            tilekit_ir::Op::For { body, .. } => {
                out.insert(inst.loc.span);
                out.extend(control_locs(body));
            }
            tilekit_ir::Op::If {
                then_block,
                else_block,
                ..
            } => {
                out.insert(inst.loc.span);
                out.extend(control_locs(then_block));
                out.extend(control_locs(else_block));
            }
            tilekit_ir::Op::Yield { .. } => {
                out.insert(inst.loc.span);
            }
            _ => {}
        }
    }
    out
}

/// The `#[check(..)]` conditions as [`Kernel::checks`](tilekit_ir::Kernel::checks). A check
/// reads the arguments alone: one that reads a tuning parameter or a resource (which would
/// make it a `#[constraint]`, and would have to enter the spec hash) or no argument at all
/// (it would refuse every launch or none) is an error at its expression.
fn checks(exprs: &[syn::Expr], scope: &HostScope, cx: &mut Ctxt) -> Vec<Constraint> {
    let mut out = Vec::new();
    for c in exprs {
        let Some(expr) = host::lower(c, scope, cx) else {
            continue;
        };
        if expr.reads_config() {
            let mut tuned = Vec::new();
            expr.tune_params(&mut tuned);
            let what = if tuned.is_empty() {
                "a variant's resource".to_string()
            } else {
                format!("the tuning parameter `{}`", tuned.join("`, `"))
            };
            cx.error_help(
                c.span(),
                format!("a `#[check]` reads the arguments only, and this one reads {what}"),
                "a condition on the configuration is a `#[constraint(..)]`",
            );
            continue;
        }
        if expr.phase() != tilekit_ir::Phase::Launch {
            cx.error_help(
                c.span(),
                "this `#[check]` reads no argument: it would hold for every launch or for none",
                "a check reads a tensor's shape (`x.cols()`), a scalar (`eps`) or a named dimension",
            );
            continue;
        }
        out.push(Constraint {
            expr,
            text: quote::quote!(#c).to_string(),
            loc: cx.loc(c.span()),
        });
    }
    out
}

/// Builds and validates the kernel. Returns it even when errors were reported (the caller
/// checks `cx`).
pub fn build(
    f: &syn::ItemFn,
    args: &KernelArgs,
    sig: &Signature,
    attrs: &KernelAttrs,
    helpers: Option<&[(String, Bundle)]>,
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
    check_param_names(sig, &space, cx);
    b.kernel_mut().space = space;
    let problem = problem(sig, attrs, cx);
    b.kernel_mut().problem = problem;

    // Host expressions see the signature, the space and the dimension names.
    let snapshot = b.kernel_mut().clone();
    let all_dims: Vec<String> = (snapshot.problem.dims.iter())
        .chain(snapshot.problem.derived.iter().map(|d| &d.name))
        .cloned()
        .collect();
    let scope = HostScope {
        kernel: &snapshot,
        dims: &all_dims,
    };
    let mut grid = Vec::new();
    for g in &args.grid {
        // An axis whose expression failed (reported) stays an axis, so that the body's
        // `program_id`s of it are not reported again as out of range.
        grid.push(host::lower(g, &scope, cx).unwrap_or(tilekit_ir::Expr::Int(1)));
    }
    if args.parsed && (args.grid.is_empty() || args.grid.len() > 3) {
        cx.error(
            args.grid_span,
            format!("the grid has {} axes; it must have 1 to 3", args.grid.len()),
        );
    }
    let lists: Vec<usize> = (sig.params.iter().enumerate())
        .filter(|(_, p)| p.list)
        .map(|(i, _)| i)
        .collect();
    if let Some(&first) = lists.first() {
        if args.parsed && args.grid.len() > 1 {
            cx.error_help(
                args.grid_span,
                format!(
                    "a kernel over tensor lists has a 1-axis grid, not {} axes",
                    args.grid.len()
                ),
                format!(
                    "the grid is evaluated for each member of `{}` and the members' programs run one after another along axis 0: write one axis (say `cdiv({}.len(), BLOCK)`)",
                    sig.params[first].ident, sig.params[first].ident
                ),
            );
        }
    }
    b.kernel_mut().lists = lists;
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
    let checks = checks(&attrs.checks, &scope, cx);
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
        k.checks = checks;
        k.problem.flops = flops;
    }

    let mut calls = lower_body(f, &mut b, cx, helpers);
    b.finish_body();
    let mut kernel = b.into_kernel();
    if helpers.is_none() {
        // The helpers are not collected yet (the calls are silent unknowns): report what
        // does not depend on them, leaving out what loops and branches check, whose
        // carried values a missing call may have left out.
        let control = control_locs(&kernel.body);
        let (_, diags) = tilekit_ir::infer_promoting(&mut kernel);
        cx.diagnostics(
            (diags.into_iter())
                .filter(|d| d.loc.span != 0 && !control.contains(&d.loc.span))
                .collect(),
        );
        return kernel;
    }
    // Inference diagnostics are reported alongside front-end errors (poisoned values are
    // silent by construction); after a front-end error, only those with a span.
    let front_end_failed = cx.has_errors();
    let (types, diags) = crate::lower::helpers::settle(&mut kernel, &mut calls);
    // Tile sizes are known once every value is typed.
    let limits = if diags.is_empty() && !front_end_failed {
        tilekit_ir::limits::tile_limit_diagnostics(&kernel, &types)
    } else {
        Vec::new()
    };
    cx.diagnostics(
        diags
            .into_iter()
            .filter(|d| !front_end_failed || d.loc.span != 0)
            .chain(limits)
            .collect(),
    );
    kernel
}
