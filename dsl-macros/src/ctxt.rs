//! Error collection (all errors at once, each at the user's tokens) and the span table that
//! links IR locations back to tokens.

use proc_macro2::{Span, TokenStream};
use tilekit_ir::{Diagnostic, Loc};

/// Collects errors during parsing, lowering and validation.
pub struct Ctxt {
    errors: Vec<syn::Error>,
    spans: Vec<Span>,
}

impl Ctxt {
    pub fn new() -> Ctxt {
        // Span 0 is "no span": diagnostics without one point at the macro call.
        Ctxt {
            errors: Vec::new(),
            spans: vec![Span::call_site()],
        }
    }

    /// Records an error at `span`.
    pub fn error(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.errors.push(syn::Error::new(span, msg));
    }

    /// Records an error with a help line.
    pub fn error_help(
        &mut self,
        span: Span,
        msg: impl std::fmt::Display,
        help: impl std::fmt::Display,
    ) {
        self.errors
            .push(syn::Error::new(span, format!("{msg}\n  = help: {help}")));
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
        self.errors.push(syn::Error::new_spanned(tokens, msg));
    }

    /// Records a syn parse error.
    pub fn syn_error(&mut self, e: syn::Error) {
        self.errors.push(e);
    }

    /// An IR location for `span`.
    pub fn loc(&mut self, span: Span) -> Loc {
        let idx = self.spans.len() as u32;
        self.spans.push(span);
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
        }
    }

    /// The messages, for tests.
    pub fn messages(&self) -> Vec<String> {
        self.errors.iter().map(|e| e.to_string()).collect()
    }

    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// All errors as `compile_error!` invocations.
    pub fn to_compile_errors(&self) -> TokenStream {
        self.errors
            .iter()
            .map(syn::Error::to_compile_error)
            .collect()
    }
}
