//! Correctness of the CPU backend on small kernels, against plain Rust references that
//! follow docs/semantics.md step by step (so most comparisons are bit-exact).

use super::*;
use crate::element::{Element, Float};
use crate::launch::{launch, launch_cpu_with_options, launch_with, Arg};
use crate::runtime::Runtime;
use crate::tensor::{Tensor, Tensor1, Tensor2};
use crate::CpuOptions;
use half::bf16;
use std::time::Instant;
use tilekit_ir::{Bindings, Config, Precision, ReduceOp, UnaryOp};

fn bind<T: Element>() -> Bindings {
    Bindings::single("T", T::DTYPE)
}

fn cfg(s: &str) -> Config {
    Config::parse(s).expect("config")
}

/// Rounds an f32 to `T` and back.
fn to_t<T: Float>(x: f32) -> f32 {
    T::from_f64(f64::from(x)).to_f64() as f32
}

/// `n` values uniform in `[-scale, scale)` from `seed`, rounded to `T` (kept as f32).
fn rounded_data<T: Float>(seed: u64, n: usize, scale: f32) -> Vec<f32> {
    Rng::new(seed)
        .vec(n, scale)
        .into_iter()
        .map(to_t::<T>)
        .collect()
}

/// `v` as `T` elements (exact for values [`rounded_data`] made).
fn as_t<T: Float>(v: &[f32]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(f64::from(x))).collect()
}

/// Launches a kernel of parameters `(x, y)` with `T = B` and the default configuration.
fn launch_xy<B: Element, X: Element, Y: Element, const R: usize>(
    rt: &Runtime,
    spec: &KernelSpec,
    x: &Tensor<X, R>,
    y: &mut Tensor<Y, R>,
) {
    launch(rt, spec, &bind::<B>(), &mut [Arg::from(x), Arg::from(y)]).unwrap();
}

fn assert_bits<T: Element>(got: &[T], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f64() as f32;
        assert!(
            g.to_bits() == w.to_bits(),
            "{what}: element {i}: got {g}, want {w}"
        );
    }
}

// ---------------------------------------------------------------- softmax

fn softmax_kernel() -> &'static KernelSpec {
    let mut k = K::new(
        "softmax",
        vec![input("x", 2), output("y", 2)],
        vec![dim(0, 0)],
        &[("BLOCK", &[1024, 128])],
        &[&["M", "N"], &["M", "N"]],
    );
    let (x, y) = (k.param(0), k.param(1));
    let row = k.pid(0);
    let (cols, mask) = k.masked_arange("BLOCK", x, 1);
    let xr = k.row(x, row);
    // -inf does not survive the IR's JSON form (serde_json writes null); f64::MIN rounds to -inf in T.
    let ninf = k.float(f64::MIN);
    let v = k.load_or(xr, cols, mask, ninf);
    let v = k.cast(v, Elem::of(DType::F32));
    let m = k.reduce(ReduceOp::Max, v, 0);
    let d = k.bin(BinOp::Sub, v, m);
    let e = k.unary(UnaryOp::Exp, d);
    let s = k.reduce(ReduceOp::Sum, e, 0);
    let q = k.bin(BinOp::Div, e, s);
    let q = k.cast(q, t());
    let yr = k.row(y, row);
    k.store(yr, cols, q, Some(mask));
    k.spec()
}

fn softmax_ref<T: Float>(x: &[f32], cols: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(cols) {
        let m = row.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        let e: Vec<f32> = row.iter().map(|&v| (v - m).exp()).collect();
        let s = e.iter().fold(0f32, |a, &b| a + b);
        out.extend(e.iter().map(|&v| to_t::<T>(v / s)));
    }
    out
}

fn check_softmax<T: Float>(rows: usize, cols: usize, block: i64, seed: u64) {
    let rt = Runtime::cpu();
    let data = rounded_data::<T>(seed, rows * cols, 4.0);
    let x = Tensor2::from_vec(&rt, as_t::<T>(&data), [rows, cols]).unwrap();
    let mut y = Tensor2::full(&rt, [rows, cols], T::from_f64(f64::NAN)).unwrap();
    launch_with(
        &rt,
        softmax_kernel(),
        &cfg(&format!("BLOCK={block}")),
        &bind::<T>(),
        &mut [Arg::from(&x), Arg::from(&mut y)],
    )
    .unwrap();
    assert_bits(
        &y.to_vec().unwrap(),
        &softmax_ref::<T>(&data, cols),
        &format!("softmax {rows}x{cols} {}", T::DTYPE),
    );
}

