//! `PendingLaunch` (the Python `KernelOp`): starting a prepared launch (compile on a miss,
//! stream choice and ordering through the runtime's ledger, parameter packing,
//! `cuLaunchKernel` or the interpreter), waiting, and handing everything back (after
//! completion, or early: the ledger orders what comes next); or, dropped without running,
//! abandoning its arguments with a warning that names the line that made it.

use super::*;
use crate::runtime::{Failure, HostWorkHold};

/// One launch, and the op a kernel call returns (`cutile.KernelOp`, a registered virtual
/// subclass of `DeviceOp`): its arguments (moved in), grid and specialization, from creation
/// until `_finish`. Dropped after it ran or started, it gives everything back without
/// waiting (the ledger orders later uses and frees after it); dropped before anything ran it, its tensors stay
/// unusable (`HandleState::Dropped`, CT5009) and it warns (`cutile.OpNeverRunWarning`).
/// `then`, `await` and the "runs once" error come from `DeviceOp`'s Python code.
#[pyclass(module = "cutile._native", name = "KernelOp", frozen)]
pub struct PendingLaunch {
    pub(super) launcher: Py<KernelLauncher>,
    pub(super) op: u64,
    /// The arguments in parameter order: it keeps the tensor objects whose descriptors
    /// `handles` borrows alive (never replaced: the op is frozen).
    pub(super) values: Py<PyTuple>,
    pub(super) handles: Handles,
    /// Binding's decisions (the device too), shared with other calls of the same launch
    /// facts on that device.
    pub(super) decided: Arc<Decided>,
    /// Started once, released once (`cutile_host::OpState`).
    pub(super) state: OpState,
    /// Where the program made the op (the warning of a drop without running names it).
    pub(super) call_site: CallSite,
}

/// The line of the program that made an op.
pub(super) enum CallSite {
    Unknown,
    /// The calling frame's code object and instruction offset: the line is worked out
    /// only when shown (the line table is a scan that would cost every launch).
    Frame(Py<PyAny>, i32),
    /// `(file, line)` from Python (the slow path, which knows the user's frame).
    Given(Py<PyAny>),
}

// Full (non-limited) C API entry points, exported by every CPython from 3.11 on (this
// module's floor): the instruction offset of a frame, and the line of an offset.
extern "C" {
    fn PyFrame_GetLasti(frame: *mut pyo3::ffi::PyFrameObject) -> std::ffi::c_int;
    fn PyCode_Addr2Line(code: *mut pyo3::ffi::PyObject, offset: std::ffi::c_int)
        -> std::ffi::c_int;
}

impl CallSite {
    /// The frame running now: the one that called the kernel, on the native fast path.
    pub(super) fn here(py: Python<'_>) -> CallSite {
        // SAFETY: we hold the GIL; `PyEval_GetFrame` returns a borrowed frame (or null),
        // `PyFrame_GetCode` a new reference to its code object.
        unsafe {
            let frame = pyo3::ffi::PyEval_GetFrame();
            if frame.is_null() {
                return CallSite::Unknown;
            }
            let lasti = PyFrame_GetLasti(frame);
            let code = pyo3::ffi::PyFrame_GetCode(frame);
            if code.is_null() {
                return CallSite::Unknown;
            }
            CallSite::Frame(Bound::from_owned_ptr(py, code.cast()).unbind(), lasti)
        }
    }

    /// `(file, line)`, or `None` where unknown.
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self {
            CallSite::Unknown => Ok(py.None().into_bound(py)),
            CallSite::Frame(code, lasti) => {
                let code = code.bind(py);
                let file = code.getattr(pyo3::intern!(py, "co_filename"))?;
                // SAFETY: we hold the GIL and `code` is a live code object (from
                // `PyFrame_GetCode`).
                let line = unsafe { PyCode_Addr2Line(code.as_ptr(), *lasti) };
                Ok((file, line).into_pyobject(py)?.into_any())
            }
            CallSite::Given(site) => Ok(site.bind(py).clone()),
        }
    }
}

#[pymethods]
impl PendingLaunch {
    /// Prepare a launch (see `KernelLauncher`): raises the launch's typed error, or
    /// `SlowPath` where an argument needs normalizing first (never with `last_word`).
    /// `call_site`: `(file, line)` of the user's call, where the caller knows it better
    /// than the frame running now.
    #[new]
    #[pyo3(signature = (launcher, args, kwargs = None, last_word = false, call_site = None))]
    fn new(
        launcher: &Bound<'_, KernelLauncher>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
        last_word: bool,
        call_site: Option<Bound<'_, PyTuple>>,
    ) -> PyResult<Self> {
        match launcher
            .get()
            .prepare_launch(launcher, args, kwargs, last_word)?
        {
            Some(mut p) => {
                if let Some(site) = call_site {
                    p.call_site = CallSite::Given(site.into_any().unbind());
                }
                Ok(p)
            }
            None => Err(SlowPath::new_err(())),
        }
    }

