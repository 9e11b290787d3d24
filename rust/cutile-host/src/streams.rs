//! Stream clocks: how far each stream's work was enqueued and is known complete, and the
//! cross-stream ordering already in place. No CUDA here: the bindings drive a GPU (or the
//! interpreter's virtual streams) through [`EventOps`], and both take the same decisions.
//!
//! Every piece of work enqueued on a stream (a launch, a fill, a copy, a graph replay)
//! gets the next position on that stream (`seq`, from 1). A stream runs in order, so
//! "complete up to `seq`" covers everything before it. Each stream has one reusable event:
//! recording it covers everything enqueued so far, and a wait enqueued on another stream
//! keeps the record it saw (later records do not move it), so one event per stream is
//! enough. `waited[p]` remembers how far a stream already waited on stream `p`, so a
//! dependency already in place costs nothing.

use std::collections::VecDeque;

/// A token not on any stream: an external holder that cannot be waited on (refused).
pub const NO_STREAM: u32 = u32::MAX;

#[derive(Debug, Default, Clone)]
struct Clock {
    enqueued: u64,
    completed: u64,
    /// Position the stream's event was last recorded at (0: never).
    event_at: u64,
    /// How far this stream waited on each other stream (index: producer slot).
    waited: Vec<u64>,
    /// A CUDA Graph capture is recording this stream: its work has not run and will not
    /// run as stream work.
    capturing: bool,
    retired: bool,
    /// `(seq, token)` of the ledger tokens on this stream, in order: what a completion
    /// prunes.
    tokens: VecDeque<(u64, u64)>,
}

/// Counters for tests and benchmarks: what the ordering logic decided.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Work enqueued on any stream.
    pub enqueued: u64,
    /// Events recorded for a cross-stream consumer.
    pub events_recorded: u64,
    /// Cross-stream waits enqueued (consumer waits on a producer's event).
    pub stream_waits: u64,
    /// Host waits on a stream (synchronize), for a read, a free, or an op's completion.
    pub host_waits: u64,
    /// Frees ordered after work still pending on the memory.
    pub ordered_frees: u64,
    /// Completions learned by polling a stream.
    pub polls: u64,
}

/// The clocks of every stream slot of one runtime.
#[derive(Debug, Default)]
pub struct Clocks {
    slots: Vec<Clock>,
    pub stats: Stats,
}

/// Producer positions a consumer must be ordered after: `(slot, seq)`, one per slot.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Waits(pub Vec<(u32, u64)>);

