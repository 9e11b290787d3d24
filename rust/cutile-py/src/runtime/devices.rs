//! Devices: the process's default device and each thread's current one (`cutile.device(i)`),
//! and each device's part of the runtime, set up on first use: its pool of streams
//! (round-robin), its memory pool and its primary context.

use super::*;
use std::sync::atomic::AtomicU32;

/// The process's default device (`cutile.set_device`, `CUTILE_DEVICE`).
static DEFAULT_DEVICE: AtomicU32 = AtomicU32::new(0);

thread_local! {
    /// This thread's device (`with cutile.device(i):`); `None`: the default.
    static THREAD_DEVICE: Cell<Option<u32>> = const { Cell::new(None) };
}

/// The device work goes to when nothing else says: the thread's, else the default.
pub(crate) fn current_device() -> u32 {
    THREAD_DEVICE
        .with(|d| d.get())
        .unwrap_or_else(|| DEFAULT_DEVICE.load(Ordering::Relaxed))
}

/// The current device: this thread's (`set_thread_device`), else the process default.
#[pyfunction]
pub fn thread_device() -> u32 {
    current_device()
}

/// Set this thread's device (`None`: follow the process default); returns the previous
/// setting. The caller checked the ordinal.
#[pyfunction]
#[pyo3(signature = (device = None))]
pub fn set_thread_device(device: Option<u32>) -> Option<u32> {
    THREAD_DEVICE.with(|d| d.replace(device))
}

/// Set the process's default device; returns the previous one.
#[pyfunction]
pub fn set_default_device(device: u32) -> u32 {
    DEFAULT_DEVICE.swap(device, Ordering::Relaxed)
}

/// One device's part of the runtime.
pub(crate) struct DeviceSlots {
    /// Its pool of stream slots, taken round-robin.
    pub pool: Vec<u32>,
    rr: AtomicUsize,
    /// Its `CUmemoryPool` (0 on the interpreter).
    pub mem_pool: usize,
}

fn no_device(device: u32) -> PyErr {
    PyValueError::new_err(format!(
        "device {device} is not set up in this runtime (cutile.runtime.devices.activate)"
    ))
}

impl Runtime {
    pub(crate) fn device_slots(&self, device: u32) -> Option<&DeviceSlots> {
        self.devices.get(device as usize).and_then(OnceLock::get)
    }

    pub(crate) fn device_pool(&self, device: u32) -> PyResult<&DeviceSlots> {
        self.device_slots(device).ok_or_else(|| no_device(device))
    }

    pub(super) fn is_pool_slot(&self, slot: u32) -> bool {
        self.devices
            .iter()
            .filter_map(OnceLock::get)
            .any(|d| d.pool.contains(&slot))
    }

    /// Make the pool, memory pool and context of `device` known (see `add_device`).
    pub(super) fn set_up_device(
        &self,
        device: u32,
        handles: Option<Vec<(usize, usize)>>,
        mem_pool: usize,
        context: usize,
    ) -> PyResult<Vec<u32>> {
        let Some(cell) = self.devices.get(device as usize) else {
            return Err(PyValueError::new_err(format!(
                "device {device} does not exist (the runtime knows {} devices)",
                self.devices.len()
            )));
        };
        if let Some(d) = cell.get() {
            return Ok(d.pool.clone());
        }
        let handles = match (&self.driver, handles) {
            (Some(_), Some(h)) if !h.is_empty() => h,
            (Some(_), _) => {
                return Err(PyValueError::new_err(
                    "a GPU runtime needs the device's (stream, event) handles",
                ))
            }
            (None, _) => vec![(0, 0); self.pool_size],
        };
        let mut st = self
            .state
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the runtime's lock was poisoned"))?;
        if let Some(d) = cell.get() {
            return Ok(d.pool.clone()); // another thread set it up meanwhile
        }
        let mut pool = Vec::with_capacity(handles.len());
        for (i, (stream, event)) in handles.into_iter().enumerate() {
            pool.push(st.flight.clocks.add_slot());
            st.slots.push(Slot {
                stream,
                event,
                name: format!("device {device} pool {i}"),
                device,
            });
        }
        if let Some(c) = st.contexts.get_mut(device as usize) {
            *c = context;
        }
        let _ = cell.set(DeviceSlots {
            pool: pool.clone(),
            rr: AtomicUsize::new(0),
            mem_pool,
        });
        let active = self.devices.iter().filter(|d| d.get().is_some()).count();
        self.multi.store(active > 1, Ordering::Release);
        Ok(pool)
    }

