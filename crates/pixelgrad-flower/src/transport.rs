//! HTTP and the clock, natively and in the browser.
//!
//! The node logic is written once as `async` code over [`Transport`]. Natively
//! [`NativeTransport`] answers with blocking `ureq` calls (the futures are ready at once and
//! run under `pollster::block_on`); in wasm `FetchTransport` uses the page's or worker's
//! `fetch` and `setTimeout`, so the tab keeps running while a request is in flight.

use crate::auth::NodeKey;
use crate::fleet::{FleetClient, Traffic};
use crate::{FlowerError, Result};

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
    /// `Err` means no answer ([`FlowerError::Unreachable`]).
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
    state: std::sync::Arc<HeartbeatState>,
    #[cfg(not(target_arch = "wasm32"))]
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct HeartbeatState {
    stop: std::sync::atomic::AtomicBool,
    lost: std::sync::Mutex<Option<String>>,
    up: std::sync::atomic::AtomicU64,
    down: std::sync::atomic::AtomicU64,
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

/// The heartbeat loop, shared by both platforms: one heartbeat, then `period` seconds in
/// short sleeps (so a stop is seen quickly). A `success: false` answer or an HTTP error marks
/// the node lost and ends the loop; a transport error (SuperLink briefly away) is retried.
async fn heartbeat_loop<T: Transport>(
    client: FleetClient<T>,
    node_id: u64,
    period: f64,
    state: std::sync::Arc<HeartbeatState>,
) {
    use std::sync::atomic::Ordering;
    let slice = 0.25f64.min(period);
    loop {
        if state.stop.load(Ordering::SeqCst) {
            break;
        }
        let before = client.traffic();
        let r = client.heartbeat(node_id).await;
        let after = client.traffic();
        state.up.fetch_add(after.up - before.up, Ordering::SeqCst);
        state
            .down
            .fetch_add(after.down - before.down, Ordering::SeqCst);
        let lost = match r {
            Ok(true) | Err(FlowerError::Unreachable { .. }) => None,
            Ok(false) => Some(
                "the SuperLink does not recognise this node any more (heartbeat refused)"
                    .to_string(),
            ),
            Err(e) => Some(format!("heartbeat failed: {e}")),
        };
        if let Some(l) = lost {
            if let Ok(mut g) = state.lost.lock() {
                *g = Some(l);
            }
            break;
        }
        let mut waited = 0.0;
        while waited < period && !state.stop.load(Ordering::SeqCst) {
            client.transport.sleep(slice).await;
            waited += slice;
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub use native::NativeTransport;

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use super::*;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    /// Largest response body read (a pulled object is at most a 5 MiB chunk plus framing).
    const MAX_BODY: u64 = 64 * 1024 * 1024;

    /// Blocking HTTP through `ureq`; cheap to clone (one connection pool).
    #[derive(Clone)]
    pub struct NativeTransport {
        base: String,
        agent: ureq::Agent,
    }

    impl NativeTransport {
        /// A transport to `base` (`http://host:port`, no trailing slash needed); requests time
        /// out after `timeout_s` seconds.
        pub fn new(base: &str, timeout_s: f64) -> Result<Self> {
            let base = base.trim_end_matches('/').to_string();
            if !(base.starts_with("http://") || base.starts_with("https://")) {
                return Err(FlowerError::Invalid(format!(
                    "SuperLink URL '{base}' must start with http:// or https://"
                )));
            }
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs_f64(timeout_s.max(1.0))))
                .build()
                .into();
            Ok(NativeTransport { base, agent })
        }
    }

    impl Transport for NativeTransport {
        fn base_url(&self) -> &str {
            &self.base
        }
        async fn post(
            &self,
            path: &str,
            headers: &[(&str, String)],
            body: Vec<u8>,
        ) -> Result<HttpResponse> {
            let url = format!("{}{path}", self.base);
            let mut req = self.agent.post(&url);
            for (k, v) in headers {
                req = req.header(*k, v.as_str());
            }
            let mut resp = req.send(&body[..]).map_err(|e| FlowerError::Unreachable {
                url: self.base.clone(),
                msg: e.to_string(),
            })?;
            let status = resp.status().as_u16();
            let hdrs = resp
                .headers()
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_ascii_lowercase(),
                        v.to_str().unwrap_or("").to_string(),
                    )
                })
                .collect();
            let body = resp
                .body_mut()
                .with_config()
                .limit(MAX_BODY)
                .read_to_vec()
                .map_err(|e| FlowerError::Unreachable {
                    url: self.base.clone(),
                    msg: format!("reading the answer to {path}: {e}"),
                })?;
            Ok(HttpResponse {
                status,
                headers: hdrs,
                body,
            })
        }
        async fn sleep(&self, seconds: f64) {
            std::thread::sleep(Duration::from_secs_f64(seconds.max(0.0)));
        }
        fn now(&self) -> f64 {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0)
        }
        fn start_heartbeats(&self, key: &NodeKey, node_id: u64, period: f64) -> Heartbeats {
            let mut h = Heartbeats::none();
            let state = h.state.clone();
            let client = FleetClient::new(self.clone(), key.clone());
            let spawned = std::thread::Builder::new()
                .name("flower-heartbeat".into())
                .spawn(move || pollster::block_on(heartbeat_loop(client, node_id, period, state)));
            match spawned {
                Ok(t) => h.thread = Some(t),
                Err(e) => {
                    if let Ok(mut g) = h.state.lost.lock() {
                        *g = Some(format!("cannot start the heartbeat thread: {e}"));
                    }
                }
            }
            h
        }
    }
}

