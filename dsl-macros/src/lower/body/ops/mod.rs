//! Tile operations, written as calls (`load(x, offsets)`) or as methods (`x.row(i)`):
//! one table of each ([`CALLS`], [`METHODS`]) names every operation and the function that
//! lowers it, and the help for an unknown operation is made from them. Adding an
//! operation is one row here and its function in its family's module: `program`
//! (program ids), `construct` (arange, zeros, full), `memory` (load/store,
//! load_tile/store_tile, tensor views and shape queries), `matrix` (dot), `reduce`
//! (reductions, expand_dims, trans), `slice` (static sub-tiles), `elementwise` (unary math, maximum/minimum, where_, cdiv)
//! and `cast` (to_f32, cast).

mod cast;
mod construct;
mod elementwise;
mod matrix;
mod memory;
mod program;
mod reduce;
mod slice;

use super::near_names::{near_method, near_name};
use super::{fn_name, Lowerer};
use crate::lower::INDEX_METHOD;
use crate::tile_fn::calls::helper_path;
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::GenericArgument;
use tilekit_ir::{BinOp, Op, Precision, ReduceOp, UnaryOp, ValueId};

/// A call `name(args)` or `name::<generics>(args)` being lowered.
struct Call<'e> {
    /// The call.
    expr: &'e syn::ExprCall,
    /// The operation's name.
    name: &'e str,
    /// Its generic arguments (`::<..>`), possibly none.
    generics: &'e [GenericArgument],
    /// The call's span.
    span: Span,
    /// The name's span.
    name_span: Span,
}

/// A method call `recv.name(args)` being lowered; the receiver is lowered first.
struct Method<'e> {
    /// The method call.
    expr: &'e syn::ExprMethodCall,
    /// The method's name.
    name: &'e str,
    /// The receiver's value (`None` after an error, already reported).
    recv: Option<ValueId>,
    /// Its generic arguments (`::<..>`), possibly none.
    turbofish: &'e [GenericArgument],
    /// The method call's span.
    span: Span,
}

