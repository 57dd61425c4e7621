//! [`CompileOptions`]: what NVRTC is asked to do, and the exact option strings it receives.

use std::path::PathBuf;

use super::{cuda_include_dir, NvrtcError};

/// Options for [`compile_cubin`](super::compile_cubin).
///
/// [`CompileOptions::to_args`] always adds `-std=c++17` and `--ptxas-options=-v` (so the log
/// reports registers, spills and shared memory per kernel) to what the fields ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileOptions {
    /// The real architecture to emit SASS for: `"sm_80"`, `"sm_90a"`, ... (`compute_*`
    /// targets produce no CUBIN and are rejected).
    pub arch: String,
    /// Directories passed as `--include-path`, in order.
    pub include_dirs: Vec<PathBuf>,
    /// Emit line information (`-lineinfo`) for profilers; about doubles the CUBIN.
    pub line_info: bool,
    /// Further NVRTC options, passed verbatim after the others.
    pub extra: Vec<String>,
}

impl CompileOptions {
    /// Options for `arch` with the CUDA headers on the include path: the directory from
    /// [`cuda_include_dir`] and, when the cccl wheel is installed, its `cccl/` subdirectory
    /// (for `<cuda/...>` headers).
    pub fn new(arch: impl Into<String>) -> Result<Self, NvrtcError> {
        Ok(Self::with_include_dir(arch, cuda_include_dir()?))
    }

    /// As [`CompileOptions::new`], with the CUDA include directory already found.
    pub fn with_include_dir(arch: impl Into<String>, include: PathBuf) -> Self {
        let cccl = include.join("cccl");
        let mut include_dirs = vec![include];
        if cccl.is_dir() {
            include_dirs.push(cccl);
        }
        Self {
            arch: arch.into(),
            include_dirs,
            line_info: false,
            extra: Vec::new(),
        }
    }

    /// Options for `arch` with no include directories, for sources that include only the
    /// in-memory headers given to [`compile_cubin`](super::compile_cubin).
    pub fn without_cuda_headers(arch: impl Into<String>) -> Self {
        Self {
            arch: arch.into(),
            include_dirs: Vec::new(),
            line_info: false,
            extra: Vec::new(),
        }
    }

    /// Checks the architecture names a real GPU (`sm_<digits>` with an optional letter suffix).
    pub fn validate(&self) -> Result<(), NvrtcError> {
        let ok = self.arch.strip_prefix("sm_").is_some_and(|rest| {
            let digits = rest.trim_end_matches(|c: char| c.is_ascii_lowercase());
            !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
        });
        if ok {
            Ok(())
        } else {
            Err(NvrtcError::InvalidInput {
                what: "arch",
                reason: format!(
                    "{:?} is not a real architecture like \"sm_80\" or \"sm_90a\" (a CUBIN needs one)",
                    self.arch
                ),
            })
        }
    }

    /// The option strings handed to `nvrtcCompileProgram`, in order.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            format!("--gpu-architecture={}", self.arch),
            "-std=c++17".to_string(),
            "--ptxas-options=-v".to_string(),
        ];
        args.extend(
            self.include_dirs
                .iter()
                .map(|d| format!("--include-path={}", d.display())),
        );
        if self.line_info {
            args.push("-lineinfo".to_string());
        }
        args.extend(self.extra.iter().cloned());
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_contain_the_fixed_options_and_fields_in_order() {
        let mut o = CompileOptions::without_cuda_headers("sm_90a");
        o.include_dirs.push(PathBuf::from("/cuda/include"));
        o.line_info = true;
        o.extra.push("--use_fast_math".into());
        assert_eq!(
            o.to_args(),
            [
                "--gpu-architecture=sm_90a",
                "-std=c++17",
                "--ptxas-options=-v",
                "--include-path=/cuda/include",
                "-lineinfo",
                "--use_fast_math"
            ]
        );
    }

    #[test]
    fn arch_validation() {
        for ok in ["sm_80", "sm_90a", "sm_100a", "sm_120"] {
            assert!(
                CompileOptions::without_cuda_headers(ok).validate().is_ok(),
                "{ok}"
            );
        }
        for bad in ["compute_80", "sm_", "sm_a", "80", "sm_9x0", ""] {
            assert!(
                CompileOptions::without_cuda_headers(bad)
                    .validate()
                    .is_err(),
                "{bad}"
            );
        }
    }
}
