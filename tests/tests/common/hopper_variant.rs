//! A Hopper-engine variant from a configuration literal, shared by `hopper_engine.rs` and
//! `hopper_pingpong.rs`.

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
