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

use std::borrow::Cow;

use serde::Serialize;

/// Mantissa bits (explicit fraction bits, as GL's `getShaderPrecisionFormat` counts them) of an
/// IEEE f32: what CPU and WebGPU tensors keep, and WebGL's RGBA32F textures.
pub const F32_MANTISSA_BITS: u8 = 23;
/// Mantissa bits of an IEEE half (RGBA16F textures, a 16-bit mediump, the half emulation).
pub const HALF_MANTISSA_BITS: u8 = 10;

/// How a backend computes f32 arithmetic: on the CPU or in WGSL (`f32`), or in a WebGL
/// fragment shader's `highp`, `mediump` or the test emulation of half arithmetic. Serialises
/// in kebab case (`"f32"`, `"highp"`, `"mediump"`, `"emulated-half"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arithmetic {
    F32,
    Highp,
    Mediump,
    EmulatedHalf,
}

impl Arithmetic {
    /// The name it serialises as (`"f32"`, `"highp"`, `"mediump"`, `"emulated-half"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Arithmetic::F32 => "f32",
            Arithmetic::Highp => "highp",
            Arithmetic::Mediump => "mediump",
            Arithmetic::EmulatedHalf => "emulated-half",
        }
    }
}

/// Whether training on a backend is expected to be reliable, decided by
/// [`Caps::training_verdict`] from the measured precisions. Serialises in kebab case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Training {
    /// Full f32 storage and arithmetic: training and inference as on the CPU.
    Reliable,
    /// Values keep about half precision (at least [`HALF_MANTISSA_BITS`]) in storage or
    /// arithmetic: training works through the half-precision measures (`pixelgrad_nn`'s
    /// `optim::half` update rules, which the optimizers switch on where `stores_halves`
    /// measures it, loss scaling for mixed precision, and `fit`'s precision check against a
    /// reference device); inference loses ~3 decimal digits.
    ReliableWithHalfMeasures,
    /// Storage or arithmetic keeps fewer mantissa bits than a half: gradients and updates are
    /// lost below the rounding, so only inference is expected to work.
    InferenceOnly,
}

impl Training {
    /// The name it serialises as (`"reliable"`, `"reliable-with-half-measures"`,
    /// `"inference-only"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Training::Reliable => "reliable",
            Training::ReliableWithHalfMeasures => "reliable-with-half-measures",
            Training::InferenceOnly => "inference-only",
        }
    }
}

/// The capabilities of one backend, measured when it starts. Serialises with camelCase names
/// (`{"conv": true, "int8Storage": true, ...}`) for the CLI and the JS runtime report.
///
/// [`Caps::default`] ([`Caps::F32_ONLY`]) is a backend that computes in f32 and nothing else:
/// no single-op convolution, no 8-bit or f16 storage, full precision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
    /// Mantissa bits a stored f32 tensor keeps, measured where it can differ: WebGL uploads
    /// `1 + 2^-k` (k = 1..=23) into a tensor texture and counts the leading values that read
    /// back exactly (23 with RGBA32F, 10 with RGBA16F). CPU and WebGPU store IEEE f32:
    /// [`F32_MANTISSA_BITS`].
    pub storage_mantissa_bits: u8,
    /// How the backend computes f32 arithmetic.
    pub arithmetic: Arithmetic,
    /// Mantissa bits of that arithmetic: 23 for `f32`; on WebGL as a start-up program measures
    /// them in the fragment stage (`fract(1 + 2^-k) / 2^-k` for k = 1..=23, the leading exact
    /// 1s; 10 under the half emulation or on a GPU whose `mediump` is 16-bit), not as the
    /// driver's `getShaderPrecisionFormat` states them (that statement stays in the WebGL
    /// report).
    pub arithmetic_mantissa_bits: u8,
    /// The largest texture side the backend accepts (WebGL's `MAX_TEXTURE_SIZE`, or the smaller
    /// one its options force; WebGPU's `maxTextureDimension2D`, which bounds image inputs), or
    /// `None` where there are no textures (CPU).
    pub max_texture_side: Option<u32>,
    /// The most elements one f32 tensor may hold on this backend, from its limits: WebGL
    /// `max_texture_side^2 * 4` (four per RGBA texel; at most 2^22 in the `webgl1` mode), WebGPU
    /// `min(maxStorageBufferBindingSize, maxBufferSize) / 4`, the CPU the largest allocation
    /// (`isize::MAX` bytes / 4). A [`crate::Device`]'s own [`crate::Limits`] may lower it.
    pub max_tensor_elements: u64,
    /// Whether training is expected to be reliable here ([`Caps::training_verdict`]).
    pub training: Training,
    /// Why [`Caps::training`] is what it is, naming the measurements it was decided from.
    pub training_reason: Cow<'static, str>,
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
        storage_mantissa_bits: F32_MANTISSA_BITS,
        arithmetic: Arithmetic::F32,
        arithmetic_mantissa_bits: F32_MANTISSA_BITS,
        max_texture_side: None,
        max_tensor_elements: isize::MAX as u64 / 4,
        training: Training::Reliable,
        training_reason: Cow::Borrowed(FULL_PRECISION),
    };

    /// The verdict on training from the measured mantissa bits of storage and arithmetic:
    /// either below [`HALF_MANTISSA_BITS`] -> [`Training::InferenceOnly`]; both at least
    /// [`F32_MANTISSA_BITS`] -> [`Training::Reliable`]; otherwise (half precision somewhere)
    /// -> [`Training::ReliableWithHalfMeasures`]. The reason names the numbers.
    pub fn training_verdict(
        storage_mantissa_bits: u8,
        arithmetic: Arithmetic,
        arithmetic_mantissa_bits: u8,
    ) -> (Training, Cow<'static, str>) {
        let (s, a) = (storage_mantissa_bits, arithmetic_mantissa_bits);
        let name = arithmetic.as_str().replace('-', " ");
        let measured = format!("stored values keep {s} mantissa bits, {name} arithmetic keeps {a}");
        if s < HALF_MANTISSA_BITS || a < HALF_MANTISSA_BITS {
            (
                Training::InferenceOnly,
                Cow::Owned(format!(
                    "{measured}: fewer than a half's {HALF_MANTISSA_BITS}, so small gradients and updates round away; \
                     expect inference only"
                )),
            )
        } else if s >= F32_MANTISSA_BITS && a >= F32_MANTISSA_BITS {
            if arithmetic == Arithmetic::F32 && s == F32_MANTISSA_BITS {
                (Training::Reliable, Cow::Borrowed(FULL_PRECISION))
            } else {
                (Training::Reliable, Cow::Owned(format!("{measured}: full f32 precision")))
            }
        } else {
            (
                Training::ReliableWithHalfMeasures,
                Cow::Owned(format!(
                    "{measured}: half precision, so training relies on the half-precision optimizer path \
                     (sqrt(v) state, compensated weights), loss scaling and fit's precision check \
                     against a reference device"
                )),
            )
        }
    }

    /// `self` with [`Caps::training`] and [`Caps::training_reason`] decided from its
    /// measured precisions ([`Caps::training_verdict`]).
    pub fn with_training_verdict(mut self) -> Caps {
        (self.training, self.training_reason) =
            Caps::training_verdict(self.storage_mantissa_bits, self.arithmetic, self.arithmetic_mantissa_bits);
        self
    }
}

