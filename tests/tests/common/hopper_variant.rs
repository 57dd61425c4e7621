//! A Hopper-engine variant from a configuration literal, and the access class of a GEMM
//! whose C is misaligned, shared by the `hopper_*.rs` tests.

use tilekit_codegen::{Access, Target, Variant};
use tilekit_ir::{Bindings, Config, DType, Kernel};

/// The kernel's declared default with the literal's values in place, `T` bound to `t`.
pub fn variant(kernel: &Kernel, config: &str, t: DType, access: Access, target: Target) -> Variant {
    // The declared default with the literal's values in place.
    let given = Config::parse(config).expect("config literal");
    let mut config = kernel.space.default_config();
    for (name, value) in &mut config.values {
        if let Some(v) = given.get(name) {
            *value = v.clone();
        }
    }
    Variant {
        config,
        bindings: Bindings::single("T", t),
        access,
        target,
    }
}

/// The access class with the GEMM's operands (`a`, `b`: TMA needs them aligned) in rows
/// and every other tensor `General` (C misaligned: the staged store's word path; a bias
/// with it).
#[allow(dead_code)] // not every test file that includes this module reads it
pub fn c_misaligned(k: &Kernel) -> Access {
    let general = k
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.kind, tilekit_ir::ParamKind::Tensor { .. }))
        .filter(|(_, p)| p.name != "a" && p.name != "b")
        .fold(0u64, |m, (i, _)| m | 1 << i);
    Access::with_classes(0, general)
}
