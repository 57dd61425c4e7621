//! The launch memo (see `crate::memo`) and a host-side microbenchmark of the launch path.

use super::*;
use crate::launch::error::LaunchError;
use crate::launch::{check, launch, launch_with, Arg};
use crate::memo::{KeyBuf, LaunchMemoStats, Memo, Probe};
use crate::runtime::{Backend, Runtime};
use crate::tensor::{Tensor1, Tensor2};
use half::bf16;
use std::hash::{Hash, Hasher};
use std::time::Instant;
use tilekit_codegen::Access;
use tilekit_ir::{Bindings, Config, ExprOp};

/// `scale_chain` as the library declares it: `y = x` (the chain body does not matter to the
/// host path), grid `cdiv(x.len(), BLOCK)`, `BLOCK = [2048, 1024, 4096, 8192]`,
/// `WARPS = [4, 8]`, shapes `x = [N]`, `y = [N]`, scalar `repeats: usize`.
fn scale_like() -> &'static KernelSpec {
    scale_kernel(false)
}

/// As [`scale_like`]; with `limit`, the constraint `repeats <= 100` reads the scalar.
fn scale_kernel(limit: bool) -> &'static KernelSpec {
    let mut k = K::new(
        "scale_like",
        vec![input("x", 1), output("y", 1), scalar("repeats", DType::I64)],
        vec![blocks(0, 0, "BLOCK")],
        &[("BLOCK", &[2048, 1024, 4096, 8192]), ("WARPS", &[4, 8])],
        &[&["N"], &["N"], &[]],
    );
    if limit {
        k.constrain(vec![constraint(
            Expr::bin(ExprOp::Le, Expr::Scalar(2), Expr::Int(100)),
            "repeats <= 100",
        )]);
    }
    let (x, y) = (k.param(0), k.param(1));
    let l = k.block_lanes(x);
    let v = k.load(x, l.offs, Some(l.mask));
    k.store(y, l.offs, v, Some(l.mask));
    k.spec()
}

/// Median nanoseconds per call of `f` over 7 rounds of `n` calls.
fn ns_per_call(n: u32, mut f: impl FnMut()) -> f64 {
    for _ in 0..n / 10 {
        f();
    }
    let mut rounds: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..n {
                f();
            }
            t.elapsed().as_secs_f64() * 1e9 / f64::from(n)
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[3]
}

/// Host-side pieces of a repeated `scale_chain`-like launch that both backends share.
/// `cargo test --release -p tilekit-runtime -- --ignored launch_host_microbench --nocapture`
#[test]
#[ignore = "microbenchmark; run by hand with --release"]
fn launch_host_microbench() {
    let spec = scale_like();
    let rt = Runtime::cpu();
    let x = Tensor1::<f32>::from_vec(&rt, vec![1.0], [1]).unwrap();
    let mut y = Tensor1::<f32>::zeros(&rt, [1]).unwrap();
    let analyzed = spec.analyzed().unwrap();
    let n = 200_000;

    let bindings = ns_per_call(n, || {
        let mut b = Bindings::default();
        b.0.insert(String::from("T"), DType::F32);
        std::hint::black_box(b);
    });
    let args = ns_per_call(n, || {
        let a = [Arg::from(&x), Arg::from(&mut y), Arg::from(0usize)];
        std::hint::black_box(&a);
    });
    let default = ns_per_call(n, || {
        std::hint::black_box(spec.default_config().unwrap());
    });
    let b = Bindings::single("T", DType::F32);
    let cfg = spec.default_config().unwrap();
    let a = [Arg::from(&x), Arg::from(&mut y), Arg::from(0usize)];
    let checked = ns_per_call(n, || {
        let c = check(
            &analyzed.kernel,
            &analyzed.types,
            &cfg,
            &b,
            &a,
            Backend::Cpu,
            None,
        )
        .unwrap();
        std::hint::black_box(&c);
    });
    // The CUDA backend's function-cache key (SipHash of spec id, config, bindings, aligned).
    let fn_key = ns_per_call(n, || {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (0u64, &cfg, &b, true).hash(&mut h);
        std::hint::black_box(h.finish());
    });
    // The memo's hit path: the probe (hash of spec id, generics, every argument's key) and
    // the lookup under the read lock, returning the resolved value.
    let memo: Memo<u64> = Memo::default();
    let g = [DType::F32];
    let read = spec.host_scalars(&analyzed.kernel);
    memo.insert(
        &Probe::new(
            spec.content_id(),
            None,
            &g,
            &a,
            read,
            Access::ROWS,
            &mut KeyBuf::new(),
        ),
        1,
    );
    let memo_hit = ns_per_call(n, || {
        let mut buf = KeyBuf::new();
        let p = Probe::new(
            spec.content_id(),
            None,
            &g,
            &a,
            read,
            Access::ROWS,
            &mut buf,
        );
        std::hint::black_box(memo.get(&p).unwrap());
    });
    let generics = ns_per_call(n, || {
        std::hint::black_box([<f32 as crate::Element>::DTYPE]);
    });
    println!("before (full path, per launch): bindings map {bindings:.1} ns, args {args:.1}, default_config {default:.1}, check {checked:.1}, fn-cache SipHash key {fn_key:.1}; sum {:.1} ns",
        bindings + args + default + checked + fn_key);
    println!("after (memo hit, per launch): generics array {generics:.1} ns, args {args:.1}, memo probe+lookup {memo_hit:.1}; sum {:.1} ns",
        generics + args + memo_hit);
}

