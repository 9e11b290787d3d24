//! Why the runtime could not do what was asked: a host rule refused it, a driver call
//! failed, or a thread panicked holding the runtime's lock; and the errors Python sees.

use crate::errors::host_err;
use cutile_host::HostError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::ffi::c_int;

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
fn cuda_error(py: Python<'_>, code: c_int, what: &str) -> PyErr {
    let raised = RAISE_CUDA
        .import(py, "cutile.runtime.driver", "raise_cuda_error")
        .and_then(|f| f.call1((code, what)));
    match raised {
        Err(e) => e,
        Ok(_) => PyRuntimeError::new_err(format!("{what} failed with CUresult {code}")),
    }
}

pub(super) fn closed(slot: u32) -> HostError {
    HostError::borrow(
        "CT5061",
        format!("stream {slot} was closed: no work can be enqueued on it"),
        Some(
            "use a stream that is still open, or the default pool (leave `cutile.stream()`)".into(),
        ),
    )
}
