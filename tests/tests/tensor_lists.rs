//! Tensor lists (issue 30 item 7): kernels whose parameters are lists of tensors
//! (`&[Tensor1<T>]`), launched once over every member. CPU: the library's `adamw_list`
//! against an f64 reference and bit for bit against one `adamw` launch per member, a
//! user's list kernel (member-local `program_id` / `num_programs`, a shared tensor and
//! scalar), and every refusal (nothing written). GPU (ignored in CI; on the GPU machine
//! `.gpu/tests/tensor_lists-* --ignored`): the same kernels against the CPU backend, with
//! misaligned members, repeated steps over the kept tables, a changed list, and a capture.

use tilekit::prelude::*;
use tilekit::{Arg, LaunchArg, LaunchError};
use tilekit_kernels::{
    adamw_step, adamw_step_list, adamw_step_master_list, clip_grad_norm_list, sgd_step_list, AdamW,
    Sgd,
};
use tilekit_tests::references::adamw_ref;
use tilekit_tests::support::Rng;

/// `y[i][j] = x[i][j] * s + bias[0] + 1000 * num_programs(0) + program_id(0)`: the program
/// ids a member sees are its own.
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [64, 128], WARPS = [1, 2])]
#[shapes(x = [N], y = [N], bias = [ONE], ONE = 1)]
fn scale_ids(x: &[Tensor1<f32>], y: &mut [Tensor1<f32>], bias: &Tensor1<f32>, s: f32) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.len();
    let b = load(bias, offs * 0, mask, 0.0);
    let ids = (num_programs(0) * 1000 + program_id(0)).to_f32();
    store(y, offs, load(x, offs, mask, 0.0) * s + b + ids, mask);
}

/// Counts the programs of a list launch twice (i64 and i32 counters) and sums every
/// member's elements (f32): one `atomic_add` of each per program, the last masked off for
/// odd program ids.
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [64, 256], WARPS = [1, 4])]
#[shapes(x = [N], n64 = [ONE], n32 = [ONE], total = [ONE], ONE = 1)]
fn count_and_sum(
    x: &[Tensor1<f32>],
    n64: &mut Tensor1<i64>,
    n32: &mut Tensor1<i32>,
    total: &mut Tensor1<f32>,
) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    atomic_add(n64, 0, 1);
    atomic_add(n32, 0, 1, program_id(0) % 2 == 0);
    atomic_add(total, 0, sum(load(x, offs, offs < x.len(), 0.0), 0));
}

/// What `count_and_sum` leaves: programs, even-numbered programs, the sum of every element.
fn count_and_sum_ref(xs: &[Vec<f32>], block: usize) -> (i64, i32, f64) {
    let programs = |n: usize| n.div_ceil(block);
    let n64 = xs.iter().map(|x| programs(x.len()) as i64).sum();
    let n32 = xs
        .iter()
        .map(|x| programs(x.len()).div_ceil(2) as i32)
        .sum();
    let total = xs.iter().flatten().map(|&v| f64::from(v)).sum();
    (n64, n32, total)
}

/// Runs `count_and_sum` on `rt` over members of `lens` and checks it against the reference.
fn check_count_and_sum(rt: &Runtime, lens: &[usize]) {
    let mut r = Rng(11);
    let xs: Vec<Vec<f32>> = lens.iter().map(|&n| r.vec(n, 1.0)).collect();
    let x = uploads(rt, &xs);
    for (config, block) in [("BLOCK=64,WARPS=1", 64), ("BLOCK=256,WARPS=4", 256)] {
        let mut n64 = Tensor1::<i64>::zeros(rt, [1]).unwrap();
        let mut n32 = Tensor1::<i32>::full(rt, [1], 5).unwrap();
        let mut total = Tensor1::<f32>::zeros(rt, [1]).unwrap();
        let config = Config::parse(config).unwrap();
        count_and_sum::launch_with(rt, &config, &x, &mut n64, &mut n32, &mut total).unwrap();
        let (w64, w32, wt) = count_and_sum_ref(&xs, block);
        assert_eq!(n64.to_vec().unwrap(), vec![w64], "{config}");
        assert_eq!(
            n32.to_vec().unwrap(),
            vec![w32 + 5],
            "{config}: added to what was there"
        );
        let t = f64::from(total.to_vec().unwrap()[0]);
        assert!(
            (t - wt).abs() <= 1e-3 * (1.0 + wt.abs()),
            "{config}: {t}, want {wt}"
        );
    }
}

