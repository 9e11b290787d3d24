//! The one place Rust errors become Python exceptions.

use cutile_host::{About, ErrorKind, HostError};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

static BORROW_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static LAUNCH_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static INTERNAL_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Build `cls(message, code=code, hint=hint[, kernel=, op_id=, tensor=])` from
/// `cutile.errors`, imported once. If the
/// package cannot be imported, fall back to `RuntimeError("[code] message")` chained to
/// the import error, so no error is ever lost.
fn make(
    py: Python<'_>,
    cell: &'static PyOnceLock<Py<PyType>>,
    class: &str,
    code: &str,
    message: &str,
    hint: Option<&str>,
    about: Option<&About>,
) -> PyErr {
    let built = (|| -> PyResult<PyErr> {
        let cls = cell.import(py, "cutile.errors", class)?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("code", code)?;
        kwargs.set_item("hint", hint)?;
        if let Some(a) = about {
            // `BorrowError` / `LaunchError` keep what the error names as data.
            kwargs.set_item("kernel", a.kernel.as_deref())?;
            kwargs.set_item("op_id", a.op)?;
            kwargs.set_item("tensor", a.tensor.as_deref())?;
        }
        let obj = cls.call((message,), Some(&kwargs))?;
        Ok(PyErr::from_value(obj))
    })();
    match built {
        Ok(e) => e,
        Err(import_err) => {
            let e = PyRuntimeError::new_err(format!("[{code}] {message}"));
            e.set_cause(py, Some(import_err));
            e
        }
    }
}

/// A host-rule violation as `BorrowError` or `LaunchError`.
pub fn host_err(py: Python<'_>, e: HostError) -> PyErr {
    let (cell, class) = match e.kind {
        ErrorKind::Borrow => (&BORROW_ERROR, "BorrowError"),
        ErrorKind::Launch => (&LAUNCH_ERROR, "LaunchError"),
    };
    make(
        py,
        cell,
        class,
        e.code,
        &e.message,
        e.hint.as_deref(),
        Some(&e.about),
    )
}

/// A caught panic as `InternalCompilerError`.
pub fn internal(py: Python<'_>, msg: &str) -> PyErr {
    make(
        py,
        &INTERNAL_ERROR,
        "InternalCompilerError",
        "CT9001",
        &format!("internal error in cutile._native: {msg}"),
        Some("this is a bug in cutile; please report it with the kernel that triggered it"),
        None,
    )
}

pub fn panic_message(payload: Box<dyn Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// Run `f`, turning a panic into `InternalCompilerError`: nothing unwinds across FFI.
pub fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = panic_message(payload);
            Python::attach(|py| Err(internal(py, &msg)))
        }
    }
}