/// Lowers a tile operation written as a call.
type LowerCall = fn(&mut Lowerer<'_, '_>, &Call<'_>) -> Option<ValueId>;

/// Lowers a tile operation written as a method.
type LowerMethod = fn(&mut Lowerer<'_, '_>, &Method<'_>) -> Option<ValueId>;

/// A tile operation written as a call.
struct CallOp {
    /// The function's name.
    name: &'static str,
    /// Whether it takes generic arguments (`arange::<N>()`); the others reject them.
    generic: bool,
    /// Whether the help for an unknown operation lists it.
    listed: bool,
    /// Its lowering.
    lower: LowerCall,
}

impl CallOp {
    /// A listed operation without generic arguments.
    const fn new(name: &'static str, lower: LowerCall) -> CallOp {
        CallOp {
            name,
            generic: false,
            listed: true,
            lower,
        }
    }

    /// The same, taking generic arguments.
    const fn generic(self) -> CallOp {
        CallOp {
            generic: true,
            ..self
        }
    }

    /// The same, left out of the help.
    const fn unlisted(self) -> CallOp {
        CallOp {
            listed: false,
            ..self
        }
    }
}

/// Whether `name` is a tile operation written as a call (`program_id`, `arange`, ..).
pub(super) fn is_call(name: &str) -> bool {
    CALLS.iter().any(|op| op.name == name)
}

/// Every tile operation written as a call, in the order the help lists them.
const CALLS: &[CallOp] = &[
    // program ids
    CallOp::new("program_id", |l, c| {
        l.program_axis(c, |axis| Op::ProgramId { axis })
    }),
    CallOp::new("num_programs", |l, c| {
        l.program_axis(c, |axis| Op::NumPrograms { axis })
    }),
    // construction
    CallOp::new("arange", |l, c| l.arange(c)).generic(),
    CallOp::new("zeros", |l, c| l.fill(c)).generic(),
    CallOp::new("full", |l, c| l.fill(c)).generic(),
    // memory
    CallOp::new("load", |l, c| l.load(c)),
    CallOp::new("store", |l, c| l.store(c)),
    CallOp::new("atomic_add", |l, c| l.atomic_add(c)),
    CallOp::new("load_tile", |l, c| l.load_tile(c)),
    CallOp::new("store_tile", |l, c| l.store_tile(c)),
    CallOp::new("shared_row", |l, c| l.shared_row(c)).generic(),
    // matrix
    CallOp::new("dot", |l, c| l.dot(c, Precision::Ieee)),
    CallOp::new("dot_tf32", |l, c| l.dot(c, Precision::Tf32)),
    // reductions
    CallOp::new("sum", |l, c| l.reduce_call(c, ReduceOp::Sum)),
    CallOp::new("max", |l, c| l.reduce_call(c, ReduceOp::Max)),
    CallOp::new("min", |l, c| l.reduce_call(c, ReduceOp::Min)),
    // elementwise
    CallOp::new("maximum", |l, c| l.binary_call(c, BinOp::Max)),
    CallOp::new("minimum", |l, c| l.binary_call(c, BinOp::Min)),
    CallOp::new("clamp", |l, c| l.clamp_call(c)),
    CallOp::new("where_", |l, c| l.select(c)),
    // shape
    CallOp::new("expand_dims", |l, c| l.expand_dims_call(c)),
    CallOp::new("trans", |l, c| l.trans_call(c)),
    CallOp::new("cat", |l, c| l.cat_call(c)),
    // elementwise math
    CallOp::new("exp", |l, c| l.unary_call(c, UnaryOp::Exp)),
    CallOp::new("log", |l, c| l.unary_call(c, UnaryOp::Log)),
    CallOp::new("sqrt", |l, c| l.unary_call(c, UnaryOp::Sqrt)),
    CallOp::new("rsqrt", |l, c| l.unary_call(c, UnaryOp::Rsqrt)),
    CallOp::new("tanh", |l, c| l.unary_call(c, UnaryOp::Tanh)),
    CallOp::new("sigmoid", |l, c| l.unary_call(c, UnaryOp::Sigmoid)),
    CallOp::new("abs", |l, c| l.unary_call(c, UnaryOp::Abs)),
    CallOp::new("relu", |l, c| l.unary_call(c, UnaryOp::Relu)),
    CallOp::new("gelu", |l, c| l.unary_call(c, UnaryOp::Gelu)),
    CallOp::new("erf", |l, c| l.unary_call(c, UnaryOp::Erf)),
    CallOp::new("exp2", |l, c| l.unary_call(c, UnaryOp::Exp2)),
    CallOp::new("log2", |l, c| l.unary_call(c, UnaryOp::Log2)),
    CallOp::new("log1p", |l, c| l.unary_call(c, UnaryOp::Log1p)),
    CallOp::new("expm1", |l, c| l.unary_call(c, UnaryOp::Expm1)),
    CallOp::new("floor", |l, c| l.unary_call(c, UnaryOp::Floor)),
    CallOp::new("ceil", |l, c| l.unary_call(c, UnaryOp::Ceil)),
    CallOp::new("round", |l, c| l.unary_call(c, UnaryOp::Round)),
    CallOp::new("pow", |l, c| l.binary_call(c, BinOp::Pow)),
    CallOp::new("powi", |l, c| l.binary_call(c, BinOp::Powi)),
    CallOp::new("atan2", |l, c| l.binary_call(c, BinOp::Atan2)),
    CallOp::new("fma", |l, c| l.fma_call(c)),
    CallOp::new("stochastic_round", |l, c| l.stochastic_round_call(c)),
    CallOp::new("cdiv", |l, c| l.cdiv(c)),
    // only as the range of a `for` loop (lowered there)
    CallOp::new("pipelined", |l, c| l.pipelined_outside_for(c)).unlisted(),
];

/// A tile operation written as a method.
struct MethodOp {
    /// The method's name.
    name: &'static str,
    /// How the help for an unknown operation lists it, if it does.
    usage: Option<&'static str>,
    /// Its lowering.
    lower: LowerMethod,
}

impl MethodOp {
    /// An operation the help leaves out.
    const fn new(name: &'static str, lower: LowerMethod) -> MethodOp {
        MethodOp {
            name,
            usage: None,
            lower,
        }
    }

    /// The same, listed in the help as `usage`.
    const fn listed(self, usage: &'static str) -> MethodOp {
        MethodOp {
            usage: Some(usage),
            ..self
        }
    }
}

/// Every tile operation written as a method, in the order the help lists them, but for
/// the unary math ops (`x.exp()`), which every name of [`UnaryOp::parse`] provides.
const METHODS: &[MethodOp] = &[
    // casts
    MethodOp::new("to_f32", |l, m| l.cast_f32(m)).listed(".to_f32()"),
    MethodOp::new("cast", |l, m| l.cast_to(m)).listed(".cast::<E>()"),
    // tensor views and shape queries
    MethodOp::new("row", |l, m| l.row(m)).listed(".row(i)"),
    MethodOp::new("narrow", |l, m| l.narrow(m)).listed(".narrow(start, len)"),
    MethodOp::new("evict_first", |l, m| l.misplaced_cache_hint(m))
        .listed("load(v.evict_first(), ..)"),
    MethodOp::new("evict_last", |l, m| l.misplaced_cache_hint(m))
        .listed("load(v.evict_last(), ..)"),
    MethodOp::new("rows", |l, m| l.tensor_dim(m)).listed(".rows()"),
    MethodOp::new("cols", |l, m| l.tensor_dim(m)).listed(".cols()"),
    MethodOp::new("len", |l, m| l.tensor_dim(m)).listed(".len()"),
    MethodOp::new("dim", |l, m| l.tensor_dim(m)).listed(".dim(i)"),
    // shape
    MethodOp::new("expand_dims", |l, m| l.expand_dims_method(m)).listed(".expand_dims(axis)"),
    MethodOp::new("t", |l, m| l.trans_method(m)).listed(".t()"),
    MethodOp::new("slice", |l, m| l.slice_method(m)).listed(".slice([offsets], [extents])"),
    MethodOp::new(INDEX_METHOD, |l, m| l.index_method(m)),
    // math as Rust spells it on floats
    MethodOp::new("powf", |l, m| l.binary_method(m, BinOp::Pow)).listed(".powf(y)"),
    MethodOp::new("powi", |l, m| l.binary_method(m, BinOp::Powi)).listed(".powi(n)"),
    MethodOp::new("atan2", |l, m| l.binary_method(m, BinOp::Atan2)).listed(".atan2(x)"),
    MethodOp::new("mul_add", |l, m| l.mul_add_method(m)).listed(".mul_add(b, c)"),
    MethodOp::new("clamp", |l, m| l.clamp_method(m)).listed(".clamp(lo, hi)"),
    // reductions
    MethodOp::new("sum", |l, m| l.reduce_method(m, ReduceOp::Sum)),
    MethodOp::new("max", |l, m| l.reduce_method(m, ReduceOp::Max)),
    MethodOp::new("min", |l, m| l.reduce_method(m, ReduceOp::Min)),
];

/// The help for an unknown operation: the listed calls, then the listed methods.
fn ops_help() -> String {
    let calls: Vec<&str> = CALLS
        .iter()
        .filter(|op| op.listed)
        .map(|op| op.name)
        .collect();
    let methods: Vec<&str> = METHODS.iter().filter_map(|op| op.usage).collect();
    format!(
        "tile operations: {}; methods: {}",
        calls.join(", "),
        methods.join(", ")
    )
}

impl Lowerer<'_, '_> {
    /// A tile operation written as a call, lowered through [`CALLS`].
    pub(super) fn call(&mut self, c: &syn::ExprCall) -> Option<ValueId> {
        if let Some(path) = helper_path(&c.func) {
            if self.is_helper(path) {
                return self.helper_value(c, path);
            }
            if self.pending {
                for a in &c.args {
                    self.expr(a);
                }
                return None;
            }
        }
        let Some((name, generics, nspan)) = fn_name(&c.func) else {
            self.cx.error(
                c.func.span(),
                "unsupported call: kernel bodies call tile operations by name",
            );
            return None;
        };
        let span = c.span();
        let gen: Vec<GenericArgument> = generics
            .map(|g| g.args.iter().cloned().collect())
            .unwrap_or_default();
        let op = CALLS.iter().find(|op| op.name == name);
        if !gen.is_empty() && !op.is_some_and(|op| op.generic) {
            self.cx
                .error(nspan, format!("`{name}` takes no generic arguments"));
            return None;
        }
        let call = Call {
            expr: c,
            name: &name,
            generics: &gen,
            span,
            name_span: nspan,
        };
        match op {
            Some(op) => (op.lower)(self, &call),
            None => self.unknown_call(&call),
        }
    }

    /// A tile operation written as a method, lowered through [`METHODS`] (after its
    /// receiver).
    pub(super) fn method(&mut self, m: &syn::ExprMethodCall) -> Option<ValueId> {
        let name = m.method.to_string();
        let span = m.span();
        let recv = self.expr(&m.receiver);
        let turbofish: Vec<GenericArgument> = m
            .turbofish
            .as_ref()
            .map(|t| t.args.iter().cloned().collect())
            .unwrap_or_default();
        let call = Method {
            expr: m,
            name: &name,
            recv,
            turbofish: &turbofish,
            span,
        };
        if let Some(op) = METHODS.iter().find(|op| op.name == name) {
            return (op.lower)(self, &call);
        }
        if let Some(op) = UnaryOp::parse(&name) {
            return self.unary_method(&call, op);
        }
        for a in &m.args {
            self.expr(a);
        }
        if let Some(instead) = near_method(&name) {
            self.cx.error_help(
                m.method.span(),
                format!("unknown operation `.{name}()`"),
                format!("did you mean {instead}?"),
            );
            return None;
        }
        self.cx.error_help(
            m.method.span(),
            format!("unknown operation `.{name}()`"),
            ops_help(),
        );
        None
    }

    /// A call to no known operation: its arguments are still checked (a list's elements
    /// one by one: the list itself is not an expression of the DSL, and a near name such
    /// as `concat([a, b], 1)` must be one error, not two).
    fn unknown_call(&mut self, call: &Call) -> Option<ValueId> {
        for x in &call.expr.args {
            match crate::lower::body::strip(x) {
                syn::Expr::Array(list) => {
                    for e in &list.elems {
                        self.expr(e);
                    }
                }
                _ => {
                    self.expr(x);
                }
            }
        }
        let help = match near_name(call.name) {
            Some(instead) => format!("did you mean {instead}?"),
            None => ops_help(),
        };
        self.cx.error_help(
            call.name_span,
            format!("unknown operation `{}`", call.name),
            help,
        );
        None
    }

    /// `pipelined(..)` anywhere but the range of a `for` loop.
    fn pipelined_outside_for(&mut self, call: &Call) -> Option<ValueId> {
        self.cx.error(
            call.span,
            "`pipelined(..)` is only allowed as the range of a `for` loop",
        );
        None
    }

    /// Whether a call has an accepted number of arguments (else reported with `usage`).
    fn args(
        &mut self,
        c: &syn::ExprCall,
        range: std::ops::RangeInclusive<usize>,
        usage: &str,
    ) -> bool {
        if range.contains(&c.args.len()) {
            true
        } else {
            self.cx.error(
                c.span(),
                format!("wrong number of arguments; usage: `{usage}`"),
            );
            false
        }
    }

    /// Reports a method called with the wrong arguments.
    fn bad_arity(&mut self, m: &Method, usage: &str) {
        self.cx.error(
            m.expr.method.span(),
            format!("wrong number of arguments; usage: `{usage}`"),
        );
    }
}
