//! The Fleet API calls a node makes, as flwr 1.42 serves them: protobuf over HTTP, `POST
//! /v1/fleet/<route>` with `content-type: application/protobuf`, the node's signed identity
//! ([`crate::auth`]) and Flower's runtime-version headers on every request.
//!
//! Errors are mapped to [`FlowerError`]: no answer → `Unreachable` (or `Timeout`, `Tls`,
//! `Limit` from the transport); a route the SuperLink does not have (404), a runtime-version
//! refusal (412 with Flower's code 1001), a version-incompatibility header, or an answer that
//! is not protobuf → `Protocol` (a SuperLink of another flwr release); a failed signature check
//! (401) → `NotRegistered`; other statuses → `Http` with Flower's error code and detail.

use std::cell::Cell;

use crate::auth::NodeKey;
pub use crate::http::Traffic;
use crate::http::{HttpResponse, Transport};
use crate::proto::{self, Node};
use crate::{FlowerError, Result};

/// The flwr release whose Fleet protocol this crate speaks (sent as the runtime version).
pub const FLWR_VERSION: &str = "1.42.0";
/// Media type of Fleet requests and answers.
pub const PROTOBUF: &str = "application/protobuf";
/// Heartbeat interval asked for (flwr accepts 10..=1800 s; nodes count as offline after twice it).
pub const HEARTBEAT_INTERVAL: f64 = 10.0;

/// Flower's API error codes (`flwr.supercore.error.ApiErrorCode`) this client acts on.
pub mod codes {
    /// `PUBLIC_KEY_ALREADY_IN_USE`: the key is registered already (a node that did not leave).
    pub const PUBLIC_KEY_ALREADY_IN_USE: i64 = 23;
    /// `RUNTIME_VERSION_INCOMPATIBLE`.
    pub const RUNTIME_VERSION_INCOMPATIBLE: i64 = 1001;
    /// `FLEET_SUPERNODE_REGISTRATION_DISABLED`: node authentication is on; the operator
    /// registers keys with `flwr supernode register`.
    pub const REGISTRATION_DISABLED: i64 = 2001;
    /// `FLEET_SUPERNODE_UNREGISTRATION_DISABLED`: the same, for leaving.
    pub const UNREGISTRATION_DISABLED: i64 = 2002;
    /// `FLEET_NODE_ACTIVATION_FAILED`: no node with this public key.
    pub const ACTIVATION_FAILED: i64 = 2004;
}

/// A Fleet API client for one node identity.
pub struct FleetClient<T: Transport> {
    pub transport: T,
    key: NodeKey,
    traffic: Cell<Traffic>,
}

/// Flower's error code in an error body (`{"code": N, ...}`).
fn error_code(r: &HttpResponse) -> Option<i64> {
    let v: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
    v.get("code")?.as_i64()
}

/// What the SuperLink's error body says (`{"code": N, "detail": "...", "extra": "..."}`).
fn error_detail(r: &HttpResponse) -> String {
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or(serde_json::Value::Null);
    let mut s = match v.get("detail").and_then(|d| d.as_str()) {
        Some(d) => d.chars().take(500).collect(),
        None => String::from_utf8_lossy(&r.body[..r.body.len().min(300)]).into_owned(),
    };
    if let Some(code) = v.get("code").and_then(|c| c.as_i64()) {
        s = format!("[code {code}] {s}");
    }
    if let Some(extra) = v.get("extra").and_then(|c| c.as_str()) {
        s = format!("{s} ({extra})");
    }
    s
}

impl<T: Transport> FleetClient<T> {
    pub fn new(transport: T, key: NodeKey) -> Self {
        FleetClient {
            transport,
            key,
            traffic: Cell::new(Traffic::default()),
        }
    }

    pub fn key(&self) -> &NodeKey {
        &self.key
    }

    pub fn traffic(&self) -> Traffic {
        self.traffic.get()
    }

