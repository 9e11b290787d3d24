//! Freed device blocks kept for the stream that freed them, so that allocating and freeing
//! in a loop costs no driver call (the pool's `cuMemAllocFromPoolAsync` / `cuMemFreeAsync`
//! pair) once warm.
//!
//! Stream-ordered, as the pool itself is: a block is kept at the point its free was
//! ordered on stream `s` (after every piece of work pending on its memory: on `s` itself,
//! or on other streams through event waits enqueued on `s`), so it goes back out only to an
//! allocation on `s`, whose work runs after that point. Another stream's first use of the
//! new allocation waits for it on `s` (the ledger records every allocation as a write on
//! its stream), hence after the old work too. Only the pool's streams keep blocks (they
//! live as long as the runtime); a block of another size class, or past the caps, goes back
//! to the pool. `Runtime.release_cached()` (trim, out of memory) frees them all.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// `(block size, stream slot)` in one word: sizes are multiples of 512 below 2^48, slots
/// below 2^25.
fn key(slot: u32, size: u64) -> u64 {
    (size << 16) ^ u64::from(slot)
}

/// Allocations are rounded up to this many bytes (the driver's granularity is finer), so
/// nearby sizes share blocks.
pub(crate) const GRANULE: u64 = 512;
/// Blocks kept per stream and size.
const PER_SIZE: usize = 16;
/// Bytes kept in all.
const MAX_BYTES: u64 = 256 << 20;

/// The size an allocation of `nbytes` takes from the pool.
pub(crate) fn block_size(nbytes: u64) -> u64 {
    nbytes.max(1).div_ceil(GRANULE).saturating_mul(GRANULE)
}

#[derive(Default)]
pub(crate) struct BlockCache {
    /// `key(stream slot, block size)` -> `(slot, free blocks)`, most recently freed last.
    free: HashMap<u64, (u32, Vec<u64>), BuildHasherDefault<cutile_host::IdHasher>>,
    bytes: u64,
    /// Blocks handed out again and blocks kept (counters for tests and benchmarks).
    pub hits: u64,
    pub kept: u64,
}

impl BlockCache {
    /// A kept block of `size` bytes freed on `slot`, if there is one.
    pub(crate) fn take(&mut self, slot: u32, size: u64) -> Option<u64> {
        let block = self.free.get_mut(&key(slot, size))?.1.pop()?;
        self.bytes -= size;
        self.hits += 1;
        Some(block)
    }

    /// Keep `block` (of `size` bytes, its free ordered on `slot`); `false` when the caps
    /// say it goes back to the pool.
    pub(crate) fn keep(&mut self, slot: u32, size: u64, block: u64) -> bool {
        if self.bytes.saturating_add(size) > MAX_BYTES {
            return false;
        }
        let (_, list) = self
            .free
            .entry(key(slot, size))
            .or_insert_with(|| (slot, Vec::new()));
        if list.len() >= PER_SIZE {
            return false;
        }
        list.push(block);
        self.bytes += size;
        self.kept += 1;
        true
    }

    /// Every kept block, as `(slot, block)`, and none kept after.
    pub(crate) fn drain(&mut self) -> Vec<(u32, u64)> {
        self.bytes = 0;
        self.free
            .drain()
            .flat_map(|(_, (slot, blocks))| blocks.into_iter().map(move |b| (slot, b)))
            .collect()
    }

    /// Bytes kept now.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_go_back_out_on_their_stream_and_size_only() {
        let mut c = BlockCache::default();
        assert_eq!(block_size(0), GRANULE);
        assert_eq!(block_size(1 << 20), 1 << 20);
        assert_eq!(block_size((1 << 20) + 1), (1 << 20) + GRANULE);
        assert!(c.keep(0, 1024, 0xA000));
        assert_eq!(c.take(1, 1024), None); // another stream: no
        assert_eq!(c.take(0, 512), None); // another size: no
        assert_eq!(c.take(0, 1024), Some(0xA000));
        assert_eq!(c.take(0, 1024), None);
        for i in 0..PER_SIZE as u64 {
            assert!(c.keep(0, 1024, i));
        }
        assert!(!c.keep(0, 1024, 99)); // the per-size cap
        assert!(!c.keep(1, MAX_BYTES, 7)); // the byte cap
        assert_eq!(c.bytes(), PER_SIZE as u64 * 1024);
        let mut all = c.drain();
        all.sort_unstable();
        assert_eq!(all.len(), PER_SIZE);
        assert_eq!(c.bytes(), 0);
        assert_eq!(c.take(0, 1024), None);
        assert_eq!((c.hits, c.kept), (1, 1 + PER_SIZE as u64));
    }
}
