//! `cutile._native`: the only PyO3 crate. It implements `python/cutile/_native.pyi` over
//! the pure crates (`cutile-kast`, `cutile-diag`, `cutile-check`, `cutile-host`) and does
//! nothing else: no rule lives here.
//!
//! Errors: a user mistake in a kernel comes back as diagnostics, never an exception;
//! malformed input raises `ValueError`; host-rule violations raise `cutile.errors.BorrowError`
//! / `LaunchError` (`errors.rs`, one exhaustive match); a Rust panic is caught at the
//! boundary and raised as `cutile.errors.InternalCompilerError`.

mod dlpack;
mod errors;
mod launch;
mod runtime;

use cutile_kast::SourceFile;
use errors::{guard, host_err};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::Arc;

/// A labelled source span.
#[pyclass(module = "cutile._native", frozen, get_all)]
#[derive(Clone)]
pub struct Label {
    file: String,
    lo: u32,
    hi: u32,
    line: u32,
    col: u32,
    end_line: u32,
    end_col: u32,
    message: String,
}

#[pymethods]
impl Label {
    fn __repr__(&self) -> String {
        format!(
            "Label({}:{}:{}, {:?})",
            self.file,
            self.line,
            self.col + 1,
            self.message
        )
    }
}

fn label(files: &[SourceFile], l: &cutile_diag::Label) -> Label {
    let s = l.span;
    Label {
        file: files
            .get(s.file as usize)
            .map(|f| f.path.clone())
            .unwrap_or_default(),
        lo: s.lo,
        hi: s.hi,
        line: s.line,
        col: s.col,
        end_line: s.end_line,
        end_col: s.end_col,
        message: l.message.clone(),
    }
}

#[pyclass(module = "cutile._native", frozen)]
pub struct Diagnostic {
    inner: cutile_diag::Diagnostic,
    files: Arc<Vec<SourceFile>>,
}

#[pymethods]
impl Diagnostic {
    #[getter]
    fn code(&self) -> &str {
        &self.inner.code
    }
    #[getter]
    fn severity(&self) -> &str {
        self.inner.severity.as_str()
    }
    #[getter]
    fn message(&self) -> &str {
        &self.inner.message
    }
    #[getter]
    fn primary(&self) -> Label {
        label(&self.files, &self.inner.primary)
    }
    #[getter]
    fn secondary(&self) -> Vec<Label> {
        self.inner
            .secondary
            .iter()
            .map(|l| label(&self.files, l))
            .collect()
    }
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.inner.notes.clone()
    }
    #[getter]
    fn help(&self) -> Option<String> {
        self.inner.help.clone()
    }
    #[pyo3(signature = (color = false))]
    fn render(&self, color: bool) -> PyResult<String> {
        guard(|| Ok(cutile_diag::render_one(&self.files, &self.inner, color)))
    }
    fn __repr__(&self) -> String {
        format!("Diagnostic({}, {:?})", self.inner.code, self.inner.message)
    }
}

/// One safety obligation of a kernel and how it was discharged.
#[pyclass(module = "cutile._native", frozen, get_all)]
#[derive(Clone)]
pub struct Obligation {
    kind: String,
    description: String,
    discharged: String,
    /// The launch predicate or device condition, as text (for people; never parsed).
    predicate: Option<String>,
    span: Label,
    /// The `call_device` node ids from the entry to the node, and the node's id.
    node_path: Vec<u32>,
    nid: u32,
}

#[pymethods]
impl Obligation {
    fn __repr__(&self) -> String {
        match &self.predicate {
            Some(p) => format!("Obligation({}, {}, {p:?})", self.kind, self.discharged),
            None => format!("Obligation({}, {})", self.kind, self.discharged),
        }
    }
}

#[pyclass(module = "cutile._native", frozen)]
pub struct CheckResult {
    ok: bool,
    diagnostics: Vec<cutile_diag::Diagnostic>,
    obligations: Vec<Obligation>,
    files: Arc<Vec<SourceFile>>,
    /// What the lowering and the launcher act on; a `KernelLauncher` reads it in Rust.
    facts: Arc<cutile_check::KernelFacts>,
}