#[test]
fn atomic_adds_count_every_program_and_sum_every_member() {
    check_count_and_sum(&Runtime::cpu(), &[130, 1, 0, 64, 257, 5000]);
}

/// `clip_grad_norm_list` against f64: the squared norm, and every member scaled by
/// `min(1, max_norm / (norm + 1e-6))`.
fn check_clip<T: Float>(rt: &Runtime, max_norm: f32, seed: u64) {
    let mut r = Rng(seed);
    let gs: Vec<Vec<T>> = LENS.iter().map(|&n| r.vec(n, 1.0)).collect();
    let mut g = uploads(rt, &gs);
    let mut sumsq = Tensor1::<f32>::full(rt, [1], f32::NAN).unwrap();
    clip_grad_norm_list(rt, &mut g, max_norm, &mut sumsq).unwrap();
    let want_sq: f64 = gs.iter().flatten().map(|v| v.to_f64() * v.to_f64()).sum();
    let sq = f64::from(sumsq.to_vec().unwrap()[0]);
    assert!(
        (sq - want_sq).abs() <= 1e-4 * want_sq,
        "sum of squares {sq}, want {want_sq}"
    );
    let coef = (f64::from(max_norm) / (want_sq.sqrt() + 1e-6)).min(1.0);
    let tol = if T::DTYPE == DType::F32 { 1e-5 } else { 8e-3 };
    for (i, (gi, g0)) in g.iter().zip(&gs).enumerate() {
        for (j, (a, b)) in gi.to_vec().unwrap().iter().zip(g0).enumerate() {
            let (a, w) = (a.to_f64(), b.to_f64() * coef);
            assert!(
                (a - w).abs() <= tol * (1e-3 + w.abs()),
                "member {i}[{j}] = {a}, want {w}"
            );
        }
    }
}

#[test]
fn clip_grad_norm_list_matches_the_f64_reference_and_refuses_bad_arguments() {
    let rt = Runtime::cpu();
    // Norms of the inputs are ~60: clipped to 1, and not clipped (max_norm above the norm).
    check_clip::<f32>(&rt, 1.0, 21);
    check_clip::<f32>(&rt, 1e4, 22);
    check_clip::<half::bf16>(&rt, 1.0, 23);
    let mut g = vec![Tensor1::<f32>::full(&rt, [4], 2.0).unwrap()];
    let mut sumsq = Tensor1::<f32>::full(&rt, [1], 9.0).unwrap();
    for bad in [-1.0, f32::NAN, f32::INFINITY] {
        let e = clip_grad_norm_list(&rt, &mut g, bad, &mut sumsq).unwrap_err();
        assert!(matches!(e, LaunchError::ArgConstraint { .. }), "{e}");
    }
    let mut empty = Tensor1::<f32>::zeros(&rt, [0]).unwrap();
    let e = clip_grad_norm_list(&rt, &mut g, 1.0, &mut empty).unwrap_err();
    assert!(matches!(e, LaunchError::ArgConstraint { .. }), "{e}");
    assert_eq!(g[0].to_vec().unwrap(), vec![2.0; 4], "nothing written");
    assert_eq!(sumsq.to_vec().unwrap(), vec![9.0], "nothing written");
}

/// What `scale_ids` writes into member `x` with `block` lanes per program.
fn scale_ids_ref(x: &[f32], s: f32, bias: f32, block: usize) -> Vec<f32> {
    let programs = x.len().div_ceil(block);
    x.iter()
        .enumerate()
        .map(|(j, v)| v * s + bias + (programs * 1000 + j / block) as f32)
        .collect()
}

/// A list's parameters after the steps, those of one launch per member, and the f64
/// reference.
type Stepped = (Vec<Vec<f32>>, Vec<Vec<f32>>, Vec<Vec<f64>>);

/// One tensor per member, holding `data`'s values.
fn uploads<T: tilekit::Element>(rt: &Runtime, data: &[Vec<T>]) -> Vec<Tensor1<T>> {
    data.iter()
        .map(|v| Tensor1::from_vec(rt, v.clone(), [v.len()]).unwrap())
        .collect()
}