    #[getter]
    fn op_id(&self) -> u64 {
        self.op
    }

    /// How errors name the op: "`kernel` (op #id)".
    #[getter]
    fn name(&self) -> String {
        cutile_host::launch_op_name(&self.launcher.get().kernel, self.op)
    }

    #[getter]
    fn _launcher(&self, py: Python<'_>) -> Py<KernelLauncher> {
        self.launcher.clone_ref(py)
    }

    #[getter]
    fn grid(&self) -> (u64, u64, u64) {
        let g = self.decided.grid;
        (g[0], g[1], g[2])
    }

    /// The ordinal of the device the launch runs on (that of its tensors).
    #[getter]
    fn device(&self) -> u32 {
        self.decided.device
    }

    /// The arguments in parameter order (scalars normalized).
    #[getter]
    fn values(&self, py: Python<'_>) -> Py<PyTuple> {
        self.values.clone_ref(py)
    }

    /// Every `Const` as `(name, value)`, sorted by name.
    #[getter]
    fn consts<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        let l = self.launcher.get();
        l.plan
            .consts
            .iter()
            .zip(&self.decided.bound.consts)
            .map(|(c, v)| Ok((c.name.clone(), value_py(py, *v)?)))
            .collect()
    }

    /// `(file, line)` of the call that made the op, or `None`.
    #[getter]
    fn call_site<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.call_site.to_py(py)
    }

    /// A composite op (`zip`, `then`) took this one over: it warns for it if dropped
    /// without running.
    fn _adopt(&self) {
        self.state.adopt();
    }

    /// Whether the arguments are still moved in.
    #[getter]
    fn holding(&self) -> bool {
        self.state.holding()
    }

    /// `DeviceOp`'s "already ran" flag.
    #[getter(_ran)]
    fn get_ran(&self) -> bool {
        self.state.ran()
    }

    #[setter(_ran)]
    fn set_ran(&self, value: bool) {
        self.state.set_ran(value);
    }

    /// Compile if needed, order after conflicting work, launch on the stream the runtime
    /// picks (the GPU), or run now (the interpreter), and record the ledger ranges;
    /// returns the waiter. On failure everything is given back.
    fn _start(&self, py: Python<'_>) -> PyResult<LaunchWaiter> {
        self.start(py)?;
        Ok(LaunchWaiter {
            launcher: self.launcher.clone_ref(py),
            slot: self.state.slot(),
            seq: self.state.launched(),
        })
    }

    /// Wait for the launch to complete (the host learns it: its ledger ranges go).
    fn _wait(&self, py: Python<'_>) -> PyResult<()> {
        self.wait(py)
    }

    /// Whether the launch completed (never blocks).
    fn _done(&self, py: Python<'_>) -> PyResult<bool> {
        self.done(py)
    }

    /// Hand the arguments back now, before the device finished (`then`, graph capture):
    /// the ledger keeps the launch's ranges until its stream completes, so a host read
    /// waits, another stream waits on an event, and a free is ordered after it.
    fn _hand_back(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        if !self.state.started() {
            return Err(PyRuntimeError::new_err("this launch has not started"));
        }
        self.release(py);
        Ok(self.values.clone_ref(py))
    }

    /// `(stream slot, position)` of the launch (`None` before it launched).
    #[getter]
    fn _position(&self) -> Option<(u32, u64)> {
        let seq = self.state.launched();
        (seq != 0).then(|| (self.state.slot(), seq))
    }

    /// Give the arguments back and return them.
    fn _finish(&self, py: Python<'_>) -> Py<PyTuple> {
        self.release(py);
        self.values.clone_ref(py)
    }

    /// Release the ledger ranges and hand the arguments back (idempotent).
    fn _give_back(&self, py: Python<'_>) {
        self.release(py);
    }

    /// Run, wait for completion, and return the arguments (`DeviceOp.sync`); on failure
    /// everything is given back. An op runs once (`DeviceOp._claim` raises).
    fn sync<'py>(slf: &Bound<'py, Self>) -> PyResult<Py<PyTuple>> {
        Self::_claim(slf)?;
        slf.get().run(slf.py())
    }

    /// Mark the op as run; raises `BorrowError` (CT5020, from `DeviceOp._claim`) if it ran.
    fn _claim(slf: &Bound<'_, Self>) -> PyResult<()> {
        if slf.get().state.claim() {
            device_op(slf.py(), "_claim")?.call1((slf,))?;
        }
        Ok(())
    }

    /// `DeviceOp.then`: an op that runs this one, then `fn(*results)`.
    fn then<'py>(slf: &Bound<'py, Self>, f: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        device_op(slf.py(), "then")?.call1((slf, f))
    }

    /// `DeviceOp.submit`: start now (on `stream`, else the runtime's choice) and return a
    /// handle to wait on.
    #[pyo3(signature = (stream = None))]
    fn submit<'py>(
        slf: &Bound<'py, Self>,
        stream: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        device_op(slf.py(), "submit")?.call1((slf, stream))
    }

    /// `DeviceOp.on`: this op, started on `stream`.
    fn on<'py>(slf: &Bound<'py, Self>, stream: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        device_op(slf.py(), "on")?.call1((slf, stream))
    }

    /// `DeviceOp.sync_on`: run on `stream` and wait.
    fn sync_on<'py>(
        slf: &Bound<'py, Self>,
        stream: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        device_op(slf.py(), "sync_on")?.call1((slf, stream))
    }

    /// `await op` (`DeviceOp.__await__`).
    fn __await__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        device_op(slf.py(), "__await__")?.call1((slf,))
    }

    fn _run_async<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        device_op(slf.py(), "_run_async")?.call1((slf,))
    }

    /// The kernel object that made this op.
    #[getter]
    fn kernel<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.launcher.get().owner.bind(py).call0()
    }

    /// `(consts, tensor facts, index bits)`: what the launch compiles for.
    #[getter]
    fn specialization<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>, u32)> {
        let (c, f) = self.launcher.get().specialization(py, self)?;
        Ok((c, f, self.decided.bound.index_bits))
    }

    /// The launch's parameters, values, `Const`s, specialization and grid
    /// (`cutile.kernel.op_binding`).
    #[getter]
    fn binding<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        static OP_BINDING: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        OP_BINDING
            .import(slf.py(), "cutile.kernel", "op_binding")?
            .call1((slf,))
    }

    /// `_start`, `_wait`, `_finish` in one call, without the "runs once" flag.
    fn _run(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        self.run(py)
    }
}

