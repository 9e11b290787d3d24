//! The interpreter's work in flight: the CPU interpreter runs a launch (a graph replay, a
//! host copy) on the thread that enqueued it, right after enqueueing it, so "complete" on
//! a virtual stream means "that thread finished running it". A thread holds [`HostWork`]
//! from before it enqueues such work until the work ran; a host wait, a poll and the next
//! interpreted work of any other thread wait for it (so another thread's export, read or
//! conflicting launch cannot overlap a kernel still running, host rule 4). Re-entrant: the
//! holding thread never waits for itself (a finalizer that closes a stream mid-kernel).
//! The GPU never takes it: there completion is the driver's.

use std::sync::{Condvar, Mutex};
use std::thread::ThreadId;

#[derive(Default)]
pub(crate) struct HostWork {
    /// The holding thread and how many times it took the hold.
    held: Mutex<Option<(ThreadId, usize)>>,
    freed: Condvar,
}

impl HostWork {
    /// Take the hold (blocking while another thread has it). Call without the GIL.
    pub(crate) fn acquire(&self) {
        let me = std::thread::current().id();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match &mut *held {
                None => {
                    *held = Some((me, 1));
                    return;
                }
                Some((owner, depth)) if *owner == me => {
                    *depth += 1;
                    return;
                }
                Some(_) => held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }

    /// Give one level of the hold back (the holder only; anything else is ignored).
    pub(crate) fn release(&self) {
        let me = std::thread::current().id();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((owner, depth)) = &mut *held {
            if *owner == me {
                *depth -= 1;
                if *depth == 0 {
                    *held = None;
                    self.freed.notify_all();
                }
            }
        }
    }

    /// Whether another thread holds it (its work may still be running).
    pub(crate) fn busy_elsewhere(&self) -> bool {
        let me = std::thread::current().id();
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.is_some_and(|(owner, _)| owner != me)
    }

    /// Block until no other thread holds it: the work it enqueued ran. Call without the
    /// GIL.
    pub(crate) fn wait_idle(&self) {
        let me = std::thread::current().id();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        while held.is_some_and(|(owner, _)| owner != me) {
            held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The hold, given back when dropped (an error or a panic included).
pub(crate) struct HostWorkHold<'a>(&'a HostWork);

impl<'a> HostWorkHold<'a> {
    pub(crate) fn take(py: pyo3::Python<'_>, work: &'a HostWork) -> Self {
        py.detach(|| work.acquire());
        HostWorkHold(work)
    }
}

impl Drop for HostWorkHold<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}
