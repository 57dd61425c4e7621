//! A user's own command line, as the README shows it: one dependency (`tilekit` with the
//! `tune` feature), one kernel, and `main` handing both to `tilekit::cli_main`. The tests in
//! `tests/user_cli.rs` run it: `list`, `show --stage`, and `tune`/`bench` refusing without
//! a GPU (on a GPU they tune and time `double`, workers being this same binary).

use tilekit::prelude::*;

/// y = 2 x, elementwise.
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [1024, 4096], WARPS = [4, 8])]
#[shapes(x = [N], y = [N])]
#[cost(flops = N)]
pub fn double<T: Float>(x: &Tensor1<T>, y: &mut Tensor1<T>) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.len();
    store(
        y,
        offs,
        (load(x, offs, mask, 0.0).to_f32() * 2.0).cast::<T>(),
        mask,
    );
}

fn main() -> std::process::ExitCode {
    tilekit::cli_main(&[&double::SPEC])
}
