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
pub mod locate;
mod options;
pub mod ptxas;

use std::ffi::{c_char, c_int, CString};
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
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: NVRTC is loaded (checked above); both pointers are valid for writes.
    let status = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    check(status, "nvrtcVersion", String::new())?;
    Ok((major, minor))
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
    let header_count = c_int::try_from(headers.len()).map_err(|_| NvrtcError::InvalidInput {
        what: "header",
        reason: format!("{} headers is more than NVRTC accepts", headers.len()),
    })?;
    let arg_count = c_int::try_from(args.len()).map_err(|_| NvrtcError::InvalidInput {
        what: "option",
        reason: format!("{} options is more than NVRTC accepts", args.len()),
    })?;
    let name_ptrs: Vec<*const c_char> = c_header_names.iter().map(|c| c.as_ptr()).collect();
    let body_ptrs: Vec<*const c_char> = c_header_bodies.iter().map(|c| c.as_ptr()).collect();
    let arg_ptrs: Vec<*const c_char> = c_args.iter().map(|c| c.as_ptr()).collect();

    locate::ensure_loaded()?;
    let start = Instant::now();
    let mut raw: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: NVRTC is loaded; every pointer refers to a NUL-terminated string that outlives
    // the program (the CStrings above live to the end of this function, the program is
    // destroyed by `Program`'s Drop before that), and the two header arrays have
    // `header_count` entries each.
    let status = unsafe {
        sys::nvrtcCreateProgram(
            &mut raw,
            c_source.as_ptr(),
            c_name.as_ptr(),
            header_count,
            body_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    };
    check(status, "nvrtcCreateProgram", String::new())?;
    let program = Program(raw);

    // SAFETY: `program` is a live program; `arg_ptrs` has `arg_count` valid C strings.
    let status = unsafe { sys::nvrtcCompileProgram(program.0, arg_count, arg_ptrs.as_ptr()) };
    let log = program.log()?;
    match status {
        sys::nvrtcResult::NVRTC_SUCCESS => {}
        sys::nvrtcResult::NVRTC_ERROR_COMPILATION
        | sys::nvrtcResult::NVRTC_ERROR_INVALID_OPTION => {
            return Err(NvrtcError::Compile {
                program: program_name.to_string(),
                options: args,
                log: if log.trim().is_empty() {
                    describe(status)
                } else {
                    log
                },
                source_with_line_numbers: number_lines(source),
            })
        }
        other => check(other, "nvrtcCompileProgram", log.clone())?,
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

/// An NVRTC program, destroyed on drop.
struct Program(sys::nvrtcProgram);

impl Program {
    fn log(&self) -> Result<String, NvrtcError> {
        let mut size = 0usize;
        // SAFETY: live program, valid out-pointer.
        check(
            unsafe { sys::nvrtcGetProgramLogSize(self.0, &mut size) },
            "nvrtcGetProgramLogSize",
            String::new(),
        )?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` holds at least `size` bytes, as NVRTC requires.
        check(
            unsafe { sys::nvrtcGetProgramLog(self.0, buf.as_mut_ptr().cast()) },
            "nvrtcGetProgramLog",
            String::new(),
        )?;
        Ok(c_buffer_to_string(&buf))
    }

    fn cubin(&self, log: &str) -> Result<Vec<u8>, NvrtcError> {
        let mut size = 0usize;
        // SAFETY: live, compiled program; valid out-pointer.
        check(
            unsafe { sys::nvrtcGetCUBINSize(self.0, &mut size) },
            "nvrtcGetCUBINSize",
            log.to_string(),
        )?;
        if size == 0 {
            return Err(NvrtcError::Api {
                call: "nvrtcGetCUBINSize",
                status: "NVRTC produced no CUBIN (is the architecture a real sm_ target?)"
                    .to_string(),
                log: log.to_string(),
            });
        }
        let mut bytes = vec![0u8; size];
        // SAFETY: `bytes` holds exactly the size NVRTC reported.
        check(
            unsafe { sys::nvrtcGetCUBIN(self.0, bytes.as_mut_ptr().cast()) },
            "nvrtcGetCUBIN",
            log.to_string(),
        )?;
        Ok(bytes)
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was created by nvrtcCreateProgram and is destroyed once. A
        // failure here leaks at worst and cannot be reported from Drop.
        let _ = unsafe { sys::nvrtcDestroyProgram(&mut self.0) };
    }
}

fn c_string(s: &str, what: &'static str) -> Result<CString, NvrtcError> {
    CString::new(s).map_err(|e| NvrtcError::InvalidInput {
        what,
        reason: format!("interior NUL byte at offset {}", e.nul_position()),
    })
}

/// The text before the first NUL of a buffer NVRTC filled, lossily decoded.
fn c_buffer_to_string(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// `"NVRTC_ERROR_X (description)"` for a status.
fn describe(status: sys::nvrtcResult) -> String {
    // SAFETY: NVRTC is loaded whenever a status exists; nvrtcGetErrorString returns a
    // static NUL-terminated string or null.
    let text = unsafe {
        let p = sys::nvrtcGetErrorString(status);
        if p.is_null() {
            String::new()
        } else {
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    format!("{status:?} ({text})")
}

fn check(status: sys::nvrtcResult, call: &'static str, log: String) -> Result<(), NvrtcError> {
    if status == sys::nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    let mut status_text = describe(status);
    if status == sys::nvrtcResult::NVRTC_ERROR_BUILTIN_OPERATION_FAILURE {
        status_text.push_str(
            "; libnvrtc-builtins.so.13.* could not be loaded: add its directory to \
             LD_LIBRARY_PATH or set TILEKIT_CUDA_ROOT",
        );
    }
    Err(NvrtcError::Api {
        call,
        status: status_text,
        log,
    })
}
