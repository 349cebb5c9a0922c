//! CSV files, the embedded digits set, splits and batches.

mod common;

use common::{gzip, shared_data, TempDir};
use pixelgrad_data::*;

#[test]
fn csv_file_plain_and_gzip() {
    let dir = TempDir::new("csv");
    let text = "a,b,c,d,e,f,label\n0,255,0,255,0,255,3\n255,0,255,0,255,0,1\n";
    for (name, bytes) in [
        ("x.csv", text.as_bytes().to_vec()),
        ("x.csv.gz", gzip(text.as_bytes())),
    ] {
        let p = dir.write(name, &bytes);
        let d = load_csv(&p, &CsvOptions::default()).unwrap();
        assert_eq!(d.name(), "x");
        assert_eq!(d.len(), 2);
        assert_eq!(d.shape(), [1, 1, 6]); // 6 is not a square
        assert_eq!(d.labels(), &[3, 1]);
        assert_eq!(d.classes(), 4);
        assert_eq!(d.image(1).unwrap(), &[1.0, 0.0, 1.0, 0.0, 1.0, 0.0]);
    }
}

#[test]
fn csv_error_names_file_line_column() {
    let dir = TempDir::new("csv-err");
    let p = dir.write("bad.csv", b"1,2,3,4,0\n1,2,3,4,1\n1,2,?,4,0\n");
    let msg = load_csv(&p, &CsvOptions::default())
        .unwrap_err()
        .to_string();
    assert_eq!(
        msg,
        "bad.csv: line 3, column 3: cannot parse \"?\" as a number"
    );

    let p = dir.write("short.csv", b"h1,h2,h3,h4,y\n1,2,3,4,0\n1,2,3,4\n");
    let msg = load_csv(&p, &CsvOptions::default())
        .unwrap_err()
        .to_string();
    assert_eq!(
        msg,
        "short.csv: line 3, column 5: expected 5 columns (as on line 2), found 4"
    );

    let opts = CsvOptions {
        classes: Some(2),
        ..Default::default()
    };
    let p = dir.write("cls.csv", b"1,2,3,4,0\n1,2,3,4,2\n");
    let msg = load_csv(&p, &opts).unwrap_err().to_string();
    assert_eq!(
        msg,
        "cls.csv: line 2, column 5: label 2 is not below classes = 2"
    );

    let msg = load_csv(dir.path().join("none.csv"), &opts)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("none.csv: not found"), "{msg}");
}

#[test]
fn digits_embedded() {
    let d = digits().unwrap();
    assert_eq!(d.len(), 1797);
    assert_eq!(d.len(), DIGITS_LEN);
    assert_eq!(d.classes(), 10);
    assert_eq!(d.shape(), [1, 8, 8]);
    assert_eq!(d.sample_dims(), 64);
    assert_eq!(
        d.label_histogram(),
        vec![178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    );
    assert!(d.images().iter().all(|v| (0.0..=1.0).contains(v)));
    assert_eq!(d.images().iter().copied().fold(0.0, f32::max), 1.0);
    // First sample is a 0: row 0 of the sklearn copy is "0,0,5,13,9,1,0,0,...".
    assert_eq!(d.label(0), Some(0));
    assert_eq!(
        &d.image(0).unwrap()[..4],
        &[0.0, 0.0, 5.0 / 16.0, 13.0 / 16.0]
    );
    // Embedded copy is the same as the shared one, when present.
    if let Some(dir) = shared_data("digits") {
        let shared = load_csv(
            dir.join("digits.csv.gz"),
            &CsvOptions {
                scale: PixelScale::Divide(16.0),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(shared.images(), d.images());
        assert_eq!(shared.labels(), d.labels());
    }
}

#[test]
fn digits_split_is_deterministic() {
    let a = digits_split(0.25, 9).unwrap();
    let b = digits_split(0.25, 9).unwrap();
    let c = digits_split(0.25, 10).unwrap();
    assert_eq!(a, b);
    assert_ne!(a.test.labels(), c.test.labels());
    assert_eq!(a.test.len(), 449); // round(1797 * 0.25)
    assert_eq!(a.train.len(), 1797 - 449);
    assert_eq!(a.train.classes(), 10);
    // Every class appears in both halves of a random 25% split of 1797.
    assert!(a.test.label_histogram().iter().all(|&c| c > 20));
    // Train and test are disjoint and cover the set: compare sorted sample bytes.
    let full = digits().unwrap();
    let key = |img: &[f32]| img.iter().map(|v| (v * 16.0) as u8).collect::<Vec<u8>>();
    let mut all: Vec<Vec<u8>> = full.images().chunks(64).map(key).collect();
    let mut parts: Vec<Vec<u8>> = a
        .train
        .images()
        .chunks(64)
        .chain(a.test.images().chunks(64))
        .map(key)
        .collect();
    all.sort();
    parts.sort();
    assert_eq!(all, parts);
}

#[test]
fn batches_cover_every_index_once() {
    let full = digits().unwrap();
    // Tag each sample by its index so batches can be traced back to it.
    let n = full.len();
    let tagged = Dataset::new(
        "tagged",
        (0..n).map(|i| i as f32).collect(),
        full.labels().to_vec(),
        [1, 1, 1],
        10,
    )
    .unwrap();
    let order = shuffled_indices(n, 3);
    for bs in [1, 32, 100, n, n + 5] {
        let mut seen = vec![0u32; n];
        let mut batches = 0;
        for (x, y) in tagged.batches(&order, bs).unwrap() {
            assert!(x.len() <= bs && x.len() == y.len());
            for (&v, &l) in x.iter().zip(&y) {
                seen[v as usize] += 1;
                assert_eq!(full.label(v as usize), Some(l));
            }
            batches += 1;
        }
        assert!(seen.iter().all(|&c| c == 1), "batch size {bs}");
        assert_eq!(batches, n.div_ceil(bs));
    }
    // drop_last keeps only full batches.
    let b = Batches::new(&tagged, &order, 100).unwrap().drop_last(true);
    assert_eq!(b.map(|(x, _)| x.len()).sum::<usize>(), 1700);
}

#[test]
fn seed_view_and_one_hot_on_digits() {
    let v = seed_mlp_view(&digits().unwrap()).unwrap();
    assert_eq!(v.shape(), [1, 6, 8]);
    assert_eq!(v.sample_dims(), 48);
    let oh = one_hot(&v.labels()[..3], 2).unwrap();
    assert_eq!(oh.len(), 6);
    assert!(oh.chunks(2).all(|r| r.iter().sum::<f32>() == 1.0));
}
