//! `cargo xtask layout`: import circles between the files of one folder.
//!
//! The project's layout rule is "one concept per file; files in one folder never import each
//! other in a circle" (docs/src/design/layout.md). This check reads every crate's `src/` tree,
//! resolves the `crate::`, `super::` and `self::` paths each file names (in `use` lines and in
//! code; comments and inline `mod … { }` blocks such as unit tests are left out), and turns them
//! into arrows between siblings: at each folder, a file or subfolder points at a sibling file or
//! subfolder when something inside it names that sibling. A strongly connected group of two or
//! more siblings is a circle. The module roots (`lib.rs`, `main.rs`, `mod.rs`) declare and
//! re-export their children and are not counted as importers.
//!
//! The circles that existed when the check was written are listed in [`KNOWN`]; the unit test
//! fails on any other circle and on a listed circle that is gone (so the list only shrinks).
//!
//! It also checks the arrows between crates (docs/src/design/architecture.md): every workspace
//! crate has a layer in [`LAYERS`], and a normal (non-dev) dependency points only at a crate of
//! a lower layer, so the core needs nothing of ours, a backend never needs another backend or
//! the layers, training and data code never need a backend, and nothing needs a front end.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::components::strongly_connected;

/// Circles present when the check was introduced, as `crate-dir: folder: a b c` (members
/// sorted). Each is a debt to pay off, not a licence: remove the line when the circle is broken.
/// The last ones were broken on 2026-12-07 (issue 39); a new circle fails the test.
pub const KNOWN: &[&str] = &[];

/// The layer of every workspace crate. A crate may depend (outside `[dev-dependencies]`) only on
/// crates of a lower layer: crates of one layer never depend on each other.
pub const LAYERS: &[(&str, u8)] = &[
    ("pixelgrad-durable", 0), // crash-safe file writes; no pixelgrad dependency
    ("pixelgrad-text", 0),    // tokenizer.json files (the tokenizers crate); no pixelgrad dependency
    ("pixelgrad-core", 1),    // tensors, ops, autodiff, the Backend trait, the kernel IR
    ("pixelgrad-nn", 2),      // layers, losses, optimizers, fit: any Device, no backend
    ("pixelgrad-data", 2),    // loaders and the embedded data set
    ("pixelgrad-image", 2),   // images into model inputs (fit, resize, YUV) on any Device
    ("pixelgrad-cpu", 3),     // backends: the core (and the image geometry they upload to)
    ("pixelgrad-wgpu", 3),
    ("pixelgrad-webgl", 3),
    ("pixelgrad-onnx", 3), // import/export: core + nn, no backend
    ("pixelgrad-flower", 3),
    ("pixelgrad-conformance", 4), // the shared suite: core, the CPU reference, nn, data
    ("pixelgrad", 4),             // the facade
    ("pixelgrad-cli", 5),         // front ends and test harnesses: nothing depends on them
    ("pixelgrad-web", 5),
    ("pixelgrad-text-web", 5), // pg.tokenizer's own wasm module: pixelgrad-text only
    ("pixelgrad-browser-tests", 5),
    ("xtask", 5),
];

pub fn main(args: &[String]) -> i32 {
    let root = args.first().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("crates"));
    let mut bad = false;
    match circles(&root) {
        Ok(found) => {
            for c in &found {
                let note = if KNOWN.contains(&c.as_str()) { " (known)" } else { " (NEW)" };
                println!("{c}{note}");
            }
            println!("{} import circle(s)", found.len());
            bad |= found.iter().any(|c| !KNOWN.contains(&c.as_str()));
        }
        Err(e) => {
            eprintln!("xtask layout: {e}");
            return 1;
        }
    }
    let web = root.parent().unwrap_or(Path::new(".")).join("web");
    match crate::js_layout::circles(&web) {
        Ok(found) => {
            for c in &found {
                println!("{c} (NEW)");
            }
            println!("{} JS import circle(s)", found.len());
            bad |= !found.is_empty();
        }
        Err(e) => {
            eprintln!("xtask layout: {}: {e}", web.display());
            return 1;
        }
    }
    match crate_arrows() {
        Ok(wrong) => {
            for w in &wrong {
                println!("{w}");
            }
            println!("{} dependency arrow(s) against the layers", wrong.len());
            bad |= !wrong.is_empty();
        }
        Err(e) => {
            eprintln!("xtask layout: {e}");
            return 1;
        }
    }
    i32::from(bad)
}

