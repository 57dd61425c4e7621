//! The error type of every fallible function of this crate.

use tilekit_ir::{DType, Diagnostic, SpaceError};

/// Why CUDA source or a launch plan could not be produced.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CodegenError {
    /// The kernel does not type-check; the diagnostics of `tilekit_ir::infer`.
    #[error("kernel `{kernel}` has {} error(s):\n{}", .diagnostics.len(), render(.diagnostics))]
    Invalid {
        /// Kernel name.
        kernel: String,
        /// Every diagnostic, in order.
        diagnostics: Vec<Diagnostic>,
    },
    /// The configuration is not a point of the kernel's declared space.
    #[error("configuration rejected: {0}")]
    Space(#[from] SpaceError),
    /// A generic element type has no binding.
    #[error("generic element type `{0}` is not bound")]
    UnboundGeneric(String),
    /// A binding names something that is not a generic of the kernel.
    #[error("binding for `{0}`, which is not a generic parameter of the kernel")]
    UnknownBinding(String),
    /// A generic is bound to a type that is not one of f32, f16, bf16.
    #[error("generic `{name}` is bound to {dtype}; `Float` generics take f32, f16 or bf16")]
    NotFloatBinding {
        /// Generic name.
        name: String,
        /// The offending type.
        dtype: DType,
    },
    /// A name cannot be used as a C++ identifier (or is reserved by the generator).
    #[error("`{name}` cannot be used in generated code: {why}")]
    BadName {
        /// The name.
        name: String,
        /// Why not.
        why: String,
    },
    /// A tuning parameter mixes value kinds or has a value the C++ template cannot take.
    #[error("tuning parameter `{name}`: {why}")]
    TuneParam {
        /// Parameter.
        name: String,
        /// What is wrong.
        why: String,
    },
    /// A scalar parameter of a type the ABI does not pass.
    #[error("scalar parameter `{param}` has type {dtype}; the kernel ABI passes f32, i32, i64 and bool scalars")]
    UnsupportedScalar {
        /// Parameter name.
        param: String,
        /// Its type.
        dtype: DType,
    },
    /// The block size of the plan is outside 32..=1024 or not a multiple of 32.
    #[error("{threads} threads per block: blocks have 32 to 1024 threads, a multiple of 32")]
    Threads {
        /// The planned thread count.
        threads: i64,
    },
    /// A size in the lowering plan could not be evaluated (missing value, overflow).
    #[error("cannot evaluate the lowering plan: {0}")]
    Eval(String),
    /// The IR uses something this lowering cannot express.
    #[error("unsupported by the CUDA lowering: {0}")]
    Unsupported(String),
    /// A variant's access classes are not ones the kernel has a variant for: only every
    /// tensor `General`, or `General` for none or exactly the tensors
    /// [`crate::general_operands`] names, and `Cols` only for the tensors
    /// [`crate::cols_operands`] names.
    #[error("kernel `{kernel}` has no variant for access classes {access} (Cols only for dot operand tiles kept out of registers, General only for every tensor or for every tensor beside such dot operands)")]
    Access {
        /// Kernel name.
        kernel: String,
        /// The classes asked for (`a=cols,b=rows,c=rows`).
        access: String,
    },
    /// `variant_source` was given a template that `generate` did not produce for this kernel.
    #[error("the template was not generated for kernel `{0}` (regenerate it with `generate`)")]
    TemplateMismatch(String),
}

fn render(d: &[Diagnostic]) -> String {
    d.iter()
        .map(|d| {
            if d.loc.line > 0 {
                format!("  line {}: {d}", d.loc.line)
            } else {
                format!("  {d}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
