//! `cargo xtask demo [--port P] [--no-build]`: builds the npm package (`cargo xtask build-wasm`)
//! and serves `web/` on 127.0.0.1 so the live training demo opens at `/demo/`.
//!
//! The server is a few dozen lines of std on purpose: the demo only needs GET/HEAD of static
//! files with the right MIME types (browsers refuse to compile wasm served as anything but
//! `application/wasm` with `instantiateStreaming`, and module scripts need a JavaScript type).

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// Port tried first; when it is taken the OS picks a free one.
const DEFAULT_PORT: u16 = 8080;

/// Parsed command line of `cargo xtask demo`.
struct Options {
    port: u16,
    build: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut opts = Options { port: DEFAULT_PORT, build: true };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--no-build" => opts.build = false,
            "--port" => {
                let v = it.next().ok_or("--port needs a value")?;
                opts.port = v.parse().map_err(|_| format!("--port: '{v}' is not a port number"))?;
            }
            other => return Err(format!("unknown argument '{other}' (usage: cargo xtask demo [--port P] [--no-build])")),
        }
    }
    Ok(opts)
}

/// Entry point of `cargo xtask demo`; returns the process exit code.
pub fn main(args: &[String]) -> i32 {
    let opts = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("xtask demo: {e}");
            return 2;
        }
    };
    let root = workspace_root().join("web");
    if opts.build {
        // A subprocess rather than a function call keeps the demo independent of how
        // build-wasm is implemented; it inherits CARGO_TARGET_DIR and the toolchain.
        let status = Command::new(env!("CARGO")).args(["run", "--release", "-q", "-p", "xtask", "--", "build-wasm"]).status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => {
                eprintln!("xtask demo: `cargo xtask build-wasm` failed ({s}); pass --no-build to serve the existing web/pkg");
                return 1;
            }
            Err(e) => {
                eprintln!("xtask demo: could not run cargo: {e}");
                return 1;
            }
        }
    }
    if !root.join("pkg").join("index.js").is_file() {
        eprintln!("xtask demo: warning: {} is missing; run `cargo xtask build-wasm`", root.join("pkg/index.js").display());
    }
    let listener = match bind(opts.port) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("xtask demo: could not listen on 127.0.0.1: {e}");
            return 1;
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(opts.port);
    println!("pixelgrad demo: http://127.0.0.1:{port}/demo/");
    println!("serving {} (Ctrl-C to stop)", root.display());
    for stream in listener.incoming() {
        match stream {
            Ok(s) => {
                let root = root.clone();
                // One thread per connection: browsers open several at once and keep them alive.
                std::thread::spawn(move || serve_connection(s, &root));
            }
            Err(e) => eprintln!("xtask demo: accept failed: {e}"),
        }
    }
    0
}

/// The workspace root: xtask's manifest dir is `<root>/xtask`.
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// Binds `port`, or any free port when that one is taken.
fn bind(port: u16) -> std::io::Result<TcpListener> {
    match TcpListener::bind(("127.0.0.1", port)) {
        Ok(l) => Ok(l),
        Err(e) => {
            eprintln!("xtask demo: port {port} unavailable ({e}); using a free port");
            TcpListener::bind(("127.0.0.1", 0))
        }
    }
}

/// MIME type by file extension.
fn mime(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "wasm" => "application/wasm",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        "ts" | "md" | "txt" => "text/plain; charset=utf-8",
        "csv" => "text/csv",
        _ => "application/octet-stream",
    }
}

/// Maps a request path to a file under `root`, refusing anything that could leave it.
fn resolve(root: &Path, url_path: &str) -> Option<PathBuf> {
    let path = url_path.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_decode(path)?;
    let mut out = root.to_path_buf();
    for c in Path::new(decoded.trim_start_matches('/')).components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if out.is_dir() {
        out.push("index.html");
    }
    Some(out)
}

/// `%XX` decoding; `None` for malformed escapes or non-UTF-8 results.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Serves requests on one keep-alive connection until the client closes it.
fn serve_connection(stream: TcpStream, root: &Path) {
    let Ok(write_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    let mut out = write_half;
    loop {
        let mut request_line = String::new();
        match reader.read_line(&mut request_line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        // Headers are read and ignored; the static server needs none of them.
        loop {
            let mut h = String::new();
            match reader.read_line(&mut h) {
                Ok(0) | Err(_) => return,
                Ok(_) if h == "\r\n" || h == "\n" => break,
                Ok(_) => {}
            }
        }
        let mut parts = request_line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let ok = match method {
            "GET" | "HEAD" => respond(&mut out, root, target, method == "HEAD"),
            _ => send(&mut out, 405, "Method Not Allowed", "text/plain", b"only GET and HEAD", false),
        };
        if ok.is_err() {
            return;
        }
    }
}

fn respond(out: &mut TcpStream, root: &Path, target: &str, head: bool) -> std::io::Result<()> {
    let Some(file) = resolve(root, target) else {
        return send(out, 403, "Forbidden", "text/plain", b"forbidden", head);
    };
    match fs::read(&file) {
        Ok(body) => send(out, 200, "OK", mime(&file), &body, head),
        Err(_) => send(out, 404, "Not Found", "text/plain", format!("not found: {target}").as_bytes(), head),
    }
}

fn send(out: &mut TcpStream, code: u16, reason: &str, ctype: &str, body: &[u8], head: bool) -> std::io::Result<()> {
    // no-store: a rebuilt web/pkg must not be shadowed by a cached older one.
    let header = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: keep-alive\r\n\r\n",
        body.len()
    );
    out.write_all(header.as_bytes())?;
    if !head {
        out.write_all(body)?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_stays_under_root() {
        let root = Path::new("/srv/web");
        assert_eq!(resolve(root, "/demo/main.js?x=1"), Some(PathBuf::from("/srv/web/demo/main.js")));
        assert_eq!(resolve(root, "/../etc/passwd"), None);
        assert_eq!(resolve(root, "/demo/%2e%2e/%2e%2e/x"), None);
        assert_eq!(resolve(root, "/a%20b.js"), Some(PathBuf::from("/srv/web/a b.js")));
    }

    #[test]
    fn mime_types() {
        assert_eq!(mime(Path::new("x.wasm")), "application/wasm");
        assert!(mime(Path::new("x.js")).starts_with("text/javascript"));
    }

    #[test]
    fn parse_args() {
        let o = parse(&["--port".into(), "9000".into(), "--no-build".into()]).unwrap();
        assert_eq!((o.port, o.build), (9000, false));
        assert!(parse(&["--port".into()]).is_err());
    }
}
