//! `Runtime`: the streams of one device (or the interpreter's virtual streams), the work
//! in flight on them (`cutile_host::InFlight`: ledger and stream clocks), and the driver
//! calls that order it. Every piece of device work (a launch, an allocation, a fill, a
//! copy, a graph replay) goes through [`Runtime::enqueue_work`]: under one lock it plans
//! the order after conflicting work, records and waits on events where another stream is
//! involved, enqueues, and records its own ranges, so positions on a stream match the
//! order the driver saw. Host waits release the lock and the GIL.
//!
//! Stream choice: a thread's current stream (`cutile.stream()`, a graph capture, a `then`
//! chain) wins for work on its device; otherwise ops take their device's pool round-robin.
//!
//! Devices (`devices.rs`): one runtime serves every device of the process, so one ledger
//! orders work across devices (a copy between devices waits on the source's writers
//! through events, as any cross-stream dependency does). Each device has its own pool of
//! streams, memory pool and primary context, set up on first use (`add_device`); with
//! more than one device in use, each driver call runs with its device's context current.

mod blocks;
mod buffer;
mod copies;
mod devices;
mod driver;
mod failure;
mod graph_accesses;
mod host_work;
mod launch_ex;
mod null;
mod ordering;

pub use buffer::DeviceBuffer;
pub(crate) use devices::{current_device, DeviceSlots};
pub use devices::{set_default_device, set_thread_device, thread_device};
pub(crate) use driver::{Driver, SYMBOLS};
use failure::closed;
pub(crate) use failure::Failure;
pub use graph_accesses::GraphAccesses;
pub(crate) use host_work::{HostWork, HostWorkHold};

use crate::errors::{guard, host_err};
use crate::launch::{next_op_id, LaunchFn};
use crate::HostRegistry;
use cutile_host::{Access, EventOps, HostError, InFlight, NoEvents, Waits};
use driver::GpuEvents;
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList};
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// `CUDA_ERROR_OUT_OF_MEMORY`.
const CUDA_ERROR_OUT_OF_MEMORY: c_int = 2;

static NEXT_RUNTIME: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// `(runtime id, slot, its device)`: this thread's current stream (id 0: none).
    static CURRENT: Cell<(u64, u32, u32)> = const { Cell::new((0, 0, 0)) };
}

pub(crate) struct Slot {
    pub stream: usize,
    pub event: usize,
    pub name: String,
    /// The ordinal of the device the stream belongs to.
    pub device: u32,
}

struct State {
    flight: InFlight,
    slots: Vec<Slot>,
    /// Each device's primary context, by ordinal (0: not set up); bound before driver
    /// calls once several devices are in use.
    contexts: Vec<usize>,
}

/// `({symbol: address}, {symbol: calls})`: the entry points of a driver that does nothing
/// and counts its calls (`runtime/null.rs`), for a `Runtime` that runs the GPU code
/// path without a GPU (tests and benchmarks of the host's part), and the counts so far.
/// `context`: make it this thread's current context first (not counted), as a program's
/// thread has its device's context current on a GPU.
#[pyfunction]
#[pyo3(signature = (context = None))]
pub fn null_driver(context: Option<usize>) -> (HashMap<String, usize>, HashMap<String, u64>) {
    if let Some(c) = context {
        null::make_current(c);
    }
    (null::addresses(), null::calls())
}

/// Streams, work in flight, and the driver (see the module docs).
#[pyclass(module = "cutile._native", frozen)]
pub struct Runtime {
    id: u64,
    state: Mutex<State>,
    pub(crate) driver: Option<Driver>,
    /// Every device of the process, by ordinal: set up on first use.
    devices: Box<[OnceLock<DeviceSlots>]>,
    /// Streams per device pool (the interpreter's virtual streams).
    pool_size: usize,
    /// More than one device is set up: driver calls bind their device's context.
    multi: AtomicBool,
    registry: Option<Py<HostRegistry>>,
    /// The launch records of graph captures in progress: `(slot, list)`.
    recordings: Mutex<Vec<(u32, Py<PyList>)>>,
    /// Freed blocks kept for their stream (`runtime/blocks.rs`); locked after `state`.
    blocks: Mutex<blocks::BlockCache>,
    /// The interpreter's work running on a host thread (`runtime/host_work.rs`); taken
    /// before `state`, never while holding it.
    pub(crate) host_work: HostWork,
}