    /// One Fleet call: `POST /v1/fleet/{route}` with `req`, answer parsed as `R`.
    pub async fn call<Q: prost::Message, R: prost::Message + Default>(
        &self,
        route: &str,
        req: &Q,
    ) -> Result<R> {
        let path = format!("/v1/fleet/{route}");
        let body = req.encode_to_vec();
        let mut headers: Vec<(&str, String)> = vec![
            ("content-type", PROTOBUF.into()),
            ("accept", PROTOBUF.into()),
            ("flwr-package-name", "flwr".into()),
            ("flwr-package-version", FLWR_VERSION.into()),
            ("flwr-component-name", "SuperNode".into()),
        ];
        headers.extend(self.key.headers(self.transport.now()).await?);
        let header_bytes: usize = headers.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
        let sent = body.len() + header_bytes;
        let r = self.transport.post(&path, &headers, body).await?;
        let mut t = self.traffic.get();
        t.up += sent as u64;
        t.down += r.body.len() as u64;
        self.traffic.set(t);
        if let Some(msg) = r.header("flwr-version-incompatibility-message") {
            return Err(FlowerError::Protocol(format!(
                "the SuperLink reports a version mismatch: {msg}"
            )));
        }
        match r.status {
            200 => {}
            404 => {
                return Err(FlowerError::Protocol(format!(
                    "the server at {} has no Fleet route {path} (pixelgrad speaks the Fleet API of flwr {FLWR_VERSION}; is this a Flower SuperLink of that release?)",
                    self.transport.base_url()
                )))
            }
            412 if error_code(&r).is_none_or(|c| c == codes::RUNTIME_VERSION_INCOMPATIBLE) => {
                return Err(FlowerError::Protocol(format!(
                    "the SuperLink refused flwr {FLWR_VERSION}'s Fleet protocol: {}",
                    error_detail(&r)
                )))
            }
            401 => {
                return Err(FlowerError::NotRegistered {
                    url: self.transport.base_url().to_string(),
                    msg: format!(
                        "{} on {path} (the SuperLink does not know key {} for this node, or this machine's clock is off by more than 5 s)",
                        error_detail(&r),
                        self.key.fingerprint()
                    ),
                })
            }
            status => {
                return Err(FlowerError::Http {
                    path,
                    status,
                    code: error_code(&r),
                    msg: error_detail(&r),
                })
            }
        }
        match r.header("content-type") {
            Some(ct) if ct.starts_with(PROTOBUF) => {}
            other => {
                return Err(FlowerError::Protocol(format!(
                    "{path} answered with content-type {:?}, not {PROTOBUF} (not a flwr {FLWR_VERSION} SuperLink?)",
                    other.unwrap_or("none")
                )))
            }
        }
        proto::decode(&format!("answer to {path}"), &r.body)
    }

    /// Registers the public key (a self-registered node, as a SuperLink without node
    /// authentication allows) and returns the node ID.
    pub async fn register(&self) -> Result<u64> {
        let r: proto::RegisterNodeFleetResponse = self
            .call(
                "register-node",
                &proto::RegisterNodeFleetRequest {
                    public_key: self.key.public_pem().to_vec(),
                },
            )
            .await?;
        Ok(r.node_id)
    }

    /// Marks the node online; returns its ID.
    pub async fn activate(&self) -> Result<u64> {
        let r: proto::ActivateNodeResponse = self
            .call(
                "activate-node",
                &proto::ActivateNodeRequest {
                    public_key: self.key.public_pem().to_vec(),
                    heartbeat_interval: HEARTBEAT_INTERVAL,
                },
            )
            .await?;
        Ok(r.node_id)
    }

    pub async fn heartbeat(&self, node_id: u64) -> Result<bool> {
        let r: proto::SendNodeHeartbeatResponse = self
            .call(
                "send-node-heartbeat",
                &proto::SendNodeHeartbeatRequest {
                    node: Some(Node { node_id }),
                    heartbeat_interval: HEARTBEAT_INTERVAL,
                },
            )
            .await?;
        Ok(r.success)
    }

    pub async fn pull_messages(&self, node_id: u64) -> Result<proto::PullMessagesResponse> {
        self.call(
            "pull-messages",
            &proto::PullMessagesRequest {
                node: Some(Node { node_id }),
                message_ids: Vec::new(),
            },
        )
        .await
    }

    pub async fn pull_object(
        &self,
        node_id: u64,
        run_id: u64,
        object_id: &str,
    ) -> Result<proto::PullObjectResponse> {
        self.call(
            "pull-object",
            &proto::PullObjectRequest {
                node: Some(Node { node_id }),
                run_id,
                object_id: object_id.into(),
            },
        )
        .await
    }

    pub async fn confirm_received(
        &self,
        node_id: u64,
        run_id: u64,
        message_id: &str,
    ) -> Result<()> {
        let _: proto::ConfirmMessageReceivedResponse = self
            .call(
                "confirm-message-received",
                &proto::ConfirmMessageReceivedRequest {
                    node: Some(Node { node_id }),
                    run_id,
                    message_object_id: message_id.into(),
                },
            )
            .await?;
        Ok(())
    }

    pub async fn push_messages(
        &self,
        req: &proto::PushMessagesRequest,
    ) -> Result<proto::PushMessagesResponse> {
        self.call("push-messages", req).await
    }

    pub async fn push_object(
        &self,
        node_id: u64,
        run_id: u64,
        session_id: &str,
        object_id: &str,
        content: Vec<u8>,
    ) -> Result<bool> {
        let r: proto::PushObjectResponse = self
            .call(
                "push-object",
                &proto::PushObjectRequest {
                    node: Some(Node { node_id }),
                    run_id,
                    object_id: object_id.into(),
                    object_content: content,
                    session_id: session_id.into(),
                },
            )
            .await?;
        Ok(r.stored)
    }

    pub async fn deactivate(&self, node_id: u64) -> Result<()> {
        let _: proto::DeactivateNodeResponse = self
            .call("deactivate-node", &proto::DeactivateNodeRequest { node_id })
            .await?;
        Ok(())
    }

    pub async fn unregister(&self, node_id: u64) -> Result<()> {
        let _: proto::UnregisterNodeFleetResponse = self
            .call(
                "unregister-node",
                &proto::UnregisterNodeFleetRequest { node_id },
            )
            .await?;
        Ok(())
    }
}
