//! Elementwise ops: unary math, binary arithmetic with broadcasting, comparisons, `where_`.
//!
//! Float math is computed in f32 (f64 in exact mode) and rounded to the result's dtype
//! after every op; integer arithmetic wraps to the result's width; `/` and `%` truncate
//! toward zero.

use super::tile::{adopt, broadcast_shape, round, source, wrap, Data, Tile};
use tilekit_ir::{BinOp, CmpOp, DType, UnaryOp};

/// Rounds a float result unless it is weak or the mode is exact.
fn finish(dtype: DType, weak: bool, exact: bool, v: Vec<f64>) -> Data {
    if weak || exact {
        Data::F(v)
    } else {
        Data::F(v.into_iter().map(|x| round(dtype, x)).collect())
    }
}

/// A unary op in the precision of `F` (f32 as the GPU computes it, or f64), with its
/// constants rounded to `F` (`c(v)`).
fn unary_in<F>(op: UnaryOp, x: F, c: impl Fn(f64) -> F) -> F
where
    F: Copy
        + std::ops::Neg<Output = F>
        + std::ops::Add<Output = F>
        + std::ops::Mul<Output = F>
        + std::ops::Div<Output = F>,
    F: Real,
{
    let one = c(1.0);
    match op {
        UnaryOp::Neg => -x,
        UnaryOp::Not => x,
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Rsqrt => one / x.sqrt(),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Sigmoid => one / (one + (-x).exp()),
        UnaryOp::Abs => x.abs(),
        UnaryOp::Gelu => {
            c(0.5) * x * (one + (c(0.797_884_560_802_865_4) * (x + c(0.044715) * x * x * x)).tanh())
        }
        UnaryOp::Erf => x.erf(),
        UnaryOp::Relu => x.max(c(0.0)),
        UnaryOp::Exp2 => x.exp2(),
        UnaryOp::Log2 => x.log2(),
        UnaryOp::Log1p => x.ln_1p(),
        UnaryOp::Expm1 => x.exp_m1(),
        UnaryOp::Floor => x.floor(),
        UnaryOp::Ceil => x.ceil(),
        UnaryOp::Round => x.round(),
    }
}

/// The functions `unary_in` needs, for f32 and f64.
trait Real: Sized {
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn abs(self) -> Self;
    fn max(self, other: Self) -> Self;
    /// The error function (libm's `erff`/`erf`: std has none on stable).
    fn erf(self) -> Self;
    fn exp2(self) -> Self;
    fn log2(self) -> Self;
    fn ln_1p(self) -> Self;
    fn exp_m1(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    /// Halfway cases away from zero (C's `roundf`).
    fn round(self) -> Self;
}

macro_rules! real {
    ($t:ty, $erf:path, $exp2:path) => {
        impl Real for $t {
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn max(self, other: Self) -> Self {
                <$t>::max(self, other)
            }
            fn erf(self) -> Self {
                $erf(self)
            }
            fn exp2(self) -> Self {
                $exp2(self)
            }
            fn log2(self) -> Self {
                <$t>::log2(self)
            }
            fn ln_1p(self) -> Self {
                <$t>::ln_1p(self)
            }
            fn exp_m1(self) -> Self {
                <$t>::exp_m1(self)
            }
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            fn round(self) -> Self {
                <$t>::round(self)
            }
        }
    };
}
real!(f32, libm::erff, exp2_ftz);
real!(f64, libm::erf, f64::exp2);

/// `exp2` in f32 as the CUDA backend computes it (`ex2.approx.ftz.f32`, MUFU.EX2): results
/// below the smallest normal f32 (2^-126) flush to zero, as does a subnormal argument's
/// (2^x of a subnormal x is 1 either way). Exact mode (f64) keeps libm's `exp2`.
fn exp2_ftz(x: f32) -> f32 {
    let y = x.exp2();
    if y < f32::MIN_POSITIVE {
        0.0
    } else {
        y
    }
}

/// A unary op; the result has the operand's dtype.
pub(crate) fn unary(op: UnaryOp, x: &Tile, exact: bool) -> Result<Tile, String> {
    let data = match (&x.data, op) {
        (Data::F(v), _) if exact || x.weak || x.dtype == DType::F64 => finish(
            x.dtype,
            x.weak,
            exact,
            v.iter().map(|&a| unary_in(op, a, |c| c)).collect(),
        ),
        (Data::F(v), _) => finish(
            x.dtype,
            false,
            false,
            v.iter()
                .map(|&a| f64::from(unary_in(op, a as f32, |c| c as f32)))
                .collect(),
        ),
        (Data::I(v), UnaryOp::Neg) => {
            Data::I(v.iter().map(|&a| wrap(x.dtype, a.wrapping_neg())).collect())
        }
        (Data::I(v), UnaryOp::Abs) => {
            Data::I(v.iter().map(|&a| wrap(x.dtype, a.wrapping_abs())).collect())
        }
        (Data::I(v), UnaryOp::Relu) => Data::I(v.iter().map(|&a| a.max(0)).collect()),
        (Data::B(v), UnaryOp::Not) => Data::B(v.iter().map(|&a| !a).collect()),
        _ => {
            return Err(format!(
                "malformed IR: `{}` of a {} tile",
                op.name(),
                x.dtype
            ))
        }
    };
    Ok(Tile {
        dtype: x.dtype,
        weak: x.weak,
        shape: x.shape.clone(),
        data,
    })
}

/// Brings two operands to one type: a weak operand adopts the strong one's dtype.
fn unify(a: &Tile, b: &Tile, exact: bool) -> (Tile, Tile) {
    match (a.weak, b.weak) {
        (true, false) => (adopt(a, b.dtype, exact), b.clone()),
        (false, true) => (a.clone(), adopt(b, a.dtype, exact)),
        _ => (a.clone(), b.clone()),
    }
}

fn int_op(op: BinOp, x: i64, y: i64) -> Result<i64, String> {
    Ok(match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::Div | BinOp::Rem if y == 0 => return Err("integer division by zero".into()),
        BinOp::Div => x.wrapping_div(y),
        BinOp::Rem => x.wrapping_rem(y),
        BinOp::Max => x.max(y),
        BinOp::Min => x.min(y),
        BinOp::And | BinOp::Or => return Err("malformed IR: `&`/`|` of integers".into()),
        BinOp::Pow | BinOp::Atan2 | BinOp::Powi => {
            return Err(format!("malformed IR: `{}` of integers", op.name()))
        }
    })
}