#[cfg(target_arch = "wasm32")]
pub use web::FetchTransport;

#[cfg(target_arch = "wasm32")]
mod web {
    use super::*;
    use js_sys::{Function, Promise, Reflect, Uint8Array};
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;

    fn js_msg(v: &JsValue) -> String {
        v.as_string()
            .or_else(|| {
                v.dyn_ref::<js_sys::Error>()
                    .map(|e| String::from(e.message()))
            })
            .unwrap_or_else(|| format!("{v:?}"))
    }

    /// `fetch` of the page or worker; `base` is usually the page's origin (the page server
    /// forwards `/v1/fleet/*` to the SuperLink).
    #[derive(Clone)]
    pub struct FetchTransport {
        base: String,
    }

    impl FetchTransport {
        pub fn new(base: &str) -> Self {
            FetchTransport {
                base: base.trim_end_matches('/').to_string(),
            }
        }

        async fn fetch(
            &self,
            url: &str,
            headers: &[(&str, String)],
            body: Vec<u8>,
        ) -> std::result::Result<web_sys::Response, JsValue> {
            let init = web_sys::RequestInit::new();
            init.set_method("POST");
            let h = web_sys::Headers::new()?;
            for (k, v) in headers {
                h.set(k, v)?;
            }
            init.set_headers(&h);
            let bytes = Uint8Array::from(&body[..]);
            init.set_body(&bytes);
            let req = web_sys::Request::new_with_str_and_init(url, &init)?;
            let global = js_sys::global();
            let fetch: Function = Reflect::get(&global, &"fetch".into())?.dyn_into()?;
            let p: Promise = fetch.call1(&global, &req)?.dyn_into()?;
            JsFuture::from(p).await?.dyn_into()
        }
    }

    impl Transport for FetchTransport {
        fn base_url(&self) -> &str {
            &self.base
        }
        async fn post(
            &self,
            path: &str,
            headers: &[(&str, String)],
            body: Vec<u8>,
        ) -> Result<HttpResponse> {
            let url = format!("{}{path}", self.base);
            let unreachable = |e: JsValue| FlowerError::Unreachable {
                url: self.base.clone(),
                msg: js_msg(&e),
            };
            let resp = self.fetch(&url, headers, body).await.map_err(unreachable)?;
            let mut hdrs = Vec::new();
            for name in ["content-type", "flwr-version-incompatibility-message"] {
                if let Ok(Some(v)) = resp.headers().get(name) {
                    hdrs.push((name.to_string(), v));
                }
            }
            let buf = resp.array_buffer().map_err(unreachable)?;
            let buf = JsFuture::from(buf).await.map_err(unreachable)?;
            Ok(HttpResponse {
                status: resp.status(),
                headers: hdrs,
                body: Uint8Array::new(&buf).to_vec(),
            })
        }
        async fn sleep(&self, seconds: f64) {
            let ms = (seconds.max(0.0) * 1000.0) as i32;
            let p = Promise::new(&mut |resolve, _| {
                let global = js_sys::global();
                if let Ok(f) = Reflect::get(&global, &"setTimeout".into())
                    .and_then(|f| f.dyn_into::<Function>())
                {
                    let _ = f.call2(&global, &resolve, &JsValue::from(ms));
                } else {
                    let _ = resolve.call0(&JsValue::NULL);
                }
            });
            let _ = JsFuture::from(p).await;
        }
        fn now(&self) -> f64 {
            js_sys::Date::now() / 1000.0
        }
        fn start_heartbeats(&self, key: &NodeKey, node_id: u64, period: f64) -> Heartbeats {
            let h = Heartbeats::none();
            let client = FleetClient::new(self.clone(), key.clone());
            wasm_bindgen_futures::spawn_local(heartbeat_loop(
                client,
                node_id,
                period,
                h.state.clone(),
            ));
            h
        }
    }
}

/// Lets the event loop run (pending fetches, heartbeat timers, page events) between batches of
/// local work: one macrotask through a `MessageChannel` (not throttled like `setTimeout`) in
/// wasm, nothing natively.
pub async fn yield_now() {
    #[cfg(target_arch = "wasm32")]
    {
        use wasm_bindgen::JsCast;
        let p = js_sys::Promise::new(&mut |resolve, _| match web_sys::MessageChannel::new() {
            Ok(ch) => {
                let port = ch.port1();
                let r = resolve.clone();
                let cb = wasm_bindgen::closure::Closure::once_into_js(move || {
                    let _ = r.call0(&wasm_bindgen::JsValue::NULL);
                });
                port.set_onmessage(Some(cb.unchecked_ref()));
                if ch
                    .port2()
                    .post_message(&wasm_bindgen::JsValue::NULL)
                    .is_err()
                {
                    let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
                }
            }
            Err(_) => {
                let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
            }
        });
        let _ = wasm_bindgen_futures::JsFuture::from(p).await;
    }
}
