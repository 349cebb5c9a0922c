//! HTTP and the clock, natively and in the browser.
//!
//! The node logic is written once as `async` code over [`Transport`]. Natively
//! [`NativeTransport`] answers with blocking `ureq` calls (the futures are ready at once and
//! run under `pollster::block_on`); in wasm `FetchTransport` uses the page's or worker's
//! `fetch` and `setTimeout`, so the tab keeps running while a request is in flight. Both run
//! the Fleet heartbeat loop in the background. The trait itself, its answer and the heartbeat
//! handle are in `crate::http` (re-exported here), below the Fleet client that uses them.

use crate::auth::NodeKey;
use crate::fleet::FleetClient;
use crate::http::HeartbeatState;
pub use crate::http::{Heartbeats, HttpResponse, Transport};
use crate::{FlowerError, Result};

/// The heartbeat loop, shared by both platforms: one heartbeat, then short sleeps (so a stop is
/// seen quickly) until `period` seconds have passed on the transport's clock. The period is
/// measured on the clock, not by counting sleeps: in a page a sleep that asked for 0.25 s ends
/// only when the thread is free again, which during local training can be seconds later, and
/// counting sleeps stretched the period by that factor until the SuperLink marked the node
/// offline. A `success: false` answer or an HTTP error marks the node lost and ends the loop;
/// a transport error or a gateway error (502, 503, 504: a proxy in between could not reach the
/// SuperLink) is retried the next period.
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
        // the period runs from the heartbeat's start, so a slow answer does not add to it
        let mut sent = client.transport.now();
        let before = client.traffic();
        let r = client.heartbeat(node_id).await;
        let after = client.traffic();
        state.up.fetch_add(after.up - before.up, Ordering::SeqCst);
        state
            .down
            .fetch_add(after.down - before.down, Ordering::SeqCst);
        let lost = match r {
            // no answer, or a gateway's (the page server's proxy, a reverse proxy) saying it
            // could not reach the SuperLink: the SuperLink may be briefly away, as for a
            // connection error; if it is gone for good, a later heartbeat is refused
            Ok(true)
            | Err(
                FlowerError::Unreachable { .. }
                | FlowerError::Timeout { .. }
                | FlowerError::Http {
                    status: 502..=504,
                    ..
                },
            ) => None,
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
        while !state.stop.load(Ordering::SeqCst) {
            // a clock set back waits one period from then, not the time it went back
            sent = sent.min(client.transport.now());
            let left = period - (client.transport.now() - sent);
            if left <= 0.0 {
                break;
            }
            client.transport.sleep(slice.min(left)).await;
        }
    }
}

/// Largest HTTP answer body read by default: a pulled object is at most a 5 MiB `ArrayChunk`
/// plus its head and the response framing; every other Fleet answer is a few KiB.
pub const DEFAULT_MAX_BODY: u64 = crate::objects::MAX_ARRAY_CHUNK as u64 + 1024 * 1024;
/// Default seconds one request may take, answer body included.
pub const DEFAULT_TIMEOUT_S: f64 = 120.0;

/// How a transport talks to the SuperLink.
#[derive(Clone, Debug)]
pub struct TransportOptions {
    /// Seconds one request may take from connecting to the last byte of the answer.
    pub timeout_s: f64,
    /// Bytes one answer body may have; a longer one is cut off with [`FlowerError::Limit`].
    pub max_body: u64,
    /// PEM certificates of the CAs trusted for an `https://` SuperLink (Flower's
    /// `--root-certificates`): when set, only these are trusted; when not, Mozilla's root
    /// program (the `webpki-roots` crate) is (natively; the browser uses its own roots).
    pub root_certificates: Option<Vec<u8>>,
}

impl Default for TransportOptions {
    fn default() -> Self {
        TransportOptions {
            timeout_s: DEFAULT_TIMEOUT_S,
            max_body: DEFAULT_MAX_BODY,
            root_certificates: None,
        }
    }
}

