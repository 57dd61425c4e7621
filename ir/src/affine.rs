//! Linear expressions of tuning parameters: the tile extents and sub-tile offsets that are
//! neither a literal nor a single parameter (`BM + 2`, `2 * BK`, `BM / 2`).
//!
//! An [`Affine`] is `(c1 * P1 + c2 * P2 + .. + k) / den` with integer coefficients, kept in
//! one canonical form (terms sorted by name, no zero coefficient, `den > 0`, no common
//! factor of every coefficient, `k` and `den`), so two expressions that are equal as
//! functions of the parameters are equal as values: `(BM + 1) - 1` is `BM` again and
//! `2 * BM / 2` too. [`Affine::to_dim`] (in `shape.rs`, beside `Dim`) turns the canonical
//! form back into the plainest [`Dim`](crate::shape::Dim): a literal, a parameter, or
//! `Dim::Affine` only when neither fits, so shapes written as a literal or a parameter
//! serialise as they always did.
//!
//! A division is exact by definition: `BM / 2` is defined where `BM` is even; an extent
//! that does not divide in some configuration is refused (at `#[kernel]` time for every
//! configuration of the space, and at run time for a configuration given by hand).

use crate::space::{Space, TuneValue};
use serde::{Deserialize, Serialize};
use std::fmt;

