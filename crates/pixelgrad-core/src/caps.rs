//! [`Caps`]: what one backend can do, measured once when it starts and read by everything
//! above it ([`crate::Backend::caps`]): core's tensor constructors and checks, the layers, the
//! ONNX importer, the CLI's `pixelgrad backends` and the JS runtime's `rt.report.caps`.
//!
//! A backend fills its `Caps` when it is built (the CPU from constants, WebGPU from the
//! adapter's features and its options, WebGL from the context's extensions, precision formats,
//! texel format and emulation options) and never changes it afterwards: nothing a backend
//! measures at start-up changes while it lives. A device that changes (a lost WebGL context
//! or WebGPU device) comes back as a *new* backend with its own, freshly measured `Caps`; a
//! report that shows capabilities takes them again from the new backend (the JS runtime does
//! so on every recovery).

use serde::Serialize;

/// The capabilities of one backend, measured when it starts. Serialises with camelCase names
/// (`{"conv": true, "int8Storage": true, ...}`) for the CLI and the JS runtime report.
///
/// [`Caps::default`] ([`Caps::F32_ONLY`]) is a backend that computes in f32 and nothing else:
/// no single-op convolution, no 8-bit or f16 storage, full precision.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Caps {
    /// The backend runs [`crate::Op::Conv2d`] (a dense convolution as one op, which it may
    /// compute by a faster algorithm than the im2col + matmul pair it means). Where false,
    /// callers use the pair. The CPU: true (Winograd / im2col + GEMM); the GPU backends: false.
    pub conv: bool,
    /// The backend stores 8-bit tensors (one byte per element, or four per 32-bit word) and
    /// runs [`crate::Op::MatMulI8`] and [`crate::Op::Narrow8`] on them. Where false,
    /// [`crate::Tensor::from_i8`] and [`crate::Tensor::from_u8`] make ordinary f32 tensors of
    /// the same values (unless [`Caps::int8_storage`]). CPU, WebGPU, WebGL2: true; WebGL1: false.
    pub int8: bool,
    /// The backend stores 8-bit tensors and widens them ([`crate::Op::Widen`]), even where it
    /// has no 8-bit arithmetic ([`Caps::int8`] false: WebGL1's byte textures).
    /// [`crate::Tensor::from_i8`] / [`crate::Tensor::from_u8`] then keep one byte per element
    /// and callers widen before computing. True wherever [`Caps::int8`] is.
    pub int8_storage: bool,
    /// The kernel [`crate::Tensor::matmul_i8_packed`] runs on, for reports: WebGPU's
    /// `"dot4I8Packed"` (the adapter's WGSL offers `packed_4x8_integer_dot_product` and the
    /// options leave it on) or `"unpacked-i32"`, the CPU's `"cpu-i32"`; `None` where
    /// [`Caps::int8`] is false or the backend does not name its kernel (WebGL2).
    pub int8_kernel: Option<&'static str>,
    /// The backend stores half-precision tensors ([`crate::kernel::DType::F16`], two bytes per
    /// element, or two per 32-bit word) and runs [`crate::Op::Widen`] on them. Where false,
    /// [`crate::Tensor::from_f16`] makes an ordinary f32 tensor of the same (exactly widened)
    /// values. CPU, WebGPU, WebGL2: true; WebGL1: false.
    pub f16_storage: bool,
    /// Whether the device could do half-precision arithmetic in its shaders (WebGPU's
    /// `shader-f16` adapter feature): `Some(true)` / `Some(false)` on WebGPU, `None` where the
    /// question does not apply. pixelgrad's kernels compute in f32 unless asked otherwise
    /// (WebGPU's opt-in f16 products, [`Caps::f16_matmul_arithmetic`]); this is reported so
    /// users know what the hardware offers.
    pub shader_f16: Option<bool>,
    /// [`crate::Op::MatMul`] reads an f16-stored operand (A or B, not both) directly, with no
    /// [`crate::Op::Widen`] pass: the ONNX importer then hands f16 weights straight to its
    /// products. Where false, an f16 matmul input is a typed error and the weights must be
    /// widened first. WebGPU: true unless its options (or `PIXELGRAD_WGPU_NO_F16_MATMUL`)
    /// turn it off.
    pub f16_matmul: bool,
    /// The arithmetic of an [`crate::Op::MatMul`] on an f16 operand, for reports: WebGPU's
    /// `"f16 products (shader-f16)"` or `"f32 (f16 weights read directly)"`; `None` where
    /// [`Caps::f16_matmul`] is false.
    pub f16_matmul_arithmetic: Option<&'static str>,
    /// The backend runs [`crate::Op::NarrowF16`] (f32 to f16 storage, rounded to nearest even),
    /// on which mixed-precision training keeps its activations ([`crate::mixed_precision`]).
    /// Implies [`Caps::f16_storage`]. CPU, WebGPU: true; WebGL2 with true f32 (RGBA32F)
    /// textures: true; WebGL1 and WebGL's RGBA16F fallback: false.
    pub narrow_f16: bool,
    /// Why this device computes or stores f32 tensors below full precision (WebGL's RGBA16F
    /// texel format, mediump fragment shaders, a precision emulation), or `None` where it does
    /// not. Training on such a device first compares a few steps against a reference device
    /// (`pixelgrad_nn`'s precision check) instead of trusting it.
    pub reduced_precision: Option<String>,
}

impl Caps {
    /// A backend that computes in f32 at full precision and nothing else (also
    /// [`Caps::default`]): what [`crate::Backend::caps`] answers unless a backend says more.
    pub const F32_ONLY: Caps = Caps {
        conv: false,
        int8: false,
        int8_storage: false,
        int8_kernel: None,
        f16_storage: false,
        shader_f16: None,
        f16_matmul: false,
        f16_matmul_arithmetic: None,
        narrow_f16: false,
        reduced_precision: None,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_an_f32_only_backend() {
        let c = Caps::default();
        assert_eq!(c, Caps::F32_ONLY);
        assert!(!c.conv && !c.int8 && !c.int8_storage && !c.f16_storage && !c.f16_matmul && !c.narrow_f16);
        assert_eq!((c.int8_kernel, c.shader_f16, c.f16_matmul_arithmetic, c.reduced_precision), (None, None, None, None));
    }

    #[test]
    fn serialises_every_field_in_camel_case() {
        let c = Caps { int8_storage: true, shader_f16: Some(false), reduced_precision: Some("mediump".into()), ..Caps::default() };
        let v = serde_json::to_value(&c).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        for k in [
            "conv",
            "int8",
            "int8Storage",
            "int8Kernel",
            "f16Storage",
            "shaderF16",
            "f16Matmul",
            "f16MatmulArithmetic",
            "narrowF16",
            "reducedPrecision",
        ] {
            assert!(keys.contains(&k), "{k} missing from {v}");
        }
        assert_eq!(keys.len(), 10, "{v}");
        assert_eq!(v["int8Storage"], true);
        assert_eq!(v["shaderF16"], false);
        assert_eq!(v["reducedPrecision"], "mediump");
        assert!(v["int8Kernel"].is_null());
    }
}