fn float_op(op: BinOp, x: f64, y: f64) -> f64 {
    match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Rem => x % y,
        BinOp::Max => x.max(y),
        BinOp::Min => x.min(y),
        BinOp::Pow | BinOp::Powi => x.powf(y),
        BinOp::Atan2 => x.atan2(y),
        BinOp::And | BinOp::Or => f64::NAN,
    }
}

/// `pow` and `atan2` in f32, as the GPU computes them for f32, f16 and bf16 (C's `powf`,
/// `atan2f`; the other binary ops are exact in f64 before the rounding to the result).
fn float_math_f32(op: BinOp, x: f64, y: f64) -> f64 {
    let (x, y) = (x as f32, y as f32);
    f64::from(match op {
        BinOp::Atan2 => x.atan2(y),
        _ => x.powf(y),
    })
}

/// `powi(a, n)`: float `a` to the integer power `n`, as `pow(a, n)` with `n` converted to
/// the compute type (f32, or f64 in exact mode and for a weak base); `a`'s dtype.
fn powi(a: &Tile, n: &Tile, dtype: DType, exact: bool) -> Result<Tile, String> {
    let a = if a.weak {
        a.clone()
    } else {
        adopt(a, dtype, exact)
    };
    let (Data::F(x), Data::I(k)) = (&a.data, &n.data) else {
        return Err(format!(
            "malformed IR: `powi` of {} to a {} power",
            a.dtype, n.dtype
        ));
    };
    let shape = broadcast_shape(&a.shape, &n.shape)?;
    let (sa, sn) = (source(&a.shape, &shape)?, source(&n.shape, &shape)?);
    let len: usize = shape.iter().product();
    let wide = a.weak || exact || dtype == DType::F64;
    let v = (0..len)
        .map(|i| {
            let (b, e) = (x[sa.at(i)], k[sn.at(i)]);
            if wide {
                b.powf(e as f64)
            } else {
                f64::from((b as f32).powf(e as f32))
            }
        })
        .collect();
    Ok(Tile {
        dtype: if a.weak { a.dtype } else { dtype },
        weak: a.weak,
        shape,
        data: finish(dtype, a.weak, exact, v),
    })
}

