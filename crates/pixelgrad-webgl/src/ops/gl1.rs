//! The `webgl1` mode's checks of the GLSL ES 1.00 loops' constant bounds (its matmul is the
//! program rendered from the product's one definition, `matmul_rendered.rs`).

use pixelgrad_core::{Error, Result};

use crate::context::Shared;

/// In the `webgl1` mode, fails with [`Error::Limit`] (named `limit_name`) when a loop of `n` iterations
/// exceeds the constant bound `bound` its GLSL ES 1.00 program was written with.
pub(crate) fn loop_bound(sh: &Shared, op: &'static str, limit_name: &'static str, n: usize, bound: usize) -> Result<()> {
    if sh.features.constant_loop_bounds && n > bound {
        return Err(Error::Limit { op, backend: sh.name.clone(), limit_name, limit: bound as u64, requested: n as u64 });
    }
    Ok(())
}
