//! The two layouts a train or evaluate instruction (and its reply) can have in flwr 1.42:
//!
//! - the Message API's (`flwr.serverapp.strategy`): one `ArrayRecord` with the parameters by
//!   name, a `ConfigRecord` named `config`; replies `{"arrays": ArrayRecord, "metrics":
//!   MetricRecord}` with `num-examples` (train) or `{"metrics": ...}` (evaluate);
//! - the legacy one (`flwr.server.strategy` driven by `DefaultWorkflow`, which
//!   `SecAggPlusWorkflow` needs): `fitins.parameters` / `evaluateins.parameters` (arrays named
//!   "0", "1", ... whose `Array` objects carry no dtype or shape, only `np.save` bytes) and
//!   `fitins.config` / `evaluateins.config`; replies `fitres.parameters`, `fitres.num_examples`
//!   (MetricRecord `num_examples`), `fitres.metrics` (ConfigRecord) and `fitres.status`
//!   (ConfigRecord `code`, `message`), and for evaluate `evaluateres.loss`,
//!   `evaluateres.num_examples`, `evaluateres.metrics`, `evaluateres.status`
//!   (`flwr.compat.common.recorddict_compat`).

use crate::records::{
    ArrayRecord, ConfigRecord, ConfigValue, MetricRecord, MetricValue, Record, RecordDict,
};
use crate::secagg::RECORD_KEY_CONFIGS;
use crate::{FlowerError, Result};

/// Which layout an instruction came in (the reply uses the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    MessageApi,
    Legacy,
}

/// The parts of a train or evaluate instruction.
pub struct Instruction<'m> {
    pub layout: Layout,
    pub arrays: &'m ArrayRecord,
    pub config: ConfigRecord,
}

/// Reads the instruction `content` of `kind` (`train` / `evaluate`) in either layout.
pub fn instruction<'m>(content: &'m RecordDict, kind: &str) -> Result<Instruction<'m>> {
    let prefix = if kind == "evaluate" {
        "evaluateins"
    } else {
        "fitins"
    };
    let arrays = content.array_records();
    let configs = content.config_records();
    if let Some((_, a)) = arrays
        .iter()
        .find(|(k, _)| *k == format!("{prefix}.parameters"))
    {
        let config = configs
            .iter()
            .find(|(k, _)| *k == format!("{prefix}.config"))
            .map(|(_, c)| (*c).clone())
            .unwrap_or_default();
        return Ok(Instruction {
            layout: Layout::Legacy,
            arrays: a,
            config,
        });
    }
    match arrays.as_slice() {
        [(_, a)] => Ok(Instruction {
            layout: Layout::MessageApi,
            arrays: a,
            config: configs
                .iter()
                .find(|(k, _)| *k == "config")
                .or_else(|| configs.iter().find(|(k, _)| *k != RECORD_KEY_CONFIGS))
                .map(|(_, c)| (*c).clone())
                .unwrap_or_default(),
        }),
        other => Err(FlowerError::Protocol(format!(
            "a {kind} message must carry exactly one ArrayRecord, this one has {}",
            other.len()
        ))),
    }
}

fn status() -> ConfigRecord {
    ConfigRecord(vec![
        ("code".into(), ConfigValue::Int(0)),
        ("message".into(), ConfigValue::Str("Success".into())),
    ])
}

fn as_config(m: &MetricRecord) -> ConfigRecord {
    ConfigRecord(
        m.0.iter()
            .map(|(k, v)| {
                let c = match v {
                    MetricValue::Float(x) => ConfigValue::Float(*x),
                    MetricValue::Int(x) => ConfigValue::Int(*x),
                    MetricValue::Uint(x) => ConfigValue::Uint(*x),
                    MetricValue::FloatList(x) => ConfigValue::FloatList(x.clone()),
                    MetricValue::IntList(x) => ConfigValue::IntList(x.clone()),
                    MetricValue::UintList(x) => ConfigValue::UintList(x.clone()),
                };
                (k.clone(), c)
            })
            .collect(),
    )
}

