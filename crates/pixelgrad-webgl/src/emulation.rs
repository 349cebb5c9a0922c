//! What the test emulation of low-end devices (`WebGlOptions::emulate_precision`,
//! `WebGlOptions::emulate_no_highp`) changes in what the capability checks see and report, for
//! both the WebGL2 (`caps`) and the WebGL1 (`legacy`) measurement.

use crate::options::{PrecisionFormat, WebGlOptions};

/// The fragment stage's `highp float` as the device reports it, or as a device without highp
/// reports it (all zeros) under [`WebGlOptions::emulate_no_highp`].
pub(crate) fn reported_highp(highp: Option<glow::ShaderPrecisionFormat>, opts: &WebGlOptions) -> Option<PrecisionFormat> {
    if opts.emulate_no_highp {
        return Some(PrecisionFormat { range_max: 0, precision: 0 });
    }
    highp.map(|p| PrecisionFormat { range_max: p.range_max, precision: p.precision })
}

/// The report's line for a precision emulation (test mode), if one is on.
pub(crate) fn emulation_warning(opts: &WebGlOptions) -> Option<String> {
    opts.emulate_precision.map(|p| {
        format!(
            "precision emulation ({}): every value the fragment programs compute and write is rounded \
             to half precision, as on a device computing in mediump (a test mode)",
            p.as_str()
        )
    })
}
