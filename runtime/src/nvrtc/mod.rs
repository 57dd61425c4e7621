//! Compiling generated CUDA C++ to CUBIN with NVRTC.
//!
//! [`compile_cubin`] takes a source, in-memory headers (such as the tile prelude) and
//! [`CompileOptions`], and returns a [`Cubin`]: the ELF bytes, the NVRTC log, the compile time
//! and the per-kernel resources ptxas reported (registers, spill bytes, static shared memory).
//! A failed compile is an [`NvrtcError::Compile`] report with the options, the log and the
//! numbered source.
//!
//! NVRTC is loaded at run time through cudarc, so nothing here needs CUDA at build time.
//! [`nvrtc_available`] says whether it can be loaded; see [`locate`] for how the library
//! and headers are found (`TILEKIT_CUDA_ROOT`, `CUDA_HOME`, `CUDA_PATH`, `LD_LIBRARY_PATH`,
//! `/usr/local/cuda`). `cargo xtask cuda-setup` installs both from pip wheels.

mod error;
mod ffi;
pub mod locate;
mod options;
pub mod ptxas;

use std::ffi::CString;
use std::time::Instant;

use cudarc::nvrtc::sys;

pub use error::{number_lines, NvrtcError};
pub use locate::cuda_include_dir;
pub use options::CompileOptions;
pub use ptxas::FunctionResources;

/// A compiled CUBIN and what NVRTC said about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cubin {
    /// The CUBIN (an ELF image), ready for `cuModuleLoadData`.
    pub bytes: Vec<u8>,
    /// The NVRTC log, including the ptxas `-v` report (warnings too; may be empty).
    pub log: String,
    /// Wall-clock seconds spent in NVRTC (program creation, compilation, CUBIN retrieval).
    pub seconds: f64,
    /// Registers per thread: the maximum over the entry functions ptxas reported.
    pub registers: Option<u32>,
    /// Bytes of spill stores, summed over every function ptxas reported (device functions
    /// included; Triton's `n_spills` counts the same). `Some(0)` means no spills.
    pub spill_bytes: Option<u32>,
    /// Static shared memory in bytes: the maximum over the entry functions ptxas reported.
    pub smem_static_bytes: Option<u32>,
}

/// Whether NVRTC can be loaded in this process (see [`locate`]).
pub fn nvrtc_available() -> bool {
    locate::ensure_loaded().is_ok()
}

/// The version of the NVRTC library in use, as `(major, minor)`.
pub fn nvrtc_version() -> Result<(i32, i32), NvrtcError> {
    locate::ensure_loaded()?;
    ffi::version()
}

/// A key naming everything one compilation of `source` with `opts` depends on: the
/// source, the options (target included), the NVRTC version loaded and tilekit's prelude
/// headers (the on-disk CUBIN cache's key function, see ARCHITECTURE.md "Caches", with the
/// compiler named by its version where the runtime may name its library file instead, so
/// the two keys need not be equal strings). Two compilations
/// with equal keys compile the same program with the same compiler, so a success recorded
/// under a key stands for the other (`cargo xtask compile-all` skips such variants).
pub fn compilation_key(source: &str, opts: &CompileOptions) -> Result<String, NvrtcError> {
    let (major, minor) = nvrtc_version()?;
    Ok(crate::cuda::cubin_key(
        source,
        &opts.to_args(),
        &format!("nvrtc {major}.{minor}"),
        &opts.arch,
    ))
}

/// Compiles `source` to a CUBIN for `opts.arch`.
///
/// `program_name` names the program in the log (`name(12): error: ...`); `headers` are
/// in-memory headers as `(include name, contents)`, found by `#include "name"` before the
/// include path is searched.
pub fn compile_cubin(
    source: &str,
    program_name: &str,
    headers: &[(&str, &str)],
    opts: &CompileOptions,
) -> Result<Cubin, NvrtcError> {
    opts.validate()?;
    let args = opts.to_args();
    let c_source = c_string(source, "source")?;
    let c_name = c_string(program_name, "program name")?;
    let c_header_names = headers
        .iter()
        .map(|(name, _)| c_string(name, "header"))
        .collect::<Result<Vec<_>, _>>()?;
    let c_header_bodies = headers
        .iter()
        .map(|(_, body)| c_string(body, "header"))
        .collect::<Result<Vec<_>, _>>()?;
    let c_args = args
        .iter()
        .map(|a| c_string(a, "option"))
        .collect::<Result<Vec<_>, _>>()?;
    locate::ensure_loaded()?;
    let start = Instant::now();
    let program = ffi::Program::create(&c_source, &c_name, &c_header_bodies, &c_header_names)?;
    let status = program.compile(&c_args)?;
    let log = program.log()?;
    match status {
        sys::nvrtcResult::NVRTC_SUCCESS => {}
        sys::nvrtcResult::NVRTC_ERROR_COMPILATION
        | sys::nvrtcResult::NVRTC_ERROR_INVALID_OPTION => {
            return Err(NvrtcError::Compile {
                program: program_name.to_string(),
                options: args,
                log: if log.trim().is_empty() {
                    ffi::describe(status)
                } else {
                    log
                },
                source_with_line_numbers: number_lines(source),
            })
        }
        other => ffi::check(other, "nvrtcCompileProgram", log.clone())?,
    }

    let bytes = program.cubin(&log)?;
    let seconds = start.elapsed().as_secs_f64();
    let functions = ptxas::parse_ptxas_log(&log);
    Ok(Cubin {
        bytes,
        seconds,
        registers: functions
            .iter()
            .filter(|f| f.is_entry)
            .filter_map(|f| f.registers)
            .max(),
        spill_bytes: functions
            .iter()
            .filter_map(|f| f.spill_store_bytes)
            .reduce(|a, b| a.saturating_add(b)),
        smem_static_bytes: functions
            .iter()
            .filter(|f| f.is_entry)
            .filter_map(|f| f.smem_bytes)
            .max(),
        log,
    })
}

fn c_string(s: &str, what: &'static str) -> Result<CString, NvrtcError> {
    CString::new(s).map_err(|e| NvrtcError::InvalidInput {
        what,
        reason: format!("interior NUL byte at offset {}", e.nul_position()),
    })
}