/// `fma(a, b, c)` with broadcasting: `a * b + c` rounded once (f32's `mul_add`, as CUDA's
/// `fmaf`; f64 in exact mode), then to `dtype`.
pub(crate) fn fma(a: &Tile, b: &Tile, c: &Tile, dtype: DType, exact: bool) -> Result<Tile, String> {
    let weak = a.weak && b.weak && c.weak;
    let (a, b, c) = if weak {
        (a.clone(), b.clone(), c.clone())
    } else {
        (
            adopt(a, dtype, exact),
            adopt(b, dtype, exact),
            adopt(c, dtype, exact),
        )
    };
    let shape = broadcast_shape(&broadcast_shape(&a.shape, &b.shape)?, &c.shape)?;
    let (sa, sb, sc) = (
        source(&a.shape, &shape)?,
        source(&b.shape, &shape)?,
        source(&c.shape, &shape)?,
    );
    let (Data::F(x), Data::F(y), Data::F(z)) = (&a.data, &b.data, &c.data) else {
        return Err(format!("malformed IR: `fma` of {} values", a.dtype));
    };
    let wide = weak || exact || dtype == DType::F64;
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| {
            let (p, q, r) = (x[sa.at(i)], y[sb.at(i)], z[sc.at(i)]);
            if wide {
                p.mul_add(q, r)
            } else {
                f64::from((p as f32).mul_add(q as f32, r as f32))
            }
        })
        .collect();
    Ok(Tile {
        dtype: if weak { a.dtype } else { dtype },
        weak,
        shape,
        data: finish(dtype, weak, exact, v),
    })
}

/// The random stream of `stochastic_round`: SplitMix64's finalizer of `seed` times the
/// golden-ratio increment plus `index` (wrapping), as the prelude's
/// `tk::detail::stochastic_bits` computes it.
pub(crate) fn stochastic_bits(seed: i64, index: i64) -> u64 {
    let mut z = (seed as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(index as u64);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `x` (an f32) rounded to bf16 stochastically with the random stream's element `(seed,
/// index)`: its top 16 bits added to the 16 bits below bf16's precision, then truncated;
/// infinities and NaN rounded to nearest.
pub(crate) fn stochastic_round_bf16(x: f32, seed: i64, index: i64) -> f32 {
    let b = x.to_bits();
    if b & 0x7f80_0000 == 0x7f80_0000 {
        return half::bf16::from_f32(x).to_f32();
    }
    let r = (stochastic_bits(seed, index) >> 48) as u32;
    f32::from_bits(b.wrapping_add(r) & 0xffff_0000)
}

/// `stochastic_round(x, seed, index)`: bf16 of the broadcast shape of `x` and `index`
/// (`seed` a scalar). In exact mode the values are not rounded (the expectation).
pub(crate) fn stochastic_round(
    x: &Tile,
    seed: &Tile,
    index: &Tile,
    exact: bool,
) -> Result<Tile, String> {
    let shape = broadcast_shape(&x.shape, &index.shape)?;
    let (sx, si) = (source(&x.shape, &shape)?, source(&index.shape, &shape)?);
    let (Data::F(xv), Data::I(sv), Data::I(iv)) = (&x.data, &seed.data, &index.data) else {
        return Err(
            "malformed IR: `stochastic_round` of a non-float value or a non-integer seed or index"
                .into(),
        );
    };
    let Some(&s) = sv.first() else {
        return Err("malformed IR: `stochastic_round` without a seed".into());
    };
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| {
            let xi = xv[sx.at(i)];
            if exact {
                xi
            } else {
                f64::from(stochastic_round_bf16(xi as f32, s, iv[si.at(i)]))
            }
        })
        .collect();
    Ok(Tile {
        dtype: DType::BF16,
        weak: false,
        shape,
        data: Data::F(v),
    })
}

/// A binary op with broadcasting. `dtype` is the result's (inferred) element type; the
/// result is weak only if both operands are.
pub(crate) fn binary(
    op: BinOp,
    a: &Tile,
    b: &Tile,
    dtype: DType,
    exact: bool,
) -> Result<Tile, String> {
    if op == BinOp::Powi {
        return powi(a, b, dtype, exact);
    }
    let weak = a.weak && b.weak;
    let (a, b) = if weak {
        (a.clone(), b.clone())
    } else {
        (adopt(a, dtype, exact), adopt(b, dtype, exact))
    };
    let shape = broadcast_shape(&a.shape, &b.shape)?;
    let (sa, sb) = (source(&a.shape, &shape)?, source(&b.shape, &shape)?);
    let n: usize = shape.iter().product();
    let data = match (&a.data, &b.data) {
        (Data::F(x), Data::F(y)) => {
            if op.is_logical() {
                return Err(format!("malformed IR: `{}` of floats", op.name()));
            }
            let in_f32 = op.is_float_math() && !(weak || exact || dtype == DType::F64);
            finish(
                dtype,
                weak,
                exact,
                (0..n)
                    .map(|i| {
                        let (p, q) = (x[sa.at(i)], y[sb.at(i)]);
                        if in_f32 {
                            float_math_f32(op, p, q)
                        } else {
                            float_op(op, p, q)
                        }
                    })
                    .collect(),
            )
        }
        // Two weak literals of different kinds: compute in f64.
        (Data::F(x), Data::I(y)) => Data::F(
            (0..n)
                .map(|i| float_op(op, x[sa.at(i)], y[sb.at(i)] as f64))
                .collect(),
        ),
        (Data::I(x), Data::F(y)) => Data::F(
            (0..n)
                .map(|i| float_op(op, x[sa.at(i)] as f64, y[sb.at(i)]))
                .collect(),
        ),
        (Data::I(x), Data::I(y)) => {
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                out.push(wrap(dtype, int_op(op, x[sa.at(i)], y[sb.at(i)])?));
            }
            Data::I(out)
        }
        (Data::B(x), Data::B(y)) => match op {
            BinOp::And => Data::B((0..n).map(|i| x[sa.at(i)] & y[sb.at(i)]).collect()),
            BinOp::Or => Data::B((0..n).map(|i| x[sa.at(i)] | y[sb.at(i)]).collect()),
            _ => return Err(format!("malformed IR: `{}` of masks", op.name())),
        },
        _ => {
            return Err(format!(
                "malformed IR: `{}` between {} and {}",
                op.name(),
                a.dtype,
                b.dtype
            ))
        }
    };
    Ok(Tile {
        dtype,
        weak,
        shape,
        data,
    })
}

