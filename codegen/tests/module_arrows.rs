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

/// Groups allowed, each with its reason: (crate, sorted modules, why). Each is debt: add
/// one only with the reason the modules are not layered yet.
const ALLOWED: &[(&str, &[&str], &str)] = &[(
    "runtime",
    &["cuda::device", "cuda::graph", "cuda::pad", "cuda::variants"],
    "the CUDA device state (`CudaDevice`) owns the variant caches, the capture registry and \
     the PAD64 scratch pool, whose operations take the whole device. To layer: pass the \
     device's parts, not the device (issue 25, item 4). (The launch check left the group \
     in session 23: the PAD64 layout rule is `cuda::pad_layout`, below both.)",
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

/// The source without comments (line comments outside string literals, block comments) and
/// without doc-only imports (`#[cfg(doc)] use ...;`).
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut doc_only = false;
    let mut in_block = false;
    for line in text.lines() {
        let mut code = String::new();
        let mut chars = line.chars().peekable();
        let mut in_str = false;
        while let Some(c) = chars.next() {
            if in_block {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    in_block = false;
                }
                continue;
            }
            if in_str {
                if c == '\\' {
                    chars.next();
                } else if c == '"' {
                    in_str = false;
                }
                continue; // string contents never hold a path we follow
            }
            match (c, chars.peek()) {
                ('/', Some('/')) => break,
                ('/', Some('*')) => {
                    chars.next();
                    in_block = true;
                }
                ('"', _) => in_str = true,
                _ => code.push(c),
            }
        }
        if code.trim() == "#[cfg(doc)]" {
            doc_only = true;
            continue;
        }
        if doc_only {
            doc_only = !code.contains(';');
            continue;
        }
        out.push_str(&code);
        out.push('\n');
    }
    out
}

