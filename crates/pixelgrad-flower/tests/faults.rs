//! Bad input gives a clear error, never a panic, and leaves the local model as it was:
//! an unreachable SuperLink, servers that are not a flwr 1.42 Fleet API (a 404 route, a
//! runtime-version refusal, an answer that is not protobuf), and a real SuperLink whose
//! ServerApp sends parameters of other shapes than the local model's (needs the flwr venv).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::Stdio;

use pixelgrad_flower::auth::NodeKey;
use pixelgrad_flower::fleet::FleetClient;
use pixelgrad_flower::learner::ModuleLearner;
use pixelgrad_flower::node::{self, Learner, NodeOptions};
use pixelgrad_flower::transport::NativeTransport;
use pixelgrad_flower::FlowerError;
use pixelgrad_nn::Sequential;

fn learner(hidden: usize) -> ModuleLearner<Sequential> {
    support::tiny_learner(hidden)
}

fn values(l: &ModuleLearner<Sequential>) -> Vec<Vec<f32>> {
    l.params().iter().map(|t| t.to_vec().unwrap()).collect()
}

fn run_against(url: &str, l: &mut ModuleLearner<Sequential>) -> FlowerError {
    let client = FleetClient::new(
        NativeTransport::new(url, 10.0).unwrap(),
        NodeKey::generate().unwrap(),
    );
    let opts = NodeOptions {
        check_run_after: 1.0,
        ..Default::default()
    };
    pollster::block_on(node::run(&client, l, &opts, &mut |_| {
        ControlFlow::Continue(())
    }))
    .unwrap_err()
}

/// A server answering every request with `status`, `content_type`, `body` and extra headers.
fn fake_server(
    status: u16,
    content_type: &'static str,
    body: &'static [u8],
    extra: &'static str,
) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || serve(s, status, content_type, body, extra));
        }
    });
    url
}

fn serve(s: TcpStream, status: u16, content_type: &str, body: &[u8], extra: &str) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut w = s;
    loop {
        let mut len = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut b = vec![0u8; len];
        if r.read_exact(&mut b).is_err() {
            return;
        }
        let head = format!("HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{extra}\r\n", body.len());
        if w.write_all(head.as_bytes())
            .and_then(|_| w.write_all(body))
            .is_err()
        {
            return;
        }
    }
}

#[test]
fn unreachable_superlink_is_a_clear_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut l = learner(8);
    let before = values(&l);
    let e = run_against(&format!("http://127.0.0.1:{port}"), &mut l);
    assert!(matches!(e, FlowerError::Unreachable { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("cannot reach the SuperLink at http://127.0.0.1"),
        "{e}"
    );
    assert_eq!(values(&l), before);
    assert!(
        NativeTransport::new("127.0.0.1:9093", 1.0).is_err(),
        "a URL without a scheme is refused"
    );
}

#[test]
fn servers_of_another_protocol_are_named_as_such() {
    let cases = [
        (
            fake_server(404, "application/json", b"{\"detail\":\"Not Found\"}", ""),
            "has no Fleet route /v1/fleet/register-node",
        ),
        (
            fake_server(
                412,
                "application/json",
                b"{\"code\":1001,\"detail\":\"Runtime version compatibility check failed.\"}",
                "",
            ),
            "refused flwr 1.42.0's Fleet protocol",
        ),
        (
            fake_server(200, "text/html", b"<html>hello</html>", ""),
            "not application/protobuf",
        ),
        (
            fake_server(
                200,
                "application/protobuf",
                b"",
                "flwr-version-incompatibility-message: SuperLink 1.50 vs SuperNode 1.42\r\n",
            ),
            "version mismatch",
        ),
        (
            fake_server(200, "application/protobuf", b"\xff\xff\xff", ""),
            "not a valid protobuf message",
        ),
    ];
    for (url, want) in cases {
        let mut l = learner(8);
        let before = values(&l);
        let e = run_against(&url, &mut l);
        assert!(matches!(e, FlowerError::Protocol(_)), "{url}: {e:?}");
        assert!(
            e.to_string().contains(want),
            "{url}: '{e}' should say '{want}'"
        );
        assert_eq!(values(&l), before);
    }
    // A plain HTTP error keeps the SuperLink's detail and code.
    let e = run_against(
        &fake_server(
            500,
            "application/json",
            b"{\"code\":1005,\"detail\":\"LinkState not initialized.\"}",
            "",
        ),
        &mut learner(8),
    );
    assert!(
        matches!(
            e,
            FlowerError::Http {
                status: 500,
                code: Some(1005),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("LinkState not initialized"), "{e}");
    // A refused signature is the node's identity problem, named as such.
    let e = run_against(
        &fake_server(
            401,
            "application/json",
            b"{\"detail\":\"Invalid SuperNode authentication\"}",
            "",
        ),
        &mut learner(8),
    );
    assert!(matches!(e, FlowerError::NotRegistered { .. }), "{e:?}");
    assert!(
        e.to_string().contains("Invalid SuperNode authentication")
            && e.to_string().contains("SHA256:"),
        "{e}"
    );
}

// ---- against a real SuperLink (flwr venv) ----

mod support;
use support::{init_file, venv, SuperLink};

#[test]
fn parameters_of_other_shapes_are_refused_and_the_model_is_untouched() {
    use std::os::unix::process::CommandExt;
    let Some(bin) = venv() else { return };
    let dir =
        std::env::temp_dir().join(format!("pixelgrad-flower-mismatch-{}", std::process::id()));
    let mut sl = SuperLink::start(&bin, &dir, None, &[]);
    // The server's model has 16 hidden units; the node's has 8.
    init_file(
        &dir.join("init.safetensors"),
        &[
            ("0.weight", vec![4, 16]),
            ("0.bias", vec![16]),
            ("2.weight", vec![16, 3]),
            ("2.bias", vec![3]),
        ],
    );
    sl.wait();
    let app = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("flower-app");
    let rc = format!(
        "num-server-rounds=1 expected-nodes=1 round-timeout=120.0 init-file=\"{}\"",
        dir.join("init.safetensors").display()
    );
    let run = sl
        .flwr()
        .args(["run", ".", "local", "--stream", "--run-config", &rc])
        .current_dir(&app)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    sl.group.0.push(run);
    let mut l = learner(8);
    let before = values(&l);
    let e = run_against(&format!("http://127.0.0.1:{}", sl.port), &mut l);
    let msg = e.to_string();
    assert!(matches!(e, FlowerError::Mismatch(_)), "{e:?}");
    assert!(
        msg.contains("shape [4, 16]") && msg.contains("[4, 8]"),
        "{msg}"
    );
    assert_eq!(values(&l), before, "the local model is unchanged");
    drop(sl);
    let _ = std::fs::remove_dir_all(&dir);
}
