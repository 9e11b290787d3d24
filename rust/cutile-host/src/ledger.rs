//! The in-flight ledger (host rule 4): byte ranges each pending operation reads or writes,
//! keyed by its completion token, with the stream position the work sits at. A new access
//! that conflicts with a pending one (same storage, overlapping bytes, either side
//! exclusive, another token) must be ordered after it: on the same stream it already is;
//! on another stream it waits for that stream's event ([`crate::InFlight`] plans it); a
//! holder on no stream (`acquire`, an external user) cannot be waited on and refuses it.

use crate::streams::NO_STREAM;
use crate::{HostError, IdMap};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Access {
    pub storage: u64,
    /// Byte range `[lo, hi)`.
    pub lo: u64,
    pub hi: u64,
    pub exclusive: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub token: u64,
    /// The stream slot the work runs on ([`NO_STREAM`]: an external holder).
    pub stream: u32,
    /// Its position on that stream.
    pub seq: u64,
    pub access: Access,
}

/// Pending accesses indexed by storage (a conflict needs the same storage), and the
/// storages of each token (for `release`): both stay cheap with many operations in flight.
#[derive(Debug, Default)]
pub struct Ledger {
    by_storage: IdMap<Vec<Entry>>,
    by_token: IdMap<Vec<u64>>,
    len: usize,
    /// Emptied lists, reused (a launch should not allocate).
    spare_entries: Vec<Vec<Entry>>,
    spare_storages: Vec<Vec<u64>>,
}

const SPARE: usize = 64;

pub(crate) fn clash(a: &Access, b: &Access) -> bool {
    a.storage == b.storage
        && a.lo < b.hi
        && b.lo < a.hi
        && a.hi > a.lo
        && b.hi > b.lo
        && (a.exclusive || b.exclusive)
}

impl Ledger {
    pub fn new() -> Self {
        Ledger::default()
    }

