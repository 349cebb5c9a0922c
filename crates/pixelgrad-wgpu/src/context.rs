//! The device context: wgpu device and queue, the open command encoder, the parameter ring,
//! the buffer pool, counters and the device's health (loss, first uncaptured error).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use pixelgrad_core::{Counters, Error, Result};

use crate::completion::Completion;
use crate::pipelines::{Kernel, Pipelines, MAX_INPUTS, PARAM_SLOT};
use crate::plan::{self, Alloc, LaunchEntry, Plans};
use crate::pool::{size_class, Kind, Pool};
use crate::trace::{Command, Pins, Recorder};
use crate::BACKEND;

/// The slot's size in words, where launches are prepared (its home is the kernels' binding
/// layout, `crate::pipelines`).
pub(crate) use crate::pipelines::PARAM_WORDS;

/// Size of the status buffer.
const STATUS_BYTES: u64 = 256;

/// A grouped launch's structure: its members and how many inputs they share.
pub(crate) type GroupKey = (Vec<crate::wgsl::GroupMember>, usize);

/// What went wrong on the device, written by wgpu callbacks (which must be `Send`).
#[derive(Default)]
pub(crate) struct Health {
    pub lost: Option<String>,
    pub error: Option<String>,
}

/// Commands recorded since the last submission.
struct Recording {
    encoder: Option<wgpu::CommandEncoder>,
    /// Kept open across launches: one compute pass per submission unless a copy intervenes.
    pass: Option<wgpu::ComputePass<'static>>,
    /// Parameter slots of this submission, uploaded into `ring` right before it is submitted.
    params: Vec<u8>,
    slots: u64,
}

#[derive(Default)]
struct CounterCells {
    allocations: Cell<u64>,
    compiles: Cell<u64>,
    launches: Cell<u64>,
    submissions: Cell<u64>,
    readbacks: Cell<u64>,
    bindings: Cell<u64>,
    replayed: Cell<u64>,
}

/// Shared by the backend and every tensor it made (tensors return their buffers here).
pub(crate) struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub limits: wgpu::Limits,
    pub info: wgpu::AdapterInfo,
    pub pipelines: Pipelines,
    /// Elementwise kernels rendered from the kernel IR, by structure (see `ops::elementwise`).
    pub map_kernels: RefCell<std::collections::HashMap<pixelgrad_core::kernel::Kernel, Rc<Kernel>>>,
    /// Reductions with a fused input, by the input's kernel (see `ops::reduce`).
    pub reduce_kernels: RefCell<std::collections::HashMap<pixelgrad_core::kernel::Kernel, Rc<Kernel>>>,
    /// Rendered reduction passes reading a fused input, by program and the input's kernel
    /// (see `ops::reduce_rendered`).
    pub rendered_reduce_kernels:
        RefCell<std::collections::HashMap<(pixelgrad_core::kernel::reductions::ReduceProgram, pixelgrad_core::kernel::Kernel), Rc<Kernel>>>,
    /// Grouped elementwise launches, by their members and input count (see `fusion::settle`).
    pub group_kernels: RefCell<std::collections::HashMap<GroupKey, Rc<Kernel>>>,
    /// Fuse elementwise chains (`fusion.rs`), and the pending results made since the last
    /// settle, oldest first.
    pub fuse: bool,
    /// Whether `fusion::settle` groups pending results into multi-output launches.
    pub group: Cell<bool>,
    /// Whether `Op::MatMulI8 { b_i8: true }` runs on `dot4I8Packed` (`ops::matmul_i8`): the
    /// WGSL language feature is there and `WgpuOptions::int8_dot4` did not turn it off.
    pub int8_dot4: Cell<bool>,
    /// Whether matmuls on an f16 operand compute their products in f16 (`matmul_f16h.wgsl`):
    /// the device was created with `shader-f16` and `WgpuOptions::f16_arithmetic` left it on.
    pub f16_arith: Cell<bool>,
    /// Which kernel reduces a tensor (`WgpuOptions::reductions`; `ops::reduce_rendered`
    /// decides for `Auto`).
    pub reductions: Cell<crate::ReduceKernel>,
    /// The fusion layer's generation and the pending results it still owes
    /// (`pixelgrad_core::fusion`).
    pub fusion: pixelgrad_core::fusion::FusionState,
    /// One line per launch while on (`WgpuBackend::set_launch_log`): kernel and grid.
    pub launch_log: RefCell<Option<Vec<String>>>,
    /// Run the register-blocked matmul (CPU adapters) instead of the tiled one.
    pub cpu_matmul: bool,
    pool: RefCell<Pool>,
    rec: RefCell<Recording>,
    /// Step plans (see `plan.rs`).
    plans: RefCell<Plans>,
    /// The trace being recorded, if one is (see `trace.rs`).
    pub(crate) tracing: RefCell<Option<Recorder>>,
    /// Buffers pinned by traces and open recordings (see `trace.rs`).
    pins: RefCell<Pins>,
    /// Uniform buffer holding `max_slots` parameter slots.
    ring: wgpu::Buffer,
    /// One u32 of error bits raised by kernels that validate run-time data (bit 1: gather
    /// index, bit 2: scatter_add index). Copied out with every readback while armed.
    status: wgpu::Buffer,
    /// True once a status-raising kernel was recorded since the status was last checked.
    status_armed: Cell<bool>,
    max_slots: u64,
    /// Serial of the last submission (0: none yet).
    submitted: Cell<u64>,
    /// Serial of the last submission the GPU has finished (see `completion.rs`).
    completion: Completion,
    /// Indices of the two last submissions (older, newer): natively the next flush waits for
    /// the older one (see `flush`).
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    last_index: RefCell<(Option<wgpu::SubmissionIndex>, Option<wgpu::SubmissionIndex>)>,
    /// Longest a native wait for the GPU may take.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    wait_timeout: std::time::Duration,
    /// True while the open encoder holds commands.
    dirty: Cell<bool>,
    counters: CounterCells,
    pub health: Arc<Mutex<Health>>,
}

