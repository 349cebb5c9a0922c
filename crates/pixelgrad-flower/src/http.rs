//! The seam the node logic is written over: [`Transport`] (POSTs, a sleep, a wall clock and
//! background heartbeats), its [`HttpResponse`], the [`Heartbeats`] handle and the [`Traffic`]
//! it counts. The Fleet client (`crate::fleet`) speaks the protocol over it; the platform
//! transports and the heartbeat loop they run are in `crate::transport`, above both.

use crate::auth::NodeKey;
use crate::Result;

/// Bytes sent and received (request and response bodies plus the headers this client sets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    pub up: u64,
    pub down: u64,
}

/// An HTTP answer: status, headers (names lower-case) and body.
#[derive(Clone, Debug, Default)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// POST requests to one base URL, a sleep and a wall clock.
#[allow(async_fn_in_trait)]
pub trait Transport {
    /// The base URL requests go to (e.g. `http://127.0.0.1:9093`, or the page's origin).
    fn base_url(&self) -> &str;
    /// POSTs `body` to `base_url + path`. An HTTP error status is a response, not an `Err`;
    /// `Err` means no answer ([`FlowerError::Unreachable`](crate::FlowerError::Unreachable)).
    async fn post(
        &self,
        path: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<HttpResponse>;
    async fn sleep(&self, seconds: f64);
    /// Seconds since the Unix epoch.
    fn now(&self) -> f64;
    /// Starts sending Fleet heartbeats for `node_id` every `period` seconds in the background
    /// (a thread natively, a task on the page's event loop in wasm) until the handle stops.
    fn start_heartbeats(&self, _key: &NodeKey, _node_id: u64, _period: f64) -> Heartbeats {
        Heartbeats::none()
    }
}

/// A running heartbeat sender.
pub struct Heartbeats {
    pub(crate) state: std::sync::Arc<HeartbeatState>,
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) thread: Option<std::thread::JoinHandle<()>>,
}

/// What a heartbeat sender shares with its handle: the stop flag, why the node was lost, and
/// the bytes its heartbeats moved.
#[derive(Default)]
pub(crate) struct HeartbeatState {
    pub(crate) stop: std::sync::atomic::AtomicBool,
    pub(crate) lost: std::sync::Mutex<Option<String>>,
    pub(crate) up: std::sync::atomic::AtomicU64,
    pub(crate) down: std::sync::atomic::AtomicU64,
}

impl Heartbeats {
    /// A handle that sends nothing (for transports without a background task).
    pub fn none() -> Self {
        Heartbeats {
            state: Default::default(),
            #[cfg(not(target_arch = "wasm32"))]
            thread: None,
        }
    }
    /// Why the SuperLink stopped accepting heartbeats, if it did.
    pub fn lost(&self) -> Option<String> {
        self.state.lost.lock().ok().and_then(|l| l.clone())
    }
    /// Stops sending; returns the heartbeats' traffic.
    #[cfg_attr(target_arch = "wasm32", allow(unused_mut))]
    pub fn stop(mut self) -> Traffic {
        use std::sync::atomic::Ordering;
        self.state.stop.store(true, Ordering::SeqCst);
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        Traffic {
            up: self.state.up.load(Ordering::SeqCst),
            down: self.state.down.load(Ordering::SeqCst),
        }
    }
}