type AccessTuple = (u64, u64, u64, bool);

fn accesses_of(v: &[AccessTuple]) -> Vec<Access> {
    v.iter()
        .map(|&(storage, lo, hi, exclusive)| Access {
            storage,
            lo,
            hi,
            exclusive,
        })
        .collect()
}

impl Drop for Runtime {
    /// A runtime forgotten (the backend changed; tests): its kept blocks go back to the
    /// pool, which outlives it.
    fn drop(&mut self) {
        let _ = self.release_blocks(None);
    }
}

#[pymethods]
impl Runtime {
    /// `registry`: the host registry whose storages frees forget. `streams`: the pool's
    /// size on the interpreter (virtual streams). On the GPU: `driver` maps every symbol of
    /// the runtime's entry points to its address. `devices`: how many devices there are;
    /// `device` is set up now, as `add_device(device, handles, mem_pool, context)` would.
    #[new]
    #[pyo3(signature = (registry = None, streams = 1, driver = None, handles = None,
                        mem_pool = 0, devices = 1, device = 0, context = 0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        registry: Option<Py<HostRegistry>>,
        streams: usize,
        driver: Option<HashMap<String, usize>>,
        handles: Option<Vec<(usize, usize)>>,
        mem_pool: usize,
        devices: usize,
        device: u32,
        context: usize,
    ) -> PyResult<Self> {
        let driver = match driver {
            Some(addresses) => Some(Driver::from_addresses(&addresses)?),
            None => None,
        };
        let rt = Runtime {
            id: NEXT_RUNTIME.fetch_add(1, Ordering::Relaxed),
            state: Mutex::new(State {
                flight: InFlight::new(),
                slots: Vec::new(),
                contexts: vec![0; devices.max(1)],
            }),
            driver,
            devices: (0..devices.max(1)).map(|_| OnceLock::new()).collect(),
            pool_size: streams.max(1),
            multi: AtomicBool::new(false),
            registry,
            recordings: Mutex::new(Vec::new()),
            blocks: Mutex::new(blocks::BlockCache::default()),
            host_work: HostWork::default(),
        };
        rt.set_up_device(device, handles, mem_pool, context)?;
        Ok(rt)
    }

    /// Set up device `device` (idempotent): its pool of streams (`handles`: `(CUstream,
    /// CUevent)` pairs on the GPU, made in its context; virtual streams on the
    /// interpreter), its `CUmemoryPool` and primary `context`. Returns the pool's slots.
    #[pyo3(signature = (device, handles = None, mem_pool = 0, context = 0))]
    fn add_device(
        &self,
        device: u32,
        handles: Option<Vec<(usize, usize)>>,
        mem_pool: usize,
        context: usize,
    ) -> PyResult<Vec<u32>> {
        self.set_up_device(device, handles, mem_pool, context)
    }

    /// Whether `device` is set up.
    fn has_device(&self, device: u32) -> bool {
        self.device_slots(device).is_some()
    }

    /// How many devices the runtime knows (set up or not).
    #[getter]
    fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// The pool's stream slots of `device` (default: the current device).
    #[pyo3(signature = (device = None))]
    fn pool_of(&self, device: Option<u32>) -> PyResult<Vec<u32>> {
        let d = device.unwrap_or_else(current_device);
        Ok(self.device_pool(d)?.pool.clone())
    }

    /// Whether the runtime drives a GPU (else: the interpreter's virtual streams).
    #[getter]
    fn gpu(&self) -> bool {
        self.has_gpu()
    }

    /// The current device's pool of stream slots.
    #[getter]
    fn pool(&self) -> PyResult<Vec<u32>> {
        self.pool_of(None)
    }

    /// Register a stream of `device` (default: the current one; `stream`, `event`: driver
    /// handles made in its context, 0 on the interpreter).
    #[pyo3(signature = (stream = 0, event = 0, name = String::new(), device = None))]
    fn add_stream(
        &self,
        py: Python<'_>,
        stream: usize,
        event: usize,
        name: String,
        device: Option<u32>,
    ) -> PyResult<u32> {
        let device = device.unwrap_or_else(current_device);
        self.device_pool(device)?;
        self.run(py, || {
            let mut st = self.lock()?;
            let slot = st.flight.clocks.add_slot();
            st.slots.push(Slot {
                stream,
                event,
                name,
                device,
            });
            Ok(slot)
        })
    }

    /// Wait for everything on `slot`, then close it (a pool stream stays open).
    fn retire_stream(&self, py: Python<'_>, slot: u32) -> PyResult<()> {
        if self.is_pool_slot(slot) {
            return Err(PyValueError::new_err("the pool's streams stay open"));
        }
        // Retire only what the wait covered: work another thread enqueues on the slot while
        // this one waits (without the lock) is waited for in another round, or it would be
        // marked complete while it may still run.
        let mut seq = self.run(py, || Ok(self.lock()?.flight.clocks.enqueued(slot)))?;
        loop {
            self.run(py, || self.wait_for(py, slot, seq))?;
            let retired = self.run(py, || {
                let mut st = self.lock()?;
                let now = st.flight.clocks.enqueued(slot);
                if now != seq {
                    return Ok(Some(now));
                }
                st.flight.retire(slot);
                Ok(None)
            })?;
            match retired {
                None => return Ok(()),
                Some(now) => seq = now,
            }
        }
    }

    /// `(CUstream handle, name, open, device)` of a slot.
    fn stream_info(&self, py: Python<'_>, slot: u32) -> PyResult<(usize, String, bool, u32)> {
        self.run(py, || {
            let st = self.lock()?;
            let s = st
                .slots
                .get(slot as usize)
                .ok_or(Failure::Host(closed(slot)))?;
            Ok((
                s.stream,
                s.name.clone(),
                st.flight.clocks.is_live(slot),
                s.device,
            ))
        })
    }

    /// This thread's current stream (`None`: the pool's policy).
    fn current(&self) -> Option<u32> {
        let (id, slot, _) = CURRENT.with(|c| c.get());
        (id == self.id).then_some(slot)
    }

    /// Set this thread's current stream (`None`: back to the pool); returns the previous.
    /// It is current for work on its own device; work on another device uses that
    /// device's pool.
    #[pyo3(signature = (slot = None))]
    fn set_current(&self, py: Python<'_>, slot: Option<u32>) -> PyResult<Option<u32>> {
        let previous = self.current();
        let entry = match slot {
            None => (0, 0, 0),
            Some(s) => {
                let device = self.run(py, || {
                    let st = self.lock()?;
                    Ok(st.slots.get(s as usize).map(|x| x.device))
                })?;
                let Some(device) = device else {
                    return Err(Failure::Host(closed(s)).into_py(py));
                };
                (self.id, s, device)
            }
        };
        CURRENT.with(|c| c.set(entry));
        Ok(previous)
    }

    /// The slot the next op on `device` (default: the current device) runs on.
    #[pyo3(name = "pick", signature = (device = None))]
    fn pick_py(&self, device: Option<u32>) -> PyResult<u32> {
        self.pick_on(device.unwrap_or_else(current_device))
    }

    /// Where allocations and host copies for `device` (default: the current device) go:
    /// the thread's current stream if it is on that device, else its pool's first.
    #[pyo3(name = "home", signature = (device = None))]
    fn home_py(&self, device: Option<u32>) -> PyResult<u32> {
        self.home_on(device.unwrap_or_else(current_device))
    }

    /// Block until `slot` (every open stream when `None`) finished what was enqueued.
    #[pyo3(signature = (slot = None))]
    fn synchronize(&self, py: Python<'_>, slot: Option<u32>) -> PyResult<()> {
        let targets: Vec<(u32, u64)> = self.run(py, || {
            let st = self.lock()?;
            let c = &st.flight.clocks;
            Ok((0..c.len() as u32)
                .filter(|s| slot.is_none_or(|x| x == *s) && c.is_live(*s))
                .map(|s| (s, c.enqueued(s)))
                .collect())
        })?;
        for (s, seq) in targets {
            self.run(py, || self.wait_for(py, s, seq))?;
        }
        Ok(())
    }

    /// Block until position `seq` of `slot` completed.
    #[pyo3(name = "wait_for")]
    fn wait_for_py(&self, py: Python<'_>, slot: u32, seq: u64) -> PyResult<()> {
        self.run(py, || self.wait_for(py, slot, seq))
    }

    /// Whether position `seq` of `slot` completed (never blocks).
    fn query(&self, py: Python<'_>, slot: u32, seq: u64) -> PyResult<bool> {
        self.run(py, || self.is_done(slot, seq))
    }

    /// Wait until the host may read (`exclusive=False`) or write the bytes: for every
    /// pending writer (and, for a write, reader) on a stream. Raises for bytes a graph
    /// capture is recording (CT5060) or an external holder has (CT5008).
    fn host_access(
        &self,
        py: Python<'_>,
        storage: u64,
        lo: u64,
        hi: u64,
        exclusive: bool,
    ) -> PyResult<()> {
        let access = Access {
            storage,
            lo,
            hi,
            exclusive,
        };
        let waits = self.run(py, || {
            self.lock()?
                .flight
                .host_plan(&access)
                .map_err(Failure::Host)
        })?;
        for (slot, seq) in waits.0 {
            self.run(py, || self.wait_for(py, slot, seq))?;
        }
        Ok(())
    }

    /// Record work the caller already did (the interpreter, which runs work when it is
    /// enqueued), ordered as if enqueued on `slot` now. Returns its position.
    #[pyo3(signature = (slot, accesses, token = 0))]
    fn note(
        &self,
        py: Python<'_>,
        slot: u32,
        accesses: Vec<AccessTuple>,
        token: u64,
    ) -> PyResult<u64> {
        let token = if token == 0 { next_op_id() } else { token };
        let acc = accesses_of(&accesses);
        self.run(py, || {
            Ok(self.enqueue_work(token, slot, &acc, |_, _| Ok(()))?.0)
        })
    }

    /// Fill bytes `[lo, lo + nbytes)` of an allocation (at `address`) with copies of
    /// `pattern` (1, 2, 4 or 8 bytes), on the device, on `slot`.
    #[allow(clippy::too_many_arguments)]
    fn fill(
        &self,
        py: Python<'_>,
        slot: u32,
        storage: u64,
        address: u64,
        lo: u64,
        nbytes: u64,
        pattern: Vec<u8>,
    ) -> PyResult<()> {
        self.run(py, || {
            self.fill_on(slot, (storage, address, lo), nbytes, &pattern)
        })
    }

    /// Copy `nbytes` from host address `src` to bytes `[lo, ...)` of an allocation, on
    /// `slot` (from pageable memory the driver stages the bytes before returning, so the
    /// source may go right after).
    #[allow(clippy::too_many_arguments)]
    fn copy_htod(
        &self,
        py: Python<'_>,
        slot: u32,
        storage: u64,
        address: u64,
        lo: u64,
        src: usize,
        nbytes: u64,
    ) -> PyResult<()> {
        self.run(py, || {
            self.htod_on(slot, (storage, address, lo), src, nbytes)
        })
    }

    /// Copy `nbytes` between allocations of one device, `(storage, address, lo)` each, on
    /// `slot`. Returns the position.
    fn copy_dtod(
        &self,
        py: Python<'_>,
        slot: u32,
        dst: (u64, u64, u64),
        src: (u64, u64, u64),
        nbytes: u64,
    ) -> PyResult<u64> {
        self.run(py, || self.dtod_on(slot, dst, src, nbytes, None))
    }

    /// Copy `nbytes` from an allocation of device `src.3` to one of device `dst.3`
    /// (`(storage, address, lo, device)` each) on `slot` (a stream of the destination's
    /// device): `cuMemcpyPeerAsync`, direct where peer access is on, staged by the driver
    /// otherwise. Ordered like any work: after the source's pending writers and the
    /// destination's pending users, on any stream of either device. Returns the position.
    fn copy_peer(
        &self,
        py: Python<'_>,
        slot: u32,
        dst: (u64, u64, u64, u32),
        src: (u64, u64, u64, u32),
        nbytes: u64,
    ) -> PyResult<u64> {
        self.run(py, || {
            self.dtod_on(
                slot,
                (dst.0, dst.1, dst.2),
                (src.0, src.1, src.2),
                nbytes,
                Some((dst.3, src.3)),
            )
        })
    }

    /// Work another library enqueues on `slot` (a collective), step 1: order `slot` after
    /// the work `accesses` conflicts with, and hold them for `token` while the caller
    /// enqueues (conflicting work and host accesses are refused meanwhile: CT5008).
    #[pyo3(signature = (token, slot, accesses, label = None))]
    fn begin_external(
        &self,
        py: Python<'_>,
        token: u64,
        slot: u32,
        accesses: Vec<AccessTuple>,
        label: Option<&str>,
    ) -> PyResult<()> {
        let acc = accesses_of(&accesses);
        self.run(py, || self.begin_external_on(token, slot, &acc, label))
    }

    /// Step 2: the work is enqueued on `slot`; its accesses move there. Returns the
    /// position (waiting for it waits for the work).
    fn end_external(
        &self,
        py: Python<'_>,
        token: u64,
        slot: u32,
        accesses: Vec<AccessTuple>,
    ) -> PyResult<u64> {
        let acc = accesses_of(&accesses);
        self.run(py, || {
            let mut st = self.lock()?;
            let (seq, poll) = st.flight.end_external(token, slot, &acc);
            if poll {
                self.poll(&mut st, slot);
            }
            Ok(seq)
        })
    }

    /// The caller failed to enqueue the work of `token`: drop its hold.
    fn abort_external(&self, py: Python<'_>, token: u64) -> PyResult<usize> {
        self.run(py, || Ok(self.lock()?.flight.abort_external(token)))
    }

    /// Launch an instantiated graph (`exec`: a `CUgraphExec`; 0 on the interpreter, whose
    /// caller runs the recorded launches) on `slot`, as work of `token` making `accesses`.
    fn launch_graph(
        &self,
        py: Python<'_>,
        slot: u32,
        token: u64,
        exec: usize,
        accesses: &GraphAccesses,
    ) -> PyResult<u64> {
        self.run(py, || {
            self.enqueue_work(token, slot, &accesses.ranges, |d, stream| match d {
                Some(d) if exec != 0 => match d.graph_launch(exec, stream) {
                    0 => Ok(()),
                    code => Err((code, "cuGraphLaunch")),
                },
                _ => Ok(()),
            })
            .map(|(seq, _)| seq)
        })
    }

    /// Launch a CUDA function (a raw kernel) on `slot` as work of `token` making
    /// `accesses`, ordered after conflicting work like every launch. `params` is the
    /// address of the `void*` array the driver reads (the caller keeps it and what it
    /// points to alive for the call). A capture records `record` (what it keeps alive).
    /// Returns `(position, capturing)`.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (slot, token, accesses, function, grid, block, shared_mem, params,
                        record = None))]
    fn launch_kernel(
        &self,
        py: Python<'_>,
        slot: u32,
        token: u64,
        accesses: Vec<AccessTuple>,
        function: usize,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared_mem: u32,
        params: usize,
        record: Option<Bound<'_, PyAny>>,
    ) -> PyResult<(u64, bool)> {
        if function == 0 || params == 0 {
            return Err(PyValueError::new_err("a null function or parameter array"));
        }
        let acc = accesses_of(&accesses);
        let (seq, capturing) = self.run(py, || {
            self.enqueue_work(token, slot, &acc, |d, stream| {
                let Some(d) = d else {
                    return Ok(()); // no device: the caller refused to launch already
                };
                // SAFETY: `launch` is the driver's cuLaunchKernel, `function` a CUfunction
                // of a loaded module, `params` the caller's live array of pointers to the
                // parameter values (the driver copies them during the call).
                let code = unsafe {
                    (d.launch)(
                        function as *mut c_void,
                        grid.0,
                        grid.1,
                        grid.2,
                        block.0,
                        block.1,
                        block.2,
                        shared_mem,
                        stream as *mut c_void,
                        params as *mut *mut c_void,
                        std::ptr::null_mut(),
                    )
                };
                match code {
                    0 => Ok(()),
                    code => Err((code, "cuLaunchKernel")),
                }
            })
        })?;
        if capturing {
            if let (Some(rec), Some(item)) = (self.recording(py, slot), record) {
                rec.bind(py).append(item)?;
            }
        }
        Ok((seq, capturing))
    }

    /// Block until position `seq` of `slot` completed; returns the driver's `CUresult`
    /// instead of raising (0: done), so a caller can name a kernel fault itself.
    fn wait_code(&self, py: Python<'_>, slot: u32, seq: u64) -> PyResult<i32> {
        match self.wait_for(py, slot, seq) {
            Ok(()) => Ok(0),
            Err(Failure::Cuda(code, _)) => Ok(code),
            Err(f) => Err(f.into_py(py)),
        }
    }

    /// Forget a storage of the interpreter (its buffer died): as a GPU free, ordered after
    /// what is pending on it.
    #[pyo3(signature = (storage, home = 0))]
    fn free_storage(&self, storage: u64, home: u32) {
        self.free_storage_memory(0, 0, storage, home);
    }

    /// Give every kept freed block of `device` (`None`: of every device) back to its
    /// pool (`cuMemFreeAsync` on its stream); returns how many. `memory.trim(device=...)`
    /// does this first, and so does an allocation that finds its device full.
    #[pyo3(signature = (device = None))]
    fn release_cached(&self, py: Python<'_>, device: Option<u32>) -> PyResult<usize> {
        self.run(py, || self.release_blocks(device))
    }

    /// Bytes of freed blocks of `device` (`None`: of every device) kept for reuse (its
    /// pool counts them as used).
    #[pyo3(signature = (device = None))]
    fn cached_bytes(&self, py: Python<'_>, device: Option<u32>) -> PyResult<u64> {
        self.run(py, || {
            let _st = self.lock()?;
            Ok(self
                .blocks
                .lock()
                .map_err(|_| Failure::Poisoned)?
                .bytes(device))
        })
    }

    /// Start recording `slot` into a graph: its work does not run, launches append
    /// `(runnable, grid, names, values)` to `recording`.
    fn begin_capture(&self, py: Python<'_>, slot: u32, recording: Py<PyList>) -> PyResult<()> {
        self.run(py, || {
            self.lock()?.flight.begin_capture(slot);
            Ok(())
        })?;
        self.recordings
            .lock()
            .map_err(|_| PyRuntimeError::new_err("poisoned"))?
            .push((slot, recording));
        Ok(())
    }

    /// Stop recording `slot`: the accesses the captured work makes, one hull per storage
    /// and kind (`(storage, lo, hi, exclusive)`).
    fn end_capture(&self, py: Python<'_>, slot: u32) -> PyResult<GraphAccesses> {
        let taken = {
            let mut r = self
                .recordings
                .lock()
                .map_err(|_| PyRuntimeError::new_err("poisoned"))?;
            let i = r.iter().position(|(s, _)| *s == slot);
            i.map(|i| r.swap_remove(i))
        };
        drop(taken); // a Python list: dropped without the lock held
        self.run(py, || {
            let ranges = self.lock()?.flight.end_capture(slot);
            Ok(GraphAccesses {
                ranges: ranges.into_boxed_slice(),
            })
        })
    }

    /// Take the interpreter's host-work hold (`runtime/host_work.rs`; re-entrant): the
    /// caller enqueues work and runs it on this thread before `end_host_work()`. Nothing
    /// on the GPU.
    fn begin_host_work(&self, py: Python<'_>) {
        if !self.has_gpu() {
            py.detach(|| self.host_work.acquire());
        }
    }

    /// Give one level of the host-work hold back.
    fn end_host_work(&self) {
        if !self.has_gpu() {
            self.host_work.release();
        }
    }

    /// Whether `slot` is being captured.
    fn capturing(&self, py: Python<'_>, slot: u32) -> PyResult<bool> {
        self.run(py, || Ok(self.lock()?.flight.clocks.capturing(slot)))
    }

    // -- the ledger, as `_native.Ledger` was (external holders, tests) ---------------------

    /// Record `(storage, lo, hi, exclusive)` ranges for an external holder `token`, all or
    /// nothing; raises BorrowError (CT5008) on a conflict with pending work. `label`: what
    /// the holder is, as the errors of what it refuses name it.
    #[pyo3(signature = (token, accesses, label = None))]
    fn acquire(
        &self,
        py: Python<'_>,
        token: u64,
        accesses: Vec<AccessTuple>,
        label: Option<&str>,
    ) -> PyResult<()> {
        let acc = accesses_of(&accesses);
        self.run(py, || {
            self.lock()?
                .flight
                .ledger
                .acquire(token, &acc, label)
                .map_err(Failure::Host)
        })
    }

    /// Drop every range of `token`; returns how many.
    pub(crate) fn release(&self, py: Python<'_>, token: u64) -> PyResult<usize> {
        self.run(py, || Ok(self.lock()?.flight.ledger.release(token)))
    }

    /// Tokens of pending work this access conflicts with.
    #[pyo3(signature = (storage, lo, hi, exclusive))]
    fn conflicts(
        &self,
        py: Python<'_>,
        storage: u64,
        lo: u64,
        hi: u64,
        exclusive: bool,
    ) -> PyResult<Vec<u64>> {
        let access = Access {
            storage,
            lo,
            hi,
            exclusive,
        };
        self.run(py, || {
            Ok(self.lock()?.flight.ledger.conflicts(&access, None))
        })
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.run(py, || Ok(self.lock()?.flight.ledger.len()))
    }

    /// Approximate heap bytes the ledger and clocks hold.
    fn heap_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        self.run(py, || Ok(self.lock()?.flight.heap_bytes()))
    }

    /// What the ordering logic did so far (counters), and the ledger's size.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (s, len, (hits, kept, cached)) = self.run(py, || {
            let st = self.lock()?;
            let b = self.blocks.lock().map_err(|_| Failure::Poisoned)?;
            Ok((
                st.flight.clocks.stats,
                st.flight.ledger.len(),
                (b.hits, b.kept, b.bytes(None)),
            ))
        })?;
        let d = PyDict::new(py);
        d.set_item("enqueued", s.enqueued)?;
        d.set_item("events_recorded", s.events_recorded)?;
        d.set_item("stream_waits", s.stream_waits)?;
        d.set_item("host_waits", s.host_waits)?;
        d.set_item("ordered_frees", s.ordered_frees)?;
        d.set_item("polls", s.polls)?;
        d.set_item("pending_accesses", len)?;
        d.set_item("blocks_reused", hits)?;
        d.set_item("blocks_kept", kept)?;
        d.set_item("cached_bytes", cached)?;
        Ok(d)
    }
}
