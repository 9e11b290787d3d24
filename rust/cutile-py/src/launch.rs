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

use crate::errors::{self, guard, host_err};
use crate::{HostRegistry, Ledger};
use cutile_host::launch_plan::{
    fmt_size, pack, Arg, ArgRef, ConstType, DimSpec, LaunchPlan, ParamSpec, PredicateCache,
    Refusal, SlotKind, SlotPlan, TensorDesc, Value, View, Which, WordMap, DTYPES,
};
use cutile_host::Access;
use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

static NEXT_OP: AtomicU64 = AtomicU64::new(0);

/// A fresh operation id (also the ledger's completion token).
#[pyfunction]
pub fn next_op_id() -> u64 {
    NEXT_OP.fetch_add(1, Ordering::Relaxed) + 1
}

/// The native half of a `Tensor` / `Partition` (their base class): storage, handle,
/// address, layout, dtype and tiling, fixed by `_init_meta` when the object is made.
#[pyclass(module = "cutile._native", frozen, subclass)]
pub struct HandleMeta {
    desc: OnceLock<Arc<TensorDesc>>,
}

#[pymethods]
impl HandleMeta {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        HandleMeta {
            desc: OnceLock::new(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (storage, handle, address, offset, shape, strides, dtype, itemsize,
                        tile_shape = None, num_blocks = None))]
    fn _init_meta(
        &self,
        storage: u64,
        handle: u64,
        address: u64,
        offset: i64,
        shape: Vec<i64>,
        strides: Vec<i64>,
        dtype: &str,
        itemsize: u64,
        tile_shape: Option<Vec<i64>>,
        num_blocks: Option<u64>,
    ) -> PyResult<()> {
        let desc = TensorDesc::new(View {
            storage,
            handle,
            address,
            offset,
            shape,
            strides,
            dtype: dtype.to_string(),
            itemsize,
            tile: tile_shape,
            num_blocks,
        })
        .map_err(PyValueError::new_err)?;
        self.desc
            .set(Arc::new(desc))
            .map_err(|_| PyRuntimeError::new_err("handle metadata is set once"))
    }

    /// `(storage, handle, address, span_lo, span_hi, index_bits)`, or `None` before
    /// `_init_meta` (for tests).
    #[getter]
    fn _meta(&self) -> Option<(u64, u64, u64, u64, u64, u32)> {
        self.desc.get().map(|d| {
            let v = &d.view;
            let bits = if d.wide { 64 } else { 32 };
            (v.storage, v.handle, v.address, d.span.0, d.span.1, bits)
        })
    }
}

