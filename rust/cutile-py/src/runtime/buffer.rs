//! `DeviceBuffer`: one allocation from the runtime's memory pool. Made on the thread's home
//! stream (stream-ordered, so allocating and freeing in a loop reuses cached memory);
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

#[pymethods]
impl DeviceBuffer {
    /// Allocate `nbytes` (a new storage of `registry`) on `device` (default: the current
    /// device; it must be set up) through `runtime`. Raises `MemoryError` when the device
    /// has no room.
    #[new]
    #[pyo3(signature = (runtime, registry, nbytes, device = None, *_args, **_kwargs))]
    fn new(
        py: Python<'_>,
        runtime: Py<Runtime>,
        registry: &Bound<'_, HostRegistry>,
        nbytes: u64,
        device: Option<u32>,
        _args: &Bound<'_, pyo3::types::PyTuple>,
        _kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
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

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        self.runtime
            .get()
            .free_storage_memory(self.address, self.storage, self.slot);
    }
}
