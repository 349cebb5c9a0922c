//! What the two modes can do, as named differences: one [`Features`] row per thing WebGL2 with
//! GLSL ES 3.00 has and the `webgl1` mode (WebGL1, GLSL ES 1.00) lacks, each with why, and the
//! one table of both columns, [`Features::of`]. The device holds its mode's column (derived once
//! at start-up from the [`GlslVersion`]); every op, upload and launch tests the row it needs
//! (`sh.features.integer_textures`), never the version itself, except to pick the version's
//! program sources. How the two versions *spell* a program is [`crate::glsl::Table`]'s; a row
//! that is also a spelling (the constant loop bounds, the float indices) is read from it, so
//! each difference is defined once.

use crate::glsl::GlslVersion;

/// The differences between the modes (`true`: this mode has it). Rows, each with why ES 1.00 /
/// WebGL1 lacks it:
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Features {
    /// The GLSL version of the mode's programs (which sources `program.rs` compiles).
    pub version: GlslVersion,
    /// Integer textures (`RGBA8UI`, `RGBA16UI`, `R8UI`) read through `usampler2D` /
    /// `isampler2D`: narrow storage (f16 tensors, 8-bit arithmetic, packed weights, YUV
    /// samples, bytes out of `fromPixels`). WebGL1 has no integer texture formats and
    /// GLSL ES 1.00 no integer samplers: 8-bit tensors live in byte (`RGBA`/`UNSIGNED_BYTE`)
    /// textures that can only be widened, and f16 is refused.
    pub integer_textures: bool,
    /// `uint` / `uvec2` and the bitwise operators: Philox random numbers on the GPU.
    /// GLSL ES 1.00 has neither, so random numbers are drawn on the host and uploaded.
    pub unsigned_integers: bool,
    /// Every loop's bound is a constant (`MAX_LOOP`, `MAX_WINDOW`, the reductions' `GROUP`)
    /// with an early `break`: GLSL ES 1.00 Appendix A allows only constant-bounded loops, so
    /// longer trip counts are refused with a `Limit` and reductions take fixed groups.
    /// ([`crate::glsl::Table::constant_loops`].)
    pub constant_loop_bounds: bool,
    /// Indices and int uniforms are floats holding whole numbers: GLSL ES 1.00 guarantees
    /// only 16-bit ints, so the launcher sends every int uniform as a float and each sampler's
    /// size with it. ([`crate::glsl::Table::int_ty`].)
    pub float_indices: bool,
    /// Most elements of one tensor, where indices are floats: whole numbers are exact in f32
    /// below 2^24, which every index, stride product and intermediate stays below for tensors
    /// of at most [`crate::gl1::MAX_ELEMENTS`] (2^22) elements. `None`: the texture size limits.
    pub max_elements: Option<usize>,
    /// Programs computing a whole texel (4 outputs) per fragment with integer texel
    /// arithmetic (`>> 2`, `%`): `PG_COMPUTE4` programs (view's rows), the packed matmul
    /// configs, `fromPixels`' per-pixel rows. Written in GLSL ES 3.00 only: ES 1.00's programs
    /// compute one element per `compute` call (its matmul is the rendered product program).
    pub texel_programs: bool,
    /// Texture widths rounded to multiples of 4 from 8 texels on (the block matmul reads 4
    /// neighbouring texels and must not straddle a row). Not in ES 1.00: it has no block
    /// matmul and its float fragment coordinates are exact only for sides up to 1025, which
    /// rounding could pass (`crate::layout`).
    pub aligned_widths: bool,
    /// Several render targets per draw (`layout(location = n) out`): the 4-target block
    /// matmul, grouped maps and matmul epilogues. GLSL ES 1.00 writes `gl_FragColor` only
    /// (WebGL1 has several only through `WEBGL_draw_buffers`, which this mode does not use).
    pub multiple_render_targets: bool,
    /// The image programs (`fromPixels`, the heatmap) and their `RGBA8` source textures: they
    /// index pixels with `ivec2(gl_FragCoord.xy)` and int arithmetic and were written in
    /// GLSL ES 3.00 only (with `texStorage2D`); the `webgl1` mode refuses them.
    pub image_programs: bool,
    /// `texStorage2D` with sized internal formats. WebGL1 allocates with `texImage2D` and
    /// unsized formats (`legacy.rs`), whatever context the mode runs in.
    pub texture_storage: bool,
    /// A half-float texture takes `FLOAT` uploads (WebGL2 converts). WebGL1's
    /// `OES_texture_half_float` takes only `HALF_FLOAT_OES` data, so the host converts.
    pub float_uploads_to_half: bool,
    /// Pixel-pack buffers and fences: reads that do not block. WebGL1 has neither;
    /// `readPixels` is its only read.
    pub async_readback: bool,
    /// `blitFramebuffer`: tensors copied into and out of a page's textures. WebGL1 has none.
    pub texture_blit: bool,
    /// `gl_VertexID` and vertex array objects: the full-screen triangle needs no buffer.
    /// GLSL ES 1.00 has no `gl_VertexID` and WebGL1 VAOs only through an extension: a
    /// 3-vertex buffer at attribute 0, its location bound at link.
    pub vertex_id: bool,
    /// A framebuffer complete with a float texture is trusted to keep floats
    /// (`EXT_color_buffer_float`). WebGL1's float rendering is `WEBGL_color_buffer_float`'s
    /// promise, which some drivers enable implicitly and break: start-up renders and reads back.
    pub trusted_float_targets: bool,
}

impl Features {
    /// The table: the column of each version.
    pub fn of(version: GlslVersion) -> Features {
        let t = version.table();
        let es300 = version == GlslVersion::Es300;
        let float_indices = t.int_ty == "float";
        Features {
            version,
            integer_textures: es300,
            unsigned_integers: es300,
            constant_loop_bounds: t.constant_loops,
            float_indices,
            max_elements: float_indices.then_some(crate::gl1::MAX_ELEMENTS),
            texel_programs: es300,
            aligned_widths: es300,
            multiple_render_targets: es300,
            image_programs: es300,
            texture_storage: es300,
            float_uploads_to_half: es300,
            async_readback: es300,
            texture_blit: es300,
            vertex_id: es300,
            trusted_float_targets: es300,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn es300_has_every_row_and_es100_none() {
        let new = Features::of(GlslVersion::Es300);
        let old = Features::of(GlslVersion::Es100);
        // A row ES 1.00 has would be no difference: every bool row is true in ES 3.00 only.
        let rows = |f: Features| {
            [
                f.integer_textures,
                f.unsigned_integers,
                !f.constant_loop_bounds,
                !f.float_indices,
                f.max_elements.is_none(),
                f.texel_programs,
                f.aligned_widths,
                f.multiple_render_targets,
                f.image_programs,
                f.texture_storage,
                f.float_uploads_to_half,
                f.async_readback,
                f.texture_blit,
                f.vertex_id,
                f.trusted_float_targets,
            ]
        };
        assert!(rows(new).iter().all(|&r| r), "{new:?}");
        assert!(rows(old).iter().all(|&r| !r), "{old:?}");
        assert_eq!(old.max_elements, Some(crate::gl1::MAX_ELEMENTS));
    }
}
