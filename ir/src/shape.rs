//! Tile shapes: dimensions are literals, tuning parameters or linear expressions of them
//! ([`Affine`]), never run-time values.

use crate::affine::Affine;
use serde::{Deserialize, Serialize};
use std::fmt;

/// One dimension of a tile shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Dim {
    /// A literal extent.
    Const(u64),
    /// A tuning parameter (`BLOCK`, `BM`), fixed per configuration.
    Param(String),
    /// A linear expression of tuning parameters (`BM + 2`, `BM / 2`), canonical and never
    /// one that a literal or a single parameter expresses (build it with
    /// [`Affine::to_dim`]), so the two forms above serialise as they always did.
    Affine(Affine),
}

impl Dim {
    /// Shorthand for [`Dim::Param`].
    pub fn param(name: &str) -> Dim {
        Dim::Param(name.to_string())
    }

    /// The extent under a configuration lookup.
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<i64>) -> Option<u64> {
        match self {
            Dim::Const(c) => Some(*c),
            Dim::Param(p) => lookup(p).and_then(|v| u64::try_from(v).ok()),
            Dim::Affine(a) => a
                .eval(lookup)
                .ok()
                .flatten()
                .and_then(|v| u64::try_from(v).ok()),
        }
    }

    /// The tuning parameters it reads.
    pub fn params(&self) -> Vec<&str> {
        match self {
            Dim::Const(_) => Vec::new(),
            Dim::Param(p) => vec![p.as_str()],
            Dim::Affine(a) => a.params().collect(),
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Const(c) => write!(f, "{c}"),
            Dim::Param(p) => f.write_str(p),
            Dim::Affine(a) => write!(f, "{a}"),
        }
    }
}

/// A tile shape; rank 0 is a scalar.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Shape(pub Vec<Dim>);

impl Shape {
    /// A shape from its dimensions.
    pub fn new(dims: Vec<Dim>) -> Shape {
        Shape(dims)
    }

    /// The rank-0 shape of a scalar.
    pub fn scalar() -> Shape {
        Shape(Vec::new())
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// True for rank 0.
    pub fn is_scalar(&self) -> bool {
        self.0.is_empty()
    }

    /// Numpy-style broadcast: shapes are aligned on the right; two dimensions agree when they
    /// are equal or one of them is the literal 1. Dimensions are compared symbolically, so
    /// `BM` and `BN` never broadcast, whatever values a configuration gives them.
    ///
    /// ```
    /// use tilekit_ir::{Dim, Shape};
    /// let a = Shape::new(vec![Dim::param("BM"), Dim::param("BN")]);
    /// let b = Shape::new(vec![Dim::param("BM")]);
    /// assert!(a.broadcast(&b).is_none());
    /// ```
    pub fn broadcast(&self, other: &Shape) -> Option<Shape> {
        let n = self.rank().max(other.rank());
        let mut dims = Vec::with_capacity(n);
        for i in 0..n {
            let a = self.0.len().checked_sub(n - i).map(|j| &self.0[j]);
            let b = other.0.len().checked_sub(n - i).map(|j| &other.0[j]);
            let d = match (a, b) {
                (Some(a), None) => a.clone(),
                (None, Some(b)) => b.clone(),
                (Some(a), Some(b)) if a == b => a.clone(),
                (Some(Dim::Const(1)), Some(b)) => b.clone(),
                (Some(a), Some(Dim::Const(1))) => a.clone(),
                _ => return None,
            };
            dims.push(d);
        }
        Some(Shape(dims))
    }

    /// Concrete extents under a configuration lookup.
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<i64>) -> Option<Vec<u64>> {
        self.0.iter().map(|d| d.eval(lookup)).collect()
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|d| d.to_string()).collect();
        write!(f, "[{}]", parts.join(", "))
    }
}

/// The conversions between [`Dim`] and [`Affine`] live beside `Dim`, so that `affine` is a
/// leaf the shape module builds on.
impl Affine {
    /// A dimension as an expression.
    pub fn of_dim(d: &Dim) -> Affine {
        match d {
            Dim::Const(c) => Affine::constant(i64::try_from(*c).unwrap_or(i64::MAX)),
            Dim::Param(p) => Affine::param(p),
            Dim::Affine(a) => a.clone(),
        }
    }

    /// The plainest dimension for this expression: a non-negative literal, a parameter,
    /// else [`Dim::Affine`].
    pub fn to_dim(&self) -> Dim {
        if let Some(c) = self.as_const() {
            if let Ok(c) = u64::try_from(c) {
                return Dim::Const(c);
            }
        }
        match self.terms.as_slice() {
            [(p, 1)] if self.constant == 0 && self.den == 1 => Dim::Param(p.clone()),
            _ => Dim::Affine(self.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn normalises_to_the_plainest_dim() {
        let bm1 = Affine::param("BM").add(&Affine::constant(1)).unwrap();
        assert_eq!(
            bm1.sub(&Affine::constant(1)).unwrap().to_dim(),
            Dim::param("BM")
        );
        assert_eq!(
            Affine::param("BM")
                .scale(2)
                .unwrap()
                .div(2)
                .unwrap()
                .to_dim(),
            Dim::param("BM")
        );
        assert_eq!(
            Affine::constant(3)
                .add(&Affine::constant(4))
                .unwrap()
                .to_dim(),
            Dim::Const(7)
        );
        assert_eq!(
            Affine::param("BM")
                .sub(&Affine::param("BM"))
                .unwrap()
                .to_dim(),
            Dim::Const(0)
        );
        // Order of terms does not matter.
        let a = Affine::param("BM").add(&Affine::param("BN")).unwrap();
        let b = Affine::param("BN").add(&Affine::param("BM")).unwrap();
        assert_eq!(a, b);
        // (BM + 2) / 2 == BM / 2 + 1
        let x = Affine::param("BM")
            .add(&Affine::constant(2))
            .unwrap()
            .div(2)
            .unwrap();
        let y = Affine::param("BM")
            .div(2)
            .unwrap()
            .add(&Affine::constant(1))
            .unwrap();
        assert_eq!(x, y);
        assert!(matches!(x.to_dim(), Dim::Affine(_)));
    }

    use super::*;

    fn s(dims: &[&str]) -> Shape {
        Shape(
            dims.iter()
                .map(|d| {
                    d.parse::<u64>()
                        .map(Dim::Const)
                        .unwrap_or_else(|_| Dim::param(d))
                })
                .collect(),
        )
    }

    #[test]
    fn broadcast_rules() {
        assert_eq!(
            s(&["BM", "1"]).broadcast(&s(&["BN"])),
            Some(s(&["BM", "BN"]))
        );
        assert_eq!(s(&[]).broadcast(&s(&["BLOCK"])), Some(s(&["BLOCK"])));
        assert_eq!(
            s(&["4", "BN"]).broadcast(&s(&["1", "BN"])),
            Some(s(&["4", "BN"]))
        );
        assert_eq!(s(&["BM"]).broadcast(&s(&["BN"])), None);
        assert_eq!(s(&["3"]).broadcast(&s(&["4"])), None);
    }
}