/// What `KernelOp._start()` returns: called, it waits for the launch to complete (the
/// host learns it). It holds the launcher and the launch's stream position, not the op (no
/// reference cycle keeps an op alive).
/// (A free list keeps a few: one is made per start and usually dropped at once.)
#[pyclass(module = "cutile._native", frozen, freelist = 64)]
pub struct LaunchWaiter {
    launcher: Py<KernelLauncher>,
    slot: u32,
    /// 0: nothing was launched (an empty grid).
    seq: u64,
}

#[pymethods]
impl LaunchWaiter {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        wait_launch(py, self.launcher.get(), self.slot, self.seq)
    }
}

/// Block until position `seq` of `slot` completed; a device fault is named for the kernel.
fn wait_launch(py: Python<'_>, l: &KernelLauncher, slot: u32, seq: u64) -> PyResult<()> {
    if seq == 0 {
        return Ok(()); // nothing was launched (an empty grid)
    }
    l.runtime
        .get()
        .wait_for(py, slot, seq)
        .map_err(|f| match f {
            Failure::Cuda(code, what) => l.cuda_error(py, code, what),
            f => f.into_py(py),
        })
}

impl PendingLaunch {
    fn run(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        let r = self.start(py).and_then(|_| self.wait(py));
        self.release(py);
        r.map(|_| self.values.clone_ref(py))
    }

    fn start(&self, py: Python<'_>) -> PyResult<()> {
        self.state
            .begin_start()
            .map_err(|r| PyRuntimeError::new_err(r.message()))?;
        // The interpreter runs the launch on this thread after enqueueing it: hold its host
        // work meanwhile, so no other thread takes it as complete before it ran.
        let rt = self.launcher.get().runtime.get();
        let _hold = (!rt.has_gpu()).then(|| HostWorkHold::take(py, &rt.host_work));
        let r = self.start_inner(py);
        if r.is_err() {
            self.release(py);
        }
        r
    }

