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

/// Bytes of one launch's parameter slot, the uniform every kernel binds at binding 0 (also the
/// usual minUniformBufferOffsetAlignment); the context's parameter ring is made of such slots.
pub(crate) const PARAM_SLOT: u64 = 256;
/// u32 words in a parameter slot.
pub(crate) const PARAM_WORDS: usize = (PARAM_SLOT / 4) as usize;

/// Most pipeline-overridable constants a kernel has.
pub(crate) const MAX_CONFIG: usize = 4;

/// Read-only storage inputs every device can bind: with the output that is 7 of the 8
/// storage buffers WebGPU guarantees per stage. Their layouts are made up front.
pub(crate) const MAX_INPUTS: usize = 6;

/// Most storage buffers a fused kernel binds even where the device allows more
/// ([`crate::context::Gpu::max_inputs`] is the device's own bound below this).
pub(crate) const MAX_BUFFERS: usize = 24;

/// One compute kernel: a `.wgsl` file (`Cow::Borrowed`), or source rendered at run time from
/// the kernel IR (elementwise kernels, `Cow::Owned`).
pub(crate) struct Kernel {
    /// Unique per source: pipelines and shader modules are cached by it.
    pub name: Cow<'static, str>,
    pub source: Cow<'static, str>,
    /// Read-only storage buffers, bound at 1..=inputs; the outputs follow from inputs + 1.
    pub inputs: usize,
    /// Storage buffers written (1 for every op; a grouped elementwise launch writes several).
    pub outputs: usize,
    /// Names of `override` constants, in the order launchers pass their values.
    pub overrides: &'static [&'static str],
    /// Binds the device's status word after the output (kernels that validate run-time data,
    /// such as indices, raise bits there; see `Gpu::status`).
    pub status: bool,
}

/// The WGSL compiled for `kernel`: prelude then kernel body, the body's leading `requires`
/// and `enable` directives first (WGSL wants directives before any declaration).
pub(crate) fn full_source(kernel: &Kernel) -> String {
    let src: &str = &kernel.source;
    let mut split = 0;
    for line in src.split_inclusive('\n') {
        let t = line.trim_start();
        if !(t.starts_with("requires ") || t.starts_with("enable ") || t.starts_with("//") || t.trim().is_empty()) {
            break;
        }
        split += line.len();
    }
    let (head, body) = src.split_at(split);
    if !head.contains("requires ") && !head.contains("enable ") {
        return format!("{}\n{}", prelude(), src);
    }
    format!("{head}{}\n{body}", prelude())
}

/// What a bind group layout depends on: read-only inputs, outputs, status binding.
type LayoutKey = (usize, usize, bool);

fn layout_key(kernel: &Kernel) -> LayoutKey {
    (kernel.inputs, kernel.outputs, kernel.status)
}

/// Bind group layouts (one per input / output count), shader modules and pipelines.
pub(crate) struct Pipelines {
    layouts: RefCell<HashMap<LayoutKey, (wgpu::BindGroupLayout, wgpu::PipelineLayout)>>,
    modules: RefCell<HashMap<String, wgpu::ShaderModule>>,
    /// Pipelines by kernel name, then by override values.
    cache: RefCell<HashMap<String, HashMap<[u32; MAX_CONFIG], wgpu::ComputePipeline>>>,
}

/// Explicit layouts: binding 0 the parameter slot, then the read-only inputs, then the
/// outputs, then (when asked) the status word. Shared across kernels with the same counts.
fn make_layout(device: &wgpu::Device, (inputs, outputs, status): LayoutKey) -> (wgpu::BindGroupLayout, wgpu::PipelineLayout) {
    let buffer = |binding: usize, read_only: bool| wgpu::BindGroupLayoutEntry {
        binding: binding as u32,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    let mut entries = vec![wgpu::BindGroupLayoutEntry {
        binding: 0,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: wgpu::BufferSize::new(PARAM_SLOT),
        },
        count: None,
    }];
    entries.extend((0..inputs + outputs).map(|i| buffer(1 + i, i < inputs)));
    if status {
        entries.push(buffer(1 + inputs + outputs, false));
    }
    let bgl =
        device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("pixelgrad inputs+outputs"), entries: &entries });
    let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("pixelgrad pipeline layout"),
        bind_group_layouts: &[Some(&bgl)],
        immediate_size: 0,
    });
    (bgl, pl)
}

impl Pipelines {
    pub(crate) fn new(device: &wgpu::Device) -> Self {
        // The single-output layouts every op uses are made up front; multi-output ones (the
        // grouped elementwise launches) when first asked for.
        let layouts = (0..=MAX_INPUTS).flat_map(|n| [(n, 1, false), (n, 1, true)]).map(|k| (k, make_layout(device, k))).collect();
        Pipelines { layouts: RefCell::new(layouts), modules: RefCell::new(HashMap::new()), cache: RefCell::new(HashMap::new()) }
    }

    fn layouts_of(&self, device: &wgpu::Device, kernel: &Kernel) -> (wgpu::BindGroupLayout, wgpu::PipelineLayout) {
        self.layouts.borrow_mut().entry(layout_key(kernel)).or_insert_with(|| make_layout(device, layout_key(kernel))).clone()
    }

    /// Bind group layout of `kernel` (by input and output count and status binding).
    pub(crate) fn layout(&self, device: &wgpu::Device, kernel: &Kernel) -> wgpu::BindGroupLayout {
        self.layouts_of(device, kernel).0
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
            layout: Some(&self.layouts_of(device, kernel).1),
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