/// The workspace's crate dependencies (normal ones only) that break [`LAYERS`], and crates
/// that have no layer.
pub fn crate_arrows() -> Result<Vec<String>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1", "--offline"])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo metadata: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata: {e}"))?;
    let layer = |name: &str| LAYERS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l);
    let packages = meta["packages"].as_array().cloned().unwrap_or_default();
    let ours: BTreeSet<String> = packages.iter().filter_map(|p| p["name"].as_str().map(String::from)).collect();
    let mut wrong = Vec::new();
    for p in &packages {
        let name = p["name"].as_str().unwrap_or_default();
        let Some(from) = layer(name) else {
            wrong.push(format!("{name}: no layer in xtask/src/layout.rs LAYERS"));
            continue;
        };
        for d in p["dependencies"].as_array().into_iter().flatten() {
            let dep = d["name"].as_str().unwrap_or_default();
            if !ours.contains(dep) || d["kind"].as_str() == Some("dev") {
                continue;
            }
            match layer(dep) {
                Some(to) if to < from => {}
                Some(to) => wrong.push(format!("{name} (layer {from}) depends on {dep} (layer {to})")),
                None => {} // reported as its own package
            }
        }
    }
    Ok(wrong)
}

/// Every circle under `crates_dir/*/src`, formatted as in [`KNOWN`], sorted.
pub fn circles(crates_dir: &Path) -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    let mut crates: Vec<PathBuf> = std::fs::read_dir(crates_dir)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    crates.sort();
    for krate in crates {
        let src = krate.join("src");
        if !src.is_dir() {
            continue;
        }
        let name = krate.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let mut files = Vec::new();
        collect(&src, &mut files)?;
        let mut modules = Vec::new();
        for f in &files {
            let text = std::fs::read_to_string(f)?;
            modules.push(Module::read(&src, f, &text));
        }
        for (folder, members) in folder_circles(&modules) {
            let folder = if folder.is_empty() { "src".to_string() } else { format!("src/{folder}") };
            out.push(format!("{name}: {folder}: {}", members.join(" ")));
        }
    }
    out.sort();
    Ok(out)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            collect(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    Ok(())
}

/// One source file: its module path below the crate root and the absolute module paths it names.
struct Module {
    /// e.g. `["kernel", "eval"]` for `src/kernel/eval.rs`; `["kernel"]` for `src/kernel/mod.rs`.
    path: Vec<String>,
    /// Whether the file is a module root (`lib.rs`, `main.rs`, `mod.rs`).
    root: bool,
    /// Absolute paths below `crate` that the file names.
    refs: Vec<Vec<String>>,
}

impl Module {
    fn read(src: &Path, file: &Path, text: &str) -> Module {
        let rel = file.strip_prefix(src).unwrap_or(file);
        let mut path: Vec<String> = rel.iter().map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
        let last = path.last().cloned().unwrap_or_default();
        let root = matches!(last.as_str(), "lib" | "main" | "mod") || path.len() == 1 && last == "build";
        if root {
            path.pop();
        }
        let code = strip_inline_modules(&strip_comments(text));
        let refs = named_paths(&code).into_iter().filter_map(|p| resolve(&path, root, &p)).collect();
        Module { path, root, refs }
    }
}

