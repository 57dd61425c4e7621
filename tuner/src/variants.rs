//! Variants of a kernel: configuration x element-type bindings x target x access classes
//! (`tilekit_codegen::Access`: every tensor `General`, or `Rows` with each tensor the kernel
//! may read column-major `Rows` or `Cols`, and in kernels with such tensors the others all
//! `Rows` or all `General`). Launch-only tuning values (`PAD64`) are not part of a variant:
//! configurations that differ only there are one variant (the one with `PAD64 = false`).
//!
//! Constraints are evaluated in phases ([`tilekit_ir::Phase`]): static and per-target
//! constraints decide here which variants exist at all; compiled (registers, spills) and
//! per-launch (shapes) constraints are checked later by the tuner and the launcher.

use tilekit_codegen::{valid_accesses, Access, ResourceEnv, Target, Variant};
use tilekit_ir::{Bindings, Config, EvalError, Kernel, Phase};

/// One compilable variant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VariantKey {
    /// A point of the declared space.
    pub config: Config,
    /// Element types for the kernel's generics.
    pub bindings: Bindings,
    /// Architecture.
    pub target: Target,
    /// The access class assumed of each tensor ([`Access::ROWS`]: 16-byte aligned,
    /// unit-stride rows; [`Access::GENERAL`]: anything; `Cols` for column-major operands).
    pub access: Access,
}

impl VariantKey {
    /// The code generator's view of this variant.
    pub fn to_variant(&self) -> Variant {
        Variant {
            config: self.config.clone(),
            bindings: self.bindings.clone(),
            access: self.access,
            target: self.target,
        }
    }
}

impl std::fmt::Display for VariantKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} [{}] {} {}",
            self.config,
            self.bindings,
            self.target.arch(),
            match self.access {
                Access::ROWS => "aligned".to_string(),
                Access::GENERAL => "unaligned".to_string(),
                a => a.to_string(),
            }
        )
    }
}

/// Checks every constraint that can be decided before compiling and launching (phases
/// `Static` and `Target`) and the launch plan's own limits. `Err` says which one failed.
pub fn target_check(
    kernel: &Kernel,
    config: &Config,
    bindings: &Bindings,
    target: Target,
) -> Result<(), String> {
    let env = ResourceEnv::new(kernel, config, bindings, target).map_err(|e| e.to_string())?;
    let plan = env.plan();
    let limits = target.limits();
    if plan.threads == 0 || plan.threads > limits.max_threads {
        return Err(format!(
            "{} threads per block exceed the target's limit",
            plan.threads
        ));
    }
    if plan.smem_bytes > limits.max_dynamic_smem {
        return Err(format!(
            "{} bytes of shared memory exceed the target's {}",
            plan.smem_bytes, limits.max_dynamic_smem
        ));
    }
    // `CLUSTER = 2` where the variant cannot take clusters compiles the `CLUSTER = 1`
    // variant again: not worth compiling or timing twice.
    if config.int("CLUSTER").is_some_and(|c| c > 1) && env.cluster() < 2 {
        return Err(
            "CLUSTER = 2 does not apply to this variant on this target (`tilekit show --stage \
             layouts` says why): it is the CLUSTER = 1 variant again"
                .into(),
        );
    }
    // `TAIL_SPLIT > 1` where the variant cannot split its tail: the same variant again.
    if config.int("TAIL_SPLIT").is_some_and(|c| c > 1) && env.tail_split() < 2 {
        return Err(
            "TAIL_SPLIT does not apply to this variant on this target (`tilekit show --stage \
             layouts` says why): it is the TAIL_SPLIT = 1 variant again"
                .into(),
        );
    }
    // One lowering for both code bounds (issue 33).
    let size = tilekit_codegen::code_size(kernel, config).map_err(|e| e.to_string())?;
    if size.loop_tile_elems > tilekit_codegen::MAX_LOOP_TILE_ELEMS {
        return Err(format!(
            "a loop body holds {} elements per thread of one tile (more than {}): \
             its code and registers are too large to be worth compiling",
            size.loop_tile_elems,
            tilekit_codegen::MAX_LOOP_TILE_ELEMS
        ));
    }
    if size.straight_tile_elems > tilekit_codegen::MAX_STRAIGHT_TILE_ELEMS {
        return Err(format!(
            "its straight-line code holds {} elements per thread of one tile (more than {}): \
             its tiles spill out of the register file and its code takes too long to compile \
             to be worth trying",
            size.straight_tile_elems,
            tilekit_codegen::MAX_STRAIGHT_TILE_ELEMS
        ));
    }
    if let Some(cost) = size
        .stream_cost
        .filter(|c| *c > tilekit_codegen::MAX_STREAM_COST)
    {
        return Err(format!(
            "one trip of its streaming loops is {cost} tile-element operations per thread (more \
             than {}): its code takes too long to compile to be worth trying",
            tilekit_codegen::MAX_STREAM_COST
        ));
    }
    for c in &kernel.constraints {
        if c.phase() > Phase::Target {
            continue;
        }
        match c.expr.eval_bool(&env) {
            Ok(true) => {}
            Ok(false) => return Err(format!("constraint `{}` does not hold", c.text)),
            Err(EvalError::Unavailable(_)) => {}
            Err(e) => return Err(format!("constraint `{}`: {e}", c.text)),
        }
    }
    Ok(())
}

