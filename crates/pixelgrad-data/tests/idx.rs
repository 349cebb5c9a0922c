//! IDX loading: round trips through files (gzip and raw), error messages, and the real MNIST
//! files when `../shared/data/mnist` is present.

mod common;

use common::{gzip, shared_data, TempDir};
use pixelgrad_data::*;

/// A tiny MNIST-layout set: `n` images of 3x2 with pixel `i*6+k` = `(i * 6 + k) * 7 % 256`.
fn fixture(n: usize) -> (Vec<u8>, Vec<u32>) {
    let px = (0..n * 6).map(|v| (v * 7 % 256) as u8).collect();
    let labels = (0..n as u32).map(|v| v % 4).collect();
    (px, labels)
}

fn write_dir(dir: &TempDir, gz: bool, n_train: usize, n_test: usize) {
    for (prefix, n) in [("train", n_train), ("t10k", n_test)] {
        let (px, labels) = fixture(n);
        let img = encode_idx_images(&px, n, 3, 2).unwrap();
        let lab = encode_idx_labels(&labels).unwrap();
        let (img, lab, ext) = if gz {
            (gzip(&img), gzip(&lab), ".gz")
        } else {
            (img, lab, "")
        };
        dir.write(&format!("{prefix}-images-idx3-ubyte{ext}"), &img);
        dir.write(&format!("{prefix}-labels-idx1-ubyte{ext}"), &lab);
    }
}

#[test]
fn round_trip_gzip_and_raw() {
    for gz in [true, false] {
        let dir = TempDir::new(if gz { "idx-gz" } else { "idx-raw" });
        write_dir(&dir, gz, 5, 3);
        let split = load_idx_dir(dir.path()).unwrap();
        assert_eq!(split.train.len(), 5);
        assert_eq!(split.test.len(), 3);
        assert_eq!(split.train.shape(), [1, 3, 2]);
        assert_eq!(split.train.classes(), 4);
        let (px, labels) = fixture(5);
        assert_eq!(split.train.labels(), &labels[..]);
        for (got, want) in split.train.images().iter().zip(&px) {
            assert_eq!(*got, f32::from(*want) / 255.0);
        }
        assert!(split.test.name().ends_with("-test"));
    }
}

#[test]
fn compression_detected_by_content_not_name() {
    let dir = TempDir::new("idx-names");
    let (px, labels) = fixture(2);
    // Raw bytes under a .gz name, gzip bytes under a plain name.
    let a = dir.write("a.gz", &encode_idx_images(&px, 2, 3, 2).unwrap());
    let b = dir.write("b", &gzip(&encode_idx_labels(&labels).unwrap()));
    assert_eq!(read_idx_images(&a).unwrap().n, 2);
    assert_eq!(read_idx_labels(&b).unwrap(), labels);
}

#[test]
fn truncated_labels_message() {
    let dir = TempDir::new("idx-trunc");
    let mut lab = encode_idx_labels(&[1; 10]).unwrap();
    lab.truncate(8 + 9);
    let p = dir.write("t10k-labels-idx1-ubyte.gz", &gzip(&lab));
    let msg = read_idx_labels(&p).unwrap_err().to_string();
    assert_eq!(
        msg,
        "t10k-labels-idx1-ubyte.gz: truncated: header says 10 labels, file has 9"
    );
}

