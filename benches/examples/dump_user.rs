//! Prints one code-generator stage of a user kernel's variant (`tilekit_codegen::dump`),
//! the way a user's own binary can show what runs:
//!
//! ```text
//! cargo run -p tilekit-benches --example dump_user -- transpose2d cuda BM=64,BN=64,WARPS=4 bf16
//! cargo run -p tilekit-benches --example dump_user -- log_softmax full BLOCK=4096,WARPS=16 bf16 unaligned
//! cargo run -p tilekit-benches --example dump_user -- matmul full BM=128,BN=128,BK=32,STAGES=5,WARPS=4,SMEM=Swizzle128 bf16 cols=a,b
//! ```
//!
//! The optional last argument picks the access classes: `unaligned` (every tensor
//! `General`), `cols=a,b` (the tensors named `Cols`, the others `Rows`), `general` (the
//! tensors beside the dot operands `General`, `tilekit_codegen::general_operands`: a
//! misaligned matmul output), `cols=a+general` (both); default: `Rows`.
//!
//! Library kernels (`tilekit_kernels::ALL`) are found by name too.
//!
//! Stages: `ir`, `layouts`, `smem`, `cuda` (the template's printer output), `full` (the
//! variant's complete NVRTC source, wrapper included), or `resources` (compiled with NVRTC
//! for sm_90a: registers, spills, threads, as `tilekit show --resources` reports them), or
//! `cubin` (that compilation's cubin written to the path in `TK_CUBIN_OUT`, default
//! `kernel.cubin`, for `cuobjdump -sass` where the GPU machine is not at hand; with
//! `TK_SOURCE_IN=path` it compiles that file, an edited `full` printout, instead).
use anyhow::{anyhow, Context, Result};
use tilekit_codegen::{dump, Access, Stage, Target, Variant};

fn main() -> Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let (name, stage, config, dtype, access) = match a.as_slice() {
        [n, s, c, d] => (n, s, c, d, None),
        [n, s, c, d, u] => (n, s, c, d, Some(u.as_str())),
        _ => {
            return Err(anyhow!(
                "usage: dump_user KERNEL STAGE CONFIG DTYPE [unaligned | general | cols=NAME,..[+general]]"
            ))
        }
    };
    let spec = tilekit_benches::user_kernels::ALL
        .iter()
        .chain(tilekit_benches::attention::ALL)
        .chain(tilekit_kernels::ALL)
        .find(|s| s.name == name)
        .ok_or_else(|| anyhow!("no user kernel `{name}`"))?;
    let k = spec.kernel()?;
    let c = tilekit_ir::Config::parse(config).map_err(|e| anyhow!("bad config `{config}`: {e}"))?;
    let c = k.space.validate(&c)?;
    let d = tilekit_ir::DType::parse(dtype).ok_or_else(|| anyhow!("bad dtype `{dtype}`"))?;
    let mut b = tilekit_ir::Bindings::default();
    for g in &k.generics {
        b.0.insert(g.clone(), d);
    }
    let general = tilekit_codegen::general_operands(k)?;
    let (access, with_general) = match access.map(|u| u.strip_suffix("+general")) {
        Some(Some(u)) => (Some(u), true),
        _ => (access, false),
    };
    let access = match access {
        None => Access::ROWS,
        Some("unaligned") => Access::GENERAL,
        Some("general") => Access::with_classes(0, general),
        Some(u) => {
            let names = u
                .strip_prefix("cols=")
                .ok_or_else(|| anyhow!("expected `unaligned` or `cols=NAME,..`, not `{u}`"))?;
            let mut mask = 0u64;
            for n in names.split(',') {
                let i = k
                    .params
                    .iter()
                    .position(|p| p.name == n)
                    .filter(|&i| i < 64)
                    .ok_or_else(|| anyhow!("`{name}` has no parameter `{n}`"))?;
                mask |= 1 << i;
            }
            Access::with_cols(mask)
        }
    };
    let access = if with_general {
        Access::with_classes(access.cols(), general)
    } else {
        access
    };
    let target = Target::parse("sm_90a").context("target")?;
    let v = Variant {
        config: c,
        bindings: b,
        access,
        target,
    };
    if stage == "resources" {
        let key = tilekit_tuner::VariantKey {
            config: v.config.clone(),
            bindings: v.bindings.clone(),
            target: v.target,
            access: v.access,
        };
        let r = tilekit_tuner::resources::compile_resources(spec, k, &key)
            .map_err(|e| anyhow!("{e}"))?;
        println!(
            "{name} {}: {} registers, {} B spill stores, {} B local, {} threads, {} B dynamic smem",
            v.config, r.registers, r.spill_bytes, r.local_bytes, r.threads, r.smem_dynamic_bytes
        );
    } else if stage == "cubin" {
        // `TK_SOURCE_IN`: compile that file (an edited `full` printout) instead.
        let source = match std::env::var("TK_SOURCE_IN") {
            Ok(path) => {
                std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?
            }
            Err(_) => tilekit_codegen::variant_source(k, spec.cuda_template, &v)?,
        };
        let opts = tilekit_runtime::nvrtc::CompileOptions::new(v.target.arch())?;
        let cubin = tilekit_runtime::nvrtc::compile_cubin(
            &source,
            &format!("{}.cu", spec.name),
            tilekit_codegen::prelude_headers(),
            &opts,
        )?;
        let path = std::env::var("TK_CUBIN_OUT").unwrap_or_else(|_| "kernel.cubin".into());
        std::fs::write(&path, &cubin.bytes).with_context(|| format!("writing {path}"))?;
        println!(
            "{name} {}: {} bytes of cubin in {path}, {} registers, {} B spill stores",
            v.config,
            cubin.bytes.len(),
            cubin.registers.unwrap_or(0),
            cubin.spill_bytes.unwrap_or(0)
        );
    } else if stage == "full" {
        print!(
            "{}",
            tilekit_codegen::variant_source(k, spec.cuda_template, &v)?
        );
    } else {
        let st = Stage::parse(stage).ok_or_else(|| anyhow!("unknown stage `{stage}`"))?;
        print!("{}", dump(k, Some(&v), st)?);
    }
    Ok(())
}