    /// Entries of other tokens that clash with `access`.
    pub(crate) fn clashing<'a>(
        &'a self,
        access: &'a Access,
        except: Option<u64>,
    ) -> impl Iterator<Item = &'a Entry> + 'a {
        self.by_storage
            .get(&access.storage)
            .into_iter()
            .flatten()
            .filter(move |e| Some(e.token) != except && clash(&e.access, access))
    }

    /// Every entry on `storage`.
    pub(crate) fn on_storage(&self, storage: u64) -> impl Iterator<Item = &Entry> + '_ {
        self.by_storage.get(&storage).into_iter().flatten()
    }

    fn pending(&self, access: &Access, except: Option<u64>) -> impl Iterator<Item = u64> + '_ {
        let access = *access;
        self.by_storage
            .get(&access.storage)
            .into_iter()
            .flatten()
            .filter(move |e| Some(e.token) != except && clash(&e.access, &access))
            .map(|e| e.token)
    }

    /// Tokens of pending operations that conflict with `access` (sorted, unique).
    pub fn conflicts(&self, access: &Access, except: Option<u64>) -> Vec<u64> {
        let mut out: Vec<u64> = self.pending(access, except).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Record every access of `token`, held by an external user on no stream, all or
    /// nothing: any conflict with a pending access is refused (CT5008).
    pub fn acquire(&mut self, token: u64, accesses: &[Access]) -> Result<(), HostError> {
        for a in accesses {
            if let Some(first) = self.pending(a, Some(token)).min() {
                return Err(HostError::borrow(
                    "CT5008",
                    format!(
                        "bytes {}..{} of storage {} are {} by pending operation {first}",
                        a.lo,
                        a.hi,
                        a.storage,
                        if a.exclusive {
                            "in use"
                        } else {
                            "being written"
                        }
                    ),
                    Some(
                        "wait for that operation (`.sync()` or `await`) before this access".into(),
                    ),
                )
                .with_op(first));
            }
        }
        self.record(token, NO_STREAM, 0, accesses);
        Ok(())
    }

    /// Record every access of `token`, at position `seq` of stream `stream`, without
    /// checking (the caller planned the order: [`crate::InFlight`]).
    ///
    /// An earlier entry of the same stream that the new one covers (its bytes inside the
    /// new range, and the new access a write, or both reads) is dropped: whatever would
    /// have to wait for it conflicts with the new entry too, and waiting for a later
    /// position of a stream covers the earlier ones. So work repeated on the same tensors
    /// on one stream (a `then` chain) keeps one entry per range, not one per op.
    pub fn record(&mut self, token: u64, stream: u32, seq: u64, accesses: &[Access]) {
        if accesses.is_empty() {
            return;
        }
        if stream != NO_STREAM {
            for a in accesses {
                if let Some(entries) = self.by_storage.get_mut(&a.storage) {
                    let before = entries.len();
                    entries.retain(|e| {
                        !(e.stream == stream
                            && e.token != token
                            && a.lo <= e.access.lo
                            && e.access.hi <= a.hi
                            && (a.exclusive || !e.access.exclusive))
                    });
                    self.len -= before - entries.len();
                }
            }
        }
        let spare = &mut self.spare_storages;
        let storages = self
            .by_token
            .entry(token)
            .or_insert_with(|| spare.pop().unwrap_or_default());
        for a in accesses {
            storages.push(a.storage);
            let spare = &mut self.spare_entries;
            self.by_storage
                .entry(a.storage)
                .or_insert_with(|| spare.pop().unwrap_or_default())
                .push(Entry {
                    token,
                    stream,
                    seq,
                    access: *a,
                });
        }
        self.len += accesses.len();
    }

    /// The accesses of `token` (a capture collects them).
    pub fn accesses_of(&self, token: u64) -> Vec<Access> {
        let mut out = Vec::new();
        let Some(storages) = self.by_token.get(&token) else {
            return out;
        };
        let mut seen: Vec<u64> = Vec::with_capacity(storages.len());
        for s in storages {
            if seen.contains(s) {
                continue;
            }
            seen.push(*s);
            out.extend(
                self.on_storage(*s)
                    .filter(|e| e.token == token)
                    .map(|e| e.access),
            );
        }
        out
    }

    /// Drop every entry on `storage` (its memory was freed, ordered after them). Returns
    /// how many.
    pub fn forget_storage(&mut self, storage: u64) -> usize {
        let Some(mut entries) = self.by_storage.remove(&storage) else {
            return 0;
        };
        let n = entries.len();
        self.len -= n;
        // The tokens' storage lists keep `storage`; `release` skips what is gone.
        entries.clear();
        if self.spare_entries.len() < SPARE {
            self.spare_entries.push(entries);
        }
        n
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        let entry = std::mem::size_of::<Entry>();
        let map = |cap: usize| cap * (std::mem::size_of::<u64>() + 3 * 8 + 1);
        map(self.by_storage.capacity())
            + map(self.by_token.capacity())
            + self
                .by_storage
                .values()
                .chain(self.spare_entries.iter())
                .map(|v| v.capacity() * entry)
                .sum::<usize>()
            + self
                .by_token
                .values()
                .chain(self.spare_storages.iter())
                .map(|v| v.capacity() * 8)
                .sum::<usize>()
    }

    /// The operation `token` completed: drop its accesses; returns how many.
    pub fn release(&mut self, token: u64) -> usize {
        let Some(mut storages) = self.by_token.remove(&token) else {
            return 0;
        };
        storages.sort_unstable();
        storages.dedup();
        let mut n = 0;
        for s in storages.drain(..) {
            if let Some(entries) = self.by_storage.get_mut(&s) {
                let before = entries.len();
                entries.retain(|e| e.token != token);
                n += before - entries.len();
                if entries.is_empty() {
                    if let Some(v) = self.by_storage.remove(&s) {
                        if self.spare_entries.len() < SPARE {
                            self.spare_entries.push(v);
                        }
                    }
                }
            }
        }
        if self.spare_storages.len() < SPARE {
            self.spare_storages.push(storages);
        }
        self.len -= n;
        n
    }

    /// Number of recorded accesses.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(storage: u64, lo: u64, hi: u64, exclusive: bool) -> Access {
        Access {
            storage,
            lo,
            hi,
            exclusive,
        }
    }

    #[test]
    fn shared_reads_coexist_writes_conflict() {
        let mut l = Ledger::new();
        l.acquire(1, &[acc(7, 0, 100, false)]).unwrap();
        l.acquire(2, &[acc(7, 50, 150, false)]).unwrap();
        let e = l.acquire(3, &[acc(7, 90, 95, true)]).unwrap_err();
        assert_eq!(e.code, "CT5008");
        assert_eq!(e.about.op, Some(1)); // the error names the op to wait for
        assert_eq!(l.conflicts(&acc(7, 90, 95, true), None), vec![1, 2]);
        assert!(l.conflicts(&acc(8, 90, 95, true), None).is_empty());
        assert!(l.conflicts(&acc(7, 100, 150, true), None) == vec![2]);
        assert_eq!(l.release(2), 1);
        l.acquire(3, &[acc(7, 100, 150, true)]).unwrap();
    }

    #[test]
    fn a_covering_entry_of_the_same_stream_replaces_earlier_ones() {
        let mut l = Ledger::new();
        for t in 1..=1000u64 {
            // a chain on stream 0: write z, read x, again and again
            l.record(t, 0, t, &[acc(1, 0, 64, true), acc(2, 0, 64, false)]);
        }
        assert_eq!(l.len(), 2);
        assert_eq!(l.conflicts(&acc(1, 0, 8, false), None), vec![1000]);
        // a read does not replace a write (a later reader must still wait for the write),
        // another stream's entries and an external holder's are never replaced
        l.record(1001, 0, 1001, &[acc(1, 0, 64, false)]);
        l.record(1002, 1, 1, &[acc(1, 0, 64, true)]);
        l.acquire(5000, &[acc(3, 0, 8, false)]).unwrap();
        l.acquire(5001, &[acc(3, 0, 8, false)]).unwrap();
        assert_eq!(l.conflicts(&acc(1, 0, 8, false), None), vec![1000, 1002]);
        assert_eq!(l.conflicts(&acc(3, 0, 8, true), None), vec![5000, 5001]);
        // a narrower write does not replace a wider one
        l.record(1003, 0, 1002, &[acc(2, 0, 32, true)]);
        assert_eq!(l.conflicts(&acc(2, 48, 56, true), None), vec![1000]);
        for t in [1000, 1001, 1002, 1003, 5000, 5001] {
            l.release(t);
        }
        assert!(l.is_empty());
    }

    #[test]
    fn acquire_is_all_or_nothing() {
        let mut l = Ledger::new();
        l.acquire(1, &[acc(1, 0, 10, true)]).unwrap();
        assert!(l
            .acquire(2, &[acc(2, 0, 10, true), acc(1, 5, 6, false)])
            .is_err());
        assert_eq!(l.len(), 1);
        assert!(l.conflicts(&acc(2, 0, 10, true), None).is_empty());
    }

    #[test]
    fn many_pending_tokens_and_one_storage() {
        let mut l = Ledger::new();
        for t in 1..=100u64 {
            l.acquire(t, &[acc(t, 0, 16, true), acc(1000, 0, 16, false)])
                .unwrap();
        }
        assert_eq!(l.len(), 200);
        assert_eq!(l.conflicts(&acc(1000, 8, 9, true), None).len(), 100);
        assert_eq!(l.conflicts(&acc(1000, 8, 9, true), None)[0], 1);
        let e = l.acquire(500, &[acc(1000, 4, 8, true)]).unwrap_err();
        assert!(e.message.contains("pending operation 1"), "{}", e.message);
        for t in 1..=100u64 {
            assert_eq!(l.release(t), 2);
        }
        assert!(l.is_empty());
        assert_eq!(l.release(3), 0);
        l.acquire(500, &[acc(1000, 4, 8, true)]).unwrap();
    }
}
