//! What a backend contributes to the one launch path (see the module docs of `launch`): the
//! argument check as the backend makes it, what a checked configuration needs before it
//! runs, and running a resolved launch. The CPU backend implements it in `cpu::launch`, the
//! CUDA backend in `cuda::launch`.

use super::{Arg, Checked, Generics};
use crate::cuda::DeviceInfo;
use crate::launch::error::LaunchError;
use crate::spec::{Analyzed, KernelSpec};
use tilekit_codegen::Access;
use tilekit_ir::{Bindings, Config};

/// A backend's part of the launch path: `check` → (`resolve`) → `prepare` → `run`.
pub(crate) trait LaunchBackend {
    /// What a resolved launch keeps for an identical later one (the launch memo's entries).
    type Resolved: Clone;

    /// The device a configuration source is shown (`None` on the CPU backend).
    fn device(&self) -> Option<&DeviceInfo>;

    /// The access classes of the variant the tensor arguments select (part of the memo
    /// key; the CPU backend has no variants: [`Access::GENERAL`]). Runs on every launch.
    fn access(&self, spec: &KernelSpec, analyzed: &Analyzed, args: &[Arg<'_>]) -> Access;

    /// The shared argument check ([`super::check`]) of one configuration, with what this
    /// backend knows (its [`crate::backend::Backend`], the resources of the variant that
    /// `access` selects) and what it adds (the CUDA backend: the block limit and device
    /// addresses). Runs nothing.
    fn check<'k>(
        &self,
        spec: &KernelSpec,
        analyzed: &'k Analyzed,
        config: &Config,
        bindings: &Bindings,
        args: &[Arg<'_>],
        access: Access,
    ) -> Result<Checked<'k>, LaunchError>;

    /// What running a checked configuration needs (the CUDA backend loads its variant and,
    /// for `PAD64 = true`, plans the padded copies of `args`).
    fn prepare(
        &self,
        spec: &KernelSpec,
        checked: Checked<'_>,
        access: Access,
        args: &[Arg<'_>],
    ) -> Result<Self::Resolved, LaunchError>;

    /// Notes a launch resolved from the memo.
    fn hit(&self, _resolved: &Self::Resolved) {}

    /// Runs a resolved launch: `Ok(true)` if a kernel ran, `Ok(false)` for an empty grid.
    fn run(
        &self,
        analyzed: &Analyzed,
        resolved: &Self::Resolved,
        generics: Generics<'_>,
        args: &mut [Arg<'_>],
    ) -> Result<bool, LaunchError>;
}
