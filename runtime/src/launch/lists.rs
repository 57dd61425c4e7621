//! Launches over tensor lists ([`launch_lists`]): one grid over the programs of every member
//! of a kernel's list parameters (`&[Tensor1<T>]`, see `tilekit_ir::Kernel::lists`), as
//! PyTorch's `multi_tensor_apply` runs an optimizer step over a model's parameters.
//!
//! The members are checked one by one as plain launches would be (each member's tensors in
//! the list parameters' places, the shared arguments in theirs), all of them before anything
//! runs; one configuration serves every member: the given one, else the one a launch over
//! the largest member resolves to (its tuned entry, the default, the fallback). The CPU
//! backend then runs the members in turn; the CUDA backend runs them in one kernel launch
//! (`crate::cuda::lists`).

use super::{chosen_config, run_one, Arg, Checked, Generics, LaunchBackend, LaunchError};
use crate::cpu::CpuBackend;
use crate::runtime::{BackendState, Runtime};
use crate::spec::{Analyzed, KernelSpec};
use tilekit_codegen::Access;
use tilekit_ir::{Bindings, Config};

/// One argument of a launch over tensor lists: a single argument (a shared tensor or a
/// scalar) or the members of a list parameter, in order.
///
/// ```
/// # use tilekit_runtime::{Arg, LaunchArg, Runtime, Tensor1};
/// let rt = Runtime::cpu();
/// let mut ps = vec![Tensor1::<f32>::zeros(&rt, [3]).unwrap(), Tensor1::<f32>::zeros(&rt, [5]).unwrap()];
/// let list = LaunchArg::List(ps.iter_mut().map(|p| Arg::from(p)).collect());
/// let scale = LaunchArg::One(Arg::from(2.0f32));
/// assert!(matches!(list, LaunchArg::List(ref m) if m.len() == 2));
/// # let _ = scale;
/// ```
#[derive(Debug)]
pub enum LaunchArg<'a> {
    /// A parameter that is not a list: the argument every member shares.
    One(Arg<'a>),
    /// A list parameter's members (every list of a launch holds as many).
    List(Vec<Arg<'a>>),
}

/// A launch's arguments split for member-by-member checks: `slots` holds the shared
/// arguments in their places (a list's place holds the member swapped in, else a
/// placeholder), `lists` each list parameter's index and members.
pub(crate) struct Split<'a> {
    pub slots: Vec<Arg<'a>>,
    pub lists: Vec<(usize, Vec<Arg<'a>>)>,
    /// Members per list.
    pub members: usize,
}

impl<'a> Split<'a> {
    /// Swaps member `m` into (or back out of) its lists' places.
    pub fn swap(&mut self, m: usize) {
        for (i, members) in &mut self.lists {
            std::mem::swap(&mut self.slots[*i], &mut members[m]);
        }
    }

    /// Runs `f` with member `m` in place.
    pub fn with_member<R>(&mut self, m: usize, f: impl FnOnce(&mut [Arg<'a>]) -> R) -> R {
        self.swap(m);
        let r = f(&mut self.slots);
        self.swap(m);
        r
    }
}

/// Splits `args` by the kernel's parameters (a list for each list parameter, one argument
/// for every other), refusing a mismatch or lists of different lengths.
fn split<'a>(analyzed: &Analyzed, args: Vec<LaunchArg<'a>>) -> Result<Split<'a>, LaunchError> {
    let kernel = &analyzed.kernel;
    let err = |message: String| LaunchError::TensorList {
        kernel: kernel.name.clone(),
        message,
    };
    if args.len() != kernel.params.len() {
        return Err(LaunchError::ArgCount {
            kernel: kernel.name.clone(),
            expected: kernel.params.len(),
            found: args.len(),
        });
    }
    let mut slots = Vec::with_capacity(args.len());
    let mut lists: Vec<(usize, Vec<Arg<'a>>)> = Vec::new();
    for (i, (p, a)) in kernel.params.iter().zip(args).enumerate() {
        match (kernel.is_list(i), a) {
            (true, LaunchArg::List(members)) => {
                if let Some((j, first)) = lists.first() {
                    if first.len() != members.len() {
                        return Err(err(format!(
                            "the tensor lists differ in length: `{}` has {} members, `{}` has {}",
                            kernel.params[*j].name,
                            first.len(),
                            p.name,
                            members.len()
                        )));
                    }
                }
                // The placeholder a member is swapped with.
                slots.push(Arg::Scalar(super::ScalarValue::I64(0)));
                lists.push((i, members));
            }
            (false, LaunchArg::One(a)) => slots.push(a),
            (true, LaunchArg::One(_)) => {
                return Err(err(format!(
                    "parameter `{}` is a tensor list: pass its members (`LaunchArg::List`)",
                    p.name
                )))
            }
            (false, LaunchArg::List(_)) => {
                return Err(err(format!(
                    "parameter `{}` is not a tensor list: pass one argument (`LaunchArg::One`)",
                    p.name
                )))
            }
        }
    }
    let members = lists.first().map_or(0, |(_, m)| m.len());
    Ok(Split {
        slots,
        lists,
        members,
    })
}

/// The member with the most elements in the first list (the first such member on a tie):
/// the launch whose configuration serves all of them.
pub(crate) fn largest(s: &Split<'_>) -> usize {
    let Some((_, first)) = s.lists.first() else {
        return 0;
    };
    let numel = |a: &Arg<'_>| {
        a.layout()
            .map_or(0, |l| l.shape().iter().product::<usize>())
    };
    let mut best = 0;
    for (m, a) in first.iter().enumerate() {
        if numel(a) > numel(&first[best]) {
            best = m;
        }
    }
    best
}

/// Launches a kernel over tensor lists: its list parameters take [`LaunchArg::List`]s of
/// equal length (members may differ in shape), its other parameters [`LaunchArg::One`].
/// The `#[kernel]` launcher of a kernel with list parameters calls this.
///
/// Every member is checked as a plain [`super::launch_with`] of it would be (kinds, ranks,
/// element types, the shape contract, `#[check]`s, constraints, the grid), all before
/// anything runs, so a refused launch writes nothing. `config` runs as given (validated);
/// `None` takes the configuration a [`super::launch`] over the largest member resolves to,
/// for every member. On the CPU backend the members run in turn; on the CUDA backend in one
/// kernel launch whose grid is every member's programs one after another (its member and
/// chunk tables are kept on the device for the same members: see `docs/semantics.md`,
/// "Tensor lists"). A kernel with lists cannot be launched through [`super::launch`].
///
/// An empty list is a launch that does nothing.
pub fn launch_lists<'g>(
    rt: &Runtime,
    spec: &KernelSpec,
    config: Option<&Config>,
    generics: impl Into<Generics<'g>>,
    args: Vec<LaunchArg<'_>>,
) -> Result<(), LaunchError> {
    let generics = generics.into();
    let analyzed = spec.analyzed()?;
    let kernel = &analyzed.kernel;
    let mut s = split(analyzed, args)?;
    if kernel.lists.is_empty() {
        // No lists: an ordinary launch.
        return run_one(rt, spec, config, generics, &mut s.slots);
    }
    if kernel.grid.len() != 1 {
        return Err(LaunchError::TensorList {
            kernel: kernel.name.clone(),
            message: format!(
                "a kernel over tensor lists needs a 1-axis grid, not {} axes",
                kernel.grid.len()
            ),
        });
    }
    if s.members == 0 {
        return Ok(());
    }
    match rt.backend_state() {
        BackendState::Cpu(_) => {
            let config = match config {
                Some(c) => c.clone(),
                None => {
                    let big = largest(&s);
                    s.with_member(big, |slots| chosen_config(rt, spec, generics, slots))?
                }
            };
            let bindings = generics.to_bindings(kernel);
            // Every member checked before the first runs.
            for m in 0..s.members {
                s.with_member(m, |slots| {
                    CpuBackend.check(spec, analyzed, &config, &bindings, slots, Access::GENERAL)
                })?;
            }
            for m in 0..s.members {
                s.with_member(m, |slots| run_one(rt, spec, Some(&config), generics, slots))?;
            }
            Ok(())
        }
        BackendState::Cuda(dev, _) => {
            dev.launch_lists(rt, spec, analyzed, config, generics, &mut s)
        }
    }
}

/// The checks of every member with `config` on `backend`, with one access for all (the
/// members' own when they agree, else `Access::GENERAL`): each member's check in order.
pub(crate) fn check_members<'k, B: LaunchBackend>(
    backend: &B,
    spec: &KernelSpec,
    analyzed: &'k Analyzed,
    config: &Config,
    bindings: &Bindings,
    s: &mut Split<'_>,
) -> Result<(Access, Vec<Checked<'k>>), LaunchError> {
    let mut access: Option<Access> = None;
    for m in 0..s.members {
        let a = s.with_member(m, |slots| backend.access(spec, analyzed, slots));
        access = Some(match access {
            Some(prev) if prev != a => Access::GENERAL,
            _ => a,
        });
    }
    let access = access.unwrap_or(Access::GENERAL);
    let mut checked = Vec::with_capacity(s.members);
    for m in 0..s.members {
        checked.push(s.with_member(m, |slots| {
            backend.check(spec, analyzed, config, bindings, slots, access)
        })?);
    }
    Ok((access, checked))
}
