//! Element types: concrete [`DType`]s and the generic [`Elem`] a kernel is written with.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A concrete element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE binary64 (CPU reference only).
    F64,
    /// 32-bit signed integer.
    I32,
    /// 64-bit signed integer.
    I64,
    /// Boolean (masks).
    Bool,
}

impl DType {
    /// The floating-point types a generic `T: Float` is instantiated with.
    pub const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

    /// Bytes per element as stored in device memory.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::DType::F16.size_bytes(), 2);
    /// ```
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::F64 | DType::I64 => 8,
            DType::Bool => 1,
        }
    }

    /// True for floating-point types.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16 | DType::F64)
    }

    /// True for integer types.
    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::I64)
    }

    /// The Rust spelling (`f32`, `bf16`, ...).
    pub fn rust_name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::Bool => "bool",
        }
    }

    /// Parses the Rust spelling.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::DType::parse("bf16"), Some(tilekit_ir::DType::BF16));
    /// ```
    pub fn parse(s: &str) -> Option<DType> {
        Some(match s {
            "f32" => DType::F32,
            "f16" => DType::F16,
            "bf16" => DType::BF16,
            "f64" => DType::F64,
            "i32" => DType::I32,
            "i64" | "usize" | "isize" => DType::I64,
            "bool" => DType::Bool,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rust_name())
    }
}

/// An element type as written in a kernel: a concrete type or a generic parameter such as `T`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Elem {
    /// A concrete type.
    Concrete(DType),
    /// A generic parameter of the kernel (`T: Float`), bound per instantiation.
    Generic(String),
}

impl Elem {
    /// Shorthand for a concrete element type.
    pub fn of(d: DType) -> Elem {
        Elem::Concrete(d)
    }

    /// The concrete type under `bindings`, if bound.
    pub fn resolve(&self, bindings: &Bindings) -> Option<DType> {
        match self {
            Elem::Concrete(d) => Some(*d),
            Elem::Generic(n) => bindings.get(n),
        }
    }

    /// True if the type is (or, being generic over `Float`, always is) floating point.
    pub fn is_float(&self) -> bool {
        match self {
            Elem::Concrete(d) => d.is_float(),
            Elem::Generic(_) => true,
        }
    }

    /// True for concrete integer types.
    pub fn is_int(&self) -> bool {
        matches!(self, Elem::Concrete(d) if d.is_int())
    }

    /// True for `bool`.
    pub fn is_bool(&self) -> bool {
        matches!(self, Elem::Concrete(DType::Bool))
    }
}

impl fmt::Display for Elem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Elem::Concrete(d) => write!(f, "{d}"),
            Elem::Generic(n) => f.write_str(n),
        }
    }
}

/// The concrete types bound to a kernel's generic parameters for one instantiation.
///
/// ```
/// use tilekit_ir::{Bindings, DType, Elem};
/// let b = Bindings::single("T", DType::BF16);
/// assert_eq!(Elem::Generic("T".into()).resolve(&b), Some(DType::BF16));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Bindings(pub BTreeMap<String, DType>);

impl Bindings {
    /// One generic bound to one type.
    pub fn single(name: &str, d: DType) -> Bindings {
        let mut m = BTreeMap::new();
        m.insert(name.to_string(), d);
        Bindings(m)
    }

    /// The type bound to `name`.
    pub fn get(&self, name: &str) -> Option<DType> {
        self.0.get(name).copied()
    }

    /// Every combination of `generics` over the float types (the instantiations of a kernel).
    pub fn all_float(generics: &[String]) -> Vec<Bindings> {
        let mut out = vec![Bindings::default()];
        for g in generics {
            let mut next = Vec::new();
            for b in &out {
                for d in DType::FLOATS {
                    let mut nb = b.clone();
                    nb.0.insert(g.clone(), d);
                    next.push(nb);
                }
            }
            out = next;
        }
        out
    }
}

impl fmt::Display for Bindings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&parts.join(","))
    }
}
