//! `cargo xtask build-wasm [--dev] [--wasm-opt] [--threads]`: the `pixelgrad` npm package in
//! `web/pkg/`.
//!
//! 1. `cargo build --target wasm32-unknown-unknown -p pixelgrad-web` (release unless `--dev`);
//! 2. `wasm-bindgen --target web` into `web/pkg/` (the CLI from `~/.cargo/bin` or `PATH`; when
//!    it is missing or its version differs from the `wasm-bindgen` crate in Cargo.lock — the
//!    two must match exactly — it is installed with `cargo install wasm-bindgen-cli`);
//! 3. with `--wasm-opt`: `wasm-opt -O3` from npm `binaryen` (`web/node_modules/.bin`);
//!    with `--threads`: the threaded build next to it (`pixelgrad_web_threads.js` +
//!    `pixelgrad_web_threads_bg.wasm`, see `build_threads`), which the loader picks in a
//!    cross-origin isolated page;
//! 4. the tokenizer's own module, `pixelgrad_text.js` + `pixelgrad_text_bg.wasm`
//!    (`crates/pixelgrad-text-web`, see `build_text`), loaded on a page's first `pg.tokenizer`;
//! 5. copies the hand-written package (`web/js/*`: `index.js`, its modules, `index.d.ts`) next
//!    to the bindings, with the checked-in manifest `web/js/package.json` and `version.js`
//!    stamped with the workspace version (`npm_manifest.rs`) and `CHANGELOG.md`.

use std::path::{Path, PathBuf};
use std::process::Command;

type Res<T> = Result<T, String>;

fn status(cmd: &mut Command, what: &str) -> Res<()> {
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{what} failed ({s})")),
        Err(e) => Err(format!("could not run {what}: {e}")),
    }
}

/// The version of the `wasm-bindgen` crate pinned in Cargo.lock.
fn locked_bindgen_version(root: &Path) -> Res<String> {
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).map_err(|e| format!("Cargo.lock: {e}"))?;
    let mut lines = lock.lines();
    while let Some(l) = lines.next() {
        if l.trim() == "name = \"wasm-bindgen\"" {
            if let Some(v) = lines.next().and_then(|v| v.trim().strip_prefix("version = \"")) {
                return Ok(v.trim_end_matches('"').to_string());
            }
        }
    }
    Err("Cargo.lock has no wasm-bindgen entry (is pixelgrad-web a workspace member?)".into())
}

/// A `wasm-bindgen` binary whose version equals `want`, installing it if needed.
fn bindgen_cli(want: &str) -> Res<PathBuf> {
    let home_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .map(|c| c.join("bin").join("wasm-bindgen"));
    let candidates: Vec<PathBuf> = home_bin.into_iter().chain([PathBuf::from("wasm-bindgen")]).collect();
    let version_of = |p: &Path| -> Option<String> {
        let out = Command::new(p).arg("--version").output().ok()?;
        String::from_utf8(out.stdout).ok()?.split_whitespace().nth(1).map(str::to_string)
    };
    for c in &candidates {
        if version_of(c).as_deref() == Some(want) {
            return Ok(c.clone());
        }
    }
    eprintln!("xtask build-wasm: wasm-bindgen {want} not found; installing wasm-bindgen-cli {want}");
    status(
        Command::new(env!("CARGO")).args(["install", "wasm-bindgen-cli", "--version", want, "--force"]),
        "cargo install wasm-bindgen-cli",
    )?;
    candidates
        .into_iter()
        .find(|c| version_of(c).as_deref() == Some(want))
        .ok_or_else(|| format!("wasm-bindgen {want} still not found after installing it"))
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"))
}

/// Runs the build; returns the process exit code.
pub fn main(args: &[String]) -> i32 {
    let dev = args.iter().any(|a| a == "--dev");
    let opt = args.iter().any(|a| a == "--wasm-opt");
    let threads = args.iter().any(|a| a == "--threads");
    if let Some(bad) = args.iter().find(|a| !["--dev", "--wasm-opt", "--threads"].contains(&a.as_str())) {
        eprintln!("xtask build-wasm: unknown argument '{bad}' (usage: cargo xtask build-wasm [--dev] [--wasm-opt] [--threads])");
        return 2;
    }
    match build(dev, opt, threads) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("xtask build-wasm: {e}");
            1
        }
    }
}

