//! A user's binary with `tilekit::cli_main` over its own kernel (`src/bin/my_kernels.rs`,
//! one dependency): the commands see that kernel, and only it.

use assert_cmd::Command;

fn my_kernels(cache: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_my-kernels"));
    c.env("TILEKIT_TUNE_CACHE", cache);
    c
}

fn stdout(c: &mut Command) -> String {
    String::from_utf8(c.assert().success().get_output().stdout.clone()).unwrap()
}

#[test]
fn list_and_show_serve_the_users_kernel() {
    let dir = std::env::temp_dir().join(format!("tilekit-user-cli-{}", std::process::id()));
    let out = stdout(my_kernels(&dir).arg("list"));
    assert!(out.contains("double"), "{out}");
    assert!(out.contains("BLOCK = [1024, 4096]"), "{out}");
    assert!(!out.contains("softmax"), "only the user's kernels: {out}");
    let cuda = stdout(my_kernels(&dir).args([
        "show",
        "double",
        "--stage",
        "cuda",
        "--config",
        "BLOCK=4096,WARPS=8",
        "--dtype",
        "bf16",
    ]));
    assert!(cuda.contains("kernel `double`"), "{cuda}");
    let help = stdout(my_kernels(&dir).arg("--help"));
    assert!(help.contains("Usage: my-kernels"), "{help}");
}

#[test]
fn unknown_kernel_and_no_gpu_are_clear() {
    let dir = std::env::temp_dir().join(format!("tilekit-user-cli-b-{}", std::process::id()));
    let a = my_kernels(&dir)
        .args(["show", "softmax"])
        .assert()
        .failure();
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("no kernel `softmax` in this program (kernels: double)"),
        "{err}"
    );
    // `tune` without a visible GPU exits with 2 and says why (with one, it tunes).
    let a = my_kernels(&dir)
        .env("CUDA_VISIBLE_DEVICES", "")
        .args([
            "tune", "--kernel", "double", "--shape", "4096", "--dtype", "f32",
        ])
        .assert()
        .code(2);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(err.contains("needs a CUDA GPU"), "{err}");
}

/// The timing helper on the CPU backend: warm-up, then the median of the host times.
#[test]
fn time_median_times_a_launch() {
    use tilekit::prelude::*;
    let rt = Runtime::cpu();
    let x = Tensor1::<f32>::from_vec(&rt, (0..4096).map(|i| i as f32).collect(), [4096]).unwrap();
    let mut y = Tensor1::<f32>::zeros(&rt, [4096]).unwrap();
    let t = tilekit::time_median(&rt, 1, 3, || {
        tilekit_kernels::scale_chain::launch(&rt, &x, &mut y, 1)
    })
    .unwrap();
    assert!(t.as_nanos() > 0);
    assert_eq!(y.to_vec().unwrap()[4095], 8190.0);
}

/// `--shard I/N` is checked before anything else: its form, and that it goes with --all.
#[test]
fn shard_flag_is_checked() {
    let dir = std::env::temp_dir().join(format!("tilekit-user-cli-c-{}", std::process::id()));
    let a = my_kernels(&dir)
        .args(["tune", "--all", "--shard", "4/4"])
        .assert()
        .code(2);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(err.contains("`4/4` is not a shard: write I/N"), "{err}");
    let a = my_kernels(&dir)
        .args([
            "tune", "--kernel", "double", "--shape", "4096", "--shard", "0/2",
        ])
        .assert()
        .code(2);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(err.contains("--all"), "{err}");
}
