//! A hostile Fleet server cannot crash the node, make it allocate or pull without bound, or
//! hang it: each answer of the fake server (`pixelgrad_flower::testing`) gives a typed error,
//! before the work or the allocation, with the local model untouched and the process going on
//! to the next case. A well-formed message through the same fake server trains (the control).

use std::ops::ControlFlow;
use std::sync::atomic::Ordering;

mod support;

use pixelgrad_flower::auth::NodeKey;
use pixelgrad_flower::fleet::FleetClient;
use pixelgrad_flower::learner::ModuleLearner;
use pixelgrad_flower::node::{self, Learner, NodeOptions, Summary};
use pixelgrad_flower::records::{ConfigRecord, ConfigValue};
use pixelgrad_flower::testing::{self, FakeFleet, Scenario};
use pixelgrad_flower::transport::{NativeTransport, TransportOptions};
use pixelgrad_flower::FlowerError;
use pixelgrad_nn::Sequential;

/// 4 → 8 → 3: 67 parameters in 4 tensors.
fn learner() -> ModuleLearner<Sequential> {
    support::tiny_learner(8)
}

fn shapes(l: &ModuleLearner<Sequential>) -> Vec<Vec<usize>> {
    l.params().iter().map(|p| p.dims().to_vec()).collect()
}

fn values(l: &ModuleLearner<Sequential>) -> Vec<Vec<f32>> {
    l.params().iter().map(|t| t.to_vec().unwrap()).collect()
}

fn run(
    server: &FakeFleet,
    timeout_s: f64,
    opts: NodeOptions,
) -> (Result<Summary, FlowerError>, bool) {
    let mut l = learner();
    let before = values(&l);
    let transport = NativeTransport::with_options(
        &server.url,
        TransportOptions {
            timeout_s,
            ..Default::default()
        },
    )
    .unwrap();
    let client = FleetClient::new(transport, NodeKey::generate().unwrap());
    let opts = NodeOptions {
        check_run_after: 0.0,
        poll_min: 0.01,
        poll_max: 0.05,
        ..opts
    };
    let r = pollster::block_on(node::run(&client, &mut l, &opts, &mut |_| {
        ControlFlow::Continue(())
    }));
    let unchanged = values(&l) == before;
    (r, unchanged)
}

fn fails(scenario: Scenario, timeout_s: f64) -> (FlowerError, FakeFleet) {
    let server = FakeFleet::start(scenario).unwrap();
    let (r, unchanged) = run(&server, timeout_s, NodeOptions::default());
    let e = r.expect_err("a hostile server must end the node with an error");
    assert!(unchanged, "the local model is untouched after {e}");
    (e, server)
}

#[test]
fn a_well_formed_message_trains_through_the_fake_server() {
    let server =
        FakeFleet::start(testing::train(&shapes(&learner()), ConfigRecord::default())).unwrap();
    let (r, unchanged) = run(&server, 10.0, NodeOptions::default());
    let s = r.unwrap();
    assert_eq!(s.rounds_trained, 1);
    assert!(!unchanged, "the model took the round");
    assert!(server.seen.error_reply.lock().unwrap().is_none());
}

#[test]
fn a_non_ascii_object_id_is_refused() {
    let (e, server) = fails(testing::non_ascii_id(), 10.0);
    assert!(matches!(e, FlowerError::Protocol(_)), "{e:?}");
    assert!(e.to_string().contains("is not an object ID"), "{e}");
    assert_eq!(server.seen.pull_object.load(Ordering::SeqCst), 0);
}

#[test]
fn repeated_chunk_references_are_refused_before_they_are_joined() {
    // ~8 KiB on the wire naming 100 MB of float32 data.
    let (e, server) = fails(testing::repeated_chunks(25_000_000), 10.0);
    assert!(matches!(e, FlowerError::Limit { .. }), "{e:?}");
    assert!(e.to_string().contains("array elements"), "{e}");
    // the server hears why
    let why = server.seen.error_reply.lock().unwrap().clone().unwrap();
    assert!(why.contains("refused"), "{why}");
    // a small array whose one chunk is listed 20 times
    let (e, _) = fails(testing::repeated_chunk_of_small_array(&[4, 8], 20), 10.0);
    assert!(e.to_string().contains("expand to"), "{e}");
}

