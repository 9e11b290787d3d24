//! `DeviceBuffer`: one allocation from a device's memory pool (the current device's unless
//! one is given, found natively). Made on the thread's home stream of that device
//! (stream-ordered, so allocating and freeing in a loop reuses cached memory);
//! freed when its last reference dies, ordered after every piece of work still pending on
//! it (`Runtime::free_storage_memory`), so a tensor dropped while an op uses it is freed
//! when the op completes.

use super::*;

/// Device memory (the base of `cutile.runtime.memory.DeviceAllocation`).
#[pyclass(module = "cutile._native", frozen, subclass)]
pub struct DeviceBuffer {
    runtime: Py<Runtime>,
    /// The device pointer.
    #[pyo3(get)]
    address: u64,
    #[pyo3(get)]
    nbytes: u64,
    /// The registry storage the memory is.
    #[pyo3(get)]
    storage: u64,
    /// The stream slot it was allocated on (fills and host copies go there too).
    #[pyo3(get)]
    slot: u32,
    /// The ordinal of the device whose memory it is.
    #[pyo3(get)]
    device: u32,
}

static REFUSE_IN_CAPTURE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

#[pymethods]
impl DeviceBuffer {
    /// Allocate `nbytes` (a new storage of `registry`, the process's when `None`) on
    /// `device` (default: the current device, found natively; it must be set up) through
    /// `runtime`. Raises `MemoryError` when the device has no room, and BorrowError CT5063
    /// while this thread captures a graph (`memory._refuse_in_capture` words it).
    #[new]
    #[pyo3(signature = (runtime, registry, nbytes, device = None, *_args, **_kwargs))]
    fn new(
        py: Python<'_>,
        runtime: Py<Runtime>,
        registry: Option<Bound<'_, HostRegistry>>,
        nbytes: u64,
        device: Option<u32>,
        _args: &Bound<'_, pyo3::types::PyTuple>,
        _kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        if runtime.get().capturing_here() {
            REFUSE_IN_CAPTURE
                .import(py, "cutile.runtime.memory", "_refuse_in_capture")?
                .call1((runtime.bind(py), format!("allocate {nbytes} bytes")))?;
        }
        let registry = match registry {
            Some(r) => r,
            None => crate::launch::process_registry(py)?.clone(),
        };
        let device = device.unwrap_or_else(current_device);
        let storage = registry.try_borrow_mut()?.inner.new_storage(nbytes);
        match runtime.get().alloc(py, storage, nbytes, device) {
            Ok((address, slot)) => Ok(DeviceBuffer {
                runtime,
                address,
                nbytes,
                storage,
                slot,
                device,
            }),
            Err(e) => {
                registry.try_borrow_mut()?.inner.drop_storage(storage);
                Err(e)
            }
        }
    }
}

impl DeviceBuffer {
    /// The device pointer.
    pub(crate) fn address(&self) -> u64 {
        self.address
    }

    /// The ordinal of the device whose memory it is.
    pub(crate) fn device(&self) -> u32 {
        self.device
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        self.runtime
            .get()
            .free_storage_memory(self.address, self.nbytes, self.storage, self.slot);
    }
}
