//! `Runtime`: the streams of one device (or the interpreter's virtual streams), the work
//! in flight on them (`cutile_host::InFlight`: ledger and stream clocks), and the driver
//! calls that order it. Every piece of device work (a launch, an allocation, a fill, a
//! copy, a graph replay) goes through [`Runtime::enqueue_work`]: under one lock it plans
//! the order after conflicting work, records and waits on events where another stream is
//! involved, enqueues, and records its own ranges, so positions on a stream match the
//! order the driver saw. Host waits release the lock and the GIL.
//!
//! Stream choice: a thread's current stream (`cutile.stream()`, a graph capture, a `then`
//! chain) wins; otherwise ops take the pool's streams round-robin.

mod blocks;
mod buffer;
mod driver;
mod null;
mod ordering;

pub use buffer::DeviceBuffer;
pub(crate) use driver::{Driver, SYMBOLS};

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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// `CUDA_ERROR_OUT_OF_MEMORY`.
const CUDA_ERROR_OUT_OF_MEMORY: c_int = 2;

static NEXT_RUNTIME: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// `(runtime id, slot)`: this thread's current stream (id 0: none).
    static CURRENT: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
}

pub(crate) struct Slot {
    pub stream: usize,
    pub event: usize,
    pub name: String,
}

struct State {
    flight: InFlight,
    slots: Vec<Slot>,
}

/// Why enqueuing failed.
pub(crate) enum Failure {
    Host(HostError),
    Cuda(c_int, &'static str),
    Poisoned,
}

impl Failure {
    pub(crate) fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            Failure::Host(e) => host_err(py, e),
            Failure::Cuda(code, what) => cuda_error(py, code, what),
            Failure::Poisoned => PyRuntimeError::new_err("the runtime's lock was poisoned"),
        }
    }
}

static RAISE_CUDA: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The `DeviceError` for a driver call that returned `code`.
pub(crate) fn cuda_error(py: Python<'_>, code: c_int, what: &str) -> PyErr {
    let raised = RAISE_CUDA
        .import(py, "cutile.runtime.driver", "raise_cuda_error")
        .and_then(|f| f.call1((code, what)));
    match raised {
        Err(e) => e,
        Ok(_) => PyRuntimeError::new_err(format!("{what} failed with CUresult {code}")),
    }
}

fn closed(slot: u32) -> HostError {
    HostError::borrow(
        "CT5061",
        format!("stream {slot} was closed: no work can be enqueued on it"),
        Some(
            "use a stream that is still open, or the default pool (leave `cutile.stream()`)".into(),
        ),
    )
}

/// `({symbol: address}, {symbol: calls})`: the entry points of a driver that does nothing
/// and counts its calls (`runtime/null.rs`), for a `Runtime` that runs the GPU code
/// path without a GPU (tests and benchmarks of the host's part), and the counts so far.
#[pyfunction]
pub fn null_driver() -> (HashMap<String, usize>, HashMap<String, u64>) {
    (null::addresses(), null::calls())
}

/// Streams, work in flight, and the driver (see the module docs).
#[pyclass(module = "cutile._native", frozen)]
pub struct Runtime {
    id: u64,
    state: Mutex<State>,
    pub(crate) driver: Option<Driver>,
    pool: Vec<u32>,
    rr: AtomicUsize,
    registry: Option<Py<HostRegistry>>,
    /// The launch records of graph captures in progress: `(slot, list)`.
    recordings: Mutex<Vec<(u32, Py<PyList>)>>,
    /// Freed blocks kept for their stream (`runtime/blocks.rs`); locked after `state`.
    blocks: Mutex<blocks::BlockCache>,
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
        let _ = self.release_blocks();
    }
}