/// `(sum of coef * param + constant) / den`, canonical (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Affine {
    /// `(parameter, coefficient)`, sorted by name, no zero coefficient.
    pub terms: Vec<(String, i64)>,
    /// The constant term.
    pub constant: i64,
    /// The divisor, positive.
    pub den: u64,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Affine {
    /// The constant `c`.
    pub fn constant(c: i64) -> Affine {
        Affine {
            terms: Vec::new(),
            constant: c,
            den: 1,
        }
    }

    /// The parameter `name`.
    pub fn param(name: &str) -> Affine {
        Affine {
            terms: vec![(name.to_string(), 1)],
            constant: 0,
            den: 1,
        }
    }

    /// The canonical form of `terms / den` (`None` on overflow or a zero divisor).
    fn canonical(terms: Vec<(String, i64)>, constant: i64, den: i64) -> Option<Affine> {
        if den == 0 {
            return None;
        }
        let mut terms: Vec<(String, i64)> = terms.into_iter().filter(|t| t.1 != 0).collect();
        terms.sort();
        let (mut constant, mut den) = (constant, den);
        if den < 0 {
            constant = constant.checked_neg()?;
            den = den.checked_neg()?;
            for t in &mut terms {
                t.1 = t.1.checked_neg()?;
            }
        }
        let g = terms
            .iter()
            .fold(gcd(constant.unsigned_abs(), den.unsigned_abs()), |g, t| {
                gcd(g, t.1.unsigned_abs())
            });
        let g = i64::try_from(g.max(1)).ok()?;
        for t in &mut terms {
            t.1 /= g;
        }
        Some(Affine {
            terms,
            constant: constant / g,
            den: u64::try_from(den / g).ok()?,
        })
    }

    /// `self + sign * other`.
    fn combine(&self, other: &Affine, sign: i64) -> Option<Affine> {
        let (d1, d2) = (
            i64::try_from(self.den).ok()?,
            i64::try_from(other.den).ok()?,
        );
        let mut terms: Vec<(String, i64)> = Vec::new();
        for (p, c) in &self.terms {
            terms.push((p.clone(), c.checked_mul(d2)?));
        }
        for (p, c) in &other.terms {
            let c = c.checked_mul(d1)?.checked_mul(sign)?;
            match terms.iter_mut().find(|t| &t.0 == p) {
                Some(t) => t.1 = t.1.checked_add(c)?,
                None => terms.push((p.clone(), c)),
            }
        }
        let constant = self
            .constant
            .checked_mul(d2)?
            .checked_add(other.constant.checked_mul(d1)?.checked_mul(sign)?)?;
        Affine::canonical(terms, constant, d1.checked_mul(d2)?)
    }

    /// `self + other` (`None` on overflow).
    pub fn add(&self, other: &Affine) -> Option<Affine> {
        self.combine(other, 1)
    }

    /// `self - other` (`None` on overflow).
    pub fn sub(&self, other: &Affine) -> Option<Affine> {
        self.combine(other, -1)
    }

    /// `self * k` (`None` on overflow).
    pub fn scale(&self, k: i64) -> Option<Affine> {
        let terms = self
            .terms
            .iter()
            .map(|(p, c)| Some((p.clone(), c.checked_mul(k)?)))
            .collect::<Option<Vec<_>>>()?;
        Affine::canonical(
            terms,
            self.constant.checked_mul(k)?,
            i64::try_from(self.den).ok()?,
        )
    }

    /// `self / k`, exact by definition (`None` for `k == 0` or on overflow).
    pub fn div(&self, k: i64) -> Option<Affine> {
        let den = i64::try_from(self.den).ok()?.checked_mul(k)?;
        Affine::canonical(self.terms.clone(), self.constant, den)
    }

    /// The constant value, when the expression reads no parameter and divides exactly.
    pub fn as_const(&self) -> Option<i64> {
        let den = i64::try_from(self.den).ok()?;
        (self.terms.is_empty() && self.constant % den == 0).then(|| self.constant / den)
    }

    /// The parameters it reads.
    pub fn params(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|(p, _)| p.as_str())
    }

    /// Its value under a lookup of parameter values: `Err` with the inexact quotient's
    /// numerator when the division leaves a remainder, `Ok(None)` when a parameter is
    /// missing or the arithmetic overflows.
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<i64>) -> Result<Option<i64>, i64> {
        let mut num = i128::from(self.constant);
        for (p, c) in &self.terms {
            let Some(v) = lookup(p) else {
                return Ok(None);
            };
            num += i128::from(*c) * i128::from(v);
        }
        let den = i128::from(self.den);
        if num % den != 0 {
            return Err(i64::try_from(num).unwrap_or(i64::MAX));
        }
        Ok(i64::try_from(num / den).ok())
    }

    /// The numerator as text, `cast` wrapping each parameter (`(long long)BM` in C++).
    fn numerator(&self, cast: &str) -> String {
        let mut s = String::new();
        for (p, c) in &self.terms {
            let (neg, a) = (*c < 0, c.unsigned_abs());
            if s.is_empty() {
                if neg {
                    s.push('-');
                }
            } else {
                s.push_str(if neg { " - " } else { " + " });
            }
            if a != 1 {
                s.push_str(&format!("{a} * "));
            }
            s.push_str(&format!("{cast}{p}"));
        }
        if self.constant != 0 || s.is_empty() {
            if s.is_empty() {
                s.push_str(&self.constant.to_string());
            } else {
                let op = if self.constant < 0 { " - " } else { " + " };
                s.push_str(&format!("{op}{}", self.constant.unsigned_abs()));
            }
        }
        s
    }

    /// A C++ constant expression over the template parameters (`((long long)BM + 2)`).
    pub fn to_cpp(&self) -> String {
        let n = self.numerator("(long long)");
        if self.den == 1 {
            format!("({n})")
        } else {
            format!("(({n}) / {})", self.den)
        }
    }
}

impl fmt::Display for Affine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.numerator("");
        if self.den == 1 {
            f.write_str(&n)
        } else if self.terms.len() + usize::from(self.constant != 0) > 1 {
            write!(f, "({n}) / {}", self.den)
        } else {
            write!(f, "{n} / {}", self.den)
        }
    }
}

/// The most value combinations [`check`] evaluates; beyond, the check is left to the
/// launch (which refuses a configuration whose extents are not positive integers).
pub const MAX_COMBINATIONS: usize = 4096;

