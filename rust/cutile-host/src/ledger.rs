//! The in-flight ledger (host rule 4): byte ranges each pending operation reads or writes,
//! keyed by its completion token, with the stream position the work sits at. A new access
//! that conflicts with a pending one (same storage, overlapping bytes, either side
//! exclusive, another token) must be ordered after it: on the same stream it already is;
//! on another stream it waits for that stream's event ([`crate::InFlight`] plans it); a
//! holder on no stream (`acquire`, an external user) cannot be waited on and refuses it.

use crate::streams::NO_STREAM;
use crate::{HostError, IdMap};
use std::sync::Arc;

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

/// No slot (the end of a list).
const NIL: u32 = u32::MAX;

/// An entry and its links: in its storage's list (in record order) and its token's.
#[derive(Debug, Clone)]
struct Slot {
    entry: Entry,
    s_prev: u32,
    s_next: u32,
    t_prev: u32,
    t_next: u32,
}

/// Pending accesses indexed by storage (a conflict needs the same storage) and by token
/// (for `release`): both stay cheap with many operations in flight. Entries live in one
/// slab, linked into a list per storage and per token, and freed slots are reused: once
/// the slab has grown to the most entries ever pending at once, recording and releasing
/// allocate nothing.
#[derive(Debug, Default)]
pub struct Ledger {
    slots: Vec<Slot>,
    /// Free slots, chained through `s_next`.
    free: Option<u32>,
    /// `(first, last)` slot of each storage's list.
    by_storage: IdMap<(u32, u32)>,
    /// First slot of each token's list.
    by_token: IdMap<u32>,
    len: usize,
    /// What external holders are, as errors name them ("a host copy", "the collective
    /// `all_reduce`"): the ledger knows other pending work by number only.
    labels: IdMap<Arc<str>>,
}

pub(crate) fn clash(a: &Access, b: &Access) -> bool {
    a.storage == b.storage
        && a.lo < b.hi
        && b.lo < a.hi
        && a.hi > a.lo
        && b.hi > b.lo
        && (a.exclusive || b.exclusive)
}

/// The entries of one storage, in record order.
struct OnStorage<'a> {
    slots: &'a [Slot],
    at: u32,
}

impl<'a> Iterator for OnStorage<'a> {
    type Item = &'a Entry;
    fn next(&mut self) -> Option<&'a Entry> {
        let s = self.slots.get(self.at as usize)?;
        self.at = s.s_next;
        Some(&s.entry)
    }
}

impl Ledger {
    pub fn new() -> Self {
        Ledger::default()
    }

    fn storage_head(&self, storage: u64) -> u32 {
        self.by_storage
            .get(&storage)
            .map_or(NIL, |(first, _)| *first)
    }

