//! Work in flight on streams: the [`Ledger`] of byte ranges and the [`Clocks`] of stream
//! positions, and the decisions they make together (host rule 4):
//!
//! - work about to run on a stream ([`InFlight::plan`]) is ordered after every pending
//!   access it conflicts with: nothing on its own stream (streams run in order), an event
//!   wait for another stream's, a refusal for an external holder or across a graph
//!   capture;
//! - a host read or write ([`InFlight::host_plan`]) waits for the conflicting streams;
//! - a free ([`InFlight::free_plan`]) is ordered after everything pending on the memory;
//! - a completion ([`InFlight::complete`]) drops what it covers, so the ledger holds what
//!   is in flight, not the history.

use crate::ledger::Entry;
use crate::streams::{Clocks, Waits, NO_STREAM};
use crate::{Access, HostError, Ledger};

/// A stream's pending token count at which the bindings poll it for completion (so work
/// nobody waits for does not pile up in the ledger). Small enough that the ledger stays in
/// cache with every stream of a pool busy (a launch looks up each tensor's storage there,
/// and releases what completed): at 1024 a pool of four held four times the entries of
/// one stream, and a launch that took the pool's streams in turn paid for it in cache
/// misses. A poll is one `cuStreamQuery` per this many launches on the stream.
pub const POLL_EVERY: usize = 256;

#[derive(Debug, Default)]
pub struct InFlight {
    pub ledger: Ledger,
    pub clocks: Clocks,
}

/// What touches the bytes, as errors say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accessor {
    /// Work to be enqueued on a stream (a launch, a copy, a replay).
    Stream(u32),
    /// The host reads (`exclusive == false`) or writes.
    Host,
}

fn describe(a: &Access) -> String {
    format!("bytes {}..{} of storage {}", a.lo, a.hi, a.storage)
}

fn captured(e: &Entry, a: &Access, who: Accessor, into_capture: bool) -> HostError {
    let (message, hint) = match (who, into_capture) {
        (Accessor::Host, _) => (
            format!(
                "cannot {} {}: operation {} was captured into a CUDA Graph that has not run",
                if a.exclusive { "write" } else { "read" },
                describe(a),
                e.token
            ),
            "a capture records work without running it: replay the graph, then read its \
             results through it (`g.read(i)`, or `g.into_inner()`)",
        ),
        (Accessor::Stream(_), true) => (
            format!(
                "a graph capture cannot wait for work outside it: {} are in use by pending \
                 operation {} on another stream",
                describe(a),
                e.token
            ),
            "finish that work before capturing (`cutile.synchronize()`)",
        ),
        (Accessor::Stream(_), false) => (
            format!(
                "{} are used by operation {}, captured into a CUDA Graph being built",
                describe(a),
                e.token
            ),
            "use the tensors after the capture, through the graph (`g.replay()`, \
             `g.into_inner()`)",
        ),
    };
    HostError::borrow("CT5060", message, Some(hint.into())).with_op(e.token)
}

impl InFlight {
    pub fn new() -> Self {
        InFlight::default()
    }

    /// What work of `token` about to run on `stream` must wait for: `(slot, seq)` per
    /// other stream. Refuses an external holder (CT5008) and any conflict across a graph
    /// capture (CT5060).
    pub fn plan(&self, token: u64, stream: u32, accesses: &[Access]) -> Result<Waits, HostError> {
        let mut waits = Waits::default();
        let capturing = self.clocks.capturing(stream);
        for a in accesses {
            for e in self.ledger.clashing(a, Some(token)) {
                if e.stream == NO_STREAM {
                    return Err(self.ledger.held_by(e.token, a));
                }
                if e.stream == stream || self.clocks.done(e.stream, e.seq) {
                    continue;
                }
                if capturing || self.clocks.capturing(e.stream) {
                    return Err(captured(e, a, Accessor::Stream(stream), capturing));
                }
                waits.add(e.stream, e.seq);
            }
        }
        Ok(waits)
    }

