//! Freed device blocks kept for the stream that freed them, so that allocating and freeing
//! in a loop costs no driver call (the pool's `cuMemAllocFromPoolAsync` / `cuMemFreeAsync`
//! pair) once warm.
//!
//! Stream-ordered, as the pool itself is: a block is kept at the point its free was
//! ordered on stream `s` (after every piece of work pending on its memory: on `s` itself,
//! or on other streams through event waits enqueued on `s`), so it goes back out only to an
//! allocation on `s`, whose work runs after that point. Another stream's first use of the
//! new allocation waits for it on `s` (the ledger records every allocation as a write on
//! its stream), hence after the old work too. Per device as well: a free is ordered on a
//! stream of the memory's own device (`Runtime::free_storage_memory`), each entry records
//! its device and a block goes out only to an allocation of that device, so memory of one
//! device is never handed to another. Only the pool's streams keep blocks (they live as
//! long as the runtime); a block of another size class, or past the caps (per device), goes
//! back to the pool. `Runtime.release_cached()` (trim, out of memory) frees them.

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
/// Bytes kept per device.
const MAX_BYTES: u64 = 256 << 20;

/// The size an allocation of `nbytes` takes from the pool.
pub(crate) fn block_size(nbytes: u64) -> u64 {
    nbytes.max(1).div_ceil(GRANULE).saturating_mul(GRANULE)
}

/// The blocks of one stream and size.
struct Kept {
    slot: u32,
    /// The device the stream (and every block here) belongs to.
    device: u32,
    blocks: Vec<u64>,
}

#[derive(Default)]
pub(crate) struct BlockCache {
    /// `key(stream slot, block size)` -> the blocks, most recently freed last.
    free: HashMap<u64, Kept, BuildHasherDefault<cutile_host::IdHasher>>,
    /// Bytes kept, by device ordinal.
    bytes: Vec<u64>,
    /// Blocks handed out again and blocks kept (counters for tests and benchmarks).
    pub hits: u64,
    pub kept: u64,
}

impl BlockCache {
    /// A kept block of `size` bytes of `device`, freed on `slot`, if there is one.
    pub(crate) fn take(&mut self, device: u32, slot: u32, size: u64) -> Option<u64> {
        let kept = self.free.get_mut(&key(slot, size))?;
        if kept.device != device {
            return None; // (a stream belongs to one device: never so)
        }
        let block = kept.blocks.pop()?;
        self.bytes[device as usize] -= size;
        self.hits += 1;
        Some(block)
    }

    /// Keep `block` (of `size` bytes of `device`, its free ordered on `slot`, a stream of
    /// that device); `false` when the caps say it goes back to the pool.
    pub(crate) fn keep(&mut self, device: u32, slot: u32, size: u64, block: u64) -> bool {
        let d = device as usize;
        if self.bytes.len() <= d {
            self.bytes.resize(d + 1, 0);
        }
        if self.bytes[d].saturating_add(size) > MAX_BYTES {
            return false;
        }
        let kept = self.free.entry(key(slot, size)).or_insert_with(|| Kept {
            slot,
            device,
            blocks: Vec::new(),
        });
        if kept.device != device || kept.blocks.len() >= PER_SIZE {
            return false;
        }
        kept.blocks.push(block);
        self.bytes[d] += size;
        self.kept += 1;
        true
    }

    /// Every kept block of `device` (`None`: of every device), as `(slot, block)`; none
    /// of those kept after.
    pub(crate) fn drain(&mut self, device: Option<u32>) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        self.free.retain(|_, k| {
            if device.is_some_and(|d| d != k.device) {
                return true;
            }
            out.extend(k.blocks.drain(..).map(|b| (k.slot, b)));
            false
        });
        match device {
            Some(d) => {
                if let Some(b) = self.bytes.get_mut(d as usize) {
                    *b = 0;
                }
            }
            None => self.bytes.clear(),
        }
        out
    }

    /// Bytes kept now of `device` (`None`: of every device).
    pub(crate) fn bytes(&self, device: Option<u32>) -> u64 {
        match device {
            Some(d) => self.bytes.get(d as usize).copied().unwrap_or(0),
            None => self.bytes.iter().sum(),
        }
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
        assert!(c.keep(0, 0, 1024, 0xA000));
        assert_eq!(c.take(0, 1, 1024), None); // another stream: no
        assert_eq!(c.take(0, 0, 512), None); // another size: no
        assert_eq!(c.take(0, 0, 1024), Some(0xA000));
        assert_eq!(c.take(0, 0, 1024), None);
        for i in 0..PER_SIZE as u64 {
            assert!(c.keep(0, 0, 1024, i));
        }
        assert!(!c.keep(0, 0, 1024, 99)); // the per-size cap
        assert!(!c.keep(0, 1, MAX_BYTES, 7)); // the byte cap
        assert_eq!(c.bytes(Some(0)), PER_SIZE as u64 * 1024);
        let mut all = c.drain(None);
        all.sort_unstable();
        assert_eq!(all.len(), PER_SIZE);
        assert_eq!(c.bytes(None), 0);
        assert_eq!(c.take(0, 0, 1024), None);
        assert_eq!((c.hits, c.kept), (1, 1 + PER_SIZE as u64));
    }

    #[test]
    fn blocks_stay_with_their_device() {
        let mut c = BlockCache::default();
        // slot 0 is a stream of device 0, slot 4 one of device 1
        assert!(c.keep(0, 0, 1024, 0xA000));
        assert!(c.keep(1, 4, 1024, 0xB000));
        // never across devices, even naming the other device's stream
        assert_eq!(c.take(1, 0, 1024), None);
        assert_eq!(c.take(0, 4, 1024), None);
        assert!(!c.keep(1, 0, 1024, 0xC000)); // a stream's entry is of its device
        assert_eq!(
            (c.bytes(Some(0)), c.bytes(Some(1)), c.bytes(None)),
            (1024, 1024, 2048)
        );
        // the byte cap is per device
        assert!(c.keep(1, 4, MAX_BYTES - 1024, 0xD000));
        assert!(!c.keep(1, 5, 1024, 0xE000));
        assert!(c.keep(0, 1, 1024, 0xE000));
        // draining one device leaves the other's
        let mut one = c.drain(Some(1));
        one.sort_unstable();
        assert_eq!(one, vec![(4, 0xB000), (4, 0xD000)]);
        assert_eq!((c.bytes(Some(1)), c.bytes(Some(0))), (0, 2048));
        assert_eq!(c.take(1, 4, 1024), None);
        assert_eq!(c.take(0, 0, 1024), Some(0xA000));
        assert_eq!(c.drain(None), vec![(1, 0xE000)]);
    }
}