/// Member lengths around the default block (2048), one empty member and a tiny one.
const LENS: [usize; 7] = [1, 2047, 0, 2048, 2049, 5000, 3];

/// Three AdamW steps over the list on `rt` with gradients of type `T`: the list's final
/// parameters, and those of one `adamw` launch per member on the same inputs.
fn adamw_three_steps<T: Float>(rt: &Runtime, r: &mut Rng) -> Stepped {
    let h = AdamW {
        lr: 1e-2,
        weight_decay: 0.1,
        ..AdamW::default()
    };
    let p0: Vec<Vec<f32>> = LENS.iter().map(|&n| r.vec(n, 1.0)).collect();
    let t1 = |v: &Vec<f32>| Tensor1::from_vec(rt, v.clone(), [v.len()]).unwrap();
    let z = |n: usize| Tensor1::<f32>::zeros(rt, [n]).unwrap();
    let mut p: Vec<_> = p0.iter().map(t1).collect();
    let mut m: Vec<_> = LENS.iter().map(|&n| z(n)).collect();
    let mut v: Vec<_> = LENS.iter().map(|&n| z(n)).collect();
    let mut p1: Vec<_> = p0.iter().map(t1).collect();
    let mut m1: Vec<_> = LENS.iter().map(|&n| z(n)).collect();
    let mut v1: Vec<_> = LENS.iter().map(|&n| z(n)).collect();
    let mut want: Vec<Vec<f64>> = p0
        .iter()
        .map(|x| x.iter().map(|&y| f64::from(y)).collect())
        .collect();
    let mut grads: Vec<Vec<Vec<f64>>> = vec![Vec::new(); LENS.len()];
    for step in 1..=3u64 {
        let g: Vec<Vec<T>> = LENS.iter().map(|&n| r.vec(n, 2.0)).collect();
        for (i, gi) in g.iter().enumerate() {
            grads[i].push(gi.iter().map(|x| x.to_f64()).collect());
        }
        let gt: Vec<_> = uploads(rt, &g);
        adamw_step_list(rt, &mut p, &gt, &mut m, &mut v, &h, step).unwrap();
        for i in 0..LENS.len() {
            adamw_step(rt, &mut p1[i], &gt[i], &mut m1[i], &mut v1[i], &h, step).unwrap();
        }
    }
    for (w, g) in want.iter_mut().zip(&grads) {
        adamw_ref(w, g, &h);
    }
    let got = p.iter().map(|t| t.to_vec().unwrap()).collect();
    let each = p1.iter().map(|t| t.to_vec().unwrap()).collect();
    (got, each, want)
}

fn assert_near_ref(got: &[Vec<f32>], want: &[Vec<f64>], what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.len(), w.len());
        for (j, (a, b)) in g.iter().zip(w).enumerate() {
            assert!(
                (f64::from(*a) - b).abs() <= 1e-5 * (1.0 + b.abs()),
                "{what}: member {i}[{j}] = {a}, want {b}"
            );
        }
    }
}

#[test]
fn adamw_list_matches_the_f64_reference_and_one_launch_per_member() {
    let rt = Runtime::cpu();
    let mut r = Rng(0x1157);
    let (got, each, want) = adamw_three_steps::<f32>(&rt, &mut r);
    assert_near_ref(&got, &want, "adamw_list f32");
    assert_eq!(
        got, each,
        "the list launch and one launch per member differ"
    );
    let (got, each, want) = adamw_three_steps::<half::bf16>(&rt, &mut r);
    assert_near_ref(&got, &want, "adamw_list bf16 gradients");
    assert_eq!(got, each);
}