    fn start_inner(&self, py: Python<'_>) -> PyResult<()> {
        let decided = &*self.decided;
        if decided.grid.contains(&0) {
            // An output with no tile: no block runs (the checker's facts assume every
            // output of a running launch has at least one tile).
            return Ok(());
        }
        let l = self.launcher.get();
        // (borrowed from the decision, which the op holds: no reference count per launch)
        let found;
        let entry: &KernelEntry = match decided.entry.get() {
            Some(e) => e,
            None => {
                let e = l.kernel_for(py, self)?;
                let _ = decided.entry.set(e.clone());
                found = e;
                &found
            }
        };
        let rt = l.runtime.get();
        let slot = rt.pick_on(decided.device)?;
        let scalars = &decided.bound.scalars;
        // Small launches use stack buffers: starting allocates nothing.
        const INLINE: usize = 16;
        let n = self.handles.len();
        let mut argv_buf = [Arg::Other; INLINE];
        let argv_vec: Vec<Arg<'_>>;
        let argv: &[Arg<'_>] = if n <= INLINE {
            for (a, v) in argv_buf.iter_mut().zip(args_view(&self.handles, scalars)) {
                *a = v;
            }
            &argv_buf[..n]
        } else {
            argv_vec = args_view(&self.handles, scalars).collect();
            &argv_vec
        };
        let mut access_buf = [Access::default(); INLINE];
        let access_vec: Vec<Access>;
        let accesses: &[Access] = if n <= INLINE {
            let k = l.plan.accesses_into(argv, &mut access_buf);
            &access_buf[..k]
        } else {
            access_vec = l.plan.accesses(argv);
            &access_vec
        };
        let gpu = rt.has_gpu();
        let mut buf = ParamBuffer::new(if gpu { entry.size } else { 0 });
        let mut g = [0 as c_uint; 3];
        if gpu {
            if let Err(e) = buf.pack(&entry.slots, argv, scalars) {
                return Err(struct_error(py, e.fmt, e.value));
            }
            for (k, x) in decided.grid.iter().enumerate() {
                g[k] = c_uint::try_from(*x).map_err(|_| {
                    PyOverflowError::new_err(format!("grid extent {x} does not fit in 32 bits"))
                })?;
            }
        }
        // Ordered after conflicting work (ledger), launched, and recorded at its position
        // on the stream, under the runtime's lock.
        // What the kernel loads ahead of its PDL wait: the launch may overlap the kernel
        // before it only if nothing in flight may write these bytes (asked under the
        // launch's lock).
        let early: Vec<Access> = entry
            .early
            .iter()
            .filter_map(|&i| match argv.get(i) {
                Some(Arg::Handle(d)) => Some(Access {
                    storage: d.view.storage,
                    lo: d.span.0,
                    hi: d.span.1,
                    exclusive: false,
                }),
                _ => None,
            })
            .collect();
        let enqueued = rt.enqueue_work_reading_early(
            self.op,
            slot,
            accesses,
            &early,
            |d, stream, unwritten| {
                let Some(d) = d else {
                    return Ok(()); // the interpreter runs it below
                };
                // SAFETY: `function` is a CUfunction of a loaded module (compiled with the
                // PDL prologue exactly when `entry.pdl`, as the compiled kernel said),
                // `stream` a live stream of the runtime, `params` one pointer per kernel
                // parameter into `buf`, valid during the call (the driver copies them).
                // Under a graph capture the PDL attribute becomes a programmatic edge of
                // the graph. A kernel with loads ahead of its wait takes it only when no
                // work in flight may write what they read (`unwritten`).
                let pdl = entry.pdl && unwritten;
                let (code, what) = buf.with_params(&entry.slots, |params| unsafe {
                    d.launch_tile_kernel(entry.function, g, stream, params, pdl)
                });
                match code {
                    0 => Ok(()),
                    code => Err((code, what)),
                }
            },
        );
        let (seq, capturing) = match enqueued {
            Ok(x) => x,
            Err(Failure::Cuda(code, what)) => return Err(l.cuda_error(py, code, what)),
            Err(Failure::Host(e)) => return Err(host_err(py, e.with_kernel(&l.kernel))),
            Err(f) => return Err(f.into_py(py)),
        };
        self.state.launched_as(slot, seq);
        if capturing {
            // A graph capture records the launch (it keeps the kernel and the tensors);
            // the interpreter replays it from the record, the GPU from the graph.
            if let Some(rec) = rt.recording(py, slot) {
                let g = decided.grid;
                let item = (
                    entry.runnable.bind(py),
                    (g[0], g[1], g[2]),
                    l.names.bind(py),
                    self.values.bind(py),
                );
                rec.bind(py).append(item)?;
            }
            return Ok(());
        }
        if !rt.has_gpu() {
            // The interpreter runs the work when it is enqueued: in enqueue order, which
            // every stream and event order allows.
            let g = decided.grid;
            l.interpret.bind(py).call1((
                entry.runnable.bind(py),
                (g[0], g[1], g[2]),
                l.names.bind(py),
                self.values.bind(py),
            ))?;
        }
        Ok(())
    }

