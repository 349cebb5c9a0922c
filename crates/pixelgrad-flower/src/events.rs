//! What a node reports as it goes ([`Event`]), for logs, the CLI's JSON and the browser's
//! `onRound` / `onEvent`.

use crate::learner::{EvalStats, FitStats};
use crate::records::ArrayRecord;

/// Progress of the node.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Connected {
        node_id: u64,
    },
    /// A message arrived (`kind` = `train` / `evaluate` / ...), with its payload size; `stage`
    /// is the SecAgg+ stage of a train message that has one.
    Received {
        round: u64,
        kind: String,
        bytes: u64,
        stage: Option<String>,
    },
    Trained {
        round: u64,
        stats: FitStats,
        update_norm: f64,
        clipped_to: Option<f64>,
        noise_std: Option<f64>,
        seconds: f64,
        /// The update went out masked (SecAgg+).
        secagg: bool,
        /// Cumulative ε after this round at `delta` (with DP); `epsilon_own` counts only the
        /// node's own noise (differs under distributed DP).
        epsilon: Option<f64>,
        epsilon_own: Option<f64>,
        delta: Option<f64>,
    },
    /// A SecAgg+ stage computed (`seconds` of the node's own work: keys, shares, masking,
    /// not the training).
    SecAggStage {
        round: u64,
        stage: String,
        seconds: f64,
    },
    /// The global model evaluated locally; `arrays` are the global parameters it received;
    /// `shared`: whether the result was sent to the server.
    Evaluated {
        round: u64,
        stats: EvalStats,
        arrays: ArrayRecord,
        shared: bool,
    },
    /// A reply was pushed; `bytes` = its objects.
    Replied {
        round: u64,
        kind: String,
        bytes: u64,
        stage: Option<String>,
    },
    /// An error reply was pushed (a round refused or failed).
    Failed {
        round: u64,
        reason: String,
    },
    /// A poll found no message (lets the caller stop an idle node).
    Waiting,
    Finished {
        rounds: u64,
    },
}