#[test]
fn softmax_masks_awkward_widths() {
    for (i, cols) in [1usize, 7, 33, 1000].into_iter().enumerate() {
        check_softmax::<f32>(5, cols, 1024, i as u64);
        check_softmax::<bf16>(3, cols, 1024, 10 + i as u64);
        check_softmax::<half::f16>(2, cols, 1024, 20 + i as u64);
    }
    check_softmax::<f32>(4, 100, 128, 7);
}

#[test]
fn softmax_4097_rows_is_fast() {
    let start = Instant::now();
    check_softmax::<f32>(4097, 128, 128, 99);
    let took = start.elapsed();
    assert!(took.as_secs_f64() < 1.0, "4097-row softmax took {took:?}");
}

// ---------------------------------------------------------------- elementwise chain with a loop

fn chain_kernel() -> &'static KernelSpec {
    let mut k = K::new(
        "chain",
        vec![
            input("x", 1),
            output("y", 1),
            scalar("iters", DType::I64),
            scalar("scale", DType::F32),
        ],
        vec![blocks(0, 0, "BLOCK")],
        &[("BLOCK", &[64])],
        &[&["N"], &["N"], &[], &[]],
    );
    let (x, y) = (k.param(0), k.param(1));
    let (iters, scale) = (k.scalar(2), k.scalar(3));
    let l = k.block_lanes(x);
    let v = k.load(x, l.offs, Some(l.mask));
    let vf = k.cast(v, Elem::of(DType::F32));
    let zero = k.float(0.0);
    let acc0 = k.full(Elem::of(DType::F32), &["BLOCK"], zero);
    let (start, step) = (k.int(0), k.int(2));
    let acc = k.for_(start, iters, step, vec![acc0], |k, i, carried| {
        let fi = k.cast(i, Elem::of(DType::F32));
        let t1 = k.bin(BinOp::Mul, vf, scale);
        let t2 = k.unary(UnaryOp::Sigmoid, t1);
        let half = k.float(0.5);
        let t3 = k.bin(BinOp::Mul, carried[0], half);
        let t4 = k.bin(BinOp::Mul, t2, fi);
        vec![k.bin(BinOp::Add, t3, t4)]
    });
    let out = k.cast(acc[0], t());
    k.store(y, l.offs, out, Some(l.mask));
    k.spec()
}

fn check_chain<T: Float>(n: usize, iters: usize, scale: f32) {
    let rt = Runtime::cpu();
    let data = rounded_data::<T>(n as u64, n, 3.0);
    let x = Tensor1::from_vec(&rt, as_t::<T>(&data), [n]).unwrap();
    let mut y = Tensor1::full(&rt, [n], T::from_f64(f64::NAN)).unwrap();
    let mut args = [
        Arg::from(&x),
        Arg::from(&mut y),
        Arg::from(iters),
        Arg::from(scale),
    ];
    launch(&rt, chain_kernel(), &bind::<T>(), &mut args).unwrap();
    let want: Vec<f32> = data
        .iter()
        .map(|&v| {
            let mut acc = 0f32;
            for i in (0..iters).step_by(2) {
                let s = 1.0 / (1.0 + (-(v * scale)).exp());
                acc = acc * 0.5 + s * i as f32;
            }
            to_t::<T>(acc)
        })
        .collect();
    assert_bits(
        &y.to_vec().unwrap(),
        &want,
        &format!("chain n={n} iters={iters} {}", T::DTYPE),
    );
}

#[test]
fn elementwise_chain_with_loop_carried_value() {
    check_chain::<f32>(1000, 7, 0.75);
    check_chain::<f32>(64, 1, -1.5);
    check_chain::<bf16>(130, 9, 1.25);
    // Zero trips: the initial value flows through.
    check_chain::<f32>(5, 0, 1.0);
}

// ---------------------------------------------------------------- reductions over both axes