impl Gpu {
    pub(crate) fn new(
        device: wgpu::Device,
        queue: wgpu::Queue,
        info: wgpu::AdapterInfo,
        max_ops_per_submit: usize,
        cpu_matmul: bool,
        wait_timeout: std::time::Duration,
        fuse: bool,
    ) -> Rc<Gpu> {
        let limits = device.limits();
        let health = Arc::new(Mutex::new(Health::default()));
        {
            let h = health.clone();
            device.set_device_lost_callback(move |reason, msg| {
                if let Ok(mut h) = h.lock() {
                    h.lost.get_or_insert(format!("{reason:?}: {msg}"));
                }
            });
            // Without a handler wgpu panics on errors; keep the first one for the next call.
            let h = health.clone();
            device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                if let Ok(mut h) = h.lock() {
                    h.error.get_or_insert(e.to_string());
                }
            }));
        }
        let max_slots = max_ops_per_submit.clamp(1, 4096) as u64;
        let ring = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("pixelgrad params"),
            size: max_slots * PARAM_SLOT,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let status = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("pixelgrad status"),
            size: STATUS_BYTES,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            // Created zeroed.
            mapped_at_creation: false,
        });
        let pipelines = Pipelines::new(&device);
        Rc::new(Gpu {
            device,
            queue,
            limits,
            info,
            pipelines,
            map_kernels: RefCell::new(std::collections::HashMap::new()),
            reduce_kernels: RefCell::new(std::collections::HashMap::new()),
            rendered_reduce_kernels: RefCell::new(std::collections::HashMap::new()),
            group_kernels: RefCell::new(std::collections::HashMap::new()),
            fuse,
            group: Cell::new(true),
            int8_dot4: Cell::new(false),
            f16_arith: Cell::new(false),
            reductions: Cell::new(crate::ReduceKernel::Auto),
            fusion: pixelgrad_core::fusion::FusionState::new(),
            launch_log: RefCell::new(None),
            cpu_matmul,
            pool: RefCell::new(Pool::new(crate::pool::DEFAULT_POOL_BUDGET)),
            rec: RefCell::new(Recording { encoder: None, pass: None, params: Vec::new(), slots: 0 }),
            plans: RefCell::new(Plans::default()),
            tracing: RefCell::new(None),
            pins: RefCell::new(Pins::default()),
            ring,
            status,
            status_armed: Cell::new(false),
            max_slots,
            submitted: Cell::new(0),
            completion: Completion::default(),
            last_index: RefCell::new((None, None)),
            wait_timeout,
            dirty: Cell::new(false),
            counters: CounterCells::default(),
            health,
        })
    }

    /// The adapter's name; browsers often hide it, then the vendor id stands in.
    /// Storage buffers one fused kernel may bind on this device: its limit per shader stage
    /// (WebGPU guarantees 8), at most [`crate::pipelines::MAX_BUFFERS`].
    pub(crate) fn max_buffers(&self) -> usize {
        (self.limits.max_storage_buffers_per_shader_stage as usize).clamp(MAX_INPUTS + 1, crate::pipelines::MAX_BUFFERS)
    }

    /// Read-only inputs of a fused kernel with one output ([`Gpu::max_buffers`] less one).
    pub(crate) fn max_inputs(&self) -> usize {
        self.max_buffers() - 1
    }

    /// The backend's name in errors and reports: `webgpu (ADAPTER, VULKAN|METAL|...)`.
    pub(crate) fn backend_name(&self) -> String {
        format!("webgpu ({}, {:?})", self.adapter_name(), self.info.backend)
    }

    pub(crate) fn adapter_name(&self) -> String {
        if self.info.name.is_empty() {
            format!("unnamed adapter, vendor {:#x}", self.info.vendor)
        } else {
            self.info.name.clone()
        }
    }

    /// `Err` if the device was lost or wgpu reported an error since the last call.
    pub(crate) fn check(&self, op: &'static str) -> Result<()> {
        let mut h = self.health.lock().map_err(|_| Error::backend(op, BACKEND, "health lock poisoned"))?;
        if let Some(reason) = &h.lost {
            return Err(Error::DeviceLost { backend: BACKEND.into(), reason: reason.clone() });
        }
        if let Some(e) = h.error.take() {
            return Err(Error::backend(op, BACKEND, format!("wgpu reported: {e}")));
        }
        Ok(())
    }

    /// The error for a failed wait / map: device loss if that is what happened.
    pub(crate) fn failure(&self, op: &'static str, what: String) -> Error {
        match self.check(op) {
            Err(e) => e,
            Ok(()) => Error::backend(op, BACKEND, what),
        }
    }

    /// Errors if `bytes` do not fit one storage binding or buffer.
    pub(crate) fn check_size(&self, op: &'static str, bytes: u64) -> Result<()> {
        let bind = self.limits.max_storage_buffer_binding_size;
        if bytes > bind {
            return Err(Error::Limit {
                op,
                backend: BACKEND.into(),
                limit_name: "maxStorageBufferBindingSize",
                limit: bind,
                requested: bytes,
            });
        }
        if bytes > self.limits.max_buffer_size {
            return Err(Error::Limit {
                op,
                backend: BACKEND.into(),
                limit_name: "maxBufferSize",
                limit: self.limits.max_buffer_size,
                requested: bytes,
            });
        }
        Ok(())
    }

    fn cap(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size)
    }

    /// A buffer of at least `bytes`, from the pool when one is free.
    pub(crate) fn alloc(&self, op: &'static str, kind: Kind, bytes: u64) -> Result<(wgpu::Buffer, u64)> {
        self.check_size(op, bytes)?;
        let size = size_class(bytes, self.cap());
        let mut pool = self.pool.borrow_mut();
        pool.recycle(self.submitted.get());
        if let Some(b) = pool.take(kind, size) {
            return Ok((b, size));
        }
        pool.enforce(self.completion.completed());
        let buf = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(match kind {
                Kind::Tensor => "pixelgrad tensor",
                Kind::Staging => "pixelgrad staging",
            }),
            size,
            usage: kind.usage(),
            mapped_at_creation: false,
        });
        pool.bytes += size;
        self.counters.allocations.set(self.counters.allocations.get() + 1);
        Ok((buf, size))
    }

    /// Hands a buffer back; it is reused once the work that may touch it has been submitted.
    pub(crate) fn release(&self, kind: Kind, size: u64, buf: wgpu::Buffer) {
        // A buffer a trace pins stays out of the pool until the trace lets go of it too.
        if let Ok(mut pins) = self.pins.try_borrow_mut() {
            if !pins.is_empty() && pins.release(&buf) == Some(false) {
                return;
            }
        }
        // If the open encoder holds commands, they may use this buffer: wait for the
        // submission they will go into. Otherwise only earlier submissions can.
        let serial = self.submitted.get() + u64::from(self.dirty.get());
        if let Ok(mut pool) = self.pool.try_borrow_mut() {
            pool.release(serial, kind, size, buf);
            pool.enforce(self.completion.completed());
        }
        // (A busy pool can only mean a drop during our own pool update; the buffer is then
        // simply freed by wgpu, which keeps it alive until the GPU is done with it.)
    }

    /// Staging buffers are idle once unmapped, so they go straight back to the free list.
    pub(crate) fn release_staging(&self, size: u64, buf: wgpu::Buffer) {
        if let Ok(mut pool) = self.pool.try_borrow_mut() {
            pool.put_free(Kind::Staging, size, buf);
            pool.enforce(self.completion.completed());
        }
    }

    /// Records one compute launch: `params` go into this submission's next uniform slot.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch(
        &self,
        op: &'static str,
        kernel: &Kernel,
        config: &[u32],
        inputs: &[&wgpu::Buffer],
        output: &wgpu::Buffer,
        params: &[u32],
        grid: [u32; 3],
    ) -> Result<()> {
        self.launch_multi(op, kernel, config, inputs, &[output], params, grid)
    }

    /// [`Gpu::launch`] of a kernel writing several outputs (bound after the inputs, in order).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch_multi(
        &self,
        op: &'static str,
        kernel: &Kernel,
        config: &[u32],
        inputs: &[&wgpu::Buffer],
        outputs: &[&wgpu::Buffer],
        params: &[u32],
        grid: [u32; 3],
    ) -> Result<()> {
        debug_assert_eq!(inputs.len(), kernel.inputs);
        debug_assert_eq!(outputs.len(), kernel.outputs);
        debug_assert!(params.len() <= PARAM_WORDS);
        if grid.contains(&0) {
            return Ok(());
        }
        let (pipeline, compiled) = self.pipelines.get(&self.device, kernel, config);
        if compiled {
            self.counters.compiles.set(self.counters.compiles.get() + 1);
        }
        let mut param_bytes: Vec<u8> = params.iter().flat_map(|w| w.to_le_bytes()).collect();
        param_bytes.resize(PARAM_SLOT as usize, 0);
        let slot = self.reserve_slot(&param_bytes)?;
        let layout = self.pipelines.layout(&self.device, kernel);
        let bind_group = {
            let entries = self.bind_entries(slot, inputs, outputs, kernel.status);
            self.planned_bind_group(op, &layout, slot, inputs, outputs, &entries)
        };
        self.note_dispatch(op, kernel, &pipeline, &layout, param_bytes, grid, inputs, outputs, kernel.status);
        self.encode_dispatch(&pipeline, &bind_group, grid, kernel.status);
        if let Some(log) = self.launch_log.borrow_mut().as_mut() {
            log.push(format!("{op:<12} {:<28} grid {grid:?}", kernel.name));
        }
        Ok(())
    }

    /// The next parameter slot of this submission, holding `params` (one slot's bytes); a
    /// full submission is submitted first.
    pub(crate) fn reserve_slot(&self, params: &[u8]) -> Result<u64> {
        if self.rec.borrow().slots >= self.max_slots {
            // Bounds latency and the parameter ring: submit what we have.
            self.flush()?;
        }
        let mut rec = self.rec.borrow_mut();
        let slot = rec.slots;
        rec.slots += 1;
        rec.params.extend_from_slice(params);
        Ok(slot)
    }

    /// The bind group entries of a launch in parameter slot `slot`: the slot, the buffers,
    /// then the status word when the kernel raises it.
    fn bind_entries<'a>(
        &'a self,
        slot: u64,
        inputs: &[&'a wgpu::Buffer],
        outputs: &[&'a wgpu::Buffer],
        status: bool,
    ) -> Vec<wgpu::BindGroupEntry<'a>> {
        let mut entries = Vec::with_capacity(inputs.len() + outputs.len() + 2);
        entries.push(wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &self.ring,
                offset: slot * PARAM_SLOT,
                size: wgpu::BufferSize::new(PARAM_SLOT),
            }),
        });
        for (i, b) in inputs.iter().chain(outputs).enumerate() {
            entries.push(wgpu::BindGroupEntry { binding: 1 + i as u32, resource: b.as_entire_binding() });
        }
        if status {
            let binding = 1 + (inputs.len() + outputs.len()) as u32;
            entries.push(wgpu::BindGroupEntry { binding, resource: self.status.as_entire_binding() });
        }
        entries
    }

    /// A new bind group for a launch in parameter slot `slot` binding `buffers` (inputs then
    /// outputs, `outputs` of them), for a replayed trace whose buffers changed.
    pub(crate) fn bind(
        &self,
        label: &'static str,
        layout: &wgpu::BindGroupLayout,
        slot: u64,
        buffers: &[&wgpu::Buffer],
        status: bool,
    ) -> wgpu::BindGroup {
        let entries = self.bind_entries(slot, buffers, &[], status);
        self.counters.bindings.set(self.counters.bindings.get() + 1);
        self.device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(label), layout, entries: &entries })
    }

    /// Encodes one dispatch into the open compute pass (opening it, and the encoder, first).
    pub(crate) fn encode_dispatch(&self, pipeline: &wgpu::ComputePipeline, bind_group: &wgpu::BindGroup, grid: [u32; 3], status: bool) {
        if status {
            self.status_armed.set(true);
        }
        let mut rec = self.rec.borrow_mut();
        let rec = &mut *rec;
        if rec.pass.is_none() {
            let encoder = rec
                .encoder
                .get_or_insert_with(|| self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("pixelgrad") }));
            let pass = encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("pixelgrad ops"), timestamp_writes: None })
                .forget_lifetime();
            rec.pass = Some(pass);
        }
        if let Some(pass) = rec.pass.as_mut() {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bind_group, &[]);
            pass.dispatch_workgroups(grid[0], grid[1], grid[2]);
        }
        self.dirty.set(true);
        self.counters.launches.set(self.counters.launches.get() + 1);
    }

    /// Adds a dispatch to the open recording, if one is open.
    #[allow(clippy::too_many_arguments)]
    fn note_dispatch(
        &self,
        label: &'static str,
        kernel: &Kernel,
        pipeline: &wgpu::ComputePipeline,
        layout: &wgpu::BindGroupLayout,
        params: Vec<u8>,
        grid: [u32; 3],
        inputs: &[&wgpu::Buffer],
        outputs: &[&wgpu::Buffer],
        status: bool,
    ) {
        let mut tracing = self.tracing.borrow_mut();
        let Some(r) = tracing.as_mut() else { return };
        let mut pins = self.pins.borrow_mut();
        let mut binds: Vec<usize> = inputs.iter().map(|b| r.read(b, &mut pins)).collect();
        binds.extend(outputs.iter().map(|b| r.write(b, &mut pins)));
        r.commands.push(Command::Dispatch {
            label,
            kernel: kernel.name.clone(),
            pipeline: pipeline.clone(),
            layout: layout.clone(),
            params,
            grid,
            binds,
            status,
            cache: RefCell::new(None),
        });
    }

    /// Marks the open recording, if any, as one that cannot be replayed.
    pub(crate) fn break_trace(&self, why: &'static str) {
        if let Some(r) = self.tracing.borrow_mut().as_mut() {
            r.slots.set_broken(why);
        }
    }

    /// The slot of a buffer `r` reads (pinned when first seen), outside a command.
    pub(crate) fn trace_read(&self, r: &mut Recorder, b: &wgpu::Buffer) -> usize {
        r.read(b, &mut self.pins.borrow_mut())
    }

    /// Counts a launch served by a replayed trace.
    pub(crate) fn count_replayed(&self) {
        self.counters.replayed.set(self.counters.replayed.get() + 1);
    }

    /// Drops a trace's pins on `bufs`; those neither pinned nor held any more go to the pool.
    pub(crate) fn unpin(&self, bufs: impl IntoIterator<Item = wgpu::Buffer>) {
        for b in bufs {
            let free = self.pins.borrow_mut().unpin(&b);
            if free {
                let size = b.size();
                self.release(Kind::Tensor, size, b);
            }
        }
    }

    /// True while a step is open.
    pub(crate) fn step_open(&self) -> bool {
        self.plans.borrow().is_open()
    }

    /// The bind group of a launch: inside a step, the plan's prepared one when it binds the
    /// same buffers (a replayed launch), else a new one (stored in the plan for next time).
    fn planned_bind_group(
        &self,
        op: &'static str,
        layout: &wgpu::BindGroupLayout,
        slot: u64,
        inputs: &[&wgpu::Buffer],
        outputs: &[&wgpu::Buffer],
        entries: &[wgpu::BindGroupEntry<'_>],
    ) -> wgpu::BindGroup {
        let mut bound: Vec<&wgpu::Buffer> = Vec::with_capacity(inputs.len() + outputs.len());
        bound.extend_from_slice(inputs);
        bound.extend_from_slice(outputs);
        let mut plans = self.plans.borrow_mut();
        let mut planned = plans.launch();
        if let Some(e) = planned.as_mut().and_then(|p| p.recorded()).filter(|e| e.matches(layout, slot, &bound)) {
            self.counters.replayed.set(self.counters.replayed.get() + 1);
            return e.bind_group.clone();
        }
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(op), layout, entries });
        self.counters.bindings.set(self.counters.bindings.get() + 1);
        if let Some(next) = planned {
            let buffers = bound.into_iter().cloned().collect();
            next.record(LaunchEntry { layout: layout.clone(), slot, buffers, bind_group: bind_group.clone() });
        }
        bind_group
    }

    /// A tensor buffer of at least `bytes`: inside a step, the plan's entry when it is free
    /// and of the same class (no pool, no allocation), else a pooled one that becomes the
    /// entry. The token, when given, marks the buffer as plan-owned (see [`GpuTensor`]).
    fn tensor_buffer(&self, op: &'static str, bytes: u64) -> Result<(wgpu::Buffer, u64, Option<Rc<()>>)> {
        let size = size_class(bytes.max(1), self.cap());
        let planned = self.plans.borrow_mut().alloc(|e| e.1 == size);
        let k = match planned {
            Alloc::Planned((buf, size), token) => return Ok((buf, size, Some(token))),
            Alloc::Place(k) => k,
            Alloc::Eager => {
                let (buf, size) = self.alloc(op, Kind::Tensor, bytes)?;
                return Ok((buf, size, None));
            }
        };
        let (buf, size) = self.alloc(op, Kind::Tensor, bytes)?;
        let (token, old) = self.plans.borrow_mut().place(k, (buf.clone(), size));
        if let Some((b, sz)) = old {
            self.release(Kind::Tensor, sz, b);
        }
        Ok((buf, size, token))
    }

    /// Starts a step (see [`pixelgrad_core::Backend::begin_step`]).
    pub(crate) fn begin_step(&self, key: u64) -> Result<()> {
        if self.plans.borrow().is_open() {
            return Err(Error::backend("begin_step", BACKEND, "a step is already open (steps do not nest)"));
        }
        // A step inside a recording would hand out plan memory the trace cannot keep.
        self.break_trace("a step began");
        // A step is one submission of its own, starting at parameter slot 0.
        self.flush()?;
        let evicted = self.plans.borrow_mut().begin(key);
        self.retire_plans(evicted);
        Ok(())
    }

    /// Ends the step and submits it.
    pub(crate) fn end_step(&self) -> Result<()> {
        if !self.plans.borrow_mut().end() {
            return Err(Error::backend("end_step", BACKEND, "no step is open"));
        }
        self.flush().map(|_| ())
    }

    /// Drops every plan; free planned buffers go back to the pool.
    pub(crate) fn drop_plans(&self) {
        let all = self.plans.borrow_mut().take_all();
        self.retire_plans(all);
    }

    fn retire_plans(&self, plans: Vec<plan::Plan>) {
        for p in plans {
            for (b, sz) in pixelgrad_core::plan::free_memory(p.written) {
                self.release(Kind::Tensor, sz, b);
            }
        }
    }

    /// If status-raising kernels ran since the last check, records a copy of the status word
    /// to `dst` at `offset` and disarms; the caller then passes the word to [`Gpu::take_status`].
    pub(crate) fn copy_status(&self, dst: &wgpu::Buffer, offset: u64) -> bool {
        if !self.status_armed.replace(false) {
            return false;
        }
        self.copy_at(&self.status, 0, dst, offset, 4);
        true
    }

    /// Turns a status word read back into an error, and clears it on the device.
    pub(crate) fn take_status(&self, word: u32) -> Result<()> {
        if word == 0 {
            return Ok(());
        }
        self.queue.write_buffer(&self.status, 0, &[0u8; 4]);
        if word & 3 == 0 {
            return Err(Error::backend(
                "matmul_i8",
                BACKEND,
                "matmul_i8_packed was given a value that is not a whole number in [-128, 127] (found on the GPU; reported at the next read)",
            ));
        }
        let op = if word & 1 != 0 { "gather" } else { "scatter_add" };
        Err(Error::backend(
            op,
            BACKEND,
            "an index was out of range, negative, fractional or NaN (found on the GPU; reported at the next read)",
        ))
    }

    /// Records a buffer-to-buffer copy (ends the open compute pass).
    pub(crate) fn copy(&self, src: &wgpu::Buffer, dst: &wgpu::Buffer, bytes: u64) {
        self.copy_at(src, 0, dst, 0, bytes)
    }

    pub(crate) fn copy_at(&self, src: &wgpu::Buffer, src_off: u64, dst: &wgpu::Buffer, dst_off: u64, bytes: u64) {
        if let Some(r) = self.tracing.borrow_mut().as_mut() {
            let mut pins = self.pins.borrow_mut();
            let src = r.read(src, &mut pins);
            let dst = r.write(dst, &mut pins);
            r.commands.push(Command::Copy { src, src_off, dst, dst_off, bytes });
        }
        let mut rec = self.rec.borrow_mut();
        rec.pass = None;
        let encoder = rec
            .encoder
            .get_or_insert_with(|| self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("pixelgrad") }));
        encoder.copy_buffer_to_buffer(src, src_off, dst, dst_off, bytes);
        self.dirty.set(true);
    }

    /// Submits recorded work, if any; returns its submission index.
    pub(crate) fn flush(&self) -> Result<Option<wgpu::SubmissionIndex>> {
        let mut rec = self.rec.borrow_mut();
        // Ending the pass before finishing the encoder.
        rec.pass = None;
        let Some(encoder) = rec.encoder.take() else {
            return Ok(None);
        };
        if !rec.params.is_empty() {
            // Queue writes run before the command buffers of the same submit, and after every
            // earlier submission, so reusing the ring each submission is safe.
            self.queue.write_buffer(&self.ring, 0, &rec.params);
        }
        rec.params.clear();
        rec.slots = 0;
        drop(rec);
        let index = self.queue.submit([encoder.finish()]);
        let serial = self.submitted.get() + 1;
        self.submitted.set(serial);
        self.completion.watch(&self.queue, serial);
        self.dirty.set(false);
        self.counters.submissions.set(self.counters.submissions.get() + 1);
        // Natively nothing else bounds how far the CPU runs ahead of the GPU: waiting for the
        // submission before the previous one keeps at most two in flight (the GPU runs one
        // while the next is queued and a third is recorded), and the poll runs wgpu's
        // callbacks. Buffer reuse does not depend on it (see `pool.rs`).
        #[cfg(not(target_arch = "wasm32"))]
        {
            let prev = {
                let mut last = self.last_index.borrow_mut();
                let older = last.0.take();
                last.0 = last.1.replace(index.clone());
                older
            };
            if let Some(prev) = prev {
                let wait = wgpu::PollType::Wait { submission_index: Some(prev), timeout: Some(self.wait_timeout) };
                if let Err(e) = self.device.poll(wait) {
                    return Err(self.failure("flush", format!("waiting for the previous submission failed: {e}")));
                }
            } else {
                let _ = self.device.poll(wgpu::PollType::Poll);
            }
        }
        // Released buffers of this submission become reusable; over budget, those of
        // completed ones are destroyed.
        self.recycle();
        Ok(Some(index))
    }

    pub(crate) fn count_readback(&self) {
        // What runs after a read may depend on the values read.
        self.break_trace("a value was read back");
        self.counters.readbacks.set(self.counters.readbacks.get() + 1);
    }

    /// Grid for a 1-D launch of `groups` workgroups, folded into 2-D when it passes
    /// maxComputeWorkgroupsPerDimension (kernels rebuild the flat index from both axes).
    pub(crate) fn grid_1d(&self, op: &'static str, groups: u64) -> Result<[u32; 3]> {
        let max = self.limits.max_compute_workgroups_per_dimension as u64;
        if groups <= max {
            return Ok([groups as u32, 1, 1]);
        }
        let y = groups.div_ceil(max);
        if y > max {
            return Err(Error::Limit {
                op,
                backend: BACKEND.into(),
                limit_name: "maxComputeWorkgroupsPerDimension",
                limit: max,
                requested: y,
            });
        }
        Ok([max as u32, y as u32, 1])
    }

    /// Grid with one 256-wide workgroup per 256 elements.
    pub(crate) fn grid_elems(&self, op: &'static str, n: usize) -> Result<[u32; 3]> {
        self.grid_1d(op, (n as u64).div_ceil(256))
    }

    /// Checks one grid dimension of a 2-D / 3-D launch.
    pub(crate) fn check_dim(&self, op: &'static str, v: u64) -> Result<u32> {
        let max = self.limits.max_compute_workgroups_per_dimension as u64;
        if v > max {
            return Err(Error::Limit {
                op,
                backend: BACKEND.into(),
                limit_name: "maxComputeWorkgroupsPerDimension",
                limit: max,
                requested: v,
            });
        }
        Ok(v as u32)
    }

    pub(crate) fn counters(&self) -> Counters {
        let c = &self.counters;
        Counters {
            allocations: c.allocations.get(),
            compiles: c.compiles.get(),
            launches: c.launches.get(),
            submissions: c.submissions.get(),
            readbacks: c.readbacks.get(),
            bytes_in_use: self.pool.borrow().bytes,
            pooled_bytes: self.pool.borrow().pooled,
            bindings: c.bindings.get(),
            replayed: c.replayed.get(),
        }
    }

    /// Destroys every pooled buffer whose work has completed; returns the bytes given back.
    /// Queued work is submitted first (outside a step), so buffers released while it was
    /// recorded come free too; natively this waits for the GPU, so the pool ends up empty.
    pub(crate) fn trim(&self) -> Result<u64> {
        if !self.plans.borrow().is_open() {
            self.flush()?;
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            let wait = wgpu::PollType::Wait { submission_index: None, timeout: Some(self.wait_timeout) };
            if let Err(e) = self.device.poll(wait) {
                return Err(self.failure("trim", format!("waiting for the GPU failed: {e}")));
            }
            self.completion.mark(self.submitted.get());
        }
        Ok(self.trim_completed())
    }

    /// Destroys every pooled buffer whose work is known to have completed.
    pub(crate) fn trim_completed(&self) -> u64 {
        let mut pool = self.pool.borrow_mut();
        pool.recycle(self.submitted.get());
        pool.trim(self.completion.completed())
    }

    /// Records that the work up to submission `serial` has completed (a readback saw it).
    pub(crate) fn mark_completed(&self, serial: u64) {
        self.completion.mark(serial);
    }

    /// Serial of the last submission.
    pub(crate) fn submitted(&self) -> u64 {
        self.submitted.get()
    }

    /// The pool budget in bytes (see `pool.rs`).
    pub(crate) fn pool_budget(&self) -> u64 {
        self.pool.borrow().budget
    }

    /// Sets the pool budget and applies it at once (as far as completed work allows).
    pub(crate) fn set_pool_budget(&self, bytes: u64) {
        let mut pool = self.pool.borrow_mut();
        pool.budget = bytes;
        pool.recycle(self.submitted.get());
        pool.enforce(self.completion.completed());
    }

    /// Buffers waiting for the submission that may use them to be submitted.
    pub(crate) fn pending_buffers(&self) -> usize {
        self.pool.borrow().pending_len()
    }

    pub(crate) fn recycle(&self) {
        if let Ok(mut pool) = self.pool.try_borrow_mut() {
            pool.recycle(self.submitted.get());
            pool.enforce(self.completion.completed());
        }
    }
}