/// `CUresult cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra)`.
type LaunchFn = unsafe extern "C" fn(
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
/// `CUresult cuStreamSynchronize(stream)`.
type SyncFn = unsafe extern "C" fn(*mut c_void) -> c_int;

struct Gpu {
    launch: LaunchFn,
    sync: SyncFn,
    stream: usize,
    /// Launches this launcher enqueued (counted after `cuLaunchKernel` returns), and how
    /// many of them a completed `cuStreamSynchronize` covers: an op launched before a
    /// synchronize returned needs no second one (a stream runs in order).
    launched: AtomicU64,
    synced: AtomicU64,
}

impl Gpu {
    /// Wait until launch number `seq` of this launcher completed (0: wait for the stream).
    fn wait_for(&self, py: Python<'_>, seq: u64) -> c_int {
        if seq != 0 && self.synced.load(Ordering::Acquire) >= seq {
            return 0;
        }
        let target = self.launched.load(Ordering::Acquire);
        let (sync, stream) = (self.sync, self.stream);
        // SAFETY: `sync` is the driver's cuStreamSynchronize (from cuGetProcAddress) and
        // `stream` a live stream of the runtime; the call touches no Rust memory.
        let code = py.detach(move || unsafe { sync(stream as *mut c_void) });
        if code == 0 {
            self.synced.fetch_max(target, Ordering::AcqRel);
        }
        code
    }
}

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

/// A compiled kernel, ready to launch.
struct KernelEntry {
    /// `LoadedKernel` (GPU) or the lowered module (interpreter).
    runnable: Py<PyAny>,
    function: usize,
    slots: Vec<SlotPlan>,
    size: usize,
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
    ledger: Py<Ledger>,
    gpu: Option<Gpu>,
    /// A `weakref.ref` to the Python kernel object.
    owner: Py<PyAny>,
    /// `WeakMethod`: `(consts, facts, index_bits) -> (runnable, function, slots, size)`.
    compile: Py<PyAny>,
    /// `(runnable, grid, names, values) -> None`: runs the interpreter.
    interpret: Py<PyAny>,
    /// `(code, what) -> NoReturn`: raises the driver error.
    cuda_error: Py<PyAny>,
    kernels: Mutex<WordMap<Box<[u64]>, Arc<KernelEntry>>>,
    passed: Mutex<PredicateCache>,
}

/// What the compile callback returns: `(runnable, CUfunction address, slots, buffer
/// size)`, each slot `(kind, param index, axis, struct format, offset)`.
type Compiled = (
    Py<PyAny>,
    usize,
    Vec<(String, usize, usize, String, usize)>,
    usize,
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

/// The handle descriptors of a call (one per argument; `None` for a non-handle).
type Handles = Vec<Option<Arc<TensorDesc>>>;

fn args_view<'a>(
    handles: &'a Handles,
    scalars: &'a [Option<Value>],
) -> impl Iterator<Item = Arg<'a>> + 'a {
    handles.iter().zip(scalars).map(|(h, s)| match (h, s) {
        (Some(d), _) => Arg::Handle(d),
        (None, Some(Value::Int(v))) => Arg::Int(*v),
        (None, Some(Value::Float(v))) => Arg::Float(*v),
        (None, Some(Value::Bool(v))) => Arg::Bool(*v),
        (None, None) => Arg::Other,
    })
}

#[pymethods]
impl KernelLauncher {
    /// `params`: `(name, kind, dtype, dims)` per non-`Const` parameter (dims: ints, `-1`,
    /// `Const` names); `consts`: `(name, "int" | "float" | "bool")`; `checked`: the
    /// kernel's `CheckResult`, whose facts decide the launch kind and the launch
    /// predicates; `gpu`: `(cuLaunchKernel, cuStreamSynchronize, stream)` addresses, or
    /// `None` on the interpreter.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (kernel, params, consts, checked, unchecked, sm_count, registry,
                        ledger, owner, compile, interpret, cuda_error, gpu = None))]
    fn new(
        py: Python<'_>,
        kernel: &str,
        params: Vec<ParamTuple<'_>>,
        consts: Vec<(String, String)>,
        checked: PyRef<'_, crate::CheckResult>,
        unchecked: bool,
        sm_count: u64,
        registry: Py<HostRegistry>,
        ledger: Py<Ledger>,
        owner: Py<PyAny>,
        compile: Py<PyAny>,
        interpret: Py<PyAny>,
        cuda_error: Py<PyAny>,
        gpu: Option<(usize, usize, usize)>,
    ) -> PyResult<Self> {
        let mut specs = Vec::with_capacity(params.len());
        for (name, kind, dtype, dims) in params {
            let dims = dims
                .iter()
                .map(|d| {
                    if let Ok(s) = d.cast::<PyString>() {
                        Ok(DimSpec::Name(s.to_str()?.to_string()))
                    } else {
                        Ok(DimSpec::Int(d.extract::<i64>()?))
                    }
                })
                .collect::<PyResult<Vec<DimSpec>>>()?;
            specs.push(ParamSpec {
                name,
                kind,
                dtype,
                dims,
            });
        }
        let consts = consts
            .into_iter()
            .map(|(name, ty)| {
                let t = match ty.as_str() {
                    "int" => ConstType::Int,
                    "float" => ConstType::Float,
                    "bool" => ConstType::Bool,
                    other => {
                        return Err(PyValueError::new_err(format!("unknown Const type {other}")))
                    }
                };
                Ok((name, t))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let gpu = match gpu {
            Some((launch, sync, stream)) => {
                if launch == 0 || sync == 0 {
                    return Err(PyValueError::new_err("null driver function pointer"));
                }
                // SAFETY: the addresses come from cuGetProcAddress for exactly these
                // symbols, whose C signatures `LaunchFn` / `SyncFn` spell out.
                let (launch, sync) = unsafe {
                    (
                        std::mem::transmute::<usize, LaunchFn>(launch),
                        std::mem::transmute::<usize, SyncFn>(sync),
                    )
                };
                Some(Gpu {
                    launch,
                    sync,
                    stream,
                    launched: AtomicU64::new(0),
                    synced: AtomicU64::new(0),
                })
            }
            None => None,
        };
        // `unchecked` launches a rejected kernel: tests that replay the checker's
        // counterexamples on the interpreter, never a user's path.
        if !checked.ok && !unchecked {
            return Err(PyValueError::new_err(
                "a launcher needs the facts of a kernel the checker accepted",
            ));
        }
        let plan = LaunchPlan::new(&specs, &consts, &checked.facts, sm_count).map_err(|e| {
            crate::errors::internal(
                py,
                &format!("`{kernel}`: the checker's facts do not fit the kernel: {e}"),
            )
        })?;
        let names = PyTuple::new(py, plan.params.iter().map(|p| p.name.as_str()))?.unbind();
        Ok(KernelLauncher {
            kernel: Arc::from(kernel),
            plan,
            names,
            registry,
            ledger,
            gpu,
            owner,
            compile,
            interpret,
            cuda_error,
            kernels: Mutex::new(WordMap::default()),
            passed: Mutex::new(PredicateCache::default()),
        })
    }

    /// The Python kernel object (`None` once it is gone).
    #[getter]
    fn kernel<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.owner.bind(py).call0()
    }

    /// `PendingLaunch(self, args, kwargs, last_word)`, or `None` where that raises
    /// `SlowPath`.
    #[pyo3(signature = (args, kwargs = None, last_word = false))]
    fn prepare(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
        last_word: bool,
    ) -> PyResult<Option<PendingLaunch>> {
        slf.get().prepare_launch(slf, args, kwargs, last_word)
    }

    /// Compiled kernels registered so far.
    fn __len__(&self) -> PyResult<usize> {
        Ok(self.kernels.lock().map_err(poisoned)?.len())
    }
}