#[test]
fn reductions_over_each_axis_with_zero_fill() {
    let mut k = K::new(
        "reduce2d",
        vec![input("x", 2), output("colsum", 1), output("rowmax", 1)],
        vec![Expr::Int(1)],
        &[("BM", &[8]), ("BN", &[16])],
        &[&["M", "N"], &["N"], &["M"]],
    );
    let (x, cs, rm) = (k.param(0), k.param(1), k.param(2));
    let zero = k.int(0);
    let tile = k.load_tile(x, vec![zero, zero], &["BM", "BN"]);
    let tf = k.cast(tile, Elem::of(DType::F32));
    let c = k.reduce(ReduceOp::Sum, tf, 0);
    let r = k.reduce(ReduceOp::Max, tf, 1);
    let (cols, mask) = k.masked_arange("BN", x, 1);
    let c = k.cast(c, t());
    k.store(cs, cols, c, Some(mask));
    let r = k.cast(r, t());
    k.store_tile(rm, vec![zero], r);
    let spec = k.spec();

    let rt = Runtime::cpu();
    let (m, n) = (5usize, 13usize);
    // Negative values so that the zero padding (BN = 16 > 13) wins some row maxima.
    // Rows 3 and 4 are all negative, rows 0 to 2 all positive.
    let data: Vec<f32> = Rng::new(3)
        .vec(m * n, 1.0)
        .into_iter()
        .enumerate()
        .map(|(i, v)| if i / n >= 3 { v - 1.5 } else { v + 1.1 })
        .collect();
    let x = Tensor2::from_vec(&rt, data.clone(), [m, n]).unwrap();
    let mut colsum = Tensor1::full(&rt, [n], f32::NAN).unwrap();
    let mut rowmax = Tensor1::full(&rt, [m], f32::NAN).unwrap();
    launch(
        &rt,
        spec,
        &bind::<f32>(),
        &mut [
            Arg::from(&x),
            Arg::from(&mut colsum),
            Arg::from(&mut rowmax),
        ],
    )
    .unwrap();
    let want_cs: Vec<f32> = (0..n)
        .map(|j| (0..m).fold(0f32, |a, i| a + data[i * n + j]))
        .collect();
    let want_rm: Vec<f32> = (0..m)
        .map(|i| (0..n).fold(0f32, |a, j| a.max(data[i * n + j])))
        .collect();
    assert_bits(&colsum.to_vec().unwrap(), &want_cs, "column sums");
    assert_bits(
        &rowmax.to_vec().unwrap(),
        &want_rm,
        "row maxima (with zero padding)",
    );
    assert!(
        want_rm.contains(&0.0) && want_rm.iter().any(|&v| v > 0.0),
        "the data should exercise the padding"
    );
}

// ---------------------------------------------------------------- load_tile / store_tile at ragged edges

#[test]
fn tiles_at_ragged_edges_and_strided_views() {
    let mut k = K::new(
        "shift",
        vec![
            input("x", 2),
            output("y", 2),
            scalar("dy", DType::I64),
            scalar("dx", DType::I64),
        ],
        vec![blocks(1, 0, "BM"), blocks(1, 1, "BN")],
        &[("BM", &[16]), ("BN", &[8])],
        &[&["A", "B"], &["M", "N"], &[], &[]],
    );
    let (x, y) = (k.param(0), k.param(1));
    let (dy, dx) = (k.scalar(2), k.scalar(3));
    let (r0, c0) = k.tile_origin();
    let ro = k.bin(BinOp::Add, r0, dy);
    let co = k.bin(BinOp::Add, c0, dx);
    let tile = k.load_tile(x, vec![ro, co], &["BM", "BN"]);
    let two = k.float(2.0);
    let t2 = k.bin(BinOp::Mul, tile, two);
    k.store_tile(y, vec![r0, c0], t2);
    let spec = k.spec();

    let rt = Runtime::cpu();
    let (a, b) = (37usize, 29usize);
    // x is the transpose of a row-major [b, a] buffer: a strided view.
    let buf = Rng::new(5).vec(a * b, 1.0);
    let x = Tensor2::from_vec_strided(&rt, buf.clone(), [a, b], [1, a], 0).unwrap();
    let xv = |i: usize, j: usize| buf[j * a + i];
    // y is a [40, 30] window (row stride 33, offset 2) of a larger NaN buffer.
    let (m, n, ld, off) = (40usize, 30usize, 33usize, 2usize);
    let store = vec![f32::NAN; off + m * ld];
    let mut y = Tensor2::from_vec_strided(&rt, store, [m, n], [ld, 1], off).unwrap();
    for (dy, dx) in [(-3i64, 5i64), (4, -9)] {
        launch(
            &rt,
            spec,
            &bind::<f32>(),
            &mut [
                Arg::from(&x),
                Arg::from(&mut y),
                Arg::from(dy),
                Arg::from(dx),
            ],
        )
        .unwrap();
        let mut want = Vec::with_capacity(m * n);
        for i in 0..m {
            for j in 0..n {
                let (si, sj) = (i as i64 + dy, j as i64 + dx);
                let inside = (0..a as i64).contains(&si) && (0..b as i64).contains(&sj);
                want.push(if inside {
                    xv(si as usize, sj as usize) * 2.0
                } else {
                    0.0
                });
            }
        }
        assert_bits(
            &y.to_vec().unwrap(),
            &want,
            &format!("shift by ({dy}, {dx})"),
        );
    }
    // Elements of the storage outside the view were never written.
    let outside = Tensor2::from_vec_strided(
        &rt,
        y.host_storage().to_vec(),
        [m, ld - n],
        [ld, 1],
        off + n,
    )
    .unwrap();
    assert!(outside.to_vec().unwrap().iter().all(|v| v.is_nan()));
}

