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

// No `unwrap()` or `expect()` on a user's path: errors are values (unit tests may).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;

mod ctxt;
mod generate;
mod lower;
mod parse;
mod tile_fn;

use tile_fn::bundle::Bundle;

/// Compiles a tile-level kernel. See the `tilekit` crate for the language.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let (attr, item): (TokenStream2, TokenStream2) = (attr.into(), item.into());
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| kernel_impl(attr, item))) {
        Ok(ts) => ts.into(),
        Err(_) => quote!(::core::compile_error!("internal error in #[kernel]; please report it with the kernel that caused it");).into(),
    }
}

/// Declares a helper over tiles that kernels (and other helpers) call by name or path; it
/// is inlined where it is called, so both backends run it as if written out.
///
/// ```text
/// #[tile_fn]
/// pub fn axpb<T: Float>(x: Tile<T, BLOCK>, a: f32, b: f32) -> Tile<T, BLOCK> {
///     (x.to_f32() * a + b).cast::<T>()
/// }
/// // in a #[kernel] declaring BLOCK:  store(y.row(r), cols, axpb(v, 2.0, 1.0), mask);
/// ```
///
/// Parameters are tiles `Tile<E, D..>`, scalars `E` and tensors `&TensorR<E>`; type
/// parameters are bound per call from the arguments; tuning parameters (`BLOCK`) are the
/// calling kernel's. Callable from other modules and crates (a `pub` helper). See
/// "Helper functions" in docs/semantics.md; a runnable example is in the `tilekit` crate.
#[proc_macro_attribute]
pub fn tile_fn(attr: TokenStream, item: TokenStream) -> TokenStream {
    let (attr, item): (TokenStream2, TokenStream2) = (attr.into(), item.into());
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tile_fn::tile_fn_impl(attr, item))) {
        Ok(ts) => ts.into(),
        Err(_) => quote!(::core::compile_error!("internal error in #[tile_fn]; please report it with the helper that caused it");).into(),
    }
}

/// The continuation of `#[kernel]` and `#[tile_fn]` through helpers' callback macros
/// (an implementation detail: see `tile_fn` in this crate).
#[doc(hidden)]
#[proc_macro]
pub fn __tile_fn_chain(input: TokenStream) -> TokenStream {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tile_fn::chain_impl(input.into()))) {
        Ok(ts) => ts.into(),
        Err(_) => quote!(::core::compile_error!("internal error in #[kernel] with #[tile_fn] helpers; please report it");).into(),
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

/// Declares an argument check of a kernel (`#[check(eps > 0.0 && eps.is_finite())]`,
/// `#[check(act >= 0 && act <= 3)]`): a condition on the arguments alone (shapes, scalar
/// values, named dimensions), refused at launch as a whole, naming the arguments it reads.
/// Unlike a `#[constraint]` it may not read a tuning parameter or a resource, and it is
/// not part of the spec hash; read by `#[kernel]`.
#[proc_macro_attribute]
pub fn check(_attr: TokenStream, _item: TokenStream) -> TokenStream {
    misplaced("check")
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
    /// The reported errors alone, as `compile_error!`s.
    error_tokens: TokenStream2,
    /// Every error's site, reported or not.
    sites: Vec<ctxt::Site>,
}

/// `#[kernel]`: a body that calls helpers starts the chain that collects them (see
/// `tile_fn`), reporting now the errors that do not depend on them; any other is compiled.
fn kernel_impl(attr: TokenStream2, item: TokenStream2) -> TokenStream2 {
    let item = parse::index_sugar::rewrite(item);
    let calls = match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(f) => tile_fn::calls::helper_calls(&f.block),
        Err(_) => Vec::new(),
    };
    let Some((key, path)) = calls.into_iter().next() else {
        return compile(attr, item).tokens;
    };
    let errors = compile_with(attr.clone(), item.clone(), None, Vec::new()).error_tokens;
    let state = tile_fn::bundle::ChainState {
        target: tile_fn::bundle::Target::Kernel,
        attr,
        item,
        resolved: Vec::new(),
        requested: Some(key),
        bundle: None,
    };
    let request = tile_fn::bundle::request(&path, &state);
    quote!(#errors #request)
}

/// The last step of a kernel's chain: compiled with every helper it calls, leaving out
/// the errors its first expansion reported.
fn kernel_final(
    attr: TokenStream2,
    item: TokenStream2,
    helpers: &[(String, Bundle)],
) -> TokenStream2 {
    let first = compile_with(attr.clone(), item.clone(), None, Vec::new());
    compile_with(attr, item, Some(helpers), first.sites).tokens
}

fn compile(attr: TokenStream2, item: TokenStream2) -> Compiled {
    compile_with(attr, item, Some(&[]), Vec::new())
}

/// Compiles a kernel with the helpers its body calls (`None`: not collected yet, their
/// calls are silent unknowns), leaving the errors at `suppress` out of the output.
fn compile_with(
    attr: TokenStream2,
    item: TokenStream2,
    helpers: Option<&[(String, Bundle)]>,
    suppress: Vec<ctxt::Site>,
) -> Compiled {
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
                    tokens: err.clone(),
                    error_tokens: err,
                    sites: Vec::new(),
                };
            }
        },
    };
    let mut cx = ctxt::Ctxt::new();
    cx.suppress(suppress);
    let args = match syn::parse2::<parse::attrs::KernelArgs>(attr) {
        Ok(a) => Some(a),
        Err(e) => {
            cx.syn_error(e);
            None
        }
    };
    let attrs = parse::attrs::collect(&f.attrs, &mut cx);
    let sig = parse::signature::parse(&f, &mut cx);
    cx.set_rejected(sig.rejected.iter().map(ToString::to_string).collect());
    if let Some(e) = body_error {
        cx.syn_error(e);
        let errors = cx.to_compile_errors();
        let passthrough = parse::attrs::passthrough_tokens(&attrs.passthrough);
        let module = generate::launcher::module(&sig, &passthrough, None);
        return Compiled {
            kernel: None,
            errors: cx.messages(),
            tokens: quote!(#errors #module),
            error_tokens: errors,
            sites: cx.sites(),
        };
    }
    let passthrough = parse::attrs::passthrough_tokens(&attrs.passthrough);
    let args = args.unwrap_or(parse::attrs::KernelArgs {
        grid: Vec::new(),
        grid_span: proc_macro2::Span::call_site(),
        debug: false,
        parsed: false,
    });
    let kernel = lower::kernel::build(&f, &args, &sig, &attrs, helpers, &mut cx);
    if cx.has_errors() || helpers.is_none() {
        let errors = cx.to_compile_errors();
        let module = generate::launcher::module(&sig, &passthrough, None);
        return Compiled {
            kernel: Some(kernel),
            errors: cx.messages(),
            tokens: quote!(#errors #module),
            error_tokens: errors,
            sites: cx.sites(),
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
                error_tokens: err,
                sites: Vec::new(),
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
        error_tokens: TokenStream2::new(),
        sites: Vec::new(),
    }
}

/// Stage 3: the CUDA C++ template of the kernel.
fn stage_codegen(kernel: &tilekit_ir::Kernel) -> Result<String, String> {
    tilekit_codegen::generate(kernel).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_cache;
#[cfg(test)]
mod tests_shapes;
#[cfg(test)]
mod tests_subtiles;
#[cfg(test)]
mod tests_tile_fn;