fn cmp<T: PartialOrd>(op: CmpOp, x: T, y: T) -> bool {
    match op {
        CmpOp::Lt => x < y,
        CmpOp::Le => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::Ge => x >= y,
        CmpOp::Eq => x == y,
        CmpOp::Ne => x != y,
    }
}

/// A comparison with broadcasting, giving a mask.
pub(crate) fn compare(op: CmpOp, a: &Tile, b: &Tile, exact: bool) -> Result<Tile, String> {
    let (a, b) = unify(a, b, exact);
    let shape = broadcast_shape(&a.shape, &b.shape)?;
    let (sa, sb) = (source(&a.shape, &shape)?, source(&b.shape, &shape)?);
    let n: usize = shape.iter().product();
    let out: Vec<bool> = match (&a.data, &b.data) {
        (Data::F(x), Data::F(y)) => (0..n).map(|i| cmp(op, x[sa.at(i)], y[sb.at(i)])).collect(),
        (Data::I(x), Data::I(y)) => (0..n).map(|i| cmp(op, x[sa.at(i)], y[sb.at(i)])).collect(),
        (Data::F(x), Data::I(y)) => (0..n)
            .map(|i| cmp(op, x[sa.at(i)], y[sb.at(i)] as f64))
            .collect(),
        (Data::I(x), Data::F(y)) => (0..n)
            .map(|i| cmp(op, x[sa.at(i)] as f64, y[sb.at(i)]))
            .collect(),
        (Data::B(x), Data::B(y)) => (0..n).map(|i| cmp(op, x[sa.at(i)], y[sb.at(i)])).collect(),
        _ => {
            return Err(format!(
                "malformed IR: `{}` between {} and {}",
                op.symbol(),
                a.dtype,
                b.dtype
            ))
        }
    };
    Ok(Tile::new(DType::Bool, shape, Data::B(out)))
}

