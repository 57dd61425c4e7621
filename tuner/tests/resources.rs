//! A variant's resources from NVRTC without a GPU, and the compiled-phase constraints
//! (`registers()`, `spills()`) decided on them as the tuner decides them.

use tilekit::prelude::*;
use tilekit_codegen::Target;
use tilekit_tuner::resources::compile_resources;
use tilekit_tuner::VariantKey;

/// A row copy whose constraints no compiled variant can meet: every variant needs more
/// than 4 registers.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [256], WARPS = [4])]
#[constraint(registers() <= 4)]
#[constraint(spills() == 0)]
#[shapes(x = [M, N], y = [M, N])]
fn tight(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let mask = cols < x.cols();
    store(
        y.row(row),
        cols,
        load(x.row(row), cols, mask, 0.0) * 2.0,
        mask,
    );
}

#[test]
fn compiled_constraints_are_decided_on_nvrtc_resources() {
    if !tilekit_runtime::nvrtc::nvrtc_available() {
        let why = "NVRTC is not available (run `cargo xtask cuda-setup` and set TILEKIT_CUDA_ROOT)";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("SKIPPED: {why}");
        return;
    }
    let kernel = tight::SPEC.kernel().unwrap();
    let v = VariantKey {
        config: kernel.space.default_config(),
        bindings: Default::default(),
        target: Target::Sm80,
        access: tilekit_codegen::Access::ROWS,
    };
    let r = compile_resources(&tight::SPEC, kernel, &v).unwrap();
    assert!(r.registers > 4, "{r:?}");
    assert_eq!(
        (r.threads, r.local_bytes, r.spill_bytes),
        (128, 0, 0),
        "{r:?}"
    );
    let why = r.constraints.unwrap_err();
    assert!(why.contains("registers() <= 4"), "{why}");
}