fn stats(rt: &Runtime) -> LaunchMemoStats {
    rt.launch_memo_stats()
}

#[test]
fn identical_launches_hit_and_every_key_part_misses() {
    let spec = scale_kernel(true);
    let rt = Runtime::cpu();
    let x = Tensor1::<f32>::from_fn(&rt, [5], |[i]| i as f32).unwrap();
    let mut y = Tensor1::<f32>::zeros(&rt, [5]).unwrap();
    let b = f32s();
    let go = |x: &Tensor1<f32>, y: &mut Tensor1<f32>, r: usize| {
        launch(
            &rt,
            spec,
            &b,
            &mut [Arg::from(x), Arg::from(y), Arg::from(r)],
        )
    };
    go(&x, &mut y, 3).unwrap();
    assert_eq!((stats(&rt).hits, stats(&rt).misses), (0, 1));
    go(&x, &mut y, 3).unwrap();
    go(&x, &mut y, 3).unwrap();
    assert_eq!((stats(&rt).hits, stats(&rt).misses), (2, 1));
    assert_eq!(y.to_vec().unwrap(), x.to_vec().unwrap());
    // By-name bindings and generated launchers' ordered element types share entries.
    launch(
        &rt,
        spec,
        &[DType::F32],
        &mut [Arg::from(&x), Arg::from(&mut y), Arg::from(3usize)],
    )
    .unwrap();
    assert_eq!(stats(&rt).hits, 3);

    // A scalar the constraint reads: its value is part of the key.
    go(&x, &mut y, 4).unwrap();
    assert_eq!((stats(&rt).hits, stats(&rt).misses), (3, 2));
    // Shape.
    let x7 = Tensor1::<f32>::from_fn(&rt, [7], |[i]| i as f32).unwrap();
    let mut y7 = Tensor1::<f32>::zeros(&rt, [7]).unwrap();
    go(&x7, &mut y7, 3).unwrap();
    assert_eq!(stats(&rt).misses, 3);
    assert_eq!(y7.to_vec().unwrap(), x7.to_vec().unwrap());
    // Stride (a strided view of the same extents).
    let xs =
        Tensor1::<f32>::from_vec_strided(&rt, (0..10).map(|i| i as f32).collect(), [5], [2], 0)
            .unwrap();
    go(&xs, &mut y, 3).unwrap();
    assert_eq!(stats(&rt).misses, 4);
    assert_eq!(y.to_vec().unwrap(), vec![0.0, 2.0, 4.0, 6.0, 8.0]);
    // Element type.
    let xb = Tensor1::<bf16>::from_fn(&rt, [5], |[i]| bf16::from_f32(i as f32)).unwrap();
    let mut yb = Tensor1::<bf16>::zeros(&rt, [5]).unwrap();
    launch(
        &rt,
        spec,
        &[DType::BF16],
        &mut [Arg::from(&xb), Arg::from(&mut yb), Arg::from(3usize)],
    )
    .unwrap();
    assert_eq!(stats(&rt).misses, 5);
    // Configuration: an explicit one (even the default) is another key, each its own.
    let cfg = |s: &str| Config::parse(s).unwrap();
    for (i, c) in [
        "BLOCK=2048,WARPS=4",
        "BLOCK=1024,WARPS=4",
        "BLOCK=1024,WARPS=8",
    ]
    .into_iter()
    .enumerate()
    {
        let args = &mut [Arg::from(&x), Arg::from(&mut y), Arg::from(3usize)];
        launch_with(&rt, spec, &cfg(c), &b, args).unwrap();
        assert_eq!(stats(&rt).misses, 6 + i as u64, "{c}");
        launch_with(&rt, spec, &cfg(c), &b, args).unwrap();
        assert_eq!(stats(&rt).hits, 4 + i as u64, "{c}");
    }
    assert_eq!(stats(&rt).entries, 8);
    // A second runtime has its own memo.
    let rt2 = Runtime::cpu();
    assert_eq!(stats(&rt2), LaunchMemoStats::default());
}

