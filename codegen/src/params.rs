//! The template parameters of a generated kernel template and their values per variant.
//!
//! Order: every tuning parameter in declaration order (integers as `int`, switches as
//! `bool`, enumerations as `int` ids = the index of the value in the declaration), then one
//! `typename` per generic element type, then `bool ALIGNED` (no tensor outside
//! [`crate::general_operands`] is read `General`, see [`crate::access`]), then one `bool
//! TK_COLS_<param>` per tensor parameter that a variant may read column-major
//! ([`crate::cols_operands`]; none for most kernels), then one `bool TK_ALIGNED_<param>`
//! per tensor of [`crate::general_operands`] (the tensor is not `General`; none for most
//! kernels), then `int TK_VEC` (the vector width of the blocked layout, chosen by
//! [`crate::plan`]). Launch-only tuning names (`PAD64`, [`tilekit_ir::space::is_launch_only`])
//! are not template parameters.

use crate::access::{Access, AccessClass};
use crate::error::CodegenError;
use crate::names::{check_ident, dtype_ctype, sanitize};
use tilekit_ir::{Bindings, Config, DType, Kernel, TuneValue};

/// The template parameter that says whether parameter `i` (named `name`) is read
/// column-major: `TK_COLS_<name>`.
pub(crate) fn cols_param(name: &str) -> String {
    format!("TK_COLS_{}", sanitize(name))
}

/// The template parameter that says whether parameter `i` (named `name`), one of
/// [`crate::general_operands`], is aligned (not `General`): `TK_ALIGNED_<name>`.
pub(crate) fn aligned_param(name: &str) -> String {
    format!("TK_ALIGNED_{}", sanitize(name))
}

/// The parameters of `kernel` whose bit is set in `cols` (in declaration order).
fn cols_params(kernel: &Kernel, cols: u64) -> impl Iterator<Item = (usize, &str)> {
    kernel
        .params
        .iter()
        .enumerate()
        .take(64)
        .filter(move |(i, _)| cols >> i & 1 == 1)
        .map(|(i, p)| (i, p.name.as_str()))
}

/// What kind of C++ template parameter a tuning parameter becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TuneKind {
    /// `int NAME`.
    Int,
    /// `bool NAME`.
    Bool,
    /// `int NAME`, the index of the value; the names are listed in a comment.
    Enum(Vec<String>),
}

/// The kinds of every tuning parameter the code generator sees (launch-only names such as
/// `PAD64` are left out), validated.
pub(crate) fn tune_kinds(kernel: &Kernel) -> Result<Vec<(String, TuneKind)>, CodegenError> {
    let mut out = Vec::new();
    for p in &kernel.space.params {
        if tilekit_ir::space::is_launch_only(&p.name) {
            continue;
        }
        check_ident(&p.name)?;
        let err = |why: String| CodegenError::TuneParam {
            name: p.name.clone(),
            why,
        };
        let kind = if p.values.iter().all(|v| matches!(v, TuneValue::Int(_))) {
            for v in &p.values {
                if let TuneValue::Int(i) = v {
                    if i32::try_from(*i).is_err() {
                        return Err(err(format!(
                            "value {i} does not fit a 32-bit template parameter"
                        )));
                    }
                }
            }
            TuneKind::Int
        } else if p.values.iter().all(|v| matches!(v, TuneValue::Bool(_))) {
            TuneKind::Bool
        } else if p.values.iter().all(|v| matches!(v, TuneValue::Enum(_))) {
            TuneKind::Enum(p.values.iter().map(|v| v.to_string()).collect())
        } else {
            return Err(err("its values mix integers, switches and names".into()));
        };
        out.push((p.name.clone(), kind));
    }
    for g in &kernel.generics {
        check_ident(g)?;
        if kernel.space.param(g).is_some() {
            return Err(CodegenError::BadName {
                name: g.clone(),
                why: "it names both a generic and a tuning parameter".into(),
            });
        }
    }
    Ok(out)
}

