//! `#[kernel]`: tilekit's kernel compiler front end.
//!
//! The macro is a compiler with named stages:
//! 1. `parse`: the fn item and its attributes into plain data,
//! 2. `lower`: names, expressions and control flow into `tilekit_ir` (SSA, structured
//!    loops), then `tilekit_ir::infer` validates types and shapes,
//! 3. `tilekit_codegen::generate`: the CUDA C++ template,
//! 4. `generate`: the module that replaces the fn (`SPEC` and typed launchers).
//!
//! Every error is collected (not only the first) and reported at the user's tokens; the
//! module with the launchers' signatures is still emitted so callers keep type-checking.
//! The macro never panics: a panic would be a tilekit bug, and is caught and reported.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;

mod ctxt;
mod generate;
mod lower;
mod parse;

/// Compiles a tile-level kernel. See the `tilekit` crate for the language.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let (attr, item): (TokenStream2, TokenStream2) = (attr.into(), item.into());
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| kernel_impl(attr, item))) {
        Ok(ts) => ts.into(),
        Err(_) => quote!(::core::compile_error!("internal error in #[kernel]; please report it with the kernel that caused it");).into(),
    }
}

fn misplaced(name: &str) -> TokenStream {
    let msg = format!("`#[{name}(..)]` must come after `#[kernel(..)]` on a kernel fn");
    quote!(::core::compile_error!(#msg);).into()
}

/// Declares a kernel's tuning space; read by `#[kernel]` (place it below `#[kernel]`).
#[proc_macro_attribute]
pub fn tune(_attr: TokenStream, _item: TokenStream) -> TokenStream {
    misplaced("tune")
}

/// Declares a constraint on a kernel's configurations; read by `#[kernel]`.
#[proc_macro_attribute]
pub fn constraint(_attr: TokenStream, _item: TokenStream) -> TokenStream {
    misplaced("constraint")
}

/// Names a kernel's tensor dimensions and gives its scalar parameters the values the tuner
/// passes (`#[shapes(x = [M, N], y = [M, N], eps = 1e-5)]`; a range `eps = 1e-6..1e-4` is
/// sampled uniformly; see `tilekit_ir::InputGen` for scalars not given); read by `#[kernel]`.
#[proc_macro_attribute]
pub fn shapes(_attr: TokenStream, _item: TokenStream) -> TokenStream {
    misplaced("shapes")
}

/// Declares a kernel's cost (`#[cost(flops = 2 * M * N * K)]`); read by `#[kernel]`.
#[proc_macro_attribute]
pub fn cost(_attr: TokenStream, _item: TokenStream) -> TokenStream {
    misplaced("cost")
}

/// The result of compiling one kernel (tests look at the stages separately).
#[cfg_attr(not(test), allow(dead_code))]
struct Compiled {
    kernel: Option<tilekit_ir::Kernel>,
    errors: Vec<String>,
    tokens: TokenStream2,
}

fn kernel_impl(attr: TokenStream2, item: TokenStream2) -> TokenStream2 {
    compile(attr, item).tokens
}

fn compile(attr: TokenStream2, item: TokenStream2) -> Compiled {
    let item = parse::index_sugar::rewrite(item);
    // A body that does not parse still leaves the signature: its error is the only one
    // reported (the launchers are emitted, the fn and its attributes are not, so nothing
    // follows from it: no "`#[tune]` must come after `#[kernel]`", no unresolved module).
    let (f, body_error) = match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(f) => (f, None),
        Err(e) => match parse::recover::signature_only(&item) {
            Some(f) => (f, Some(e)),
            None => {
                let msg = format!("`#[kernel]` applies to a fn: {e}");
                let err = syn::Error::new(e.span(), &msg).to_compile_error();
                return Compiled {
                    kernel: None,
                    errors: vec![msg],
                    tokens: err,
                };
            }
        },
    };
    let mut cx = ctxt::Ctxt::new();
    let args = match syn::parse2::<parse::attrs::KernelArgs>(attr) {
        Ok(a) => Some(a),
        Err(e) => {
            cx.syn_error(e);
            None
        }
    };
    let attrs = parse::attrs::collect(&f.attrs, &mut cx);
    let sig = parse::signature::parse(&f, &mut cx);
    if let Some(e) = body_error {
        cx.syn_error(e);
        let errors = cx.to_compile_errors();
        let passthrough = parse::attrs::passthrough_tokens(&attrs.passthrough);
        let module = generate::launcher::module(&sig, &passthrough, None);
        return Compiled {
            kernel: None,
            errors: cx.messages(),
            tokens: quote!(#errors #module),
        };
    }
    let passthrough = parse::attrs::passthrough_tokens(&attrs.passthrough);
    let args = args.unwrap_or(parse::attrs::KernelArgs {
        grid: Vec::new(),
        grid_span: proc_macro2::Span::call_site(),
        debug: false,
        parsed: false,
    });
    let kernel = lower::kernel::build(&f, &args, &sig, &attrs, &mut cx);
    if cx.has_errors() {
        let errors = cx.to_compile_errors();
        let module = generate::launcher::module(&sig, &passthrough, None);
        return Compiled {
            kernel: Some(kernel),
            errors: cx.messages(),
            tokens: quote!(#errors #module),
        };
    }
    let cuda = match stage_codegen(&kernel) {
        Ok(s) => s,
        Err(e) => {
            let msg = format!("tilekit code generation failed for `{}`: {e}", sig.name);
            let err = syn::Error::new(sig.name.span(), &msg).to_compile_error();
            let module = generate::launcher::module(&sig, &passthrough, None);
            return Compiled {
                kernel: Some(kernel),
                errors: vec![msg],
                tokens: quote!(#err #module),
            };
        }
    };
    if args.debug {
        eprintln!(
            "// ---- tilekit: CUDA for kernel `{}` ----\n{cuda}",
            sig.name
        );
    }
    let json = kernel.to_json();
    let payload = generate::launcher::Payload {
        ir_json: &json,
        cuda: &cuda,
        doc: &attrs.doc,
        spec_hash: tilekit_ir::hash::spec_hash(&kernel),
    };
    let tokens = generate::launcher::module(&sig, &passthrough, Some(&payload));
    Compiled {
        kernel: Some(kernel),
        errors: Vec::new(),
        tokens,
    }
}

/// Stage 3: the CUDA C++ template of the kernel.
fn stage_codegen(kernel: &tilekit_ir::Kernel) -> Result<String, String> {
    tilekit_codegen::generate(kernel).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_subtiles;
