//! [`NvrtcError`]: everything that can go wrong between generated CUDA source and a CUBIN.

use std::fmt;
use std::path::PathBuf;

/// An error from locating, loading or running NVRTC.
///
/// A failed compilation is a report, not a status code: [`NvrtcError::Compile`] carries
/// the program name, the exact options, the NVRTC log and the source with line numbers,
/// and its `Display` prints all four.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NvrtcError {
    /// `libnvrtc` could not be loaded.
    #[error(
        "NVRTC could not be loaded.\n\
         searched: {searched}\n\
         {details}\
         fix: {fix}"
    )]
    LibraryNotFound {
        /// What was searched, in order: library names handed to the dynamic loader (with
        /// the `LD_LIBRARY_PATH` in effect) and directories derived from the environment.
        searched: String,
        /// Loader errors met on the way, and what each CUDA root variable that is set
        /// (`TILEKIT_CUDA_ROOT`, ...) holds and why it is unusable (one per line, each
        /// ending in a newline), or empty.
        details: String,
        /// What to do: where a CUDA root variable is set, to point it elsewhere (it is
        /// set already); otherwise how to install NVRTC and set one
        /// ([`crate::nvrtc::locate::fix_advice`]).
        fix: String,
    },
    /// No directory with the CUDA headers (`cuda_bf16.h`) was found.
    #[error(
        "CUDA headers (cuda_bf16.h) not found; searched: {}.\n\
         fix: run `cargo xtask cuda-setup` and `export TILEKIT_CUDA_ROOT=$PWD/.cuda-wheels/nvidia/cu13`, \
         or set CUDA_HOME to a CUDA install",
        display_paths(searched)
    )]
    HeadersNotFound {
        /// The `include` directories that were checked, in order.
        searched: Vec<PathBuf>,
    },
    /// An input cannot be passed to NVRTC (an interior NUL byte, a non-`sm_` architecture...).
    #[error("invalid NVRTC input: {what}: {reason}")]
    InvalidInput {
        /// Which input: `"source"`, `"program name"`, `"option"`, `"header"`, `"arch"`.
        what: &'static str,
        /// Why it was rejected.
        reason: String,
    },
    /// NVRTC rejected the program: the compiler's report.
    #[error(
        "NVRTC failed to compile `{program}`\n\
         options: {}\n\
         --- NVRTC log ---\n{}\n\
         --- source ---\n{source_with_line_numbers}",
        options.join(" "),
        log.trim_end()
    )]
    Compile {
        /// The program name given to NVRTC (it prefixes the log's locations).
        program: String,
        /// The exact options passed to `nvrtcCompileProgram`.
        options: Vec<String>,
        /// The NVRTC log (errors, warnings, ptxas output).
        log: String,
        /// The source, one numbered line per source line (`  12 | ...`).
        source_with_line_numbers: String,
    },
    /// An NVRTC API call other than compilation failed.
    #[error("NVRTC call {call} failed: {status}{}", if log.is_empty() { String::new() } else { format!("\n--- NVRTC log ---\n{}", log.trim_end()) })]
    Api {
        /// The NVRTC function that failed.
        call: &'static str,
        /// The status NVRTC returned, with its description.
        status: String,
        /// The program log when one was available, or empty.
        log: String,
    },
}

fn display_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "(nothing: TILEKIT_CUDA_ROOT, CUDA_HOME and CUDA_PATH are unset)".to_string();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Numbers every line of `source` as `{n:>width} | line`, for compile reports.
pub fn number_lines(source: &str) -> String {
    let count = source.lines().count().max(1);
    let width = count.to_string().len();
    let mut out = String::with_capacity(source.len() + count * (width + 4));
    for (i, line) in source.lines().enumerate() {
        use fmt::Write;
        // Writing into a String cannot fail.
        let _ = writeln!(out, "{:>width$} | {line}", i + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_lines_with_aligned_width() {
        let src = (1..=10)
            .map(|i| format!("l{i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let numbered = number_lines(&src);
        assert!(numbered.starts_with(" 1 | l1\n"), "{numbered}");
        assert!(numbered.ends_with("10 | l10\n"), "{numbered}");
    }

    #[test]
    fn compile_error_display_is_a_report() {
        let e = NvrtcError::Compile {
            program: "k.cu".into(),
            options: vec!["--gpu-architecture=sm_80".into(), "-std=c++17".into()],
            log: "k.cu(2): error: expected a \";\"\n".into(),
            source_with_line_numbers: number_lines("a\nb"),
        };
        let s = e.to_string();
        for needle in [
            "`k.cu`",
            "--gpu-architecture=sm_80 -std=c++17",
            "k.cu(2): error",
            "1 | a",
            "2 | b",
        ] {
            assert!(s.contains(needle), "missing {needle:?} in:\n{s}");
        }
    }

    #[test]
    fn headers_not_found_names_the_paths() {
        let e = NvrtcError::HeadersNotFound {
            searched: vec![PathBuf::from("/x/include")],
        };
        let s = e.to_string();
        assert!(s.contains("/x/include") && s.contains("cuda-setup"), "{s}");
    }
}