impl KernelLauncher {
    /// Match, check and move in one call's arguments. `None` (only without `last_word`):
    /// an argument needs normalizing first (a numpy scalar); every other refusal raises
    /// the launch's typed error.
    fn prepare_launch(
        &self,
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
        last_word: bool,
    ) -> PyResult<Option<PendingLaunch>> {
        let py = slf.py();
        let plan = &self.plan;
        let n = plan.params.len();
        // Keyword names and values, in call order.
        let mut kw_names: Vec<String> = Vec::new();
        let mut kw_values: Vec<Bound<'_, PyAny>> = Vec::new();
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                let Ok(k) = k.cast::<PyString>() else {
                    return Err(PyTypeError::new_err("keywords must be strings"));
                };
                kw_names.push(k.to_str()?.to_string());
                kw_values.push(v);
            }
        }
        let placed = if kw_names.is_empty() && args.len() == n {
            None // the common call: every argument positional, in order
        } else {
            let names: Vec<&str> = kw_names.iter().map(String::as_str).collect();
            match plan.place(&self.kernel, args.len(), &names) {
                Ok(p) => Some(p),
                Err(Refusal::Refused(e)) => return Err(host_err(py, e)),
                Err(Refusal::Slow(_)) => return Ok(None),
            }
        };
        let object = |r: ArgRef| -> PyResult<Bound<'_, PyAny>> {
            match r {
                ArgRef::Positional(i) => args.get_item(i),
                ArgRef::Keyword(j) => Ok(kw_values[j].clone()),
            }
        };
        let mut objs: Vec<Bound<'_, PyAny>> = Vec::with_capacity(n);
        for i in 0..n {
            objs.push(match &placed {
                Some(p) => object(p.order[i])?,
                None => args.get_item(i)?,
            });
        }
        // Small calls use stack buffers: a launch allocates only what it keeps.
        const INLINE: usize = 16;
        let mut given_buf = [None; INLINE];
        let mut given_vec = Vec::new();
        let given: &mut [Option<Arg<'_>>] = if plan.consts.len() <= INLINE {
            &mut given_buf[..plan.consts.len()]
        } else {
            given_vec.resize(plan.consts.len(), None);
            &mut given_vec
        };
        if let Some(p) = &placed {
            for (g, j) in given.iter_mut().zip(&p.consts) {
                if let Some(j) = j {
                    *g = Some(value_arg(&kw_values[*j]));
                }
            }
        }
        let mut handles: Handles = Vec::with_capacity(n);
        let mut raw_buf = [Arg::Other; INLINE];
        let mut raw_vec = Vec::new();
        let raw: &mut [Arg<'static>] = if n <= INLINE {
            &mut raw_buf[..n]
        } else {
            raw_vec.resize(n, Arg::Other);
            &mut raw_vec
        };
        for (o, r) in objs.iter().zip(raw.iter_mut()) {
            match o.cast::<HandleMeta>() {
                Ok(m) => handles.push(m.get().desc.get().cloned()),
                Err(_) => {
                    *r = value_arg(o);
                    handles.push(None);
                }
            }
        }
        let mut argv_buf = [Arg::Other; INLINE];
        let mut argv_vec = Vec::new();
        let argv: &mut [Arg<'_>] = if n <= INLINE {
            &mut argv_buf[..n]
        } else {
            argv_vec.resize(n, Arg::Other);
            &mut argv_vec
        };
        for ((a, h), r) in argv.iter_mut().zip(&handles).zip(raw.iter()) {
            *a = match h {
                Some(d) => Arg::Handle(d),
                None => *r,
            };
        }
        let argv: &[Arg<'_>] = argv;
        let mut moves_buf = [(0u64, false); INLINE];
        let mut moves_vec = Vec::new();
        let moves: &mut [(u64, bool)] = if n <= INLINE {
            &mut moves_buf[..n]
        } else {
            moves_vec.resize(n, (0, false));
            &mut moves_vec
        };
        let describe = |w: Which| -> String {
            let o = match (w, &placed) {
                (Which::Param(i), _) => objs.get(i).cloned(),
                (Which::Const(c), Some(p)) => p.consts[c].map(|j| kw_values[j].clone()),
                (Which::Const(_), None) => None,
            };
            o.map_or_else(|| "no value".to_string(), |o| describe_object(&o))
        };
        let checked = guard(|| {
            let bound = match plan.bind_ordered(&self.kernel, argv, given, last_word, &describe) {
                Ok(b) => b,
                Err(r) => return Ok(Err(r)),
            };
            let grid = match plan.grid(&self.kernel, argv, &bound.consts) {
                Ok(g) => g,
                Err(r) => return Ok(Err(r)),
            };
            let mut cache = self.passed.lock().map_err(poisoned)?;
            if let Err(r) = plan.check_predicates(&self.kernel, argv, &bound, grid, &mut cache) {
                return Ok(Err(r));
            }
            Ok(Ok((bound, grid, plan.accesses(argv))))
        })?;
        let (bound, grid, accesses) = match checked {
            Ok(x) => x,
            Err(Refusal::Slow(_)) if !last_word => return Ok(None),
            Err(Refusal::Slow(why)) => {
                return Err(errors::internal(
                    py,
                    &format!(
                        "`{}`: the launcher could not read normalized arguments ({why})",
                        self.kernel
                    ),
                ))
            }
            Err(Refusal::Refused(e)) => return Err(host_err(py, e)),
        };
        let moved = plan.moves_into(argv, moves);
        let moves = &moves[..moved];
        // Values come back in parameter order, scalars normalized (an int given for a
        // float parameter is a float).
        let converted = argv
            .iter()
            .zip(&bound.scalars)
            .any(|(a, s)| matches!((a, s), (Arg::Int(_), Some(Value::Float(_)))));
        let values = if converted || placed.is_some() {
            let mut out = Vec::with_capacity(n);
            for (o, (a, s)) in objs.iter().zip(argv.iter().zip(&bound.scalars)) {
                out.push(match (a, s) {
                    (Arg::Int(_), Some(v @ Value::Float(_))) => value_py(py, *v)?,
                    _ => o.clone(),
                });
            }
            PyTuple::new(py, out)?.unbind()
        } else {
            args.clone().unbind()
        };
        let op = next_op_id();
        let moved = {
            let mut reg = self.registry.bind(py).try_borrow_mut()?;
            reg.inner.move_in_launch(op, &self.kernel, moves)
        };
        moved.map_err(|e| host_err(py, e))?;
        Ok(Some(PendingLaunch {
            launcher: slf.clone().unbind(),
            op,
            values,
            handles,
            scalars: bound.scalars,
            consts: bound.consts,
            index_bits: bound.index_bits,
            key: bound.key.into_boxed_slice(),
            grid,
            accesses,
            holding: AtomicBool::new(true),
            in_ledger: AtomicBool::new(false),
            started: AtomicBool::new(false),
            launched: AtomicU64::new(0),
            ran: AtomicBool::new(false),
            entry: OnceLock::new(),
        }))
    }

    /// `p`'s specialization as the compile callback takes it: `(name, value)` per `Const`
    /// and `(name, dtype, rank, align16, last_stride_one, shape_div, stride_div)` per
    /// tensor argument.
    fn specialization<'py>(
        &self,
        py: Python<'py>,
        p: &PendingLaunch,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        let consts = PyList::empty(py);
        for (c, v) in self.plan.consts.iter().zip(&p.consts) {
            consts.append((c.name.as_str(), value_py(py, *v)?))?;
        }
        let facts = PyList::empty(py);
        for (param, h) in self.plan.params.iter().zip(&p.handles) {
            if let Some(d) = h {
                let f = &d.facts;
                let dtype = d.dtype.map_or("?", |c| DTYPES[c as usize].name);
                facts.append((
                    param.name.as_str(),
                    dtype,
                    d.view.shape.len(),
                    f.align16,
                    f.last_stride_one,
                    PyTuple::new(py, &f.shape_div)?,
                    PyTuple::new(py, &f.stride_div)?,
                ))?;
            }
        }
        Ok((consts, facts))
    }

    /// The compiled kernel for `p`'s specialization, compiling it (in Python) on a miss.
    fn kernel_for(&self, py: Python<'_>, p: &PendingLaunch) -> PyResult<Arc<KernelEntry>> {
        if let Some(e) = self.kernels.lock().map_err(poisoned)?.get(&p.key[..]) {
            return Ok(e.clone());
        }
        let (consts, facts) = self.specialization(py, p)?;
        let method = self.compile.bind(py).call0()?;
        if method.is_none() {
            return Err(PyRuntimeError::new_err(format!(
                "kernel `{}` is gone",
                self.kernel
            )));
        }
        let out = method.call1((consts, facts, p.index_bits))?;
        let (runnable, function, slots, size): Compiled = out.extract()?;
        let mut plan_slots = Vec::with_capacity(slots.len());
        for (kind, param, axis, fmt, offset) in slots {
            let kind = match kind.as_str() {
                "ptr" => SlotKind::Ptr,
                "shape" => SlotKind::Shape,
                "stride" => SlotKind::Stride,
                "scalar" => SlotKind::Scalar,
                other => return Err(PyValueError::new_err(format!("unknown slot kind {other}"))),
            };
            let fmt = match fmt.as_bytes() {
                [c] if fmt_size(*c).is_some_and(|n| offset + n <= size) => *c,
                _ => return Err(PyValueError::new_err(format!("bad slot format {fmt:?}"))),
            };
            if param >= self.plan.params.len() {
                return Err(PyValueError::new_err("slot names no parameter"));
            }
            plan_slots.push(SlotPlan {
                kind,
                param,
                axis,
                fmt,
                offset,
            });
        }
        let entry = Arc::new(KernelEntry {
            runnable,
            function,
            slots: plan_slots,
            size,
        });
        let mut kernels = self.kernels.lock().map_err(poisoned)?;
        Ok(kernels.entry(p.key.clone()).or_insert(entry).clone())
    }

    fn cuda_error(&self, py: Python<'_>, code: c_int, what: &str) -> PyErr {
        match self.cuda_error.bind(py).call1((code, what)) {
            Err(e) => e,
            Ok(_) => PyRuntimeError::new_err(format!("{what} failed with CUresult {code}")),
        }
    }
}

