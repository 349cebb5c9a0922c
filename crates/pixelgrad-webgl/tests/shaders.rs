//! Every shader source compiles: in the EGL context (all programs, all configs) and offline
//! with glslangValidator when it is installed.

use std::process::Command;

use pixelgrad_core::Backend;
use pixelgrad_webgl::dialect;
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

#[test]
fn all_programs_compile_and_link_in_the_context() {
    let b = WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() }).unwrap();
    let t = std::time::Instant::now();
    let n = b.warm_up().unwrap();
    eprintln!("compiled {n} programs in {:?}", t.elapsed());
    // Every body program, plus every elementwise definition in two forms.
    let defs = pixelgrad_core::kernel::defs::all().unwrap().len();
    assert_eq!(n, dialect::all_specs().len() + 2 * defs);
    assert_eq!(b.counters().compiles as usize, n);
    // Cached: a second warm-up compiles nothing.
    b.warm_up().unwrap();
    assert_eq!(b.counters().compiles as usize, n);
}

#[test]
fn all_shaders_pass_glslang_validator() {
    if Command::new("glslangValidator").arg("--version").output().is_err() {
        eprintln!("note: glslangValidator not installed (Debian: glslang-tools); offline validation skipped");
        return;
    }
    let dir = std::env::temp_dir().join(format!("pixelgrad-webgl-glsl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut sources = vec![("fullscreen.vert".to_string(), dialect::vertex_source())];
    for spec in dialect::all_specs() {
        let src = dialect::fragment_source(&spec).unwrap();
        sources.push((format!("{}_{}.frag", spec.name, spec.config), src));
    }
    for (label, src) in dialect::all_map_sources().unwrap() {
        sources.push((format!("{label}.frag"), src));
    }
    let epilogues = dialect::all_epilogue_sources().unwrap();
    assert!(
        epilogues.len() >= 12 && epilogues.iter().all(|(_, s)| s.contains("o_color1 = PG_H4(pg_epilogue")),
        "epilogues write a second target"
    );
    sources.extend(epilogues.into_iter().map(|(label, src)| (format!("{label}.frag"), src)));
    let groups = dialect::all_group_sources().unwrap();
    assert!(groups.len() >= 2 && groups.iter().all(|(_, s)| s.contains("o_color1")), "grouped draws write several targets");
    for (label, src) in groups {
        sources.push((format!("{label}.frag"), src));
    }
    // The sources under the precision emulation (`PG_HALF`: every value through pg_h): every
    // body and group, and each elementwise definition in its fast form (the other forms
    // differ only in index arithmetic, which the emulation leaves alone; the driver compiles
    // every program in both usual forms in tests/emulation.rs).
    let emulated: Vec<(String, String)> = sources
        .iter()
        .filter(|(n, _)| n.ends_with(".frag") && !n.starts_with("reduce") && !n.contains(".broadcast") && !n.contains(".scalars"))
        .map(|(n, s)| (format!("half_{n}"), dialect::emulate_half(s)))
        .collect();
    assert!(emulated.iter().all(|(_, s)| s.contains("#define PG_HALF 1")));
    sources.extend(emulated);
    let mut failures = Vec::new();
    for (name, src) in &sources {
        let path = dir.join(name);
        std::fs::write(&path, src).unwrap();
        let out = Command::new("glslangValidator").arg(&path).output().unwrap();
        if !out.status.success() {
            failures.push(format!("{name}:\n{}{}", String::from_utf8_lossy(&out.stdout), dialect::numbered(src)));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Snippets put before the text of the bodies that use them.
const SNIPPETS: [&str; 1] = ["from_pixels_common"];

#[test]
fn every_glsl_file_is_a_registered_body() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/shaders");
    // Files the dialect includes itself rather than as program bodies.
    let shared = ["header.glsl", "main_elementwise.glsl", "fullscreen.vert"];
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_str().unwrap().to_string();
        if path.is_dir() || shared.contains(&file.as_str()) {
            continue;
        }
        let stem = file.trim_end_matches(".glsl");
        let text = std::fs::read_to_string(&path).unwrap();
        // A snippet shared by several bodies (put before their own text) is no body itself.
        // A window program's hand-written fast path (pixelgrad_webgl::glsl::FAST_PATHS).
        if let Some(fast) = pixelgrad_webgl::glsl::FAST_PATHS.iter().find(|f| f.file == file) {
            assert_eq!(fast.source, text, "{file}: registered source differs");
            continue;
        }
        if SNIPPETS.contains(&stem) {
            assert!(dialect::BODIES.iter().any(|(_, src)| src.starts_with(&text)), "{file} is used by no body");
            continue;
        }
        let body = dialect::BODIES.iter().find(|(n, _)| *n == stem);
        let body = body.unwrap_or_else(|| panic!("{file} is not registered in dialect::BODIES"));
        let own = SNIPPETS.iter().fold(body.1.to_string(), |src, s| {
            let snippet = std::fs::read_to_string(dir.join(format!("{s}.glsl"))).unwrap();
            src.strip_prefix(snippet.as_str()).map(str::to_string).unwrap_or(src)
        });
        assert_eq!(own, text, "{file}: registered source differs");
    }
}
