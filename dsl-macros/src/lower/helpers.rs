//! After lowering, the `#[tile_fn]` calls that were inlined: each helper type parameter
//! is bound to the element type of the argument it was declared for (in program order,
//! re-inferring after each round, so that a call whose arguments come from an earlier
//! call sees that call's types), then every argument and result is checked against the
//! helper's signature, at the argument with a note at the declaration.

use std::collections::HashMap;
use std::ops::Range;
use tilekit_ir::{
    infer_promoting, Block, Diagnostic, Dim, Elem, Kernel, Loc, Op, Ty, Types, ValueId,
};

/// What a declared type asks of a value.
pub enum Expect {
    /// A tile (rank 0: a scalar); `None` where the declaration had an error (reported).
    Tile {
        elem: Option<Elem>,
        dims: Option<Vec<Dim>>,
    },
    /// A tensor or a view of one.
    Tensor {
        rank: u8,
        elem: Option<Elem>,
        mutable: bool,
    },
}

/// Whether a checked value is an argument or a result.
pub enum Role {
    /// The parameter's name.
    Param(String),
    /// The result's index, and whether the helper returns a tuple.
    Result(usize, bool),
}

/// A value and the type its helper's signature declares for it.
pub struct Check {
    pub value: ValueId,
    pub role: Role,
    pub expect: Expect,
    /// The declared type as written.
    pub written: String,
    pub value_loc: Loc,
    pub decl_loc: Loc,
}

/// One inlined call.
pub struct CallRecord {
    /// The helper's name.
    pub helper: String,
    /// Each type parameter's placeholder element type, and its name as written.
    pub generics: Vec<(String, String)>,
    pub checks: Vec<Check>,
    /// The span indices registered while its body was lowered.
    pub spans: Range<u32>,
}

impl Expect {
    fn elem(&self) -> Option<&Elem> {
        match self {
            Expect::Tile { elem, .. } | Expect::Tensor { elem, .. } => elem.as_ref(),
        }
    }
}

fn substitute_block(b: &mut Block, map: &HashMap<String, Elem>) {
    for inst in &mut b.insts {
        match &mut inst.op {
            Op::Cast { to: e, .. } | Op::Full { elem: e, .. } => {
                if let Elem::Generic(g) = e {
                    if let Some(x) = map.get(g) {
                        *e = x.clone();
                    }
                }
            }
            Op::For { body, .. } => substitute_block(body, map),
            Op::If {
                then_block,
                else_block,
                ..
            } => {
                substitute_block(then_block, map);
                substitute_block(else_block, map);
            }
            _ => {}
        }
    }
}

/// Whether `e` is a placeholder of an unbound helper type parameter.
fn is_placeholder(e: &Elem, records: &[CallRecord]) -> bool {
    matches!(e, Elem::Generic(g) if records.iter().any(|r| r.generics.iter().any(|(p, _)| p == g)))
}

/// Binds what this round can: each unbound placeholder whose argument has a type free of
/// placeholders (a strong type first, else a literal's).
fn bind_round(
    types: &Types,
    records: &[CallRecord],
    bound: &HashMap<String, Elem>,
) -> HashMap<String, Elem> {
    let mut out = HashMap::new();
    for r in records {
        for (ph, _) in &r.generics {
            if bound.contains_key(ph) {
                continue;
            }
            let mut weak = None;
            for c in r.checks.iter().filter(|c| matches!(c.role, Role::Param(_))) {
                if !matches!(c.expect.elem(), Some(Elem::Generic(g)) if g == ph) {
                    continue;
                }
                let (elem, is_weak) = match types.of(c.value) {
                    Ty::Tile { elem, weak, .. } => (elem.clone(), *weak),
                    Ty::Tensor { elem, .. } => (elem.clone(), false),
                    Ty::Error => continue,
                };
                if is_placeholder(&elem, records) {
                    continue;
                }
                if !is_weak {
                    out.insert(ph.clone(), elem);
                    weak = None;
                    break;
                }
                weak.get_or_insert(elem);
            }
            if let Some(e) = weak {
                out.entry(ph.clone()).or_insert(e);
            }
        }
    }
    out
}

