//! `cargo xtask demo [--port P] [--no-build]`: builds the npm package (`cargo xtask build-wasm`)
//! and serves `web/` on 127.0.0.1 so the live training demo opens at `/demo/`.
//!
//! The server is a few dozen lines of std on purpose: the demo only needs GET/HEAD of static
//! files with the right MIME types (browsers refuse to compile wasm served as anything but
//! `application/wasm` with `instantiateStreaming`, and module scripts need a JavaScript type).
//! Every response carries the project's security headers ([`SECURITY_HEADERS`], the same as
//! `web/server/static.mjs`); request lines and headers are read with a size cap, and targets
//! that are malformed, hold a NUL or would leave `web/` are refused.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// Port tried first; when it is taken the OS picks a free one.
const DEFAULT_PORT: u16 = 8080;

/// Headers of every response: only same-origin scripts (and wasm compilation), same-origin and
/// blob: workers, camera streams; cross-origin isolated (COOP + COEP). Kept equal to
/// `SECURITY_HEADERS` in `web/server/static.mjs`.
const SECURITY_HEADERS: [(&str, &str); 5] = [
    (
        "Content-Security-Policy",
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; \
         media-src 'self' blob: mediastream:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    ),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Embedder-Policy", "require-corp"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
    ("X-Content-Type-Options", "nosniff"),
];

/// Longest request line (and header line) read; longer ones are answered 414 / 431.
const MAX_LINE: usize = 8192;
/// Most header lines read per request.
const MAX_HEADERS: usize = 100;

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