#[test]
fn repeated_array_references_are_counted_every_time() {
    // 1000 elements named 4 times: more than the model's 67 (+ margin).
    let (e, _) = fails(testing::repeated_array_refs(&[1000], 4), 10.0);
    assert!(matches!(e, FlowerError::Limit { .. }), "{e:?}");
    assert!(e.to_string().contains("array elements"), "{e}");
    // 10,000 names for one array: refused on the count of references
    let (e, _) = fails(testing::repeated_array_refs(&[10], 10_000), 10.0);
    assert!(matches!(e, FlowerError::Limit { .. }), "{e:?}");
    assert!(e.to_string().contains("references"), "{e}");
}

#[test]
fn too_many_objects_are_refused_before_pulling_any() {
    let (e, server) = fails(testing::too_many_objects(20_000), 10.0);
    assert!(matches!(e, FlowerError::Limit { .. }), "{e:?}");
    assert!(e.to_string().contains("number of objects"), "{e}");
    assert_eq!(server.seen.pull_object.load(Ordering::SeqCst), 0);
}

#[test]
fn an_endless_answer_is_cut_off_at_the_limit() {
    let (e, _) = fails(Scenario::EndlessBody, 60.0);
    match &e {
        FlowerError::Limit { limit, .. } => {
            assert_eq!(*limit, pixelgrad_flower::transport::DEFAULT_MAX_BODY)
        }
        other => panic!("expected a size limit, got {other:?}"),
    }
}

#[test]
fn a_stalled_server_times_out() {
    let (e, server) = fails(Scenario::Stall, 1.0);
    assert!(matches!(e, FlowerError::Timeout { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("did not answer /v1/fleet/register-node within 1 s"),
        "{e}"
    );
    assert_eq!(server.seen.requests.load(Ordering::SeqCst), 1);
}

#[test]
fn server_requested_epochs_and_rounds_have_a_ceiling() {
    let shapes = shapes(&learner());
    // 10^6 local epochs: refused with an error reply; the node goes on and the run ends.
    let cfg = ConfigRecord(vec![("local-epochs".into(), ConfigValue::Int(1_000_000))]);
    let server = FakeFleet::start(testing::train(&shapes, cfg)).unwrap();
    let (r, unchanged) = run(&server, 10.0, NodeOptions::default());
    let s = r.unwrap();
    assert_eq!(s.rounds_trained, 0);
    assert!(unchanged);
    let why = server.seen.error_reply.lock().unwrap().clone().unwrap();
    assert!(
        why.contains("local epochs") && why.contains("1000000"),
        "{why}"
    );
    // a negative or fractional count is a protocol error (reported, and the node ends), not
    // a saturating cast
    let cfg = ConfigRecord(vec![("local-epochs".into(), ConfigValue::Float(-3.5))]);
    let server = FakeFleet::start(testing::train(&shapes, cfg)).unwrap();
    let (r, unchanged) = run(&server, 10.0, NodeOptions::default());
    let e = r.unwrap_err();
    assert!(matches!(e, FlowerError::Protocol(_)), "{e:?}");
    assert!(unchanged);
    let why = server.seen.error_reply.lock().unwrap().clone().unwrap();
    assert!(why.contains("positive whole number"), "{why}");
    // more rounds than allowed: an error reply, then the node ends with a typed error
    let server = FakeFleet::start(testing::train(&shapes, ConfigRecord::default())).unwrap();
    let (r, unchanged) = run(
        &server,
        10.0,
        NodeOptions {
            max_rounds: 0,
            ..Default::default()
        },
    );
    let e = r.unwrap_err();
    assert!(matches!(e, FlowerError::Limit { .. }), "{e:?}");
    assert!(e.to_string().contains("rounds"), "{e}");
    assert!(unchanged);
}
