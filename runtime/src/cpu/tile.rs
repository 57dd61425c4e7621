//! Tiles as the CPU backend holds them: a dtype, a concrete shape and row-major data, with
//! the rounding, casting and broadcasting rules of `docs/semantics.md`.
//!
//! Floats are held as `f64` values that are exactly representable in the tile's dtype
//! (every op rounds its result), except in exact mode and for weak literals, which are
//! never rounded until they adopt a type. Integers are held as `i64`, wrapped to the
//! tile's width after every op; masks as `bool`.

use half::{bf16, f16};
use tilekit_ir::DType;

/// Row-major elements of a tile.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Data {
    /// Floating-point elements.
    F(Vec<f64>),
    /// Integer elements.
    I(Vec<i64>),
    /// Mask elements.
    B(Vec<bool>),
}

impl Data {
    /// `n` zeros of the kind that holds `dtype`.
    pub(crate) fn zeros(dtype: DType, n: usize) -> Data {
        if dtype.is_float() {
            Data::F(vec![0.0; n])
        } else if dtype.is_int() {
            Data::I(vec![0; n])
        } else {
            Data::B(vec![false; n])
        }
    }
}

/// A tile value (rank 0: a scalar).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Tile {
    /// Element type.
    pub dtype: DType,
    /// An untyped literal (or a value computed only from literals): adopts the other
    /// operand's type and is never rounded until it does.
    pub weak: bool,
    /// Concrete extents.
    pub shape: Vec<usize>,
    /// Elements.
    pub data: Data,
}

impl Tile {
    /// A strongly typed tile; `data` must have the shape's number of elements.
    pub(crate) fn new(dtype: DType, shape: Vec<usize>, data: Data) -> Tile {
        Tile {
            dtype,
            weak: false,
            shape,
            data,
        }
    }

    /// A strongly typed integer scalar.
    pub(crate) fn int(dtype: DType, v: i64) -> Tile {
        Tile::new(dtype, Vec::new(), Data::I(vec![v]))
    }

    /// The single element of a scalar integer tile.
    pub(crate) fn as_int(&self, what: &str) -> Result<i64, String> {
        match &self.data {
            Data::I(v) if v.len() == 1 => Ok(v[0]),
            _ => Err(format!("malformed IR: {what} is not an integer scalar")),
        }
    }

    /// The single element of a scalar mask.
    pub(crate) fn as_bool(&self, what: &str) -> Result<bool, String> {
        match &self.data {
            Data::B(v) if v.len() == 1 => Ok(v[0]),
            _ => Err(format!("malformed IR: {what} is not a bool scalar")),
        }
    }
}

/// Rounds `x` to `dtype` as an op producing a `dtype` result does: f32 to nearest even;
/// f16/bf16 through f32 (they are computed in f32), then to nearest even.
pub(crate) fn round(dtype: DType, x: f64) -> f64 {
    match dtype {
        DType::F32 => f64::from(x as f32),
        DType::F16 => f16::from_f32(x as f32).to_f64(),
        DType::BF16 => bf16::from_f32(x as f32).to_f64(),
        _ => x,
    }
}

/// Wraps an integer to `dtype`'s width.
pub(crate) fn wrap(dtype: DType, v: i64) -> i64 {
    match dtype {
        DType::I32 => i64::from(v as i32),
        _ => v,
    }
}

/// Converts `t` to `to` with the semantics of a cast: float→float rounds to nearest even
/// (not in exact mode), float→int truncates toward zero (saturating; NaN gives 0),
/// int→float rounds to nearest, to bool is `x != 0`, bool→number is 0/1.
pub(crate) fn cast(t: &Tile, to: DType, exact: bool) -> Tile {
    let data = if to.is_float() {
        let r = |x: f64| if exact { x } else { round(to, x) };
        Data::F(match &t.data {
            Data::F(v) => v.iter().map(|&x| r(x)).collect(),
            Data::I(v) => v
                .iter()
                .map(|&x| {
                    if exact || to == DType::F64 {
                        x as f64
                    } else {
                        round(to, f64::from(x as f32))
                    }
                })
                .collect(),
            Data::B(v) => v.iter().map(|&x| f64::from(u8::from(x))).collect(),
        })
    } else if to.is_int() {
        Data::I(match &t.data {
            Data::F(v) => v
                .iter()
                .map(|&x| {
                    wrap(
                        to,
                        if to == DType::I32 {
                            i64::from(x as i32)
                        } else {
                            x as i64
                        },
                    )
                })
                .collect(),
            Data::I(v) => v.iter().map(|&x| wrap(to, x)).collect(),
            Data::B(v) => v.iter().map(|&x| i64::from(x)).collect(),
        })
    } else {
        Data::B(match &t.data {
            Data::F(v) => v.iter().map(|&x| x != 0.0).collect(),
            Data::I(v) => v.iter().map(|&x| x != 0).collect(),
            Data::B(v) => v.clone(),
        })
    };
    Tile {
        dtype: to,
        weak: false,
        shape: t.shape.clone(),
        data,
    }
}