impl Waits {
    pub fn add(&mut self, slot: u32, seq: u64) {
        match self.0.iter_mut().find(|(s, _)| *s == slot) {
            Some((_, q)) => *q = (*q).max(seq),
            None => self.0.push((slot, seq)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What a driver does to order one stream after another's event.
pub trait EventOps {
    type Error;
    /// Record `producer`'s event now (it covers everything enqueued on it so far).
    fn record(&mut self, producer: u32) -> Result<(), Self::Error>;
    /// Make `consumer` wait for `producer`'s event as last recorded.
    fn wait(&mut self, consumer: u32, producer: u32) -> Result<(), Self::Error>;
}

/// A driver with nothing to do (the interpreter runs work when it is enqueued).
pub struct NoEvents;

impl EventOps for NoEvents {
    type Error = std::convert::Infallible;
    fn record(&mut self, _: u32) -> Result<(), Self::Error> {
        Ok(())
    }
    fn wait(&mut self, _: u32, _: u32) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl Clocks {
    pub fn new() -> Self {
        Clocks::default()
    }

    /// A new stream slot.
    pub fn add_slot(&mut self) -> u32 {
        self.slots.push(Clock::default());
        (self.slots.len() - 1) as u32
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    fn get(&self, slot: u32) -> Option<&Clock> {
        self.slots.get(slot as usize)
    }

    /// Whether `slot` is a usable stream.
    pub fn is_live(&self, slot: u32) -> bool {
        self.get(slot).is_some_and(|c| !c.retired)
    }

    /// The slot's work is done and it takes no more (its stream is destroyed).
    pub fn retire(&mut self, slot: u32) {
        if let Some(c) = self.slots.get_mut(slot as usize) {
            c.retired = true;
            c.completed = c.enqueued;
        }
    }

    pub fn enqueued(&self, slot: u32) -> u64 {
        self.get(slot).map_or(0, |c| c.enqueued)
    }

    pub fn completed(&self, slot: u32) -> u64 {
        self.get(slot).map_or(0, |c| c.completed)
    }

    /// Take the next position on `slot` (the work is being enqueued).
    pub fn enqueue(&mut self, slot: u32) -> u64 {
        self.stats.enqueued += 1;
        match self.slots.get_mut(slot as usize) {
            Some(c) => {
                c.enqueued += 1;
                c.enqueued
            }
            None => 0,
        }
    }

    /// Whether position `seq` of `slot` is known complete (an unknown slot is: nothing can
    /// be waited on there).
    pub fn done(&self, slot: u32, seq: u64) -> bool {
        self.get(slot).is_none_or(|c| c.completed >= seq)
    }

    pub fn capturing(&self, slot: u32) -> bool {
        self.get(slot).is_some_and(|c| c.capturing)
    }

    pub fn set_capturing(&mut self, slot: u32, on: bool) {
        if let Some(c) = self.slots.get_mut(slot as usize) {
            c.capturing = on;
            if !on {
                // Captured work never runs as stream work: nothing of it is pending.
                c.completed = c.enqueued;
            }
        }
    }

    /// `slot` is known complete up to `upto`; returns the tokens that completed (their
    /// ledger entries may go).
    pub fn complete(&mut self, slot: u32, upto: u64) -> Vec<u64> {
        let Some(c) = self.slots.get_mut(slot as usize) else {
            return Vec::new();
        };
        c.completed = c.completed.max(upto.min(c.enqueued));
        let mut done = Vec::new();
        while let Some(&(seq, token)) = c.tokens.front() {
            if seq > c.completed {
                break;
            }
            done.push(token);
            c.tokens.pop_front();
        }
        done
    }

    /// Remember that `token`'s entries sit at position `seq` of `slot`; returns how many
    /// tokens the slot now has pending (a caller may poll the stream past a threshold).
    pub fn track(&mut self, slot: u32, seq: u64, token: u64) -> usize {
        match self.slots.get_mut(slot as usize) {
            Some(c) => {
                c.tokens.push_back((seq, token));
                c.tokens.len()
            }
            None => 0,
        }
    }

    /// The tokens tracked on `slot` (a capture collects its work this way).
    pub fn tokens(&self, slot: u32) -> Vec<u64> {
        self.get(slot)
            .map(|c| c.tokens.iter().map(|(_, t)| *t).collect())
            .unwrap_or_default()
    }

    /// Whether work enqueued on `consumer` now runs after position `seq` of `producer`
    /// without a new event: the same stream, work known complete, or a wait already in
    /// place.
    pub fn covers(&self, consumer: u32, producer: u32, seq: u64) -> bool {
        producer == consumer
            || self.done(producer, seq)
            || self
                .get(consumer)
                .and_then(|c| c.waited.get(producer as usize))
                .is_some_and(|w| *w >= seq)
    }

    /// Of the streams in `waits` that `eligible` allows (a free goes to a stream of its
    /// memory's device), one already ordered after all of them (work enqueued there needs
    /// no event), if any.
    pub fn ordered_after_all(&self, waits: &Waits, eligible: impl Fn(u32) -> bool) -> Option<u32> {
        waits
            .0
            .iter()
            .map(|(s, _)| *s)
            .filter(|s| eligible(*s))
            .find(|s| waits.0.iter().all(|(p, q)| self.covers(*s, *p, *q)))
    }

    /// Order `consumer` after every position in `waits`, through `ops`: record a
    /// producer's event only if its last record does not cover the position, and wait
    /// only if `consumer` has not already waited that far. State changes only after each
    /// call succeeds.
    pub fn order_after<E: EventOps>(
        &mut self,
        consumer: u32,
        waits: &Waits,
        ops: &mut E,
    ) -> Result<(), E::Error> {
        for &(producer, seq) in &waits.0 {
            if producer == consumer || self.done(producer, seq) {
                continue;
            }
            let already = self
                .get(consumer)
                .and_then(|c| c.waited.get(producer as usize).copied())
                .unwrap_or(0);
            if already >= seq {
                continue;
            }
            let (event_at, enqueued) = match self.get(producer) {
                Some(p) => (p.event_at, p.enqueued),
                None => continue,
            };
            let event_at = if event_at < seq {
                ops.record(producer)?;
                self.stats.events_recorded += 1;
                self.slots[producer as usize].event_at = enqueued;
                enqueued
            } else {
                event_at
            };
            ops.wait(consumer, producer)?;
            self.stats.stream_waits += 1;
            if let Some(c) = self.slots.get_mut(consumer as usize) {
                if c.waited.len() <= producer as usize {
                    c.waited.resize(producer as usize + 1, 0);
                }
                c.waited[producer as usize] = event_at;
            }
        }
        Ok(())
    }

    /// Approximate heap bytes held (benchmarks check the ledger stays small).
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Clock>()
            + self
                .slots
                .iter()
                .map(|c| c.waited.capacity() * 8 + c.tokens.capacity() * 16)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what a driver was asked to do.
    #[derive(Default)]
    struct Log(Vec<String>);

    impl EventOps for Log {
        type Error = ();
        fn record(&mut self, p: u32) -> Result<(), ()> {
            self.0.push(format!("record {p}"));
            Ok(())
        }
        fn wait(&mut self, c: u32, p: u32) -> Result<(), ()> {
            self.0.push(format!("{c} waits {p}"));
            Ok(())
        }
    }

    #[test]
    fn a_cross_stream_dependency_records_once_and_waits_once() {
        let mut c = Clocks::new();
        let (a, b) = (c.add_slot(), c.add_slot());
        let s1 = c.enqueue(a);
        c.enqueue(a);
        let mut log = Log::default();
        let w = Waits(vec![(a, s1)]);
        c.order_after(b, &w, &mut log).unwrap();
        assert_eq!(log.0, ["record 0", "1 waits 0"]);
        // The same dependency again, or an earlier one: already in place.
        c.order_after(b, &w, &mut log).unwrap();
        c.order_after(b, &Waits(vec![(a, 2)]), &mut log).unwrap();
        assert_eq!(log.0.len(), 2);
        // A later position needs a new record; another consumer reuses the record.
        let s3 = c.enqueue(a);
        let d = c.add_slot();
        c.order_after(d, &Waits(vec![(a, 2)]), &mut log).unwrap();
        assert_eq!(log.0[2..], ["2 waits 0"]);
        c.order_after(b, &Waits(vec![(a, s3)]), &mut log).unwrap();
        assert_eq!(log.0[3..], ["record 0", "1 waits 0"]);
        assert_eq!(c.stats.events_recorded, 2);
        assert_eq!(c.stats.stream_waits, 3);
    }

    #[test]
    fn a_stream_that_already_waited_covers_the_others() {
        let mut c = Clocks::new();
        let (a, b) = (c.add_slot(), c.add_slot());
        let s1 = c.enqueue(a);
        let t1 = c.enqueue(b);
        let w = Waits(vec![(a, s1), (b, t1)]);
        assert_eq!(c.ordered_after_all(&w, |_| true), None);
        c.order_after(b, &Waits(vec![(a, s1)]), &mut NoEvents)
            .unwrap();
        assert!(c.covers(b, a, s1) && !c.covers(a, b, t1));
        assert_eq!(c.ordered_after_all(&w, |_| true), Some(b));
        assert_eq!(c.ordered_after_all(&w, |s| s != b), None); // b not eligible: none
        let s2 = c.enqueue(a); // later work on `a` is not covered by the old wait
        assert_eq!(
            c.ordered_after_all(&Waits(vec![(a, s2), (b, t1)]), |_| true),
            None
        );
    }

    #[test]
    fn same_stream_and_completed_work_need_nothing() {
        let mut c = Clocks::new();
        let (a, b) = (c.add_slot(), c.add_slot());
        let s = c.enqueue(a);
        c.track(a, s, 77);
        let mut log = Log::default();
        c.order_after(a, &Waits(vec![(a, s)]), &mut log).unwrap();
        assert_eq!(c.complete(a, s), vec![77]);
        c.order_after(b, &Waits(vec![(a, s)]), &mut log).unwrap();
        assert!(log.0.is_empty());
        assert!(c.done(a, s) && !c.done(a, s + 1));
    }

    #[test]
    fn completion_prunes_in_order_and_never_past_what_was_enqueued() {
        let mut c = Clocks::new();
        let a = c.add_slot();
        for t in 1..=5 {
            let s = c.enqueue(a);
            assert_eq!(c.track(a, s, 100 + t), t as usize);
        }
        assert_eq!(c.complete(a, 3), vec![101, 102, 103]);
        assert_eq!(c.complete(a, 99), vec![104, 105]);
        assert_eq!(c.completed(a), 5);
        assert!(!c.done(a, 6));
    }

    #[test]
    fn a_failed_driver_call_changes_nothing() {
        struct Fails;
        impl EventOps for Fails {
            type Error = ();
            fn record(&mut self, _: u32) -> Result<(), ()> {
                Err(())
            }
            fn wait(&mut self, _: u32, _: u32) -> Result<(), ()> {
                Err(())
            }
        }
        let mut c = Clocks::new();
        let (a, b) = (c.add_slot(), c.add_slot());
        let s = c.enqueue(a);
        assert!(c.order_after(b, &Waits(vec![(a, s)]), &mut Fails).is_err());
        let mut log = Log::default();
        c.order_after(b, &Waits(vec![(a, s)]), &mut log).unwrap();
        assert_eq!(log.0, ["record 0", "1 waits 0"]);
    }

    #[test]
    fn capture_end_and_retire_complete_the_slot() {
        let mut c = Clocks::new();
        let a = c.add_slot();
        c.set_capturing(a, true);
        let s = c.enqueue(a);
        assert!(c.capturing(a) && !c.done(a, s));
        c.set_capturing(a, false);
        assert!(c.done(a, s));
        let b = c.add_slot();
        let s = c.enqueue(b);
        c.retire(b);
        assert!(c.done(b, s) && !c.is_live(b) && c.is_live(a));
    }
}
