//! The session's constants as operators read them ([`Consts`]): trainable weights, cached
//! device copies (f32, f16, or 8-bit where the device stores them), and the row sums 8-bit
//! products need.

use pixelgrad_core::{Device, Param, Tensor};

use super::Session;
use crate::host::{DType, HostTensor};
use crate::ops::{upload, Consts};
use crate::Result;

impl Consts for Session {
    fn device(&self) -> &Device {
        &self.device
    }
    fn int8_activations(&self) -> bool {
        self.narrow_results.get() && self.int8_activations_on()
    }
    fn param(&self, name: &str) -> Option<&Param> {
        self.param_index.get(name).map(|&i| &self.params[i].1)
    }
    /// 8-bit constants stay 8-bit on devices that store them, and f16-stored float constants
    /// f16; both are widened to f32 for the operator that reads them (a temporary).
    fn cached(&self, name: &str, t: &HostTensor) -> Result<Tensor> {
        let narrow = self.stored_narrow(t) || self.f16.contains(name);
        let d = self.stored(name, t)?;
        Ok(if narrow { d.widen()? } else { d })
    }
    fn cached_derived(&self, key: &str, make: &dyn Fn() -> Result<HostTensor>) -> Result<Tensor> {
        if let Some(d) = self.cache.borrow().get(key) {
            return Ok(d.clone());
        }
        let d = upload(&self.device, &make()?, &format!("constant '{key}'"))?;
        self.cache.borrow_mut().insert(key.to_string(), d.clone());
        Ok(d)
    }
    fn cached_tensor(&self, key: &str, make: &dyn Fn() -> Result<Tensor>) -> Result<Tensor> {
        if let Some(d) = self.cache.borrow().get(key) {
            return Ok(d.clone());
        }
        let d = make()?;
        self.cache.borrow_mut().insert(key.to_string(), d.clone());
        Ok(d)
    }
    fn cached_f16(&self, name: &str, t: &HostTensor) -> Result<Option<Tensor>> {
        if !self.f16.contains(name) || !self.device.backend().caps().f16_matmul {
            return Ok(None);
        }
        self.stored(name, t).map(Some)
    }
    fn cached_int8(&self, name: &str, t: &HostTensor, transpose: bool) -> Result<Option<Tensor>> {
        if !self.stored_narrow(t) || !self.device.backend().caps().int8 || t.rank() < 2 {
            return Ok(None);
        }
        let (r, c) = (t.shape[0], t.numel() / t.shape[0]);
        if !transpose {
            // the same 8-bit copy the f32 path widens, viewed as a matrix
            return Ok(Some(self.stored(name, t)?.reshape([r, c])?));
        }
        let key = format!("{name}\u{0}int8T");
        if let Some(d) = self.cache.borrow().get(&key) {
            return Ok(Some(d.clone()));
        }
        let d = narrow_8bit(&self.device, t, true)?;
        self.cache.borrow_mut().insert(key, d.clone());
        Ok(Some(d))
    }
    fn cached_int8_row_sums(&self, name: &str, t: &HostTensor, transpose: bool) -> Result<Option<(Tensor, u64)>> {
        if !self.stored_narrow(t) || !self.device.backend().caps().int8 || t.rank() < 2 {
            return Ok(None);
        }
        let key = (name.to_string(), transpose);
        if let Some(d) = self.int8_sums.borrow().get(&key) {
            return Ok(Some(d.clone()));
        }
        let v = t.to_f64();
        let (r, c) = (t.shape[0], t.numel() / t.shape[0].max(1));
        // Rows of the [r, c] matrix, or of its [c, r] transpose (the columns).
        let (rows, at): (usize, Box<dyn Fn(usize, usize) -> f64>) =
            if transpose { (c, Box::new(|row, k| v[k * c + row])) } else { (r, Box::new(|row, k| v[row * c + k])) };
        let len = if transpose { r } else { c };
        let mut sums = Vec::with_capacity(rows);
        let mut most = 0u64;
        for row in 0..rows {
            let (s, a) = (0..len).fold((0i64, 0u64), |(s, a), k| {
                let w = at(row, k) as i64;
                (s + w, a + w.unsigned_abs())
            });
            sums.push(s as f32);
            most = most.max(a);
        }
        let d = (Tensor::from_vec(&self.device, &sums, [rows])?, most);
        self.int8_sums.borrow_mut().insert(key, d.clone());
        Ok(Some(d))
    }
}

/// An 8-bit constant as an 8-bit device tensor: its own shape, or as the `[cols, rows]`
/// transpose of its `[rows, cols]` matrix view when `transpose`.
fn narrow_8bit(dev: &Device, t: &HostTensor, transpose: bool) -> Result<Tensor> {
    let v = t.to_f64();
    let (r, c) = (t.shape[0], t.numel() / t.shape[0].max(1));
    let v: Vec<f64> = if transpose {
        let src = &v;
        (0..c).flat_map(|j| (0..r).map(move |i| src[i * c + j])).collect()
    } else {
        v
    };
    let shape = if transpose { vec![c, r] } else { t.shape.clone() };
    Ok(if t.dtype == DType::I8 {
        Tensor::from_i8(dev, &v.iter().map(|&x| x as i8).collect::<Vec<_>>(), shape)?
    } else {
        Tensor::from_u8(dev, &v.iter().map(|&x| x as u8).collect::<Vec<_>>(), shape)?
    })
}

impl Session {
    /// Constant `name` on the device as stored (8-bit, f16 or f32), uploaded once. Reading it
    /// launches nothing, so a recorded run (`replay.rs`) that meets it first does not replay
    /// a widening nobody reads: the products that take f16 or 8-bit weights read this copy,
    /// and [`Consts::cached`] widens it for the others.
    fn stored(&self, name: &str, t: &HostTensor) -> Result<Tensor> {
        if let Some(d) = self.cache.borrow().get(name) {
            return Ok(d.clone());
        }
        let d = if matches!(t.dtype, DType::I8 | DType::U8) && self.stored_narrow(t) {
            narrow_8bit(&self.device, t, false)?
        } else if self.f16.contains(name) {
            let h: Vec<half::f16> = t.to_f32().iter().map(|&x| half::f16::from_f32(x)).collect();
            Tensor::from_f16(&self.device, &h, t.shape.clone())?
        } else {
            upload(&self.device, t, &format!("constant '{name}'"))?
        };
        self.cache.borrow_mut().insert(name.to_string(), d.clone());
        Ok(d)
    }
}
