//! Reductions along one axis (`sum`, `max`, `min`). Float reductions accumulate in f32
//! (f64 in exact mode), in order along the axis, and round the result to the tile's type.

use super::tile::{round, wrap, Data, Tile};
use tilekit_ir::{DType, ReduceOp};

/// Reduces `x` along `axis`, dropping it.
pub(crate) fn reduce(op: ReduceOp, x: &Tile, axis: usize, exact: bool) -> Result<Tile, String> {
    if axis >= x.shape.len() {
        return Err(format!(
            "malformed IR: reduction over axis {axis} of a rank-{} tile",
            x.shape.len()
        ));
    }
    let outer: usize = x.shape[..axis].iter().product();
    let n = x.shape[axis];
    let inner: usize = x.shape[axis + 1..].iter().product();
    let mut shape = x.shape.clone();
    shape.remove(axis);
    if n == 0 {
        return Err(format!("`{}` over an empty axis", op.name()));
    }
    let at = |o: usize, k: usize, i: usize| (o * n + k) * inner + i;
    let data = match &x.data {
        Data::F(v) => {
            let mut out = Vec::with_capacity(outer * inner);
            let f32_acc = !exact && x.dtype != DType::F64;
            for o in 0..outer {
                for i in 0..inner {
                    let r = if f32_acc {
                        let mut acc = match op {
                            ReduceOp::Sum => 0.0f32,
                            _ => v[at(o, 0, i)] as f32,
                        };
                        for k in 0..n {
                            let e = v[at(o, k, i)] as f32;
                            acc = match op {
                                ReduceOp::Sum => acc + e,
                                ReduceOp::Max => acc.max(e),
                                ReduceOp::Min => acc.min(e),
                            };
                        }
                        round(x.dtype, f64::from(acc))
                    } else {
                        let mut acc = match op {
                            ReduceOp::Sum => 0.0f64,
                            _ => v[at(o, 0, i)],
                        };
                        for k in 0..n {
                            let e = v[at(o, k, i)];
                            acc = match op {
                                ReduceOp::Sum => acc + e,
                                ReduceOp::Max => acc.max(e),
                                ReduceOp::Min => acc.min(e),
                            };
                        }
                        acc
                    };
                    out.push(r);
                }
            }
            Data::F(out)
        }
        Data::I(v) => {
            let mut out = Vec::with_capacity(outer * inner);
            for o in 0..outer {
                for i in 0..inner {
                    let mut acc = match op {
                        ReduceOp::Sum => 0i64,
                        _ => v[at(o, 0, i)],
                    };
                    for k in 0..n {
                        let e = v[at(o, k, i)];
                        acc = match op {
                            ReduceOp::Sum => wrap(x.dtype, acc.wrapping_add(e)),
                            ReduceOp::Max => acc.max(e),
                            ReduceOp::Min => acc.min(e),
                        };
                    }
                    out.push(acc);
                }
            }
            Data::I(out)
        }
        Data::B(_) => return Err(format!("malformed IR: `{}` of a mask", op.name())),
    };
    Ok(Tile {
        dtype: x.dtype,
        weak: x.weak,
        shape,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduces_each_axis() {
        // [[1, 2, 3], [4, 5, 6]]
        let t = Tile::new(
            DType::F32,
            vec![2, 3],
            Data::F(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
        );
        assert_eq!(
            reduce(ReduceOp::Sum, &t, 0, false).unwrap().data,
            Data::F(vec![5.0, 7.0, 9.0])
        );
        assert_eq!(
            reduce(ReduceOp::Max, &t, 1, false).unwrap().data,
            Data::F(vec![3.0, 6.0])
        );
        assert_eq!(reduce(ReduceOp::Min, &t, 1, false).unwrap().shape, vec![2]);
        let i = Tile::new(DType::I32, vec![2], Data::I(vec![i64::from(i32::MAX), 1]));
        assert_eq!(
            reduce(ReduceOp::Sum, &i, 0, false).unwrap().data,
            Data::I(vec![i64::from(i32::MIN)])
        );
    }

    #[test]
    fn sums_accumulate_in_f32_and_round_to_the_tile_type() {
        // 1 + 256 * 2^-9 in bf16: each term alone would vanish in bf16, but the f32 accumulator keeps them.
        let mut v = vec![1.0];
        v.extend(std::iter::repeat_n(2f64.powi(-9), 256));
        let t = Tile::new(DType::BF16, vec![257], Data::F(v));
        assert_eq!(
            reduce(ReduceOp::Sum, &t, 0, false).unwrap().data,
            Data::F(vec![1.5])
        );
    }
}
