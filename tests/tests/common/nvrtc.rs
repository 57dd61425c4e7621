//! NVRTC compiles of a test's own kernels: every covering variant
//! (`tilekit_tuner::covering_variants`) for sm_80 and sm_90a, as CI's `nvrtc_variants`
//! test does for the library's.

use tilekit_codegen::Target;

/// Compiles every covering variant of `specs` for sm_80 and sm_90a with NVRTC (`file`: the
/// source's name in NVRTC's messages) and returns how many compiled; panics with the
/// kernel, configuration and NVRTC's log on the first failure. With `TK_DUMP_CU=DIR` each
/// source is also written to `DIR/<kernel>-<config>-<target>.cu`. Call it after
/// `tilekit_tests::support::nvrtc_or_skip()`.
pub fn compile_covering(specs: &[&tilekit::KernelSpec], file: &str) -> usize {
    let opts80 = tilekit_runtime::nvrtc::CompileOptions::new("sm_80").expect("options");
    let opts90 = tilekit_runtime::nvrtc::CompileOptions::new("sm_90a").expect("options");
    let mut compiled = 0;
    for spec in specs {
        let kernel = spec.kernel().expect("kernel IR");
        for v in tilekit_tuner::covering_variants(kernel, &[Target::Sm80, Target::Sm90a]) {
            let v = v.to_variant();
            let src =
                tilekit_codegen::variant_source(kernel, spec.cuda_template, &v).expect("source");
            if let Ok(dir) = std::env::var("TK_DUMP_CU") {
                let _ = std::fs::write(
                    format!("{dir}/{}-{}-{:?}.cu", spec.name, v.config, v.target),
                    &src,
                );
            }
            let opts = if v.target == Target::Sm80 {
                &opts80
            } else {
                &opts90
            };
            tilekit_runtime::nvrtc::compile_cubin(
                &src,
                file,
                tilekit_codegen::prelude_headers(),
                opts,
            )
            .unwrap_or_else(|e| panic!("{} {}: {e}", spec.name, v.config));
            compiled += 1;
        }
    }
    compiled
}
