//! The helpers a body calls: every call `f(..)` / `path::f(..)` whose function is not a
//! builtin of kernel code.

use crate::lower::body::{is_builtin, near_name};
use syn::visit::Visit;
use syn::{Expr, Path};

/// The key under which a called path is resolved: its segments as written, without
/// generic arguments (`norms::welford`, `::k::welford`).
pub fn path_key(path: &Path) -> String {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let lead = if path.leading_colon.is_some() {
        "::"
    } else {
        ""
    };
    format!("{lead}{}", segs.join("::"))
}

/// Whether a call of `path` is a helper call (not a builtin of kernel code, nor a near
/// name of one such as `transpose`, which the body's lowering reports with what to write
/// instead; a helper of such a name is called by a longer path, `self::transpose(..)`).
pub fn is_helper_path(path: &Path) -> bool {
    match path.segments.len() {
        1 => {
            let name = path.segments[0].ident.to_string();
            !is_builtin(&name) && near_name(&name).is_none()
        }
        _ => true,
    }
}

/// The called helper of a call expression's function, if it names one.
pub fn helper_path(func: &Expr) -> Option<&Path> {
    match func {
        Expr::Path(p) if p.qself.is_none() && is_helper_path(&p.path) => Some(&p.path),
        Expr::Paren(p) => helper_path(&p.expr),
        Expr::Group(g) => helper_path(&g.expr),
        _ => None,
    }
}

/// The helper paths called in `block`, each once (first occurrence), without generic
/// arguments.
pub fn helper_calls(block: &syn::Block) -> Vec<(String, Path)> {
    #[derive(Default)]
    struct Calls(Vec<(String, Path)>);
    impl<'ast> Visit<'ast> for Calls {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let Some(p) = helper_path(&c.func) {
                let key = path_key(p);
                if !self.0.iter().any(|(k, _)| *k == key) {
                    let mut bare = p.clone();
                    for s in &mut bare.segments {
                        s.arguments = syn::PathArguments::None;
                    }
                    self.0.push((key, bare));
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
    }
    let mut calls = Calls::default();
    calls.visit_block(block);
    calls.0
}