/// One launch, and the op a kernel call returns (`cutile.KernelOp`, a registered virtual
/// subclass of `DeviceOp`): its arguments (moved in), grid and specialization, from creation
/// until `_finish` (or until it is dropped: then it waits for the device if it launched
/// and gives everything back). `then`, `await` and the "runs once" error come from
/// `DeviceOp`'s Python code.
#[pyclass(module = "cutile._native", name = "KernelOp", frozen)]
pub struct PendingLaunch {
    launcher: Py<KernelLauncher>,
    op: u64,
    values: Py<PyTuple>,
    handles: Handles,
    scalars: Vec<Option<Value>>,
    consts: Vec<Value>,
    index_bits: u32,
    key: Box<[u64]>,
    grid: [u64; 3],
    accesses: Vec<Access>,
    holding: AtomicBool,
    in_ledger: AtomicBool,
    started: AtomicBool,
    /// This op's launch number on its launcher's stream (0: not launched).
    launched: AtomicU64,
    ran: AtomicBool,
    entry: OnceLock<Arc<KernelEntry>>,
}

#[pymethods]
impl PendingLaunch {
    /// Prepare a launch (see `KernelLauncher`): raises the launch's typed error, or
    /// `SlowPath` where an argument needs normalizing first (never with `last_word`).
    #[new]
    #[pyo3(signature = (launcher, args, kwargs = None, last_word = false))]
    fn new(
        launcher: &Bound<'_, KernelLauncher>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
        last_word: bool,
    ) -> PyResult<Self> {
        match launcher
            .get()
            .prepare_launch(launcher, args, kwargs, last_word)?
        {
            Some(p) => Ok(p),
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
        (self.grid[0], self.grid[1], self.grid[2])
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
            .zip(&self.consts)
            .map(|(c, v)| Ok((c.name.clone(), value_py(py, *v)?)))
            .collect()
    }

    /// Whether the arguments are still moved in.
    #[getter]
    fn holding(&self) -> bool {
        self.holding.load(Ordering::Acquire)
    }

    /// `DeviceOp`'s "already ran" flag.
    #[getter(_ran)]
    fn get_ran(&self) -> bool {
        self.ran.load(Ordering::Acquire)
    }

    #[setter(_ran)]
    fn set_ran(&self, value: bool) {
        self.ran.store(value, Ordering::Release);
    }

    /// Compile if needed, record the ledger ranges, and launch (GPU) or get ready to run
    /// (interpreter); returns the waiter. On failure everything is given back.
    fn _start<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.get().start(slf.py())?;
        slf.getattr(pyo3::intern!(slf.py(), "_wait"))
    }