#[pymethods]
impl Runtime {
    /// `registry`: the host registry whose storages frees forget. `streams`: the pool's
    /// size on the interpreter (virtual streams). On the GPU: `driver` maps every symbol of
    /// the runtime's entry points to its address, `handles` gives the pool's `(CUstream,
    /// CUevent)` pairs, and `mem_pool` the `CUmemoryPool` allocations come from.
    #[new]
    #[pyo3(signature = (registry = None, streams = 1, driver = None, handles = None, mem_pool = 0))]
    fn new(
        registry: Option<Py<HostRegistry>>,
        streams: usize,
        driver: Option<HashMap<String, usize>>,
        handles: Option<Vec<(usize, usize)>>,
        mem_pool: usize,
    ) -> PyResult<Self> {
        let driver = match driver {
            Some(addresses) => Some(Driver::from_addresses(&addresses, mem_pool)?),
            None => None,
        };
        let handles = match (&driver, handles) {
            (Some(_), Some(h)) if !h.is_empty() => h,
            (Some(_), _) => {
                return Err(PyValueError::new_err(
                    "a GPU runtime needs the pool's (stream, event) handles",
                ))
            }
            (None, _) => vec![(0, 0); streams.max(1)],
        };
        let mut flight = InFlight::new();
        let mut slots = Vec::with_capacity(handles.len());
        let mut pool = Vec::with_capacity(handles.len());
        for (i, (stream, event)) in handles.into_iter().enumerate() {
            pool.push(flight.clocks.add_slot());
            slots.push(Slot {
                stream,
                event,
                name: format!("pool {i}"),
            });
        }
        Ok(Runtime {
            id: NEXT_RUNTIME.fetch_add(1, Ordering::Relaxed),
            state: Mutex::new(State { flight, slots }),
            driver,
            pool,
            rr: AtomicUsize::new(0),
            registry,
            recordings: Mutex::new(Vec::new()),
            blocks: Mutex::new(blocks::BlockCache::default()),
        })
    }

    /// Whether the runtime drives a GPU (else: the interpreter's virtual streams).
    #[getter]
    fn gpu(&self) -> bool {
        self.has_gpu()
    }

    /// The pool's stream slots.
    #[getter]
    fn pool(&self) -> Vec<u32> {
        self.pool.clone()
    }

    /// Register a stream (`stream`, `event`: driver handles, 0 on the interpreter).
    #[pyo3(signature = (stream = 0, event = 0, name = String::new()))]
    fn add_stream(
        &self,
        py: Python<'_>,
        stream: usize,
        event: usize,
        name: String,
    ) -> PyResult<u32> {
        self.run(py, || {
            let mut st = self.lock()?;
            let slot = st.flight.clocks.add_slot();
            st.slots.push(Slot {
                stream,
                event,
                name,
            });
            Ok(slot)
        })
    }

    /// Wait for everything on `slot`, then close it (a pool stream stays open).
    fn retire_stream(&self, py: Python<'_>, slot: u32) -> PyResult<()> {
        if self.pool.contains(&slot) {
            return Err(PyValueError::new_err("the pool's streams stay open"));
        }
        let seq = self.run(py, || Ok(self.lock()?.flight.clocks.enqueued(slot)))?;
        self.run(py, || self.wait_for(py, slot, seq))?;
        self.run(py, || {
            self.lock()?.flight.retire(slot);
            Ok(())
        })
    }

    /// `(CUstream handle, name, open)` of a slot.
    fn stream_info(&self, py: Python<'_>, slot: u32) -> PyResult<(usize, String, bool)> {
        self.run(py, || {
            let st = self.lock()?;
            let s = st
                .slots
                .get(slot as usize)
                .ok_or(Failure::Host(closed(slot)))?;
            Ok((s.stream, s.name.clone(), st.flight.clocks.is_live(slot)))
        })
    }

    /// This thread's current stream (`None`: the pool's policy).
    fn current(&self) -> Option<u32> {
        let (id, slot) = CURRENT.with(|c| c.get());
        (id == self.id).then_some(slot)
    }

    /// Set this thread's current stream (`None`: back to the pool); returns the previous.
    #[pyo3(signature = (slot = None))]
    fn set_current(&self, slot: Option<u32>) -> Option<u32> {
        let previous = self.current();
        CURRENT.with(|c| c.set(slot.map_or((0, 0), |s| (self.id, s))));
        previous
    }