/// What an expression must be in every configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// A tile extent: above 0.
    Positive,
    /// An offset: at least 0.
    NonNegative,
    /// A sub-tile's room (`tile extent - (offset + extent)`): at least 0.
    Fits,
}

/// Every combination of the integer values of `params` in `space` (`None` when a
/// parameter is missing or not an integer, or there are more than [`MAX_COMBINATIONS`]).
fn combinations(space: &Space, params: &[&str]) -> Option<Vec<Vec<(String, i64)>>> {
    let mut out: Vec<Vec<(String, i64)>> = vec![Vec::new()];
    for p in params {
        let values = &space.param(p)?.values;
        let mut next = Vec::with_capacity(out.len() * values.len());
        for partial in &out {
            for v in values {
                let TuneValue::Int(v) = v else {
                    return None;
                };
                let mut a = partial.clone();
                a.push((p.to_string(), *v));
                next.push(a);
            }
        }
        if next.len() > MAX_COMBINATIONS {
            return None;
        }
        out = next;
    }
    Some(out)
}

/// Whether `e` is an integer satisfying `bound` in every configuration of `space`
/// (evaluated over the values of the parameters it reads); the first failure as
/// "is not an integer (the division leaves a remainder) when BM = 96", to follow the
/// expression's description.
pub fn check(space: &Space, e: &Affine, bound: Bound) -> Result<(), String> {
    let params: Vec<&str> = e.params().collect();
    let Some(combos) = combinations(space, &params) else {
        return Ok(());
    };
    for a in combos {
        let look = |n: &str| a.iter().find(|(p, _)| p == n).map(|(_, v)| *v);
        let (failure, value) = match e.eval(&look) {
            Err(_) => (
                Some("is not an integer (the division leaves a remainder)"),
                None,
            ),
            Ok(Some(v)) => match bound {
                Bound::Positive if v <= 0 => (Some("is not positive"), Some(v)),
                Bound::NonNegative if v < 0 => (Some("is negative"), Some(v)),
                Bound::Fits if v < 0 => (Some("reaches past the tile"), Some(v)),
                _ => (None, None),
            },
            Ok(None) => (None, None),
        };
        if let Some(failure) = failure {
            let when: Vec<String> = a.iter().map(|(p, v)| format!("{p} = {v}")).collect();
            let value = value.map(|v| format!(" ({v})")).unwrap_or_default();
            return Err(format!("{failure}{value} when {}", when.join(", ")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: &str) -> Affine {
        Affine::param(n)
    }
    fn k(c: i64) -> Affine {
        Affine::constant(c)
    }

    #[test]
    fn displays_and_cpp() {
        let a = p("BM").add(&k(2)).unwrap();
        assert_eq!(a.to_string(), "BM + 2");
        assert_eq!(a.to_cpp(), "((long long)BM + 2)");
        let b = p("BN").sub(&k(1)).unwrap();
        assert_eq!(b.to_string(), "BN - 1");
        assert_eq!(p("BK").scale(2).unwrap().to_string(), "2 * BK");
        assert_eq!(p("BM").div(2).unwrap().to_string(), "BM / 2");
        assert_eq!(p("BM").div(2).unwrap().to_cpp(), "(((long long)BM) / 2)");
        let c = p("BM").add(&k(1)).unwrap().div(2).unwrap();
        assert_eq!(c.to_string(), "(BM + 1) / 2");
        assert_eq!(k(0).sub(&p("BM")).unwrap().to_string(), "-BM");
    }

    #[test]
    fn evaluates_exact_divisions_only() {
        let look = |n: &str| (n == "BM").then_some(64);
        assert_eq!(p("BM").div(2).unwrap().eval(&look), Ok(Some(32)));
        assert_eq!(p("BM").div(3).unwrap().eval(&look), Err(64));
        assert_eq!(p("BN").eval(&look), Ok(None));
        assert_eq!(p("BM").add(&k(2)).unwrap().eval(&look), Ok(Some(66)));
    }
}
