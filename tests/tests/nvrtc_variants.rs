//! NVRTC compiles every library kernel's variants for sm_80 and sm_90a.
//!
//! CI compiles every valid variant of a kernel whose valid set has at most
//! [`FULL_SPACE_LIMIT`] variants, and otherwise a pairwise covering subset (tuning values,
//! element types, target and alignment are all factors) plus every default;
//! `TILEKIT_COMPILE_ALL=1` (`cargo xtask compile-all`) compiles every valid variant of all;
//! `TILEKIT_COMPILE_KERNELS=gelu,swiglu` only the kernels named (a quick local check;
//! `!matmul,softmax` all but those); `TILEKIT_COMPILE_SHARD=i/n` only the variants whose
//! index in a kernel's chosen list is `i` modulo `n` (to split `compile-all` over machines or
//! calls: shards `0/n` .. `n-1/n` together are the whole set); `TILEKIT_COMPILE_DRY=1` only
//! counts the variants; `TILEKIT_COMPILE_MEMO=DIR` records each successful compilation in
//! `DIR` under its `compilation_key` (source, options, target, NVRTC version, prelude) and
//! skips variants recorded there, so a `compile-all` after a change compiles only the
//! variants whose text changed (`cargo xtask compile-all` uses `target/compile-memo`). A
//! failure prints the NVRTC log and the numbered generated source. Without NVRTC the test is
//! skipped, except under `CI=true`, where that is a failure. `TILEKIT_COMPILE_UNALIGNED=1`
//! keeps only the variants with some tensor read `General` (element-wise accesses: to
//! re-check those alone after a change to how they are generated).

use rayon::prelude::*;
use std::time::Instant;
use tilekit_codegen::{prelude_headers, variant_source, Target};
use tilekit_runtime::nvrtc::{compilation_key, compile_cubin, CompileOptions};
use tilekit_tuner::{covering_variants, valid_variants};

/// Largest valid set compiled in full by default.
const FULL_SPACE_LIMIT: usize = 32;

#[test]
fn every_kernel_variant_compiles_with_nvrtc() {
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let full = std::env::var("TILEKIT_COMPILE_ALL").as_deref() == Ok("1");
    let targets = [Target::Sm80, Target::Sm90a];
    let headers = prelude_headers();
    let start = Instant::now();
    let mut summary = Vec::new();
    let mut total = [0usize; 2];
    let mut total_reused = 0usize;
    let only = std::env::var("TILEKIT_COMPILE_KERNELS")
        .ok()
        .filter(|o| !o.trim().is_empty());
    let wanted = |name: &str| match only.as_deref() {
        None => true,
        Some(o) => match o.strip_prefix('!') {
            Some(except) => !except.split(',').any(|k| k.trim() == name),
            None => o.split(',').any(|k| k.trim() == name),
        },
    };
    let shard = shard_from_env();
    let unaligned_only = std::env::var("TILEKIT_COMPILE_UNALIGNED").as_deref() == Ok("1");
    for spec in tilekit_kernels::ALL.iter().filter(|s| wanted(s.name)) {
        let kernel = spec.kernel().expect("library kernel IR");
        let all = valid_variants(kernel, &targets);
        let chosen = if full || all.len() <= FULL_SPACE_LIMIT {
            all.clone()
        } else {
            covering_variants(kernel, &targets)
        };
        let chosen: Vec<_> = chosen
            .into_iter()
            .filter(|v| !unaligned_only || !v.access.is_aligned())
            .enumerate()
            .filter(|(i, _)| i % shard.1 == shard.0)
            .map(|(_, v)| v)
            .collect();
        if std::env::var("TILEKIT_COMPILE_DRY").as_deref() == Ok("1") {
            summary.push(format!(
                "  {:<12} {:>5} of {:>5} valid variants (not compiled: TILEKIT_COMPILE_DRY)",
                spec.name,
                chosen.len(),
                all.len()
            ));
            continue;
        }
        let t0 = Instant::now();
        let memo = memo_dir();
        let reused = std::sync::atomic::AtomicUsize::new(0);
        let results: Vec<Result<(usize, f64), String>> = chosen
            .par_iter()
            .map(|v| {
                let src = variant_source(kernel, spec.cuda_template, &v.to_variant())
                    .map_err(|e| format!("{v}: {e}"))?;
                let opts = CompileOptions::new(v.target.arch()).map_err(|e| e.to_string())?;
                let target = usize::from(v.target == Target::Sm90a);
                let key = match &memo {
                    Some(dir) => {
                        let key = compilation_key(&src, &opts).map_err(|e| e.to_string())?;
                        if dir.join(&key).is_file() {
                            reused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            return Ok((target, 0.0));
                        }
                        Some(dir.join(key))
                    }
                    None => None,
                };
                let name = format!("{}.cu", spec.name);
                let cubin = compile_cubin(&src, &name, headers, &opts)
                    .map_err(|e| format!("variant {v}\n{e}"))?;
                if let Some(path) = key {
                    std::fs::write(&path, v.to_string())
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                }
                Ok((target, cubin.seconds))
            })
            .collect();
        let reused = reused.into_inner();
        total_reused += reused;
        let slowest = results
            .iter()
            .zip(&chosen)
            .filter_map(|(r, v)| r.as_ref().ok().map(|(_, s)| (*s, v)))
            .filter(|(s, _)| *s > 0.0)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(s, v)| format!("; slowest {s:.1} s: {v}"))
            .unwrap_or_default();
        let mut per = [0usize; 2];
        for r in &results {
            match r {
                Ok((t, _)) => per[*t] += 1,
                Err(e) => panic!("NVRTC failed for kernel `{}`:\n{e}", spec.name),
            }
        }
        total[0] += per[0];
        total[1] += per[1];
        let secs: f64 = results
            .iter()
            .filter_map(|r| r.as_ref().ok().map(|(_, s)| *s))
            .sum();
        let line = format!(
            "  {:<12} {:>4} of {:>5} valid variants: sm_80 {:>3}, sm_90a {:>3}{}; {:.1} s wall, {:.2} s NVRTC per variant compiled{}",
            spec.name,
            chosen.len(),
            all.len(),
            per[0],
            per[1],
            if memo.is_some() {
                format!(" ({reused} of them compiled earlier with the same key)")
            } else {
                String::new()
            },
            t0.elapsed().as_secs_f64(),
            secs / (chosen.len() - reused).max(1) as f64,
            slowest
        );
        // Printed as each kernel finishes too, so that a long run shows its progress.
        println!("{line}");
        summary.push(line);
    }
    println!(
        "NVRTC variant compilation ({}; shard {}/{}):",
        if full {
            "every valid variant"
        } else {
            "every valid variant, pairwise covering subset + defaults above the limit"
        },
        shard.0,
        shard.1
    );
    for s in &summary {
        println!("{s}");
    }
    println!(
        "NVRTC compiled {} variants: sm_80 {}, sm_90a {} in {:.1} s{}",
        total[0] + total[1],
        total[0],
        total[1],
        start.elapsed().as_secs_f64(),
        if total_reused > 0 {
            format!(" ({total_reused} of them compiled earlier with the same key, TILEKIT_COMPILE_MEMO)")
        } else {
            String::new()
        }
    );
}