#[test]
fn unread_scalars_share_an_entry() {
    // Without the constraint nothing on the host reads `repeats`: any value hits.
    let spec = scale_kernel(false);
    let rt = Runtime::cpu();
    let x = Tensor1::<f32>::from_fn(&rt, [5], |[i]| i as f32).unwrap();
    let mut y = Tensor1::<f32>::zeros(&rt, [5]).unwrap();
    for r in [0usize, 1, 1000] {
        launch(
            &rt,
            spec,
            &f32s(),
            &mut [Arg::from(&x), Arg::from(&mut y), Arg::from(r)],
        )
        .unwrap();
    }
    assert_eq!((stats(&rt).hits, stats(&rt).misses), (2, 1));
    // But a usize above i64::MAX is refused after a hit on the same kernel.
    let e = launch(
        &rt,
        spec,
        &f32s(),
        &mut [Arg::from(&x), Arg::from(&mut y), Arg::from(usize::MAX)],
    )
    .unwrap_err();
    assert!(matches!(e, LaunchError::ScalarRange { .. }), "{e}");
    // Issue 32, item 9: the message says the value is out of range (it used to read
    // "expected an i64 or usize scalar, found a usize scalar").
    let msg = e.to_string();
    assert!(
        msg.contains("18446744073709551615 is out of range") && msg.contains("9223372036854775807"),
        "{msg}"
    );
    assert_eq!(stats(&rt).hits, 2);
}

#[test]
fn a_failing_launch_never_hits() {
    let spec = scale_kernel(true);
    let rt = Runtime::cpu();
    let x = Tensor1::<f32>::from_fn(&rt, [5], |[i]| i as f32).unwrap();
    let mut y = Tensor1::<f32>::full(&rt, [5], -7.0).unwrap();
    let b = f32s();
    launch(
        &rt,
        spec,
        &b,
        &mut [Arg::from(&x), Arg::from(&mut y), Arg::from(3usize)],
    )
    .unwrap();
    let before = stats(&rt);
    let mut y = Tensor1::<f32>::full(&rt, [5], -7.0).unwrap();
    let untouched = |y: &Tensor1<f32>| y.to_vec().unwrap().iter().all(|&v| v == -7.0);
    let xh = Tensor1::<bf16>::zeros(&rt, [5]).unwrap();
    let x2 = Tensor2::<f32>::zeros(&rt, [5, 1]).unwrap();
    let x6 = Tensor1::<f32>::zeros(&rt, [6]).unwrap();
    // Each refused twice: the second time must give the same answer (no entry was made).
    for _ in 0..2 {
        // `(x, y, repeats)` with the given `x` and `repeats`, `T = f32`: an error.
        let mut refused = |x: Arg<'_>, repeats: Arg<'_>| {
            launch(&rt, spec, &b, &mut [x, Arg::from(&mut y), repeats]).unwrap_err()
        };
        let e = refused(Arg::from(&x), Arg::from(101usize));
        assert!(matches!(e, LaunchError::ArgConstraint { .. }), "{e}");
        let e = refused(Arg::from(&xh), Arg::from(3usize));
        assert!(matches!(e, LaunchError::DType { .. }), "{e}");
        let e = refused(Arg::from(&x2), Arg::from(3usize));
        assert!(matches!(e, LaunchError::Rank { .. }), "{e}");
        let e = refused(Arg::from(&x6), Arg::from(3usize));
        assert!(matches!(e, LaunchError::Shape { .. }), "{e}");
        let e = refused(Arg::from(&x), Arg::from(3i32));
        assert!(matches!(e, LaunchError::ArgKind { .. }), "{e}");
        let e = launch(&rt, spec, &b, &mut [Arg::from(&x), Arg::from(&mut y)]).unwrap_err();
        assert!(matches!(e, LaunchError::ArgCount { .. }), "{e}");
        let e = launch(
            &rt,
            spec,
            &Bindings::single("T", DType::I32),
            &mut [Arg::from(&x), Arg::from(&mut y), Arg::from(3usize)],
        )
        .unwrap_err();
        assert!(matches!(e, LaunchError::Bindings { .. }), "{e}");
        let e = launch(
            &rt,
            spec,
            &[DType::F32, DType::F32],
            &mut [Arg::from(&x), Arg::from(&mut y), Arg::from(3usize)],
        )
        .unwrap_err();
        assert!(matches!(e, LaunchError::Bindings { .. }), "{e}");
        let e = launch_with(
            &rt,
            spec,
            &Config::parse("BLOCK=3,WARPS=4").unwrap(),
            &b,
            &mut [Arg::from(&x), Arg::from(&mut y), Arg::from(3usize)],
        )
        .unwrap_err();
        assert!(matches!(e, LaunchError::Config { .. }), "{e}");
    }
    assert!(untouched(&y));
    let after = stats(&rt);
    assert_eq!(after.hits, before.hits, "a refused launch hit the memo");
    assert_eq!(
        after.entries, before.entries,
        "a refused launch made an entry"
    );
}

