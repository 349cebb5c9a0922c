//! Backend selection: `auto` tries WebGPU, then WebGL2, then the CPU, and says why it chose.

use pixelgrad::cpu::CpuBackend;
use pixelgrad::Device;

use crate::CliResult;

/// The chosen device and the log of what was tried.
pub struct Selected {
    pub device: Device,
    pub name: String,
    pub tried: Vec<(String, Result<(), String>)>,
}

impl Selected {
    /// One line per backend tried, e.g. `webgpu: unavailable (no adapter)`.
    pub fn explain(&self) -> String {
        let mut s = Vec::new();
        for (b, r) in &self.tried {
            match r {
                Ok(()) => s.push(format!("{b}: chosen")),
                Err(why) => s.push(format!("{b}: skipped ({why})")),
            }
        }
        s.join("; ")
    }
}

fn try_backend(name: &str) -> Result<Device, String> {
    match name {
        "cpu" => Ok(Device::new(CpuBackend::new())),
        "webgpu" | "webgl" => Err(format!("the {name} backend is not available yet in this build")),
        other => Err(format!("unknown backend '{other}' (auto, cpu, webgpu, webgl)")),
    }
}

/// Picks the backend named by `choice` (`auto`, `cpu`, `webgpu`, `webgl`).
pub fn select(choice: &str) -> CliResult<Selected> {
    let order: Vec<&str> = if choice == "auto" { vec!["webgpu", "webgl", "cpu"] } else { vec![choice] };
    let mut tried = Vec::new();
    for b in order {
        match try_backend(b) {
            Ok(device) => {
                tried.push((b.to_string(), Ok(())));
                return Ok(Selected { name: device.name(), device, tried });
            }
            Err(why) => {
                if choice != "auto" {
                    return Err(format!("backend {b}: {why}"));
                }
                tried.push((b.to_string(), Err(why)));
            }
        }
    }
    Err("no backend could be started".into())
}

pub fn list() -> CliResult<()> {
    let s = select("auto")?;
    println!("auto-selection: {}", s.explain());
    println!("using: {}", s.name);
    Ok(())
}
