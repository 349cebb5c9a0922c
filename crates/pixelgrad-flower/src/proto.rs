//! The protobuf messages of Flower's Fleet API that a node sends and receives, written as `prost`
//! derives. Field numbers and types are those of `flwr/proto/{fleet,message,recorddict,node,
//! heartbeat,error}.proto` in flwr 1.42 (read from the installed package's descriptors); only
//! the messages a node needs are here. `tests/wire.rs` checks every one of them against flwr's
//! own Python classes in both directions.
//!
//! Fields are declared in field-number order: prost then encodes them in that order, as
//! Python's deterministic serialisation does, so a `Message` body hashes to the same object ID.

// ---- node.proto / heartbeat.proto / error.proto ----

#[derive(Clone, PartialEq, prost::Message)]
pub struct Node {
    #[prost(uint64, tag = "1")]
    pub node_id: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SendNodeHeartbeatRequest {
    #[prost(message, optional, tag = "1")]
    pub node: Option<Node>,
    #[prost(double, tag = "2")]
    pub heartbeat_interval: f64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SendNodeHeartbeatResponse {
    #[prost(bool, tag = "1")]
    pub success: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Error {
    #[prost(sint64, tag = "1")]
    pub code: i64,
    #[prost(string, tag = "2")]
    pub reason: String,
}

// ---- fleet.proto ----

#[derive(Clone, PartialEq, prost::Message)]
pub struct RegisterNodeFleetRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub public_key: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RegisterNodeFleetResponse {
    #[prost(uint64, tag = "1")]
    pub node_id: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ActivateNodeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub public_key: Vec<u8>,
    #[prost(double, tag = "2")]
    pub heartbeat_interval: f64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ActivateNodeResponse {
    #[prost(uint64, tag = "1")]
    pub node_id: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DeactivateNodeRequest {
    #[prost(uint64, tag = "1")]
    pub node_id: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DeactivateNodeResponse {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct UnregisterNodeFleetRequest {
    #[prost(uint64, tag = "1")]
    pub node_id: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct UnregisterNodeFleetResponse {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Reconnect {
    #[prost(uint64, tag = "1")]
    pub reconnect: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PullMessagesRequest {
    #[prost(message, optional, tag = "1")]
    pub node: Option<Node>,
    #[prost(string, repeated, tag = "2")]
    pub message_ids: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PullMessagesResponse {
    #[prost(message, optional, tag = "1")]
    pub reconnect: Option<Reconnect>,
    #[prost(message, repeated, tag = "2")]
    pub messages_list: Vec<Message>,
    #[prost(message, repeated, tag = "3")]
    pub message_object_trees: Vec<ObjectTree>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PushMessagesRequest {
    #[prost(message, optional, tag = "1")]
    pub node: Option<Node>,
    #[prost(message, repeated, tag = "2")]
    pub messages_list: Vec<Message>,
    #[prost(message, repeated, tag = "3")]
    pub message_object_trees: Vec<ObjectTree>,
    #[prost(double, repeated, tag = "4")]
    pub clientapp_runtime_list: Vec<f64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PushMessagesResponse {
    #[prost(message, optional, tag = "1")]
    pub reconnect: Option<Reconnect>,
    #[prost(map = "string, uint32", tag = "2")]
    pub results: std::collections::HashMap<String, u32>,
    #[prost(string, repeated, tag = "3")]
    pub objects_to_push: Vec<String>,
    #[prost(string, tag = "4")]
    pub session_id: String,
}

// ---- message.proto ----

#[derive(Clone, PartialEq, prost::Message)]
pub struct Message {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<Metadata>,
    #[prost(message, optional, tag = "2")]
    pub content: Option<RecordDict>,
    #[prost(message, optional, tag = "3")]
    pub error: Option<Error>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Metadata {
    #[prost(uint64, tag = "1")]
    pub run_id: u64,
    #[prost(string, tag = "2")]
    pub message_id: String,
    #[prost(uint64, tag = "3")]
    pub src_node_id: u64,
    #[prost(uint64, tag = "4")]
    pub dst_node_id: u64,
    #[prost(string, tag = "5")]
    pub reply_to_message_id: String,
    #[prost(string, tag = "6")]
    pub group_id: String,
    #[prost(double, tag = "7")]
    pub ttl: f64,
    #[prost(string, tag = "8")]
    pub message_type: String,
    #[prost(double, tag = "9")]
    pub created_at: f64,
    #[prost(uint64, optional, tag = "10")]
    pub src_task_id: Option<u64>,
    #[prost(uint64, optional, tag = "11")]
    pub dst_task_id: Option<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ObjectTree {
    #[prost(string, tag = "1")]
    pub object_id: String,
    #[prost(message, repeated, tag = "2")]
    pub children: Vec<ObjectTree>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PushObjectRequest {
    #[prost(message, optional, tag = "1")]
    pub node: Option<Node>,
    #[prost(uint64, tag = "2")]
    pub run_id: u64,
    #[prost(string, tag = "3")]
    pub object_id: String,
    #[prost(bytes = "vec", tag = "4")]
    pub object_content: Vec<u8>,
    #[prost(string, tag = "5")]
    pub session_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PushObjectResponse {
    #[prost(bool, tag = "1")]
    pub stored: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PullObjectRequest {
    #[prost(message, optional, tag = "1")]
    pub node: Option<Node>,
    #[prost(uint64, tag = "2")]
    pub run_id: u64,
    #[prost(string, tag = "3")]
    pub object_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PullObjectResponse {
    #[prost(bool, tag = "1")]
    pub object_found: bool,
    #[prost(bool, tag = "2")]
    pub object_available: bool,
    #[prost(bytes = "vec", tag = "3")]
    pub object_content: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ConfirmMessageReceivedRequest {
    #[prost(message, optional, tag = "1")]
    pub node: Option<Node>,
    #[prost(uint64, tag = "2")]
    pub run_id: u64,
    #[prost(string, tag = "3")]
    pub message_object_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ConfirmMessageReceivedResponse {}

// ---- recorddict.proto ----

#[derive(Clone, PartialEq, prost::Message)]
pub struct DoubleList {
    #[prost(double, repeated, tag = "1")]
    pub vals: Vec<f64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SintList {
    #[prost(sint64, repeated, tag = "1")]
    pub vals: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct UintList {
    #[prost(uint64, repeated, tag = "1")]
    pub vals: Vec<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BoolList {
    #[prost(bool, repeated, tag = "1")]
    pub vals: Vec<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StringList {
    #[prost(string, repeated, tag = "1")]
    pub vals: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BytesList {
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub vals: Vec<Vec<u8>>,
}

/// An array inside a (content-carrying) `RecordDict` proto. Message contents travel as
/// objects, not in this form, but it is part of the schema `RecordDict` refers to.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Array {
    #[prost(string, tag = "1")]
    pub dtype: String,
    #[prost(int32, repeated, tag = "2")]
    pub shape: Vec<i32>,
    #[prost(string, tag = "3")]
    pub stype: String,
    #[prost(bytes = "vec", tag = "4")]
    pub data: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricRecordValue {
    #[prost(oneof = "metric_record_value::Value", tags = "1, 2, 3, 21, 22, 23")]
    pub value: Option<metric_record_value::Value>,
}

pub mod metric_record_value {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(double, tag = "1")]
        Double(f64),
        #[prost(sint64, tag = "2")]
        Sint64(i64),
        #[prost(uint64, tag = "3")]
        Uint64(u64),
        #[prost(message, tag = "21")]
        DoubleList(super::DoubleList),
        #[prost(message, tag = "22")]
        SintList(super::SintList),
        #[prost(message, tag = "23")]
        UintList(super::UintList),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ConfigRecordValue {
    #[prost(
        oneof = "config_record_value::Value",
        tags = "1, 2, 3, 4, 5, 6, 21, 22, 23, 24, 25, 26"
    )]
    pub value: Option<config_record_value::Value>,
}

pub mod config_record_value {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(double, tag = "1")]
        Double(f64),
        #[prost(sint64, tag = "2")]
        Sint64(i64),
        #[prost(uint64, tag = "3")]
        Uint64(u64),
        #[prost(bool, tag = "4")]
        Bool(bool),
        #[prost(string, tag = "5")]
        String(String),
        #[prost(bytes = "vec", tag = "6")]
        Bytes(Vec<u8>),
        #[prost(message, tag = "21")]
        DoubleList(super::DoubleList),
        #[prost(message, tag = "22")]
        SintList(super::SintList),
        #[prost(message, tag = "23")]
        UintList(super::UintList),
        #[prost(message, tag = "24")]
        BoolList(super::BoolList),
        #[prost(message, tag = "25")]
        StringList(super::StringList),
        #[prost(message, tag = "26")]
        BytesList(super::BytesList),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ArrayRecordItem {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Array>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ArrayRecord {
    #[prost(message, repeated, tag = "1")]
    pub items: Vec<ArrayRecordItem>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricRecordItem {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<MetricRecordValue>,
}

/// The body of a deflated `MetricRecord` object.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricRecord {
    #[prost(message, repeated, tag = "1")]
    pub items: Vec<MetricRecordItem>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ConfigRecordItem {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<ConfigRecordValue>,
}

/// The body of a deflated `ConfigRecord` object.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ConfigRecord {
    #[prost(message, repeated, tag = "1")]
    pub items: Vec<ConfigRecordItem>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RecordDictItem {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(oneof = "record_dict_item::Value", tags = "2, 3, 4")]
    pub value: Option<record_dict_item::Value>,
}

pub mod record_dict_item {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(message, tag = "2")]
        ArrayRecord(super::ArrayRecord),
        #[prost(message, tag = "3")]
        MetricRecord(super::MetricRecord),
        #[prost(message, tag = "4")]
        ConfigRecord(super::ConfigRecord),
    }
}

/// In Fleet messages the content travels as objects; a pushed reply carries an empty one.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RecordDict {
    #[prost(message, repeated, tag = "1")]
    pub items: Vec<RecordDictItem>,
}

/// Serialises any of the messages above.
pub fn encode<M: prost::Message>(m: &M) -> Vec<u8> {
    m.encode_to_vec()
}

/// Parses `bytes` as `M`, naming `what` in the error.
pub fn decode<M: prost::Message + Default>(what: &str, bytes: &[u8]) -> crate::Result<M> {
    M::decode(bytes).map_err(|e| {
        crate::FlowerError::Protocol(format!("{what}: not a valid protobuf message ({e})"))
    })
}

// ---- run.proto (the fields a node reads) ----

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetRunRequest {
    #[prost(message, optional, tag = "1")]
    pub node: Option<Node>,
    #[prost(uint64, tag = "2")]
    pub run_id: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetRunResponse {
    #[prost(message, optional, tag = "1")]
    pub run: Option<Run>,
}

/// `Run` with only the fields a node needs (prost skips the others when decoding).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Run {
    #[prost(uint64, tag = "1")]
    pub run_id: u64,
    #[prost(message, optional, tag = "10")]
    pub status: Option<RunStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RunStatus {
    #[prost(string, tag = "1")]
    pub status: String,
    #[prost(string, tag = "2")]
    pub sub_status: String,
    #[prost(string, tag = "3")]
    pub details: String,
}
