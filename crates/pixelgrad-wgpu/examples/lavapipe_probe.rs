//! Small, self-contained measurements of a WebGPU adapter (written to find out why Mesa's
//! lavapipe ran pixelgrad's kernels slowly). Raw wgpu, no pixelgrad ops, so each number
//! isolates one cost:
//!
//! - `dispatch N`: N empty-ish dispatches in one submission, then N submissions of one;
//! - `copy N [WG]`: GB/s of an elementwise `y = x * 2` over N floats, scalar and vec4 loads;
//! - `matmul FILE M N K TILE_M TILE_N [reps]`: GFLOP/s of a WGSL matmul kernel read from FILE
//!   at run time (bindings: 0 uniform [M, N, K, 0, 0], 1 a, 2 b, 3 c; grid
//!   (ceil(N/TILE_N), ceil(M/TILE_M), 1)), checked against a CPU product;
//! - `matmul-tex FILE M N K TILE_M TILE_N [reps]`: the same with A and B as `rgba32float`
//!   textures (bindings 1 and 2: A as K/4 x M texels, B as N/4 x K, row-major, 4 consecutive
//!   elements per texel), to time texel fetches against storage loads.
//!
//! `cargo run --release -p pixelgrad-wgpu --example lavapipe_probe -- dispatch 1000`

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    if let Err(e) = probe::run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
mod probe {
    use std::time::Instant;
    use wgpu::util::DeviceExt;

    type R<T> = Result<T, String>;

