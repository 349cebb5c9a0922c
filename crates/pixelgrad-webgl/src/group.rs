//! How many outputs one grouped draw may have on this context. At a settle, pending
//! elementwise results whose output textures have one size are drawn together, one draw with
//! several render targets (`fusion.rs` draws them; `pixelgrad_core::fusion` chooses them).

use glow::HasContext;

use crate::dialect::GROUP_MAX_TARGETS;
use crate::options::WebGlReport;

/// Most outputs of one grouped draw on this context (below 2: no grouping).
pub(crate) fn max_targets(gl: &glow::Context, report: &WebGlReport) -> usize {
    // SAFETY: plain state query on the current context.
    let attachments = unsafe { gl.get_parameter_i32(glow::MAX_COLOR_ATTACHMENTS) }.max(0) as usize;
    (report.max_draw_buffers as usize).min(attachments).min(GROUP_MAX_TARGETS)
}
