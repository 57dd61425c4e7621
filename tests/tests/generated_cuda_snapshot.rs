//! The generated CUDA of every library kernel's default variant, pinned byte for byte: a
//! digest per (kernel, element type, target, access) in `snapshots/generated_cuda.txt`.
//!
//! It guards refactors of the compiler that must not change its output (issue 25's
//! "behaviour unchanged"): the default configuration with every generic bound to bf16 and
//! to f32, for sm_80 and sm_90a, with aligned rows (`Access::ROWS`) and element-wise
//! accesses (`Access::GENERAL`), where that variant is valid. After an intended change to
//! the output, re-record with `TILEKIT_BLESS=1` and say why in the commit.
//! Beside the defaults, every variant of the pairwise covering subset that CI compiles with
//! NVRTC (`tilekit_tuner::covering_variants`), so non-default tuning values, the Hopper
//! engine's variants and unaligned columns are pinned too.
//! `TILEKIT_SNAPSHOT_DUMP=DIR` also writes every source to `DIR` (to `diff -r` two commits).

use tilekit_codegen::{variant_source, Access, Target, Variant};
use tilekit_ir::{Bindings, DType};
use tilekit_tuner::covering_variants;

/// The recorded digests, embedded (test binaries may run on another machine).
const RECORDED: &str = include_str!("snapshots/generated_cuda.txt");

/// FNV-1a, 64 bits: stable across Rust versions and platforms (std's hasher is not).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One line per variant: `kernel dtype target access digest bytes`, in a fixed order, and
/// the sources by the line's first four fields.
fn current() -> (String, Vec<(String, String)>) {
    let mut lines = String::new();
    let mut sources = Vec::new();
    for spec in tilekit_kernels::ALL.iter() {
        let kernel = spec.kernel().expect("library kernel IR");
        let config = spec.default_config().expect("library kernel space");
        for dtype in [DType::BF16, DType::F32] {
            let bindings = Bindings(kernel.generics.iter().map(|g| (g.clone(), dtype)).collect());
            for target in [Target::Sm80, Target::Sm90a] {
                for (access_name, access) in [("rows", Access::ROWS), ("general", Access::GENERAL)]
                {
                    let v = Variant {
                        config: config.clone(),
                        bindings: bindings.clone(),
                        access,
                        target,
                    };
                    let id = format!("{} {dtype:?} {target:?} {access_name}", spec.name);
                    match variant_source(kernel, spec.cuda_template, &v) {
                        Ok(src) => {
                            lines +=
                                &format!("{id} {:016x} {}\n", fnv1a(src.as_bytes()), src.len());
                            sources.push((id, src));
                        }
                        Err(e) => lines += &format!("{id} refused: {e}\n"),
                    }
                }
            }
        }
        for v in covering_variants(kernel, &[Target::Sm80, Target::Sm90a]) {
            let id = format!("{} {v}", spec.name);
            match variant_source(kernel, spec.cuda_template, &v.to_variant()) {
                Ok(src) => {
                    lines += &format!("{id} {:016x} {}\n", fnv1a(src.as_bytes()), src.len());
                    sources.push((id, src));
                }
                Err(e) => lines += &format!("{id} refused: {e}\n"),
            }
        }
    }
    (lines, sources)
}

#[test]
fn every_library_default_variant_generates_the_recorded_cuda() {
    let (now, sources) = current();
    if let Ok(dir) = std::env::var("TILEKIT_SNAPSHOT_DUMP") {
        std::fs::create_dir_all(&dir).unwrap();
        for (id, src) in &sources {
            let name: String = id
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let name = name + ".cu";
            std::fs::write(std::path::Path::new(&dir).join(name), src).unwrap();
        }
    }
    if std::env::var("TILEKIT_BLESS").as_deref() == Ok("1") {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/snapshots/generated_cuda.txt"
        );
        std::fs::write(path, &now).unwrap();
        return;
    }
    let recorded: Vec<&str> = RECORDED.lines().collect();
    let current: Vec<&str> = now.lines().collect();
    let changed: Vec<String> = current
        .iter()
        .filter(|l| !recorded.contains(l))
        .map(|l| format!("  now:  {l}"))
        .chain(
            recorded
                .iter()
                .filter(|l| !current.contains(l))
                .map(|l| format!("  was:  {l}")),
        )
        .collect();
    assert!(
        changed.is_empty(),
        "the generated CUDA changed for {} line(s) of the snapshot (re-record with \
         TILEKIT_BLESS=1 if intended; TILEKIT_SNAPSHOT_DUMP=DIR on both commits to diff):\n{}",
        changed.len(),
        changed.join("\n")
    );
    assert!(current.len() >= 4 * tilekit_kernels::ALL.len(), "{now}");
}