#[test]
fn truncated_images_and_gzip_stream() {
    let dir = TempDir::new("idx-trunc2");
    let (px, _) = fixture(4);
    let mut img = encode_idx_images(&px, 4, 3, 2).unwrap();
    img.truncate(16 + 13);
    let p = dir.write("imgs", &img);
    let msg = read_idx_images(&p).unwrap_err().to_string();
    assert!(
        msg.starts_with(
            "imgs: truncated: header says 4 images of 3x2 (24 pixel bytes), file has 13"
        ),
        "{msg}"
    );

    // A gzip stream cut in half: an error naming the file, not a panic or short data.
    let big: Vec<u8> = (0..6 * 4000u32)
        .map(|v| (v.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let z = gzip(&encode_idx_images(&big, 4000, 6, 1).unwrap());
    let p = dir.write("cut.gz", &z[..z.len() / 2]);
    let msg = read_idx_images(&p).unwrap_err().to_string();
    assert!(msg.starts_with("cut.gz: "), "{msg}");
    assert!(
        msg.contains("truncated") || msg.contains("corrupt"),
        "{msg}"
    );
}

#[test]
fn bad_magic_and_swapped_files() {
    let dir = TempDir::new("idx-magic");
    let p = dir.write("junk", b"PK\x03\x04 definitely not idx");
    let msg = read_idx_images(&p).unwrap_err().to_string();
    assert!(
        msg.starts_with("junk: bad magic number 0x504b0304, expected 0x00000803"),
        "{msg}"
    );
    assert!(msg.contains("not an IDX file"), "{msg}");

    let (px, _) = fixture(1);
    let p = dir.write("img", &encode_idx_images(&px, 1, 3, 2).unwrap());
    let msg = read_idx_labels(&p).unwrap_err().to_string();
    assert!(msg.contains("expected 0x00000801"), "{msg}");
    assert!(msg.contains("IDX image file"), "{msg}");

    let p = dir.write("empty", b"");
    let msg = read_idx_labels(&p).unwrap_err().to_string();
    assert!(msg.starts_with("empty: truncated"), "{msg}");
}

#[test]
fn dir_errors() {
    let dir = TempDir::new("idx-dir");
    write_dir(&dir, true, 5, 3);
    // Label count disagrees with image count.
    dir.write(
        "t10k-labels-idx1-ubyte.gz",
        &gzip(&encode_idx_labels(&[0, 1]).unwrap()),
    );
    let msg = load_idx_dir(dir.path()).unwrap_err().to_string();
    assert_eq!(
        msg,
        "t10k-images-idx3-ubyte.gz vs t10k-labels-idx1-ubyte.gz: 3 images but 2 labels"
    );
    // A missing file is named.
    std::fs::remove_file(dir.path().join("t10k-labels-idx1-ubyte.gz")).unwrap();
    let msg = load_idx_dir(dir.path()).unwrap_err().to_string();
    assert!(
        msg.contains("t10k-labels-idx1-ubyte[.gz]: not found"),
        "{msg}"
    );
    // A missing folder too.
    let msg = load_idx_dir(dir.path().join("nope"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("nope: not found"), "{msg}");
}

#[test]
fn real_mnist_test_set() {
    let Some(dir) = shared_data("mnist") else {
        return;
    };
    let images = read_idx_images(dir.join("t10k-images-idx3-ubyte.gz")).unwrap();
    let labels = read_idx_labels(dir.join("t10k-labels-idx1-ubyte.gz")).unwrap();
    assert_eq!((images.n, images.rows, images.cols), (10_000, 28, 28));
    assert_eq!(labels.len(), 10_000);
    assert_eq!(labels[0], 7); // the well-known first test digit
    assert_eq!(labels[1], 2);
    assert!(images.pixels.iter().all(|v| (0.0..=1.0).contains(v)));
    let mut hist = [0usize; 10];
    labels.iter().for_each(|&l| hist[l as usize] += 1);
    assert_eq!(
        hist,
        [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    );
    // Mean pixel of the MNIST test set is about 0.1325.
    let mean =
        images.pixels.iter().map(|&v| f64::from(v)).sum::<f64>() / images.pixels.len() as f64;
    assert!((mean - 0.1325).abs() < 0.001, "{mean}");
}

#[test]
fn real_mnist_dir() {
    let Some(dir) = shared_data("mnist") else {
        return;
    };
    let split = load_idx_dir(&dir).unwrap();
    assert_eq!((split.train.len(), split.test.len()), (60_000, 10_000));
    assert_eq!(split.train.shape(), [1, 28, 28]);
    assert_eq!(split.train.classes(), 10);
    assert_eq!(split.train.label(0), Some(5)); // the well-known first training digit
    assert_eq!(split.test.label(0), Some(7));
    assert_eq!(split.train.name(), "mnist-train");
}