#[test]
fn a_members_program_ids_are_its_own_and_shared_arguments_are_shared() {
    let rt = Runtime::cpu();
    let lens = [130usize, 1, 0, 64, 257];
    let mut r = Rng(7);
    let xs: Vec<Vec<f32>> = lens.iter().map(|&n| r.vec(n, 1.0)).collect();
    let x: Vec<_> = uploads(&rt, &xs);
    let mut y: Vec<_> = lens
        .iter()
        .map(|&n| Tensor1::<f32>::full(&rt, [n], f32::NAN).unwrap())
        .collect();
    let bias = Tensor1::from_vec(&rt, vec![0.25f32], [1]).unwrap();
    for (config, block) in [("BLOCK=64,WARPS=1", 64), ("BLOCK=128,WARPS=2", 128)] {
        let config = Config::parse(config).unwrap();
        scale_ids::launch_with(&rt, &config, &x, &mut y, &bias, 3.0).unwrap();
        for (i, (xi, yi)) in xs.iter().zip(&y).enumerate() {
            assert_eq!(
                yi.to_vec().unwrap(),
                scale_ids_ref(xi, 3.0, 0.25, block),
                "member {i}, {config}"
            );
        }
    }
}

#[test]
fn refused_list_launches_write_nothing() {
    let rt = Runtime::cpu();
    let h = AdamW::default();
    let full = |n: usize, v: f32| Tensor1::<f32>::full(&rt, [n], v).unwrap();
    let mut p = vec![full(4, 7.0), full(5, 7.0)];
    let g = vec![full(4, 1.0), full(5, 1.0)];
    let mut m = vec![full(4, 0.0), full(5, 0.0)];
    let mut v = vec![full(4, 0.0), full(5, 0.0)];
    let unchanged = |p: &[Tensor1<f32>], m: &[Tensor1<f32>]| {
        assert!(p
            .iter()
            .all(|t| t.to_vec().unwrap().iter().all(|x| *x == 7.0)));
        assert!(m
            .iter()
            .all(|t| t.to_vec().unwrap().iter().all(|x| *x == 0.0)));
    };
    // Lists of different lengths.
    let short_list = vec![full(4, 1.0)];
    let e = adamw_step_list(&rt, &mut p, &short_list, &mut m, &mut v, &h, 1).unwrap_err();
    assert!(matches!(e, LaunchError::TensorList { .. }), "{e}");
    assert!(e.to_string().contains("differ in length"), "{e}");
    unchanged(&p, &m);
    // The second member's gradient is short: the first member is not written either.
    let bad_member = vec![full(4, 1.0), full(3, 1.0)];
    let e = adamw_step_list(&rt, &mut p, &bad_member, &mut m, &mut v, &h, 1).unwrap_err();
    assert!(matches!(e, LaunchError::Shape { .. }), "{e}");
    unchanged(&p, &m);
    // A bad hyper-parameter and step 0.
    let e = adamw_step_list(
        &rt,
        &mut p,
        &g,
        &mut m,
        &mut v,
        &AdamW { lr: f32::NAN, ..h },
        1,
    )
    .unwrap_err();
    assert!(matches!(e, LaunchError::ArgConstraint { .. }), "{e}");
    let e = adamw_step_list(&rt, &mut p, &g, &mut m, &mut v, &h, 0).unwrap_err();
    assert!(matches!(e, LaunchError::ArgConstraint { .. }), "{e}");
    unchanged(&p, &m);
    // Empty lists: nothing to do.
    let none: Vec<Tensor1<f32>> = Vec::new();
    let mut pn: Vec<Tensor1<f32>> = Vec::new();
    let (mut mn, mut vn): (Vec<Tensor1<f32>>, Vec<Tensor1<f32>>) = (Vec::new(), Vec::new());
    adamw_step_list(&rt, &mut pn, &none, &mut mn, &mut vn, &h, 1).unwrap();
    // A kernel with lists through the plain launch, and a list where one tensor goes.
    let mut args: Vec<Arg> = p.iter_mut().map(Arg::from).collect();
    let e = tilekit::launch(
        &rt,
        &tilekit_kernels::adamw_list::SPEC,
        &[DType::F32][..],
        &mut args,
    )
    .unwrap_err();
    assert!(e.to_string().contains("launch_lists"), "{e}");
    let bias = full(1, 0.0);
    let x = [full(4, 1.0)];
    let mut y = [full(4, 0.0)];
    let e = tilekit::launch_lists(
        &rt,
        &scale_ids::SPEC,
        None,
        &[][..],
        vec![
            LaunchArg::One(Arg::from(&x[0])),
            LaunchArg::List(y.iter_mut().map(Arg::from).collect()),
            LaunchArg::One(Arg::from(&bias)),
            LaunchArg::One(Arg::from(1.0f32)),
        ],
    )
    .unwrap_err();
    assert!(e.to_string().contains("is a tensor list"), "{e}");
    unchanged(&p, &m);
}

