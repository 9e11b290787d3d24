//! The native launch path: [`HandleMeta`] (what a tensor or partition handle is, given once
//! when the Python object is made), [`KernelLauncher`] (a kernel's launch plan, prepared
//! once) and [`PendingLaunch`] (one launch's state, held by the Python `KernelOp`).
//!
//! Per call, `KernelLauncher.prepare` matches the arguments, infers `Const` values, keys the
//! compiled kernel by its specialization facts, validates the grid (host rule 6), evaluates
//! the launch predicates (fail closed) and moves the handles in (rule 3); on anything it
//! does not handle it returns `None` and Python's binder produces the exact error.
//! `PendingLaunch.start` compiles on a miss (through a Python callback), records the ledger
//! ranges (rule 4), packs the parameters and calls `cuLaunchKernel` through the driver's
//! function pointer (or, on the interpreter, leaves the run to `wait`); `finish` gives
//! everything back. The rules themselves live in `cutile_host::launch_plan`.

mod handle;
mod launcher;
mod pending;

pub(crate) use handle::process_registry;
pub use handle::HandleMeta;
use pending::CallSite;
pub use pending::PendingLaunch;

use crate::errors::{self, guard, host_err};
use crate::runtime::{current_device, Runtime};
use crate::HostRegistry;
use cutile_host::launch_plan::{
    fmt_size, Arg, ArgRef, Bound as BoundCall, ConstType, DimSpec, LaunchMemo, LaunchPlan,
    ParamBuffer, ParamKind, ParamSpec, PredicateCache, Refusal, SlotKind, SlotPlan, TensorDesc,
    Value, View, Which, WordMap, DTYPES,
};
use cutile_host::{Access, DropAction, OpState};
use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

static NEXT_OP: AtomicU64 = AtomicU64::new(0);

/// A fresh operation id (also the ledger's completion token).
#[pyfunction]
pub fn next_op_id() -> u64 {
    NEXT_OP.fetch_add(1, Ordering::Relaxed) + 1
}

/// `CUresult cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra)`.
pub(crate) type LaunchFn = unsafe extern "C" fn(
    *mut c_void,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> c_int;

static EPOCH: AtomicU64 = AtomicU64::new(0);

/// Forget every kernel's launcher (the driver state changed, e.g. a test switched backends):
/// the next call builds a new one.
#[pyfunction]
pub fn invalidate_launchers() {
    EPOCH.fetch_add(1, Ordering::AcqRel);
}

/// The native base of `cutile.kernel.EntryKernel`: holds the kernel's launcher and makes
/// the call. The fast path returns the op from Rust; anything else goes to the Python
/// method `_call_checked(args, kwargs)` (it builds the launcher on the first call, and
/// raises the exact error or normalizes the arguments).
#[pyclass(module = "cutile._native", frozen, subclass)]
pub struct KernelBase {
    /// The launcher and the epoch it was built in.
    slot: Mutex<Option<(Py<KernelLauncher>, u64)>>,
}

impl KernelBase {
    fn current(&self, py: Python<'_>) -> PyResult<Option<Py<KernelLauncher>>> {
        let slot = self.slot.lock().map_err(poisoned)?;
        Ok(match &*slot {
            Some((l, epoch)) if *epoch == EPOCH.load(Ordering::Acquire) => Some(l.clone_ref(py)),
            _ => None,
        })
    }
}

#[pymethods]
impl KernelBase {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        KernelBase {
            slot: Mutex::new(None),
        }
    }

    /// The current launcher (`None` before the first call or after
    /// `invalidate_launchers`); assigning one records the current epoch.
    #[getter(_launcher)]
    fn get_launcher(&self, py: Python<'_>) -> PyResult<Option<Py<KernelLauncher>>> {
        self.current(py)
    }

    #[setter(_launcher)]
    fn set_launcher(&self, launcher: Option<Py<KernelLauncher>>) -> PyResult<()> {
        let epoch = EPOCH.load(Ordering::Acquire);
        *self.slot.lock().map_err(poisoned)? = launcher.map(|l| (l, epoch));
        Ok(())
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        slf: &Bound<'py, Self>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        if let Some(l) = slf.get().current(py)? {
            let l = l.bind(py);
            if let Some(p) = l.get().prepare_launch(l, args, kwargs, false)? {
                return Ok(Bound::new(py, p)?.into_any());
            }
        }
        slf.call_method1(pyo3::intern!(py, "_call_checked"), (args, kwargs))
    }
}

