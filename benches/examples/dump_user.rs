//! Prints one code-generator stage of a user kernel's variant (`tilekit_codegen::dump`),
//! the way a user's own binary can show what runs:
//!
//! ```text
//! cargo run -p tilekit-benches --example dump_user -- transpose2d cuda BM=64,BN=64,WARPS=4 bf16
//! cargo run -p tilekit-benches --example dump_user -- log_softmax full BLOCK=4096,WARPS=16 bf16 unaligned
//! ```
//!
//! Library kernels (`tilekit_kernels::ALL`) are found by name too.
//!
//! Stages: `ir`, `layouts`, `smem`, `cuda` (the template's printer output), or `full` (the
//! variant's complete NVRTC source, wrapper included).
use anyhow::{anyhow, Context, Result};
use tilekit_codegen::{dump, Stage, Target, Variant};

fn main() -> Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let (name, stage, config, dtype, aligned) = match a.as_slice() {
        [n, s, c, d] => (n, s, c, d, true),
        [n, s, c, d, u] if u == "unaligned" => (n, s, c, d, false),
        _ => {
            return Err(anyhow!(
                "usage: dump_user KERNEL STAGE CONFIG DTYPE [unaligned]"
            ))
        }
    };
    let spec = tilekit_benches::user_kernels::ALL
        .iter()
        .chain(tilekit_benches::attention::ALL)
        .chain(tilekit_benches::norm_candidates::ALL)
        .chain(tilekit_kernels::ALL)
        .find(|s| s.name == name)
        .ok_or_else(|| anyhow!("no user kernel `{name}`"))?;
    let k = spec.kernel()?;
    let c = tilekit_ir::Config::parse(config).ok_or_else(|| anyhow!("bad config `{config}`"))?;
    let c = k.space.validate(&c)?;
    let d = tilekit_ir::DType::parse(dtype).ok_or_else(|| anyhow!("bad dtype `{dtype}`"))?;
    let mut b = tilekit_ir::Bindings::default();
    for g in &k.generics {
        b.0.insert(g.clone(), d);
    }
    let target = Target::parse("sm_90a").context("target")?;
    let v = Variant {
        config: c,
        bindings: b,
        aligned,
        target,
    };
    if stage == "full" {
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