    pub fn run() -> R<()> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let g = Gpu::new()?;
        println!(
            "adapter: {} ({:?}), subgroups: {} ({}..={} invocations)",
            g.info.name,
            g.info.backend,
            g.device.features().contains(wgpu::Features::SUBGROUP),
            g.info.subgroup_min_size,
            g.info.subgroup_max_size
        );
        let num = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
        match args.first().map(String::as_str) {
            Some("dispatch") => dispatch(&g, num(1, 1000)),
            Some("copy") => copy(&g, num(1, 1 << 22), num(2, 64)),
            Some("matmul") => {
                let file = args.get(1).ok_or("matmul FILE M N K TILE_M TILE_N [reps]")?;
                let src = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
                matmul(&g, &src, [num(2, 512), num(3, 512), num(4, 512)], [num(5, 64), num(6, 64)], num(7, 3), false)
            }
            Some("matmul-tex") => {
                let file = args.get(1).ok_or("matmul-tex FILE M N K TILE_M TILE_N [reps]")?;
                let src = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
                matmul(&g, &src, [num(2, 512), num(3, 512), num(4, 512)], [num(5, 64), num(6, 64)], num(7, 3), true)
            }
            _ => Err("usage: dispatch N | copy N | matmul[-tex] FILE M N K TILE_M TILE_N [reps]".into()),
        }
    }

    struct Gpu {
        device: wgpu::Device,
        queue: wgpu::Queue,
        info: wgpu::AdapterInfo,
    }

    impl Gpu {
        fn new() -> R<Gpu> {
            let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
            desc.backends = wgpu::Backends::PRIMARY;
            let instance = wgpu::Instance::new(desc);
            let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
                .map_err(|e| format!("no adapter: {e}"))?;
            let info = adapter.get_info();
            let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
                label: None,
                // Subgroup operations where the adapter has them, for kernels that try them.
                required_features: adapter.features() & wgpu::Features::SUBGROUP,
                required_limits: adapter.limits(),
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            }))
            .map_err(|e| format!("no device: {e}"))?;
            Ok(Gpu { device, queue, info })
        }

        fn storage(&self, data: &[f32]) -> wgpu::Buffer {
            self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: bytemuck::cast_slice(data),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            })
        }

        fn uniform(&self, words: &[u32]) -> wgpu::Buffer {
            let mut w = words.to_vec();
            w.resize(64, 0);
            self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: bytemuck::cast_slice(&w),
                usage: wgpu::BufferUsages::UNIFORM,
            })
        }

        fn pipeline(&self, src: &str) -> wgpu::ComputePipeline {
            self.pipeline_with(src, &[])
        }

        fn pipeline_with(&self, src: &str, constants: &[(&str, f64)]) -> wgpu::ComputePipeline {
            let module = self
                .device
                .create_shader_module(wgpu::ShaderModuleDescriptor { label: None, source: wgpu::ShaderSource::Wgsl(src.into()) });
            self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: None,
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: wgpu::PipelineCompilationOptions { constants, ..Default::default() },
                cache: None,
            })
        }

        /// An `rgba32float` texture of `width` x `height` texels holding `data` (row-major,
        /// four floats per texel).
        fn texture(&self, data: &[f32], width: usize, height: usize) -> wgpu::TextureView {
            let size = wgpu::Extent3d { width: width as u32, height: height as u32, depth_or_array_layers: 1 };
            let t = self.device.create_texture(&wgpu::TextureDescriptor {
                label: None,
                size,
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: wgpu::TextureFormat::Rgba32Float,
                usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                view_formats: &[],
            });
            self.queue.write_texture(
                t.as_image_copy(),
                bytemuck::cast_slice(data),
                wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(width as u32 * 16), rows_per_image: None },
                size,
            );
            t.create_view(&Default::default())
        }

        fn bind(&self, p: &wgpu::ComputePipeline, bufs: &[&wgpu::Buffer]) -> wgpu::BindGroup {
            let res: Vec<wgpu::BindingResource> = bufs.iter().map(|b| b.as_entire_binding()).collect();
            self.bind_resources(p, res)
        }

        fn bind_resources(&self, p: &wgpu::ComputePipeline, res: Vec<wgpu::BindingResource>) -> wgpu::BindGroup {
            let entries: Vec<_> =
                res.into_iter().enumerate().map(|(i, resource)| wgpu::BindGroupEntry { binding: i as u32, resource }).collect();
            self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &p.get_bind_group_layout(0),
                entries: &entries,
            })
        }

        /// Records `n` dispatches of `grid` into one submission and waits for it.
        fn run(&self, p: &wgpu::ComputePipeline, bg: &wgpu::BindGroup, grid: [u32; 3], n: usize) -> R<()> {
            let mut enc = self.device.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                pass.set_pipeline(p);
                pass.set_bind_group(0, bg, &[]);
                for _ in 0..n {
                    pass.dispatch_workgroups(grid[0], grid[1], grid[2]);
                }
            }
            self.queue.submit([enc.finish()]);
            self.wait()
        }

        fn wait(&self) -> R<()> {
            self.device.poll(wgpu::PollType::wait_indefinitely()).map(|_| ()).map_err(|e| e.to_string())
        }

        fn read(&self, b: &wgpu::Buffer, len: usize) -> R<Vec<f32>> {
            let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: len as u64 * 4,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut enc = self.device.create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(b, 0, &staging, 0, len as u64 * 4);
            self.queue.submit([enc.finish()]);
            staging.slice(..).map_async(wgpu::MapMode::Read, |_| {});
            self.wait()?;
            let view = staging.slice(..).get_mapped_range().map_err(|e| e.to_string())?;
            Ok(bytemuck::cast_slice(&view).to_vec())
        }
    }

    /// CPU time of this process (all threads, user + system) in seconds, from /proc (Linux;
    /// 0 elsewhere, which makes the per-CPU-second figure meaningless there).
    fn cpu_seconds() -> f64 {
        let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
        // Fields after the parenthesised command name, from the state: utime and stime are the
        // 12th and 13th.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = rest.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
        // Clock ticks: 100 per second on Linux.
        (num(11) + num(12)) / 100.0
    }

    const TINY: &str = "
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&x)) { x[id.x] = x[id.x] + 1.0; }
}";

    fn dispatch(g: &Gpu, n: usize) -> R<()> {
        let x = g.storage(&[0.0; 64]);
        let p = g.pipeline(TINY);
        let bg = g.bind(&p, &[&x]);
        g.run(&p, &bg, [1, 1, 1], 1)?;
        let t = Instant::now();
        g.run(&p, &bg, [1, 1, 1], n)?;
        let one = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        let t = Instant::now();
        for _ in 0..n {
            let mut enc = g.device.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                pass.set_pipeline(&p);
                pass.set_bind_group(0, &bg, &[]);
                pass.dispatch_workgroups(1, 1, 1);
            }
            g.queue.submit([enc.finish()]);
        }
        g.wait()?;
        let many = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        let v = g.read(&x, 1)?;
        println!("{n} dispatches in one submission: {one:.1} us each; one submission each: {many:.1} us each (x = {})", v[0]);
        Ok(())
    }

    const SCALE: &str = "
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = id.x + id.y * nwg.x * WGu;
    if (i < arrayLength(&y)) { y[i] = x[i] * 2.0; }
}";

    const SCALE4: &str = "
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = id.x + id.y * nwg.x * WGu;
    if (i < arrayLength(&y)) { y[i] = x[i] * 2.0; }
}";

    fn copy(g: &Gpu, n: usize, wg: usize) -> R<()> {
        let x = g.storage(&vec![1.5; n]);
        let y = g.storage(&vec![0.0; n]);
        for (name, src, per) in [("scalar", SCALE, 1), ("vec4", SCALE4, 4)] {
            let p = g.pipeline(&src.replace("WG", &wg.to_string()));
            let bg = g.bind(&p, &[&x, &y]);
            let groups = (n / per).div_ceil(wg) as u32;
            let grid = if groups > 65535 { [32768, groups.div_ceil(32768), 1] } else { [groups, 1, 1] };
            g.run(&p, &bg, grid, 1)?;
            let reps = 5;
            let t = Instant::now();
            g.run(&p, &bg, grid, reps)?;
            let s = t.elapsed().as_secs_f64();
            let gbs = (n * 8 * reps) as f64 / s / 1e9;
            let v = g.read(&y, 1)?;
            println!("{name}: y = 2x over {n} floats: {gbs:.2} GB/s, {:.1} M elements/s (y[0] = {})", (n * reps) as f64 / s / 1e6, v[0]);
        }
        Ok(())
    }

    fn matmul(g: &Gpu, src: &str, [m, n, k]: [usize; 3], [tm, tn]: [usize; 2], reps: usize, tex: bool) -> R<()> {
        // Small integers keep the products exact in f32.
        let av: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
        let bv: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 - 2.0).collect();
        // PROBE_FLAGS="TRANS_A=1,VEC_B=1": override constants; TRANS_* also store the
        // operand transposed.
        let flags = std::env::var("PROBE_FLAGS").unwrap_or_default();
        let consts: Vec<(&str, f64)> =
            flags.split(',').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k, v.parse().unwrap_or(0.0))).collect();
        let on = |name: &str| consts.iter().any(|(k, v)| *k == name && *v != 0.0);
        let transpose =
            |v: &[f32], rows: usize, cols: usize| -> Vec<f32> { (0..rows * cols).map(|i| v[(i % rows) * cols + i / rows]).collect() };
        let a = g.storage(&if on("TRANS_A") { transpose(&av, m, k) } else { av.clone() });
        let b = g.storage(&if on("TRANS_B") { transpose(&bv, k, n) } else { bv.clone() });
        let c = g.storage(&vec![0.0; m * n]);
        let params = g.uniform(&[m as u32, n as u32, k as u32, 0, 0]);
        let p = g.pipeline_with(src, &consts);
        let bg = if tex {
            if m % 4 != 0 || n % 4 != 0 || k % 4 != 0 {
                return Err("matmul-tex needs M, N and K multiples of 4".into());
            }
            let ta = g.texture(&av, k / 4, m);
            let tb = g.texture(&bv, n / 4, k);
            let res = vec![
                params.as_entire_binding(),
                wgpu::BindingResource::TextureView(&ta),
                wgpu::BindingResource::TextureView(&tb),
                c.as_entire_binding(),
            ];
            g.bind_resources(&p, res)
        } else {
            g.bind(&p, &[&params, &a, &b, &c])
        };
        let grid = [n.div_ceil(tn) as u32, m.div_ceil(tm) as u32, 1];
        let t = Instant::now();
        g.run(&p, &bg, grid, 1)?;
        let first = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let cpu0 = cpu_seconds();
        g.run(&p, &bg, grid, reps)?;
        let s = t.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu0;
        let got = g.read(&c, m * n)?;
        let mut bad = 0;
        for (r, col) in [(0, 0), (m - 1, n - 1), (m / 2, n / 3), (m / 3, n - 1), (m - 1, 0)] {
            let want: f32 = (0..k).map(|i| av[r * k + i] * bv[i * n + col]).sum();
            if got[r * n + col] != want {
                bad += 1;
                println!("c[{r},{col}] = {} want {want}", got[r * n + col]);
            }
        }
        let gf = 2.0 * (m * n * k * reps) as f64 / s / 1e9;
        // Per CPU second too: on a shared machine the wall clock mostly measures the load.
        let per_cpu = 2.0 * (m * n * k * reps) as f64 / cpu / 1e9;
        println!(
            "matmul {m}x{n}x{k}: {gf:.2} GFLOP/s, {per_cpu:.2} GFLOP per CPU second (first run incl. compile {:.2} s){}",
            first,
            if bad > 0 { " WRONG" } else { "" }
        );
        Ok(())
    }
}
