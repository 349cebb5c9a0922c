//! `loss.png`: training and validation loss (top panel) and accuracy (bottom panel) per epoch,
//! as Keras and TF.js users expect, drawn with plotters into an RGB buffer and encoded with the
//! png crate. "Validation" is the held-out split `train` evaluates after every epoch.

use std::path::Path;

use pixelgrad::nn::train::EpochLog;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::CliResult;

const W: u32 = 800;
const H: u32 = 640;
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
const TRAIN: RGBColor = RGBColor(37, 99, 235);
const VAL: RGBColor = RGBColor(22, 163, 74);

/// The per-epoch series the plot draws: `(epoch, value)` points, epochs counted from 1.
/// Non-finite values and absent metrics (no accuracy for MSE on float targets, no validation
/// split) are left out, so each series may be shorter than the epoch count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    pub train_loss: Vec<(f32, f32)>,
    pub val_loss: Vec<(f32, f32)>,
    pub train_accuracy: Vec<(f32, f32)>,
    pub val_accuracy: Vec<(f32, f32)>,
}

impl Series {
    pub fn from_epochs(epochs: &[EpochLog]) -> Series {
        let pick = |f: &dyn Fn(&EpochLog) -> Option<f32>| -> Vec<(f32, f32)> {
            epochs.iter().filter_map(|e| f(e).filter(|v| v.is_finite()).map(|v| ((e.epoch + 1) as f32, v))).collect()
        };
        Series {
            train_loss: pick(&|e| Some(e.train_loss)),
            val_loss: pick(&|e| e.test_loss),
            train_accuracy: pick(&|e| e.train_accuracy),
            val_accuracy: pick(&|e| e.test_accuracy),
        }
    }
}

/// Draws `series` into `path` (written through `pixelgrad_durable`, so a crash leaves the old
/// file or the new one).
pub fn loss_png(path: &Path, series: &Series, title: &str) -> CliResult<()> {
    let buf = render(series, title).map_err(|e| format!("{}: drawing the plot: {e}", path.display()))?;
    pixelgrad_durable::write_with(path, |out| {
        let mut enc = png::Encoder::new(out, W, H);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header()?;
        w.write_image_data(&buf)?;
        w.finish()?;
        Ok(())
    })
    .map_err(|e| format!("{}: {e}", path.display()))
}

fn render(s: &Series, title: &str) -> Result<Vec<u8>, String> {
    let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    let mut buf = vec![255u8; (W * H * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let root = root.titled(title, ("sans-serif", 18)).map_err(|e| e.to_string())?;
        let (top, bottom) = root.split_vertically(H / 2 - 14);
        let last_epoch = [&s.train_loss, &s.val_loss, &s.train_accuracy, &s.val_accuracy]
            .iter()
            .flat_map(|v| v.iter().map(|p| p.0))
            .fold(1.0f32, f32::max);
        let max_loss = s.train_loss.iter().chain(&s.val_loss).map(|p| p.1).fold(0.0f32, f32::max).max(1e-6) * 1.05;
        panel(&top, "loss", last_epoch, 0.0..max_loss, &s.train_loss, &s.val_loss)?;
        panel(&bottom, "accuracy", last_epoch, 0.0..1.0, &s.train_accuracy, &s.val_accuracy)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(buf)
}

fn panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    what: &str,
    last_epoch: f32,
    y: std::ops::Range<f32>,
    train: &[(f32, f32)],
    val: &[(f32, f32)],
) -> Result<(), String> {
    // Epochs are whole numbers: half an epoch of margin either side keeps the first and last
    // markers inside the frame.
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.5f32..last_epoch + 0.5, y)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .x_label_formatter(&|x| if x.fract() == 0.0 { format!("{x:.0}") } else { String::new() })
        .y_desc(what)
        .draw()
        .map_err(|e| e.to_string())?;
    for (points, color, label) in [(train, TRAIN, "training"), (val, VAL, "validation")] {
        if points.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)).point_size(3))
            .map_err(|e| e.to_string())?
            .label(format!("{label} {what}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(if what == "loss" { SeriesLabelPosition::UpperRight } else { SeriesLabelPosition::LowerRight })
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epoch(i: usize, acc: Option<f32>, val: Option<(f32, f32)>) -> EpochLog {
        EpochLog {
            epoch: i,
            train_loss: 1.0 / (i + 1) as f32,
            train_accuracy: acc,
            test_loss: val.map(|v| v.0),
            test_accuracy: val.map(|v| v.1),
        }
    }

    #[test]
    fn series_carry_training_and_validation_loss_and_accuracy_per_epoch() {
        let epochs = [epoch(0, Some(0.5), Some((0.9, 0.6))), epoch(1, Some(0.7), Some((0.7, 0.8)))];
        let s = Series::from_epochs(&epochs);
        assert_eq!(s.train_loss, [(1.0, 1.0), (2.0, 0.5)]);
        assert_eq!(s.val_loss, [(1.0, 0.9), (2.0, 0.7)]);
        assert_eq!(s.train_accuracy, [(1.0, 0.5), (2.0, 0.7)]);
        assert_eq!(s.val_accuracy, [(1.0, 0.6), (2.0, 0.8)]);
    }

    #[test]
    fn absent_and_non_finite_values_are_left_out_not_drawn_as_zero() {
        let epochs = [epoch(0, None, Some((f32::NAN, 0.5))), epoch(1, None, None)];
        let s = Series::from_epochs(&epochs);
        assert_eq!(s.train_loss.len(), 2);
        assert!(s.train_accuracy.is_empty());
        assert!(s.val_loss.is_empty());
        assert_eq!(s.val_accuracy, [(1.0, 0.5)]);
    }

    #[test]
    fn png_is_written_with_both_panels() {
        let dir = std::env::temp_dir().join(format!("pixelgrad-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("loss.png");
        let s = Series::from_epochs(&[epoch(0, Some(0.5), Some((0.9, 0.6))), epoch(1, Some(0.7), Some((0.7, 0.8)))]);
        loss_png(&path, &s, "test").unwrap();
        let dec = png::Decoder::new(std::fs::File::open(&path).unwrap());
        let reader = dec.read_info().unwrap();
        assert_eq!((reader.info().width, reader.info().height), (W, H));
        // A single epoch, and no epochs at all, still draw (one marker; empty frames).
        loss_png(&path, &Series::from_epochs(&[epoch(0, None, None)]), "one").unwrap();
        loss_png(&path, &Series::default(), "none").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
