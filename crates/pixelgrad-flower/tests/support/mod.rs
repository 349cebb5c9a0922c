//! A real flwr 1.42 SuperLink for the integration tests (the venv of `scripts/flower-venv.sh`):
//! started in its own process group on a free port with its own `FLWR_HOME`, stopped (the
//! whole group) when dropped. Without the venv a test says so and passes, unless
//! `PIXELGRAD_REQUIRE_FLWR=1`.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The venv's `bin` folder.
pub fn venv() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/flwr-venv/bin");
    if p.join("flower-superlink").exists() {
        return Some(p);
    }
    if std::env::var_os("PIXELGRAD_REQUIRE_FLWR").is_some() {
        panic!(
            "flwr venv missing at {} (run scripts/flower-venv.sh)",
            p.display()
        );
    }
    eprintln!("skipped: no flwr venv at {}", p.display());
    None
}

/// Processes in their own groups, each group stopped when dropped.
#[derive(Default)]
pub struct Group(pub Vec<Child>);
impl Drop for Group {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg("--")
                .arg(format!("-{}", c.id()))
                .status();
            let _ = c.wait();
        }
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A SuperLink on `port` of 127.0.0.1.
pub struct SuperLink {
    pub bin: PathBuf,
    pub home: PathBuf,
    pub port: u16,
    pub group: Group,
}

/// Throwaway TLS files (`ca.pem`, `server.pem`, `server.key`) in `dir`, from
/// `scripts/flower-certs.py`.
pub fn certificates(bin: &Path, dir: &Path) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/flower-certs.py");
    let st = Command::new(bin.join("python"))
        .arg(script)
        .arg(dir)
        .status()
        .unwrap();
    assert!(st.success(), "flower-certs.py failed");
}

impl SuperLink {
    /// Starts `flower-superlink` with `args` (after the address ones); `tls` = the folder of
    /// the certificates (`None`: `--insecure`). The `flwr` CLI's connection `local` in `home`
    /// points at it.
    pub fn start(bin: &Path, home: &Path, tls: Option<&Path>, args: &[&str]) -> SuperLink {
        std::fs::create_dir_all(home).unwrap();
        let port = free_port();
        let tls_conf = match tls {
            Some(d) => format!("root-certificates = \"{}\"\n", d.join("ca.pem").display()),
            None => "insecure = true\n".to_string(),
        };
        std::fs::write(
            home.join("config.toml"),
            format!("[superlink]\ndefault = \"local\"\n[superlink.local]\naddress = \"127.0.0.1:{port}\"\n{tls_conf}"),
        )
        .unwrap();
        let mut cmd = Command::new(bin.join("flower-superlink"));
        cmd.args(["--host", "127.0.0.1", "--port", &port.to_string()]);
        match tls {
            Some(d) => {
                cmd.arg("--ssl-ca-certfile")
                    .arg(d.join("ca.pem"))
                    .arg("--ssl-certfile")
                    .arg(d.join("server.pem"))
                    .arg("--ssl-keyfile")
                    .arg(d.join("server.key"));
            }
            None => {
                cmd.arg("--insecure");
            }
        }
        let child = cmd
            .args(["--disable-runtime-dependency-installation"])
            .args(args)
            .env("PATH", path_env(bin))
            .env("FLWR_HOME", home)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        SuperLink {
            bin: bin.to_path_buf(),
            home: home.to_path_buf(),
            port,
            group: Group(vec![child]),
        }
    }

    /// Waits until the SuperLink listens.
    pub fn wait(&mut self) {
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Ok(Some(s)) = self.group.0[0].try_wait() {
                panic!("the SuperLink exited ({s}) before listening");
            }
            assert!(
                t0.elapsed() < Duration::from_secs(120),
                "the SuperLink did not start"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `flwr` with `args`, for this SuperLink's `FLWR_HOME`.
    pub fn flwr(&self) -> Command {
        let mut c = Command::new(self.bin.join("flwr"));
        c.env("PATH", path_env(&self.bin))
            .env("FLWR_HOME", &self.home);
        c
    }
}

pub fn path_env(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A safetensors file of zero tensors named and shaped as `specs`, with the order metadata the
/// ServerApp reads (`init-file=`).
pub fn init_file(path: &std::path::Path, specs: &[(&str, Vec<usize>)]) {
    let mut header = serde_json::Map::new();
    let mut meta = serde_json::Map::new();
    meta.insert(
        "pixelgrad.order".into(),
        specs
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(",")
            .into(),
    );
    header.insert("__metadata__".into(), meta.into());
    let mut off = 0usize;
    for (n, s) in specs {
        let len = s.iter().product::<usize>() * 4;
        header.insert(
            (*n).into(),
            serde_json::json!({"dtype": "F32", "shape": s, "data_offsets": [off, off + len]}),
        );
        off += len;
    }
    let h = serde_json::Value::Object(header).to_string();
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(h.as_bytes());
    out.extend(std::iter::repeat_n(0u8, off));
    std::fs::write(path, out).unwrap();
}

/// The tests' node: a 4 → `hidden` → 3 MLP (seeded) on 20 fixed samples, trained with Adam.
pub fn tiny_learner(
    hidden: usize,
) -> pixelgrad_flower::learner::ModuleLearner<pixelgrad_nn::Sequential> {
    use pixelgrad_nn::layers::{Activation, Linear};
    let dev = pixelgrad_core::Device::new(pixelgrad_cpu::CpuBackend::new());
    let mut init = pixelgrad_nn::Init::new(5);
    let model = pixelgrad_nn::Sequential::new()
        .push(Linear::new(&dev, 4, hidden, &mut init).unwrap())
        .push(Activation::Relu)
        .push(Linear::new(&dev, hidden, 3, &mut init).unwrap());
    let x: Vec<f32> = (0..80).map(|i| (i % 7) as f32 / 7.0).collect();
    let y: Vec<u32> = (0..20).map(|i| i % 3).collect();
    let shard = pixelgrad_flower::learner::Shard::new(x, y, vec![4]).unwrap();
    pixelgrad_flower::learner::ModuleLearner {
        dev,
        model,
        loss: pixelgrad_nn::Loss::CrossEntropy,
        optimizer: pixelgrad_nn::OptimizerKind::parse("adam").unwrap(),
        train: shard.clone(),
        test: shard,
        seed: 1,
    }
}
