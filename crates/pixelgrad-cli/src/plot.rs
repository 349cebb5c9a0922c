//! `loss.png`: the logged loss against the step, drawn with plotters into an RGB buffer and
//! encoded with the png crate.

use std::path::Path;

use pixelgrad::nn::train::StepLog;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::CliResult;

const W: u32 = 800;
const H: u32 = 480;
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

pub fn loss_png(path: &Path, steps: &[StepLog], title: &str) -> CliResult<()> {
    let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    let mut buf = vec![255u8; (W * H * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let max_step = steps.last().map(|s| s.step).unwrap_or(1).max(1) as f32;
        let max_loss = steps.iter().map(|s| s.loss).filter(|l| l.is_finite()).fold(0.0f32, f32::max).max(1e-6) * 1.05;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0f32..max_step, 0f32..max_loss)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("step")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_desc("training loss")
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(LineSeries::new(steps.iter().map(|s| (s.step as f32, s.loss)), BLUE.stroke_width(2)))
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
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