/// Bytes of `len` 8-bit elements packed four per u32 word.
pub(crate) fn packed_bytes(len: usize) -> u64 {
    (len as u64).div_ceil(4) * 4
}

/// Bytes of `len` elements of `dtype` as stored: 4 each for f32, 8-bit elements four per u32
/// word, f16 two per word (whole words either way).
pub(crate) fn stored_bytes(len: usize, dtype: pixelgrad_core::kernel::DType) -> u64 {
    use pixelgrad_core::kernel::DType;
    match dtype {
        DType::I8 | DType::U8 => packed_bytes(len),
        DType::F16 => (len as u64).div_ceil(2) * 4,
        _ => len as u64 * 4,
    }
}

/// A tensor's device memory: a pooled buffer that goes back to the pool on drop.
pub(crate) struct GpuTensor {
    buf: Option<wgpu::Buffer>,
    size: u64,
    /// Elements (the buffer may be larger: size classes).
    pub len: usize,
    /// Element type: `F32` (4 bytes each), 8-bit weights `I8` / `U8` packed four per u32
    /// word (element `4i + j` in byte `j` of word `i`, little-endian), or half-precision `F16`
    /// packed two per word (element `2i` in the low 16 bits of word `i`, `2i + 1` in the high).
    pub dtype: pixelgrad_core::kernel::DType,
    gpu: Rc<Gpu>,
    /// Set when the buffer belongs to a step plan: while the plan holds its clone too, the
    /// plan owns the buffer and a drop leaves it there.
    plan: Option<Rc<()>>,
}

