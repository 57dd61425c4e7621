//! `matmul_batched` (a leading batch axis on A, B and C, each with its own batch stride):
//! against a plain Rust reference on the CPU backend and, on a CUDA GPU, bitwise against
//! the CPU backend. Inputs are small integers (every f32 sum exact), batches are views with
//! non-contiguous batch strides inside NaN-filled buffers (a read outside a view shows), and
//! C is a view inside a sentinel-filled buffer (a write outside it shows).

use tilekit::prelude::*;
use tilekit::{Config, Element, Float, LaunchError};
use tilekit_kernels::matmul_batched;
use tilekit_tests::support::Rng;

#[path = "common/matmul.rs"]
mod matmul_common;
use matmul_common::{assert_bitwise, cfg, gpu, inside_view, small_ints};

/// `z` matrices of `rows` x `cols` (`v`, batch-major) in a buffer where batch `i` starts at
/// `offset + i * (rows * pitch + gap)` with row pitch `pitch`; everything else NaN.
fn batched_view<T: Element>(
    rt: &Runtime,
    v: &[T],
    [z, rows, cols]: [usize; 3],
    pitch: usize,
    gap: usize,
    offset: usize,
) -> Tensor3<T> {
    let bstride = rows * pitch + gap;
    let mut data = vec![T::from_f64(f64::NAN); offset + bstride * z + 8];
    for b in 0..z {
        for i in 0..rows {
            let src = (b * rows + i) * cols;
            let dst = offset + b * bstride + i * pitch;
            data[dst..dst + cols].copy_from_slice(&v[src..src + cols]);
        }
    }
    Tensor3::from_vec_strided(rt, data, [z, rows, cols], [bstride, pitch, 1], offset).unwrap()
}

/// The plain reference: `c[b] = a[b] @ b[b]` in f64 (exact for small integers).
fn reference(a: &[f64], b: &[f64], (z, m, k, n): (usize, usize, usize, usize)) -> Vec<f64> {
    let mut c = vec![0.0; z * m * n];
    for q in 0..z {
        for i in 0..m {
            for j in 0..n {
                c[(q * m + i) * n + j] = (0..k)
                    .map(|p| a[(q * m + i) * k + p] * b[(q * k + p) * n + j])
                    .sum();
            }
        }
    }
    c
}

/// One case: A and B as batched views (row pitch + `extra`, batch gap `gap`), C a view with
/// its own gap inside a sentinel buffer. Returns C's elements, after checking that nothing
/// outside C changed.
#[allow(clippy::too_many_arguments)]
fn run_case<T: Element + Float>(
    rt: &Runtime,
    config: Option<&Config>,
    av: &[T],
    bv: &[T],
    (z, m, k, n): (usize, usize, usize, usize),
    extra: usize,
    gap: usize,
) -> Result<Vec<T>, LaunchError> {
    let a = batched_view(rt, av, [z, m, k], k + extra, gap, 1);
    let b = batched_view(rt, bv, [z, k, n], n + extra, gap, 0);
    let sentinel = T::from_f64(-7.0);
    let (cpitch, cgap, coff) = (n + extra, gap + 3, 2);
    let cb = m * cpitch + cgap;
    let len = coff + cb * z + 8;
    let mut buf = Tensor1::full(rt, [len], sentinel).unwrap();
    {
        let mut c = buf
            .as_strided_mut([z, m, n], [cb, cpitch, 1], coff)
            .unwrap();
        match config {
            Some(cfg) => matmul_batched::launch_with(rt, cfg, &a, &b, &mut c)?,
            None => matmul_batched::launch(rt, &a, &b, &mut c)?,
        }
    }
    let all = buf.to_vec().unwrap();
    let inside = inside_view("matmul_batched", &all, sentinel, |i| {
        let rel = i.wrapping_sub(coff);
        i >= coff && rel / cb < z && (rel % cb) / cpitch < m && rel % cb % cpitch < n
    });
    Ok(inside)
}

const SHAPES: [(usize, usize, usize, usize); 5] = [
    (1, 1, 1, 1),
    (1, 17, 33, 9),
    (3, 5, 7, 9),
    (3, 65, 40, 63),
    (2, 64, 0, 64),
];

#[test]
fn cpu_matmul_batched_matches_the_reference() {
    let rt = Runtime::cpu();
    let mut r = Rng(0xba7c);
    for &(z, m, k, n) in &SHAPES {
        for (extra, gap) in [(0, 0), (3, 5)] {
            let av = small_ints::<f32>(&mut r, z * m * k);
            let bv = small_ints::<f32>(&mut r, z * k * n);
            let want = reference(
                &av.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
                &bv.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
                (z, m, k, n),
            );
            let got = run_case(&rt, None, &av, &bv, (z, m, k, n), extra, gap).unwrap();
            let got: Vec<f64> = got.iter().map(|&v| f64::from(v)).collect();
            assert_eq!(got, want, "{z}x{m}x{k}x{n} extra {extra} gap {gap}");
        }
    }
}