/// SGD in f64 on one tensor, `grads.len()` steps (PyTorch's `torch.optim.SGD`).
fn sgd_ref(p: &mut [f64], grads: &[Vec<f64>], h: &Sgd) {
    let (lr, mom, damp, wd) = (
        f64::from(h.lr),
        f64::from(h.momentum),
        f64::from(h.dampening),
        f64::from(h.weight_decay),
    );
    let mut buf = vec![0.0; p.len()];
    for (t, g) in grads.iter().enumerate() {
        for i in 0..p.len() {
            let mut d = g[i] + wd * p[i];
            if mom > 0.0 {
                buf[i] = if t == 0 {
                    d
                } else {
                    mom * buf[i] + (1.0 - damp) * d
                };
                d = if h.nesterov { d + mom * buf[i] } else { buf[i] };
            }
            p[i] -= lr * d;
        }
    }
}

/// Three SGD steps over the list on `rt` (gradients of type `T`): the list's parameters
/// and the f64 reference.
fn sgd_three_steps<T: Float>(rt: &Runtime, h: &Sgd, r: &mut Rng) -> (Vec<Vec<f32>>, Vec<Vec<f64>>) {
    let p0: Vec<Vec<f32>> = LENS.iter().map(|&n| r.vec(n, 1.0)).collect();
    let mut p: Vec<_> = uploads(rt, &p0);
    // NaN: the first step must not read the buffers.
    let mut buf: Vec<_> = LENS
        .iter()
        .map(|&n| Tensor1::<f32>::full(rt, [n], f32::NAN).unwrap())
        .collect();
    let mut grads: Vec<Vec<Vec<f64>>> = vec![Vec::new(); LENS.len()];
    for step in 0..3 {
        let g: Vec<Vec<T>> = LENS.iter().map(|&n| r.vec(n, 2.0)).collect();
        for (i, gi) in g.iter().enumerate() {
            grads[i].push(gi.iter().map(|x| x.to_f64()).collect());
        }
        let gt: Vec<_> = uploads(rt, &g);
        sgd_step_list(rt, &mut p, &gt, &mut buf, h, step == 0).unwrap();
    }
    let mut want: Vec<Vec<f64>> = p0
        .iter()
        .map(|x| x.iter().map(|&y| f64::from(y)).collect())
        .collect();
    for (w, g) in want.iter_mut().zip(&grads) {
        sgd_ref(w, g, h);
    }
    (p.iter().map(|t| t.to_vec().unwrap()).collect(), want)
}

/// The SGD configurations the tests run: momentum (with dampening and decay), Nesterov,
/// and plain SGD (no buffer).
fn sgd_cases() -> [Sgd; 3] {
    [
        Sgd {
            lr: 0.05,
            momentum: 0.9,
            dampening: 0.1,
            weight_decay: 0.01,
            nesterov: false,
        },
        Sgd {
            lr: 0.05,
            momentum: 0.8,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: true,
        },
        Sgd {
            lr: 0.1,
            weight_decay: 0.02,
            ..Sgd::default()
        },
    ]
}

#[test]
fn sgd_list_matches_the_f64_reference() {
    let rt = Runtime::cpu();
    let mut r = Rng(0x59d);
    for h in sgd_cases() {
        let (got, want) = sgd_three_steps::<f32>(&rt, &h, &mut r);
        assert_near_ref(&got, &want, &format!("sgd_list {h:?}"));
        let (got, want) = sgd_three_steps::<half::bf16>(&rt, &h, &mut r);
        assert_near_ref(&got, &want, &format!("sgd_list bf16 gradients {h:?}"));
    }
    // Nesterov without momentum, or with dampening; a negative rate: refused, nothing written.
    let full = |n: usize, v: f32| Tensor1::<f32>::full(&rt, [n], v).unwrap();
    let mut p = vec![full(4, 7.0)];
    let g = vec![full(4, 1.0)];
    let mut buf = vec![full(4, 0.0)];
    for h in [
        Sgd {
            nesterov: true,
            ..Sgd::default()
        },
        Sgd {
            nesterov: true,
            momentum: 0.9,
            dampening: 0.5,
            ..Sgd::default()
        },
        Sgd {
            lr: -1.0,
            ..Sgd::default()
        },
        Sgd {
            dampening: 1.5,
            momentum: 0.9,
            ..Sgd::default()
        },
    ] {
        let e = sgd_step_list(&rt, &mut p, &g, &mut buf, &h, true).unwrap_err();
        assert!(matches!(e, LaunchError::ArgConstraint { .. }), "{h:?}: {e}");
    }
    assert!(p[0].to_vec().unwrap().iter().all(|x| *x == 7.0));
}

