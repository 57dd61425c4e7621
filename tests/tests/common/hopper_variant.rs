//! A Hopper-engine variant from a configuration literal, and the access class of a GEMM
//! whose C is misaligned, and an NVRTC check of a variant, shared by the `hopper_*.rs` tests.

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

/// NVRTC compiles `config` of `spec` for sm_90a with each access class in `accesses`, its
/// source containing `needle`, with no wgmma serialized by ptxas and at most `allowed`
/// bytes spilled (the clustered and split-tail tests).
#[allow(dead_code)] // not every test file that includes this module compiles variants
pub fn nvrtc_compiles(
    spec: &tilekit::KernelSpec,
    config: &str,
    accesses: &[Access],
    needle: &str,
    allowed: u32,
) {
    use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};
    let opts = CompileOptions::new("sm_90a").expect("options");
    let k = spec.kernel().expect("kernel IR");
    for &access in accesses {
        let what = format!("{} {config} {access}", k.name);
        let v = variant(k, config, DType::BF16, access, Target::Sm90a);
        let src = tilekit_codegen::variant_source(k, spec.cuda_template, &v).expect("source");
        assert!(src.contains(needle), "{what}: no `{needle}`");
        let cubin = compile_cubin(
            &src,
            "variant.cu",
            tilekit_codegen::prelude_headers(),
            &opts,
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let log = cubin.log.to_lowercase();
        assert!(
            !["serialized", "c7510", "c7514", "c7515", "c7507"]
                .iter()
                .any(|w| log.contains(w)),
            "{what}: {}",
            cubin.log
        );
        assert!(
            cubin.spill_bytes.is_some_and(|b| b <= allowed),
            "{what}: {:?} bytes spilled",
            cubin.spill_bytes
        );
        eprintln!(
            "{what}: {:.2} s NVRTC, {:?} registers",
            cubin.seconds, cubin.registers
        );
    }
}
