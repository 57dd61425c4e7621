//! The CPU backend's part of the launch path (`crate::launch`): the argument check with no
//! device resources known, and running a resolved launch through the interpreter.

use super::{execute, CpuOptions};
use crate::backend::Backend;
use crate::cuda::DeviceInfo;
use crate::launch::error::LaunchError;
use crate::launch::{check, Arg, Checked, Generics, LaunchBackend};
use crate::spec::{Analyzed, KernelSpec};
use tilekit_codegen::Access;
use tilekit_ir::{Bindings, Config};

/// What a CPU launch resolved to (memoized per runtime).
#[derive(Clone, Debug)]
pub(crate) struct CpuResolved {
    /// The configuration, after the fallback past the default.
    pub config: Config,
    grid: Vec<i64>,
    /// Whether the grid has a zero extent (nothing runs).
    empty: bool,
}

/// The CPU backend on the launch path.
pub(crate) struct CpuBackend;

impl LaunchBackend for CpuBackend {
    type Resolved = CpuResolved;

    fn device(&self) -> Option<&DeviceInfo> {
        None
    }

    fn access(&self, _spec: &KernelSpec, _analyzed: &Analyzed, _args: &[Arg<'_>]) -> Access {
        Access::GENERAL
    }

    fn check<'k>(
        &self,
        _spec: &KernelSpec,
        analyzed: &'k Analyzed,
        config: &Config,
        bindings: &Bindings,
        args: &[Arg<'_>],
        _access: Access,
    ) -> Result<Checked<'k>, LaunchError> {
        check(
            &analyzed.kernel,
            &analyzed.types,
            config,
            bindings,
            args,
            Backend::Cpu,
            None,
        )
    }

    fn prepare(
        &self,
        _spec: &KernelSpec,
        checked: Checked<'_>,
        _access: Access,
        _args: &[Arg<'_>],
    ) -> Result<CpuResolved, LaunchError> {
        Ok(CpuResolved {
            config: checked.config,
            empty: checked.grid.contains(&0),
            grid: checked.grid,
        })
    }

    #[inline]
    fn run(
        &self,
        analyzed: &Analyzed,
        resolved: &CpuResolved,
        generics: Generics<'_>,
        args: &mut [Arg<'_>],
    ) -> Result<bool, LaunchError> {
        // An empty grid returns here, before the configuration and grid are cloned.
        if resolved.empty {
            return Ok(false);
        }
        run_resolved(analyzed, resolved, generics, args)
    }
}

/// Runs a resolved launch with a non-empty grid through the interpreter.
fn run_resolved(
    analyzed: &Analyzed,
    resolved: &CpuResolved,
    generics: Generics<'_>,
    args: &mut [Arg<'_>],
) -> Result<bool, LaunchError> {
    let checked = Checked {
        kernel: &analyzed.kernel,
        types: &analyzed.types,
        config: resolved.config.clone(),
        bindings: generics.to_bindings(&analyzed.kernel),
        grid: resolved.grid.clone(),
        scalars: args
            .iter()
            .map(|a| match a {
                Arg::Scalar(s) => Some(*s),
                _ => None,
            })
            .collect(),
    };
    run_checked(&checked, args, &CpuOptions::default())
}

/// Runs a checked launch with `options`: nothing for an empty grid (`Ok(false)`), else every
/// program (or the sample), a fault reported as the kernel's [`LaunchError::Fault`].
pub(crate) fn run_checked(
    checked: &Checked<'_>,
    args: &mut [Arg<'_>],
    options: &CpuOptions,
) -> Result<bool, LaunchError> {
    if checked.grid.contains(&0) {
        return Ok(false);
    }
    execute(checked, args, options).map_err(|e| LaunchError::fault(&checked.kernel.name, e))?;
    Ok(true)
}