/// `TILEKIT_COMPILE_MEMO`: the directory of recorded successful compilations (created).
fn memo_dir() -> Option<std::path::PathBuf> {
    let dir = std::path::PathBuf::from(std::env::var_os("TILEKIT_COMPILE_MEMO")?);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        panic!("TILEKIT_COMPILE_MEMO={}: {e}", dir.display());
    }
    Some(dir)
}

/// `TILEKIT_COMPILE_SHARD=i/n` as `(i, n)`; `(0, 1)` (everything) when unset.
fn shard_from_env() -> (usize, usize) {
    let Ok(text) = std::env::var("TILEKIT_COMPILE_SHARD") else {
        return (0, 1);
    };
    let parsed = text
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
    match parsed {
        Some((i, n)) if n > 0 && i < n => (i, n),
        _ => panic!("TILEKIT_COMPILE_SHARD={text}: expected i/n with 0 <= i < n"),
    }
}

/// The copy kernel `PAD64` launches before a padded launch (`tilekit_runtime::cuda`,
/// built as IR at run time, so not among the library's kernels) compiles for every element
/// type and target, in the general variant it runs (a misaligned source) and the aligned
/// one.
#[test]
fn the_pad64_copy_kernel_compiles_with_nvrtc() {
    if !tilekit_runtime::nvrtc::nvrtc_available() {
        eprintln!("SKIPPED: NVRTC is not available");
        return;
    }
    let spec = tilekit_runtime::cuda::pad64_copy_spec();
    let kernel = spec.kernel().expect("the copy kernel's IR");
    let variants = valid_variants(kernel, &[Target::Sm80, Target::Sm90a]);
    assert_eq!(
        variants.len(),
        3 * 2 * 2,
        "f32/f16/bf16 x targets x general/rows"
    );
    let failures: Vec<String> = variants
        .par_iter()
        .filter_map(|v| {
            let compiled = variant_source(kernel, spec.cuda_template, &v.to_variant())
                .map_err(|e| e.to_string())
                .and_then(|src| {
                    let opts = CompileOptions::new(v.target.arch()).map_err(|e| e.to_string())?;
                    compile_cubin(&src, "tilekit_pad64_copy.cu", prelude_headers(), &opts)
                        .map_err(|e| e.to_string())
                });
            compiled.err().map(|e| format!("{v}: {e}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
