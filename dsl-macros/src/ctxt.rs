//! Error collection (all errors at once, each at the user's tokens) and the span table that
//! links IR locations back to tokens.

use proc_macro2::{Span, TokenStream};
use tilekit_ir::{Diagnostic, Loc};

/// Collects errors during parsing, lowering and validation.
pub struct Ctxt {
    errors: Vec<syn::Error>,
    spans: Vec<Span>,
    /// The `#[tile_fn]` calls being inlined, outermost first: each call's span and the
    /// helper's name. An error inside a helper gets a note at each call.
    inline: Vec<(Span, String)>,
    /// For each span index, the inlined calls it was registered under.
    span_calls: Vec<Vec<(Span, String)>>,
    /// Errors already reported by an earlier expansion (see [`Ctxt::suppress`]).
    suppressed: Vec<Site>,
    /// Parameters whose type was refused (reported once, at the type): a use of one is
    /// not reported again as an unknown name or a non-tensor (one mistake, one error).
    rejected: Vec<String>,
}

/// An error's message and where it starts: what two expansions of one kernel compare.
pub type Site = (String, usize, usize);

fn site(e: &syn::Error) -> Site {
    let start = e.span().start();
    (e.to_string(), start.line, start.column)
}

impl Ctxt {
    pub fn new() -> Ctxt {
        // Span 0 is "no span": diagnostics without one point at the macro call.
        Ctxt {
            errors: Vec::new(),
            spans: vec![Span::call_site()],
            inline: Vec::new(),
            span_calls: vec![Vec::new()],
            suppressed: Vec::new(),
            rejected: Vec::new(),
        }
    }

    /// Records the parameters whose type was refused (see the field).
    pub fn set_rejected(&mut self, names: Vec<String>) {
        self.rejected = names;
    }

    /// Whether `name` is a parameter whose type was refused (its uses are not reported).
    pub fn is_rejected(&self, name: &str) -> bool {
        self.rejected.iter().any(|n| n == name)
    }

    /// Leaves out of the output the errors at `sites` (reported by the first expansion of
    /// a kernel that calls helpers; the last one finds them again).
    pub fn suppress(&mut self, sites: Vec<Site>) {
        self.suppressed = sites;
    }

    /// Every error's site, suppressed or not.
    pub fn sites(&self) -> Vec<Site> {
        self.errors.iter().map(site).collect()
    }

    /// The errors to report.
    fn reported(&self) -> impl Iterator<Item = &syn::Error> {
        self.errors
            .iter()
            .filter(|e| !self.suppressed.contains(&site(e)))
    }

    /// Enters the inlining of helper `name` called at `call`.
    pub fn enter_helper(&mut self, call: Span, name: &str) {
        self.inline.push((call, name.to_string()));
    }

    /// Leaves the innermost helper.
    pub fn leave_helper(&mut self) {
        self.inline.pop();
    }

    /// How many spans are registered (the next one's index).
    pub fn span_count(&self) -> u32 {
        self.spans.len() as u32
    }

    /// Records an error, with a note at each helper call it is inside of.
    fn push(&mut self, e: syn::Error, calls: &[(Span, String)]) {
        self.errors.push(e);
        for (call, name) in calls.iter().rev() {
            self.errors.push(syn::Error::new(
                *call,
                format!("note: in the `#[tile_fn]` helper `{name}`, inlined here"),
            ));
        }
    }

    /// Records an error where lowering currently is (inside the helpers being inlined).
    fn push_here(&mut self, e: syn::Error) {
        let calls = self.inline.clone();
        self.push(e, &calls);
    }

    /// Records an error at `span`.
    pub fn error(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.push_here(syn::Error::new(span, msg));
    }

    /// Records an error with a help line.
    pub fn error_help(
        &mut self,
        span: Span,
        msg: impl std::fmt::Display,
        help: impl std::fmt::Display,
    ) {
        self.push_here(syn::Error::new(span, format!("{msg}\n  = help: {help}")));
    }

    /// Records an error covering all of `tokens` (a multi-token expression such as `-1`
    /// or `1.0 / 3.0` is underlined whole, where a single joined span may not be).
    pub fn error_spanned(
        &mut self,
        tokens: &dyn quote::ToTokens,
        msg: impl std::fmt::Display,
        help: Option<&dyn std::fmt::Display>,
    ) {
        let msg = match help {
            Some(h) => format!("{msg}\n  = help: {h}"),
            None => msg.to_string(),
        };
        self.push_here(syn::Error::new_spanned(tokens, msg));
    }

    /// Records a syn parse error.
    pub fn syn_error(&mut self, e: syn::Error) {
        self.push_here(e);
    }

    /// An IR location for `span`.
    pub fn loc(&mut self, span: Span) -> Loc {
        let idx = self.spans.len() as u32;
        self.spans.push(span);
        self.span_calls.push(self.inline.clone());
        Loc {
            span: idx,
            line: span.start().line as u32,
        }
    }

    /// The span of an IR location (the macro call when it has none).
    fn span_of(&self, loc: Loc) -> Span {
        self.spans
            .get(loc.span as usize)
            .copied()
            .unwrap_or_else(Span::call_site)
    }

    /// Records IR diagnostics at their spans, each note as one more error at its own span
    /// (stable proc macros have no notes), right after its diagnostic.
    pub fn diagnostics(&mut self, diags: Vec<Diagnostic>) {
        for d in diags {
            let span = self.span_of(d.loc);
            self.errors.push(syn::Error::new(span, d.to_string()));
            for (loc, note) in &d.notes {
                let span = self.span_of(*loc);
                self.errors.push(syn::Error::new(span, note));
            }
            let calls = (self.span_calls.get(d.loc.span as usize).cloned()).unwrap_or_default();
            for (call, name) in calls.iter().rev() {
                self.errors.push(syn::Error::new(
                    *call,
                    format!("note: in the `#[tile_fn]` helper `{name}`, inlined here"),
                ));
            }
        }
    }

    /// The messages, for tests.
    pub fn messages(&self) -> Vec<String> {
        self.reported().map(|e| e.to_string()).collect()
    }

    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// All errors as `compile_error!` invocations.
    pub fn to_compile_errors(&self) -> TokenStream {
        self.reported().map(syn::Error::to_compile_error).collect()
    }
}
