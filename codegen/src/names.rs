//! C++ spellings: element types, shapes, identifiers and literals.

use crate::error::CodegenError;
use tilekit_ir::{DType, Dim, Elem, Shape};

/// C++ keywords and names the generated code or the prelude define, which user-chosen
/// names (tuning parameters, generics) must not take.
const RESERVED: &[&str] = &[
    "ALIGNED",
    "grid",
    "smem",
    "tk",
    "auto",
    "bool",
    "break",
    "case",
    "char",
    "class",
    "const",
    "constexpr",
    "continue",
    "default",
    "delete",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "false",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "new",
    "operator",
    "private",
    "public",
    "register",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "template",
    "this",
    "true",
    "typedef",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "while",
    "and",
    "or",
    "not",
    "xor",
    "namespace",
    "INFINITY",
    "NAN",
];

/// Checks that a user-chosen name can be a C++ template parameter.
pub(crate) fn check_ident(name: &str) -> Result<(), CodegenError> {
    let bad = |why: &str| {
        Err(CodegenError::BadName {
            name: name.to_string(),
            why: why.to_string(),
        })
    };
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return bad("not an ASCII identifier"),
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return bad("not an ASCII identifier");
    }
    if name.starts_with("TK_")
        || name.starts_with("tk_")
        || name.starts_with("__")
        || name.starts_with("tilekit")
    {
        return bad("the prefixes TK_, tk_, __ and tilekit are reserved for generated code");
    }
    if RESERVED.contains(&name) {
        return bad("it is a C++ keyword or a name used by generated code");
    }
    Ok(())
}

/// `[A-Za-z0-9_]` only, for names derived from user identifiers behind a fixed prefix.
pub(crate) fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The C++ storage type of a concrete element type.
pub(crate) fn dtype_ctype(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F16 => "__half",
        DType::BF16 => "__nv_bfloat16",
        DType::F64 => "double",
        DType::I32 => "int",
        DType::I64 => "long long",
        DType::Bool => "bool",
    }
}

/// The C++ type of an element type inside the template (generics are `typename` parameters).
pub(crate) fn elem_ctype(e: &Elem) -> String {
    match e {
        Elem::Concrete(d) => dtype_ctype(*d).to_string(),
        Elem::Generic(g) => g.clone(),
    }
}

/// A tile extent as a C++ constant expression.
pub(crate) fn dim_expr(d: &Dim) -> String {
    match d {
        Dim::Const(c) => format!("{c}"),
        Dim::Param(p) => p.clone(),
        Dim::Affine(a) => a.to_cpp(),
    }
}

/// `tk::shape<A, B>`.
pub(crate) fn shape_type(s: &Shape) -> String {
    let dims: Vec<String> = s.0.iter().map(dim_expr).collect();
    format!("tk::shape<{}>", dims.join(", "))
}

/// The C++ type of a value of element type `e` and shape `s` in layout `layout` (a
/// layout type name such as `TK_L`); scalars are plain C++ values.
pub(crate) fn value_type(e: &Elem, s: &Shape, layout: &str) -> String {
    if s.is_scalar() {
        elem_ctype(e)
    } else {
        format!("tk::rt<{}, {}, {layout}>", elem_ctype(e), shape_type(s))
    }
}

/// A double literal with exact round trip (`-inf`, `inf`, `nan` through bit patterns).
pub(crate) fn f64_literal(v: f64) -> String {
    if v.is_finite() {
        let s = format!("{v:?}");
        if s.contains('.') || s.contains('e') || s.contains("inf") {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        format!("__longlong_as_double(0x{:016x}ULL)", v.to_bits())
    }
}

/// An i64 literal (i64::MIN has no literal spelling).
pub(crate) fn i64_literal(v: i64) -> String {
    if v == i64::MIN {
        "(-9223372036854775807LL - 1)".to_string()
    } else {
        format!("{v}LL")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_round_trip() {
        assert_eq!(f64_literal(0.5), "0.5");
        assert_eq!(f64_literal(2.0), "2.0");
        assert_eq!(f64_literal(1e-5), "1e-5");
        assert_eq!(
            f64_literal(f64::NEG_INFINITY),
            "__longlong_as_double(0xfff0000000000000ULL)"
        );
        assert_eq!(i64_literal(i64::MIN), "(-9223372036854775807LL - 1)");
        assert_eq!(i64_literal(-3), "-3LL");
    }

    #[test]
    fn identifiers() {
        assert!(check_ident("BLOCK").is_ok());
        assert!(check_ident("TK_VEC").is_err());
        assert!(check_ident("int").is_err());
        assert!(check_ident("ALIGNED").is_err());
        assert!(check_ident("a-b").is_err());
        assert_eq!(sanitize("x\u{e9}y"), "x_y");
    }
}