/// Binds the helpers' type parameters, re-inferring until nothing more binds; returns the
/// final types and diagnostics (those inside a call whose parameters stayed unbound,
/// because an argument had an error, are dropped), plus the signature checks.
pub fn settle(kernel: &mut Kernel, records: &mut [CallRecord]) -> (Types, Vec<Diagnostic>) {
    let mut bound: HashMap<String, Elem> = HashMap::new();
    loop {
        let (types, diags) = infer_promoting(kernel);
        let new = if records.is_empty() {
            HashMap::new()
        } else {
            bind_round(&types, records, &bound)
        };
        if new.is_empty() {
            let unbound: Vec<&Range<u32>> = (records.iter())
                .filter(|r| r.generics.iter().any(|(p, _)| !bound.contains_key(p)))
                .map(|r| &r.spans)
                .collect();
            // A call with a wrong argument: that is the error, and what follows from it
            // (inside the helper and after the call) is left out.
            let mut arg_errors: Vec<(u32, Vec<Diagnostic>)> = Vec::new();
            for r in records.iter() {
                let mut errs = Vec::new();
                check_call(r, &types, true, &mut errs);
                if !errs.is_empty() {
                    arg_errors.push((r.spans.start, errs));
                }
            }
            let cutoff = arg_errors.iter().map(|(s, _)| *s).min().unwrap_or(u32::MAX);
            let mut diags: Vec<Diagnostic> = (diags.into_iter())
                .filter(|d| !unbound.iter().any(|r| r.contains(&d.loc.span)))
                .filter(|d| d.loc.span < cutoff)
                .collect();
            if let Some((_, errs)) = arg_errors.into_iter().find(|(s, _)| *s == cutoff) {
                diags.extend(errs);
            } else {
                for r in records.iter() {
                    check_call(r, &types, false, &mut diags);
                }
            }
            return (types, diags);
        }
        substitute_block(&mut kernel.body, &new);
        for r in records.iter_mut() {
            for c in &mut r.checks {
                let slot = match &mut c.expect {
                    Expect::Tile { elem, .. } | Expect::Tensor { elem, .. } => elem,
                };
                if let Some(Elem::Generic(g)) = slot {
                    if let Some(e) = new.get(g) {
                        *slot = Some(e.clone());
                    }
                }
            }
        }
        bound.extend(new);
    }
}

/// How a type reads in messages.
fn describe(t: &Ty) -> String {
    match t {
        Ty::Tile { elem, shape, .. } if shape.is_scalar() => format!("a scalar {elem}"),
        Ty::Tile { elem, shape, .. } => format!("a tile {elem}{shape}"),
        Ty::Tensor { rank, elem, .. } => format!("a Tensor{rank}<{elem}>"),
        Ty::Error => "<error>".into(),
    }
}

/// Checks one call's arguments (`params`) or results against the helper's signature.
fn check_call(r: &CallRecord, types: &Types, params: bool, diags: &mut Vec<Diagnostic>) {
    for c in &r.checks {
        if matches!(c.role, Role::Param(_)) != params {
            continue;
        }
        let ty = types.of(c.value);
        if matches!(ty, Ty::Error) {
            continue;
        }
        let ok = match (&c.expect, ty) {
            (
                Expect::Tile { elem, dims },
                Ty::Tile {
                    elem: e,
                    shape,
                    weak,
                },
            ) => {
                let elem_ok = *weak
                    || elem
                        .as_ref()
                        .is_none_or(|x| x == e || is_placeholder(x, std::slice::from_ref(r)));
                let shape_ok = dims.as_ref().is_none_or(|d| *d == shape.0);
                elem_ok && shape_ok
            }
            (
                Expect::Tensor {
                    rank,
                    elem,
                    mutable,
                },
                Ty::Tensor {
                    rank: rk,
                    elem: e,
                    mutable: m,
                    ..
                },
            ) => rank == rk && elem.as_ref().is_none_or(|x| x == e) && (*m || !mutable),
            _ => false,
        };
        if ok {
            continue;
        }
        let (msg, note) = match &c.role {
            Role::Param(p) => (
                format!(
                    "argument `{p}` of `{}` is {}, but the helper takes `{}`{}",
                    r.helper,
                    describe(ty),
                    c.written,
                    expected_suffix(&c.expect)
                ),
                format!("the type of `{p}` is declared here"),
            ),
            Role::Result(i, tuple) => (
                format!(
                    "{} of `{}` is {}, but its signature says `{}`{}",
                    if *tuple {
                        format!("result {i}")
                    } else {
                        "the result".into()
                    },
                    r.helper,
                    describe(ty),
                    c.written,
                    expected_suffix(&c.expect)
                ),
                "the result type is declared here".to_string(),
            ),
        };
        diags.push(Diagnostic::new(c.value_loc, msg).with_note(c.decl_loc, note));
    }
}

/// ` (a tile f32[BLOCK] here)`: the declared type with its parameters bound.
fn expected_suffix(e: &Expect) -> String {
    match e {
        Expect::Tile {
            elem: Some(elem),
            dims: Some(dims),
        } => {
            let shape = tilekit_ir::Shape::new(dims.clone());
            let t = Ty::tile(elem.clone(), shape);
            format!(" ({} here)", describe(&t))
        }
        _ => String::new(),
    }
}