#[test]
fn cpu_matmul_batched_refuses_mismatched_shapes() {
    let rt = Runtime::cpu();
    let a = Tensor3::<f32>::zeros(&rt, [2, 4, 8]).unwrap();
    let b = Tensor3::<f32>::zeros(&rt, [3, 8, 4]).unwrap(); // batch 3 against 2
    let mut c = Tensor3::<f32>::full(&rt, [2, 4, 4], f32::NAN).unwrap();
    assert!(matmul_batched::launch(&rt, &a, &b, &mut c).is_err());
    // Nothing was written.
    assert!(c.to_vec().unwrap().iter().all(|v| v.is_nan()));
}

/// Every configuration of a covering set, bf16 and f16, bitwise against the CPU backend;
/// batch strides aligned (the aligned variant) and not (the general variant).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_batched_bitwise_against_cpu() {
    let g = gpu();
    let cpu = Runtime::cpu();
    let mut r = Rng(0xba7d);
    let configs = [
        "BM=128,BN=128,BK=32,STAGES=4,WARPS=4,SMEM=Swizzle128",
        "BM=64,BN=64,BK=64,STAGES=2,WARPS=4,SMEM=Padded",
        "BM=128,BN=64,BK=32,STAGES=3,WARPS=8,SMEM=Padded",
        // The Hopper engine on sm_90a where the rows are aligned (the declared default).
        "BM=128,BN=128,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128",
    ];
    fn case<T: Element + Float>(
        g: &Runtime,
        cpu: &Runtime,
        r: &mut Rng,
        config: &Config,
        shape: (usize, usize, usize, usize),
        extra: usize,
        gap: usize,
    ) {
        let (z, m, k, n) = shape;
        let av = small_ints::<T>(r, z * m * k);
        let bv = small_ints::<T>(r, z * k * n);
        let want = run_case(cpu, None, &av, &bv, shape, extra, gap).unwrap();
        let got = run_case(g, Some(config), &av, &bv, shape, extra, gap)
            .unwrap_or_else(|e| panic!("{shape:?} {config}: {e}"));
        assert_bitwise(
            &format!("{:?} {shape:?} extra {extra} gap {gap} {config}", T::DTYPE),
            &got,
            &want,
        );
    }
    for c in configs {
        let config = cfg(c);
        for shape in [
            (1, 128, 64, 128),
            (3, 130, 97, 70),
            (3, 64, 4097, 64),
            (2, 1, 1, 1),
        ] {
            // Aligned batches (gap 8, pitch unchanged) and misaligned ones.
            for (extra, gap) in [(0, 8), (8, 0), (1, 3)] {
                case::<half::bf16>(&g, &cpu, &mut r, &config, shape, extra, gap);
                case::<half::f16>(&g, &cpu, &mut r, &config, shape, extra, gap);
            }
        }
    }
}

/// The batched 32 x 512^3 bf16 of issue 10's table through `launch` (the default or tuned
/// configuration), once, bitwise against the CPU backend on the first and last batch.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_batched_32x512_launch() {
    let g = gpu();
    let cpu = Runtime::cpu();
    let mut r = Rng(0xba7e);
    let (z, m, k, n) = (32, 512, 512, 512);
    let av = small_ints::<half::bf16>(&mut r, z * m * k);
    let bv = small_ints::<half::bf16>(&mut r, z * k * n);
    let a = Tensor3::from_vec(&g, av.clone(), [z, m, k]).unwrap();
    let b = Tensor3::from_vec(&g, bv.clone(), [z, k, n]).unwrap();
    let mut c = Tensor3::full(&g, [z, m, n], half::bf16::NAN).unwrap();
    matmul_batched::launch(&g, &a, &b, &mut c).unwrap();
    let got = c.to_vec().unwrap();
    for q in [0, z - 1] {
        let one = |v: &[half::bf16], rows: usize, cols: usize| {
            v[q * rows * cols..(q + 1) * rows * cols].to_vec()
        };
        let want = run_case(
            &cpu,
            None,
            &one(&av, m, k),
            &one(&bv, k, n),
            (1, m, k, n),
            0,
            0,
        )
        .unwrap();
        assert_bitwise(&format!("batch {q}"), &one(&got, m, n), &want);
    }
}

/// A B operand shared by every batch entry (batch stride 0, as a broadcast weight): on
/// sm_90a the declared default reads it through a 3-D tensor map; bitwise against the CPU
/// backend.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_batched_broadcast_b() {
    let g = gpu();
    let cpu = Runtime::cpu();
    let mut r = Rng(0xb0ad);
    let (z, m, k, n) = (3, 256, 128, 128);
    let av = small_ints::<half::bf16>(&mut r, z * m * k);
    let bv = small_ints::<half::bf16>(&mut r, k * n);
    let run = |rt: &Runtime| {
        let a = Tensor3::from_vec(rt, av.clone(), [z, m, k]).unwrap();
        let b = Tensor3::from_vec_strided(rt, bv.clone(), [z, k, n], [0, n, 1], 0).unwrap();
        let mut c = Tensor3::full(rt, [z, m, n], half::bf16::NAN).unwrap();
        matmul_batched::launch(rt, &a, &b, &mut c).unwrap();
        c.to_vec().unwrap()
    };
    assert_bitwise("broadcast B", &run(&g), &run(&cpu));
}