/// `where_(cond, a, b)` with broadcasting; `dtype` is the result's element type.
pub(crate) fn select(
    cond: &Tile,
    a: &Tile,
    b: &Tile,
    dtype: DType,
    exact: bool,
) -> Result<Tile, String> {
    let weak = a.weak && b.weak;
    let (a, b) = if weak {
        unify(a, b, exact)
    } else {
        (adopt(a, dtype, exact), adopt(b, dtype, exact))
    };
    let Data::B(c) = &cond.data else {
        return Err("malformed IR: the condition of `where_` is not a mask".into());
    };
    let shape = broadcast_shape(&cond.shape, &broadcast_shape(&a.shape, &b.shape)?)?;
    let (sc, sa, sb) = (
        source(&cond.shape, &shape)?,
        source(&a.shape, &shape)?,
        source(&b.shape, &shape)?,
    );
    let n: usize = shape.iter().product();
    let pick = |i: usize| c[sc.at(i)];
    let data = match (&a.data, &b.data) {
        (Data::F(x), Data::F(y)) => Data::F(
            (0..n)
                .map(|i| if pick(i) { x[sa.at(i)] } else { y[sb.at(i)] })
                .collect(),
        ),
        (Data::I(x), Data::I(y)) => Data::I(
            (0..n)
                .map(|i| if pick(i) { x[sa.at(i)] } else { y[sb.at(i)] })
                .collect(),
        ),
        (Data::B(x), Data::B(y)) => Data::B(
            (0..n)
                .map(|i| if pick(i) { x[sa.at(i)] } else { y[sb.at(i)] })
                .collect(),
        ),
        _ => {
            return Err(format!(
                "malformed IR: `where_` between {} and {}",
                a.dtype, b.dtype
            ))
        }
    };
    Ok(Tile {
        dtype: if weak { a.dtype } else { dtype },
        weak,
        shape,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(dtype: DType, v: Vec<f64>) -> Tile {
        Tile::new(dtype, vec![v.len()], Data::F(v))
    }

    fn lit(v: f64) -> Tile {
        Tile {
            dtype: DType::F32,
            weak: true,
            shape: vec![],
            data: Data::F(vec![v]),
        }
    }

    #[test]
    fn bf16_rounds_after_every_op() {
        // 1 + 2^-8 is exact in f32 but rounds to 1 in bf16 (8 bits of precision).
        let x = f(DType::BF16, vec![1.0, 256.0]);
        let y = binary(BinOp::Add, &x, &lit(2f64.powi(-8)), DType::BF16, false).unwrap();
        assert_eq!(y.data, Data::F(vec![1.0, 256.0]));
        let e = binary(BinOp::Add, &x, &lit(2f64.powi(-8)), DType::BF16, true).unwrap();
        assert_eq!(
            e.data,
            Data::F(vec![1.0 + 2f64.powi(-8), 256.0 + 2f64.powi(-8)])
        );
        // The literal adopts bf16: 0.1 becomes bf16(0.1) before the multiply.
        let z = binary(
            BinOp::Mul,
            &f(DType::BF16, vec![1.0]),
            &lit(0.1),
            DType::BF16,
            false,
        )
        .unwrap();
        assert_eq!(z.data, Data::F(vec![half::bf16::from_f64(0.1).to_f64()]));
    }

    #[test]
    fn integer_semantics() {
        let a = Tile::new(
            DType::I32,
            vec![4],
            Data::I(vec![7, -7, 7, i64::from(i32::MAX)]),
        );
        let b = Tile::new(DType::I32, vec![4], Data::I(vec![2, 2, -2, 1]));
        assert_eq!(
            binary(BinOp::Div, &a, &b, DType::I32, false).unwrap().data,
            Data::I(vec![3, -3, -3, i64::from(i32::MAX)])
        );
        assert_eq!(
            binary(BinOp::Rem, &a, &b, DType::I32, false).unwrap().data,
            Data::I(vec![1, -1, 1, 0])
        );
        let s = binary(BinOp::Add, &a, &b, DType::I32, false).unwrap();
        assert_eq!(s.data, Data::I(vec![9, -5, 5, i64::from(i32::MIN)]));
        let zero = Tile::int(DType::I32, 0);
        assert!(binary(BinOp::Div, &a, &zero, DType::I32, false).is_err());
    }

    #[test]
    fn compare_and_select_broadcast() {
        let cols = Tile::new(DType::I32, vec![4], Data::I(vec![0, 1, 2, 3]));
        let n = Tile::int(DType::I64, 3);
        let m = compare(CmpOp::Lt, &cols, &n, false).unwrap();
        assert_eq!(m.data, Data::B(vec![true, true, true, false]));
        let x = f(DType::F32, vec![1.0, 2.0, 3.0, 4.0]);
        let s = select(&m, &x, &lit(f64::NEG_INFINITY), DType::F32, false).unwrap();
        assert_eq!(s.data, Data::F(vec![1.0, 2.0, 3.0, f64::NEG_INFINITY]));
        let g = unary(UnaryOp::Gelu, &f(DType::F32, vec![1.0]), false).unwrap();
        assert!(matches!(g.data, Data::F(ref v) if (v[0] - 0.841_192).abs() < 1e-5));
        let e = unary(UnaryOp::Erf, &f(DType::F32, vec![0.0, 0.5, -2.0]), true).unwrap();
        let want = [0.0, 0.520_499_877_813_046_5, -0.995_322_265_018_952_7];
        assert!(
            matches!(e.data, Data::F(ref v) if v.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-15))
        );
    }
}