    /// Whether no work in flight (on any stream, in a capture, or held by another library)
    /// may write any byte of `reads`. A kernel that loads parameters ahead of its
    /// programmatic-launch wait may overlap the kernel before it on its stream only then
    /// (otherwise it is launched in full stream order).
    pub fn unwritten(&self, reads: &[Access]) -> bool {
        reads.iter().all(|r| {
            let read = Access {
                exclusive: false,
                ..*r
            };
            let unwritten = self
                .ledger
                .clashing(&read, None)
                .all(|e| e.stream != NO_STREAM && self.clocks.done(e.stream, e.seq));
            unwritten
        })
    }

    /// Record `token`'s accesses at the next position of `stream` (the work is being
    /// enqueued, ordered as [`InFlight::plan`] said). Returns the position and whether the
    /// stream should be polled for completion.
    pub fn enqueue(&mut self, token: u64, stream: u32, accesses: &[Access]) -> (u64, bool) {
        let seq = self.clocks.enqueue(stream);
        if accesses.is_empty() {
            return (seq, false);
        }
        self.ledger.record(token, stream, seq, accesses);
        let pending = self.clocks.track(stream, seq, token);
        (seq, pending > 0 && pending.is_multiple_of(POLL_EVERY))
    }

    /// What a host access must wait for. A read waits for writers only. Refuses an
    /// external holder (CT5008) and bytes a capture is recording (CT5060).
    pub fn host_plan(&self, access: &Access) -> Result<Waits, HostError> {
        let mut waits = Waits::default();
        for e in self.ledger.clashing(access, None) {
            if e.stream == NO_STREAM {
                return Err(self.ledger.held_by(e.token, access));
            }
            if self.clocks.capturing(e.stream) {
                return Err(captured(e, access, Accessor::Host, false));
            }
            if !self.clocks.done(e.stream, e.seq) {
                waits.add(e.stream, e.seq);
            }
        }
        Ok(waits)
    }

    /// What freeing `storage` must be ordered after: everything still pending on it.
    pub fn free_plan(&self, storage: u64) -> Waits {
        let mut waits = Waits::default();
        for e in self.ledger.on_storage(storage) {
            if e.stream != NO_STREAM && !self.clocks.done(e.stream, e.seq) {
                waits.add(e.stream, e.seq);
            }
        }
        waits
    }

    /// `storage` was freed (ordered after its pending work): forget its entries.
    pub fn forget_storage(&mut self, storage: u64) -> usize {
        self.ledger.forget_storage(storage)
    }

    /// `stream` is known complete up to `upto`: drop the entries that covers. Returns how
    /// many entries went.
    pub fn complete(&mut self, stream: u32, upto: u64) -> usize {
        self.clocks
            .complete(stream, upto)
            .into_iter()
            .map(|t| self.ledger.release(t))
            .sum()
    }

    /// Work another library enqueues on `stream` (a collective through
    /// `torch.distributed`): cutile cannot enqueue it under its own lock, so it is held in
    /// two steps. `begin_external` plans the order after conflicting work (the caller makes
    /// `stream` wait, as for any work) and records the accesses for `token` on no stream
    /// while the other library enqueues: meanwhile conflicting work and host accesses are
    /// refused (CT5008) rather than ordered after a position the work has not reached.
    /// [`InFlight::end_external`] moves them to the next position of `stream` once the work
    /// is there; [`InFlight::abort_external`] drops them (nothing was enqueued). A capture
    /// cannot record such work (CT5066).
    pub fn begin_external(
        &mut self,
        token: u64,
        stream: u32,
        accesses: &[Access],
        label: Option<&str>,
    ) -> Result<Waits, HostError> {
        if self.clocks.capturing(stream) {
            return Err(HostError::borrow(
                "CT5066",
                "a collective cannot be captured into a CUDA Graph: another library enqueues \
                 it, outside the capture's record"
                    .into(),
                Some("run the collective before or after the capture, on its own".into()),
            )
            .with_op(token));
        }
        let waits = self.plan(token, stream, accesses)?;
        self.ledger.record(token, NO_STREAM, 0, accesses);
        self.ledger.set_label(token, label);
        Ok(waits)
    }

