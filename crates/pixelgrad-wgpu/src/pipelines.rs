//! Kernels and the pipeline cache. A [`Kernel`] is a small value: its WGSL file, how many
//! read-only inputs it binds and the names of its pipeline-overridable constants. Pipelines
//! are compiled once per (kernel, constant values) and never depend on shapes.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

/// The hand-written part of the prelude every kernel starts with (parameter slot, index
/// helpers).
pub(crate) const COMMON: &str = include_str!("kernels/common.wgsl");

/// The prelude: [`COMMON`] plus the helpers rendered from the kernel IR (the random kernel's
/// Box-Muller transform), rendered once per process.
pub(crate) fn prelude() -> &'static str {
    static PRELUDE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PRELUDE.get_or_init(|| match crate::wgsl::box_muller() {
        Ok(f) => format!("{COMMON}\n{f}"),
        // Only a bug in the IR can get here; the kernels that need the helper then fail to
        // compile with this message in their source, and the naga test names it.
        Err(e) => format!("{COMMON}\n// pg_box_muller could not be rendered: {e}\n"),
    })
}

/// Most pipeline-overridable constants a kernel has.
pub(crate) const MAX_CONFIG: usize = 4;

/// Most read-only storage inputs a kernel binds (a fused elementwise kernel may read this
/// many; with the output that is 7 of the 8 storage buffers WebGPU guarantees per stage).
pub(crate) const MAX_INPUTS: usize = 6;

/// One compute kernel: a `.wgsl` file (`Cow::Borrowed`), or source rendered at run time from
/// the kernel IR (elementwise kernels, `Cow::Owned`).
pub(crate) struct Kernel {
    /// Unique per source: pipelines and shader modules are cached by it.
    pub name: Cow<'static, str>,
    pub source: Cow<'static, str>,
    /// Read-only storage buffers, bound at 1..=inputs; the output follows at inputs + 1.
    pub inputs: usize,
    /// Names of `override` constants, in the order launchers pass their values.
    pub overrides: &'static [&'static str],
    /// Binds the device's status word after the output (kernels that validate run-time data,
    /// such as indices, raise bits there; see `Gpu::status`).
    pub status: bool,
}

/// The WGSL compiled for `kernel`: prelude then kernel body.
pub(crate) fn full_source(kernel: &Kernel) -> String {
    format!("{}\n{}", prelude(), kernel.source)
}

fn layout_index(kernel: &Kernel) -> usize {
    kernel.inputs * 2 + usize::from(kernel.status)
}

/// Bind group layouts (one per input count), shader modules and pipelines.
pub(crate) struct Pipelines {
    layouts: Vec<(wgpu::BindGroupLayout, wgpu::PipelineLayout)>,
    modules: RefCell<HashMap<String, wgpu::ShaderModule>>,
    /// Pipelines by kernel name, then by override values.
    cache: RefCell<HashMap<String, HashMap<[u32; MAX_CONFIG], wgpu::ComputePipeline>>>,
}

impl Pipelines {
    pub(crate) fn new(device: &wgpu::Device) -> Self {
        // Explicit layouts: binding 0 the parameter slot, then read-only inputs, then the
        // output. Shared across kernels with the same input count.
        let layouts = (0..=MAX_INPUTS)
            .flat_map(|n| [(n, false), (n, true)])
            .map(|(n, status)| {
                let mut entries = vec![wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: wgpu::BufferSize::new(crate::context::PARAM_SLOT),
                    },
                    count: None,
                }];
                for i in 0..=n {
                    entries.push(wgpu::BindGroupLayoutEntry {
                        binding: 1 + i as u32,
                        visibility: wgpu::ShaderStages::COMPUTE,
                        ty: wgpu::BindingType::Buffer {
                            ty: wgpu::BufferBindingType::Storage { read_only: i < n },
                            has_dynamic_offset: false,
                            min_binding_size: None,
                        },
                        count: None,
                    });
                }
                if status {
                    entries.push(wgpu::BindGroupLayoutEntry {
                        binding: 2 + n as u32,
                        visibility: wgpu::ShaderStages::COMPUTE,
                        ty: wgpu::BindingType::Buffer {
                            ty: wgpu::BufferBindingType::Storage { read_only: false },
                            has_dynamic_offset: false,
                            min_binding_size: None,
                        },
                        count: None,
                    });
                }
                let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some("pixelgrad inputs+output"),
                    entries: &entries,
                });
                let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some("pixelgrad pipeline layout"),
                    bind_group_layouts: &[Some(&bgl)],
                    immediate_size: 0,
                });
                (bgl, pl)
            })
            .collect();
        Pipelines { layouts, modules: RefCell::new(HashMap::new()), cache: RefCell::new(HashMap::new()) }
    }

    /// Bind group layout of `kernel` (by input count and status binding).
    pub(crate) fn layout(&self, kernel: &Kernel) -> &wgpu::BindGroupLayout {
        &self.layouts[layout_index(kernel)].0
    }

    /// The pipeline for `kernel` with override values `config`; the bool says whether it was
    /// compiled by this call.
    pub(crate) fn get(&self, device: &wgpu::Device, kernel: &Kernel, config: &[u32]) -> (wgpu::ComputePipeline, bool) {
        let mut key_cfg = [0u32; MAX_CONFIG];
        key_cfg[..config.len()].copy_from_slice(config);
        if let Some(p) = self.cache.borrow().get(kernel.name.as_ref()).and_then(|m| m.get(&key_cfg)) {
            return (p.clone(), false);
        }
        let module = self
            .modules
            .borrow_mut()
            .entry(kernel.name.to_string())
            .or_insert_with(|| {
                device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(&kernel.name),
                    source: wgpu::ShaderSource::Wgsl(full_source(kernel).into()),
                })
            })
            .clone();
        let constants: Vec<(&str, f64)> = kernel.overrides.iter().zip(config.iter()).map(|(n, &v)| (*n, v as f64)).collect();
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&kernel.name),
            layout: Some(&self.layouts[layout_index(kernel)].1),
            module: &module,
            entry_point: Some("main"),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                // Every kernel writes its workgroup memory before reading it.
                zero_initialize_workgroup_memory: false,
            },
            cache: None,
        });
        self.cache.borrow_mut().entry(kernel.name.to_string()).or_default().insert(key_cfg, pipeline.clone());
        (pipeline, true)
    }
}