    fn wait(&self, py: Python<'_>) -> PyResult<()> {
        if !self.state.started() {
            return Err(PyRuntimeError::new_err("this launch has not started"));
        }
        wait_launch(
            py,
            self.launcher.get(),
            self.state.slot(),
            self.state.launched(),
        )
    }

    /// Whether the launch completed (never blocks; an op that did not launch is done).
    fn done(&self, py: Python<'_>) -> PyResult<bool> {
        let seq = self.state.launched();
        if seq == 0 {
            return Ok(self.state.started());
        }
        let l = self.launcher.get();
        l.runtime
            .get()
            .is_done(self.state.slot(), seq)
            .map_err(|f| f.into_py(py))
    }

    /// Dropped before anything ran it: its tensors never got what the program asked of
    /// them, so they stay unusable (named by parameter in every later error), and, unless
    /// a composite op answers for it, a warning names the op and the line that made it.
    fn abandon(&self, py: Python<'_>, warn: bool) {
        let l = self.launcher.get();
        self.state.take_release();
        let params: Vec<(u64, &str)> = l
            .plan
            .params
            .iter()
            .zip(self.handles.iter())
            .filter_map(|(p, h)| h.map(|d| (d.get().view.handle, p.name.as_str())))
            .collect();
        if let Ok(mut reg) = l.registry.bind(py).try_borrow_mut() {
            reg.inner.abandon(self.op, &params);
        }
        if !warn {
            return;
        }
        // A drop may run while an exception propagates: keep it for the caller.
        let pending = PyErr::take(py);
        let warned = (|| -> PyResult<()> {
            let mut tensors: Vec<&str> = Vec::with_capacity(params.len());
            for (_, p) in &params {
                if !tensors.contains(p) {
                    tensors.push(p);
                }
            }
            warn_never_ran(py)?.call1((self.name(), self.call_site.to_py(py)?, tensors))?;
            Ok(())
        })();
        if let Err(e) = warned {
            // `-W error`: a warning that became an exception cannot leave a destructor.
            e.write_unraisable(py, None);
        }
        if let Some(e) = pending {
            e.restore(py);
        }
    }

    /// Give the arguments back. Launched work's ledger ranges stay until its stream is
    /// known complete (so what touches the tensors next is ordered after it); ranges of a
    /// start that failed before launching go now.
    fn release(&self, py: Python<'_>) {
        let l = self.launcher.get();
        let undo = self.state.take_release();
        if undo.ledger {
            let _ = l.runtime.get().release(py, self.op);
        }
        if undo.moves {
            if let Ok(mut reg) = l.registry.bind(py).try_borrow_mut() {
                reg.inner.give_back(self.op);
            }
        }
    }
}

impl Drop for PendingLaunch {
    fn drop(&mut self) {
        let action = self.state.on_drop();
        if action == DropAction::Nothing {
            return;
        }
        let _ = Python::try_attach(|py| {
            if let DropAction::Abandon { warn } = action {
                self.abandon(py, warn);
                return;
            }
            // Ran but not finished: hand everything back without waiting. Whatever touches
            // the tensors next, a free included, is ordered after the work by the ledger.
            self.release(py);
        });
    }
}

static WARN_NEVER_RAN: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `cutile.runtime.unrun_ops.warn_kernel_op`. A launcher fetches it when it is made, so an
/// op dropped while the interpreter shuts down (imports no longer work) still warns.
pub(super) fn warn_never_ran(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    WARN_NEVER_RAN.import(py, "cutile.runtime.unrun_ops", "warn_kernel_op")
}

static DEVICE_OP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// An attribute of `cutile.runtime.device_op.DeviceOp` (its Python methods).
fn device_op<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    DEVICE_OP
        .import(py, "cutile.runtime.device_op", "DeviceOp")?
        .getattr(name)
}

static STRUCT_PACK: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The error `struct.pack(fmt, value)` raises (the packing rules' one source of messages).
fn struct_error(py: Python<'_>, fmt: u8, value: Value) -> PyErr {
    let raised = (|| -> PyResult<PyErr> {
        let f = STRUCT_PACK.import(py, "struct", "pack")?;
        let v = value_py(py, value)?;
        f.call1((char::from(fmt).to_string(), v))?;
        Ok(PyValueError::new_err(format!(
            "cannot pack {value:?} as `{}`",
            char::from(fmt)
        )))
    })();
    match raised {
        Ok(e) | Err(e) => e,
    }
}
