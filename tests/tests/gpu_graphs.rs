//! Launch graphs (`Runtime::capture`, `LaunchGraph::replay`).
//!
//! CPU (CI): a capture on the CPU backend is a typed error and runs nothing.
//! GPU (`#[ignore = "needs a CUDA GPU"]`; on the GPU machine
//! `.gpu/tests/gpu_graphs-* --ignored --test-threads=1`): replaying a captured sequence of
//! library kernels gives bit-for-bit the results of the same launches run eagerly, on fresh
//! random data written into the captured buffers before each replay (outputs poisoned with
//! NaN); a launch that would compile during a capture is refused with a typed error and the
//! capture is abandoned cleanly (stream back to normal mode, no compilation, the runtime
//! usable and able to capture again); captured tensors outlive the graph's users; a panic
//! in the closure, nested captures and a synchronize inside a capture.

use tilekit::prelude::*;
use tilekit::{Element, LaunchError};
use tilekit_kernels::{rmsnorm, scale_chain, softmax};
use tilekit_runtime::cudarc::driver::sys::CUstreamCaptureStatus;
use tilekit_runtime::{Backend, GraphError};
use tilekit_tests::support::Rng;

fn rng(what: &str) -> Rng {
    tilekit_tests::support::seeded_rng(what)
}

#[test]
fn cpu_capture_is_a_typed_error_and_runs_nothing() {
    let rt = Runtime::cpu();
    let mut ran = false;
    let r = rt.capture(|_| {
        ran = true;
        Ok(())
    });
    match r {
        Err(GraphError::Unsupported { backend }) => assert_eq!(backend, Backend::Cpu),
        other => panic!("expected GraphError::Unsupported, got {other:?}"),
    }
    assert!(!ran, "the closure must not run on the CPU backend");
    let msg = rt.capture(|_| Ok(())).unwrap_err().to_string();
    assert!(msg.contains("CUDA runtime"), "{msg}");
}

#[test]
fn graph_error_classifies_compile_during_capture() {
    let e = GraphError::Launch(LaunchError::Cuda {
        kernel: "k".into(),
        source: Box::new(tilekit_runtime::CudaLaunchError::NotLoadedForCapture {
            config: "BLOCK=128".into(),
        }),
    });
    assert!(e.is_not_loaded_for_capture());
    assert!(e.to_string().contains("warm-up"), "{e}");
    assert!(!GraphError::AlreadyCapturing.is_not_loaded_for_capture());
}

fn gpu() -> Runtime {
    Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"))
}

fn capture_status(rt: &Runtime) -> CUstreamCaptureStatus {
    rt.cuda_stream()
        .expect("a CUDA runtime")
        .capture_status()
        .expect("cuStreamIsCapturing")
}

/// Overwrites a device tensor's allocation with `data` on the runtime's stream.
fn write<T: Element, const R: usize>(rt: &Runtime, t: &mut Tensor<T, R>, data: &[T]) {
    let s = rt.cuda_stream().expect("a CUDA runtime").clone();
    let dst = t.as_cuda_slice_mut().expect("an owned device tensor");
    s.memcpy_htod(data, dst).expect("upload");
}

fn nan<T: Element>(n: usize) -> Vec<T> {
    vec![T::from_f64(f64::NAN); n]
}

fn bits<T: Element>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

