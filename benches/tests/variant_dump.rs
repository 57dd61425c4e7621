//! Developer tool (ignored tests, run by hand): one variant's generated CUDA and CUBIN, and
//! the ptxas figures of every kernel's first `rows` variant, for reading the SASS without a
//! GPU. Session 26 found each of its code-generator wins this way (a stack frame in every
//! 3-D `load_tile`, loads waiting behind each other, split vector stores).
//!
//! ```text
//! export TILEKIT_CUDA_ROOT=$PWD/.cuda-wheels/nvidia/cu13 LD_LIBRARY_PATH=$PWD/.cuda-wheels/nvidia/cu13/lib
//! K=rotary3d DT=bf16 ACC=rows I=0 OUT=/tmp/variant \
//!   cargo test -p tilekit-benches --test variant_dump dump -- --ignored --nocapture
//! # /tmp/variant.cu and /tmp/variant.cubin; the SASS with the `nvidia-cuda-cuobjdump` and
//! # `nvidia-cuda-nvdisasm` wheels (unzipped, their bin/ on PATH):
//! cuobjdump -sass /tmp/variant.cubin
//! F=norm cargo test -p tilekit-benches --test variant_dump survey -- --ignored --nocapture
//! ```
//!
//! `K` names a library or benches kernel, `DT` a binding's text (`bf16`, `f32`), `ACC` an
//! access class (`rows`, `general`), `I` the index among the matching sm_90a variants.

use tilekit_benches::user_kernels::{stencil5, ALL};
use tilekit_codegen::{prelude_headers, variant_source, Target, Variant};
use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

/// Every kernel the tool knows: the benches' user kernels and the library's.
fn specs() -> Vec<&'static tilekit::KernelSpec> {
    ALL.iter()
        .copied()
        .chain([&stencil5::SPEC])
        .chain(tilekit_kernels::ALL.iter().copied())
        .collect()
}

/// The sm_90a variants of `spec` whose bindings contain `dt` and access contains `acc`.
fn variants(spec: &tilekit::KernelSpec, dt: &str, acc: &str) -> Vec<Variant> {
    let kernel = spec.kernel().expect("kernel IR");
    tilekit_tuner::valid_variants(kernel, &[Target::Sm90a])
        .iter()
        .map(|v| v.to_variant())
        .filter(|v| v.bindings.to_string().contains(dt) && v.access.to_string().contains(acc))
        // `CFG=text`: only configurations whose text contains it (`CFG=BN=256,BK=64,STAGES=5,WARPS=4`).
        .filter(|v| v.config.to_string().contains(&env("CFG", "")))
        .collect()
}

#[test]
#[ignore = "developer tool: writes one variant's CUDA and CUBIN (see the module doc)"]
fn dump() {
    let name = env("K", "rotary3d");
    let spec = specs()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no kernel `{name}`"));
    let index: usize = env("I", "0").parse().expect("I is an index");
    let v = variants(spec, &env("DT", "bf16"), &env("ACC", ""))
        .into_iter()
        .nth(index)
        .expect("a matching variant");
    let src =
        variant_source(spec.kernel().expect("kernel IR"), spec.cuda_template, &v).expect("source");
    let out = env("OUT", "/tmp/variant");
    std::fs::write(format!("{out}.cu"), &src).expect("write the source");
    let opts = CompileOptions::new(v.target.arch()).expect("options");
    let c = compile_cubin(&src, "variant.cu", prelude_headers(), &opts).expect("NVRTC");
    std::fs::write(format!("{out}.cubin"), &c.bytes).expect("write the CUBIN");
    // ptxas's warnings (a serialized wgmma says why here).
    for l in c
        .log
        .lines()
        .filter(|l| l.contains("arning") || l.contains("serialized"))
    {
        println!("{l}");
    }
    println!(
        "{} {} [{}]: registers {:?}, spill bytes {:?}, {:.2} s -> {out}.cu, {out}.cubin",
        v.access, v.config, v.bindings, c.registers, c.spill_bytes, c.seconds
    );
}

#[test]
#[ignore = "developer tool: ptxas figures of every kernel's first rows variant (see the module doc)"]
fn survey() {
    let filter = env("F", "");
    for spec in specs().into_iter().filter(|s| s.name.contains(&filter)) {
        let Some(v) = variants(spec, &env("DT", ""), "rows").into_iter().next() else {
            continue;
        };
        let kernel = spec.kernel().expect("kernel IR");
        let src = variant_source(kernel, spec.cuda_template, &v).expect("source");
        let opts = CompileOptions::new(v.target.arch()).expect("options");
        let c = compile_cubin(&src, "variant.cu", prelude_headers(), &opts).expect("NVRTC");
        let stack: Vec<&str> = c
            .log
            .lines()
            .filter(|l| l.contains("stack frame"))
            .collect();
        println!(
            "{:28} {} [{}] registers {:?} spill bytes {:?} {}",
            spec.name,
            v.config,
            v.bindings,
            c.registers,
            c.spill_bytes,
            stack.join(" | ").trim()
        );
    }
}
