//! TLS and node authentication against a real flwr 1.42 SuperLink (two of them, started
//! together, with throwaway certificates from `scripts/flower-certs.py`):
//!
//! - the node verifies the SuperLink's certificate: one signed by another CA, or a private CA
//!   without `--root-certificates`, is refused with a TLS error naming the certificate;
//! - with `--enable-supernode-auth` a node whose key is not registered is refused with
//!   [`FlowerError::NotRegistered`]; once the operator registers its `.pub` file with
//!   `flwr supernode register`, the same persistent key is accepted (every request's signature
//!   checked by the SuperLink), under the node ID the registration printed, and it stays
//!   registered after the node leaves;
//! - without node authentication the same key registers itself once and comes back under the
//!   same ID; a key made for one run unregisters when it leaves (and flwr then refuses it).

mod support;

use pixelgrad_flower::auth::NodeKey;
use pixelgrad_flower::fleet::FleetClient;
use pixelgrad_flower::keyfile;
use pixelgrad_flower::node::{NodeOptions, Registration, Session};
use pixelgrad_flower::transport::{NativeTransport, TransportOptions};
use pixelgrad_flower::{FlowerError, Result};
use support::{certificates, venv, SuperLink};

fn connect(url: &str, roots: Option<&[u8]>, key: &NodeKey) -> Result<(u64, Registration)> {
    let transport = NativeTransport::with_options(
        url,
        TransportOptions {
            timeout_s: 30.0,
            root_certificates: roots.map(<[u8]>::to_vec),
            ..Default::default()
        },
    )?;
    let client = FleetClient::new(transport, key.clone());
    pollster::block_on(async {
        let s = Session::connect(&client, NodeOptions::default()).await?;
        let r = (s.node_id, s.registration);
        s.leave().await?;
        Ok(r)
    })
}

#[test]
fn tls_is_verified_and_unregistered_nodes_are_refused() {
    let Some(bin) = venv() else { return };
    let dir = std::env::temp_dir().join(format!("pixelgrad-flower-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    certificates(&bin, &dir.join("a"));
    certificates(&bin, &dir.join("b"));
    let mut on = SuperLink::start(
        &bin,
        &dir.join("home-auth"),
        Some(&dir.join("a")),
        &["--enable-supernode-auth"],
    );
    let mut off = SuperLink::start(&bin, &dir.join("home-open"), Some(&dir.join("a")), &[]);
    on.wait();
    off.wait();
    let ca = std::fs::read(dir.join("a/ca.pem")).unwrap();
    let other_ca = std::fs::read(dir.join("b/ca.pem")).unwrap();
    let url_on = format!("https://127.0.0.1:{}", on.port);
    let url_off = format!("https://127.0.0.1:{}", off.port);

    // A certificate the node cannot verify is refused before anything is sent.
    let k = NodeKey::generate().unwrap();
    for roots in [Some(other_ca.as_slice()), None] {
        let e = connect(&url_on, roots, &k).unwrap_err();
        assert!(matches!(e, FlowerError::Tls { .. }), "{e:?}");
        assert!(e.to_string().contains("certificate"), "{e}");
    }

    // Node authentication on: a key nobody registered is refused, clearly.
    let key_path = dir.join("node.key");
    let (key, _) = keyfile::load_or_create(&key_path).unwrap();
    let e = connect(&url_on, Some(&ca), &key).unwrap_err();
    assert!(matches!(e, FlowerError::NotRegistered { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("is not registered")
            && msg.contains("flwr supernode register")
            && msg.contains(&key.fingerprint()),
        "{msg}"
    );

    // The operator registers the key's .pub file; the node is then accepted under that ID.
    let out = on
        .flwr()
        .args(["supernode", "register"])
        .arg(keyfile::public_path(&key_path))
        .args(["local", "--format", "json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json: serde_json::Value = stdout
        .find('{')
        .and_then(|i| serde_json::from_str(&stdout[i..]).ok())
        .unwrap_or_else(|| {
            panic!(
                "flwr supernode register: {stdout} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    assert_eq!(json["success"], true, "{json}");
    let registered = json["node-id"].as_u64().unwrap();
    for _ in 0..2 {
        // (twice: leaving does not unregister a node the operator registered)
        let (id, how) = connect(&url_on, Some(&ca), &key).unwrap();
        assert_eq!((id, how), (registered, Registration::ByOperator));
    }

    // Node authentication off: the persistent key registers itself once and stays registered
    // (flwr 1.42 never lets an unregistered key back), so it comes back under the same ID; a
    // key made for one run unregisters when it leaves.
    let (first, how) = connect(&url_off, Some(&ca), &key).unwrap();
    assert_eq!(how, Registration::SelfRegistered);
    let (again, how) = connect(&url_off, Some(&ca), &key).unwrap();
    assert_eq!((again, how), (first, Registration::AlreadyRegistered));
    let once = NodeKey::generate().unwrap();
    connect(&url_off, Some(&ca), &once).unwrap();
    let e = connect(&url_off, Some(&ca), &once).unwrap_err();
    assert!(
        matches!(e, FlowerError::NotRegistered { .. })
            && e.to_string().contains("was unregistered"),
        "{e:?}"
    );
    drop(on);
    drop(off);
    let _ = std::fs::remove_dir_all(&dir);
}
