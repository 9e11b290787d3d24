//! `Runtime`'s native half: ordering and enqueueing work under the lock, host waits
//! (without the lock and the GIL), polling, capture records, and stream-ordered frees.

use super::*;

impl Runtime {
    pub(super) fn lock(&self) -> Result<MutexGuard<'_, State>, Failure> {
        self.state.lock().map_err(|_| Failure::Poisoned)
    }

    /// The state, locked for work on `slot`, which must be a live stream of the pool.
    pub(super) fn lock_live(&self, slot: u32) -> Result<MutexGuard<'_, State>, Failure> {
        let guard = self.lock()?;
        if !guard.flight.clocks.is_live(slot) {
            return Err(Failure::Host(closed(slot)));
        }
        Ok(guard)
    }

    pub(crate) fn has_gpu(&self) -> bool {
        self.driver.is_some()
    }

    /// Whether this thread's current stream (whatever its device) is being captured into
    /// a graph: what `memory._refuse_in_capture` asks, answered without Python.
    pub(crate) fn capturing_here(&self) -> bool {
        let (id, slot, _) = CURRENT.with(|c| c.get());
        id == self.id
            && self
                .state
                .lock()
                .is_ok_and(|st| st.flight.clocks.capturing(slot))
    }

    pub(super) fn order(&self, st: &mut State, slot: u32, waits: &Waits) -> Result<(), Failure> {
        if waits.is_empty() {
            return Ok(());
        }
        let State {
            flight,
            slots,
            contexts,
        } = st;
        match &self.driver {
            Some(d) => {
                let mut events = GpuEvents {
                    driver: d,
                    slots,
                    contexts: self.event_contexts(contexts),
                };
                flight
                    .clocks
                    .order_after(slot, waits, &mut events)
                    .map_err(|(code, what)| Failure::Cuda(code, what))
            }
            None => match flight.clocks.order_after(slot, waits, &mut NoEvents) {
                Ok(()) => Ok(()),
                Err(never) => match never {},
            },
        }
    }

    /// Order `token`'s `accesses` on `slot` after conflicting work, run `work(driver,
    /// stream)` (the enqueue itself), and record the accesses at the new position. Returns
    /// the position and whether `slot` is being captured.
    pub(crate) fn enqueue_work(
        &self,
        token: u64,
        slot: u32,
        accesses: &[Access],
        work: impl FnOnce(Option<&Driver>, usize) -> Result<(), (c_int, &'static str)>,
    ) -> Result<(u64, bool), Failure> {
        self.enqueue_work_reading_early(token, slot, accesses, &[], |d, stream, _| work(d, stream))
    }

    /// [`Runtime::enqueue_work`] for a kernel that loads `early` ahead of its
    /// programmatic-launch wait: `work` learns, under the same lock as its launch, whether
    /// no work in flight may write those bytes (the one condition under which it may
    /// overlap the kernel before it on the stream; docs/pdl.md).
    pub(crate) fn enqueue_work_reading_early(
        &self,
        token: u64,
        slot: u32,
        accesses: &[Access],
        early: &[Access],
        work: impl FnOnce(Option<&Driver>, usize, bool) -> Result<(), (c_int, &'static str)>,
    ) -> Result<(u64, bool), Failure> {
        let mut guard = self.lock_live(slot)?;
        let st = &mut *guard;
        let waits = st
            .flight
            .plan(token, slot, accesses)
            .map_err(Failure::Host)?;
        let unwritten = early.is_empty() || st.flight.unwritten(early);
        let previous = self.bind(st, slot)?;
        let done = self.order(st, slot, &waits).and_then(|()| {
            let stream = st.slots[slot as usize].stream;
            work(self.driver.as_ref(), stream, unwritten).map_err(|(c, w)| Failure::Cuda(c, w))
        });
        self.restore(previous);
        done?;
        let (seq, poll) = st.flight.enqueue(token, slot, accesses);
        if poll {
            self.poll(st, slot);
        }
        Ok((seq, st.flight.clocks.capturing(slot)))
    }

    /// Ask the driver whether `slot` finished everything enqueued (the interpreter has).
    pub(super) fn poll(&self, st: &mut State, slot: u32) -> bool {
        if st.flight.clocks.capturing(slot) {
            return false;
        }
        let target = st.flight.clocks.enqueued(slot);
        let done = match &self.driver {
            Some(d) => match self.bind(st, slot) {
                Ok(previous) => {
                    let done = d.query(st.slots[slot as usize].stream) == 0;
                    self.restore(previous);
                    done
                }
                Err(_) => false,
            },
            // the interpreter: done, unless another thread is still running its work
            None => !self.host_work.busy_elsewhere(),
        };
        if done {
            st.flight.clocks.stats.polls += 1;
            st.flight.complete(slot, target);
        }
        done
    }

    /// Block until position `seq` of `slot` completed (the GIL is released meanwhile).
    /// Work being captured is never waited for: it has not run, and is ordered within the
    /// capture.
    pub(crate) fn wait_for(&self, py: Python<'_>, slot: u32, seq: u64) -> Result<(), Failure> {
        let (stream, target, previous) = {
            let st = self.lock()?;
            let c = &st.flight.clocks;
            if c.done(slot, seq) || c.capturing(slot) {
                return Ok(());
            }
            let previous = self.bind(&st, slot)?;
            (st.slots[slot as usize].stream, c.enqueued(slot), previous)
        };
        if let Some(d) = &self.driver {
            let code = py.detach(|| d.synchronize(stream));
            self.restore(previous);
            if code != 0 {
                return Err(Failure::Cuda(code, "cuStreamSynchronize"));
            }
        } else {
            // Work up to `target` ran, or runs on the thread holding the interpreter's
            // host work (it enqueued it under the hold): wait until that thread is done.
            py.detach(|| self.host_work.wait_idle());
        }
        let mut st = self.lock()?;
        st.flight.clocks.stats.host_waits += 1;
        st.flight.complete(slot, target);
        Ok(())
    }

    /// Whether position `seq` of `slot` completed, without blocking.
    pub(crate) fn is_done(&self, slot: u32, seq: u64) -> Result<bool, Failure> {
        let mut st = self.lock()?;
        if st.flight.clocks.done(slot, seq) || st.flight.clocks.capturing(slot) {
            return Ok(true);
        }
        Ok(self.poll(&mut st, slot) || st.flight.clocks.done(slot, seq))
    }

    /// The launch record list of the capture on `slot`.
    pub(crate) fn recording(&self, py: Python<'_>, slot: u32) -> Option<Py<PyList>> {
        let r = self.recordings.lock().ok()?;
        r.iter()
            .find(|(s, _)| *s == slot)
            .map(|(_, l)| l.clone_ref(py))
    }

    /// Free device memory (`dptr` 0 on the interpreter; `nbytes` as allocated) ordered
    /// after the work still pending on `storage`, and forget the storage. The free goes to
    /// a stream of the memory's device (that of `home`, the slot it was allocated on), after
    /// event waits for pending work on any other stream, of any device. The block is kept
    /// for that stream (`blocks.rs`; so for its device only) where the caps allow, else
    /// given to the pool.
    pub(crate) fn free_storage_memory(&self, dptr: u64, nbytes: u64, storage: u64, home: u32) {
        if let Ok(mut guard) = self.state.lock() {
            let st = &mut *guard;
            let clocks = &st.flight.clocks;
            let mut waits = st.flight.free_plan(storage);
            waits
                .0
                .retain(|(s, _)| !clocks.capturing(*s) && clocks.is_live(*s));
            let device = st.slots.get(home as usize).map_or(0, |s| s.device);
            let on_device = |s: u32| st.slots.get(s as usize).is_some_and(|x| x.device == device);
            let fallback = if clocks.is_live(home) && !clocks.capturing(home) {
                home
            } else {
                self.device_slots(device)
                    .and_then(|d| d.pool.first().copied())
                    .unwrap_or(0)
            };
            // On a stream of the device already ordered after all the pending work, if one
            // is (no event); else on one of its streams with pending work, else at home.
            let slot = clocks
                .ordered_after_all(&waits, on_device)
                .or_else(|| waits.0.iter().map(|(s, _)| *s).find(|s| on_device(*s)))
                .unwrap_or(fallback);
            let previous = self.bind(st, slot).unwrap_or(None);
            if !waits.is_empty() {
                st.flight.clocks.stats.ordered_frees += 1;
                // A failed event call leaves a broken context (sticky error): nothing
                // better can be done from a destructor.
                let _ = self.order(st, slot, &waits);
            }
            if let Some(d) = &self.driver {
                if dptr != 0 {
                    // only a pool stream of the memory's own device keeps it
                    let pool = self
                        .device_slots(device)
                        .is_some_and(|p| p.pool.contains(&slot));
                    let kept = pool
                        && self.blocks.lock().is_ok_and(|mut b| {
                            b.keep(device, slot, blocks::block_size(nbytes), dptr)
                        });
                    if !kept {
                        d.free(dptr, st.slots[slot as usize].stream);
                    }
                }
            }
            self.restore(previous);
            st.flight.forget_storage(storage);
        }
        if let Some(reg) = &self.registry {
            let _ = Python::try_attach(|py| {
                if let Ok(mut r) = reg.bind(py).try_borrow_mut() {
                    r.inner.drop_storage(storage);
                }
            });
        }
    }

    pub(super) fn run<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce() -> Result<T, Failure>,
    ) -> PyResult<T> {
        guard(|| Ok(f()))?.map_err(|e| e.into_py(py))
    }

    /// Allocate `nbytes` from `device`'s memory pool on this thread's home stream there:
    /// `(address, slot)`: a block that stream freed when one of the size is kept (a block
    /// of that device: a stream belongs to one), else the pool's. The allocation is
    /// recorded as a write of `storage` there (a first use on another stream is ordered
    /// after it). Raises `MemoryError` when the device is full (after giving the device's
    /// kept blocks back and trying again).
    pub(crate) fn alloc(
        &self,
        py: Python<'_>,
        storage: u64,
        nbytes: u64,
        device: u32,
    ) -> PyResult<(u64, u32)> {
        let slot = self.home_on(device)?;
        let pool = self.device_pool(device)?.mem_pool;
        let access = [Access {
            storage,
            lo: 0,
            hi: nbytes,
            exclusive: true,
        }];
        let size = blocks::block_size(nbytes);
        let size_t = usize::try_from(size).map_err(|_| PyMemoryError::new_err(nbytes))?;
        let mut address = 0u64;
        let attempt = |address: &mut u64| {
            self.enqueue_work(next_op_id(), slot, &access, |d, stream| match d {
                Some(d) => {
                    let kept = self
                        .blocks
                        .lock()
                        .ok()
                        .and_then(|mut b| b.take(device, slot, size));
                    match kept.map_or_else(|| d.alloc(size_t, pool, stream), Ok) {
                        Ok(p) => {
                            *address = p;
                            Ok(())
                        }
                        Err(code) => Err((code, "cuMemAllocFromPoolAsync")),
                    }
                }
                None => Ok(()),
            })
        };
        let mut r = attempt(&mut address);
        if matches!(r, Err(Failure::Cuda(CUDA_ERROR_OUT_OF_MEMORY, _)))
            && self.release_blocks(Some(device)).unwrap_or(0) > 0
        {
            r = attempt(&mut address);
        }
        match r {
            Ok(_) => Ok((address, slot)),
            Err(Failure::Cuda(CUDA_ERROR_OUT_OF_MEMORY, _)) => Err(PyMemoryError::new_err(
                format!("the device has no {nbytes} bytes free"),
            )),
            Err(e) => Err(e.into_py(py)),
        }
    }

    /// Give every kept block of `device` (`None`: of every device) back to its pool, each
    /// freed on the stream it was kept for (its free stays ordered where it was; in its
    /// device's context). Returns how many.
    pub(super) fn release_blocks(&self, device: Option<u32>) -> Result<usize, Failure> {
        let st = self.lock()?;
        let all = self
            .blocks
            .lock()
            .map_err(|_| Failure::Poisoned)?
            .drain(device);
        if let Some(d) = &self.driver {
            for (slot, block) in &all {
                // (drained: each is freed whatever happened to the one before)
                let previous = self.bind(&st, *slot).unwrap_or(None);
                d.free(*block, st.slots[*slot as usize].stream);
                self.restore(previous);
            }
        }
        Ok(all.len())
    }
}
