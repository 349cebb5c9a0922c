//! Flower's records on the Rust side: `ArrayRecord` (named arrays), `MetricRecord` (numbers),
//! `ConfigRecord` (numbers, strings, bytes, booleans and lists of them) and the `RecordDict`
//! holding them by name, as a message's content. Order is kept everywhere (Flower's records
//! are ordered dicts, and strategies match arrays by key across replies).

use crate::npy::NdArray;
use crate::proto::{self, config_record_value as cv, metric_record_value as mv};

/// Named arrays, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArrayRecord(pub Vec<(String, NdArray)>);

/// A value of a `MetricRecord`.
#[derive(Clone, Debug, PartialEq)]
pub enum MetricValue {
    Float(f64),
    Int(i64),
    Uint(u64),
    FloatList(Vec<f64>),
    IntList(Vec<i64>),
    UintList(Vec<u64>),
}

/// A value of a `ConfigRecord`.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigValue {
    Float(f64),
    Int(i64),
    Uint(u64),
    Bool(bool),
    Str(String),
    Bytes(Vec<u8>),
    FloatList(Vec<f64>),
    IntList(Vec<i64>),
    UintList(Vec<u64>),
    BoolList(Vec<bool>),
    StrList(Vec<String>),
    BytesList(Vec<Vec<u8>>),
}

impl ConfigValue {
    /// The value as a number, if it is one (Flower sends Python ints and floats alike).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            ConfigValue::Float(v) => Some(v),
            ConfigValue::Int(v) => Some(v as f64),
            ConfigValue::Uint(v) => Some(v as f64),
            _ => None,
        }
    }
}

/// Named metrics, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricRecord(pub Vec<(String, MetricValue)>);

/// Named config values, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConfigRecord(pub Vec<(String, ConfigValue)>);

impl ConfigRecord {
    pub fn get(&self, key: &str) -> Option<&ConfigValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// One record of a [`RecordDict`].
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    Arrays(ArrayRecord),
    Metrics(MetricRecord),
    Config(ConfigRecord),
}

/// A message's content: records by name, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordDict(pub Vec<(String, Record)>);

impl RecordDict {
    /// The array records, with their names.
    pub fn array_records(&self) -> Vec<(&str, &ArrayRecord)> {
        self.0
            .iter()
            .filter_map(|(k, r)| {
                if let Record::Arrays(a) = r {
                    Some((k.as_str(), a))
                } else {
                    None
                }
            })
            .collect()
    }
    pub fn config_records(&self) -> Vec<(&str, &ConfigRecord)> {
        self.0
            .iter()
            .filter_map(|(k, r)| {
                if let Record::Config(c) = r {
                    Some((k.as_str(), c))
                } else {
                    None
                }
            })
            .collect()
    }
    pub fn metric_records(&self) -> Vec<(&str, &MetricRecord)> {
        self.0
            .iter()
            .filter_map(|(k, r)| {
                if let Record::Metrics(m) = r {
                    Some((k.as_str(), m))
                } else {
                    None
                }
            })
            .collect()
    }
}

pub fn metric_to_proto(r: &MetricRecord) -> proto::MetricRecord {
    let items = r
        .0
        .iter()
        .map(|(k, v)| {
            let value = match v.clone() {
                MetricValue::Float(x) => mv::Value::Double(x),
                MetricValue::Int(x) => mv::Value::Sint64(x),
                MetricValue::Uint(x) => mv::Value::Uint64(x),
                MetricValue::FloatList(vals) => mv::Value::DoubleList(proto::DoubleList { vals }),
                MetricValue::IntList(vals) => mv::Value::SintList(proto::SintList { vals }),
                MetricValue::UintList(vals) => mv::Value::UintList(proto::UintList { vals }),
            };
            proto::MetricRecordItem {
                key: k.clone(),
                value: Some(proto::MetricRecordValue { value: Some(value) }),
            }
        })
        .collect();
    proto::MetricRecord { items }
}