    /// The external work of `token` is enqueued on `stream`: its accesses now sit at the
    /// next position there (see [`InFlight::enqueue`]).
    pub fn end_external(&mut self, token: u64, stream: u32, accesses: &[Access]) -> (u64, bool) {
        self.ledger.release(token);
        self.enqueue(token, stream, accesses)
    }

    /// The external work of `token` was not enqueued: forget its accesses.
    pub fn abort_external(&mut self, token: u64) -> usize {
        self.ledger.release(token)
    }

    /// Start recording `stream` into a graph: its work does not run.
    pub fn begin_capture(&mut self, stream: u32) {
        self.complete(stream, self.clocks.enqueued(stream));
        self.clocks.set_capturing(stream, true);
    }

    /// Stop recording: the accesses the captured work makes (one hull per storage and
    /// kind, which a replay records), and none of it stays pending.
    pub fn end_capture(&mut self, stream: u32) -> Vec<Access> {
        let mut hull: Vec<Access> = Vec::new();
        for token in self.clocks.tokens(stream) {
            for a in self.ledger.accesses_of(token) {
                match hull
                    .iter_mut()
                    .find(|h| h.storage == a.storage && h.exclusive == a.exclusive)
                {
                    Some(h) => {
                        h.lo = h.lo.min(a.lo);
                        h.hi = h.hi.max(a.hi);
                    }
                    None => hull.push(a),
                }
            }
        }
        self.clocks.set_capturing(stream, false);
        self.complete(stream, self.clocks.enqueued(stream));
        hull
    }

