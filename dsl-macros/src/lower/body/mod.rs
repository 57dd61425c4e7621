//! The kernel body into SSA tile IR: names become values, `for` and `if` become structured
//! ops whose loop-carried / branch results are the variables they assign.
//!
//! This module holds the lowering state ([`Lowerer`]: the builder, the scopes of names and
//! the ranks of tensor values) and name binding; the rest is by concern: `stmts`
//! (statements, `let` patterns, assignments), `control` (`for`, `if`, loop-carried names),
//! `exprs` (expressions, literals, paths, operators), `extents` (tile extents and offsets as
//! linear expressions), `static_args` (extents as generic arguments, element types, axes) and `ops` (tile operations called as functions or methods, one table each,
//! lowered by op family).

mod control;
mod exprs;
mod extents;
mod inline;
mod near_names;
mod ops;
mod static_args;
mod stmts;

pub(crate) use near_names::near_name;

use crate::ctxt::Ctxt;
use crate::lower::helpers::CallRecord;
use crate::lower::host::{unknown_name, HostScope};
use crate::tile_fn::bundle::Bundle;
use proc_macro2::Span;
use std::collections::HashMap;
use syn::Expr;
use tilekit_ir::{DType, Elem, KernelBuilder, Literal, Op, ParamKind, TuneValue, ValueId};

/// Lowers the body of `f` into `b`, inlining the `#[tile_fn]` helpers it calls (`helpers`:
/// each called path with its bundle; `None` before they are collected). Signature, space and grid must already be in `b`.
/// Returns what each inlined call must satisfy once types are known.
pub fn lower_body(
    f: &syn::ItemFn,
    b: &mut KernelBuilder,
    cx: &mut Ctxt,
    helpers: Option<&[(String, Bundle)]>,
) -> Vec<CallRecord> {
    let elems = (b.kernel_mut().generics.iter())
        .map(|g| (g.clone(), Elem::Generic(g.clone())))
        .collect();
    let mut l = Lowerer {
        b,
        cx,
        scopes: vec![HashMap::new()],
        ranks: HashMap::new(),
        elems,
        helpers: helpers.unwrap_or_default().to_vec(),
        pending: helpers.is_none(),
        inlining: Vec::new(),
        records: Vec::new(),
    };
    l.bind_params(f.sig.ident.span());
    l.block_stmts(&f.block.stmts, false);
    l.records
}

/// The lowering state of one kernel body.
struct Lowerer<'a, 'c> {
    /// The kernel being built.
    b: &'a mut KernelBuilder,
    /// Where errors go.
    cx: &'c mut Ctxt,
    /// Names in scope; `None` marks a name whose value had an error (already reported),
    /// so later uses stay silent.
    scopes: Vec<HashMap<String, Option<ValueId>>>,
    /// Static rank of tensor-valued SSA values (parameters and row views).
    ranks: HashMap<ValueId, u8>,
    /// The element types that type parameters name here: the kernel's own, or inside a
    /// helper, the helper's (bound per call once types are known).
    elems: HashMap<String, Elem>,
    /// The helpers callable here, by the path written (the kernel's, or inside a helper,
    /// the helper's own).
    helpers: Vec<(String, Bundle)>,
    /// Whether the kernel's helpers are not collected yet (the first expansion of a kernel
    /// that calls some): their calls are then silent unknowns.
    pending: bool,
    /// The helpers being inlined, outermost first (their identities).
    inlining: Vec<String>,
    /// One record per inlined call.
    records: Vec<CallRecord>,
}

/// The name, generic arguments and name span of a called path with one segment.
fn fn_name(e: &Expr) -> Option<(String, Option<&syn::AngleBracketedGenericArguments>, Span)> {
    let Expr::Path(p) = e else { return None };
    if p.path.segments.len() != 1 {
        return None;
    }
    let seg = &p.path.segments[0];
    let generics = match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => Some(a),
        _ => None,
    };
    Some((seg.ident.to_string(), generics, seg.ident.span()))
}

/// Whether `name` is a builtin of kernel code: a tile operation written as a call, a
/// function of host expressions (`cdiv`, `smem_bytes`, ..) or `pipelined`.
pub fn is_builtin(name: &str) -> bool {
    ops::is_call(name) || tilekit_ir::Func::parse(name).is_some() || name == "pipelined"
}

/// Why `name` cannot name a parameter or a `let` of a kernel whose space is `space`: it is
/// a declared or reserved tuning name (`arange::<BLOCK>` would read the configuration
/// while `BLOCK` elsewhere read the binding). `None` when it can.
pub fn tuning_name_clash(name: &str, space: &tilekit_ir::Space) -> Option<String> {
    if space.param(name).is_some() {
        Some(format!("`{name}` is a tuning parameter of this kernel"))
    } else {
        tilekit_ir::space::reserved(name)
            .map(|r| format!("`{name}` is a reserved tuning name: {}", r.meaning))
    }
}