// ---------------------------------------------------------------- dot

fn matmul_kernel(precision: Precision) -> &'static KernelSpec {
    let mut k = K::new(
        "matmul",
        vec![input("a", 2), input("b", 2), output("c", 2)],
        vec![blocks(2, 0, "BM"), blocks(2, 1, "BN")],
        &[("BM", &[16, 64]), ("BN", &[16, 64]), ("BK", &[8, 32])],
        &[&["M", "K"], &["K", "N"], &["M", "N"]],
    );
    let (a, b, c) = (k.param(0), k.param(1), k.param(2));
    let (r0, c0) = k.tile_origin();
    let bk = k.tune("BK");
    let zero = k.float(0.0);
    let acc0 = k.full(Elem::of(DType::F32), &["BM", "BN"], zero);
    let kdim = k.dim(a, 1);
    let start = k.int(0);
    let acc = k.for_(start, kdim, bk, vec![acc0], |k, kk, carried| {
        let ta = k.load_tile(a, vec![r0, kk], &["BM", "BK"]);
        let tb = k.load_tile(b, vec![kk, c0], &["BK", "BN"]);
        vec![k.op(Op::Dot {
            a: ta,
            b: tb,
            acc: carried[0],
            precision,
        })]
    });
    let out = k.cast(acc[0], t());
    k.store_tile(c, vec![r0, c0], out);
    k.spec()
}

/// `c = a @ b` with `(m, k, n)`; the reference sums over k in order, in f32 (or f64 when
/// `exact`), from zero, with operands optionally rounded to TF32.
fn check_matmul<T: Float>(
    m: usize,
    kd: usize,
    n: usize,
    config: &str,
    precision: Precision,
    exact: bool,
) {
    let rt = Runtime::cpu();
    let mut rng = Rng::new((m * 31 + kd * 7 + n) as u64);
    let av: Vec<f32> = rng.vec(m * kd, 1.0).into_iter().map(to_t::<T>).collect();
    let bv: Vec<f32> = rng.vec(kd * n, 1.0).into_iter().map(to_t::<T>).collect();
    let a = Tensor2::from_vec(&rt, as_t::<T>(&av), [m, kd]).unwrap();
    let b = Tensor2::from_vec(&rt, as_t::<T>(&bv), [kd, n]).unwrap();
    let mut c = Tensor2::full(&rt, [m, n], T::from_f64(f64::NAN)).unwrap();
    let spec = matmul_kernel(precision);
    let mut args = [Arg::from(&a), Arg::from(&b), Arg::from(&mut c)];
    launch_cpu_with_options(
        spec,
        &cfg(config),
        &bind::<T>(),
        &mut args,
        &CpuOptions {
            exact,
            ..CpuOptions::default()
        },
    )
    .unwrap();
    let tf = |x: f32| {
        if precision == Precision::Tf32 && T::DTYPE == DType::F32 {
            super::super::dot::tf32(x)
        } else {
            x
        }
    };
    let mut want = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let v = if exact {
                let s = (0..kd).fold(0f64, |s, p| {
                    s + f64::from(av[i * kd + p]) * f64::from(bv[p * n + j])
                });
                T::from_f64(s).to_f64() as f32
            } else {
                let s = (0..kd).fold(0f32, |s, p| s + tf(av[i * kd + p]) * tf(bv[p * n + j]));
                to_t::<T>(s)
            };
            want.push(v);
        }
    }
    assert_bits(
        &c.to_vec().unwrap(),
        &want,
        &format!(
            "matmul {m}x{kd}x{n} {} {precision:?} exact={exact}",
            T::DTYPE
        ),
    );
}

