//! The buffer pool. Tensor buffers come in power-of-two size classes; a dropped tensor's
//! buffer waits in a "pending" list tagged with the submission that may still use it, and moves
//! to the free list once that submission has been *submitted* (not completed). Before that,
//! commands that read it are still in the open encoder, and an upload (`queue.write_buffer`)
//! into it would land before them. After it, WebGPU's queue order does the rest: a later
//! `write_buffer` or command runs after every earlier submission, whatever the GPU's progress,
//! so neither the browser (which cannot block) nor a native caller has to wait for the GPU
//! to reuse memory, and a repeated step allocates nothing from its third repetition on.

use std::collections::{HashMap, VecDeque};

/// Smallest buffer handed out (bytes). Empty tensors get one too, since zero-sized buffers
/// cannot be bound.
pub const MIN_BUFFER: u64 = 256;

/// Size class for a request of `bytes`: the next power of two (at least [`MIN_BUFFER`]), or,
/// where that would pass `cap` (the binding-size limit), the request rounded up to 256 bytes.
/// Above 1 MiB each octave is split into 8 classes, so big tensors waste at most 12.5%.
pub fn size_class(bytes: u64, cap: u64) -> u64 {
    let b = bytes.max(MIN_BUFFER);
    let p = b.next_power_of_two();
    let class = if p > (1 << 20) {
        let step = p / 16;
        b.div_ceil(step) * step
    } else {
        p
    };
    if class <= cap {
        class
    } else {
        b.div_ceil(256) * 256
    }
}

/// What kind of buffer a pool entry is, which fixes its usage flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// Tensor storage: STORAGE | COPY_SRC | COPY_DST.
    Tensor,
    /// Readback staging: MAP_READ | COPY_DST.
    Staging,
}

impl Kind {
    pub(crate) fn usage(self) -> wgpu::BufferUsages {
        match self {
            Kind::Tensor => {
                wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST
            }
            Kind::Staging => wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        }
    }
}

/// Free and pending buffers by (kind, size class).
#[derive(Default)]
pub(crate) struct Pool {
    free: HashMap<(Kind, u64), Vec<wgpu::Buffer>>,
    /// (submission serial that must complete, kind, size, buffer), in release order.
    pending: VecDeque<(u64, Kind, u64, wgpu::Buffer)>,
    /// Bytes of every buffer the pool created and has not destroyed (live, pending, free).
    pub(crate) bytes: u64,
}

impl Pool {
    /// A free buffer of exactly this class, if any.
    pub(crate) fn take(&mut self, kind: Kind, size: u64) -> Option<wgpu::Buffer> {
        self.free.get_mut(&(kind, size)).and_then(|v| v.pop())
    }

    /// Returns a buffer that the work up to submission `serial` may still use.
    pub(crate) fn release(&mut self, serial: u64, kind: Kind, size: u64, buf: wgpu::Buffer) {
        self.pending.push_back((serial, kind, size, buf));
    }

    /// Returns a buffer no work uses (an unmapped staging buffer) straight to the free list.
    pub(crate) fn put_free(&mut self, kind: Kind, size: u64, buf: wgpu::Buffer) {
        self.free.entry((kind, size)).or_default().push(buf);
    }

    /// Moves every pending buffer whose submission has been submitted to the free lists.
    pub(crate) fn recycle(&mut self, submitted: u64) {
        // Tags never decrease (a release while the encoder holds commands is tagged with the
        // next serial, and after that submission every tag is at least that serial), so the
        // submitted ones are a prefix.
        while self.pending.front().is_some_and(|e| e.0 <= submitted) {
            if let Some((_, kind, size, buf)) = self.pending.pop_front() {
                self.free.entry((kind, size)).or_default().push(buf);
            }
        }
    }

    /// Destroys free buffers (not pending ones); returns the bytes given back.
    pub(crate) fn trim(&mut self) -> u64 {
        let mut freed = 0;
        for ((_, size), bufs) in self.free.drain() {
            for b in bufs {
                freed += size;
                b.destroy();
            }
        }
        self.bytes -= freed;
        freed
    }

    /// Number of buffers waiting for their submission to complete.
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes() {
        assert_eq!(size_class(0, 1 << 30), MIN_BUFFER);
        assert_eq!(size_class(1000, 1 << 30), 1024);
        assert_eq!(size_class(1024, 1 << 30), 1024);
        // Finer classes above 1 MiB: 9 MiB lies in the (8, 16] MiB octave, steps of 1 MiB.
        assert_eq!(size_class((9 << 20) - 5, 1 << 30), 9 << 20);
        // Past the cap, round to 256 bytes instead of doubling.
        assert_eq!(size_class(3 << 20, 4 << 20), 3 << 20);
        assert_eq!(size_class(5 << 20, 4 << 20), 5 << 20);
        assert_eq!(size_class((5 << 20) + 1, 4 << 20), (5 << 20) + 256);
    }
}