/// [`Caps::training_reason`] of a backend storing and computing in IEEE f32.
const FULL_PRECISION: &str = "f32 storage and arithmetic (23 mantissa bits each): full precision";

impl Default for Caps {
    fn default() -> Self {
        Caps::F32_ONLY
    }
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
            "storageMantissaBits",
            "arithmetic",
            "arithmeticMantissaBits",
            "maxTextureSide",
            "maxTensorElements",
            "training",
            "trainingReason",
        ] {
            assert!(keys.contains(&k), "{k} missing from {v}");
        }
        assert_eq!(keys.len(), 17, "{v}");
        assert_eq!(v["arithmetic"], "f32");
        assert_eq!(v["training"], "reliable");
        assert!(v["maxTextureSide"].is_null());
        assert_eq!(v["int8Storage"], true);
        assert_eq!(v["shaderF16"], false);
        assert_eq!(v["reducedPrecision"], "mediump");
        assert!(v["int8Kernel"].is_null());
    }

    #[test]
    fn the_verdict_follows_the_measured_bits() {
        let (t, why) = Caps::training_verdict(23, Arithmetic::F32, 23);
        assert_eq!(t, Training::Reliable, "{why}");
        let (t, why) = Caps::training_verdict(23, Arithmetic::Highp, 23);
        assert_eq!(t, Training::Reliable, "{why}");
        assert!(why.contains("highp"), "{why}");
        // RGBA16F storage with highp arithmetic, and the half emulation.
        let (t, why) = Caps::training_verdict(10, Arithmetic::Highp, 23);
        assert_eq!(t, Training::ReliableWithHalfMeasures, "{why}");
        assert!(why.contains("10 mantissa bits"), "{why}");
        assert_eq!(Caps::training_verdict(10, Arithmetic::EmulatedHalf, 10).0, Training::ReliableWithHalfMeasures);
        assert_eq!(Caps::training_verdict(23, Arithmetic::Mediump, 10).0, Training::ReliableWithHalfMeasures);
        // Fewer bits than a half in either.
        let (t, why) = Caps::training_verdict(7, Arithmetic::Highp, 23);
        assert_eq!(t, Training::InferenceOnly, "{why}");
        assert!(why.contains("inference only"), "{why}");
        assert_eq!(Caps::training_verdict(23, Arithmetic::Mediump, 8).0, Training::InferenceOnly);
        let c = Caps { storage_mantissa_bits: 10, ..Caps::F32_ONLY }.with_training_verdict();
        assert_eq!(c.training, Training::ReliableWithHalfMeasures);
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["training"], "reliable-with-half-measures");
        for a in [Arithmetic::F32, Arithmetic::Highp, Arithmetic::Mediump, Arithmetic::EmulatedHalf] {
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
        }
        for t in [Training::Reliable, Training::ReliableWithHalfMeasures, Training::InferenceOnly] {
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
    }
}