/// softmax(x) -> t; rmsnorm(t, w) -> u; scale_chain(c, R=3) -> y (1-d), captured once,
/// replayed on fresh data; each replay against the same three launches run eagerly on new
/// tensors.
fn replay_matches_eager<T: Float>(m: usize, n: usize) {
    let rt = gpu();
    let mut r = rng(&format!("replay_matches_eager<{}> {m}x{n}", T::DTYPE));
    let mut x = Tensor2::<T>::from_vec(&rt, r.vec(m * n, 3.0), [m, n]).unwrap();
    let mut w = Tensor1::<T>::from_vec(&rt, r.vec(n, 1.0), [n]).unwrap();
    let mut t = Tensor2::<T>::zeros(&rt, [m, n]).unwrap();
    let mut u = Tensor2::<T>::zeros(&rt, [m, n]).unwrap();
    let mut c = Tensor1::<T>::from_vec(&rt, r.vec(m * n, 3.0), [m * n]).unwrap();
    let mut y = Tensor1::<T>::zeros(&rt, [m * n]).unwrap();
    // Warm-up: resolves and loads every variant of the sequence.
    softmax::launch(&rt, &x, &mut t).unwrap();
    rmsnorm::launch(&rt, &t, &w, &mut u, 1e-5).unwrap();
    scale_chain::launch(&rt, &c, &mut y, 3).unwrap();
    rt.synchronize().unwrap();
    let compiles = rt.cache_stats().compiles;

    let g = rt
        .capture(|rt| {
            softmax::launch(rt, &x, &mut t)?;
            rmsnorm::launch(rt, &t, &w, &mut u, 1e-5)?;
            scale_chain::launch(rt, &c, &mut y, 3)?;
            Ok(())
        })
        .unwrap();
    assert_eq!(g.launches(), 3);
    assert_eq!(
        capture_status(&rt),
        CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE
    );
    assert_eq!(rt.cache_stats().compiles, compiles, "nothing compiled");

    for round in 0..3 {
        let xs: Vec<T> = r.vec(m * n, 3.0);
        let ws: Vec<T> = r.vec(n, 1.0);
        write(&rt, &mut x, &xs);
        write(&rt, &mut w, &ws);
        let cs: Vec<T> = r.vec(m * n, 3.0);
        write(&rt, &mut c, &cs);
        write(&rt, &mut t, &nan::<T>(m * n));
        write(&rt, &mut u, &nan::<T>(m * n));
        write(&rt, &mut y, &nan::<T>(m * n));
        g.replay().unwrap();
        let got = y.to_vec().unwrap();

        let xe = Tensor2::<T>::from_vec(&rt, xs, [m, n]).unwrap();
        let we = Tensor1::<T>::from_vec(&rt, ws, [n]).unwrap();
        let mut te = Tensor2::<T>::from_vec(&rt, nan(m * n), [m, n]).unwrap();
        let mut ue = Tensor2::<T>::from_vec(&rt, nan(m * n), [m, n]).unwrap();
        let ce = Tensor1::<T>::from_vec(&rt, cs, [m * n]).unwrap();
        let mut ye = Tensor1::<T>::from_vec(&rt, nan(m * n), [m * n]).unwrap();
        softmax::launch(&rt, &xe, &mut te).unwrap();
        rmsnorm::launch(&rt, &te, &we, &mut ue, 1e-5).unwrap();
        scale_chain::launch(&rt, &ce, &mut ye, 3).unwrap();
        let want = ye.to_vec().unwrap();
        assert!(
            got.iter().all(|v| !v.to_f64().is_nan()),
            "round {round}: NaN left in the output"
        );
        assert_eq!(bits(&got), bits(&want), "round {round}: replay != eager");
        // The 2-d chain too.
        let (gu, wu) = (u.to_vec().unwrap(), ue.to_vec().unwrap());
        assert!(
            gu.iter().all(|v| !v.to_f64().is_nan()),
            "round {round}: NaN in u"
        );
        assert_eq!(
            bits(&gu),
            bits(&wu),
            "round {round}: rmsnorm replay != eager"
        );
    }
    assert_eq!(
        rt.cache_stats().compiles,
        compiles,
        "replays compile nothing"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_replay_matches_eager_f32() {
    replay_matches_eager::<f32>(37, 1000);
    replay_matches_eager::<f32>(128, 4096);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_replay_matches_eager_bf16() {
    replay_matches_eager::<tilekit::bf16>(61, 777);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_many_tiny_launches_replay() {
    // 100 launches, ping-ponging between two buffers: y = x * 2^k after k launches with R=1.
    let rt = gpu();
    let n = 1000;
    let mut r = rng("gpu_many_tiny_launches_replay");
    let mut a = Tensor1::<f32>::from_vec(&rt, r.vec(n, 1.0), [n]).unwrap();
    let mut b = Tensor1::<f32>::zeros(&rt, [n]).unwrap();
    scale_chain::launch(&rt, &a, &mut b, 1).unwrap();
    let g = rt
        .capture(|rt| {
            for _ in 0..50 {
                scale_chain::launch(rt, &a, &mut b, 1)?;
                scale_chain::launch(rt, &b, &mut a, 1)?;
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(g.launches(), 100);
    for _ in 0..2 {
        let xs: Vec<f32> = r.vec(n, 1.0);
        write(&rt, &mut a, &xs);
        g.replay().unwrap();
        let mut ae = Tensor1::<f32>::from_vec(&rt, xs, [n]).unwrap();
        let mut be = Tensor1::<f32>::zeros(&rt, [n]).unwrap();
        for _ in 0..50 {
            scale_chain::launch(&rt, &ae, &mut be, 1).unwrap();
            scale_chain::launch(&rt, &be, &mut ae, 1).unwrap();
        }
        assert_eq!(bits(&a.to_vec().unwrap()), bits(&ae.to_vec().unwrap()));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_compile_during_capture_is_refused_and_abandoned_cleanly() {
    let rt = gpu(); // a fresh runtime: its in-memory cache is empty
    let mut r = rng("gpu_compile_during_capture");
    let (m, n) = (19, 300);
    let xs: Vec<f32> = r.vec(m * n, 2.0);
    let x = Tensor2::<f32>::from_vec(&rt, xs.clone(), [m, n]).unwrap();
    let mut y = Tensor2::<f32>::from_vec(&rt, nan(m * n), [m, n]).unwrap();
    rt.synchronize().unwrap();
    let before = rt.cache_stats();

    // Not warmed up: refused, typed, and the capture is gone.
    let e = rt
        .capture(|rt| {
            softmax::launch(rt, &x, &mut y)?;
            Ok(())
        })
        .unwrap_err();
    assert!(e.is_not_loaded_for_capture(), "{e:?}");
    assert!(e.to_string().contains("softmax"), "{e}");
    assert_eq!(
        capture_status(&rt),
        CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE
    );
    let after = rt.cache_stats();
    assert_eq!(
        (after.compiles, after.disk_hits),
        (before.compiles, before.disk_hits),
        "nothing compiled or loaded during the capture"
    );
    rt.synchronize().unwrap();
    assert!(
        y.to_vec().unwrap().iter().all(|v| v.is_nan()),
        "nothing ran"
    );

    // An error the closure swallows still poisons the capture.
    let e = rt
        .capture(|rt| {
            let _ = softmax::launch(rt, &x, &mut y);
            Ok(())
        })
        .unwrap_err();
    assert!(e.is_not_loaded_for_capture(), "{e:?}");
    assert_eq!(
        capture_status(&rt),
        CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE
    );

    // The runtime is fine: eager launch (compiles now), then a capture that works.
    softmax::launch(&rt, &x, &mut y).unwrap();
    let want = y.to_vec().unwrap();
    let mut y2 = Tensor2::<f32>::from_vec(&rt, nan(m * n), [m, n]).unwrap();
    let g = rt
        .capture(|rt| {
            softmax::launch(rt, &x, &mut y2)?;
            Ok(())
        })
        .unwrap();
    g.replay().unwrap();
    assert_eq!(bits(&y2.to_vec().unwrap()), bits(&want));

    // A different shape of a loaded variant is a memo miss but needs no compilation.
    let x3 = Tensor2::<f32>::from_vec(&rt, r.vec(7 * n, 2.0), [7, n]).unwrap();
    let mut y3 = Tensor2::<f32>::zeros(&rt, [7, n]).unwrap();
    let g3 = rt.capture(|rt| softmax::launch(rt, &x3, &mut y3)).unwrap();
    g3.replay().unwrap();
    rt.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_capture_edge_cases() {
    let rt = gpu();
    let n = 513;
    let mut r = rng("gpu_capture_edge_cases");
    let xs: Vec<f32> = r.vec(n, 1.0);
    let x = Tensor1::<f32>::from_vec(&rt, xs.clone(), [n]).unwrap();
    let mut y = Tensor1::<f32>::zeros(&rt, [n]).unwrap();
    scale_chain::launch(&rt, &x, &mut y, 1).unwrap();
    rt.synchronize().unwrap();

    // Nested capture and synchronize inside a capture: typed errors; the outer capture lives.
    let g = rt
        .capture(|rt| {
            assert!(matches!(
                rt.capture(|_| Ok(())),
                Err(GraphError::AlreadyCapturing)
            ));
            assert!(rt.synchronize().is_err());
            scale_chain::launch(rt, &x, &mut y, 1)
        })
        .unwrap();
    assert_eq!(g.launches(), 1);

    // A panic in the closure ends the capture.
    let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = rt.capture(|rt| {
            scale_chain::launch(rt, &x, &mut y, 1)?;
            panic!("boom");
        });
    }));
    assert!(p.is_err());
    assert_eq!(
        capture_status(&rt),
        CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE
    );

    // An empty capture replays as a no-op.
    let empty = rt.capture(|_| Ok(())).unwrap();
    assert_eq!(empty.launches(), 0);
    empty.replay().unwrap();

    // Tensors dropped while a graph refers to them stay allocated until the graph is gone:
    // x's memory (and its contents) are still what the graph reads.
    let x2 = Tensor1::<f32>::from_vec(&rt, xs.clone(), [n]).unwrap();
    let mut y2 = Tensor1::<f32>::zeros(&rt, [n]).unwrap();
    let g2 = rt
        .capture(|rt| scale_chain::launch(rt, &x2, &mut y2, 1))
        .unwrap();
    drop(x2);
    // New allocations must not reuse x2's memory while g2 lives.
    let filler: Vec<Tensor1<f32>> = (0..8)
        .map(|_| Tensor1::<f32>::from_vec(&rt, vec![7.0; n], [n]).unwrap())
        .collect();
    g2.replay().unwrap();
    let got = y2.to_vec().unwrap();
    g.replay().unwrap();
    let want = y.to_vec().unwrap();
    assert_eq!(bits(&got), bits(&want));
    drop(g2);
    drop(filler);
    rt.synchronize().unwrap();
}
