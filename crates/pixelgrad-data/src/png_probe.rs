//! The smallest valid PNG whose header declares any size: what a hostile file looks like to a
//! decoder (a 60-byte file claiming millions of pixels). The decoder-cap tests of this crate
//! and of the CLI build their inputs with it.

/// The CRC-32 (ISO-HDLC) that PNG chunks carry.
fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
        }
    }
    !c
}

/// A 60-byte PNG whose `IHDR` declares `width x height` pixels of 8-bit colour type `color`
/// (0 grey, 2 RGB, 4 grey + alpha, 6 RGBA), followed by one empty `IDAT` and `IEND`. Valid
/// chunks and CRCs, so a decoder gets past the header and has to decide from it.
#[doc(hidden)]
pub fn png_claiming(width: u32, height: u32, color: u8) -> Vec<u8> {
    let chunk = |kind: &[u8], body: &[u8]| -> Vec<u8> {
        let mut v = (body.len() as u32).to_be_bytes().to_vec();
        let typed: Vec<u8> = kind.iter().chain(body).copied().collect();
        v.extend(&typed);
        v.extend(crc32(&typed).to_be_bytes());
        v
    };
    let mut ihdr = Vec::new();
    ihdr.extend(width.to_be_bytes());
    ihdr.extend(height.to_be_bytes());
    ihdr.extend([8, color, 0, 0, 0]);
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend(chunk(b"IHDR", &ihdr));
    bytes.extend(chunk(b"IDAT", &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]));
    bytes.extend(chunk(b"IEND", &[]));
    bytes
}
