//! Decoder caps: a small file must not make a loader allocate what its header (or its
//! compression ratio) claims. A PNG header declaring a huge image and gzip bombs (an IDX file
//! inflating past the size its header declares, a stream past the absolute ceiling) are typed
//! errors, and no more than the cap is inflated.

mod common;

use common::{gzip, TempDir};
use pixelgrad_data::*;

/// The decoder `pixelgrad run` uses for PNG inputs had no cap: a 60-byte file declaring
/// 1,000,000 x 1,000,000 RGBA pixels asked for a 4 TB buffer (the process aborted). Now it is
/// refused from the header, before any allocation, like the grey decoder.
#[test]
fn rgba_decoder_refuses_a_header_claiming_a_huge_image() {
    let bytes = png_claiming(1_000_000, 1_000_000, 6);
    assert!(bytes.len() < 100);
    let e = decode_png_rgba8(&bytes, "huge.png").unwrap_err();
    assert!(matches!(e, DataError::Png { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with("huge.png: ") && msg.contains("1000000x1000000") && msg.contains("more than"), "{msg}");
    // exactly at the cap's edge: one pixel over is refused
    let side = 1u32 << 12; // 4096 x 8193 = 2^25 + 4096 pixels
    let e = decode_png_rgba8(&png_claiming(side, 2 * side + 1, 0), "over.png").unwrap_err().to_string();
    assert!(e.contains("more than"), "{e}");
    assert_eq!(MAX_PNG_PIXELS, 1 << 25);
}

#[test]
fn rgba_decoder_expands_every_colour_type() {
    let enc = |w: u32, h: u32, color: png::ColorType, depth: png::BitDepth, data: &[u8]| {
        let mut out = Vec::new();
        {
            let mut e = png::Encoder::new(&mut out, w, h);
            e.set_color(color);
            e.set_depth(depth);
            e.write_header().unwrap().write_image_data(data).unwrap();
        }
        out
    };
    let grey = enc(2, 1, png::ColorType::Grayscale, png::BitDepth::Eight, &[10, 200]);
    assert_eq!(decode_png_rgba8(&grey, "g").unwrap(), (vec![10, 10, 10, 255, 200, 200, 200, 255], 2, 1));
    let ga = enc(1, 1, png::ColorType::GrayscaleAlpha, png::BitDepth::Eight, &[7, 9]);
    assert_eq!(decode_png_rgba8(&ga, "ga").unwrap(), (vec![7, 7, 7, 9], 1, 1));
    let rgb16 = enc(1, 1, png::ColorType::Rgb, png::BitDepth::Sixteen, &[1, 2, 3, 4, 5, 6]);
    assert_eq!(decode_png_rgba8(&rgb16, "rgb16").unwrap(), (vec![1, 3, 5, 255], 1, 1));
    let rgba = enc(1, 2, png::ColorType::Rgba, png::BitDepth::Eight, &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(decode_png_rgba8(&rgba, "rgba").unwrap(), (vec![1, 2, 3, 4, 5, 6, 7, 8], 1, 2));
    assert!(matches!(decode_png_rgba8(b"not a png", "x.png"), Err(DataError::Png { .. })));
}

/// Gzip bomb, IDX flavour: 10 labels declared, 8 MiB of zeros inflated. The old loader
/// inflated all of it and then said "corrupt"; now inflation stops one byte past the 18 the
/// header declares, with a typed `TooLarge` error.
#[test]
fn idx_gzip_inflating_past_its_header_is_refused() {
    let mut labels = encode_idx_labels(&[1; 10]).unwrap();
    labels.extend(std::iter::repeat_n(0u8, 8 << 20));
    let bomb = gzip(&labels);
    assert!(bomb.len() < 64 << 10, "{} compressed bytes", bomb.len());
    let e = maybe_gunzip_idx(bomb.clone(), "bomb.gz").unwrap_err();
    let DataError::TooLarge { limit, .. } = &e else { panic!("expected TooLarge, got {e:?}") };
    assert_eq!(*limit, 18);
    assert!(e.to_string().contains("bomb.gz: too large") && e.to_string().contains("header declares"), "{e}");
    // and through the file loader
    let dir = TempDir::new("bomb");
    let p = dir.write("t10k-labels-idx1-ubyte.gz", &bomb);
    assert!(matches!(read_idx_labels(&p), Err(DataError::TooLarge { limit: 18, .. })));
    // exact size: fine
    let ok = gzip(&encode_idx_labels(&[1, 2, 3]).unwrap());
    assert_eq!(read_idx_labels(dir.write("ok.gz", &ok)).unwrap(), vec![1, 2, 3]);
}

/// An IDX header inside a tiny gzip that declares more than the absolute ceiling is refused
/// before inflating anything past the header.
#[test]
fn idx_header_declaring_more_than_the_ceiling_is_refused() {
    let mut hdr = vec![0, 0, 8, 3];
    for v in [60_000u32, 1000, 1000] {
        hdr.extend(v.to_be_bytes());
    }
    let e = maybe_gunzip_idx(gzip(&hdr), "big.gz").unwrap_err();
    assert!(matches!(e, DataError::TooLarge { limit: MAX_GUNZIP_BYTES, .. }), "{e:?}");
    assert!(e.to_string().contains("60000000016"), "{e}");
    // dimensions whose product overflows 64 bits
    let mut hdr = vec![0, 0, 8, 4];
    for _ in 0..4 {
        hdr.extend(u32::MAX.to_be_bytes());
    }
    assert!(matches!(maybe_gunzip_idx(gzip(&hdr), "x.gz"), Err(DataError::TooLarge { .. })));
}

/// Gzip bomb without a header to go by (CSV, the browser's `parseMnist`): a ~10 KiB stream of
/// concatenated members inflating to 8 MiB stops at the cap given, one byte past it.
#[test]
fn gzip_without_a_header_stops_at_the_cap() {
    let member = gzip(&vec![b'0'; 1 << 20]);
    let bomb: Vec<u8> = (0..8).flat_map(|_| member.iter().copied()).collect();
    assert!(bomb.len() < 64 << 10);
    assert_eq!(maybe_gunzip_limited(bomb.clone(), "b.gz", 8 << 20).unwrap().len(), 8 << 20);
    let e = maybe_gunzip_limited(bomb.clone(), "b.gz", (8 << 20) - 1).unwrap_err();
    assert!(matches!(e, DataError::TooLarge { limit, .. } if limit == (8 << 20) - 1), "{e:?}");
    // the default cap is the absolute ceiling
    assert_eq!(maybe_gunzip(bomb, "b.gz").unwrap().len(), 8 << 20);
    assert_eq!(MAX_GUNZIP_BYTES, 1 << 30);
    // raw bytes are never touched
    assert_eq!(maybe_gunzip_limited(b"abc".to_vec(), "r", 1).unwrap(), b"abc");
}
