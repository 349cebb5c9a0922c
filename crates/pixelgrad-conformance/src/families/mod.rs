//! One function per op family: `fn(&Device) -> Result<(), String>`, checking every case of the
//! family against the f64 reference and returning all failures at once.

mod elementwise;

pub use elementwise::{binary, fill, random, unary, where_};
