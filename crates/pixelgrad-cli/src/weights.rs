//! `--dump-weights DIR`: the first layer's weights drawn as an image once per epoch. The
//! drawing is done by the WebGL backend's heatmap program (on the GPU: a diverging blue-white-red
//! colour map scaled by the largest |weight|), whatever backend trains.

use std::path::{Path, PathBuf};

use pixelgrad::nn::Module;
use pixelgrad::webgl::{save_png, HeatmapOptions, WebGlBackend};
use pixelgrad::{Device, Tensor};

use crate::{CliResult, Context};

pub struct WeightDumper {
    dir: PathBuf,
    dev: Device,
    gl: std::rc::Rc<WebGlBackend>,
    input: [usize; 3],
}

impl WeightDumper {
    pub fn new(dir: &Path, input: [usize; 3]) -> CliResult<Self> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let opts = pixelgrad::webgl::WebGlOptions { self_test: false, ..Default::default() };
        let gl = std::rc::Rc::new(WebGlBackend::new_headless(opts).map_err(|e| format!("--dump-weights needs the WebGL backend: {e}"))?);
        let dev = Device::from_rc(gl.clone());
        Ok(WeightDumper { dir: dir.to_path_buf(), dev, gl, input })
    }

    /// Writes `epoch-NNN.png` from the first parameter of `model`: conv filters `[O, C, kh, kw]`
    /// as a tile grid, dense weights `[in, out]` as one input-shaped tile per output unit.
    pub fn dump(&self, model: &dyn Module, epoch: usize) -> CliResult<PathBuf> {
        let mut first: Option<Tensor> = None;
        model.visit_params(&mut |_, p| {
            if first.is_none() {
                first = Some(p.tensor());
            }
        });
        let w = first.ok_or("the model has no parameters to draw")?;
        let values = w.to_vec().ctx()?;
        let [c, h, wd] = self.input;
        let bank = match w.dims() {
            [o, ci, kh, kw] => vec![*o, *ci, *kh, *kw],
            [i, o] if *i == c * h * wd => vec![*o, c, h, wd],
            other => other.to_vec(),
        };
        let t = Tensor::from_vec(&self.dev, &values, w.dims().to_vec()).ctx()?;
        let t = if w.rank() == 2 && bank.len() == 4 { t.transpose(0, 1).ctx()?.reshape(bank).ctx()? } else { t };
        // a near-square grid of tiles, each tile a few dozen pixels across
        let d = t.dims().to_vec();
        let (tiles, side) = if d.len() == 4 { (d[0] * d[1], d[2].max(d[3])) } else { (1, d.iter().copied().max().unwrap_or(1)) };
        let columns = (tiles as f64).sqrt().ceil() as u32;
        let pixel_size = (48 / side.max(1)).clamp(1, 8) as u32;
        let opts = HeatmapOptions { pixel_size, border: 1, columns: if d.len() == 4 { Some(columns) } else { None } };
        let img = self.gl.render_heatmap_tensor(&t, opts).ctx()?;
        let path = self.dir.join(format!("epoch-{:03}.png", epoch + 1));
        save_png(&img, &path).ctx()?;
        Ok(path)
    }
}
