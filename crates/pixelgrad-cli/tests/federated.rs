//! `pixelgrad federated` against hostile servers and with its identity options: a non-ASCII
//! object ID, repeated chunk references, an endless answer and a stalled server each end the
//! process with one `error: ...` line and exit status 1 (never a panic); `--node-key` makes a
//! key file once (mode 0600, public key in FILE.pub) and reuses it; bad key files and
//! certificate files are one-line errors.

use std::path::PathBuf;
use std::process::{Command, Output};

use pixelgrad::flower::testing::{self, FakeFleet, Scenario};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pixelgrad"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pixelgrad-cli-fed-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Exit status 1 with one `error: ...` line containing `needle`, and no panic.
fn one_error_line(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "status {:?}, stderr {err}", out.status);
    assert!(!err.contains("panicked"), "panic: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("error: ") && lines[0].contains(needle), "{err}");
}

fn node(url: &str, extra: &[&str]) -> Output {
    bin().args(["federated", "--superlink", url, "--partition", "0/2", "--json"]).args(extra).output().unwrap()
}

#[test]
fn hostile_servers_end_the_node_with_one_error_line() {
    let cases: [(Scenario, &[&str], &str); 4] = [
        (testing::non_ascii_id(), &[], "is not an object ID"),
        (testing::repeated_chunks(25_000_000), &[], "refused: the array elements"),
        (Scenario::EndlessBody, &[], "refused: the size of the answer to /v1/fleet/register-node"),
        (Scenario::Stall, &["--timeout", "1"], "did not answer /v1/fleet/register-node within 1 s"),
    ];
    for (scenario, extra, needle) in cases {
        let server = FakeFleet::start(scenario).unwrap();
        one_error_line(&node(&server.url, extra), needle);
    }
}

#[test]
fn node_key_file_is_made_once_and_reused() {
    let d = tmp("key");
    let key = d.join("node.key");
    let print = || bin().args(["federated", "--node-key"]).arg(&key).arg("--print-public-key").output().unwrap();
    let a = print();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let line = String::from_utf8_lossy(&a.stdout).trim().to_string();
    assert!(line.starts_with("ecdsa-sha2-nistp256 AAAA"), "{line}");
    assert_eq!(std::fs::read_to_string(d.join("node.key.pub")).unwrap().trim(), line);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let b = print();
    assert_eq!(String::from_utf8_lossy(&b.stdout).trim(), line, "the same key the second time");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        one_error_line(&print(), "chmod 600");
    }
    std::fs::write(d.join("bad.key"), "hello").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d.join("bad.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let out = bin().args(["federated", "--node-key"]).arg(d.join("bad.key")).arg("--print-public-key").output().unwrap();
    one_error_line(&out, "not a PKCS#8 PEM P-256 private key");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_certificate_files_are_one_line_errors() {
    let d = tmp("certs");
    let missing = d.join("missing.pem");
    let out = node("https://127.0.0.1:9", &["--root-certificates", missing.to_str().unwrap()]);
    one_error_line(&out, "--root-certificates");
    std::fs::write(d.join("empty.pem"), "no certificate here").unwrap();
    let out = node("https://127.0.0.1:9", &["--root-certificates", d.join("empty.pem").to_str().unwrap()]);
    one_error_line(&out, "holds no PEM certificate");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn privacy_options_that_cannot_hold_are_one_line_errors() {
    // a budget on noise the node does not add, before anything is sent
    one_error_line(&node("http://127.0.0.1:9", &["--max-epsilon", "1"]), "a maximum epsilon needs local or distributed DP");
    one_error_line(&node("http://127.0.0.1:9", &["--share-metrics", "some"]), "share metrics must be 'minimal' or 'all'");
    one_error_line(
        &node("http://127.0.0.1:9", &["--secagg", "--distributed-dp", "0,1,1e-5"]),
        "the noise multiplier must be a positive number",
    );
    one_error_line(
        &node("http://127.0.0.1:9", &["--local-dp", "1,1e-5,1", "--max-epsilon=-2"]),
        "maximum epsilon must be a positive number",
    );
}

/// `--write-shard DIR` writes the node's shards as `.npy` (what a Flower Python SuperNode in the
/// same federation trains on): the partitions of one split are disjoint and cover the training
/// set, the labels are int64 and the samples float32 in [0, 1].
#[test]
fn write_shard_gives_disjoint_npy_shards_covering_the_training_set() {
    let dir = tmp("shards");
    let mut rows: Vec<Vec<u32>> = Vec::new();
    for i in 0..3 {
        let d = dir.join(format!("p{i}"));
        let out = bin().args(["federated", "--partition", &format!("{i}/3"), "--alpha", "0.5", "--write-shard"]).arg(&d).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let x = pixelgrad_flower::npy::decode(&std::fs::read(d.join("train_x.npy")).unwrap()).unwrap();
        let (yshape, y) = pixelgrad_flower::npy::decode_i64(&std::fs::read(d.join("train_y.npy")).unwrap()).unwrap();
        assert_eq!(x.shape[0], y.len());
        assert_eq!(yshape, vec![y.len()]);
        assert_eq!(x.shape[1..].iter().product::<usize>(), 64, "8x8 digits: {:?}", x.shape);
        assert!(x.data.iter().all(|v| (0.0..=1.0).contains(v)));
        assert!(y.iter().all(|&l| (0..10).contains(&l)));
        // each sample as its pixels' bits, to compare the shards with the whole set
        for s in x.data.chunks(64) {
            rows.push(s.iter().map(|v| v.to_bits()).collect());
        }
    }
    let all = dir.join("all");
    let out = bin().args(["federated", "--partition", "0/1", "--write-shard"]).arg(&all).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let whole = pixelgrad_flower::npy::decode(&std::fs::read(all.join("train_x.npy")).unwrap()).unwrap();
    let keys = |data: &[f32]| {
        let mut k: Vec<Vec<u32>> = data.chunks(64).map(|s| s.iter().map(|v| v.to_bits()).collect()).collect();
        k.sort();
        k
    };
    // the same samples, each once: the shards partition the training set
    assert_eq!(rows.len(), whole.shape[0]);
    rows.sort();
    assert_eq!(rows, keys(&whole.data));
}