fn build(dev: bool, opt: bool, threads: bool) -> Res<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).ok_or("no workspace root")?;
    let profile = if dev { "debug" } else { "release" };
    let mut cargo = Command::new(env!("CARGO"));
    cargo.current_dir(&root).args(["build", "--target", "wasm32-unknown-unknown", "-p", "pixelgrad-web"]);
    if !dev {
        cargo.arg("--release");
    }
    status(&mut cargo, "cargo build -p pixelgrad-web (wasm32)")?;
    let wasm = target_dir(&root).join("wasm32-unknown-unknown").join(profile).join("pixelgrad_web.wasm");
    if !wasm.is_file() {
        return Err(format!("{} was not produced", wasm.display()));
    }

    let pkg = root.join("web").join("pkg");
    // A fresh directory: stale files from an older layout must not ship.
    if pkg.exists() {
        std::fs::remove_dir_all(&pkg).map_err(|e| format!("{}: {e}", pkg.display()))?;
    }
    std::fs::create_dir_all(&pkg).map_err(|e| format!("{}: {e}", pkg.display()))?;
    let cli = bindgen_cli(&locked_bindgen_version(&root)?)?;
    status(Command::new(&cli).arg("--target").arg("web").arg("--out-dir").arg(&pkg).arg(&wasm), "wasm-bindgen")?;
    let out_wasm = pkg.join("pixelgrad_web_bg.wasm");

    if opt {
        wasm_opt(&root, &out_wasm, false)?;
    }
    let mut files = vec!["pixelgrad_web.js".to_string(), "pixelgrad_web_bg.wasm".to_string(), "pixelgrad_web.d.ts".to_string()];
    if threads {
        let started = std::time::Instant::now();
        let threaded = crate::build_threads::build(&root, &target_dir(&root), dev)?;
        status(
            Command::new(&cli)
                .arg("--target")
                .arg("web")
                .args(["--out-name", "pixelgrad_web_threads"])
                .arg("--out-dir")
                .arg(&pkg)
                .arg(&threaded),
            "wasm-bindgen (threaded build)",
        )?;
        if opt {
            wasm_opt(&root, &pkg.join("pixelgrad_web_threads_bg.wasm"), true)?;
        }
        println!("xtask build-wasm: threaded build took {:.0} s", started.elapsed().as_secs_f64());
        files.extend(["pixelgrad_web_threads.js", "pixelgrad_web_threads_bg.wasm", "pixelgrad_web_threads.d.ts"].map(String::from));
    }

    status(&mut crate::build_text::cargo(&root, dev), "cargo build -p pixelgrad-text-web (wasm32)")?;
    let text_compiled = crate::build_text::compiled(&target_dir(&root), dev);
    if !text_compiled.is_file() {
        return Err(format!("{} was not produced", text_compiled.display()));
    }
    status(&mut crate::build_text::bindgen(&cli, &text_compiled, &pkg), "wasm-bindgen (tokenizer module)")?;
    let text_wasm = pkg.join("pixelgrad_text_bg.wasm");
    if opt {
        wasm_opt(&root, &text_wasm, false)?;
    }
    files.extend(crate::build_text::FILES.map(String::from));

    let js = root.join("web").join("js");
    let entries = std::fs::read_dir(&js).map_err(|e| format!("{}: {e}", js.display()))?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        // The manifest and the version are stamped below; the rest ships as written.
        if e.path().is_file() && name != "package.json" && name != "version.js" {
            std::fs::copy(e.path(), pkg.join(&name)).map_err(|err| format!("copy {name}: {err}"))?;
            files.push(name);
        }
    }
    let version = env!("CARGO_PKG_VERSION");
    let source = std::fs::read_to_string(js.join("package.json")).map_err(|e| format!("web/js/package.json: {e}"))?;
    let manifest = crate::npm_manifest::stamp(&source, version)?;
    std::fs::write(pkg.join("package.json"), &manifest).map_err(|e| format!("package.json: {e}"))?;
    std::fs::write(pkg.join("version.js"), crate::npm_manifest::version_module(version)).map_err(|e| format!("version.js: {e}"))?;
    std::fs::copy(root.join("CHANGELOG.md"), pkg.join("CHANGELOG.md")).map_err(|e| format!("copy CHANGELOG.md: {e}"))?;
    files.extend(["package.json", "version.js", "CHANGELOG.md"].map(String::from));
    crate::npm_manifest::check_targets(&manifest, &pkg)?;
    files.sort();
    files.retain(|f| pkg.join(f).is_file());

    println!("xtask build-wasm: wrote {}", pkg.display());
    for f in &files {
        let size = std::fs::metadata(pkg.join(f)).map(|m| m.len()).unwrap_or(0);
        println!("  {f:<28} {size:>10} bytes");
    }
    let mib = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0) as f64 / 1048576.0;
    let how = if opt { ", wasm-opt -O3" } else { "" };
    println!("  .wasm size: {:.2} MiB ({profile}{how})", mib(&out_wasm));
    println!("  tokenizer .wasm size: {:.2} MiB ({profile}{how}; loaded on the first pg.tokenizer)", mib(&text_wasm));
    Ok(())
}

/// `wasm-opt -O3` in place (`threads`: the module uses atomics and shared memory).
fn wasm_opt(root: &Path, wasm: &Path, threads: bool) -> Res<()> {
    let wasm_opt = root.join("web/node_modules/.bin/wasm-opt");
    if !wasm_opt.is_file() {
        return Err(format!("{} is missing: run `cd web && npm install` (devDependency binaryen)", wasm_opt.display()));
    }
    let mut cmd = Command::new(&wasm_opt);
    cmd.args(["-O3", "--enable-bulk-memory", "--enable-nontrapping-float-to-int", "--enable-sign-ext", "--enable-mutable-globals"]);
    if threads {
        cmd.args(["--enable-threads", "--enable-simd"]);
    }
    status(cmd.arg("-o").arg(wasm).arg(wasm), "wasm-opt")
}
