//! Tensor lists (issue 30 item 7): kernels whose parameters are lists of tensors
//! (`&[Tensor1<T>]`), launched once over every member. CPU: the library's `adamw_list`
//! against an f64 reference and bit for bit against one `adamw` launch per member, a
//! user's list kernel (member-local `program_id` / `num_programs`, a shared tensor and
//! scalar), and every refusal (nothing written). GPU (ignored in CI; on the GPU machine
//! `.gpu/tests/tensor_lists-* --ignored`): the same kernels against the CPU backend, with
//! misaligned members, repeated steps over the kept tables, a changed list, and a capture.

use tilekit::prelude::*;
use tilekit::{Arg, LaunchArg, LaunchError};
use tilekit_kernels::{adamw_step, adamw_step_list, AdamW};
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
        let gt: Vec<_> = g
            .iter()
            .map(|x| Tensor1::from_vec(rt, x.clone(), [x.len()]).unwrap())
            .collect();
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
    let x: Vec<_> = xs
        .iter()
        .map(|v| Tensor1::from_vec(&rt, v.clone(), [v.len()]).unwrap())
        .collect();
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
    let x: Vec<_> = xs
        .iter()
        .map(|v| Tensor1::from_vec(&rt, v.clone(), [v.len()]).unwrap())
        .collect();
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
            let want = scale_ids_ref(&xi[skip..], s, 0.25, block);
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
