//! `launch()` and compiled constraints on CUDA (issue 30 item 6): a configuration whose
//! compiled variant fails `registers()` / `spills()` is passed over by `launch()` and
//! refused by `launch_with`. Ignored in CI; on the GPU machine
//! `.gpu/tests/gpu_launch_constraints-* --ignored`.

use tilekit::prelude::*;
use tilekit::{Config, LaunchError};

fn gpu() -> Runtime {
    Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"))
}

/// Spills at BLOCK = 16384 (one or two warps: 512 or 256 f32 per thread, live
/// across the row's max), not at BLOCK = 1024; counts its programs with `atomic_add`.
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [16384, 1024], WARPS = [1, 2])]
#[constraint(spills() == 0)]
#[shapes(x = [N], y = [N], programs = [ONE], ONE = 1)]
fn spills_at_default(x: &Tensor1<f32>, y: &mut Tensor1<f32>, programs: &mut Tensor1<i32>) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.len();
    let v = load(x, offs, mask, 0.0);
    store(y, offs, v - max(v, 0), mask);
    atomic_add(programs, 0, 1);
}

/// `launch()` checks compiled constraints on CUDA (issue 30 item 6): the default spills,
/// so the launch runs the first configuration that does not (BLOCK = 1024: 98 programs
/// for 100,000 elements), and `launch_with` the spilling one is refused.
#[test]
#[ignore = "needs a CUDA GPU"]
fn launch_passes_over_a_configuration_that_spills() {
    let rt = gpu();
    let n = 100_000;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let x = Tensor1::from_vec(&rt, xs.clone(), [n]).unwrap();
    let mut y = Tensor1::<f32>::zeros(&rt, [n]).unwrap();
    let mut programs = Tensor1::<i32>::zeros(&rt, [1]).unwrap();
    spills_at_default::launch(&rt, &x, &mut y, &mut programs).unwrap();
    assert_eq!(programs.to_vec().unwrap(), vec![98], "BLOCK = 1024 ran");
    let want: Vec<f32> = xs
        .chunks(1024)
        .flat_map(|c| {
            let m = c.iter().cloned().fold(f32::MIN, f32::max);
            c.iter().map(move |v| v - m)
        })
        .collect();
    assert_eq!(y.to_vec().unwrap(), want);
    let spilling = Config::parse("BLOCK=16384,WARPS=1").unwrap();
    let e = spills_at_default::launch_with(&rt, &spilling, &x, &mut y, &mut programs).unwrap_err();
    assert!(
        matches!(e, LaunchError::Constraint { .. }) && e.to_string().contains("spills()"),
        "{e}"
    );
}
