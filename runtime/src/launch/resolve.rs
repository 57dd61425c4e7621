//! Choosing the configuration of a launch: the explicit one, else the configuration
//! source's candidates, the declared default, and the first declared configuration that fits.

use super::{Arg, Checked, LaunchBackend};
use crate::launch::error::LaunchError;
use crate::spec::{Analyzed, KernelSpec};
use crate::tuned::{consult, ConfigSource};
use tilekit_codegen::Access;
use tilekit_ir::{Bindings, Config};

/// Resolves a launch: `attempt` (the checks, and what the backend prepares) for `config`;
/// or, with `None`, for each configuration `tuned()` proposes (the runtime's
/// [`crate::ConfigSource`], asked only here, so only on a memo miss), then the default (as
/// `default_for_args` adjusts it to the arguments), then the first declared configuration
/// whose constraints hold (checks run before anything is written, so trying is free of side
/// effects). Each configuration is attempted at most once.
///
/// A tuned candidate that fails passes to the next, whatever the error. A default that
/// fails with anything but a constraint violation ends the search with that error (as
/// without a source). If no configuration fits, the error is the first failure of a tuned
/// candidate past the space and constraint checks (say a variant that does not compile:
/// the one configuration that fit could not run), else the default's violation.
pub(crate) fn resolve<R>(
    spec: &KernelSpec,
    config: Option<&Config>,
    tuned: impl FnOnce() -> Vec<Config>,
    default_for_args: impl FnOnce(Config) -> Config,
    mut attempt: impl FnMut(&Config) -> Result<R, LaunchError>,
) -> Result<R, LaunchError> {
    if let Some(c) = config {
        return attempt(c);
    }
    let space = spec.space()?;
    // Tried configurations (in the space's canonical order, as `enumerate` and
    // `default_config` give them) with their errors.
    let mut tried: Vec<(Config, LaunchError)> = Vec::new();
    let mut tuned_error: Option<LaunchError> = None;
    for candidate in tuned() {
        let candidate = space.validate(&candidate).unwrap_or(candidate);
        if tried.iter().any(|(c, _)| *c == candidate) {
            continue;
        }
        match attempt(&candidate) {
            Ok(r) => return Ok(r),
            Err(e) => {
                let past_checks = !matches!(
                    e,
                    LaunchError::Constraint { .. }
                        | LaunchError::ArgConstraint { .. }
                        | LaunchError::Config { .. }
                );
                if past_checks && tuned_error.is_none() {
                    tuned_error = Some(e.clone());
                }
                tried.push((candidate, e));
            }
        }
    }
    // The declared default, adjusted to the arguments where a documented rule says so
    // (`default_rule`: PAD64 for a large problem with a misaligned operand).
    let default = default_for_args(spec.default_config()?);
    let default_tried = tried.iter().any(|(c, _)| *c == default);
    let default_result = match tried.iter().find(|(c, _)| *c == default) {
        Some((_, e)) => Err(e.clone()),
        None => attempt(&default),
    };
    let first_error = match default_result {
        Err(e @ LaunchError::Constraint { .. }) => e,
        other => return other,
    };
    // Configurations of the space tried (a tuned candidate outside it does not count).
    let in_space = tried
        .iter()
        .filter(|(_, e)| !matches!(e, LaunchError::Config { .. }))
        .count();
    let mut count = in_space + usize::from(!default_tried);
    for config in space.enumerate() {
        if config == default || tried.iter().any(|(c, _)| *c == config) {
            continue;
        }
        count += 1;
        match attempt(&config) {
            Err(LaunchError::Constraint { .. }) => continue,
            other => return other,
        }
    }
    Err(tuned_error.unwrap_or_else(|| no_configuration(first_error, count)))
}

/// When every configuration failed a constraint and the default's failure reads the
/// arguments, the arguments are at fault: say which, rather than blame the default.
fn no_configuration(default_error: LaunchError, tried: usize) -> LaunchError {
    match default_error {
        LaunchError::Constraint {
            kernel,
            constraint,
            config,
            arguments,
        } if !arguments.is_empty() => LaunchError::NoConfiguration {
            kernel,
            constraint,
            config,
            arguments,
            tried,
        },
        other => other,
    }
}

/// [`resolve`] on a backend: each configuration tried goes through the backend's check
/// ([`LaunchBackend::check`]), then `finish` (what the caller wants of a configuration that
/// passed: the prepared launch, or just the configuration); the configuration source is
/// asked with the backend's device and the launch's access classes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn resolve_on<'k, B: LaunchBackend, R>(
    backend: &B,
    spec: &KernelSpec,
    analyzed: &'k Analyzed,
    config: Option<&Config>,
    bindings: &Bindings,
    args: &[Arg<'_>],
    source: Option<&dyn ConfigSource>,
    access: Access,
    mut finish: impl FnMut(Checked<'k>) -> Result<R, LaunchError>,
) -> Result<R, LaunchError> {
    let kernel = &analyzed.kernel;
    resolve(
        spec,
        config,
        || {
            consult(
                source,
                spec,
                kernel,
                bindings,
                args,
                backend.device(),
                access,
            )
        },
        |d| super::default_rule::default_for_args(kernel, d, args),
        |c| finish(backend.check(spec, analyzed, c, bindings, args, access)?),
    )
}