pub fn metric_from_proto(p: proto::MetricRecord) -> crate::Result<MetricRecord> {
    let mut out = Vec::with_capacity(p.items.len());
    for it in p.items {
        let v = match it.value.and_then(|v| v.value) {
            Some(mv::Value::Double(x)) => MetricValue::Float(x),
            Some(mv::Value::Sint64(x)) => MetricValue::Int(x),
            Some(mv::Value::Uint64(x)) => MetricValue::Uint(x),
            Some(mv::Value::DoubleList(l)) => MetricValue::FloatList(l.vals),
            Some(mv::Value::SintList(l)) => MetricValue::IntList(l.vals),
            Some(mv::Value::UintList(l)) => MetricValue::UintList(l.vals),
            None => {
                return Err(crate::FlowerError::Protocol(format!(
                    "MetricRecord value '{}' is empty",
                    it.key
                )))
            }
        };
        out.push((it.key, v));
    }
    Ok(MetricRecord(out))
}

pub fn config_to_proto(r: &ConfigRecord) -> proto::ConfigRecord {
    let items = r
        .0
        .iter()
        .map(|(k, v)| {
            let value = match v.clone() {
                ConfigValue::Float(x) => cv::Value::Double(x),
                ConfigValue::Int(x) => cv::Value::Sint64(x),
                ConfigValue::Uint(x) => cv::Value::Uint64(x),
                ConfigValue::Bool(x) => cv::Value::Bool(x),
                ConfigValue::Str(x) => cv::Value::String(x),
                ConfigValue::Bytes(x) => cv::Value::Bytes(x),
                ConfigValue::FloatList(vals) => cv::Value::DoubleList(proto::DoubleList { vals }),
                ConfigValue::IntList(vals) => cv::Value::SintList(proto::SintList { vals }),
                ConfigValue::UintList(vals) => cv::Value::UintList(proto::UintList { vals }),
                ConfigValue::BoolList(vals) => cv::Value::BoolList(proto::BoolList { vals }),
                ConfigValue::StrList(vals) => cv::Value::StringList(proto::StringList { vals }),
                ConfigValue::BytesList(vals) => cv::Value::BytesList(proto::BytesList { vals }),
            };
            proto::ConfigRecordItem {
                key: k.clone(),
                value: Some(proto::ConfigRecordValue { value: Some(value) }),
            }
        })
        .collect();
    proto::ConfigRecord { items }
}

pub fn config_from_proto(p: proto::ConfigRecord) -> crate::Result<ConfigRecord> {
    let mut out = Vec::with_capacity(p.items.len());
    for it in p.items {
        let v = match it.value.and_then(|v| v.value) {
            Some(cv::Value::Double(x)) => ConfigValue::Float(x),
            Some(cv::Value::Sint64(x)) => ConfigValue::Int(x),
            Some(cv::Value::Uint64(x)) => ConfigValue::Uint(x),
            Some(cv::Value::Bool(x)) => ConfigValue::Bool(x),
            Some(cv::Value::String(x)) => ConfigValue::Str(x),
            Some(cv::Value::Bytes(x)) => ConfigValue::Bytes(x),
            Some(cv::Value::DoubleList(l)) => ConfigValue::FloatList(l.vals),
            Some(cv::Value::SintList(l)) => ConfigValue::IntList(l.vals),
            Some(cv::Value::UintList(l)) => ConfigValue::UintList(l.vals),
            Some(cv::Value::BoolList(l)) => ConfigValue::BoolList(l.vals),
            Some(cv::Value::StringList(l)) => ConfigValue::StrList(l.vals),
            Some(cv::Value::BytesList(l)) => ConfigValue::BytesList(l.vals),
            None => {
                return Err(crate::FlowerError::Protocol(format!(
                    "ConfigRecord value '{}' is empty",
                    it.key
                )))
            }
        };
        out.push((it.key, v));
    }
    Ok(ConfigRecord(out))
}
