//! Every NVRTC call (through cudarc's dynamically loaded `sys` bindings), each `unsafe`
//! block with its safety argument, behind safe functions: the rest of `nvrtc` has no
//! `unsafe` but loading the library (`locate.rs`), as `cuda/ffi.rs` is for the driver.
//! Callers load NVRTC first (`locate::ensure_loaded`).

use super::NvrtcError;
use cudarc::nvrtc::sys;
use std::ffi::{c_char, c_int, CStr, CString};
use std::marker::PhantomData;

/// NVRTC's version, `(major, minor)`.
pub(super) fn version() -> Result<(i32, i32), NvrtcError> {
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: NVRTC is loaded (the caller's precondition); both pointers are valid for writes.
    let status = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    check(status, "nvrtcVersion", String::new())?;
    Ok((major, minor))
}

/// An NVRTC program, destroyed on drop; it borrows the source, name and headers it was
/// created from (`'a`), so they outlive it.
pub(super) struct Program<'a>(sys::nvrtcProgram, PhantomData<&'a CStr>);

impl<'a> Program<'a> {
    /// Creates a program from `source` named `name`, with in-memory headers (`bodies[i]`
    /// included as `names[i]`).
    pub(super) fn create(
        source: &'a CStr,
        name: &'a CStr,
        bodies: &'a [CString],
        names: &'a [CString],
    ) -> Result<Program<'a>, NvrtcError> {
        if names.len() != bodies.len() {
            return Err(NvrtcError::InvalidInput {
                what: "header",
                reason: format!("{} header names for {} bodies", names.len(), bodies.len()),
            });
        }
        let count = names.len();
        let header_count = c_int::try_from(count).map_err(|_| NvrtcError::InvalidInput {
            what: "header",
            reason: format!("{count} headers is more than NVRTC accepts"),
        })?;
        let name_ptrs: Vec<*const c_char> = names.iter().map(|c| c.as_ptr()).collect();
        let body_ptrs: Vec<*const c_char> = bodies.iter().map(|c| c.as_ptr()).collect();
        let mut raw: sys::nvrtcProgram = std::ptr::null_mut();
        // SAFETY: NVRTC is loaded (the caller's precondition); every pointer refers to a
        // NUL-terminated string borrowed for `'a`, which outlives the program, and both
        // header arrays have `header_count` entries.
        let status = unsafe {
            sys::nvrtcCreateProgram(
                &mut raw,
                source.as_ptr(),
                name.as_ptr(),
                header_count,
                body_ptrs.as_ptr(),
                name_ptrs.as_ptr(),
            )
        };
        check(status, "nvrtcCreateProgram", String::new())?;
        Ok(Program(raw, PhantomData))
    }

    /// Compiles the program with `args` and returns NVRTC's status (a compilation error is
    /// the caller's to report, with the log).
    pub(super) fn compile(&self, args: &[CString]) -> Result<sys::nvrtcResult, NvrtcError> {
        let arg_count = c_int::try_from(args.len()).map_err(|_| NvrtcError::InvalidInput {
            what: "option",
            reason: format!("{} options is more than NVRTC accepts", args.len()),
        })?;
        let arg_ptrs: Vec<*const c_char> = args.iter().map(|c| c.as_ptr()).collect();
        // SAFETY: `self` is a live program; `arg_ptrs` has `arg_count` valid C strings that
        // outlive the call.
        Ok(unsafe { sys::nvrtcCompileProgram(self.0, arg_count, arg_ptrs.as_ptr()) })
    }
    /// The program's log.
    pub(super) fn log(&self) -> Result<String, NvrtcError> {
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

    /// The compiled CUBIN (`log` goes into the error when there is none).
    pub(super) fn cubin(&self, log: &str) -> Result<Vec<u8>, NvrtcError> {
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

impl Drop for Program<'_> {
    fn drop(&mut self) {
        // SAFETY: the program was created by nvrtcCreateProgram and is destroyed once. A
        // failure here leaks at worst and cannot be reported from Drop.
        let _ = unsafe { sys::nvrtcDestroyProgram(&mut self.0) };
    }
}

/// The text before the first NUL of a buffer NVRTC filled, lossily decoded.
fn c_buffer_to_string(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// `"NVRTC_ERROR_X (description)"` for a status.
pub(super) fn describe(status: sys::nvrtcResult) -> String {
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

pub(super) fn check(
    status: sys::nvrtcResult,
    call: &'static str,
    log: String,
) -> Result<(), NvrtcError> {
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