/// Removes `//` and `/* */` comments and the contents of string literals.
fn strip_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Removes the bodies of inline modules (`mod tests { … }`): their `super::` means the file.
fn strip_inline_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = find_inline_mod(rest) {
        out.push_str(&rest[..at]);
        let open = at + rest[at..].find('{').unwrap_or(0);
        let mut depth = 0usize;
        let mut end = rest.len();
        for (k, c) in rest[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Byte offset of the next `mod NAME {` (an inline module, not a `mod NAME;` declaration).
fn find_inline_mod(code: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(k) = code[from..].find("mod ") {
        let at = from + k;
        let before_ok = at == 0 || !is_ident(code.as_bytes()[at - 1]);
        let after = &code[at + 4..];
        let name_len = after.bytes().take_while(|&c| is_ident(c)).count();
        if before_ok && name_len > 0 && after[name_len..].trim_start().starts_with('{') {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Every path that starts with `crate`, `super` or `self` followed by `::`, with `{a, b::c}`
/// groups expanded.
fn named_paths(code: &str) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if is_ident(b[i]) && (i == 0 || !is_ident(b[i - 1]) && b[i - 1] != b':') {
            let len = b[i..].iter().take_while(|&&c| is_ident(c)).count();
            let word = &code[i..i + len];
            if matches!(word, "crate" | "super" | "self") && code[i + len..].starts_with("::") {
                let mut pos = i;
                parse_tree(code, &mut pos, Vec::new(), &mut out);
                i = pos.max(i + len);
                continue;
            }
            i += len;
        } else {
            i += 1;
        }
    }
    out
}

/// Parses `seg::seg::{tree, tree}` at `*pos`, pushing every expanded path onto `out`.
fn parse_tree(code: &str, pos: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let b = code.as_bytes();
    let mut path = prefix;
    loop {
        while *pos < b.len() && b[*pos].is_ascii_whitespace() {
            *pos += 1;
        }
        if *pos < b.len() && b[*pos] == b'{' {
            *pos += 1;
            loop {
                while *pos < b.len() && (b[*pos].is_ascii_whitespace() || b[*pos] == b',') {
                    *pos += 1;
                }
                if *pos >= b.len() || b[*pos] == b'}' {
                    *pos += 1;
                    return;
                }
                let before = *pos;
                parse_tree(code, pos, path.clone(), out);
                if *pos == before {
                    *pos += 1; // `*` or anything else that is not a path segment
                }
                // skip `as name`
                while *pos < b.len() && !matches!(b[*pos], b',' | b'}') {
                    *pos += 1;
                }
            }
        }
        let len = b[*pos..].iter().take_while(|&&c| is_ident(c)).count();
        if len == 0 {
            if !path.is_empty() {
                out.push(path);
            }
            return;
        }
        path.push(code[*pos..*pos + len].to_string());
        *pos += len;
        if code[*pos..].starts_with("::") {
            *pos += 2;
        } else {
            out.push(path);
            return;
        }
    }
}

/// The absolute module path (below `crate`) a path written in module `here` names.
fn resolve(here: &[String], root: bool, path: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = here.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") | Some("super") => {
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "self" => rest = &rest[1..],
                    "super" => {
                        base.pop()?;
                        rest = &rest[1..];
                    }
                    _ => break,
                }
            }
        }
        _ => return None,
    }
    let _ = root;
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Circles per folder (folder path joined with `/`, members sorted).
fn folder_circles(modules: &[Module]) -> Vec<(String, Vec<String>)> {
    // Children (files and subfolders) of each folder.
    let mut children: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for m in modules {
        for depth in 0..m.path.len() {
            children.entry(m.path[..depth].to_vec()).or_default().insert(m.path[depth].clone());
        }
    }
    let mut out = Vec::new();
    for (folder, kids) in &children {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for m in modules.iter().filter(|m| !m.root || m.path.len() > folder.len()) {
            if m.path.len() <= folder.len() || m.path[..folder.len()] != folder[..] {
                continue;
            }
            let from = &m.path[folder.len()];
            for r in &m.refs {
                if r.len() > folder.len() && r[..folder.len()] == folder[..] {
                    let to = &r[folder.len()];
                    if to != from && kids.contains(to) {
                        edges.entry(from.clone()).or_default().insert(to.clone());
                    }
                }
            }
        }
        for scc in strongly_connected(kids, &edges) {
            if scc.len() > 1 {
                out.push((folder.join("/"), scc));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(path: &str, text: &str) -> Module {
        Module::read(Path::new("src"), Path::new(path), text)
    }

    #[test]
    fn paths_are_resolved_and_groups_expanded() {
        let m = module(
            "src/kernel/eval.rs",
            "use super::{schedule::Plan, ir::{Node, Expr as E}};\nuse crate::tensor::Tensor;\n\
             fn f() { crate::budget::check(); }\n// use super::render;\n\
             #[cfg(test)]\nmod tests { use super::*; use super::super::lower; }",
        );
        let refs: BTreeSet<String> = m.refs.iter().map(|r| r.join("::")).collect();
        for want in ["kernel::schedule::Plan", "kernel::ir::Node", "kernel::ir::Expr", "tensor::Tensor", "budget::check"] {
            assert!(refs.contains(want), "{want} missing from {refs:?}");
        }
        assert!(!refs.iter().any(|r| r.starts_with("kernel::render") || r.starts_with("lower")), "{refs:?}");
    }

    #[test]
    fn a_circle_between_siblings_is_found_and_a_chain_is_not() {
        let mods = vec![
            module("src/lib.rs", "pub mod a; pub mod b; pub mod c; pub use a::A;"),
            module("src/a.rs", "use crate::b::B;"),
            module("src/b.rs", "use super::a::A;"),
            module("src/c.rs", "use crate::a::A;"),
            module("src/d/mod.rs", "pub mod x; pub mod y;"),
            module("src/d/x.rs", "use super::y::Y; use crate::c::C;"),
            module("src/d/y.rs", "use crate::a::A;"),
        ];
        let found = folder_circles(&mods);
        assert_eq!(found, vec![(String::new(), vec!["a".to_string(), "b".to_string()])]);
    }

    /// The workspace's crates depend only on lower layers.
    #[test]
    fn crates_depend_only_on_lower_layers() {
        let wrong = crate_arrows().expect("cargo metadata");
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    /// The project's own crates: no circle beyond [`KNOWN`], and every listed one still exists.
    #[test]
    fn no_new_import_circles() {
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
        let found = circles(&crates).expect("read crates/");
        let new: Vec<&String> = found.iter().filter(|c| !KNOWN.contains(&c.as_str())).collect();
        assert!(new.is_empty(), "new import circles between files of one folder: {new:#?}");
        let gone: Vec<&&str> = KNOWN.iter().filter(|k| !found.iter().any(|c| c == *k)).collect();
        assert!(gone.is_empty(), "circles broken: remove them from layout::KNOWN: {gone:?}");
    }

    /// The WebGL layers (docs/src/design/architecture.md "Inside the WebGL backend"): storage
    /// never names fusion, settling or the ops, fusion never names settling, and no file below
    /// the backend names it.
    #[test]
    fn webgl_lower_layers_never_name_higher_ones() {
        const ABOVE_DEVICE: &[&str] = &["fusion", "group", "ops", "backend", "readback", "selftest"];
        const RULES: &[(&str, &[&str])] = &[
            ("texture.rs", ABOVE_DEVICE),
            ("pool.rs", ABOVE_DEVICE),
            ("bytes.rs", ABOVE_DEVICE),
            ("legacy.rs", ABOVE_DEVICE),
            ("context.rs", ABOVE_DEVICE),
            ("program.rs", ABOVE_EXECUTION),
            ("launch.rs", ABOVE_EXECUTION),
            ("plan.rs", ABOVE_EXECUTION),
            ("checks.rs", &["fusion", "group", "backend", "readback", "selftest"]),
            ("fusion.rs", &["group", "backend", "readback", "selftest"]),
        ];
        const ABOVE_EXECUTION: &[&str] = &["fusion", "group", "ops", "backend", "readback", "selftest"];
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/pixelgrad-webgl/src");
        let mut ops = Vec::new();
        collect(&src.join("ops"), &mut ops).expect("read src/ops");
        let ops: Vec<String> = ops.iter().filter_map(|f| f.strip_prefix(&src).ok()).map(|f| f.to_string_lossy().into_owned()).collect();
        let ops_never: &[&str] = &["fusion", "group", "backend", "readback", "selftest"];
        let mut wrong = Vec::new();
        for (file, never) in RULES.iter().copied().chain(ops.iter().map(|f| (f.as_str(), ops_never))) {
            let path = src.join(file);
            let text = std::fs::read_to_string(&path).expect("read a webgl source file");
            let m = Module::read(&src, &path, &text);
            for r in &m.refs {
                if r.first().is_some_and(|top| never.contains(&top.as_str())) {
                    wrong.push(format!("{file} names {}", r.join("::")));
                }
            }
        }
        assert!(wrong.is_empty(), "arrows from a lower WebGL layer to a higher one: {wrong:#?}");
    }
}