    /// Entries of other tokens that clash with `access`.
    pub(crate) fn clashing<'a>(
        &'a self,
        access: &'a Access,
        except: Option<u64>,
    ) -> impl Iterator<Item = &'a Entry> + 'a {
        self.on_storage(access.storage)
            .filter(move |e| Some(e.token) != except && clash(&e.access, access))
    }

    /// Every entry on `storage`.
    pub(crate) fn on_storage(&self, storage: u64) -> impl Iterator<Item = &Entry> + '_ {
        OnStorage {
            slots: &self.slots,
            at: self.storage_head(storage),
        }
    }

    /// Tokens of pending operations that conflict with `access` (sorted, unique).
    pub fn conflicts(&self, access: &Access, except: Option<u64>) -> Vec<u64> {
        let mut out: Vec<u64> = self.clashing(access, except).map(|e| e.token).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Record every access of `token`, held by an external user on no stream, all or
    /// nothing: any conflict with a pending access is refused (CT5008). `label`: what the
    /// holder is, for the errors of those it refuses.
    pub fn acquire(
        &mut self,
        token: u64,
        accesses: &[Access],
        label: Option<&str>,
    ) -> Result<(), HostError> {
        for a in accesses {
            if let Some(first) = self.clashing(a, Some(token)).map(|e| e.token).min() {
                return Err(self.held_by(first, a));
            }
        }
        self.record(token, NO_STREAM, 0, accesses);
        self.set_label(token, label);
        Ok(())
    }

    /// Name `token` in the errors of what it refuses (until it is released).
    pub fn set_label(&mut self, token: u64, label: Option<&str>) {
        if let Some(label) = label {
            self.labels.insert(token, Arc::from(label));
        }
    }

    /// How errors name pending operation `token`: "a host copy (op #7)", or
    /// "pending operation 7" when nothing named it.
    pub fn shown(&self, token: u64) -> String {
        match self.labels.get(&token) {
            Some(label) => format!("{label} (op #{token})"),
            None => format!("pending operation {token}"),
        }
    }

    /// CT5008: `access` conflicts with `holder`, which holds its bytes on no stream.
    pub(crate) fn held_by(&self, holder: u64, access: &Access) -> HostError {
        HostError::borrow(
            "CT5008",
            format!(
                "bytes {}..{} of storage {} are {} by {}",
                access.lo,
                access.hi,
                access.storage,
                if access.exclusive {
                    "in use"
                } else {
                    "being written"
                },
                self.shown(holder)
            ),
            Some("wait for that operation (`.sync()` or `await`) before this access".into()),
        )
        .with_op(holder)
    }

    /// Link a new entry at the end of its storage's list and before `token_head` in its
    /// token's; returns its slot (the token's new head, which the caller records).
    fn insert(&mut self, entry: Entry, token_head: u32) -> u32 {
        let storage = entry.access.storage;
        let slot = Slot {
            entry,
            s_prev: NIL,
            s_next: NIL,
            t_prev: NIL,
            t_next: token_head,
        };
        let i = match self.free {
            Some(i) => {
                let next = self.slots[i as usize].s_next;
                self.free = (next != NIL).then_some(next);
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        if token_head != NIL {
            self.slots[token_head as usize].t_prev = i;
        }
        // (one probe of the map, found or not)
        match self.by_storage.entry(storage) {
            std::collections::hash_map::Entry::Occupied(o) => {
                let prev = std::mem::replace(&mut o.into_mut().1, i);
                self.slots[i as usize].s_prev = prev;
                self.slots[prev as usize].s_next = i;
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert((i, i));
            }
        }
        self.len += 1;
        i
    }

    /// Unlink slot `i` from both of its lists and free it.
    fn remove(&mut self, i: u32) {
        let Slot {
            ref entry,
            s_prev,
            s_next,
            t_prev,
            t_next,
        } = self.slots[i as usize];
        let (storage, token) = (entry.access.storage, entry.token);
        if s_prev != NIL {
            self.slots[s_prev as usize].s_next = s_next;
        }
        if s_next != NIL {
            self.slots[s_next as usize].s_prev = s_prev;
        }
        match (s_prev, s_next) {
            (NIL, NIL) => {
                self.by_storage.remove(&storage);
            }
            _ => {
                if let Some((first, last)) = self.by_storage.get_mut(&storage) {
                    if *first == i {
                        *first = s_next;
                    }
                    if *last == i {
                        *last = s_prev;
                    }
                }
            }
        }
        if t_prev != NIL {
            self.slots[t_prev as usize].t_next = t_next;
        } else if t_next != NIL {
            self.by_token.insert(token, t_next);
        } else {
            self.by_token.remove(&token);
        }
        if t_next != NIL {
            self.slots[t_next as usize].t_prev = t_prev;
        }
        self.slots[i as usize].s_next = self.free.unwrap_or(NIL);
        self.free = Some(i);
        self.len -= 1;
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
        let mut head = self.by_token.get(&token).copied().unwrap_or(NIL);
        for a in accesses {
            if stream != NO_STREAM {
                let mut at = self.storage_head(a.storage);
                while at != NIL {
                    let s = &self.slots[at as usize];
                    let next = s.s_next;
                    let e = &s.entry;
                    if e.stream == stream
                        && e.token != token
                        && a.lo <= e.access.lo
                        && e.access.hi <= a.hi
                        && (a.exclusive || !e.access.exclusive)
                    {
                        self.remove(at);
                    }
                    at = next;
                }
            }
            head = self.insert(
                Entry {
                    token,
                    stream,
                    seq,
                    access: *a,
                },
                head,
            );
        }
        self.by_token.insert(token, head);
    }

    /// The accesses of `token` (a capture collects them).
    pub fn accesses_of(&self, token: u64) -> Vec<Access> {
        let mut out = Vec::new();
        let mut at = self.by_token.get(&token).copied().unwrap_or(NIL);
        while at != NIL {
            let s = &self.slots[at as usize];
            out.push(s.entry.access);
            at = s.t_next;
        }
        out
    }

    /// Drop every entry on `storage` (its memory was freed, ordered after them). Returns
    /// how many.
    pub fn forget_storage(&mut self, storage: u64) -> usize {
        let mut n = 0;
        let mut at = self.storage_head(storage);
        while at != NIL {
            let next = self.slots[at as usize].s_next;
            self.remove(at);
            n += 1;
            at = next;
        }
        n
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        let map = |cap: usize, v: usize| cap * (std::mem::size_of::<u64>() + v + 1);
        self.slots.capacity() * std::mem::size_of::<Slot>()
            + map(self.by_storage.capacity(), 8)
            + map(self.by_token.capacity(), 4)
    }

    /// The operation `token` completed: drop its accesses; returns how many.
    pub fn release(&mut self, token: u64) -> usize {
        self.labels.remove(&token);
        let mut n = 0;
        let mut at = self.by_token.get(&token).copied().unwrap_or(NIL);
        while at != NIL {
            let next = self.slots[at as usize].t_next;
            self.remove(at);
            n += 1;
            at = next;
        }
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
        l.acquire(1, &[acc(7, 0, 100, false)], None).unwrap();
        l.acquire(2, &[acc(7, 50, 150, false)], None).unwrap();
        let e = l.acquire(3, &[acc(7, 90, 95, true)], None).unwrap_err();
        assert_eq!(e.code, "CT5008");
        assert_eq!(e.about.op, Some(1)); // the error names the op to wait for
        assert_eq!(l.conflicts(&acc(7, 90, 95, true), None), vec![1, 2]);
        assert!(l.conflicts(&acc(8, 90, 95, true), None).is_empty());
        assert!(l.conflicts(&acc(7, 100, 150, true), None) == vec![2]);
        assert_eq!(l.release(2), 1);
        l.acquire(3, &[acc(7, 100, 150, true)], None).unwrap();
    }

    #[test]
    fn a_labelled_holder_is_named_in_the_errors_of_what_it_refuses() {
        let mut l = Ledger::new();
        l.acquire(7, &[acc(1, 0, 64, true)], Some("a host copy"))
            .unwrap();
        let e = l.acquire(8, &[acc(1, 8, 16, false)], None).unwrap_err();
        assert_eq!(e.code, "CT5008");
        assert!(
            e.message
                .ends_with("are being written by a host copy (op #7)"),
            "{}",
            e.message
        );
        assert_eq!(e.about.op, Some(7));
        // released, the label goes with it: a later holder of that number is unnamed
        l.release(7);
        l.acquire(7, &[acc(1, 0, 64, true)], None).unwrap();
        let e = l.acquire(8, &[acc(1, 8, 16, false)], None).unwrap_err();
        assert!(
            e.message.ends_with("by pending operation 7"),
            "{}",
            e.message
        );
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
        l.acquire(5000, &[acc(3, 0, 8, false)], None).unwrap();
        l.acquire(5001, &[acc(3, 0, 8, false)], None).unwrap();
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
        l.acquire(1, &[acc(1, 0, 10, true)], None).unwrap();
        assert!(l
            .acquire(2, &[acc(2, 0, 10, true), acc(1, 5, 6, false)], None)
            .is_err());
        assert_eq!(l.len(), 1);
        assert!(l.conflicts(&acc(2, 0, 10, true), None).is_empty());
    }

    #[test]
    fn many_pending_tokens_and_one_storage() {
        let mut l = Ledger::new();
        for t in 1..=100u64 {
            l.acquire(t, &[acc(t, 0, 16, true), acc(1000, 0, 16, false)], None)
                .unwrap();
        }
        assert_eq!(l.len(), 200);
        assert_eq!(l.conflicts(&acc(1000, 8, 9, true), None).len(), 100);
        assert_eq!(l.conflicts(&acc(1000, 8, 9, true), None)[0], 1);
        let e = l.acquire(500, &[acc(1000, 4, 8, true)], None).unwrap_err();
        assert!(e.message.contains("pending operation 1"), "{}", e.message);
        for t in 1..=100u64 {
            assert_eq!(l.release(t), 2);
        }
        assert!(l.is_empty());
        assert_eq!(l.release(3), 0);
        l.acquire(500, &[acc(1000, 4, 8, true)], None).unwrap();
    }

    /// The ledger as a plain list: what every operation must agree with.
    #[derive(Default)]
    struct Model(Vec<Entry>);

    impl Model {
        fn record(&mut self, token: u64, stream: u32, seq: u64, accesses: &[Access]) {
            for a in accesses {
                if stream != NO_STREAM {
                    self.0.retain(|e| {
                        !(e.access.storage == a.storage
                            && e.stream == stream
                            && e.token != token
                            && a.lo <= e.access.lo
                            && e.access.hi <= a.hi
                            && (a.exclusive || !e.access.exclusive))
                    });
                }
                self.0.push(Entry {
                    token,
                    stream,
                    seq,
                    access: *a,
                });
            }
        }
        fn conflicts(&self, a: &Access) -> Vec<u64> {
            let mut v: Vec<u64> = self
                .0
                .iter()
                .filter(|e| clash(&e.access, a))
                .map(|e| e.token)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Record(u64, u32, Vec<(u64, u64, u64, bool)>),
        Release(u64),
        Forget(u64),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        let access = (0u64..4, 0u64..16, 1u64..16, any::<bool>());
        prop_oneof![
            4 => (1u64..12, 0u32..3, proptest::collection::vec(access, 0..4))
                .prop_map(|(t, s, a)| Op::Record(t, s, a)),
            2 => (1u64..12).prop_map(Op::Release),
            1 => (0u64..4).prop_map(Op::Forget),
        ]
    }

    proptest::proptest! {
        /// Any sequence of records, releases and frees leaves the slab ledger holding what
        /// a plain list holds: the same conflicts, counts and accesses per token.
        #[test]
        fn the_slab_agrees_with_a_plain_list(ops in proptest::collection::vec(op(), 1..60)) {
            let (mut l, mut m) = (Ledger::new(), Model::default());
            let mut seq = 0;
            for o in ops {
                match o {
                    Op::Record(t, s, a) => {
                        seq += 1;
                        let a: Vec<Access> = a
                            .into_iter()
                            .map(|(st, lo, n, x)| acc(st, lo, lo + n, x))
                            .collect();
                        l.record(t, s, seq, &a);
                        m.record(t, s, seq, &a);
                    }
                    Op::Release(t) => {
                        let before = m.0.len();
                        m.0.retain(|e| e.token != t);
                        proptest::prop_assert_eq!(l.release(t), before - m.0.len());
                    }
                    Op::Forget(st) => {
                        let before = m.0.len();
                        m.0.retain(|e| e.access.storage != st);
                        proptest::prop_assert_eq!(l.forget_storage(st), before - m.0.len());
                    }
                }
                proptest::prop_assert_eq!(l.len(), m.0.len());
                for st in 0..4 {
                    for (lo, hi, x) in [(0, 32, true), (4, 9, false), (15, 16, true)] {
                        let a = acc(st, lo, hi, x);
                        proptest::prop_assert_eq!(l.conflicts(&a, None), m.conflicts(&a));
                    }
                    let mut on: Vec<u64> = l.on_storage(st).map(|e| e.seq).collect();
                    let want: Vec<u64> =
                        m.0.iter().filter(|e| e.access.storage == st).map(|e| e.seq).collect();
                    proptest::prop_assert_eq!(&on, &want); // record order, per storage
                    on.clear();
                }
                for t in 1..12 {
                    let mut got = l.accesses_of(t);
                    let mut want: Vec<Access> =
                        m.0.iter().filter(|e| e.token == t).map(|e| e.access).collect();
                    let key = |a: &Access| (a.storage, a.lo, a.hi, a.exclusive);
                    got.sort_by_key(key);
                    want.sort_by_key(key);
                    proptest::prop_assert_eq!(got, want);
                }
            }
        }
    }
}
