//! `cargo xtask federated`: a whole Flower federation on this machine.
//!
//! Starts Flower's SuperLink (`flower-superlink`, from the venv that `scripts/flower-venv.sh`
//! installs), K headless Chromium tabs (`web/federated/run.mjs`: the page server forwarding
//! `/v1/fleet/*`, tabs cycling webgpu, webgl, cpu) and M native nodes (`pixelgrad federated`),
//! each on its own partition of the data, then submits the ServerApp
//! (`crates/pixelgrad-flower/flower-app`, Flower's FedAvg) with `flwr run` and prints every
//! round's federated evaluation of the global model. At the end the final global model is
//! evaluated on the whole test set with `pixelgrad eval`. Everything binds to 127.0.0.1 and
//! every process started is stopped (each in its own process group) whatever happens.
//!
//! `--tls`: a throwaway CA and a server certificate for 127.0.0.1 are made at start
//! (`scripts/flower-certs.py`, with the `cryptography` package flwr brings), the SuperLink
//! serves TLS with them, and every client verifies it against that CA: the native nodes
//! (`--root-certificates`), the page server the tabs go through (`--ca-file`), and `flwr`.
//! `--node-auth` (implies `--tls`, which flwr requires for it): the SuperLink runs with
//! `--enable-supernode-auth`; every node has a persistent key (native: `--node-key` files;
//! tabs: their WebCrypto key in IndexedDB) registered with `flwr supernode register` before
//! it joins, and a node with an unregistered key is shown to be refused.
//!
//! ```text
//! cargo xtask federated [--rounds N] [--browsers K] [--native M] [--dataset idx:DIR|digits]
//!     [--alpha A] [--dp off|client-clip:C[,Z]|local:EPS,DELTA,C|distributed:Z,C,DELTA] [--strategy fedavg|fedadam]
//!     [--epochs E] [--lr X] [--drop-one | --drop-below-threshold] [--privacy-margin M] [--tls] [--node-auth]
//!     [--secagg SHARES,THRESHOLD] [--python P] [--max-epsilon E] [--backends LIST] [--debug-cli] [--no-build] [--json]
//! ```

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Bytes a round's requests may carry beyond the parameter payload in any case (Flower's
/// framing: ~8 KB per round with flwr 1.42), on top of `--privacy-margin`.
const FRAMING_BYTES: f64 = 16384.0;

use crate::demo::workspace_root;

const FLWR_VERSION: &str = "1.42.0";
/// Longest a whole federation may take (the browser driver gets the same limit): 10 MNIST
/// rounds with 4 SwiftShader tabs take 20-30 minutes on a busy 2-core machine.
const MAX_RUN_S: u64 = 4 * 3600;