/// What binding decided for a call (its `Const`s, scalars, index width, compiled-kernel
/// key), the device it runs on and its grid: shared by every call on that device with the
/// same launch facts (`LaunchMemo`).
struct Decided {
    /// (Its `key` moved to `key`.)
    bound: BoundCall,
    /// The specialization's key and the device (a CUfunction belongs to one device's
    /// context: one compiled entry per device).
    key: Box<[u64]>,
    /// The device the launch runs on: its tensors' (the current device without one).
    device: u32,
    /// Of the device's multiprocessor count where the launch is persistent.
    grid: [u64; 3],
    /// The compiled kernel of `key`, once a launch found it (later ones skip the lookup).
    entry: OnceLock<Arc<KernelEntry>>,
}

/// A compiled kernel, loaded in one device's context, ready to launch there.
struct KernelEntry {
    /// `LoadedKernel` (GPU) or the lowered module (interpreter).
    runnable: Py<PyAny>,
    function: usize,
    slots: Vec<SlotPlan>,
    size: usize,
    /// Compiled with the programmatic-dependent-launch prologue (as the compiled kernel
    /// says, never re-derived): launched with the PDL attribute (`cuLaunchKernelEx`).
    pdl: bool,
    /// The runtime parameters (by index) the compiled kernel loads ahead of its PDL wait
    /// (`pdl_early`, as it says): a launch gets the attribute only while no work in flight
    /// may write them, and is launched in full stream order otherwise.
    early: Box<[usize]>,
}

pyo3::create_exception!(
    cutile._native,
    SlowPath,
    pyo3::exceptions::PyException,
    "The native launcher did not take this call: the Python binder decides."
);

/// A kernel's launcher, prepared once from its parameters, launch predicates and mapped
/// partitions (see the module docs).
#[pyclass(module = "cutile._native", frozen)]
pub struct KernelLauncher {
    kernel: Arc<str>,
    plan: LaunchPlan,
    names: Py<PyTuple>,
    registry: Py<HostRegistry>,
    /// Streams, the ledger and the driver.
    runtime: Py<Runtime>,
    /// A `weakref.ref` to the Python kernel object.
    owner: Py<PyAny>,
    /// `WeakMethod`: `(consts, facts, index_bits, device) -> (runnable, function, slots,
    /// size, pdl, early)`.
    compile: Py<PyAny>,
    /// `(runnable, grid, names, values) -> None`: runs the interpreter.
    interpret: Py<PyAny>,
    /// `(code, what) -> NoReturn`: raises the driver error.
    cuda_error: Py<PyAny>,
    kernels: Mutex<WordMap<Box<[u64]>, Arc<KernelEntry>>>,
    passed: Mutex<PredicateCache>,
    /// Decisions of recent calls, by their device and their arguments' launch facts.
    memo: Mutex<LaunchMemo<Decided>>,
    /// Multiprocessors of each device, by ordinal (a persistent launch's default blocks).
    sm_counts: Vec<u64>,
}

/// What the compile callback returns: `(runnable, CUfunction address, slots, buffer
/// size, pdl, early)`, each slot `(kind, param index, axis, struct format, offset)`,
/// `early` the indices of the parameters loaded ahead of the PDL wait.
type Compiled = (
    Py<PyAny>,
    usize,
    Vec<(String, usize, usize, String, usize)>,
    usize,
    bool,
    Vec<usize>,
);

/// `(name, kind, dtype, dims)` of a non-`Const` parameter.
type ParamTuple<'py> = (String, String, Option<String>, Vec<Bound<'py, PyAny>>);