    /// The stream is gone (its work is complete).
    pub fn retire(&mut self, stream: u32) {
        self.complete(stream, self.clocks.enqueued(stream));
        self.clocks.retire(stream);
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.ledger.heap_bytes() + self.clocks.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streams::NoEvents;

    fn acc(storage: u64, lo: u64, hi: u64, exclusive: bool) -> Access {
        Access {
            storage,
            lo,
            hi,
            exclusive,
        }
    }

    fn two_streams() -> (InFlight, u32, u32) {
        let mut f = InFlight::new();
        let a = f.clocks.add_slot();
        let b = f.clocks.add_slot();
        (f, a, b)
    }

    #[test]
    fn a_reader_on_another_stream_waits_for_the_writer() {
        let (mut f, a, b) = two_streams();
        let (seq, _) = f.enqueue(1, a, &[acc(7, 0, 64, true)]);
        // same stream: ordered already
        assert!(f.plan(2, a, &[acc(7, 0, 64, false)]).unwrap().is_empty());
        // other stream: waits for (a, seq); disjoint bytes or another storage do not
        let w = f.plan(2, b, &[acc(7, 32, 40, false)]).unwrap();
        assert_eq!(w, Waits(vec![(a, seq)]));
        assert!(f.plan(2, b, &[acc(7, 64, 80, true)]).unwrap().is_empty());
        assert!(f.plan(2, b, &[acc(8, 0, 64, true)]).unwrap().is_empty());
        // reads do not order reads
        let (_, _) = f.enqueue(3, a, &[acc(9, 0, 64, false)]);
        assert!(f.plan(4, b, &[acc(9, 0, 64, false)]).unwrap().is_empty());
        // a write after a read waits (write-after-read)
        assert_eq!(f.plan(4, b, &[acc(9, 0, 8, true)]).unwrap().0.len(), 1);
        f.clocks.order_after(b, &w, &mut NoEvents).unwrap();
        assert_eq!(f.clocks.stats.stream_waits, 1);
        // once complete, nothing to wait for, and the ledger forgot the work
        assert_eq!(f.complete(a, seq + 1), 2);
        assert!(f.plan(2, b, &[acc(7, 0, 64, true)]).unwrap().is_empty());
        assert!(f.ledger.is_empty());
    }

    #[test]
    fn early_loads_see_writers_in_flight_on_any_stream_and_readers_never() {
        let (mut f, a, b) = two_streams();
        let w = acc(7, 0, 64, false);
        assert!(f.unwritten(&[w]));
        // a reader in flight does not matter; a writer of other bytes or storage neither
        f.enqueue(
            1,
            a,
            &[
                acc(7, 0, 64, false),
                acc(7, 64, 128, true),
                acc(8, 0, 64, true),
            ],
        );
        assert!(f.unwritten(&[w]));
        // a writer of one byte of it on another stream, then on the same one, does
        let (seq, _) = f.enqueue(2, b, &[acc(7, 63, 64, true)]);
        assert!(!f.unwritten(&[w]));
        assert!(!f.unwritten(&[acc(9, 0, 8, false), w]));
        assert!(f.unwritten(&[acc(9, 0, 8, false)]));
        f.complete(b, seq);
        assert!(f.unwritten(&[w]));
        let (seq, _) = f.enqueue(3, a, &[acc(7, 0, 1, true)]);
        assert!(!f.unwritten(&[w]));
        f.complete(a, seq);
        assert!(f.unwritten(&[w]));
        // work another library holds on no stream, and a capture, count as in flight
        f.begin_external(4, b, &[acc(7, 8, 16, true)], None)
            .unwrap();
        assert!(!f.unwritten(&[w]));
        f.abort_external(4);
        assert!(f.unwritten(&[w]));
        f.begin_capture(a);
        f.enqueue(5, a, &[acc(7, 0, 64, true)]);
        assert!(!f.unwritten(&[w]));
    }

    #[test]
    fn host_reads_wait_for_writers_and_frees_for_everything() {
        let (mut f, a, b) = two_streams();
        let (w, _) = f.enqueue(1, a, &[acc(7, 0, 64, true)]);
        let (r, _) = f.enqueue(2, b, &[acc(7, 64, 128, false)]);
        assert_eq!(f.host_plan(&acc(7, 0, 8, false)).unwrap().0, vec![(a, w)]);
        assert!(f.host_plan(&acc(7, 64, 72, false)).unwrap().is_empty());
        assert_eq!(f.host_plan(&acc(7, 64, 72, true)).unwrap().0, vec![(b, r)]);
        assert_eq!(f.free_plan(7).0, vec![(a, w), (b, r)]);
        assert_eq!(f.forget_storage(7), 2);
        assert!(f.free_plan(7).is_empty() && f.ledger.is_empty());
        // completing later releases nothing more
        assert_eq!(f.complete(a, w), 0);
    }

    #[test]
    fn external_holders_and_captures_refuse() {
        let (mut f, a, b) = two_streams();
        f.ledger.acquire(50, &[acc(1, 0, 16, true)], None).unwrap();
        assert_eq!(
            f.plan(2, a, &[acc(1, 0, 4, false)]).unwrap_err().code,
            "CT5008"
        );
        assert_eq!(
            f.host_plan(&acc(1, 0, 4, false)).unwrap_err().code,
            "CT5008"
        );
        f.begin_capture(b);
        f.enqueue(3, b, &[acc(2, 0, 16, true)]);
        f.enqueue(4, b, &[acc(2, 16, 32, true), acc(3, 0, 8, false)]);
        // the capture's own later work is ordered; outsiders and host reads are refused
        assert!(f.plan(5, b, &[acc(2, 0, 32, false)]).unwrap().is_empty());
        let e = f.plan(5, a, &[acc(2, 0, 4, false)]).unwrap_err();
        assert_eq!(e.code, "CT5060");
        let e = f.host_plan(&acc(2, 0, 4, false)).unwrap_err();
        assert!(e.code == "CT5060" && e.message.contains("has not run"));
        // work pending outside cannot be waited for from inside the capture
        f.enqueue(6, a, &[acc(4, 0, 8, true)]);
        let e = f.plan(7, b, &[acc(4, 0, 8, false)]).unwrap_err();
        assert!(e.code == "CT5060" && e.message.contains("cannot wait"));
        let mut hull = f.end_capture(b);
        hull.sort_by_key(|h| (h.storage, h.exclusive));
        assert_eq!(hull, vec![acc(2, 0, 32, true), acc(3, 0, 8, false)]);
        assert!(f.host_plan(&acc(2, 0, 4, false)).unwrap().is_empty());
        assert_eq!(f.ledger.len(), 2); // the external holder and op 6
    }

    #[test]
    fn external_work_is_refused_to_others_until_it_sits_on_its_stream() {
        let (mut f, a, b) = two_streams();
        let (w, _) = f.enqueue(1, a, &[acc(7, 0, 64, true)]);
        // the collective reads storage 7 on stream b: it waits for the writer on a
        let waits = f
            .begin_external(2, b, &[acc(7, 0, 64, false), acc(8, 0, 64, true)], None)
            .unwrap();
        assert_eq!(waits, Waits(vec![(a, w)]));
        // while the other library enqueues, conflicting work and host accesses are refused
        assert_eq!(
            f.plan(3, a, &[acc(8, 0, 4, false)]).unwrap_err().code,
            "CT5008"
        );
        assert_eq!(
            f.plan(3, a, &[acc(7, 0, 4, true)]).unwrap_err().code,
            "CT5008"
        );
        assert_eq!(
            f.host_plan(&acc(8, 0, 4, false)).unwrap_err().code,
            "CT5008"
        );
        // readers of what it only reads, and other bytes, are not held up
        assert!(f.plan(3, a, &[acc(8, 64, 96, true)]).unwrap().is_empty());
        assert_eq!(f.host_plan(&acc(7, 0, 4, false)).unwrap().0, vec![(a, w)]);
        let (seq, _) = f.end_external(2, b, &[acc(7, 0, 64, false), acc(8, 0, 64, true)]);
        // now on stream b: ordered like any work there
        assert_eq!(
            f.plan(3, a, &[acc(8, 0, 4, false)]).unwrap().0,
            vec![(b, seq)]
        );
        assert_eq!(f.host_plan(&acc(8, 0, 4, false)).unwrap().0, vec![(b, seq)]);
        assert!(f.plan(3, b, &[acc(8, 0, 4, true)]).unwrap().is_empty());
        f.complete(b, seq);
        assert!(f.host_plan(&acc(8, 0, 4, true)).unwrap().is_empty());
        // an aborted one leaves nothing behind
        f.begin_external(4, a, &[acc(9, 0, 8, true)], None).unwrap();
        assert_eq!(f.abort_external(4), 1);
        assert!(f.plan(5, b, &[acc(9, 0, 8, true)]).unwrap().is_empty());
        // and a capture cannot record one
        f.begin_capture(b);
        assert_eq!(
            f.begin_external(6, b, &[acc(10, 0, 8, true)], None)
                .unwrap_err()
                .code,
            "CT5066"
        );
    }

    #[test]
    fn the_ledger_holds_what_is_in_flight_not_the_history() {
        let (mut f, a, _) = two_streams();
        let mut polls = 0;
        for t in 0..10_000u64 {
            let (seq, poll) = f.enqueue(t + 1, a, &[acc(t % 100, 0, 64, true)]);
            if poll {
                polls += 1;
                f.complete(a, seq);
            }
        }
        assert_eq!(polls, 10_000 / POLL_EVERY);
        assert!(f.ledger.len() < POLL_EVERY, "{}", f.ledger.len());
        f.complete(a, u64::MAX);
        assert!(f.ledger.is_empty());
        assert!(f.heap_bytes() < 1 << 20, "{}", f.heap_bytes());
    }
}