    /// Wait for the device (GPU), or run the interpreter.
    fn _wait(&self, py: Python<'_>) -> PyResult<()> {
        self.wait(py)
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
        if slf.get().ran.swap(true, Ordering::AcqRel) {
            device_op(slf.py(), "_claim")?.call1((slf,))?;
        }
        Ok(())
    }

    /// `DeviceOp.then`: an op that runs this one, then `fn(*results)`.
    fn then<'py>(slf: &Bound<'py, Self>, f: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        device_op(slf.py(), "then")?.call1((slf, f))
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
        Ok((c, f, self.index_bits))
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

impl PendingLaunch {
    fn run(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        let r = self.start(py).and_then(|_| self.wait(py));
        self.release(py);
        r.map(|_| self.values.clone_ref(py))
    }

    fn start(&self, py: Python<'_>) -> PyResult<()> {
        if self.started.swap(true, Ordering::AcqRel) {
            return Err(PyRuntimeError::new_err("this launch already started"));
        }
        if !self.holding.load(Ordering::Acquire) {
            return Err(PyRuntimeError::new_err(
                "this launch gave its arguments back",
            ));
        }
        let r = self.start_inner(py);
        if r.is_err() {
            self.release(py);
        }
        r
    }

    fn start_inner(&self, py: Python<'_>) -> PyResult<()> {
        if self.grid.contains(&0) {
            // An output with no tile: no block runs (the checker's facts assume every
            // output of a running launch has at least one tile).
            return Ok(());
        }
        let l = self.launcher.get();
        let entry = match self.entry.get() {
            Some(e) => e.clone(),
            None => l.kernel_for(py, self)?,
        };
        let acquired = {
            let mut ledger = l.ledger.bind(py).try_borrow_mut()?;
            ledger.inner.acquire(self.op, &self.accesses)
        };
        acquired.map_err(|e| host_err(py, e))?;
        self.in_ledger.store(true, Ordering::Release);
        let _ = self.entry.set(entry.clone());
        let Some(gpu) = &l.gpu else {
            return Ok(());
        };
        let mut argv_buf = [Arg::Other; 16];
        let argv_vec;
        let argv: &[Arg<'_>] = if self.handles.len() <= argv_buf.len() {
            for (a, v) in argv_buf
                .iter_mut()
                .zip(args_view(&self.handles, &self.scalars))
            {
                *a = v;
            }
            &argv_buf[..self.handles.len()]
        } else {
            argv_vec = args_view(&self.handles, &self.scalars).collect::<Vec<_>>();
            &argv_vec
        };
        let words = entry.size.div_ceil(8).max(1);
        let mut small = [0u64; 64];
        let mut big = Vec::new();
        let buf: &mut [u64] = if words <= small.len() {
            &mut small[..words]
        } else {
            big.resize(words, 0u64);
            &mut big
        };
        // SAFETY: a u64 buffer viewed as its bytes (u8 has alignment 1), borrowed
        // exclusively for the packing below.
        let bytes: &mut [u8] =
            unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), words * 8) };
        if let Err(e) = pack(&entry.slots, argv, &self.scalars, bytes) {
            return Err(struct_error(py, e.fmt, e.value));
        }
        let base = bytes.as_mut_ptr();
        let mut small_ptrs = [std::ptr::null_mut::<c_void>(); 64];
        let mut big_ptrs = Vec::new();
        let ptrs: &mut [*mut c_void] = if entry.slots.len() <= small_ptrs.len() {
            &mut small_ptrs[..entry.slots.len()]
        } else {
            big_ptrs.resize(entry.slots.len(), std::ptr::null_mut());
            &mut big_ptrs
        };
        for (p, s) in ptrs.iter_mut().zip(&entry.slots) {
            // SAFETY: every slot's offset + size lies inside the buffer (checked when the
            // kernel was registered).
            *p = unsafe { base.add(s.offset) }.cast::<c_void>();
        }
        let params = if ptrs.is_empty() {
            std::ptr::null_mut()
        } else {
            ptrs.as_mut_ptr()
        };
        let mut g = [0 as c_uint; 3];
        for (k, x) in self.grid.iter().enumerate() {
            g[k] = c_uint::try_from(*x).map_err(|_| {
                PyOverflowError::new_err(format!("grid extent {x} does not fit in 32 bits"))
            })?;
        }
        // SAFETY: `launch` is the driver's cuLaunchKernel; `function` a CUfunction of a
        // loaded module, `stream` the runtime's stream, `params` one pointer per kernel
        // parameter into `bytes`, which outlive the call (the driver copies them).
        let code = unsafe {
            (gpu.launch)(
                entry.function as *mut c_void,
                g[0],
                g[1],
                g[2],
                1,
                1,
                1,
                0,
                gpu.stream as *mut c_void,
                params,
                std::ptr::null_mut(),
            )
        };
        if code != 0 {
            return Err(l.cuda_error(py, code, "cuLaunchKernel"));
        }
        let seq = gpu.launched.fetch_add(1, Ordering::AcqRel) + 1;
        self.launched.store(seq, Ordering::Release);
        Ok(())
    }

    fn wait(&self, py: Python<'_>) -> PyResult<()> {
        let l = self.launcher.get();
        if self.grid.contains(&0) && self.started.load(Ordering::Acquire) {
            return Ok(());
        }
        let Some(entry) = self.entry.get() else {
            return Err(PyRuntimeError::new_err("this launch has not started"));
        };
        match &l.gpu {
            Some(gpu) => {
                let code = gpu.wait_for(py, self.launched.load(Ordering::Acquire));
                if code != 0 {
                    return Err(l.cuda_error(py, code, "cuStreamSynchronize"));
                }
                Ok(())
            }
            None => {
                let g = self.grid;
                l.interpret
                    .bind(py)
                    .call1((
                        entry.runnable.bind(py),
                        (g[0], g[1], g[2]),
                        l.names.bind(py),
                        self.values.bind(py),
                    ))
                    .map(|_| ())
            }
        }
    }

    fn release(&self, py: Python<'_>) {
        let l = self.launcher.get();
        if self.in_ledger.swap(false, Ordering::AcqRel) {
            if let Ok(mut ledger) = l.ledger.bind(py).try_borrow_mut() {
                ledger.inner.release(self.op);
            }
        }
        if self.holding.swap(false, Ordering::AcqRel) {
            if let Ok(mut reg) = l.registry.bind(py).try_borrow_mut() {
                reg.inner.give_back(self.op);
            }
        }
    }
}

impl Drop for PendingLaunch {
    fn drop(&mut self) {
        if !self.holding.load(Ordering::Acquire) && !self.in_ledger.load(Ordering::Acquire) {
            return;
        }
        // Dropped without finishing: wait for the device if it launched (nothing may still
        // be writing the memory), then give everything back.
        let _ = Python::try_attach(|py| {
            let l = self.launcher.get();
            let seq = self.launched.load(Ordering::Acquire);
            if seq != 0 {
                if let Some(gpu) = &l.gpu {
                    gpu.wait_for(py, seq);
                }
            }
            self.release(py);
        });
    }
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
