//! How a backend lays one tensor out in device memory: the row of the layout table the WebGL
//! article tells you to keep (texture or buffer size, what is really used, bytes), returned by
//! [`crate::Backend::describe_storage`].

/// One tensor's memory on its backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageLayout {
    /// What holds the elements: `texture` (WebGL), `buffer` (WebGPU) or `host` (CPU).
    pub container: &'static str,
    /// Texture width and height in texels; for a buffer, its size in elements by 1.
    pub width: u64,
    pub height: u64,
    /// Texel (or element slot) format, e.g. `RGBA32F`, `f32`, `f64`.
    pub format: String,
    /// Texels (texture) or elements (buffer, host) holding data; the rest is padding.
    pub used: u64,
    /// Texels or element slots allocated (`width * height` for a texture).
    pub allocated: u64,
    /// How elements map onto the memory, e.g. `row-major fold, 4 elements per texel`.
    pub layout: String,
    /// Bytes allocated for the tensor (pool size classes and texture padding included).
    pub bytes: u64,
}