struct Opts {
    rounds: usize,
    browsers: usize,
    native: usize,
    /// Flower's own Python SuperNodes (the flower-app's ClientApp with `secaggplus_mod`)
    python: usize,
    dataset: String,
    alpha: Option<f64>,
    dp: String,
    strategy: String,
    epochs: usize,
    lr: f64,
    drop_one: bool,
    /// Under SecAgg+: enough native nodes leave after key sharing in round 1 that fewer than the
    /// threshold remain (the round halts), then come back as new nodes for the next round
    drop_below_threshold: bool,
    build: bool,
    json: bool,
    seed: u64,
    /// Allowed excess of bytes sent per round over the parameter payload (0.10 = 10 %).
    privacy_margin: f64,
    /// Use a dev-profile `pixelgrad` (what `cargo test` builds anyway; CI) instead of release.
    debug_cli: bool,
    /// TLS between every client and the SuperLink, with throwaway certificates.
    tls: bool,
    /// SuperLink node authentication, every node's key registered by the operator.
    node_auth: bool,
    /// SecAgg+ (SecAggPlusWorkflow): number of shares and reconstruction threshold.
    secagg: Option<(usize, usize)>,
    /// Every node's own privacy budget (`--max-epsilon` of `pixelgrad federated`).
    max_epsilon: Option<f64>,
    /// The tabs' backends, cycled by tab index (`webgpu,webgl,cpu` by default).
    backends: String,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        rounds: 3,
        browsers: 1,
        native: 1,
        python: 0,
        dataset: "digits".into(),
        alpha: Some(0.5),
        dp: "off".into(),
        strategy: "fedavg".into(),
        epochs: 1,
        lr: 0.001,
        drop_one: false,
        drop_below_threshold: false,
        build: true,
        json: false,
        seed: 42,
        privacy_margin: 0.10,
        debug_cli: false,
        tls: false,
        node_auth: false,
        secagg: None,
        max_epsilon: None,
        backends: "webgpu,webgl,cpu".into(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
        let num = |name: &str, v: String| v.parse::<f64>().map_err(|_| format!("{name}: '{v}' is not a number"));
        match a.as_str() {
            "--rounds" => o.rounds = num("--rounds", val("--rounds")?)? as usize,
            "--browsers" => o.browsers = num("--browsers", val("--browsers")?)? as usize,
            "--native" => o.native = num("--native", val("--native")?)? as usize,
            "--python" => o.python = num("--python", val("--python")?)? as usize,
            "--dataset" => o.dataset = val("--dataset")?,
            "--alpha" => {
                let v = val("--alpha")?;
                o.alpha = if v == "iid" { None } else { Some(num("--alpha", v)?) };
            }
            "--dp" => o.dp = val("--dp")?,
            "--strategy" => o.strategy = val("--strategy")?,
            "--epochs" => o.epochs = num("--epochs", val("--epochs")?)? as usize,
            "--lr" => o.lr = num("--lr", val("--lr")?)?,
            "--seed" => o.seed = num("--seed", val("--seed")?)? as u64,
            "--privacy-margin" => o.privacy_margin = num("--privacy-margin", val("--privacy-margin")?)?,
            "--drop-one" => o.drop_one = true,
            "--drop-below-threshold" => o.drop_below_threshold = true,
            "--no-build" => o.build = false,
            "--debug-cli" => o.debug_cli = true,
            "--tls" => o.tls = true,
            "--node-auth" => {
                o.node_auth = true;
                o.tls = true;
            }
            "--secagg" => {
                let v = val("--secagg")?;
                let p: Vec<&str> = v.split(',').collect();
                let n = |x: &str| x.trim().parse::<usize>().map_err(|_| format!("--secagg SHARES,THRESHOLD: '{x}' is not a whole number"));
                match p[..] {
                    [a, b] => o.secagg = Some((n(a)?, n(b)?)),
                    _ => return Err(format!("--secagg '{v}' must be SHARES,THRESHOLD")),
                }
            }
            "--max-epsilon" => o.max_epsilon = Some(num("--max-epsilon", val("--max-epsilon")?)?),
            "--backends" => {
                let v = val("--backends")?;
                if v.split(',').any(|b| !matches!(b, "webgpu" | "webgl" | "cpu")) {
                    return Err(format!("--backends '{v}': a comma-separated list of webgpu, webgl, cpu"));
                }
                o.backends = v;
            }
            "--json" => o.json = true,
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    if o.rounds == 0 || o.browsers + o.native == 0 {
        return Err("need at least one round and one node (--browsers K / --native M)".into());
    }
    if o.drop_one && o.browsers + o.native < 2 {
        return Err("--drop-one needs at least two nodes".into());
    }
    if o.drop_below_threshold {
        let Some((_, threshold)) = o.secagg else {
            return Err("--drop-below-threshold needs --secagg SHARES,THRESHOLD".into());
        };
        let leavers = (o.browsers + o.native + o.python + 1).saturating_sub(threshold);
        if o.drop_one || o.native < leavers || o.rounds < 2 {
            return Err(format!(
                "--drop-below-threshold: {leavers} native nodes must leave to fall below threshold {threshold} (have {}), at least 2 rounds, and not with --drop-one",
                o.native
            ));
        }
    }
    if o.dp.starts_with("distributed:") && o.secagg.is_none() {
        return Err("--dp distributed:Z,C,DELTA is each node's share of the noise under SecAgg+: add --secagg SHARES,THRESHOLD".into());
    }
    if o.dp.starts_with("distributed:") && o.python > 0 {
        return Err("--dp distributed with --python: the Python SuperNodes add no noise share".into());
    }
    if o.python > 0 && o.secagg.is_none() {
        return Err("--python P: Flower's Python SuperNodes join through the SecAgg+ workflow only; add --secagg SHARES,THRESHOLD".into());
    }
    if o.python > 0 && o.node_auth {
        return Err("--python P with --node-auth: registering the Python SuperNodes' keys is not done yet".into());
    }
    if let Some((shares, threshold)) = o.secagg {
        if threshold < 2 || threshold > shares {
            return Err(format!("--secagg {shares},{threshold}: the threshold must be at least 2 and at most the shares"));
        }
        if o.strategy != "fedavg" || o.dp.starts_with("client-clip") {
            return Err("--secagg runs FedAvg without server-side DP (use --dp local:... on the nodes)".into());
        }
        if o.drop_one && (o.native == 0 || o.browsers + o.native + o.python < threshold + 1) {
            return Err(format!(
                "--secagg with --drop-one needs at least threshold + 1 = {} nodes; the last native node leaves",
                threshold + 1
            ));
        }
    }
    Ok(o)
}

/// What `--dp` asks of the ServerApp (run config) and of the nodes (local DP option).
pub(crate) struct Dp {
    run_config: String,
    local: Option<String>,
    /// NOISE_MULTIPLIER,CLIP,DELTA: each node's share of the noise under SecAgg+
    distributed: Option<String>,
    /// Client-side clipping: the noise multiplier the ServerApp's own noise has for one node's
    /// clipped update (Flower adds N(0, (Z C / n)^2) to the mean of n updates clipped to C).
    server_noise: Option<f64>,
    label: String,
}

pub(crate) fn parse_dp(s: &str) -> Result<Dp, String> {
    if s == "off" {
        return Ok(Dp { run_config: "dp=\"off\"".into(), local: None, distributed: None, server_noise: None, label: "off".into() });
    }
    // Client-side clipping defaults: C = 5, about the L2 norm of one local epoch's update of
    // the MNIST MLP (so clipping bites in early rounds), and noise multiplier Z = 0.001 (the
    // aggregate gets N(0, (Z C / n)^2) per parameter from Flower's wrapper).
    if let Some(rest) = s.strip_prefix("client-clip") {
        let rest = rest.strip_prefix(':').unwrap_or(rest);
        let v: Vec<&str> = if rest.is_empty() { vec![] } else { rest.split(',').collect() };
        let c: f64 =
            v.first().map(|x| x.parse().map_err(|_| format!("--dp client-clip:C: '{x}' is not a number"))).transpose()?.unwrap_or(5.0);
        let z: f64 =
            v.get(1).map(|x| x.parse().map_err(|_| format!("--dp client-clip:C,Z: '{x}' is not a number"))).transpose()?.unwrap_or(0.001);
        return Ok(Dp {
            run_config: format!("dp=\"client-clip\" clipping-norm={c} noise-multiplier={z}"),
            local: None,
            distributed: None,
            server_noise: Some(z),
            label: format!("client-clip (clipping norm {c}, noise multiplier {z})"),
        });
    }
    if let Some(rest) = s.strip_prefix("local:") {
        let n = rest.split(',').filter(|x| x.trim().parse::<f64>().is_ok()).count();
        if n != 3 {
            return Err(format!("--dp local:EPS,DELTA,C expects three numbers, got '{rest}'"));
        }
        return Ok(Dp {
            run_config: "dp=\"off\"".into(),
            local: Some(rest.to_string()),
            distributed: None,
            server_noise: None,
            label: format!("local (epsilon, delta, clip = {rest})"),
        });
    }
    if let Some(rest) = s.strip_prefix("distributed:") {
        let n = rest.split(',').filter(|x| x.trim().parse::<f64>().is_ok()).count();
        if n != 3 {
            return Err(format!("--dp distributed:Z,C,DELTA expects three numbers, got '{rest}'"));
        }
        return Ok(Dp {
            run_config: "dp=\"off\"".into(),
            local: None,
            distributed: Some(rest.to_string()),
            server_noise: None,
            label: format!("distributed under SecAgg+ (noise multiplier, clip, delta = {rest})"),
        });
    }
    Err(format!("--dp '{s}' must be off, client-clip[:C[,Z]], local:EPS,DELTA,C or distributed:Z,C,DELTA (with --secagg)"))
}

/// Children in their own process groups, stopped (TERM, then KILL) when dropped.
#[derive(Default)]
struct Procs(Vec<(String, Child)>);

impl Procs {
    fn spawn(&mut self, name: &str, cmd: &mut Command) -> Result<usize, String> {
        cmd.process_group(0);
        let child = cmd.spawn().map_err(|e| format!("could not start {name}: {e}"))?;
        self.0.push((name.to_string(), child));
        Ok(self.0.len() - 1)
    }
    fn stop_all(&mut self) {
        for (_, c) in &mut self.0 {
            if let Ok(None) = c.try_wait() {
                signal_group(c.id(), libc::SIGTERM);
            }
        }
        let t0 = Instant::now();
        for (_, c) in &mut self.0 {
            while t0.elapsed() < Duration::from_secs(5) {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if let Ok(None) = c.try_wait() {
                signal_group(c.id(), libc::SIGKILL);
                let _ = c.wait();
            }
        }
        self.0.clear();
    }
}

/// Signals the process group `pgid` (a child started with `process_group(0)` leads its own).
fn signal_group(pgid: u32, sig: libc::c_int) {
    // Never signal group 0 (our own) or a negative/overflowing id.
    if let Ok(p) = libc::pid_t::try_from(pgid) {
        if p > 1 {
            // SAFETY: kill(2) with a negative pid signals that process group; no memory is touched.
            unsafe {
                libc::kill(-p, sig);
            }
        }
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        self.stop_all();
    }
}

static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Ctrl-C / SIGTERM end the run through the normal error path, so every child is stopped.
fn catch_signals() {
    let h = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, h);
        libc::signal(libc::SIGTERM, h);
    }
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

fn wait_port(port: u16, secs: u64, child: &mut Child) -> Result<(), String> {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(secs) {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if let Ok(Some(s)) = child.try_wait() {
            return Err(format!("the SuperLink exited ({s}) before listening"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!("the SuperLink did not listen on 127.0.0.1:{port} within {secs} s"))
}

fn sh(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd.stderr(Stdio::inherit()).output().map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{what} failed ({})", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn last_json(s: &str) -> Option<serde_json::Value> {
    s.lines().rev().find_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok().filter(|v| v.is_object()))
}

pub fn main(args: &[String]) -> i32 {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("xtask federated: {e}");
            return 2;
        }
    };
    match run(&o) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("xtask federated: error: {e}");
            1
        }
    }
}