/// The paths of a use tree starting at `s` (after `crate::`, `super::` or `self::`):
/// `a::b`, `a::{b, c::d}`, `{a, b}`, nested groups; `*` and `self` end a path (a glob is its
/// base module); each with the name it binds (the last segment, or its `as` name).
fn use_tree_named(s: &str) -> Vec<(Vec<String>, String)> {
    fn skip_ws(s: &[u8], i: &mut usize) {
        while *i < s.len() && s[*i].is_ascii_whitespace() {
            *i += 1;
        }
    }
    fn ident(s: &[u8], i: &mut usize) -> String {
        let start = *i;
        while *i < s.len() && (s[*i].is_ascii_alphanumeric() || s[*i] == b'_') {
            *i += 1;
        }
        String::from_utf8_lossy(&s[start..*i]).into_owned()
    }
    fn parse(s: &[u8], i: &mut usize, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
        let mut path = prefix.to_vec();
        loop {
            skip_ws(s, i);
            if *i < s.len() && s[*i] == b'{' {
                *i += 1;
                loop {
                    parse(s, i, &path, out);
                    skip_ws(s, i);
                    match s.get(*i) {
                        Some(b',') => *i += 1,
                        Some(b'}') => {
                            *i += 1;
                            return;
                        }
                        _ => return,
                    }
                    skip_ws(s, i);
                    if s.get(*i) == Some(&b'}') {
                        *i += 1;
                        return;
                    }
                }
            }
            let seg = ident(s, i);
            if !seg.is_empty() && seg != "self" {
                path.push(seg.clone());
            }
            if s.get(*i) == Some(&b':') && s.get(*i + 1) == Some(&b':') && !seg.is_empty() {
                *i += 2;
                continue;
            }
            let mut j = *i;
            skip_ws(s, &mut j);
            let mut name = path.last().cloned().unwrap_or_default();
            if s[j..].starts_with(b"as") && s.get(j + 2).is_some_and(|c| c.is_ascii_whitespace()) {
                j += 2;
                skip_ws(s, &mut j);
                name = ident(s, &mut j);
                *i = j;
            }
            if !path.is_empty() {
                out.push((path, name));
            }
            return;
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    parse(s.as_bytes(), &mut i, &[], &mut out);
    out
}

/// [`use_tree_named`]'s paths.
fn use_tree(s: &str) -> Vec<Vec<String>> {
    use_tree_named(s).into_iter().map(|(p, _)| p).collect()
}

/// For each byte of `code` (a file of module `module`), the module it is in: the file's
/// module plus the inline `mod name { .. }` blocks around it.
fn inline_modules(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let mut at = Vec::with_capacity(b.len());
    let mut stack: Vec<(String, usize)> = Vec::new();
    let mut pending: Option<String> = None;
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        let word_start = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if word_start && code[i..].starts_with("mod ") {
            let rest = &code[i + 4..];
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let after = rest.trim_start()[name.len()..].trim_start();
            if !name.is_empty() && after.starts_with('{') {
                pending = Some(name);
            }
        }
        match b[i] {
            b'{' => {
                depth += 1;
                if let Some(name) = pending.take() {
                    stack.push((name, depth));
                }
            }
            b'}' => {
                if stack.last().is_some_and(|(_, d)| *d == depth) {
                    stack.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        let mut m = module.to_vec();
        m.extend(stack.iter().map(|(n, _)| n.clone()));
        at.push(m);
        i += 1;
    }
    at
}

/// Every path in `code` that names this crate's items, made absolute (segments from the
/// crate root) for a file of module `module` (`crate::`, chained `super::`, `self::`).
fn crate_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let inside = inline_modules(code, module);
    let mut i = 0;
    while i < b.len() {
        let word_start =
            i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':');
        let rest = &code[i..];
        let here = &inside[i];
        let (base, skip): (Option<Vec<String>>, usize) = if !word_start {
            (None, 1)
        } else if rest.starts_with("crate::") {
            (Some(Vec::new()), "crate::".len())
        } else if rest.starts_with("self::") {
            (Some(here.clone()), "self::".len())
        } else if rest.starts_with("super::") {
            let mut base = here.clone();
            let mut n = 0;
            while code[i + n..].starts_with("super::") {
                base.pop();
                n += "super::".len();
            }
            (Some(base), n)
        } else {
            (None, 1)
        };
        if let Some(base) = base {
            for p in use_tree(&code[i + skip..]) {
                out.push(base.iter().cloned().chain(p).collect());
            }
        }
        i += skip;
    }
    out
}

/// A crate's modules and, per module, the names it re-exports (`pub use` / `pub(crate) use`
/// / `use` of a path, by its last segment or `as` name) with the absolute path they stand
/// for.
struct Crate {
    modules: BTreeSet<Vec<String>>,
    reexports: BTreeMap<(Vec<String>, String), Vec<String>>,
}

impl Crate {
    /// The module that defines the item `path` names: the longest module prefix, following
    /// a re-export where the next segment is not a module (at most 8 hops).
    fn resolve(&self, path: &[String]) -> Vec<String> {
        let mut path = path.to_vec();
        for _ in 0..8 {
            let mut m: Vec<String> = Vec::new();
            let mut k = 0;
            while k < path.len() {
                let mut next = m.clone();
                next.push(path[k].clone());
                if self.modules.contains(&next) {
                    m = next;
                    k += 1;
                } else {
                    break;
                }
            }
            match path
                .get(k)
                .and_then(|n| self.reexports.get(&(m.clone(), n.clone())))
            {
                Some(target) if *target != path[..=k] => {
                    let mut p = target.clone();
                    p.extend(path[k + 1..].iter().cloned());
                    path = p;
                }
                _ => return m,
            }
        }
        panic!("re-exports of {path:?} form a loop");
    }
}

/// The `pub use` / `pub(crate) use` statements of `code` (a file of `module`): each
/// re-exported name (its `as` name if any) with the absolute path it stands for. A path
/// that starts with a child module of `module` (`pub use device::CudaDevice;`) is relative
/// to `module`; one that starts with anything else but `crate`, `self` or `super` names
/// another crate and is left out.
fn reexports_of(
    code: &str,
    module: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("pub") {
        let stmt_start = &rest[at + 3..];
        let after = stmt_start.trim_start();
        let after = match after.strip_prefix('(') {
            Some(a) => a.split_once(')').map_or("", |(_, r)| r).trim_start(),
            None => after,
        };
        rest = &rest[at + 3..];
        let Some(tree) = after.strip_prefix("use ") else {
            continue;
        };
        let stmt = tree.split(';').next().unwrap_or("").trim_start();
        let base: Vec<String> = if stmt.starts_with("crate::") {
            Vec::new()
        } else if stmt.starts_with("self::") || stmt.starts_with("super::") {
            // Resolved below through `crate_paths`.
            for p in crate_paths(stmt, module) {
                if let Some(name) = p.last() {
                    out.push((name.clone(), p.clone()));
                }
            }
            continue;
        } else {
            module.to_vec()
        };
        let tree = stmt.strip_prefix("crate::").unwrap_or(stmt);
        for (p, name) in use_tree_named(tree) {
            let full: Vec<String> = base.iter().cloned().chain(p).collect();
            let first_is_child = base.is_empty() || {
                let mut child = base.clone();
                child.push(full[base.len()].clone());
                modules.contains(&child)
            };
            if first_is_child {
                out.push((name, full));
            }
        }
    }
    out
}

fn edges_of(krate: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new("..").join(krate).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(!files.is_empty(), "no sources in {}", src.display());
    let seg = |m: &str| -> Vec<String> {
        m.split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let parsed: Vec<(Vec<String>, String)> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            (seg(&module_of(&src, f)), code_of(&text))
        })
        .collect();
    let mut krate_info = Crate {
        modules: parsed.iter().map(|(m, _)| m.clone()).collect(),
        reexports: BTreeMap::new(),
    };
    for (m, code) in &parsed {
        for (name, target) in reexports_of(code, m, &krate_info.modules) {
            krate_info.reexports.insert((m.clone(), name), target);
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, code) in &parsed {
        let deps = edges.entry(m.join("::")).or_default();
        for path in crate_paths(code, m) {
            let t = krate_info.resolve(&path);
            // The crate root, and a module's ancestors and descendants (a parent declares
            // and re-exports its children; a child reads its parent's items), are not arrows
            // between modules.
            if t.is_empty() || m.starts_with(&t) || t.starts_with(m) {
                continue;
            }
            deps.insert(t.join("::"));
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
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    let here = v(&["a", "b"]);
    assert_eq!(
        crate_paths(
            "use crate::x::{y, z::{p, q}}; tilekit_crate::q; crate::w; super::s::T; self::c::D; super::super::r;",
            &here
        ),
        vec![
            v(&["x", "y"]),
            v(&["x", "z", "p"]),
            v(&["x", "z", "q"]),
            v(&["w"]),
            v(&["a", "s", "T"]),
            v(&["a", "b", "c", "D"]),
            v(&["r"]),
        ]
    );
    assert!(!code_of("#[cfg(doc)]\nuse crate::Runtime;\nuse crate::a;").contains("Runtime"));
    assert_eq!(
        code_of("let u = \"http://crate::x\"; crate::y /* crate::z */"),
        "let u = ; crate::y \n"
    );
    // A re-export is followed to the module that defines the item.
    let k = Crate {
        modules: [v(&[]), v(&["m"]), v(&["m", "inner"]), v(&["n"])]
            .into_iter()
            .collect(),
        reexports: [
            ((v(&["m"]), "E".to_string()), v(&["m", "inner", "E"])),
            ((v(&[]), "E".to_string()), v(&["m", "E"])),
        ]
        .into_iter()
        .collect(),
    };
    assert_eq!(k.resolve(&v(&["E"])), v(&["m", "inner"]));
    // Relative re-exports of child modules, `as` names; other crates' paths left out.
    let mods: BTreeSet<Vec<String>> = [v(&[]), v(&["m"]), v(&["m", "dev"])].into_iter().collect();
    assert_eq!(
        reexports_of(
            "pub(crate) use dev::{Device, open as start}; pub use serde::Serialize; pub use crate::m::X;",
            &v(&["m"]),
            &mods
        ),
        vec![
            ("Device".to_string(), v(&["m", "dev", "Device"])),
            ("start".to_string(), v(&["m", "dev", "open"])),
            ("X".to_string(), v(&["m", "X"])),
        ]
    );
    // `super::` inside an inline `mod tests { .. }` counts from the inline module.
    assert_eq!(
        crate_paths("mod tests { use super::super::q::Z; }", &here),
        vec![v(&["a", "q", "Z"])]
    );
    assert_eq!(k.resolve(&v(&["n", "f"])), v(&["n"]));
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

/// Codegen's stages (a module and its descendants) and the modules (and their
/// descendants) they must not import, directly.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("emit", &["plan", "variant", "dump", "lowered"]),
    ("layout", &["emit", "plan", "variant", "dump", "lowered"]),
    ("smem", &["emit", "plan", "variant", "dump", "lowered"]),
    (
        "analyze",
        &["emit", "plan", "variant", "dump", "lowered", "layout"],
    ),
    ("threads", &["emit", "plan", "variant", "dump", "lowered"]),
];

/// `module` or one of its descendants.
fn within(m: &str, module: &str) -> bool {
    m == module || m.starts_with(&format!("{module}::"))
}

#[test]
fn codegen_stages_never_import_the_modules_that_read_their_result() {
    let edges = edges_of("codegen");
    let mut back_edges = Vec::new();
    for (stage, forbidden) in FORBIDDEN {
        let modules: Vec<&String> = edges.keys().filter(|m| within(m, stage)).collect();
        assert!(!modules.is_empty(), "no module `{stage}` in codegen");
        for m in modules {
            for t in &edges[m] {
                if forbidden.iter().any(|f| within(t, f)) {
                    back_edges.push(format!("{m} -> {t}"));
                }
            }
        }
    }
    assert!(
        back_edges.is_empty(),
        "back edges:\n{}",
        back_edges.join("\n")
    );
}