/// Element-type bindings of a kernel: every generic over f32, f16, bf16.
pub fn all_bindings(kernel: &Kernel) -> Vec<Bindings> {
    Bindings::all_float(&kernel.generics)
}

/// The access classes a kernel's variants take ([`valid_accesses`] of its
/// [`tilekit_codegen::cols_operands`] and [`tilekit_codegen::general_operands`]; just
/// `GENERAL` and `ROWS` when it has none).
pub fn kernel_accesses(kernel: &Kernel) -> Vec<Access> {
    valid_accesses(
        tilekit_codegen::cols_operands(kernel).unwrap_or(0),
        tilekit_codegen::general_operands(kernel).unwrap_or(0),
    )
}

/// Every valid variant (the full space; what `cargo xtask compile-all` compiles), one per
/// compiled text: configurations that differ only in launch-only values (`PAD64`) appear
/// once, with those values `false` ([`Config::for_codegen`]).
pub fn valid_variants(kernel: &Kernel, targets: &[Target]) -> Vec<VariantKey> {
    let accesses = kernel_accesses(kernel);
    let mut out = Vec::new();
    for config in kernel.space.enumerate() {
        if config.for_codegen() != config {
            continue;
        }
        for bindings in all_bindings(kernel) {
            for &target in targets {
                if target_check(kernel, &config, &bindings, target).is_err() {
                    continue;
                }
                for &access in &accesses {
                    out.push(VariantKey {
                        config: config.clone(),
                        bindings: bindings.clone(),
                        target,
                        access,
                    });
                }
            }
        }
    }
    out
}

/// A pairwise covering subset of the valid variants (every pair of factor values that
/// occurs in a valid variant occurs in a chosen one; element types, target, alignment and,
/// per tensor the kernel may read column-major, `Rows` or `Cols`, and whether the tensors
/// it may take `General` beside them are, are factors like the tuning parameters; `Cols`
/// and the partial `General` need the aligned level), plus the default configuration for
/// every (bindings, target) with every tensor `General`, every tensor `Rows`, every such
/// tensor `Cols`, and every tensor `Rows` but the partial `General`. Configurations are reduced to
/// what the code generator sees ([`Config::for_codegen`]), duplicates dropped.
pub fn covering_variants(kernel: &Kernel, targets: &[Target]) -> Vec<VariantKey> {
    let bindings = all_bindings(kernel);
    let capable = tilekit_codegen::cols_operands(kernel).unwrap_or(0);
    let general = tilekit_codegen::general_operands(kernel).unwrap_or(0);
    let cols_params: Vec<usize> = (0..64).filter(|i| capable >> i & 1 == 1).collect();
    let mut radices: Vec<usize> = kernel.space.params.iter().map(|p| p.values.len()).collect();
    let n_space = radices.len();
    radices.push(bindings.len());
    radices.push(targets.len());
    radices.push(2);
    radices.extend(cols_params.iter().map(|_| 2));
    if general != 0 {
        radices.push(2);
    }
    let key_of = |idx: &[usize]| -> Option<VariantKey> {
        let config = kernel.space.config_at(&idx[..n_space])?.for_codegen();
        let aligned = idx[n_space + 2] == 0;
        let mut cols = 0u64;
        for (f, &p) in cols_params.iter().enumerate() {
            if idx[n_space + 3 + f] == 1 {
                cols |= 1 << p;
            }
        }
        let partial = general != 0 && idx[n_space + 3 + cols_params.len()] == 1;
        let access = match (aligned, cols, partial) {
            (true, c, false) => Access::with_cols(c),
            (true, 0, true) => Access::with_classes(0, general),
            // The partial General exists only beside row-major operands.
            (true, _, true) => return None,
            (false, 0, false) => Access::GENERAL,
            // Cols and the partial General exist only with the other tensors Rows.
            (false, _, _) => return None,
        };
        Some(VariantKey {
            config,
            bindings: bindings.get(idx[n_space])?.clone(),
            target: *targets.get(idx[n_space + 1])?,
            access,
        })
    };
    let valid = |idx: &[usize]| {
        key_of(idx).is_some_and(|k| target_check(kernel, &k.config, &k.bindings, k.target).is_ok())
    };
    let mut out: Vec<VariantKey> = Vec::new();
    for k in tilekit_ir::pairwise_cover(&radices, valid)
        .iter()
        .filter_map(|i| key_of(i))
    {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    let default = kernel.space.default_config().for_codegen();
    let mut defaults = vec![Access::ROWS, Access::GENERAL, Access::with_cols(capable)];
    if general != 0 {
        defaults.push(Access::with_classes(0, general));
    }
    for b in &bindings {
        for &target in targets {
            if target_check(kernel, &default, b, target).is_err() {
                continue;
            }
            for &access in &defaults {
                let k = VariantKey {
                    config: default.clone(),
                    bindings: b.clone(),
                    target,
                    access,
                };
                if !out.contains(&k) {
                    out.push(k);
                }
            }
        }
    }
    out
}

/// The element type names of a bindings set, for logs (`T=bf16`).
pub fn describe_bindings(b: &Bindings) -> String {
    if b.0.is_empty() {
        "-".into()
    } else {
        b.to_string()
    }
}