/// The model's bf16 parameters, the f32 master weights, and the f64 reference of the
/// master weights.
type Mastered = (Vec<Vec<half::bf16>>, Vec<Vec<f32>>, Vec<Vec<f64>>);

/// Three mixed-precision AdamW steps over the list on `rt`.
fn master_three_steps(rt: &Runtime, r: &mut Rng) -> Mastered {
    let h = AdamW {
        lr: 1e-2,
        weight_decay: 0.1,
        ..AdamW::default()
    };
    let m0: Vec<Vec<f32>> = LENS.iter().map(|&n| r.vec(n, 1.0)).collect();
    let mut master: Vec<_> = uploads(rt, &m0);
    let mut p: Vec<_> = LENS
        .iter()
        .map(|&n| Tensor1::<half::bf16>::full(rt, [n], half::bf16::NAN).unwrap())
        .collect();
    let z = |n: usize| Tensor1::<f32>::zeros(rt, [n]).unwrap();
    let mut m: Vec<_> = LENS.iter().map(|&n| z(n)).collect();
    let mut v: Vec<_> = LENS.iter().map(|&n| z(n)).collect();
    let mut grads: Vec<Vec<Vec<f64>>> = vec![Vec::new(); LENS.len()];
    for step in 1..=3u64 {
        let g: Vec<Vec<half::bf16>> = LENS.iter().map(|&n| r.vec(n, 2.0)).collect();
        for (i, gi) in g.iter().enumerate() {
            grads[i].push(gi.iter().map(|x| x.to_f64()).collect());
        }
        let gt: Vec<_> = uploads(rt, &g);
        adamw_step_master_list(rt, &mut master, &mut p, &gt, &mut m, &mut v, &h, step).unwrap();
    }
    let mut want: Vec<Vec<f64>> = m0
        .iter()
        .map(|x| x.iter().map(|&y| f64::from(y)).collect())
        .collect();
    for (w, g) in want.iter_mut().zip(&grads) {
        adamw_ref(w, g, &h);
    }
    (
        p.iter().map(|t| t.to_vec().unwrap()).collect(),
        master.iter().map(|t| t.to_vec().unwrap()).collect(),
        want,
    )
}

#[test]
fn adamw_master_list_updates_master_weights_and_rounds_the_model_parameters() {
    let rt = Runtime::cpu();
    let (p, master, want) = master_three_steps(&rt, &mut Rng(0x3a57));
    assert_near_ref(&master, &want, "master weights");
    for (i, (pi, mi)) in p.iter().zip(&master).enumerate() {
        let rounded: Vec<half::bf16> = mi.iter().map(|&x| half::bf16::from_f32(x)).collect();
        assert_eq!(
            pi, &rounded,
            "member {i}: the model's parameters are the master's, rounded"
        );
    }
}

use tilekit::ir::DType;

fn gpu() -> Runtime {
    Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"))
}