fn value_arg(o: &Bound<'_, PyAny>) -> Arg<'static> {
    if o.is_exact_instance_of::<PyBool>() {
        Arg::Bool(o.is_truthy().unwrap_or(false))
    } else if o.is_exact_instance_of::<PyInt>() {
        o.extract::<i64>().map_or(Arg::Other, Arg::Int)
    } else if o.is_exact_instance_of::<PyFloat>() {
        o.extract::<f64>().map_or(Arg::Other, Arg::Float)
    } else {
        Arg::Other
    }
}

/// An argument as a message names it: ``a Tensor``, ``a Partition``, ``an int 123``,
/// ``a `str` ('x')``.
fn describe_object(o: &Bound<'_, PyAny>) -> String {
    let ty = o
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    if o.cast::<HandleMeta>().is_ok() {
        return if ty == "Partition" {
            "a Partition".into()
        } else {
            "a Tensor".into()
        };
    }
    let mut repr = o
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into());
    if repr.chars().count() > 60 {
        repr = repr.chars().take(57).collect::<String>() + "...";
    }
    if o.is_exact_instance_of::<PyInt>() {
        format!("an int {repr}")
    } else {
        format!("a `{ty}` ({repr})")
    }
}

fn value_py<'py>(py: Python<'py>, v: Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => f.into_pyobject(py)?.into_any(),
        Value::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
    })
}

fn poisoned<T>(_: T) -> PyErr {
    PyRuntimeError::new_err("a launcher lock was poisoned by a panic")
}

/// A tensor argument's descriptor, borrowed from its Python object (a [`HandleMeta`]) for
/// as long as the op holds that object: a launch touches no reference count per tensor
/// (taking one and giving it back later is a write, and a cache miss, per tensor and op).
#[derive(Clone, Copy)]
struct DescRef(std::ptr::NonNull<TensorDesc>);

// SAFETY: a `TensorDesc` is immutable once made (`Sync`), and `DescRef::new`'s caller keeps
// the object owning it alive for as long as the reference is used, from any thread.
unsafe impl Send for DescRef {}
unsafe impl Sync for DescRef {}

impl DescRef {
    /// # Safety
    /// `desc` must be the descriptor of a `HandleMeta` (inside the Python object, which
    /// never moves; set once, never replaced) that the holder of the `DescRef` keeps alive
    /// while it uses it: a `PendingLaunch` holds its arguments' objects in `values`.
    unsafe fn new(desc: &TensorDesc) -> Self {
        DescRef(std::ptr::NonNull::from(desc))
    }

    fn get(&self) -> &TensorDesc {
        // SAFETY: see `DescRef::new`: the object owning the descriptor outlives `self`.
        unsafe { self.0.as_ref() }
    }
}

/// The handle descriptors of a call (one per argument; `None` for a non-handle): inline
/// in the op for a few arguments (a launch allocates only the op itself), else on the heap.
enum Handles {
    Inline(usize, [Option<DescRef>; INLINE_HANDLES]),
    Heap(Vec<Option<DescRef>>),
}

/// Arguments whose descriptors an op keeps inline.
const INLINE_HANDLES: usize = 8;

impl Handles {
    /// `n` empty entries.
    fn new(n: usize) -> Self {
        if n <= INLINE_HANDLES {
            Handles::Inline(n, [None; INLINE_HANDLES])
        } else {
            Handles::Heap(vec![None; n])
        }
    }
}

impl std::ops::Deref for Handles {
    type Target = [Option<DescRef>];
    fn deref(&self) -> &Self::Target {
        match self {
            Handles::Inline(n, a) => &a[..*n],
            Handles::Heap(v) => v,
        }
    }
}

impl std::ops::DerefMut for Handles {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Handles::Inline(n, a) => &mut a[..*n],
            Handles::Heap(v) => v,
        }
    }
}

fn args_view<'a>(
    handles: &'a [Option<DescRef>],
    scalars: &'a [Option<Value>],
) -> impl Iterator<Item = Arg<'a>> + 'a {
    handles.iter().zip(scalars).map(|(h, s)| match (h, s) {
        (Some(d), _) => Arg::Handle(d.get()),
        (None, Some(Value::Int(v))) => Arg::Int(*v),
        (None, Some(Value::Float(v))) => Arg::Float(*v),
        (None, Some(Value::Bool(v))) => Arg::Bool(*v),
        (None, None) => Arg::Other,
    })
}