impl Lowerer<'_, '_> {
    // ----- names -------------------------------------------------------------------------

    /// Reports a `let` or loop variable named like a tuning parameter (it would shadow it in
    /// expressions but not in `arange::<NAME>` or shapes). Returns whether it clashes.
    fn clashing_binding(&mut self, ident: &syn::Ident) -> bool {
        let name = ident.to_string();
        let Some(why) = tuning_name_clash(&name, &self.b.kernel_mut().space) else {
            return false;
        };
        self.cx.error_help(
            ident.span(),
            format!("`{name}` cannot be rebound in a kernel: {why}"),
            "pick another name; tuning values are read where they are written, in extents \
             and in expressions alike",
        );
        true
    }

    /// `Some(None)`: declared but poisoned.
    fn lookup_binding(&self, name: &str) -> Option<Option<ValueId>> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    /// The value of a name, if bound and not poisoned.
    fn lookup(&self, name: &str) -> Option<ValueId> {
        self.lookup_binding(name).flatten()
    }

    /// Binds a name in the innermost scope (`None`: poisoned).
    fn bind_opt(&mut self, name: &str, v: Option<ValueId>) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), v);
        }
        if let Some(v) = v {
            self.b.name_value(v, name);
        }
    }

    /// Binds a name to a value in the innermost scope.
    fn bind(&mut self, name: &str, v: ValueId) {
        self.bind_opt(name, Some(v));
    }

    /// Binds a `#[tile_fn]` helper's parameter to its argument in the innermost scope,
    /// naming the value after the parameter only where the caller left it unnamed (a
    /// kernel parameter or a caller's variable keeps its name in the generated code).
    fn bind_argument(&mut self, name: &str, v: ValueId) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), Some(v));
        }
        let named = self
            .b
            .kernel_mut()
            .value_names
            .get(v.index())
            .is_some_and(Option::is_some);
        if !named {
            self.b.name_value(v, name);
        }
    }

    /// Rebinds an existing name in the scope that declared it.
    fn assign_opt(&mut self, name: &str, v: Option<ValueId>) -> bool {
        for s in self.scopes.iter_mut().rev() {
            if let Some(slot) = s.get_mut(name) {
                *slot = v;
                if let Some(v) = v {
                    self.b.name_value(v, name);
                }
                return true;
            }
        }
        false
    }

    /// Rebinds an existing name to a value.
    fn assign(&mut self, name: &str, v: ValueId) -> bool {
        self.assign_opt(name, Some(v))
    }

    /// Reports an unknown name, with what the host scope offers instead.
    fn host_scope_error(&mut self, name: &str, span: Span) {
        let kernel = self.b.kernel_mut().clone();
        let dims = kernel.problem.dims.clone();
        unknown_name(
            name,
            span,
            &HostScope {
                kernel: &kernel,
                dims: &dims,
            },
            self.cx,
        );
    }

    /// For a declared tuning parameter, its first value (`Some(None)` if it has none).
    fn tune_kind(&mut self, name: &str) -> Option<Option<TuneValue>> {
        self.b
            .kernel_mut()
            .space
            .param(name)
            .map(|p| p.values.first().cloned())
    }

    /// Binds every parameter to its `TensorParam` / `ScalarParam` value.
    fn bind_params(&mut self, span: Span) {
        let params = self.b.kernel_mut().params.clone();
        for (i, p) in params.iter().enumerate() {
            let loc = self.cx.loc(span);
            let loc = tilekit_ir::Loc {
                line: p.loc.line.max(loc.line),
                ..loc
            };
            let v = match p.kind {
                ParamKind::Tensor { rank, .. } => {
                    let v = self.b.push(Op::TensorParam { index: i }, loc);
                    self.ranks.insert(v, rank);
                    v
                }
                ParamKind::Scalar { .. } => self.b.push(Op::ScalarParam { index: i }, loc),
            };
            self.bind(&p.name, v);
        }
    }

    /// The element type `ty` names here: a type parameter in scope or a concrete type
    /// (`bool` only where `bool` is allowed).
    fn elem_of(&self, ty: &syn::Type, bool_ok: bool) -> Option<Elem> {
        let syn::Type::Path(p) = ty else { return None };
        let id = p.path.get_ident()?.to_string();
        if let Some(e) = self.elems.get(&id) {
            return Some(e.clone());
        }
        let d = DType::parse(&id)?;
        (d != DType::F64 && (bool_ok || d != DType::Bool)).then_some(Elem::Concrete(d))
    }

    /// Pushes an op with one result at `span`.
    fn push(&mut self, op: Op, span: Span) -> ValueId {
        let loc = self.cx.loc(span);
        self.b.push(op, loc)
    }

    /// Pushes a literal.
    fn lit(&mut self, l: Literal, span: Span) -> ValueId {
        self.push(Op::Lit(l), span)
    }
}

/// `e` without parentheses and invisible groups.
fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        other => other,
    }
}