/// `a` against `b` in f64, within `assert_near_ref`'s bound.
fn assert_near(a: &[Vec<f32>], b: &[Vec<f32>], what: &str) {
    let b: Vec<Vec<f64>> = b
        .iter()
        .map(|m| m.iter().map(|&x| f64::from(x)).collect())
        .collect();
    assert_near_ref(a, &b, what);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn adamw_list_on_the_gpu_matches_the_cpu_backend() {
    let (cpu, gpu) = (Runtime::cpu(), gpu());
    for seed in [1u64, 2] {
        let (want, _, _) = adamw_three_steps::<f32>(&cpu, &mut Rng(seed));
        let (got, each, _) = adamw_three_steps::<f32>(&gpu, &mut Rng(seed));
        assert_near(&got, &want, "gpu vs cpu");
        // `adamw` per member may run another configuration: the same formula, rounded alike.
        assert_near(
            &got,
            &each,
            "the GPU's list launch vs its per-member launches",
        );
        let (want, _, _) = adamw_three_steps::<half::bf16>(&cpu, &mut Rng(seed));
        let (got, _, _) = adamw_three_steps::<half::bf16>(&gpu, &mut Rng(seed));
        assert_near(&got, &want, "gpu vs cpu, bf16 gradients");
    }
}

/// A kept list launch (same members) checks its `#[check]` scalars again: a NaN learning
/// rate or step 0 after good steps is refused and writes nothing; a good step after it runs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sgd_and_master_weight_lists_on_the_gpu_match_the_cpu_backend() {
    let (cpu, gpu) = (Runtime::cpu(), gpu());
    for h in sgd_cases() {
        let (want, _) = sgd_three_steps::<f32>(&cpu, &h, &mut Rng(5));
        let (got, _) = sgd_three_steps::<f32>(&gpu, &h, &mut Rng(5));
        assert_near(&got, &want, &format!("sgd gpu vs cpu {h:?}"));
        let (want, _) = sgd_three_steps::<half::bf16>(&cpu, &h, &mut Rng(6));
        let (got, _) = sgd_three_steps::<half::bf16>(&gpu, &h, &mut Rng(6));
        assert_near(
            &got,
            &want,
            &format!("sgd gpu vs cpu, bf16 gradients {h:?}"),
        );
    }
    let (_, want, _) = master_three_steps(&cpu, &mut Rng(7));
    let (p, master, _) = master_three_steps(&gpu, &mut Rng(7));
    assert_near(&master, &want, "master weights gpu vs cpu");
    for (i, (pi, mi)) in p.iter().zip(&master).enumerate() {
        let rounded: Vec<half::bf16> = mi.iter().map(|&x| half::bf16::from_f32(x)).collect();
        assert_eq!(
            pi, &rounded,
            "member {i}: the model's parameters are the master's, rounded"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn atomic_adds_and_clipping_on_the_gpu_match_the_references() {
    let rt = gpu();
    check_count_and_sum(&rt, &[130, 1, 0, 64, 257, 5000, 1 << 20]);
    check_clip::<f32>(&rt, 1.0, 21);
    check_clip::<f32>(&rt, 1e4, 22);
    check_clip::<half::bf16>(&rt, 1.0, 23);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kept_list_launch_checks_its_scalars_again_on_the_gpu() {
    let rt = gpu();
    let h = AdamW::default();
    let full = |n: usize, v: f32| Tensor1::<f32>::full(&rt, [n], v).unwrap();
    let mut p = vec![full(4000, 7.0), full(5, 7.0)];
    let g = vec![full(4000, 1.0), full(5, 1.0)];
    let mut m = vec![full(4000, 0.0), full(5, 0.0)];
    let mut v = vec![full(4000, 0.0), full(5, 0.0)];
    for step in 1..=2 {
        adamw_step_list(&rt, &mut p, &g, &mut m, &mut v, &h, step).unwrap();
    }
    let before: Vec<Vec<f32>> = p.iter().map(|t| t.to_vec().unwrap()).collect();
    let bad = AdamW { lr: f32::NAN, ..h };
    let e = adamw_step_list(&rt, &mut p, &g, &mut m, &mut v, &bad, 3).unwrap_err();
    assert!(matches!(e, LaunchError::ArgConstraint { .. }), "{e}");
    let e = adamw_step_list(&rt, &mut p, &g, &mut m, &mut v, &h, 0).unwrap_err();
    assert!(matches!(e, LaunchError::ArgConstraint { .. }), "{e}");
    let after: Vec<Vec<f32>> = p.iter().map(|t| t.to_vec().unwrap()).collect();
    assert_eq!(before, after, "a refused step wrote");
    // The same tensors with `p` passed read-only: the kept entry (same addresses and
    // layouts) must not let the kernel write through a read argument.
    let args = vec![
        LaunchArg::List(p.iter().map(Arg::from).collect()),
        LaunchArg::List(g.iter().map(Arg::from).collect()),
        LaunchArg::List(m.iter_mut().map(Arg::from).collect()),
        LaunchArg::List(v.iter_mut().map(Arg::from).collect()),
        LaunchArg::One(Arg::from(h.lr)),
        LaunchArg::One(Arg::from(h.beta1)),
        LaunchArg::One(Arg::from(h.beta2)),
        LaunchArg::One(Arg::from(h.eps)),
        LaunchArg::One(Arg::from(h.weight_decay)),
        LaunchArg::One(Arg::from(3i64)),
    ];
    let e = tilekit::launch_lists(
        &rt,
        &tilekit_kernels::adamw_list::SPEC,
        None,
        &[DType::F32][..],
        args,
    )
    .unwrap_err();
    assert!(matches!(e, LaunchError::ArgKind { .. }), "{e}");
    adamw_step_list(&rt, &mut p, &g, &mut m, &mut v, &h, 3).unwrap();
    let moved: Vec<Vec<f32>> = p.iter().map(|t| t.to_vec().unwrap()).collect();
    assert!(
        moved[0][0] < before[0][0] && moved[1][4] < before[1][4],
        "step 3 ran"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn list_program_ids_misaligned_members_changed_lists_and_capture_on_the_gpu() {
    let rt = gpu();
    let lens = [130usize, 1, 0, 64, 257, 100_000];
    let mut r = Rng(9);
    let xs: Vec<Vec<f32>> = lens.iter().map(|&n| r.vec(n + 1, 1.0)).collect();
    let x: Vec<_> = uploads(&rt, &xs);
    // Members that start one element into their tensors: the general variant.
    let xv: Vec<_> = x
        .iter()
        .zip(&lens)
        .map(|(t, &n)| t.narrow(0, 1, n).unwrap())
        .collect();
    let mut y: Vec<_> = lens
        .iter()
        .map(|&n| Tensor1::<f32>::full(&rt, [n], f32::NAN).unwrap())
        .collect();
    let bias = Tensor1::from_vec(&rt, vec![0.25f32], [1]).unwrap();
    // The GPU may contract `x * s + b` into one FMA (the reference rounds twice): within
    // 0.01, where a wrong program id or member is off by at least 1.
    let check = |y: &[Tensor1<f32>], s: f32, block: usize, skip: usize| {
        for (i, (xi, yi)) in xs.iter().zip(y).enumerate() {
            let want = scale_ids_ref(&xi[skip..skip + lens[i]], s, 0.25, block);
            let got = yi.to_vec().unwrap();
            assert_eq!(got.len(), want.len());
            for (j, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 0.01,
                    "member {i}[{j}], s = {s}: {g}, want {w}"
                );
            }
        }
    };
    for (config, block) in [("BLOCK=64,WARPS=1", 64), ("BLOCK=128,WARPS=2", 128)] {
        let config = Config::parse(config).unwrap();
        scale_ids::launch_with(&rt, &config, &xv, &mut y, &bias, 3.0).unwrap();
        check(&y, 3.0, block, 1);
        // Again (the kept tables), with another scalar.
        scale_ids::launch_with(&rt, &config, &xv, &mut y, &bias, -2.0).unwrap();
        check(&y, -2.0, block, 1);
        // The aligned members: other tables.
        let xa: Vec<_> = x
            .iter()
            .zip(&lens)
            .map(|(t, &n)| t.narrow(0, 0, n).unwrap())
            .collect();
        scale_ids::launch_with(&rt, &config, &xa, &mut y, &bias, 5.0).unwrap();
        check(&y, 5.0, block, 0);
    }
    // A capture after a warm-up launch replays the list launch.
    let config = Config::parse("BLOCK=128,WARPS=2").unwrap();
    scale_ids::launch_with(&rt, &config, &xv, &mut y, &bias, 4.0).unwrap();
    for t in &mut y {
        t.copy_from(&Tensor1::<f32>::full(&rt, [t.shape()[0]], f32::NAN).unwrap())
            .unwrap();
    }
    let graph = rt
        .capture(|rt| scale_ids::launch_with(rt, &config, &xv, &mut y, &bias, 4.0))
        .unwrap();
    graph.replay().unwrap();
    rt.synchronize().unwrap();
    check(&y, 4.0, 128, 1);
}
