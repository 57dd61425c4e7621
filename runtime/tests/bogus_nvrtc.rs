//! A file named `libnvrtc.so.13` that is not NVRTC (the recipe: a copy of
//! `libm.so.6`) is refused with a typed error; nothing panics inside cudarc. Its own test
//! binary: the NVRTC search runs once per process. The message names what
//! `TILEKIT_CUDA_ROOT` holds and why it is unusable (issue 32, item 9).

use tilekit_runtime::nvrtc::{self, compile_cubin, CompileOptions, NvrtcError};

#[test]
fn a_bogus_libnvrtc_is_a_typed_error_not_a_panic() {
    let Some(libm) = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib64/libm.so.6",
        "/usr/lib64/libm.so.6",
        "/lib/aarch64-linux-gnu/libm.so.6",
    ]
    .iter()
    .map(std::path::PathBuf::from)
    .find(|p| p.is_file()) else {
        eprintln!("no libm.so.6 found: skipped");
        return;
    };
    let root = std::env::temp_dir().join(format!("tilekit-bogus-nvrtc-{}", std::process::id()));
    let lib = root.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::create_dir_all(root.join("include")).unwrap();
    std::fs::write(root.join("include/cuda_bf16.h"), "").unwrap();
    for name in ["libnvrtc.so.13", "libnvrtc-builtins.so.13.0"] {
        std::fs::copy(&libm, lib.join(name)).unwrap();
    }
    // Before anything looks for NVRTC (once per process).
    std::env::set_var("TILEKIT_CUDA_ROOT", &root);
    let found = nvrtc::locate::find_library().expect("the file is found by name");
    assert_eq!(found.path, lib.join("libnvrtc.so.13"));

    assert!(!nvrtc::nvrtc_available());
    let err = nvrtc::locate::ensure_loaded().unwrap_err();
    assert!(matches!(err, NvrtcError::LibraryNotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("not NVRTC"), "{err}");
    assert!(err.to_string().contains("nvrtcVersion"), "{err}");
    // Issue 32, item 9: TILEKIT_CUDA_ROOT is set, so the message says what was found there
    // and why it is unusable, and does not ask the user to set it.
    let text = err.to_string();
    let named = format!("TILEKIT_CUDA_ROOT={}", root.display());
    assert!(
        text.contains(&format!(
            "{named}: found {}",
            lib.join("libnvrtc.so.13").display()
        )),
        "{text}"
    );
    assert!(text.contains("which is unusable"), "{text}");
    assert!(
        text.contains(&format!("fix: {named} is set but holds no usable NVRTC")),
        "{text}"
    );
    assert!(!text.contains("export TILEKIT_CUDA_ROOT=$PWD"), "{text}");
    assert!(nvrtc::nvrtc_version().is_err());
    let compiled = compile_cubin(
        "extern \"C\" __global__ void k() {}",
        "k.cu",
        &[],
        &CompileOptions::without_cuda_headers("sm_90a"),
    );
    assert!(
        matches!(compiled, Err(NvrtcError::LibraryNotFound { .. })),
        "{compiled:?}"
    );
    let _ = std::fs::remove_dir_all(&root);
}