/// `(node path, nid, param, rank, axis, map, group_max)`: one `ScheduleFact` for Python.
type ScheduleTuple = (Vec<u32>, u32, String, u8, u8, &'static str, i64);

#[pymethods]
impl CheckResult {
    #[getter]
    fn ok(&self) -> bool {
        self.ok
    }
    #[getter]
    fn diagnostics(&self) -> Vec<Diagnostic> {
        self.diagnostics
            .iter()
            .map(|d| Diagnostic {
                inner: d.clone(),
                files: self.files.clone(),
            })
            .collect()
    }
    #[getter]
    fn obligations(&self) -> Vec<Obligation> {
        self.obligations.clone()
    }
    /// `(param, "partitioned" | "persistent")` per `Mut` parameter, in order.
    #[getter]
    fn outputs(&self) -> Vec<(String, &'static str)> {
        self.facts
            .outputs
            .iter()
            .map(|o| {
                let kind = match o.kind {
                    cutile_check::OutputKind::Partitioned => "partitioned",
                    cutile_check::OutputKind::Persistent => "persistent",
                };
                (o.param.clone(), kind)
            })
            .collect()
    }
    #[getter]
    fn grid_rank(&self) -> u8 {
        self.facts.grid_rank
    }
    #[getter]
    fn index_width(&self) -> u8 {
        self.facts.index_width
    }
    /// `(node path, nid)` of every access the lowering must guard with a device assert.
    #[getter]
    fn device_checks(&self) -> Vec<(Vec<u32>, u32)> {
        let mut out: Vec<(Vec<u32>, u32)> = self
            .facts
            .obligations
            .iter()
            .filter(|o| matches!(o.discharge, cutile_check::Discharge::Device { .. }))
            .map(|o| (o.node.path.clone(), o.node.nid))
            .collect();
        out.sort();
        out.dedup();
        out
    }
    /// `(node path, nid)` of every node the checker made an obligation for.
    #[getter]
    fn checked_nodes(&self) -> Vec<(Vec<u32>, u32)> {
        let mut out: Vec<(Vec<u32>, u32)> = self
            .facts
            .obligations
            .iter()
            .map(|o| (o.node.path.clone(), o.node.nid))
            .collect();
        out.sort();
        out.dedup();
        out
    }
    /// `(node path, nid, param, rank, axis, map, group_max)` of every `iter_indices()`
    /// loop instance (keyed by the `iter_indices` call): the schedule the checker proved
    /// its stores disjoint under, which the lowering emits.
    #[getter]
    fn schedules(&self) -> Vec<ScheduleTuple> {
        self.facts
            .schedules
            .iter()
            .map(|(n, s)| {
                (
                    n.path.clone(),
                    n.nid,
                    s.param.clone(),
                    s.rank,
                    s.axis,
                    s.map.name(),
                    s.group_max,
                )
            })
            .collect()
    }
    /// `(node path, nid, bits)` of every `for` loop: the width of its counter.
    #[getter]
    fn loop_counters(&self) -> Vec<(Vec<u32>, u32, u8)> {
        self.facts
            .loop_counters
            .iter()
            .map(|(n, bits)| (n.path.clone(), n.nid, *bits))
            .collect()
    }
    /// `(node path, nid, branch)` of every test the checker folded: `True`/`False` for a
    /// test of literals (only that branch was read), `None` for a value of the `Const`s
    /// (each branch was read as the live one).
    #[getter]
    fn folded_branches(&self) -> Vec<(Vec<u32>, u32, Option<bool>)> {
        self.facts
            .folded_branches
            .iter()
            .map(|(n, b)| (n.path.clone(), n.nid, *b))
            .collect()
    }
    #[pyo3(signature = (color = false))]
    fn rendered(&self, color: bool) -> PyResult<String> {
        guard(|| Ok(cutile_diag::render(&self.files, &self.diagnostics, color)))
    }
    fn __repr__(&self) -> String {
        format!(
            "CheckResult(ok={}, diagnostics={}, obligations={})",
            self.ok,
            self.diagnostics.len(),
            self.obligations.len()
        )
    }
}

/// Run every kernel-level rule on a serialized kernel AST (docs/kernel-ast.md).
#[pyfunction]
fn check_kernel(py: Python<'_>, kast_json: &str) -> PyResult<CheckResult> {
    let outcome = py.detach(|| {
        std::panic::catch_unwind(|| cutile_check::check_json(kast_json))
            .map_err(errors::panic_message)
    });
    let (doc, out) = match outcome {
        Ok(Ok(x)) => x,
        Ok(Err(e)) => return Err(PyValueError::new_err(e.to_string())),
        Err(msg) => return Err(errors::internal(py, &msg)),
    };
    let files = Arc::new(doc.files);
    let obligations = out
        .facts
        .obligations
        .iter()
        .map(|o| Obligation {
            kind: o.kind.clone(),
            description: o.description.clone(),
            discharged: o.discharge.name().to_string(),
            predicate: o.discharge.text().map(str::to_string),
            span: label(&files, &cutile_diag::Label::new(o.span, "")),
            node_path: o.node.path.clone(),
            nid: o.node.nid,
        })
        .collect();
    Ok(CheckResult {
        ok: out.ok(),
        diagnostics: out.diagnostics,
        obligations,
        files,
        facts: Arc::new(out.facts),
    })
}

/// Render diagnostics made on the Python side (frontend, lowering) like the checker's.
#[pyfunction]
#[pyo3(signature = (diagnostics_json, color = false))]
fn render_diagnostics(diagnostics_json: &str, color: bool) -> PyResult<String> {
    let doc = cutile_diag::parse_diagnostics(diagnostics_json).map_err(PyValueError::new_err)?;
    guard(|| Ok(cutile_diag::render(&doc.files, &doc.diagnostics, color)))
}

/// Every kernel-rule code with its one-line summary.
#[pyfunction]
fn list_error_codes() -> Vec<(String, String)> {
    cutile_diag::CODES
        .iter()
        .filter(|c| c.kind == cutile_diag::CodeKind::Kernel)
        .map(|c| (c.code.to_string(), c.summary.to_string()))
        .collect()
}

/// Every code (kernel, host and launch) with its one-line summary. (Addition to the stubs.)
#[pyfunction]
fn list_all_error_codes() -> Vec<(String, String)> {
    cutile_diag::CODES
        .iter()
        .map(|c| (c.code.to_string(), c.summary.to_string()))
        .collect()
}

/// Host-side ownership of device memory (docs/design.md §3, host rules).
#[pyclass(module = "cutile._native")]
pub struct HostRegistry {
    inner: cutile_host::HostRegistry,
}

fn u64_of(v: i64, what: &str) -> PyResult<u64> {
    u64::try_from(v)
        .map_err(|_| PyValueError::new_err(format!("{what} must be non-negative, got {v}")))
}

#[pymethods]
impl HostRegistry {
    #[new]
    fn new() -> Self {
        HostRegistry {
            inner: cutile_host::HostRegistry::new(),
        }
    }

    fn new_storage(&mut self, nbytes: i64) -> PyResult<u64> {
        let n = u64_of(nbytes, "nbytes")?;
        guard(|| Ok(self.inner.new_storage(n)))
    }

    fn new_handle(
        &mut self,
        py: Python<'_>,
        storage: u64,
        offset: i64,
        shape: Vec<i64>,
        strides: Vec<i64>,
        itemsize: i64,
    ) -> PyResult<u64> {
        let shape = shape
            .into_iter()
            .map(|d| u64_of(d, "shape"))
            .collect::<PyResult<Vec<u64>>>()?;
        let itemsize = u64_of(itemsize, "itemsize")?;
        let region = cutile_host::Region::new(offset, shape, strides, itemsize);
        guard(|| Ok(self.inner.new_handle(storage, region)))?.map_err(|e| host_err(py, e))
    }

    fn release_handle(&mut self, py: Python<'_>, handle: u64) -> PyResult<()> {
        guard(|| Ok(self.inner.release_handle(handle)))?
            .map(|_| ())
            .map_err(|e| host_err(py, e))
    }

    fn storage_live_handles(&self, py: Python<'_>, storage: u64) -> PyResult<u32> {
        guard(|| Ok(self.inner.storage_live_handles(storage)))?.map_err(|e| host_err(py, e))
    }

    fn check_live(&self, py: Python<'_>, handle: u64, what: &str) -> PyResult<()> {
        guard(|| Ok(self.inner.check_live(handle, what)))?.map_err(|e| host_err(py, e))
    }

    fn consume(
        &mut self,
        py: Python<'_>,
        handle: u64,
        by: &str,
        require_unique: bool,
    ) -> PyResult<u64> {
        guard(|| Ok(self.inner.consume(handle, by, require_unique)))?.map_err(|e| host_err(py, e))
    }

    fn move_in(
        &mut self,
        py: Python<'_>,
        op_id: u64,
        op_name: &str,
        args: Vec<(u64, bool)>,
    ) -> PyResult<()> {
        guard(|| Ok(self.inner.move_in(op_id, op_name, &args)))?.map_err(|e| host_err(py, e))
    }

    fn give_back(&mut self, op_id: u64) -> PyResult<()> {
        guard(|| Ok(self.inner.give_back(op_id))).map(|_| ())
    }

    /// Operation `op_id` was dropped without running: its handles stay unusable (CT5009),
    /// each named by its parameter in `params` (`(handle, parameter)`). Returns how many.
    fn abandon(&mut self, op_id: u64, params: Vec<(u64, String)>) -> PyResult<usize> {
        let named: Vec<(u64, &str)> = params.iter().map(|(h, p)| (*h, p.as_str())).collect();
        guard(|| Ok(self.inner.abandon(op_id, &named)))
    }

    fn holder(&self, handle: u64) -> Option<String> {
        self.inner.holder(handle)
    }

    /// A storage of foreign memory imported shared: never written, never partitioned.
    fn new_shared_storage(&mut self, nbytes: i64) -> PyResult<u64> {
        let n = u64_of(nbytes, "nbytes")?;
        guard(|| Ok(self.inner.new_shared_storage(n)))
    }

    fn pin_export(&mut self, py: Python<'_>, storage: u64) -> PyResult<u32> {
        guard(|| Ok(self.inner.pin_export(storage)))?.map_err(|e| host_err(py, e))
    }

    fn unpin_export(&mut self, py: Python<'_>, storage: u64) -> PyResult<u32> {
        guard(|| Ok(self.inner.unpin_export(storage)))?.map_err(|e| host_err(py, e))
    }

    /// BorrowError CT5040 / CT5041 unless every storage of `storages` is cutile's alone to
    /// write (`what` names the writer in the message).
    fn check_writable(&self, py: Python<'_>, storages: Vec<u64>, what: &str) -> PyResult<()> {
        guard(|| Ok(self.inner.check_writable(&storages, what)))?.map_err(|e| host_err(py, e))
    }

    fn storage_sharing(&self, py: Python<'_>, storage: u64) -> PyResult<(bool, u32)> {
        guard(|| Ok(self.inner.storage_sharing(storage)))?.map_err(|e| host_err(py, e))
    }

    /// Move every live handle of `handles` into long-lived holder `op_id` (a CUDA Graph)
    /// until `give_back`; returns how many moved.
    fn hold(&mut self, op_id: u64, name: &str, handles: Vec<u64>) -> PyResult<usize> {
        guard(|| Ok(self.inner.hold(op_id, name, &handles)))
    }

    /// Long-lived holder `op_id` guards `storages` (the memory its replays read or write):
    /// until `give_back`, any other write of them is refused (CT5001), through any
    /// handle. Returns how many it guards.
    fn guard(&mut self, op_id: u64, storages: Vec<u64>) -> PyResult<usize> {
        guard(|| Ok(self.inner.guard(op_id, &storages)))
    }

    /// Undo a consume that failed work never used: `current` is consumed (`by`), the
    /// consumed `original` (same storage and region) is live again.
    fn restore(&mut self, py: Python<'_>, original: u64, current: u64, by: &str) -> PyResult<()> {
        guard(|| Ok(self.inner.restore(original, current, by)))?.map_err(|e| host_err(py, e))
    }

    /// The storage's memory was freed: forget it (returns whether it was known).
    fn drop_storage(&mut self, storage: u64) -> bool {
        self.inner.drop_storage(storage)
    }

    /// How many storages (allocations) the registry knows.
    fn storage_count(&self) -> usize {
        self.inner.storage_count()
    }
}

/// `(param name, tensor shape, tile shape, declared tile shape)`.
type PartitionTuple = (String, Vec<i64>, Vec<i64>, Vec<i64>);

/// Host rule 6 (see the stubs).
#[pyfunction]
fn validate_launch(
    py: Python<'_>,
    kernel: &str,
    grid: (u64, u64, u64),
    partitions: Vec<PartitionTuple>,
) -> PyResult<(u64, u64, u64)> {
    let parts: Vec<cutile_host::PartitionArg> = partitions
        .into_iter()
        .map(
            |(name, tensor_shape, tile_shape, declared)| cutile_host::PartitionArg {
                name,
                tensor_shape,
                tile_shape,
                declared,
            },
        )
        .collect();
    let g = guard(|| {
        Ok(cutile_host::validate_launch(
            kernel,
            [grid.0, grid.1, grid.2],
            &parts,
        ))
    })?
    .map_err(|e| host_err(py, e))?;
    Ok((g[0], g[1], g[2]))
}

/// The tiles each block of a mapped partition visits (`iter_indices()` schedule: grid
/// stride over flat tile ids, grouped swizzle of the trailing two axes). (Addition.)
#[pyfunction]
#[pyo3(signature = (tile_grid, num_blocks, group = 1))]
fn mapped_schedule(
    tile_grid: Vec<u64>,
    num_blocks: u64,
    group: u64,
) -> PyResult<Vec<Vec<Vec<u64>>>> {
    let total: u128 = tile_grid.iter().map(|x| u128::from(*x)).product();
    if total > 1 << 24 {
        return Err(PyValueError::new_err("tile grid too large to enumerate"));
    }
    guard(|| {
        Ok(cutile_check::schedule::schedule(
            &tile_grid, num_blocks, group,
        ))
    })?
    .map_err(|e| PyValueError::new_err(e.0))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("KAST_SCHEMA", cutile_kast::SCHEMA)?;
    m.add("KAST_VERSION", cutile_kast::VERSION)?;
    // The DSL's signature table (`rust/cutile-kast/ops.json`): the frontend binds calls
    // against it, so it and the checker read one table.
    m.add("OP_TABLE_JSON", cutile_kast::ops::OPS_JSON)?;
    m.add_class::<Label>()?;
    m.add_class::<Diagnostic>()?;
    m.add_class::<Obligation>()?;
    m.add_class::<CheckResult>()?;
    m.add_class::<HostRegistry>()?;
    m.add_class::<runtime::Runtime>()?;
    // The ledger's old name: a runtime on the interpreter's virtual streams by default.
    m.add("Ledger", m.py().get_type::<runtime::Runtime>())?;
    m.add_class::<runtime::DeviceBuffer>()?;
    m.add_class::<runtime::GraphAccesses>()?;
    m.add("DRIVER_SYMBOLS", runtime::SYMBOLS.to_vec())?;
    m.add_function(wrap_pyfunction!(runtime::null_driver, m)?)?;
    m.add_class::<launch::HandleMeta>()?;
    m.add_class::<launch::KernelLauncher>()?;
    m.add_class::<launch::PendingLaunch>()?;
    m.add_class::<launch::KernelBase>()?;
    m.add_function(wrap_pyfunction!(launch::next_op_id, m)?)?;
    m.add_function(wrap_pyfunction!(launch::invalidate_launchers, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::thread_device, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::set_thread_device, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::set_default_device, m)?)?;
    m.add("SlowPath", m.py().get_type::<launch::SlowPath>())?;
    m.add_function(wrap_pyfunction!(check_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(render_diagnostics, m)?)?;
    m.add_function(wrap_pyfunction!(list_error_codes, m)?)?;
    m.add_function(wrap_pyfunction!(list_all_error_codes, m)?)?;
    m.add_function(wrap_pyfunction!(validate_launch, m)?)?;
    m.add_function(wrap_pyfunction!(mapped_schedule, m)?)?;
    m.add_class::<dlpack::DLPackTensor>()?;
    m.add_function(wrap_pyfunction!(dlpack::dlpack_take, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::dlpack_capsule, m)?)?;
    Ok(())
}
