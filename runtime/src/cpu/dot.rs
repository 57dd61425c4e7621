//! `dot(a, b, acc)`: `acc + a @ b` with products and sums in f32 (f64 in exact mode).

use super::tile::{Data, Tile};
use tilekit_ir::{DType, Precision};

/// Rounds an f32 to TF32 (10 explicit mantissa bits), nearest even; Inf and NaN unchanged.
///
/// The carry of a rounding may ripple into the exponent, which is the right result
/// (rounding up to the next power of two, or to infinity).
pub(crate) fn tf32(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let bits = x.to_bits();
    let lsb = (bits >> 13) & 1;
    f32::from_bits(bits.wrapping_add(0xfff + lsb) & !0x1fff)
}

/// `acc + a @ b` for `a: [M, K]`, `b: [K, N]`, `acc: [M, N]` (f32). For each output element
/// the sum runs over `k` in order, starting from the accumulator.
pub(crate) fn dot(
    a: &Tile,
    b: &Tile,
    acc: &Tile,
    precision: Precision,
    exact: bool,
) -> Result<Tile, String> {
    let (&[m, k], &[k2, n], &[m2, n2]) =
        (a.shape.as_slice(), b.shape.as_slice(), acc.shape.as_slice())
    else {
        return Err("malformed IR: `dot` of tiles that are not 2-d".into());
    };
    if k != k2 || m != m2 || n != n2 {
        return Err(format!(
            "malformed IR: `dot` of {:?} @ {:?} into {:?}",
            a.shape, b.shape, acc.shape
        ));
    }
    let (Data::F(av), Data::F(bv), Data::F(cv)) = (&a.data, &b.data, &acc.data) else {
        return Err("malformed IR: `dot` of non-float tiles".into());
    };
    let out = if exact {
        let mut c = cv.clone();
        for i in 0..m {
            let row = &mut c[i * n..(i + 1) * n];
            for kk in 0..k {
                let x = av[i * k + kk];
                let brow = &bv[kk * n..(kk + 1) * n];
                row.iter_mut().zip(brow).for_each(|(c, &y)| *c += x * y);
            }
        }
        c
    } else {
        let round_in = |d: DType, x: f64| {
            let x = x as f32;
            if precision == Precision::Tf32 && d == DType::F32 {
                tf32(x)
            } else {
                x
            }
        };
        let a32: Vec<f32> = av.iter().map(|&x| round_in(a.dtype, x)).collect();
        let b32: Vec<f32> = bv.iter().map(|&x| round_in(b.dtype, x)).collect();
        let mut c: Vec<f32> = cv.iter().map(|&x| x as f32).collect();
        for i in 0..m {
            let row = &mut c[i * n..(i + 1) * n];
            for kk in 0..k {
                let x = a32[i * k + kk];
                let brow = &b32[kk * n..(kk + 1) * n];
                row.iter_mut().zip(brow).for_each(|(c, &y)| *c += x * y);
            }
        }
        c.into_iter().map(f64::from).collect()
    };
    Ok(Tile::new(acc.dtype, acc.shape.clone(), Data::F(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tf32_rounds_to_ten_mantissa_bits() {
        assert_eq!(tf32(1.0 + 2f32.powi(-11)), 1.0); // a tie: to even
        assert_eq!(tf32(1.0 + 3.0 * 2f32.powi(-11)), 1.0 + 2f32.powi(-9));
        assert_eq!(tf32(1.0 + 2f32.powi(-10)), 1.0 + 2f32.powi(-10));
        assert_eq!(tf32(f32::MAX), f32::INFINITY);
        assert!(tf32(f32::NAN).is_nan());
    }

    #[test]
    fn small_product() {
        let a = Tile::new(DType::F32, vec![2, 2], Data::F(vec![1.0, 2.0, 3.0, 4.0]));
        let b = Tile::new(DType::F32, vec![2, 1], Data::F(vec![5.0, 6.0]));
        let c = Tile::new(DType::F32, vec![2, 1], Data::F(vec![0.5, 0.25]));
        let r = dot(&a, &b, &c, Precision::Ieee, false).unwrap();
        assert_eq!(r.data, Data::F(vec![17.5, 39.25]));
        assert_eq!(dot(&a, &b, &c, Precision::Ieee, true).unwrap().data, r.data);
    }
}