impl GpuTensor {
    /// A fresh (pooled) buffer for `len` elements; contents undefined.
    pub(crate) fn new(gpu: &Rc<Gpu>, op: &'static str, len: usize) -> Result<GpuTensor> {
        let (buf, size, plan) = gpu.tensor_buffer(op, len as u64 * 4)?;
        Ok(GpuTensor { buf: Some(buf), size, len, gpu: gpu.clone(), plan, dtype: pixelgrad_core::kernel::DType::F32 })
    }

    /// A fresh (pooled) buffer for `len` packed elements of `dtype` (8-bit four per word, f16
    /// two per word): [`GpuTensor::data_bytes`] of them, rounded up to whole words.
    pub(crate) fn new_packed(gpu: &Rc<Gpu>, op: &'static str, len: usize, dtype: pixelgrad_core::kernel::DType) -> Result<GpuTensor> {
        let (buf, size, plan) = gpu.tensor_buffer(op, stored_bytes(len, dtype))?;
        Ok(GpuTensor { buf: Some(buf), size, len, gpu: gpu.clone(), plan, dtype })
    }

    /// A tensor over `buf`, a buffer a trace pins (a constant output of a replay): it counts as
    /// one more holder of the buffer, which its drop gives back to the trace, not the pool.
    pub(crate) fn pinned(gpu: &Rc<Gpu>, buf: wgpu::Buffer, len: usize, dtype: pixelgrad_core::kernel::DType) -> GpuTensor {
        gpu.pins.borrow_mut().hold(&buf);
        GpuTensor { size: buf.size(), buf: Some(buf), len, gpu: gpu.clone(), plan: None, dtype }
    }

