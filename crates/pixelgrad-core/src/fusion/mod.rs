//! One fusion layer for every backend. A fusing backend does not run an elementwise op, a
//! matmul or a reduction when called: it hands the op to this layer, which returns pending
//! storage ([`Storage::Pending`]) and decides when and how it runs:
//!
//! - elementwise chains compose into one kernel ([`inline`], over `crate::kernel::fuse`),
//!   within one *generation* ([`FusionState`]);
//! - a matmul waits for the first elementwise result of its shape computed from it, and runs
//!   it as its epilogue ([`epilogue`]); a reduction reads a pending elementwise input as its
//!   prologue, merges with a second sum or folds into the matmul it sums ([`defer`]);
//! - a value is computed when something needs it ([`realise()`]: a non-fused op, a read), or at
//!   a flush or step boundary ([`settle()`]), oldest first, grouped where the backend groups.
//!
//! The backend implements [`FusionDevice`] (run a map, a matmul with an optional epilogue, a
//! reduction with an optional prologue, a group; report its limits). This module never names
//! a backend; backends call it.

pub mod defer;
pub mod device;
pub mod epilogue;
pub mod inline;
pub mod realise;
pub mod settle;
pub mod state;
pub mod storage;
#[cfg(test)]
mod tests;

pub use defer::{defer_map, defer_matmul, len_of, reduce};
pub use device::{Epilogue, FusionDevice, Limits, ReduceAt, ReduceInput};
pub use realise::realise;
pub use settle::settle;
pub use state::FusionState;
pub use storage::{MatmulWork, PendingValue, ReduceSource, ReduceWork, Storage, WeakStorage, Work};
