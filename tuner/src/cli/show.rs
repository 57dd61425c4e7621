//! `tilekit show`: one variant's generated CUDA, a kernel's IR, or any stage of the code
//! generator (`--stage ir|layouts|smem|cuda`, through `tilekit_codegen::dump`); with
//! `--resources`, what each variant uses once compiled (`resources.rs`).

use serde_json::json;
use std::process::ExitCode;
use tilekit_codegen::{Access, AccessClass, Target, Variant};
use tilekit_ir::{Bindings, Config, DType, Kernel};

pub use super::show_args::ShowArgs;

/// Parses `--dtype`: one type for every generic, or `NAME=type` pairs.
pub fn parse_bindings(kernel: &Kernel, s: &str) -> anyhow::Result<Bindings> {
    let mut b = Bindings::default();
    let float = |t: &str| -> anyhow::Result<DType> {
        DType::parse(t.trim())
            .filter(|d| DType::FLOATS.contains(d))
            .ok_or_else(|| anyhow::anyhow!("`{t}` is not an element type (f32, f16, bf16)"))
    };
    if s.contains('=') {
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let (n, t) = part
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("`{part}`: expected NAME=type"))?;
            let n = n.trim();
            if !kernel.generics.iter().any(|g| g == n) {
                anyhow::bail!(
                    "kernel `{}` has no generic `{n}` (generics: {})",
                    kernel.name,
                    kernel.generics.join(", ")
                );
            }
            b.0.insert(n.to_string(), float(t)?);
        }
        if let Some(g) = kernel.generics.iter().find(|g| b.get(g).is_none()) {
            anyhow::bail!("--dtype gives no type for generic `{g}`");
        }
    } else {
        let d = float(s)?;
        for g in &kernel.generics {
            b.0.insert(g.clone(), d);
        }
    }
    Ok(b)
}

/// Parses `--access` (`a=cols,b=rows`, `c=general`: every tensor not named is `rows`) and
/// `--unaligned` into the variant's access classes (default: [`Access::ROWS`]). `general`
/// is accepted for the tensors beside dot operand tiles
/// ([`tilekit_codegen::general_operands`]), all of them together.
pub fn parse_access(kernel: &Kernel, unaligned: bool, s: Option<&str>) -> anyhow::Result<Access> {
    let Some(s) = s else {
        return Ok(Access::from(!unaligned));
    };
    let capable = tilekit_codegen::cols_operands(kernel)?;
    let general = tilekit_codegen::general_operands(kernel)?;
    let mut cols = 0u64;
    let mut named_general = 0u64;
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let (n, c) = part
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("`{part}`: expected NAME=rows or NAME=cols"))?;
        let (n, c) = (n.trim(), c.trim());
        let i = kernel
            .params
            .iter()
            .position(|p| p.name == n && matches!(p.kind, tilekit_ir::ParamKind::Tensor { .. }))
            .ok_or_else(|| anyhow::anyhow!("kernel `{}` has no tensor `{n}`", kernel.name))?;
        match AccessClass::parse(c) {
            Some(AccessClass::Rows) => {}
            Some(AccessClass::Cols) if i < 64 && capable >> i & 1 == 1 => cols |= 1 << i,
            Some(AccessClass::Cols) => anyhow::bail!(
                "`{n}` cannot be read column-major: only tensors read as dot operand tiles in shared memory can ({})",
                describe_mask(kernel, capable)
            ),
            Some(AccessClass::General) if i < 64 && general >> i & 1 == 1 => {
                named_general |= 1 << i
            }
            Some(AccessClass::General) => anyhow::bail!(
                "`{n}=general`: only the tensors beside dot operand tiles may be general alone ({}); the general variant reads every tensor as general (use --unaligned)",
                describe_mask(kernel, general)
            ),
            None => anyhow::bail!("`{c}` is not an access class (rows, cols, general)"),
        }
    }
    if named_general == 0 {
        return Ok(Access::with_cols(cols));
    }
    if named_general != general {
        anyhow::bail!(
            "the tensors beside the dot operands are general together: name all of {}",
            describe_mask(kernel, general)
        );
    }
    Ok(Access::with_classes(cols, general))
}

/// The names of the parameters of `mask` (`a, b`), or `none`.
fn describe_mask(kernel: &Kernel, mask: u64) -> String {
    let names: Vec<&str> = kernel
        .params
        .iter()
        .enumerate()
        .filter(|(i, _)| *i < 64 && mask >> i & 1 == 1)
        .map(|(_, p)| p.name.as_str())
        .collect();
    if names.is_empty() {
        "none in this kernel".into()
    } else {
        names.join(", ")
    }
}

/// Parses and validates `--config` against the kernel's space (default: declared default).
pub fn parse_config(kernel: &Kernel, s: Option<&str>) -> anyhow::Result<Config> {
    let Some(s) = s else {
        return Ok(kernel.space.default_config());
    };
    let c = Config::parse(s)
        .map_err(|e| anyhow::anyhow!("`{s}` is not a configuration (NAME=value,...): {e}"))?;
    Ok(kernel.space.validate(&c)?)
}

/// Runs `tilekit show`.
pub fn run(args: &ShowArgs) -> anyhow::Result<ExitCode> {
    let spec = super::find_kernel(&args.kernel)?;
    let kernel = spec.kernel()?;
    if args.ir {
        if args.json {
            let ir: serde_json::Value = serde_json::from_str(&kernel.to_json())?;
            outln!(
                "{}",
                serde_json::to_string_pretty(&json!({"kernel": spec.name, "ir": ir}))?
            );
        } else {
            out!("{kernel}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let config = parse_config(kernel, args.config.as_deref())?;
    let bindings = parse_bindings(kernel, &args.dtype)?;
    let target = Target::parse(&args.target)
        .ok_or_else(|| anyhow::anyhow!("unknown target `{}` (sm_80, sm_90a)", args.target))?;
    let access = parse_access(kernel, args.unaligned, args.access.as_deref())?;
    if args.resources {
        let one = args.config.is_some().then(|| config.clone());
        if let Some(c) = &one {
            if let Err(why) = crate::target_check(kernel, c, &bindings, target) {
                anyhow::bail!(
                    "{} [{c}] is not a valid variant for {}: {why}",
                    spec.name,
                    target.arch()
                );
            }
        }
        return super::resources::run(args, spec, kernel, one, &bindings, target, access);
    }
    if let Err(why) = crate::target_check(kernel, &config, &bindings, target) {
        anyhow::bail!(
            "{} [{config}] is not a valid variant for {}: {why}",
            spec.name,
            target.arch()
        );
    }
    let variant = Variant {
        config: config.clone(),
        bindings: bindings.clone(),
        access,
        target,
    };
    if let Some(stage) = &args.stage {
        let st = tilekit_codegen::Stage::parse(stage)
            .ok_or_else(|| anyhow::anyhow!("unknown stage `{stage}` (ir, layouts, smem, cuda)"))?;
        out!("{}", tilekit_codegen::dump(kernel, Some(&variant), st)?);
        return Ok(ExitCode::SUCCESS);
    }
    let source = tilekit_codegen::variant_source(kernel, spec.cuda_template, &variant)?;
    if args.json {
        let v = json!({
            "kernel": spec.name,
            "config": super::cache::config_json(&config),
            "bindings": bindings.to_string(),
            "target": target.arch(),
            "aligned": access.is_aligned(),
            "access": access.describe(kernel),
            "cuda": source,
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        out!("{source}");
    }
    Ok(ExitCode::SUCCESS)
}