/// Maps a request path to a file under `root`, refusing anything that could leave it (or that
/// no file can be named: a NUL, a backslash).
fn resolve(root: &Path, url_path: &str) -> Option<PathBuf> {
    let path = url_path.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_decode(path)?;
    if decoded.contains(['\0', '\\']) {
        return None;
    }
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

/// One line of at most [`MAX_LINE`] bytes: `Ok(None)` at end of stream, `Err(())` when longer.
fn read_line_capped(reader: &mut impl BufRead) -> Result<Option<String>, ()> {
    let mut buf = Vec::new();
    match reader.by_ref().take(MAX_LINE as u64 + 1).read_until(b'\n', &mut buf) {
        Ok(0) => Ok(None),
        Ok(_) if buf.len() > MAX_LINE || !buf.ends_with(b"\n") => Err(()),
        Ok(_) => Ok(Some(String::from_utf8_lossy(&buf).into_owned())),
        Err(_) => Ok(None),
    }
}

/// Serves requests on one keep-alive connection until the client closes it.
fn serve_connection(stream: TcpStream, root: &Path) {
    let Ok(write_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    let mut out = write_half;
    loop {
        let request_line = match read_line_capped(&mut reader) {
            Ok(Some(l)) => l,
            Ok(None) => return,
            Err(()) => {
                let _ = send(&mut out, 414, "URI Too Long", "text/plain", b"request line too long", false);
                return;
            }
        };
        // Headers are read and ignored; the static server needs none of them.
        let mut headers = 0;
        loop {
            match read_line_capped(&mut reader) {
                Ok(None) => return,
                Ok(Some(h)) if h == "\r\n" || h == "\n" => break,
                Ok(Some(_)) if headers < MAX_HEADERS => headers += 1,
                _ => {
                    let _ = send(&mut out, 431, "Request Header Fields Too Large", "text/plain", b"headers too large", false);
                    return;
                }
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
    // a symlink under web/ must not lead out of it
    let inside = match (file.canonicalize(), root.canonicalize()) {
        (Ok(f), Ok(r)) => f.starts_with(r),
        _ => false,
    };
    match fs::read(&file) {
        Ok(body) if inside => send(out, 200, "OK", mime(&file), &body, head),
        _ => send(out, 404, "Not Found", "text/plain", b"not found", head),
    }
}

fn send(out: &mut TcpStream, code: u16, reason: &str, ctype: &str, body: &[u8], head: bool) -> std::io::Result<()> {
    // no-store: a rebuilt web/pkg must not be shadowed by a cached older one.
    let mut header = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: keep-alive\r\n",
        body.len()
    );
    for (k, v) in SECURITY_HEADERS {
        header.push_str(&format!("{k}: {v}\r\n"));
    }
    header.push_str("\r\n");
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
        assert_eq!(resolve(root, "/%00"), None);
        assert_eq!(resolve(root, "/a%5c..%5cb"), None);
        assert_eq!(resolve(root, "/%"), None);
        assert_eq!(resolve(root, "/%c0%ae"), None);
    }

    /// The reply to `request` (raw bytes) from a server on `root`, read until it closes or
    /// answers once.
    fn exchange(root: &Path, request: &[u8]) -> String {
        use std::io::Read;
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let root = root.to_path_buf();
        let server = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            serve_connection(s, &root);
        });
        let mut c = TcpStream::connect(addr).unwrap();
        // the server may answer (and close) before it has read everything
        let _ = c.write_all(request);
        let _ = c.shutdown(std::net::Shutdown::Write);
        let mut reply = Vec::new();
        let _ = c.read_to_end(&mut reply);
        server.join().unwrap();
        String::from_utf8_lossy(&reply).into_owned()
    }

    #[test]
    fn hostile_requests_are_answered_and_every_reply_has_the_security_headers() {
        let dir = std::env::temp_dir().join(format!("pixelgrad-demo-serve-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("page.html"), "<p>hi</p>").unwrap();
        let ok = exchange(&dir, b"GET /page.html HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.ends_with("<p>hi</p>"), "{ok}");
        for (k, v) in SECURITY_HEADERS {
            assert!(ok.contains(&format!("{k}: {v}\r\n")), "{k} missing: {ok}");
        }
        for (req, want) in [
            (b"GET /%00 HTTP/1.1\r\n\r\n".to_vec(), "403"),
            (b"GET /../../etc/passwd HTTP/1.1\r\n\r\n".to_vec(), "403"),
            (b"GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\n\r\n".to_vec(), "403"),
            (format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_LINE)).into_bytes(), "414"),
            (format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_LINE)).into_bytes(), "431"),
            (format!("GET / HTTP/1.1\r\n{}\r\n", "X: y\r\n".repeat(MAX_HEADERS + 1)).into_bytes(), "431"),
            // an endless line: refused once the cap is reached, not read to the end of memory
            (vec![b'a'; 4 * MAX_LINE], "414"),
        ] {
            let r = exchange(&dir, &req);
            assert!(r.starts_with(&format!("HTTP/1.1 {want} ")), "{}: {r}", String::from_utf8_lossy(&req[..req.len().min(40)]));
            assert!(r.contains("Content-Security-Policy: default-src 'self';"), "{r}");
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn security_headers_match_the_node_servers() {
        let js = fs::read_to_string(workspace_root().join("web/server/static.mjs")).unwrap();
        for (k, v) in SECURITY_HEADERS {
            assert!(js.contains(&format!("'{}'", k.to_ascii_lowercase())), "{k} missing in static.mjs");
            for directive in v.split("; ") {
                assert!(js.contains(directive), "'{directive}' of {k} missing in static.mjs");
            }
        }
    }

    #[test]
    fn mime_types() {
        assert_eq!(mime(Path::new("x.wasm")), "application/wasm");
        assert!(mime(Path::new("x.js")).starts_with("text/javascript"));
    }

    #[test]
    fn a_taken_port_falls_back_to_a_free_one() {
        let taken = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = taken.local_addr().unwrap().port();
        let l = bind(port).unwrap();
        let got = l.local_addr().unwrap().port();
        assert!(got != port && got != 0, "asked for the taken port {port}, got {got}");
    }

    #[test]
    fn parse_args() {
        let o = parse(&["--port".into(), "9000".into(), "--no-build".into()]).unwrap();
        assert_eq!((o.port, o.build), (9000, false));
        assert!(parse(&["--port".into()]).is_err());
    }
}