#[test]
fn probe_keys() {
    let spec = scale_like();
    let kernel = &spec.analyzed().unwrap().kernel;
    let read = spec.host_scalars(kernel);
    assert_eq!(read, &[false, false, false]);
    let limited = scale_kernel(true);
    let k2 = &limited.analyzed().unwrap().kernel;
    assert_eq!(limited.host_scalars(k2), &[false, false, true]);
    let rt = Runtime::cpu();
    let x = Tensor1::<f32>::zeros(&rt, [4]).unwrap();
    let xs = Tensor1::<f32>::from_vec_strided(&rt, vec![0.0; 8], [4], [2], 0).unwrap();
    let mut y = Tensor1::<f32>::zeros(&rt, [4]).unwrap();
    let memo: Memo<u32> = Memo::default();
    let g = [DType::F32];
    let c = spec.default_config().unwrap();
    // The memo's answer for a key (each probe on its own buffer).
    let get = |spec: u64,
               config: Option<&Config>,
               g: &[DType],
               a: &[Arg<'_>],
               read: &[bool],
               aligned: bool| {
        memo.get(&Probe::new(
            spec,
            config,
            g,
            a,
            read,
            aligned.into(),
            &mut KeyBuf::new(),
        ))
    };
    {
        let a = [Arg::from(&x), Arg::from(&mut y), Arg::from(1usize)];
        memo.insert(
            &Probe::new(1, None, &g, &a, read, Access::ROWS, &mut KeyBuf::new()),
            7,
        );
        assert_eq!(get(1, None, &g, &a, read, true), Some(7));
        // Spec, config, generics, alignment class: each its own key.
        assert_eq!(get(2, None, &g, &a, read, true), None);
        assert_eq!(get(1, Some(&c), &g, &a, read, true), None);
        assert_eq!(get(1, None, &[DType::F16], &a, read, true), None);
        assert_eq!(get(1, None, &g, &a, read, false), None);
        // Each Cols mask is its own key too (a column-major operand runs another variant).
        let cols = |m: u64| {
            memo.get(&Probe::new(
                1,
                None,
                &g,
                &a,
                read,
                Access::with_cols(m),
                &mut KeyBuf::new(),
            ))
        };
        assert_eq!(cols(0), Some(7));
        assert_eq!(cols(0b1), None);
        assert_eq!(cols(0b10), None);
        // An unknown parameter's scalar counts as read.
        assert_eq!(get(1, None, &g, &a, &[], true), None);
    }
    {
        let a = [Arg::from(&xs), Arg::from(&mut y), Arg::from(1usize)];
        assert_eq!(get(1, None, &g, &a, read, true), None);
    }
    {
        let a = [Arg::from(&x), Arg::from(&mut y), Arg::from(1i64)];
        assert_eq!(get(1, None, &g, &a, read, true), None);
        let a = [Arg::from(&x), Arg::from(&mut y), Arg::from(2usize)];
        assert_eq!(get(1, None, &g, &a, read, true), Some(7));
        assert_eq!(get(1, None, &g, &a, &[true, true, true], true), None);
    }
    assert_eq!(memo.stats().entries, 1);
    // What a hit tests for overlap: a written tensor and another tensor, both with elements.
    let empty = Tensor2::<f32>::zeros(&rt, [0, 3]).unwrap();
    let mut wide = Tensor2::<f32>::zeros(&rt, [3, 4]).unwrap();
    let overlaps = |a: &[Arg<'_>]| {
        Probe::new(1, None, &g, a, read, Access::ROWS, &mut KeyBuf::new()).overlaps()
    };
    let o = overlaps(&[Arg::from(&x), Arg::from(&mut y), Arg::from(1usize)]);
    assert_eq!((o.writes, o.tensors, o.all), (0b10, 0b11, false));
    let o = overlaps(&[Arg::from(&empty), Arg::from(&mut wide), Arg::from(1usize)]);
    assert!(o.none(), "{o:?}");
    let o = overlaps(&[Arg::from(&x), Arg::from(&x), Arg::from(1usize)]);
    assert!(o.none(), "{o:?}");
    // A key longer than the stack buffer (more than 8 tensors) takes the heap, alike.
    let reads = |n: usize| -> Vec<Arg<'_>> { (0..n).map(|_| Arg::from(&x)).collect() };
    let many = reads(10);
    let fewer = reads(9);
    memo.insert(
        &Probe::new(3, None, &g, &many, read, Access::ROWS, &mut KeyBuf::new()),
        9,
    );
    assert_eq!(get(3, None, &g, &many, read, true), Some(9));
    assert_eq!(get(3, None, &g, &fewer, read, true), None);
    let mut other = reads(10);
    other[9] = Arg::from(&xs);
    assert_eq!(get(3, None, &g, &other, read, true), None);
}