    /// The slot the next op runs on.
    #[pyo3(name = "pick")]
    fn pick_py(&self) -> u32 {
        self.pick()
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
        let access = [Access {
            storage,
            lo,
            hi: lo + nbytes,
            exclusive: true,
        }];
        self.run(py, || {
            self.enqueue_work(next_op_id(), slot, &access, |d, stream| match d {
                Some(d) => match d.fill(address + lo, nbytes as usize, &pattern, stream) {
                    0 => Ok(()),
                    code => Err((code, "cuMemsetAsync")),
                },
                None => Ok(()),
            })
            .map(|_| ())
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
        let access = [Access {
            storage,
            lo,
            hi: lo + nbytes,
            exclusive: true,
        }];
        self.run(py, || {
            self.enqueue_work(next_op_id(), slot, &access, |d, stream| match d {
                Some(d) => match d.htod(address + lo, src, nbytes as usize, stream) {
                    0 => Ok(()),
                    code => Err((code, "cuMemcpyHtoDAsync")),
                },
                None => Ok(()),
            })
            .map(|_| ())
        })
    }

    /// Copy `nbytes` between allocations, `(storage, address, lo)` each, on `slot`.
    fn copy_dtod(
        &self,
        py: Python<'_>,
        slot: u32,
        dst: (u64, u64, u64),
        src: (u64, u64, u64),
        nbytes: u64,
    ) -> PyResult<u64> {
        let access = [
            Access {
                storage: dst.0,
                lo: dst.2,
                hi: dst.2 + nbytes,
                exclusive: true,
            },
            Access {
                storage: src.0,
                lo: src.2,
                hi: src.2 + nbytes,
                exclusive: false,
            },
        ];
        self.run(py, || {
            self.enqueue_work(next_op_id(), slot, &access, |d, stream| match d {
                Some(d) => match d.dtod(dst.1 + dst.2, src.1 + src.2, nbytes as usize, stream) {
                    0 => Ok(()),
                    code => Err((code, "cuMemcpyDtoDAsync")),
                },
                None => Ok(()),
            })
            .map(|(seq, _)| seq)
        })
    }

    /// Launch an instantiated graph (`exec`: a `CUgraphExec`; 0 on the interpreter, whose
    /// caller runs the recorded launches) on `slot`, as work of `token` making `accesses`.
    fn launch_graph(
        &self,
        py: Python<'_>,
        slot: u32,
        token: u64,
        exec: usize,
        accesses: Vec<AccessTuple>,
    ) -> PyResult<u64> {
        let acc = accesses_of(&accesses);
        self.run(py, || {
            self.enqueue_work(token, slot, &acc, |d, stream| match d {
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

    /// Give every kept freed block back to the pool (`cuMemFreeAsync` on its stream);
    /// returns how many. `memory.trim()` does this first, and so does an allocation that
    /// finds the device full.
    fn release_cached(&self, py: Python<'_>) -> PyResult<usize> {
        self.run(py, || self.release_blocks())
    }

    /// Bytes of freed blocks kept for reuse (the pool counts them as used).
    fn cached_bytes(&self, py: Python<'_>) -> PyResult<u64> {
        self.run(py, || {
            let _st = self.lock()?;
            Ok(self.blocks.lock().map_err(|_| Failure::Poisoned)?.bytes())
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
    fn end_capture(&self, py: Python<'_>, slot: u32) -> PyResult<Vec<AccessTuple>> {
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
            Ok(self
                .lock()?
                .flight
                .end_capture(slot)
                .into_iter()
                .map(|a| (a.storage, a.lo, a.hi, a.exclusive))
                .collect())
        })
    }

    /// Whether `slot` is being captured.
    fn capturing(&self, py: Python<'_>, slot: u32) -> PyResult<bool> {
        self.run(py, || Ok(self.lock()?.flight.clocks.capturing(slot)))
    }

    // -- the ledger, as `_native.Ledger` was (external holders, tests) ---------------------

    /// Record `(storage, lo, hi, exclusive)` ranges for an external holder `token`, all or
    /// nothing; raises BorrowError (CT5008) on a conflict with pending work.
    fn acquire(&self, py: Python<'_>, token: u64, accesses: Vec<AccessTuple>) -> PyResult<()> {
        let acc = accesses_of(&accesses);
        self.run(py, || {
            self.lock()?
                .flight
                .ledger
                .acquire(token, &acc)
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
                (b.hits, b.kept, b.bytes()),
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