#[test]
fn dot_matmul_with_k_loop() {
    let small = "BM=16,BN=16,BK=8";
    check_matmul::<f32>(37, 45, 29, small, Precision::Ieee, false);
    check_matmul::<bf16>(37, 45, 29, small, Precision::Ieee, false);
    check_matmul::<f32>(37, 45, 29, small, Precision::Tf32, false);
    check_matmul::<f32>(17, 9, 33, "BM=64,BN=16,BK=32", Precision::Ieee, false);
}

#[test]
fn exact_mode_rounds_once_at_the_store() {
    check_matmul::<bf16>(37, 45, 29, "BM=16,BN=16,BK=8", Precision::Ieee, true);
    check_matmul::<f32>(20, 70, 3, "BM=16,BN=16,BK=32", Precision::Tf32, true);
}

#[test]
fn matmul_4097x64x33_is_fast() {
    let start = Instant::now();
    check_matmul::<f32>(4097, 33, 64, "BM=64,BN=64,BK=32", Precision::Ieee, false);
    let took = start.elapsed();
    assert!(took.as_secs_f64() < 1.0, "4097x64x33 matmul took {took:?}");
}

// ---------------------------------------------------------------- if

#[test]
fn if_selects_per_program() {
    let mut k = K::new(
        "branch",
        vec![input("x", 1), output("y", 1)],
        vec![blocks(0, 0, "BLOCK")],
        &[("BLOCK", &[32])],
        &[&["N"], &["N"]],
    );
    let (x, y) = (k.param(0), k.param(1));
    let l = k.block_lanes(x);
    let v = k.load(x, l.offs, Some(l.mask));
    let two = k.int(2);
    let r = k.bin(BinOp::Rem, l.pid, two);
    let zero = k.int(0);
    let even = k.cmp(CmpOp::Eq, r, zero);
    let out = k.if_(
        even,
        |k| {
            let c = k.float(2.0);
            vec![k.bin(BinOp::Mul, v, c)]
        },
        |k| {
            let c = k.float(0.1);
            vec![k.bin(BinOp::Sub, v, c)]
        },
    );
    k.store(y, l.offs, out[0], Some(l.mask));
    let spec = k.spec();

    let rt = Runtime::cpu();
    let data = rounded_data::<bf16>(11, 100, 2.0);
    let x = Tensor1::from_vec(&rt, as_t::<bf16>(&data), [100]).unwrap();
    let mut y = Tensor1::full(&rt, [100], bf16::NAN).unwrap();
    launch_xy::<bf16, _, _, 1>(&rt, spec, &x, &mut y);
    // The literal adopts bf16: `v - 0.1` is `v - bf16(0.1)` computed in f32, rounded to bf16.
    let tenth = to_t::<bf16>(0.1);
    let want: Vec<f32> = data
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if (i / 32) % 2 == 0 {
                to_t::<bf16>(v * 2.0)
            } else {
                to_t::<bf16>(v - tenth)
            }
        })
        .collect();
    assert_bits(&y.to_vec().unwrap(), &want, "if");
}

// ---------------------------------------------------------------- integer tensors

#[test]
fn integer_division_truncates() {
    let mut k = K::new(
        "ints",
        vec![
            tensor("x", 1, Elem::of(DType::I32), false),
            tensor("y", 1, Elem::of(DType::I32), true),
        ],
        vec![Expr::Int(1)],
        &[("BLOCK", &[64])],
        &[&["N"], &["N"]],
    );
    let (x, y) = (k.param(0), k.param(1));
    let (offs, mask) = k.masked_arange("BLOCK", x, 0);
    let v = k.load(x, offs, Some(mask));
    let m3 = k.int(-3);
    let q = k.bin(BinOp::Div, v, m3);
    let five = k.int(5);
    let r = k.bin(BinOp::Rem, q, five);
    k.store(y, offs, r, Some(mask));
    let spec = k.spec();
    let rt = Runtime::cpu();
    let data: Vec<i32> = (0..50).map(|i| (i * 37 % 101) - 50).collect();
    let x = Tensor1::from_vec(&rt, data.clone(), [50]).unwrap();
    let mut y = Tensor1::full(&rt, [50], i32::MIN).unwrap();
    launch_xy::<f32, _, _, 1>(&rt, spec, &x, &mut y);
    assert_eq!(
        y.to_vec().unwrap(),
        data.iter().map(|v| v / -3 % 5).collect::<Vec<i32>>()
    );
}