/// A train reply: `arrays` (empty under SecAgg+, whose vector travels in its own record),
/// the example count the strategy weighs with, and further `metrics`.
pub fn fit_reply(
    layout: Layout,
    arrays: ArrayRecord,
    num_examples: i64,
    metrics: MetricRecord,
) -> RecordDict {
    match layout {
        Layout::MessageApi => {
            let mut m = vec![("num-examples".to_string(), MetricValue::Int(num_examples))];
            m.extend(metrics.0);
            RecordDict(vec![
                ("arrays".into(), Record::Arrays(arrays)),
                ("metrics".into(), Record::Metrics(MetricRecord(m))),
            ])
        }
        Layout::Legacy => RecordDict(vec![
            ("fitres.metrics".into(), Record::Config(as_config(&metrics))),
            (
                "fitres.num_examples".into(),
                Record::Metrics(MetricRecord(vec![(
                    "num_examples".into(),
                    MetricValue::Int(num_examples),
                )])),
            ),
            ("fitres.parameters".into(), Record::Arrays(arrays)),
            ("fitres.status".into(), Record::Config(status())),
        ]),
    }
}

/// An evaluate reply.
pub fn evaluate_reply(
    layout: Layout,
    num_examples: i64,
    loss: f64,
    metrics: MetricRecord,
) -> RecordDict {
    match layout {
        Layout::MessageApi => {
            let mut m = vec![
                ("num-examples".to_string(), MetricValue::Int(num_examples)),
                ("loss".to_string(), MetricValue::Float(loss)),
            ];
            m.extend(metrics.0);
            RecordDict(vec![("metrics".into(), Record::Metrics(MetricRecord(m)))])
        }
        Layout::Legacy => RecordDict(vec![
            (
                "evaluateres.loss".into(),
                Record::Metrics(MetricRecord(vec![(
                    "loss".into(),
                    MetricValue::Float(loss),
                )])),
            ),
            (
                "evaluateres.num_examples".into(),
                Record::Metrics(MetricRecord(vec![(
                    "num_examples".into(),
                    MetricValue::Int(num_examples),
                )])),
            ),
            (
                "evaluateres.metrics".into(),
                Record::Config(as_config(&metrics)),
            ),
            ("evaluateres.status".into(), Record::Config(status())),
        ]),
    }
}

/// Arrays named as a legacy reply names them ("0", "1", ...).
pub fn legacy_names(arrays: ArrayRecord) -> ArrayRecord {
    ArrayRecord(
        arrays
            .0
            .into_iter()
            .enumerate()
            .map(|(i, (_, a))| (i.to_string(), a))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npy::NdArray;

    #[test]
    fn both_layouts() {
        let a = ArrayRecord(vec![(
            "0".into(),
            NdArray::new(vec![1], vec![1.0]).unwrap(),
        )]);
        let legacy = RecordDict(vec![
            ("fitins.parameters".into(), Record::Arrays(a.clone())),
            (
                "fitins.config".into(),
                Record::Config(ConfigRecord(vec![("lr".into(), ConfigValue::Float(0.1))])),
            ),
            (
                RECORD_KEY_CONFIGS.into(),
                Record::Config(ConfigRecord::default()),
            ),
        ]);
        let i = instruction(&legacy, "train").unwrap();
        assert_eq!(i.layout, Layout::Legacy);
        assert_eq!(i.config.get("lr"), Some(&ConfigValue::Float(0.1)));
        let api = RecordDict(vec![
            ("arrays".into(), Record::Arrays(a.clone())),
            (
                RECORD_KEY_CONFIGS.into(),
                Record::Config(ConfigRecord::default()),
            ),
            (
                "config".into(),
                Record::Config(ConfigRecord(vec![("lr".into(), ConfigValue::Float(0.2))])),
            ),
        ]);
        let i = instruction(&api, "train").unwrap();
        assert_eq!(i.layout, Layout::MessageApi);
        assert_eq!(i.config.get("lr"), Some(&ConfigValue::Float(0.2)));
        let two = RecordDict(vec![
            ("a".into(), Record::Arrays(a.clone())),
            ("b".into(), Record::Arrays(a)),
        ]);
        assert!(instruction(&two, "train").is_err());
        let r = fit_reply(
            Layout::Legacy,
            ArrayRecord::default(),
            5,
            MetricRecord::default(),
        );
        assert_eq!(r.metric_records()[0].0, "fitres.num_examples");
        assert_eq!(r.config_records().len(), 2);
    }
}
