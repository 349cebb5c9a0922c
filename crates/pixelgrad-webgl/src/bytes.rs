//! Byte views of the host buffers that uploads and readbacks hand to GL.

/// The bytes of an f32 buffer. Transfers go through f32 buffers (not `Vec<u8>`) because in the
/// browser glow views them as a `Float32Array`, which must start 4-byte aligned.
pub(crate) fn f32_bytes(v: &[f32]) -> &[u8] {
    // SAFETY: any f32 bit pattern is valid bytes; the length covers exactly the slice.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Mutable bytes of a u16 buffer (see [`f32_bytes`]).
pub(crate) fn u16_bytes_mut(v: &mut [u16]) -> &mut [u8] {
    // SAFETY: any byte pattern is a valid u16; the length covers exactly the slice.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Mutable bytes of an f32 buffer (see [`f32_bytes`]).
pub(crate) fn f32_bytes_mut(v: &mut [f32]) -> &mut [u8] {
    // SAFETY: any byte pattern is a valid f32; the length covers exactly the slice.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}