fn run(o: &Opts) -> Result<(), String> {
    catch_signals();
    let root = workspace_root();
    let dp = parse_dp(&o.dp)?;
    let say = |s: String| {
        if o.json {
            eprintln!("{s}")
        } else {
            println!("{s}")
        }
    };
    let venv = PathBuf::from(sh(Command::new("bash").arg(root.join("scripts/flower-venv.sh")), "scripts/flower-venv.sh")?.trim());
    let bin = venv.join("bin");
    let path_env = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    if o.build {
        sh(
            // the CLI the nodes run: the release build, or the dev one with --debug-cli
            Command::new(env!("CARGO"))
                .args(if o.debug_cli {
                    &["build", "-q", "-p", "pixelgrad-cli"][..]
                } else {
                    &["build", "--release", "-q", "-p", "pixelgrad-cli"][..]
                })
                .current_dir(&root),
            "building pixelgrad-cli",
        )?;
        if o.browsers > 0 {
            sh(
                Command::new(env!("CARGO")).args(["run", "--release", "-q", "-p", "xtask", "--", "build-wasm"]).current_dir(&root),
                "cargo xtask build-wasm",
            )?;
        }
    }
    // The tabs are driven by playwright-core (web/package.json): a fresh clone has no
    // web/node_modules yet, so install the pinned packages once, as scripts/web-tests.sh does.
    if o.browsers > 0 && !root.join("web/node_modules/playwright-core/package.json").is_file() {
        say("installing web/'s npm packages (npm ci, once) to drive the browser tabs".to_string());
        sh(Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(root.join("web")), "npm ci in web/")?;
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let pixelgrad = target.join(if o.debug_cli { "debug/pixelgrad" } else { "release/pixelgrad" });
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    let dir = target.join("federated").join(format!("run-{stamp}"));
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let home = dir.join("flwr-home");
    fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    let port = free_port()?;
    // Throwaway TLS files: the CA's key only ever lives in the generating process.
    let certs = dir.join("tls");
    if o.tls {
        sh(Command::new(bin.join("python")).arg(root.join("scripts/flower-certs.py")).arg(&certs), "scripts/flower-certs.py")?;
    }
    let ca = certs.join("ca.pem");
    let tls_conf = if o.tls { format!("root-certificates = \"{}\"\n", ca.display()) } else { "insecure = true\n".to_string() };
    fs::write(
        home.join("config.toml"),
        format!("[superlink]\ndefault = \"local\"\n\n[superlink.local]\naddress = \"127.0.0.1:{port}\"\n{tls_conf}"),
    )
    .map_err(|e| e.to_string())?;
    let superlink = format!("{}://127.0.0.1:{port}", if o.tls { "https" } else { "http" });
    let flwr_cmd = |args: &[&str]| {
        let mut c = Command::new(bin.join("flwr"));
        c.args(args).env("PATH", &path_env).env("FLWR_HOME", &home);
        c
    };
    let n = o.browsers + o.native + o.python;
    let data_arg = |c: &mut Command| {
        c.args(["--dataset", &o.dataset, "--seed", &o.seed.to_string()]);
    };

    // The ServerApp's initial parameters, from the same model the nodes build.
    let init = dir.join("init.safetensors");
    let mut c = Command::new(&pixelgrad);
    c.args(["federated", "--write-init"]).arg(&init);
    data_arg(&mut c);
    let out = sh(&mut c, "pixelgrad federated --write-init")?;
    let params: u64 = out.split('(').nth(1).and_then(|s| s.split(')').next()).and_then(|s| s.parse().ok()).unwrap_or(0);
    let payload = params * 4;

    let mut procs = Procs::default();
    let log = |name: &str| fs::File::create(dir.join(name)).map_err(|e| e.to_string());
    let mut sl_cmd = Command::new(bin.join("flower-superlink"));
    sl_cmd.args(["--host", "127.0.0.1", "--port", &port.to_string(), "--disable-runtime-dependency-installation"]);
    if o.tls {
        sl_cmd
            .arg("--ssl-ca-certfile")
            .arg(&ca)
            .arg("--ssl-certfile")
            .arg(certs.join("server.pem"))
            .arg("--ssl-keyfile")
            .arg(certs.join("server.key"));
    } else {
        sl_cmd.arg("--insecure");
    }
    if o.node_auth {
        sl_cmd.arg("--enable-supernode-auth");
    }
    let sl = procs.spawn(
        "SuperLink",
        sl_cmd.env("PATH", &path_env).env("FLWR_HOME", &home).stdout(log("superlink.log")?).stderr(log("superlink.err.log")?),
    )?;
    wait_port(port, 90, &mut procs.0[sl].1)?;
    let security = match (o.tls, o.node_auth) {
        (true, true) => "TLS with a throwaway CA, node authentication on",
        (true, false) => "TLS with a throwaway CA",
        _ => "plain HTTP on 127.0.0.1",
    };
    say(format!(
        "SuperLink (flwr {FLWR_VERSION}) on {superlink} ({security}); {} browser tabs + {} native nodes; logs in {}",
        o.browsers,
        o.native,
        dir.display()
    ));

    // Node authentication: a node whose key nobody registered is refused, clearly.
    let keys = dir.join("keys");
    let mut unregistered_refused = serde_json::Value::Null;
    if o.node_auth {
        fs::create_dir_all(&keys).map_err(|e| e.to_string())?;
        let out = Command::new(&pixelgrad)
            .args(["federated", "--superlink", &superlink, "--root-certificates"])
            .arg(&ca)
            .arg("--node-key")
            .arg(keys.join("unregistered.key"))
            .args(["--partition", "0/2", "--dataset", &o.dataset])
            .output()
            .map_err(|e| format!("pixelgrad federated: {e}"))?;
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().find(|l| l.starts_with("error: ")).unwrap_or("");
        if out.status.code() != Some(1) || !line.contains("is not registered") {
            return Err(format!("a node with an unregistered key was not refused as expected ({}): {err}", out.status));
        }
        say(format!("a node with an unregistered key is refused: {line}"));
        unregistered_refused = line.into();
    }

    // Browser tabs report through JSON lines on stdout, read on a thread.
    let (tx, rx) = mpsc::channel::<serde_json::Value>();
    let mut browsers_proc = None;
    if o.browsers > 0 {
        let mut c = Command::new("node");
        c.arg(root.join("web/federated/run.mjs"))
            .args(["--superlink", &superlink, "--browsers", &o.browsers.to_string(), "--count", &n.to_string(), "--first-index", "0"])
            .args(["--seed", &o.seed.to_string(), "--alpha", &o.alpha.map(|a| a.to_string()).unwrap_or_else(|| "0".into())])
            .args(["--data", &o.dataset, "--timeout", &MAX_RUN_S.to_string(), "--backends", &o.backends])
            .current_dir(&root)
            .stdout(Stdio::piped())
            .stderr(log("browsers.err.log")?);
        // under SecAgg+ the node that leaves is the last native one (after its key shares)
        if o.drop_one && o.secagg.is_none() {
            c.args(["--drop-after-round", &(o.rounds.div_ceil(2)).to_string()]);
        }
        if let Some(l) = &dp.local {
            c.args(["--local-dp", l]);
        }
        if let Some(d) = &dp.distributed {
            c.args(["--distributed-dp", d]);
        }
        if o.tls {
            c.arg("--ca-file").arg(&ca);
        }
        if o.secagg.is_some() {
            c.arg("--secagg");
        }
        if let Some(m) = o.max_epsilon {
            c.args(["--max-epsilon", &m.to_string()]);
        }
        if o.node_auth {
            c.arg("--node-auth")
                .arg("--flwr")
                .arg(bin.join("flwr"))
                .arg("--keys")
                .arg(&keys)
                .env("PATH", &path_env)
                .env("FLWR_HOME", &home);
        }
        let i = procs.spawn("browsers", &mut c)?;
        browsers_proc = Some(i);
        let stdout = procs.0[i].1.stdout.take().ok_or("no stdout from the browser driver")?;
        let mut blog = log("browsers.log")?;
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = writeln!(blog, "{line}");
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                    let _ = tx.send(v);
                }
            }
        });
    }
    let leavers = match (o.drop_below_threshold, o.secagg) {
        (true, Some((_, t))) => (n + 1).saturating_sub(t),
        _ => usize::from(o.drop_one && o.secagg.is_some()),
    };
    let leaves = |index: usize| index + leavers >= o.browsers + o.native && index < o.browsers + o.native;
    // (partition index, process, log file stem)
    let mut natives: Vec<(usize, usize, String)> = Vec::new();
    let mut native_cmds: Vec<Command> = Vec::new();
    for k in 0..o.native {
        let index = o.browsers + k;
        let key = keys.join(format!("native-{index}.key"));
        if o.node_auth {
            // the node makes its key; the operator registers the public half
            let mut c = Command::new(&pixelgrad);
            c.args(["federated", "--node-key"]).arg(&key).arg("--print-public-key");
            sh(&mut c, "pixelgrad federated --print-public-key")?;
            let pub_file = keys.join(format!("native-{index}.key.pub"));
            let out =
                sh(flwr_cmd(&["supernode", "register"]).arg(&pub_file).args(["local", "--format", "json"]), "flwr supernode register")?;
            let j: serde_json::Value = out
                .find('{')
                .and_then(|i| serde_json::from_str(&out[i..]).ok())
                .ok_or_else(|| format!("flwr supernode register printed no JSON: {out}"))?;
            if j["success"] != true {
                return Err(format!("registering native node {index}'s key failed: {j}"));
            }
            say(format!("registered native node {index}'s key as node {}", j["node-id"]));
        }
        let mut c = Command::new(&pixelgrad);
        c.args(["federated", "--superlink", &superlink, "--partition", &format!("{index}/{n}"), "--backend", "cpu", "--json"]);
        data_arg(&mut c);
        if let Some(a) = o.alpha {
            c.args(["--alpha", &a.to_string()]);
        }
        if let Some(l) = &dp.local {
            c.args(["--local-dp", l]);
        }
        if o.secagg.is_some() {
            c.arg("--secagg");
            if let Some(d) = &dp.distributed {
                c.args(["--distributed-dp", d]);
            }
            // the nodes that disappear: the last native node (--drop-one), or the last native
            // nodes that take the rest below the threshold, leave after sharing their keys
            if leaves(index) {
                c.args(["--leave-after-stage", "share_keys"]);
            }
        }
        if let Some(m) = o.max_epsilon {
            c.args(["--max-epsilon", &m.to_string()]);
        }
        if o.tls {
            c.arg("--root-certificates").arg(&ca);
        }
        if o.node_auth {
            c.arg("--node-key").arg(&key);
        }
        // the same node coming back (--drop-below-threshold): the command without the leave
        let mut again = Command::new(c.get_program());
        let args: Vec<_> = c.get_args().map(|a| a.to_os_string()).collect();
        let cut = args.iter().position(|a| a == "--leave-after-stage");
        again.args(args.iter().enumerate().filter(|(i, _)| cut.is_none_or(|p| *i != p && *i != p + 1)).map(|(_, a)| a));
        native_cmds.push(again);
        c.stdout(log(&format!("native-{index}.json"))?).stderr(log(&format!("native-{index}.log"))?);
        natives.push((index, procs.spawn(&format!("native node {index}"), &mut c)?, format!("native-{index}")));
    }
    // Flower's own Python SuperNodes: the flower-app's ClientApp (NumPy, `secaggplus_mod`) on
    // the shard `pixelgrad federated --write-shard` writes for their partition.
    let mut pythons = Vec::new();
    for k in 0..o.python {
        let index = o.browsers + o.native + k;
        let shard = dir.join(format!("python-{index}-data"));
        let mut c = Command::new(&pixelgrad);
        c.args(["federated", "--partition", &format!("{index}/{n}"), "--write-shard"]).arg(&shard);
        data_arg(&mut c);
        if let Some(a) = o.alpha {
            c.args(["--alpha", &a.to_string()]);
        }
        sh(&mut c, "pixelgrad federated --write-shard")?;
        let node_home = dir.join(format!("python-{index}-home"));
        fs::create_dir_all(&node_home).map_err(|e| format!("{}: {e}", node_home.display()))?;
        let mut c = Command::new(bin.join("flower-supernode"));
        c.args(["--superlink", &format!("127.0.0.1:{port}"), "--port", &free_port()?.to_string()]);
        if o.tls {
            c.arg("--root-certificates").arg(&ca);
        } else {
            c.arg("--insecure");
        }
        c.arg("--node-config")
            .arg(format!("data-dir=\"{}\" seed={}", shard.display(), o.seed + index as u64))
            .env("PATH", &path_env)
            .env("FLWR_HOME", &node_home)
            .stdout(log(&format!("python-{index}.log"))?)
            .stderr(log(&format!("python-{index}.err.log"))?);
        pythons.push((index, procs.spawn(&format!("python node {index}"), &mut c)?));
    }

    let results = dir.join("results.jsonl");
    let final_file = dir.join("final.safetensors");
    let secagg_config = match o.secagg {
        Some((shares, threshold)) => {
            format!("secagg-shares={shares} secagg-threshold={threshold} ")
        }
        None => String::new(),
    };
    let run_config = format!(
        "{secagg_config}num-server-rounds={} expected-nodes={n} strategy=\"{}\" local-epochs={} lr={} {} init-file=\"{}\" results-file=\"{}\" final-file=\"{}\"",
        o.rounds,
        o.strategy,
        o.epochs,
        o.lr,
        dp.run_config,
        init.display(),
        results.display(),
        final_file.display()
    );
    let flwr = procs.spawn(
        "flwr run",
        flwr_cmd(&["run", ".", "local", "--stream", "--run-config", &run_config])
            .current_dir(root.join("crates/pixelgrad-flower/flower-app"))
            .stdout(log("serverapp.log")?)
            .stderr(log("serverapp.err.log")?),
    )?;

    // Follow the rounds as the ServerApp writes them.
    let t0 = Instant::now();
    let mut shown = 0usize;
    let mut rows: Vec<serde_json::Value> = Vec::new();
    let mut report = None;
    let mut flwr_done = false;
    let mut flwr_done_at: Option<Instant> = None;
    let mut next_note = 60;
    loop {
        while let Ok(v) = rx.try_recv() {
            if let Some(r) = v.get("report") {
                report = Some(r.clone());
            } else if v.get("event").and_then(|e| e.as_str()) == Some("tab-closed") {
                say(format!("tab {} closed mid-round {} (a node that disappears)", v["tab"], v["round"]));
            } else if v.get("event").and_then(|e| e.as_str()) == Some("driver-error") {
                return Err(format!("browser driver: {}", v["message"]));
            }
        }
        if let Ok(text) = fs::read_to_string(&results) {
            for line in text.lines().skip(shown) {
                shown += 1;
                let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                // Nodes that share only what the strategy needs (`--share-metrics minimal`, the
                // default) send no evaluation and no train loss.
                let evaluated = match (v["evaluate"]["accuracy"].as_f64(), v["evaluate_replies"].as_u64()) {
                    (Some(a), Some(n)) => format!("global model accuracy {a:.4} on {n} nodes' test shards"),
                    _ => "not evaluated on the nodes (they share no metrics)".to_string(),
                };
                let loss = v["train"]["train_loss"].as_f64().map(|a| format!(", train loss {a:.4}")).unwrap_or_default();
                say(format!(
                    "round {:>2}: {evaluated}{loss} ({} train replies), {:.0} s",
                    v["round"],
                    v["train_replies"],
                    v["seconds"].as_f64().unwrap_or(0.0)
                ));
                rows.push(v);
            }
        }
        if !flwr_done {
            if let Ok(Some(st)) = procs.0[flwr].1.try_wait() {
                flwr_done = true;
                flwr_done_at = Some(Instant::now());
                if !st.success() {
                    return Err(format!("flwr run failed ({st}); see {}", dir.join("serverapp.err.log").display()));
                }
            }
        }
        // The driver of the tabs gone without its report: nothing will come from the tabs.
        if let Some(b) = browsers_proc.filter(|_| report.is_none()) {
            if let Ok(Some(st)) = procs.0[b].1.try_wait() {
                // its last lines may still be on their way through the reader thread
                std::thread::sleep(Duration::from_millis(500));
                if !rx.try_iter().any(|v| v.get("report").is_some()) {
                    return Err(format!(
                        "the browser driver exited ({st}) without a report; see {}",
                        dir.join("browsers.err.log").display()
                    ));
                }
            }
        }
        // The ServerApp is over: nodes still waiting after a minute are waiting for nothing.
        if flwr_done_at.is_some_and(|t| t.elapsed() > Duration::from_secs(60)) && rows.len() < o.rounds {
            return Err(format!(
                "the ServerApp ended after {} of {} rounds; see {}",
                rows.len(),
                o.rounds,
                dir.join("serverapp.log").display()
            ));
        }
        if o.drop_below_threshold {
            // a node that left comes back, as a new node, for the next round
            for k in 0..natives.len() {
                let (index, i, stem) = natives[k].clone();
                if leaves(index) && !stem.ends_with("rejoined") && !natives.iter().any(|(j, _, s)| *j == index && s.ends_with("rejoined")) {
                    if let Ok(Some(_)) = procs.0[i].1.try_wait() {
                        let stem = format!("native-{index}-rejoined");
                        let c = native_cmds[index - o.browsers].stdout(log(&format!("{stem}.json"))?).stderr(log(&format!("{stem}.log"))?);
                        say(format!("native node {index} comes back as a new node"));
                        natives.push((index, procs.spawn(&format!("native node {index} (back)"), c)?, stem));
                    }
                }
            }
        }
        let natives_done = natives.iter().all(|(_, i, _)| matches!(procs.0[*i].1.try_wait(), Ok(Some(_))))
            && (!o.drop_below_threshold || natives.len() == o.native + leavers);
        if flwr_done && natives_done && (o.browsers == 0 || report.is_some()) {
            break;
        }
        if t0.elapsed().as_secs() >= next_note {
            next_note += 60;
            let mut waiting = Vec::new();
            if !flwr_done {
                waiting.push("the ServerApp");
            }
            if !natives_done {
                waiting.push("native nodes");
            }
            if o.browsers > 0 && report.is_none() {
                waiting.push("browser tabs");
            }
            eprintln!("xtask federated: {:.0} s, waiting for {}", t0.elapsed().as_secs_f64(), waiting.join(", "));
        }
        if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
            return Err("interrupted; stopping every process started".into());
        }
        if t0.elapsed() > Duration::from_secs(MAX_RUN_S) {
            return Err(format!("the federation did not finish within {MAX_RUN_S} s"));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    if rows.len() != o.rounds {
        return Err(format!("the ServerApp logged {} of {} rounds; see {}", rows.len(), o.rounds, dir.join("serverapp.log").display()));
    }

    // Node summaries and traffic.
    let (mut up, mut down) = (0u64, 0u64);
    let mut clients = Vec::new();
    // the largest cumulative epsilon any native node reported, at its delta
    let (mut epsilon, mut delta): (Option<f64>, Option<f64>) = (None, None);
    for (index, i, stem) in &natives {
        let st = procs.0[*i].1.try_wait().ok().flatten();
        let j = fs::read_to_string(dir.join(format!("{stem}.json"))).ok().and_then(|s| last_json(&s));
        match (&j, st) {
            (Some(j), Some(s)) if s.success() && !j["left_after_stage"].is_null() => {
                say(format!("native node {index} left after SecAgg+ stage {} (the node that disappears)", j["left_after_stage"]));
                clients.push(serde_json::json!({"node": index, "kind": "native", "backend": "cpu", "closed_mid_round": true, "left_after_stage": j["left_after_stage"]}));
            }
            (Some(j), Some(s)) if s.success() => {
                up += j["bytes_up"].as_u64().unwrap_or(0);
                down += j["bytes_down"].as_u64().unwrap_or(0);
                if let Some(e) = j["epsilon"].as_f64() {
                    epsilon = Some(epsilon.map_or(e, |m: f64| m.max(e)));
                    delta = j["delta"].as_f64();
                }
                clients.push(serde_json::json!({"node": index, "kind": "native", "backend": "cpu", "rejoined": stem.ends_with("rejoined"), "rounds": j["rounds"], "closed_mid_round": false, "secagg": j["secagg"], "epsilon": j["epsilon"], "delta": j["delta"], "privacy": j["privacy"], "bytes_up": j["bytes_up"], "bytes_down": j["bytes_down"], "timings": j["timings"]}));
            }
            _ => return Err(format!("native node {index} failed; see {}", dir.join(format!("{stem}.log")).display())),
        }
    }
    for (index, i) in &pythons {
        // a SuperNode runs until it is stopped: one that exited by itself failed
        if let Ok(Some(st)) = procs.0[*i].1.try_wait() {
            return Err(format!("python node {index} exited ({st}); see {}", dir.join(format!("python-{index}.err.log")).display()));
        }
        clients.push(
            serde_json::json!({"node": index, "kind": "python", "backend": "numpy (flwr SuperNode with secaggplus_mod)", "secagg": true}),
        );
    }
    let mut privacy = serde_json::json!(null);
    if let Some(r) = &report {
        let mut checks = Vec::new();
        for p in r["pages"].as_array().cloned().unwrap_or_default() {
            let closed = p["closed"].as_bool().unwrap_or(false);
            if !closed {
                if let Some(e) = p["error"].as_str() {
                    return Err(format!("browser node {} ({}) failed: {e}", p["index"], p["backend"]));
                }
                up += p["summary"]["bytesUp"].as_f64().unwrap_or(0.0) as u64;
                down += p["summary"]["bytesDown"].as_f64().unwrap_or(0.0) as u64;
            }
            let other = p["other"].as_array().map(|a| a.len()).unwrap_or(0);
            if other > 0 {
                return Err(format!("browser node {} made non-Fleet requests after joining: {}", p["index"], p["other"]));
            }
            // Bytes sent per completed round (request bodies), against the parameter payload.
            let mut per_round = Vec::new();
            if let Some(rs) = p["rounds"].as_object() {
                for (round, b) in rs {
                    let rn: usize = round.parse().unwrap_or(0);
                    if rn == 0 || closed || rn > o.rounds {
                        continue;
                    }
                    let body = b["body"].as_f64().unwrap_or(0.0);
                    // Under SecAgg+ the parameters go out once, masked, as int64 (twice the
                    // f32 bytes), over four exchanges (setup, key shares, masked vector,
                    // unmasking) instead of one.
                    let (expected, exchanges) = if o.secagg.is_some() { (2 * payload, 4.0) } else { (payload, 1.0) };
                    let ratio = body / expected.max(1) as f64;
                    let m = o.privacy_margin;
                    // The margin, plus Flower's own framing of each exchange (message
                    // metadata, object ids, heartbeats, key shares), which does not grow with
                    // the model: a small model such as the digits MLP would otherwise fail a
                    // 10 % margin.
                    let slack = m * expected as f64 + FRAMING_BYTES * exchanges;
                    if body + slack < expected as f64 {
                        // less is no leak: the tab's update did not go out this round (its
                        // reply came after the SuperLink had given up on it, say)
                        say(format!(
                            "browser node {} sent only {body} body bytes in round {rn}: its update did not reach the server",
                            p["index"]
                        ));
                    } else if body > expected as f64 + slack {
                        return Err(format!(
                            "browser node {} sent {body} body bytes in round {rn}, {ratio:.3}x the expected {expected} bytes of parameters (outside {:.0} % + {} framing bytes)",
                            p["index"],
                            m * 100.0,
                            FRAMING_BYTES * exchanges
                        ));
                    }
                    per_round.push(serde_json::json!({"round": rn, "body_bytes": body, "header_bytes": b["headers"], "requests": b["requests"], "ratio": ratio}));
                }
            }
            if o.node_auth && !closed && p["nodeId"] != p["registeredNode"] {
                return Err(format!(
                    "browser node {} joined as node {} but its key was registered as node {}",
                    p["index"], p["nodeId"], p["registeredNode"]
                ));
            }
            clients.push(serde_json::json!({"node": p["index"], "kind": "browser", "backend": p["backend"], "closed_mid_round": closed, "fleet_requests": p["fleet"], "other_requests": other, "node_id": p["nodeId"], "secagg": p["secagg"], "epsilon": p["epsilon"], "delta": p["delta"]}));
            checks.push(serde_json::json!({"node": p["index"], "backend": p["backend"], "rounds": per_round}));
        }
        privacy = serde_json::json!({"payload_bytes": payload, "pages": checks});
        say(format!(
            "privacy check: every tab made only Fleet API requests after joining; request bodies per round at most {:.0} % (+ {FRAMING_BYTES} framing bytes per exchange) over the {payload}-byte parameter payload{}",
            o.privacy_margin * 100.0,
            if o.secagg.is_some() { " (x2 under SecAgg+: the masked vector is int64)" } else { "" }
        ));
    }

    // The final global model on the whole test set.
    let mut c = Command::new(&pixelgrad);
    c.args(["eval", "--backend", "cpu", "--model-file"]).arg(&final_file).arg("--json");
    data_arg(&mut c);
    let ev = last_json(&sh(&mut c, "pixelgrad eval of the final global model")?).ok_or("pixelgrad eval printed no JSON")?;
    let final_accuracy = ev["test_accuracy"].as_f64().ok_or("pixelgrad eval gave no test_accuracy")?;
    say(format!("final global model: test accuracy {final_accuracy:.4} on the full test set ({})", o.dataset));
    // Client-side clipping: the nodes add nothing, so no node reports an epsilon. What the
    // server's noise would give (if it adds what its config says and weighs nodes equally; a
    // node cannot check either) is the accountant's answer for one release per round.
    let server_epsilon = match dp.server_noise {
        Some(z) => {
            // the federation's cumulative epsilon after each round, as the rounds' rows say it
            let mut last = None;
            for (i, row) in rows.iter_mut().enumerate() {
                let mut c = Command::new(&pixelgrad);
                c.args(["privacy", "--noise-multiplier", &z.to_string(), "--releases", &(i + 1).to_string()])
                    .args(["--delta", "1e-5", "--json"]);
                let j = last_json(&sh(&mut c, "pixelgrad privacy")?).ok_or("pixelgrad privacy printed no JSON")?;
                let e = j["epsilon"].as_f64().ok_or("pixelgrad privacy gave no epsilon")?;
                say(format!(
                    "round {}: client-side clipping: the server's noise (multiplier {z}) gives epsilon {e:.4} at delta 1e-5 so far, if it adds it and weighs nodes equally",
                    i + 1
                ));
                row["server_epsilon"] = e.into();
                last = Some(e);
            }
            last
        }
        None => None,
    };
    procs.stop_all();

    if o.json {
        let j = serde_json::json!({
            "rounds": rows.len(),
            "clients": clients,
            "final_accuracy": final_accuracy,
            "flwr_version": FLWR_VERSION,
            "bytes_up": up,
            "bytes_down": down,
            "dp": dp.label,
            "secagg": o.secagg.map(|(s, t)| serde_json::json!({"shares": s, "threshold": t})),
            "epsilon": epsilon,
            "delta": delta,
            "server_epsilon": server_epsilon,
            "max_epsilon": o.max_epsilon,
            "strategy": o.strategy,
            "dataset": o.dataset,
            "alpha": o.alpha,
            "per_round": rows,
            "privacy": privacy,
            "tls": o.tls,
            "node_auth": o.node_auth,
            "unregistered_refused": unregistered_refused,
            "logs": dir.display().to_string(),
        });
        println!("{j}");
    }
    Ok(())
}