    /// The slot the next op on `device` runs on: the thread's current stream if it is on
    /// that device, else the device's pool round-robin.
    pub(crate) fn pick_on(&self, device: u32) -> PyResult<u32> {
        let (id, slot, dev) = CURRENT.with(|c| c.get());
        if id == self.id && dev == device {
            return Ok(slot);
        }
        // A capture records the work of its stream's device; work on another device would
        // run now, outside the graph, and never at replay: refused, not run.
        if id == self.id && self.lock().is_ok_and(|st| st.flight.clocks.capturing(slot)) {
            return Err(Python::attach(|py| {
                host_err(py, capture_of_another_device(device, dev))
            }));
        }
        let d = self.device_pool(device)?;
        Ok(match d.pool.len() {
            0 => 0,
            1 => d.pool[0],
            n => d.pool[d.rr.fetch_add(1, Ordering::Relaxed) % n],
        })
    }

    /// Where allocations and host copies on `device` go: the thread's current stream if
    /// it is on that device, else the device pool's first.
    pub(crate) fn home_on(&self, device: u32) -> PyResult<u32> {
        let (id, slot, dev) = CURRENT.with(|c| c.get());
        if id == self.id && dev == device {
            return Ok(slot);
        }
        Ok(self.device_pool(device)?.pool.first().copied().unwrap_or(0))
    }

    /// The primary context of `device` (0 on the interpreter).
    pub(super) fn context_of(&self, device: u32) -> Result<usize, Failure> {
        Ok(self
            .lock()?
            .contexts
            .get(device as usize)
            .copied()
            .unwrap_or(0))
    }

    /// With several devices in use, make the context of `slot`'s device current (a
    /// launch, an allocation or a copy runs in the context of its stream's device).
    /// Returns the context to put back after the driver calls ([`Runtime::restore`]): the
    /// thread's context is the program's (torch reads its current device from it).
    pub(super) fn bind(&self, st: &State, slot: u32) -> Result<Option<usize>, Failure> {
        if !self.multi.load(Ordering::Acquire) {
            return Ok(None);
        }
        let (Some(d), Some(s)) = (&self.driver, st.slots.get(slot as usize)) else {
            return Ok(None);
        };
        let ctx = match st.contexts.get(s.device as usize) {
            Some(&ctx) if ctx != 0 => ctx,
            _ => return Ok(None),
        };
        let previous = d
            .context()
            .map_err(|c| Failure::Cuda(c, "cuCtxGetCurrent"))?;
        if previous == ctx {
            return Ok(None);
        }
        match d.set_context(ctx) {
            0 => Ok(Some(previous)),
            code => Err(Failure::Cuda(code, "cuCtxSetCurrent")),
        }
    }

    /// Put back the context [`Runtime::bind`] replaced.
    pub(super) fn restore(&self, previous: Option<usize>) {
        if let (Some(p), Some(d)) = (previous, &self.driver) {
            // nothing better to do if this fails: the next call binds what it needs
            let _ = d.set_context(p);
        }
    }

    /// The contexts event calls bind (only with several devices in use).
    pub(super) fn event_contexts<'a>(&self, st: &'a [usize]) -> Option<&'a [usize]> {
        self.multi.load(Ordering::Acquire).then_some(st)
    }
}

/// BorrowError CT5065: work on `device` started inside a capture of a stream of
/// `captured` (see `pick_on`).
fn capture_of_another_device(device: u32, captured: u32) -> HostError {
    HostError::borrow(
        "CT5065",
        format!(
            "a CUDA Graph capture records the work of device {captured}; this op runs on \
             device {device}, so it would run now and never at a replay"
        ),
        Some(format!(
            "capture the work of device {device} in its own graph, made under \
             `with cutile.device({device}):`, or run it before or after the capture"
        )),
    )
}