    /// A tensor over `buf` (of `size` bytes), a buffer taken from the pool (a replay's output).
    pub(crate) fn pooled(gpu: &Rc<Gpu>, buf: wgpu::Buffer, size: u64, len: usize, dtype: pixelgrad_core::kernel::DType) -> GpuTensor {
        GpuTensor { size, buf: Some(buf), len, gpu: gpu.clone(), plan: None, dtype }
    }

    /// True for 8-bit storage (i8 or u8).
    pub(crate) fn is_8bit(&self) -> bool {
        matches!(self.dtype, pixelgrad_core::kernel::DType::I8 | pixelgrad_core::kernel::DType::U8)
    }

    /// True for packed (non-f32) storage: 8-bit or f16. Only matmul_i8 (8-bit weights) and
    /// widen read it; every other kernel reads f32.
    pub(crate) fn is_packed(&self) -> bool {
        !matches!(self.dtype, pixelgrad_core::kernel::DType::F32)
    }

    /// Bytes the first `len` elements occupy: 4 each for f32, packed words otherwise.
    pub(crate) fn data_bytes(&self, len: usize) -> u64 {
        stored_bytes(len, self.dtype)
    }

    /// Bytes of the buffer (its pool size class, at least `len * 4`).
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        // Only `drop` takes the buffer out.
        self.buf.as_ref().expect("buffer present until drop")
    }
}

impl Drop for GpuTensor {
    fn drop(&mut self) {
        if self.plan.as_ref().is_some_and(|t| Rc::strong_count(t) > 1) {
            return;
        }
        if let Some(b) = self.buf.take() {
            self.gpu.release(Kind::Tensor, self.size, b);
        }
    }
}