/// `t` as a strong tile of `dtype`: unchanged if it already is one, else cast.
pub(crate) fn adopt(t: &Tile, dtype: DType, exact: bool) -> Tile {
    if !t.weak && t.dtype == dtype {
        t.clone()
    } else {
        cast(t, dtype, exact)
    }
}

/// Numpy broadcast of two concrete shapes (aligned on the right, extents equal or 1).
pub(crate) fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    let n = a.len().max(b.len());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out.push(match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(format!(
                    "malformed IR: tile shapes {a:?} and {b:?} do not broadcast"
                ))
            }
        });
    }
    Ok(out)
}

/// Where each element of a broadcast result comes from in a source of shape `src`.
pub(crate) enum Source {
    /// Same shape: element `i` is source element `i`.
    Same,
    /// One element repeated.
    Splat,
    /// An explicit map.
    Map(Vec<usize>),
}

impl Source {
    /// The source index of result element `i`.
    #[inline]
    pub(crate) fn at(&self, i: usize) -> usize {
        match self {
            Source::Same => i,
            Source::Splat => 0,
            Source::Map(m) => m[i],
        }
    }
}

/// The index map from a broadcast result of shape `out` into a source of shape `src`.
pub(crate) fn source(src: &[usize], out: &[usize]) -> Result<Source, String> {
    if src == out {
        return Ok(Source::Same);
    }
    let n_src: usize = src.iter().product();
    if n_src == 1 {
        return Ok(Source::Splat);
    }
    if src.len() > out.len() {
        return Err(format!(
            "malformed IR: shape {src:?} does not broadcast to {out:?}"
        ));
    }
    let pad = out.len() - src.len();
    // Source strides aligned on the right; 0 on broadcast axes.
    let mut strides = vec![0usize; out.len()];
    let mut acc = 1usize;
    for a in (0..src.len()).rev() {
        let o = out[a + pad];
        if src[a] == o {
            strides[a + pad] = acc;
        } else if src[a] != 1 {
            return Err(format!(
                "malformed IR: shape {src:?} does not broadcast to {out:?}"
            ));
        }
        acc *= src[a];
    }
    let total: usize = out.iter().product();
    let mut map = Vec::with_capacity(total);
    let mut idx = vec![0usize; out.len()];
    let mut pos = 0usize;
    for _ in 0..total {
        map.push(pos);
        for a in (0..out.len()).rev() {
            idx[a] += 1;
            pos += strides[a];
            if idx[a] < out[a] {
                break;
            }
            pos -= strides[a] * out[a];
            idx[a] = 0;
        }
    }
    Ok(Source::Map(map))
}

/// `t` broadcast to `shape` (materialized).
pub(crate) fn broadcast_to(t: &Tile, shape: &[usize]) -> Result<Tile, String> {
    if t.shape == shape {
        return Ok(t.clone());
    }
    let s = source(&t.shape, shape)?;
    let n: usize = shape.iter().product();
    let data = match &t.data {
        Data::F(v) => Data::F((0..n).map(|i| v[s.at(i)]).collect()),
        Data::I(v) => Data::I((0..n).map(|i| v[s.at(i)]).collect()),
        Data::B(v) => Data::B((0..n).map(|i| v[s.at(i)]).collect()),
    };
    Ok(Tile {
        dtype: t.dtype,
        weak: t.weak,
        shape: shape.to_vec(),
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_and_casts() {
        // 1 + 2^-9 is not a bf16; rounds to even (1.0).
        assert_eq!(round(DType::BF16, 1.0 + 2f64.powi(-9)), 1.0);
        assert_eq!(round(DType::F16, 65520.0), f64::INFINITY);
        assert_eq!(round(DType::F32, 0.1), f64::from(0.1f32));
        assert_eq!(
            wrap(DType::I32, i64::from(i32::MAX) + 1),
            i64::from(i32::MIN)
        );
        let t = Tile::new(DType::F32, vec![3], Data::F(vec![-2.7, 2.7, 0.0]));
        assert_eq!(cast(&t, DType::I32, false).data, Data::I(vec![-2, 2, 0]));
        assert_eq!(
            cast(&t, DType::Bool, false).data,
            Data::B(vec![true, true, false])
        );
        let e = Tile::new(DType::F32, vec![1], Data::F(vec![1.0 + 2f64.powi(-9)]));
        assert_eq!(cast(&e, DType::BF16, true).data, e.data);
    }

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast_shape(&[4, 1], &[3]).unwrap(), vec![4, 3]);
        assert!(broadcast_shape(&[4, 2], &[3]).is_err());
        let col = Tile::new(DType::I64, vec![2, 1], Data::I(vec![10, 20]));
        let b = broadcast_to(&col, &[2, 3]).unwrap();
        assert_eq!(b.data, Data::I(vec![10, 10, 10, 20, 20, 20]));
        let row = Tile::new(DType::I64, vec![3], Data::I(vec![1, 2, 3]));
        let r = broadcast_to(&row, &[2, 3]).unwrap();
        assert_eq!(r.data, Data::I(vec![1, 2, 3, 1, 2, 3]));
    }
}
