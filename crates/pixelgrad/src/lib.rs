//! pixelgrad facade: depend on this crate.
pub use pixelgrad_core::*;
pub use pixelgrad_cpu as cpu;
pub use pixelgrad_data as data;
pub use pixelgrad_nn as nn;
