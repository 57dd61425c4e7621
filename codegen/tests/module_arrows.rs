//! The arrows between modules point one way.
//!
//! 1. Inside codegen, the stages — analysis, layouts, shared-memory plans, the thread rule
//!    and the printer (`emit/`) — never import the modules that read their result (`plan`,
//!    `variant`, `dump`, `lowered`).
//! 2. No module of a library crate imports, directly or through others, a module that
//!    imports it (ARCHITECTURE.md draws the arrows).
//!
//! The tests read the sources (cargo runs them from `codegen/`, so the crates are
//! `../<crate>/src`), take every `crate::a::b` path outside comments as an edge to the
//! longest module that exists, and report each back edge and each strongly connected group
//! of more than one module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates whose modules must form no cycle.
const CRATES: &[&str] = &[
    "ir",
    "codegen",
    "runtime",
    "tuner",
    "dsl-macros",
    "kernels-lib",
];

/// Groups allowed, each with its reason: (crate, sorted modules, why).
const ALLOWED: &[(&str, &[&str], &str)] = &[(
    "ir",
    &["affine", "shape"],
    "one recursive type over two files: a `Dim` may be an `Affine`, whose terms are `Dim`s \
     and whose conversion back (`Affine::to_dim`) picks the simplest `Dim`",
)];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `a/b.rs` and `a/b/mod.rs` are `a::b`; `lib.rs` and `main.rs` the root, "".
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// The source without comments and without doc-only imports (`#[cfg(doc)] use ...;`).
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut doc_only = false;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        if code.trim() == "#[cfg(doc)]" {
            doc_only = true;
            continue;
        }
        if doc_only {
            doc_only = !code.contains(';');
            continue;
        }
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Every `crate::x::y` path in `code`, as its segments.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `tilekit_crate::...` or similar, not this crate
        }
        let path: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        out.push(
            path.split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        );
    }
    out
}

fn edges_of(krate: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new("..").join(krate).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(!files.is_empty(), "no sources in {}", src.display());
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let from = module_of(&src, f);
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        let deps = edges.entry(from.clone()).or_default();
        for path in crate_paths(&code) {
            let target = (1..=path.len())
                .rev()
                .map(|k| path[..k].join("::"))
                .find(|m| modules.contains(m));
            if let Some(t) = target {
                if t != from && !t.is_empty() && !from.is_empty() {
                    deps.insert(t);
                }
            }
        }
    }
    edges
}

/// Tarjan's strongly connected components with more than one module.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on.insert(v);
        if let Some(ws) = s.edges.get(v) {
            for w in ws {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(lw));
                } else if s.on.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(iw));
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                group.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.out.push(group);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn the_checker_finds_a_cycle_it_is_shown() {
    let mut e: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    e.entry("a".into()).or_default().insert("b".into());
    e.entry("b".into()).or_default().insert("c".into());
    e.entry("c".into()).or_default().insert("a".into());
    e.entry("d".into()).or_default().insert("a".into());
    assert_eq!(cycles(&e), vec![vec!["a", "b", "c"]]);
    assert_eq!(
        crate_paths("use crate::x::{y, z}; tilekit_crate::q; crate::w;"),
        vec![vec!["x".to_string()], vec!["w".to_string()]]
    );
    assert!(!code_of("#[cfg(doc)]\nuse crate::Runtime;\nuse crate::a;").contains("Runtime"));
}

#[test]
fn no_library_crate_has_a_module_cycle() {
    let mut found = Vec::new();
    for krate in CRATES {
        let edges = edges_of(krate);
        assert!(edges.len() >= 3, "{krate}: {} modules", edges.len());
        for group in cycles(&edges) {
            if ALLOWED.iter().any(|(k, g, _)| {
                k == krate && group.iter().map(String::as_str).eq(g.iter().copied())
            }) {
                continue;
            }
            let detail: Vec<String> = group
                .iter()
                .map(|m| {
                    let inside: Vec<&String> =
                        edges[m].iter().filter(|t| group.contains(t)).collect();
                    format!("    {m} -> {inside:?}")
                })
                .collect();
            found.push(format!("  {krate}: {group:?}\n{}", detail.join("\n")));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

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

#[test]
fn codegen_stages_never_import_the_modules_that_read_their_result() {
    let src = Path::new("src");
    let mut back_edges = Vec::new();
    let mut files_read = 0;
    for (module, forbidden) in FORBIDDEN {
        let mut files = Vec::new();
        let at = src.join(module);
        if at.is_dir() {
            rust_files(&at, &mut files);
        } else {
            files.push(at);
        }
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
