//! The stages inside codegen point one way: analysis, layouts, shared-memory plans, the
//! thread rule and the printer (`emit/`) never import the modules that read their result
//! (`plan`, `variant`, `dump`, `lowered`). ARCHITECTURE.md draws these arrows; this test
//! reads the sources (cargo runs tests from the crate's directory) and fails on a back edge.

use std::path::Path;

/// Modules (files or folders under `src/`) and the modules they must not import.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("emit", &["plan", "variant", "dump", "lowered"]),
    ("layout", &["emit", "plan", "variant", "dump", "lowered"]),
    ("smem.rs", &["emit", "plan", "variant", "dump", "lowered"]),
    (
        "analyze.rs",
        &["emit", "plan", "variant", "dump", "lowered", "layout"],
    ),
    (
        "threads.rs",
        &["emit", "plan", "variant", "dump", "lowered"],
    ),
];

fn rust_files(path: &Path, out: &mut Vec<std::path::PathBuf>) {
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            rust_files(&e.unwrap().path(), out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

#[test]
fn codegen_stages_never_import_the_modules_that_read_their_result() {
    let src = Path::new("src");
    let mut back_edges = Vec::new();
    let mut files_read = 0;
    for (module, forbidden) in FORBIDDEN {
        let mut files = Vec::new();
        rust_files(&src.join(module), &mut files);
        assert!(!files.is_empty(), "no sources under src/{module}");
        for f in files {
            files_read += 1;
            let text = std::fs::read_to_string(&f).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for m in *forbidden {
                    if code.contains(&format!("crate::{m}::"))
                        || code.contains(&format!("crate::{m};"))
                    {
                        back_edges.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(files_read >= 10, "{files_read}");
    assert!(
        back_edges.is_empty(),
        "back edges:\n{}",
        back_edges.join("\n")
    );
}