/// The template parameter list `template <...>` of the generated struct; `cols`: the
/// parameters that may be read column-major ([`crate::layout::Layouts::cols`]); `general`:
/// those that may be `General` alone ([`crate::layout::Layouts::general`]).
pub(crate) fn declaration(
    kernel: &Kernel,
    cols: u64,
    general: u64,
) -> Result<String, CodegenError> {
    let mut parts = Vec::new();
    for (name, kind) in tune_kinds(kernel)? {
        parts.push(match kind {
            TuneKind::Int => format!("int {name}"),
            TuneKind::Bool => format!("bool {name}"),
            TuneKind::Enum(vals) => {
                let ids: Vec<String> = vals
                    .iter()
                    .enumerate()
                    .map(|(i, v)| format!("{i}={v}"))
                    .collect();
                format!("int {name} /* {} */", ids.join(", "))
            }
        });
    }
    for g in &kernel.generics {
        parts.push(format!("typename {g}"));
    }
    parts.push("bool ALIGNED".into());
    for (_, name) in cols_params(kernel, cols) {
        parts.push(format!("bool {}", cols_param(name)));
    }
    for (_, name) in cols_params(kernel, general) {
        parts.push(format!("bool {}", aligned_param(name)));
    }
    parts.push("int TK_VEC".into());
    Ok(parts.join(", "))
}

/// Checks that `bindings` binds exactly the kernel's generics, each to f32, f16 or bf16.
pub(crate) fn check_bindings(kernel: &Kernel, bindings: &Bindings) -> Result<(), CodegenError> {
    for name in bindings.0.keys() {
        if !kernel.generics.contains(name) {
            return Err(CodegenError::UnknownBinding(name.clone()));
        }
    }
    for g in &kernel.generics {
        let d = bindings
            .get(g)
            .ok_or_else(|| CodegenError::UnboundGeneric(g.clone()))?;
        if !DType::FLOATS.contains(&d) {
            return Err(CodegenError::NotFloatBinding {
                name: g.clone(),
                dtype: d,
            });
        }
    }
    Ok(())
}

/// The template argument list of one variant. `config` must be validated (canonical order);
/// its launch-only values (`PAD64`) are skipped. `cols` and `general` as for
/// [`declaration`]. `access` must be one the template has a variant for:
/// [`Access::GENERAL`], or `General` only for all of `general` or none, and `Cols` only
/// among `cols`.
pub(crate) fn arguments(
    kernel: &Kernel,
    config: &Config,
    bindings: &Bindings,
    access: Access,
    (cols, general): (u64, u64),
    vec: u32,
) -> Result<String, CodegenError> {
    let tensors = crate::access::tensor_params(kernel);
    let gen = access.general() & tensors;
    let valid = access == Access::GENERAL
        || ((gen == 0 || (general != 0 && gen == general)) && access.cols() & !cols == 0);
    if !valid {
        return Err(CodegenError::Access {
            kernel: kernel.name.clone(),
            access: access.describe(kernel),
        });
    }
    let mut parts = Vec::new();
    let values = config
        .values
        .iter()
        .filter(|(n, _)| !tilekit_ir::space::is_launch_only(n));
    for ((name, kind), (cname, value)) in tune_kinds(kernel)?.iter().zip(values) {
        let mismatch = || CodegenError::TuneParam {
            name: name.clone(),
            why: format!("unexpected value `{value}`"),
        };
        if name != cname {
            return Err(mismatch());
        }
        parts.push(match (kind, value) {
            (TuneKind::Int, TuneValue::Int(i)) => i.to_string(),
            (TuneKind::Bool, TuneValue::Bool(b)) => b.to_string(),
            (TuneKind::Enum(vals), TuneValue::Enum(e)) => vals
                .iter()
                .position(|v| v == e)
                .ok_or_else(mismatch)?
                .to_string(),
            _ => return Err(mismatch()),
        });
    }
    for g in &kernel.generics {
        let d = bindings
            .get(g)
            .ok_or_else(|| CodegenError::UnboundGeneric(g.clone()))?;
        parts.push(dtype_ctype(d).to_string());
    }
    parts.push(access.aligned_outside(general).to_string());
    for (i, _) in cols_params(kernel, cols) {
        parts.push((access.class(i) == AccessClass::Cols).to_string());
    }
    for (i, _) in cols_params(kernel, general) {
        parts.push((access.class(i) != AccessClass::General).to_string());
    }
    parts.push(vec.to_string());
    Ok(parts.join(", "))
}