impl TransportOptions {
    fn check(&self) -> Result<()> {
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return Err(FlowerError::Invalid(format!(
                "the request timeout must be a positive number of seconds, got {}",
                self.timeout_s
            )));
        }
        if self.max_body == 0 {
            return Err(FlowerError::Invalid(
                "the largest answer body must be at least one byte".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub use native::NativeTransport;

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    /// Blocking HTTP(S) through `ureq` and `rustls`; cheap to clone (one connection pool).
    #[derive(Clone)]
    pub struct NativeTransport {
        base: String,
        agent: ureq::Agent,
        opts: Arc<TransportOptions>,
    }

    fn certificates(pem: &[u8]) -> Result<Vec<ureq::tls::Certificate<'static>>> {
        let mut out = Vec::new();
        for item in ureq::tls::parse_pem(pem) {
            match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => out.push(c),
                Ok(_) => {}
                Err(e) => {
                    return Err(FlowerError::Invalid(format!(
                        "root certificates: not a PEM file ({e})"
                    )))
                }
            }
        }
        if out.is_empty() {
            return Err(FlowerError::Invalid(
                "root certificates: the file holds no PEM certificate".into(),
            ));
        }
        Ok(out)
    }

    /// The rustls error inside an I/O error, if that is what it is.
    fn rustls_error(e: &std::io::Error) -> Option<&rustls::Error> {
        e.get_ref()?.downcast_ref::<rustls::Error>()
    }

    impl NativeTransport {
        /// A transport to `base` (`http://host:port` or `https://...`) with the default limits
        /// and Mozilla's roots; requests time out after `timeout_s` seconds.
        pub fn new(base: &str, timeout_s: f64) -> Result<Self> {
            Self::with_options(
                base,
                TransportOptions {
                    timeout_s,
                    ..Default::default()
                },
            )
        }

        /// A transport to `base` with `opts`.
        pub fn with_options(base: &str, opts: TransportOptions) -> Result<Self> {
            opts.check()?;
            let base = base.trim_end_matches('/').to_string();
            if !(base.starts_with("http://") || base.starts_with("https://")) {
                return Err(FlowerError::Invalid(format!(
                    "SuperLink URL '{base}' must start with http:// or https://"
                )));
            }
            let roots = match &opts.root_certificates {
                Some(pem) => ureq::tls::RootCerts::new_with_certs(&certificates(pem)?),
                None => ureq::tls::RootCerts::WebPki,
            };
            let tls = ureq::tls::TlsConfig::builder()
                .provider(ureq::tls::TlsProvider::Rustls)
                .root_certs(roots)
                .build();
            let timeout = Duration::from_secs_f64(opts.timeout_s);
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                // A SuperLink does not redirect; following one would send the signed identity
                // headers somewhere else.
                .max_redirects(0)
                .timeout_global(Some(timeout))
                .timeout_connect(Some(timeout.min(Duration::from_secs(20))))
                .tls_config(tls)
                .build()
                .into();
            Ok(NativeTransport {
                base,
                agent,
                opts: Arc::new(opts),
            })
        }

        /// A transport error as the crate's error: time-outs, TLS failures and bodies over the
        /// limit by their own variants, the rest as [`FlowerError::Unreachable`].
        fn error(&self, path: &str, e: ureq::Error) -> FlowerError {
            let tls = |msg: String| FlowerError::Tls {
                url: self.base.clone(),
                msg,
            };
            match e {
                ureq::Error::Timeout(_) => FlowerError::Timeout {
                    url: self.base.clone(),
                    path: path.to_string(),
                    seconds: self.opts.timeout_s,
                },
                ureq::Error::BodyExceedsLimit(n) => FlowerError::limit(
                    format!("the size of the answer to {path} in bytes"),
                    n.max(self.opts.max_body + 1),
                    self.opts.max_body,
                ),
                ureq::Error::Rustls(r) => tls(describe_rustls(&r)),
                ureq::Error::Tls(m) => tls(m.to_string()),
                ureq::Error::Pem(p) => tls(p.to_string()),
                ureq::Error::Io(io) => {
                    if let Some(r) = rustls_error(&io) {
                        tls(describe_rustls(r))
                    } else if matches!(
                        io.kind(),
                        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
                    ) {
                        FlowerError::Timeout {
                            url: self.base.clone(),
                            path: path.to_string(),
                            seconds: self.opts.timeout_s,
                        }
                    } else {
                        FlowerError::Unreachable {
                            url: self.base.clone(),
                            msg: format!("{path}: {io}"),
                        }
                    }
                }
                other => FlowerError::Unreachable {
                    url: self.base.clone(),
                    msg: format!("{path}: {other}"),
                },
            }
        }
    }

    fn describe_rustls(e: &rustls::Error) -> String {
        match e {
            rustls::Error::InvalidCertificate(c) => {
                format!("the server's certificate was refused ({c:?}); pass the CA that signed it with --root-certificates FILE")
            }
            other => other.to_string(),
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
            let mut resp = req.send(&body[..]).map_err(|e| self.error(path, e))?;
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
                .limit(self.opts.max_body)
                .read_to_vec()
                .map_err(|e| self.error(path, e))?;
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
    use js_sys::{Function, Object, Promise, Reflect, Uint8Array};
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

    /// The DOMException name of a rejection (`TimeoutError` when `AbortSignal.timeout` fired).
    fn js_name(v: &JsValue) -> String {
        Reflect::get(v, &"name".into())
            .ok()
            .and_then(|n| n.as_string())
            .unwrap_or_default()
    }

    fn method(target: &JsValue, name: &str) -> std::result::Result<Function, JsValue> {
        Reflect::get(target, &name.into())?.dyn_into::<Function>()
    }

    /// `fetch` of the page or worker; `base` is usually the page's origin (the page server
    /// forwards `/v1/fleet/*` to the SuperLink). Every request is aborted after the timeout
    /// (`AbortSignal.timeout`, which also ends a body still arriving) and an answer body is
    /// read as a stream and cut off past the limit.
    #[derive(Clone)]
    pub struct FetchTransport {
        base: String,
        opts: std::rc::Rc<TransportOptions>,
    }

    enum Failure {
        Js(JsValue),
        TooLarge(u64),
    }

    impl From<JsValue> for Failure {
        fn from(v: JsValue) -> Self {
            Failure::Js(v)
        }
    }

    impl FetchTransport {
        /// A transport to `base` with the default timeout and body limit.
        pub fn new(base: &str) -> Self {
            FetchTransport {
                base: base.trim_end_matches('/').to_string(),
                opts: std::rc::Rc::new(TransportOptions::default()),
            }
        }

        /// A transport to `base` with `opts` (`root_certificates` does not apply: the browser
        /// verifies TLS with its own roots).
        pub fn with_options(base: &str, opts: TransportOptions) -> Result<Self> {
            opts.check()?;
            Ok(FetchTransport {
                base: base.trim_end_matches('/').to_string(),
                opts: std::rc::Rc::new(opts),
            })
        }

        async fn fetch(
            &self,
            url: &str,
            headers: &[(&str, String)],
            body: Vec<u8>,
        ) -> std::result::Result<(u16, Vec<(String, String)>, Vec<u8>), Failure> {
            let init = web_sys::RequestInit::new();
            init.set_method("POST");
            let h = web_sys::Headers::new()?;
            for (k, v) in headers {
                h.set(k, v)?;
            }
            init.set_headers(&h);
            let bytes = Uint8Array::from(&body[..]);
            init.set_body(&bytes);
            // A SuperLink does not redirect; following one would send the identity elsewhere.
            init.set_redirect(web_sys::RequestRedirect::Error);
            let global = js_sys::global();
            let abort_signal = Reflect::get(&global, &"AbortSignal".into())?;
            if let Ok(timeout) = method(&abort_signal, "timeout") {
                let ms = (self.opts.timeout_s * 1000.0).ceil().min(2_147_483_647.0);
                let signal = timeout.call1(&abort_signal, &JsValue::from(ms))?;
                Reflect::set(init.as_ref(), &"signal".into(), &signal)?;
            }
            let req = web_sys::Request::new_with_str_and_init(url, &init)?;
            let fetch = method(&global, "fetch")?;
            let p: Promise = fetch.call1(&global, &req)?.dyn_into()?;
            let resp: web_sys::Response = JsFuture::from(p).await?.dyn_into()?;
            let mut hdrs = Vec::new();
            for name in ["content-type", "flwr-version-incompatibility-message"] {
                if let Ok(Some(v)) = resp.headers().get(name) {
                    hdrs.push((name.to_string(), v));
                }
            }
            let max = self.opts.max_body;
            if let Ok(Some(len)) = resp.headers().get("content-length") {
                if let Ok(n) = len.trim().parse::<u64>() {
                    if n > max {
                        if let Some(b) = resp.body() {
                            let _ = b.cancel();
                        }
                        return Err(Failure::TooLarge(n));
                    }
                }
            }
            let mut out = Vec::new();
            if let Some(stream) = resp.body() {
                let reader: JsValue =
                    method(stream.as_ref(), "getReader")?.call0(stream.as_ref())?;
                let read = method(&reader, "read")?;
                loop {
                    let p: Promise = read.call0(&reader)?.dyn_into()?;
                    let chunk: Object = JsFuture::from(p).await?.dyn_into()?;
                    if Reflect::get(&chunk, &"done".into())?.is_truthy() {
                        break;
                    }
                    let v: Uint8Array = Reflect::get(&chunk, &"value".into())?.dyn_into()?;
                    let total = out.len() as u64 + v.length() as u64;
                    if total > max {
                        if let Ok(cancel) = method(&reader, "cancel") {
                            let _ = cancel.call0(&reader);
                        }
                        return Err(Failure::TooLarge(total));
                    }
                    let at = out.len();
                    out.resize(at + v.length() as usize, 0);
                    v.copy_to(&mut out[at..]);
                }
            }
            Ok((resp.status(), hdrs, out))
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
            match self.fetch(&url, headers, body).await {
                Ok((status, headers, body)) => Ok(HttpResponse {
                    status,
                    headers,
                    body,
                }),
                Err(Failure::TooLarge(n)) => Err(FlowerError::limit(
                    format!("the size of the answer to {path} in bytes"),
                    n,
                    self.opts.max_body,
                )),
                Err(Failure::Js(e)) if js_name(&e) == "TimeoutError" => Err(FlowerError::Timeout {
                    url: self.base.clone(),
                    path: path.to_string(),
                    seconds: self.opts.timeout_s,
                }),
                Err(Failure::Js(e)) => Err(FlowerError::Unreachable {
                    url: self.base.clone(),
                    msg: format!("{path}: {}", js_msg(&e)),
                }),
            }
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

/// Seconds since the Unix epoch on this platform's clock (`Date.now()` in wasm, where
/// `std::time` has none), for local work that paces itself ([`crate::pace`]).
pub fn wall_clock() -> f64 {
    #[cfg(target_arch = "wasm32")]
    {
        js_sys::Date::now() / 1000.0
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
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

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    /// A single-threaded page in miniature: a sleep asked for `s` seconds ends `s + busy`
    /// seconds later (the thread was training in between); every heartbeat is answered at once
    /// and its time recorded on a clock that never goes back, while `now()` may be set back
    /// an hour once (`set_back_at`, in seconds from the start).
    #[derive(Clone)]
    struct BusyPage {
        start: f64,
        elapsed: Rc<Cell<f64>>,
        set_back: Rc<Cell<f64>>,
        set_back_at: Option<f64>,
        busy: f64,
        beats: Rc<RefCell<Vec<f64>>>,
        state: std::sync::Arc<HeartbeatState>,
        /// HTTP statuses of the first heartbeats' answers (200 once they run out).
        statuses: Rc<RefCell<std::collections::VecDeque<u16>>>,
    }

    impl Transport for BusyPage {
        fn base_url(&self) -> &str {
            "http://fake"
        }
        async fn post(
            &self,
            path: &str,
            _headers: &[(&str, String)],
            _body: Vec<u8>,
        ) -> Result<HttpResponse> {
            assert_eq!(path, "/v1/fleet/send-node-heartbeat");
            let mut b = self.beats.borrow_mut();
            b.push(self.elapsed.get());
            if b.len() >= 50 {
                self.state
                    .stop
                    .store(true, std::sync::atomic::Ordering::SeqCst);
            }
            let status = self.statuses.borrow_mut().pop_front().unwrap_or(200);
            if status != 200 {
                return Ok(HttpResponse {
                    status,
                    headers: vec![("content-type".into(), "text/plain".into())],
                    body: b"page server: the SuperLink is unreachable (ECONNRESET)".to_vec(),
                });
            }
            Ok(HttpResponse {
                status: 200,
                headers: vec![("content-type".into(), "application/protobuf".into())],
                body: crate::proto::SendNodeHeartbeatResponse { success: true }.encode_to_vec(),
            })
        }
        async fn sleep(&self, seconds: f64) {
            self.elapsed.set(self.elapsed.get() + seconds + self.busy);
            if self.set_back_at.is_some_and(|t| self.elapsed.get() > t) {
                self.set_back.set(3600.0);
            }
        }
        fn now(&self) -> f64 {
            self.start + self.elapsed.get() - self.set_back.get()
        }
    }

    /// The gaps between 50 heartbeats (real seconds) on a thread free only every `busy` s.
    fn gaps(period: f64, busy: f64, set_back_at: Option<f64>) -> Vec<f64> {
        let state = std::sync::Arc::new(HeartbeatState::default());
        let page = BusyPage {
            start: 1.0e9,
            elapsed: Rc::default(),
            set_back: Rc::default(),
            set_back_at,
            busy,
            beats: Rc::default(),
            state: state.clone(),
            statuses: Rc::default(),
        };
        let key = NodeKey::generate().unwrap();
        let client = FleetClient::new(page.clone(), key);
        pollster::block_on(heartbeat_loop(client, 7, period, state));
        let b = page.beats.borrow();
        assert_eq!(b.len(), 50);
        b.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// Heartbeats sent, and why the node counts itself lost, when the first answers have
    /// `statuses`.
    fn beats_with(statuses: &[u16]) -> (usize, Option<String>) {
        let state = std::sync::Arc::new(HeartbeatState::default());
        let page = BusyPage {
            start: 1.0e9,
            elapsed: Rc::default(),
            set_back: Rc::default(),
            set_back_at: None,
            busy: 0.0,
            beats: Rc::default(),
            state: state.clone(),
            statuses: Rc::new(RefCell::new(statuses.iter().copied().collect())),
        };
        let client = FleetClient::new(page.clone(), NodeKey::generate().unwrap());
        pollster::block_on(heartbeat_loop(client, 7, 4.0, state.clone()));
        let lost = state.lost.lock().unwrap().clone();
        let n = page.beats.borrow().len();
        (n, lost)
    }

    #[test]
    fn a_gateway_error_is_retried_and_a_refusal_is_not() {
        // a proxy that briefly cannot reach the SuperLink (the 502 a loaded machine gave a tab
        // mid-federation) costs one period, not the node
        let (n, lost) = beats_with(&[502, 503, 504]);
        assert_eq!((n, lost), (50, None));
        // the SuperLink itself refusing the heartbeat ends the loop at once
        let (n, lost) = beats_with(&[403]);
        assert_eq!(n, 1);
        assert!(lost.is_some_and(|l| l.contains("403")));
    }

    #[test]
    fn heartbeats_keep_their_period_on_a_busy_thread() {
        // A turn of the event loop every 1.25 s (training in between). Counting sleeps made
        // the 4 s period 16 turns = 20 s, the SuperLink's whole patience (2 x 10 s).
        let g = gaps(4.0, 1.0, None);
        let longest = g.iter().cloned().fold(0.0, f64::max);
        assert!(longest <= 4.0 + 1.25 + 1e-6, "longest gap {longest} s");
        assert!(longest < 2.0 * crate::fleet::HEARTBEAT_INTERVAL);
    }

    #[test]
    fn a_clock_set_back_delays_no_heartbeat_past_a_period() {
        // the wait restarts at the jump: one gap of at most two periods, not an hour
        let g = gaps(4.0, 0.0, Some(50.0));
        assert!(g.iter().all(|&d| d <= 2.0 * 4.0 + 1e-6), "{g:?}");
        assert!(g.iter().any(|&d| d > 4.0 + 1e-6), "{g:?}");
    }

    #[test]
    fn heartbeats_on_a_free_thread_come_every_period() {
        let g = gaps(4.0, 0.0, None);
        assert!(g.iter().all(|&d| (d - 4.0).abs() < 1e-6), "{g:?}");
    }
}
