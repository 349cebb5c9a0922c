//! The layout rule for the JavaScript: files in one folder never import each other in a circle
//! (docs/src/design/layout.md), checked over every folder under `web/` (the npm package's
//! `web/js`, the benches, the demo, the tests, the servers) except `node_modules`.
//!
//! An arrow is a relative import of a sibling: `import … from './x.js'`, `export … from
//! './x.js'`, a bare `import './x.js'` or a dynamic `import('./x.js')` (a dynamic import runs
//! later, but the two files still depend on each other). Comments are left out. A circle is a
//! strongly connected group of two or more files, reported as `folder: a.js b.js` (sorted).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::components::strongly_connected;

/// File extensions read as JavaScript modules.
const EXTENSIONS: &[&str] = &["js", "mjs"];

/// The siblings `text` imports: the `./name.js` specifiers after `from`, a bare `import` or
/// `import(`, in code outside comments.
pub fn sibling_imports(text: &str) -> BTreeSet<String> {
    let code = strip_comments(text);
    let mut out = BTreeSet::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let q = bytes[i];
        if q != b'\'' && q != b'"' {
            i += 1;
            continue;
        }
        let Some(len) = code[i + 1..].find(q as char) else { break };
        let spec = &code[i + 1..i + 1 + len];
        let before = code[..i].trim_end();
        let imported = before.ends_with("from") || before.ends_with("import") || before.ends_with("import(");
        if imported {
            if let Some(name) = spec.strip_prefix("./") {
                if !name.contains('/') {
                    out.insert(name.to_string());
                }
            }
        }
        i += len + 2;
    }
    out
}

/// `text` without `//` and `/* */` comments (strings are kept; a `//` inside a string ends
/// nothing the check needs, since specifiers never contain one).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |e| &r[e + 2..]);
        } else if rest.starts_with("//") && !out.ends_with(':') {
            rest = rest.find('\n').map_or("", |e| &rest[e..]);
        } else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// Circles among the files of each folder under `web_dir` (recursively, `node_modules` left
/// out), sorted.
pub fn circles(web_dir: &Path) -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    let mut folders = vec![web_dir.to_path_buf()];
    while let Some(dir) = folders.pop() {
        let mut files = BTreeMap::new();
        for e in std::fs::read_dir(&dir)? {
            let path = e?.path();
            let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "node_modules" && !name.starts_with('.') {
                    folders.push(path);
                }
            } else if path.extension().is_some_and(|x| EXTENSIONS.iter().any(|e| x == *e)) {
                files.insert(name, sibling_imports(&std::fs::read_to_string(&path)?));
            }
        }
        let nodes: BTreeSet<String> = files.keys().cloned().collect();
        let edges: BTreeMap<String, BTreeSet<String>> =
            files.into_iter().map(|(f, to)| (f, to.into_iter().filter(|t| nodes.contains(t)).collect())).collect();
        let folder = dir.strip_prefix(web_dir.parent().unwrap_or(web_dir)).unwrap_or(&dir).to_string_lossy().into_owned();
        for scc in strongly_connected(&nodes, &edges) {
            if scc.len() > 1 {
                out.push(format!("{folder}: {}", scc.join(" ")));
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_dynamic_and_re_exports_are_arrows_and_comments_are_not() {
        let text = "import { a } from './a.js';\nexport { b } from \"./b.js\";\nimport './c.js';\n\
                    const d = await import('./d.mjs');\n// import { e } from './e.js';\n/* import './f.js' */\n\
                    import x from '../up.js';\nimport y from './sub/z.js';\nconst s = './g.js';\n\
                    const url = 'https://example.org/x.js';";
        let got: Vec<String> = sibling_imports(text).into_iter().collect();
        assert_eq!(got, ["a.js", "b.js", "c.js", "d.mjs"]);
    }

    #[test]
    fn a_circle_is_found_and_a_chain_is_not() {
        let dir = std::env::temp_dir().join(format!("pg-js-layout-{}", std::process::id()));
        let web = dir.join("web");
        std::fs::create_dir_all(web.join("js")).expect("temp dir");
        let write = |f: &str, t: &str| std::fs::write(web.join(f), t).expect("write");
        write("js/a.js", "import { b } from './b.js';");
        write("js/b.js", "export { c } from './c.js';");
        write("js/c.js", "const a = () => import('./a.js');");
        write("js/d.js", "import { a } from './a.js';");
        write("top.mjs", "import './js/a.js';");
        let found = circles(&web);
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(found.expect("read"), ["web/js: a.js b.js c.js"]);
    }

    /// Every JS folder of the project: no file imports a sibling that imports it back.
    #[test]
    fn no_import_circles_in_the_javascript() {
        let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("../web");
        let found = circles(&web).expect("read web/");
        assert!(found.is_empty(), "import circles between JS files of one folder: {found:#?}");
    }
}
