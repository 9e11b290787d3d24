//! `HandleMeta`: the native half of a `Tensor` / `Partition` (their base class). Made in one
//! native call (`Tensor(alloc, storage, offset, shape, strides, dtype, handle=None,
//! tile_shape=None, num_blocks=None)`): it registers the view with the process's host
//! registry (or takes the handle given), keeps what Python reads (`shape`, `strides`,
//! `dtype`, `_alloc`, `device`, ...) and what a launch reads (the [`TensorDesc`], the
//! allocation's device included), and releases the handle when the object dies. Nothing of it changes after construction.

use super::*;
use crate::runtime::DeviceBuffer;
use pyo3::exceptions::PyAttributeError;

/// What Python reads of a handle, as it was given.
struct Fields {
    alloc: Py<PyAny>,
    dtype: Py<PyAny>,
    shape: Py<PyTuple>,
    strides: Py<PyTuple>,
    tile_shape: Option<Py<PyTuple>>,
}

#[pyclass(module = "cutile._native", frozen, subclass)]
pub struct HandleMeta {
    /// Set once, when the handle is described.
    inner: OnceLock<Inner>,
}

/// (`repr(C)`, the descriptor first: its hot fields sit right after the object's header,
/// see [`TensorDesc`].)
#[repr(C)]
struct Inner {
    desc: TensorDesc,
    /// The registry and handle this object owns (released when it dies).
    owner: Option<(Py<HostRegistry>, u64)>,
    /// `None` for a handle described by `_init_meta` (tests).
    fields: Option<Fields>,
}

static REGISTRY: PyOnceLock<Py<HostRegistry>> = PyOnceLock::new();

/// The process's host registry (`cutile.runtime.ownership.registry()`), fetched once.
pub(crate) fn process_registry(py: Python<'_>) -> PyResult<&Bound<'_, HostRegistry>> {
    let reg = REGISTRY.get_or_try_init(py, || -> PyResult<Py<HostRegistry>> {
        let r = py
            .import("cutile.runtime.ownership")?
            .getattr("registry")?
            .call0()?;
        Ok(r.cast_into::<HostRegistry>()?.unbind())
    })?;
    Ok(reg.bind(py))
}

/// `(dtype object, name, itemsize)` of the element types seen so far: a `DType` is one
/// object per type (`cutile.dtypes`), so its facts are read once, not per tensor. The
/// objects are kept, so an address is never another object's.
static DTYPES_SEEN: Mutex<Vec<(Py<PyAny>, String, u64)>> = Mutex::new(Vec::new());

/// The name and item size of `dtype` (a `cutile.dtypes.DType`).
fn dtype_facts(dtype: &Bound<'_, PyAny>) -> PyResult<(String, u64)> {
    let py = dtype.py();
    {
        let seen = DTYPES_SEEN.lock().map_err(poisoned)?;
        if let Some((_, name, size)) = seen.iter().find(|(d, _, _)| d.as_ptr() == dtype.as_ptr()) {
            return Ok((name.clone(), *size));
        }
    }
    let name: String = dtype.getattr(pyo3::intern!(py, "name"))?.extract()?;
    let size: u64 = dtype.getattr(pyo3::intern!(py, "itemsize"))?.extract()?;
    let mut seen = DTYPES_SEEN.lock().map_err(poisoned)?;
    if seen.len() < 64 {
        seen.push((dtype.clone().unbind(), name.clone(), size));
    }
    Ok((name, size))
}

/// Row-major strides (in elements) of `shape`: an extent of 0 counts as 1.
fn contiguous(shape: &[i64]) -> Vec<i64> {
    let mut out = vec![1i64; shape.len()];
    let mut acc = 1i64;
    for (s, d) in out.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul((*d).max(1));
    }
    out
}

/// `seq` as a tuple (the tuple itself when it is one) and its items as `i64`s.
fn int_tuple<'py>(seq: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyTuple>, Vec<i64>)> {
    let t = match seq.cast::<PyTuple>() {
        Ok(t) => t.clone(),
        Err(_) => PyTuple::new(seq.py(), seq.try_iter()?.collect::<PyResult<Vec<_>>>()?)?,
    };
    let v = t
        .iter()
        .map(|x| x.extract::<i64>())
        .collect::<PyResult<_>>()?;
    Ok((t, v))
}

impl HandleMeta {
    fn empty() -> Self {
        HandleMeta {
            inner: OnceLock::new(),
        }
    }

    /// The launch descriptor (`None` before the handle is described).
    pub(super) fn desc(&self) -> Option<&TensorDesc> {
        self.inner.get().map(|i| &i.desc)
    }

    /// Register (when `handle == 0` and a registry is given) and describe the view, with
    /// `fields` for Python; the object owns the handle when `registry` is given. Returns
    /// the handle.
    fn describe(
        &self,
        py: Python<'_>,
        view: View,
        registry: Option<&Bound<'_, HostRegistry>>,
        fields: Option<Fields>,
    ) -> PyResult<u64> {
        let mut view = view;
        // The registry slot that holds the handle: a launch finds its record by index.
        let mut slot = cutile_host::NO_SLOT;
        if let (Some(reg), 0) = (registry, view.handle) {
            let dims = view
                .shape
                .iter()
                .map(|d| {
                    u64::try_from(*d).map_err(|_| {
                        PyValueError::new_err(format!("shape must be non-negative, got {d}"))
                    })
                })
                .collect::<PyResult<Vec<u64>>>()?;
            let region =
                cutile_host::Region::new(view.offset, dims, view.strides.clone(), view.itemsize);
            let made = reg
                .try_borrow_mut()?
                .inner
                .new_handle_at(view.storage, region);
            let at = made.map_err(|e| host_err(py, e))?;
            (view.handle, slot) = (at.id, at.slot);
        } else if let Some(reg) = registry {
            slot = reg.try_borrow()?.inner.slot_of(view.handle);
        }
        let handle = view.handle;
        let release = || {
            if let Some(r) = registry {
                if let Ok(mut r) = r.try_borrow_mut() {
                    let _ = r.inner.release_handle(handle);
                }
            }
        };
        let desc = match TensorDesc::new(view) {
            Ok(d) => TensorDesc { slot, ..d },
            Err(e) => {
                release();
                return Err(PyValueError::new_err(e));
            }
        };
        let inner = Inner {
            desc,
            owner: registry.map(|r| (r.clone().unbind(), handle)),
            fields,
        };
        if let Err(lost) = self.inner.set(inner) {
            // (`lost` owns nothing yet: dropping it releases nothing; release here.)
            drop(lost);
            release();
            return Err(PyRuntimeError::new_err("handle metadata is set once"));
        }
        Ok(handle)
    }

    fn fields(&self) -> PyResult<&Fields> {
        self.inner
            .get()
            .and_then(|i| i.fields.as_ref())
            .ok_or_else(|| PyAttributeError::new_err("this handle was made without its fields"))
    }

    fn view(&self) -> PyResult<&View> {
        self.desc()
            .map(|d| &d.view)
            .ok_or_else(|| PyAttributeError::new_err("this handle has no metadata yet"))
    }
}

#[pymethods]
impl HandleMeta {
    /// A view of `alloc` (an allocation: its `address` is element 0's at offset 0, its
    /// `device` the view's) of registry storage `storage`: `offset` bytes in, `shape` and `strides` in elements
    /// (`None`: row-major), `dtype` a `cutile.dtypes.DType`; a partition when `tile_shape`
    /// is given. It gets a new registry handle, or owns `handle` when given (a consumed
    /// view's successor). With no arguments: an empty handle for `_init_meta` (tests).
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (alloc = None, storage = 0, offset = 0, shape = None, strides = None,
                        dtype = None, handle = None, tile_shape = None, num_blocks = None))]
    fn new(
        py: Python<'_>,
        alloc: Option<Bound<'_, PyAny>>,
        storage: u64,
        offset: i64,
        shape: Option<Bound<'_, PyAny>>,
        strides: Option<Bound<'_, PyAny>>,
        dtype: Option<Bound<'_, PyAny>>,
        handle: Option<u64>,
        tile_shape: Option<Bound<'_, PyAny>>,
        num_blocks: Option<u64>,
    ) -> PyResult<Self> {
        let me = HandleMeta::empty();
        let (Some(alloc), Some(shape), Some(dtype)) = (alloc, shape, dtype) else {
            return Ok(me);
        };
        let (base, device) = match alloc.cast::<DeviceBuffer>() {
            Ok(b) => (b.get().address(), b.get().device()),
            Err(_) => (
                alloc
                    .getattr(pyo3::intern!(py, "address"))?
                    .extract::<u64>()?,
                alloc
                    .getattr(pyo3::intern!(py, "device"))?
                    .extract::<u32>()?,
            ),
        };
        let (name, itemsize) = dtype_facts(&dtype)?;
        let (shape_t, shape_v) = int_tuple(&shape)?;
        let (strides_t, strides_v) = match strides {
            Some(s) => int_tuple(&s)?,
            None => {
                let v = contiguous(&shape_v);
                (PyTuple::new(py, &v)?, v)
            }
        };
        let tile = tile_shape.as_ref().map(int_tuple).transpose()?;
        let view = View {
            storage,
            handle: handle.unwrap_or(0),
            address: base.wrapping_add_signed(offset),
            offset,
            shape: shape_v,
            strides: strides_v,
            dtype: name,
            itemsize,
            tile: tile.as_ref().map(|(_, v)| v.clone()),
            num_blocks,
            device,
        };
        let fields = Fields {
            alloc: alloc.unbind(),
            dtype: dtype.unbind(),
            shape: shape_t.unbind(),
            strides: strides_t.unbind(),
            tile_shape: tile.map(|(t, _)| t.unbind()),
        };
        me.describe(py, view, Some(process_registry(py)?), Some(fields))?;
        Ok(me)
    }

    /// Set the facts once (a handle made empty; tests). With `registry`, the object owns
    /// `handle` there (released when it dies), and `handle == 0` makes a new one for this
    /// view. Returns the handle.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (storage, handle, address, offset, shape, strides, dtype, itemsize,
                        tile_shape = None, num_blocks = None, registry = None, device = 0))]
    fn _init_meta(
        &self,
        py: Python<'_>,
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
        registry: Option<Bound<'_, HostRegistry>>,
        device: u32,
    ) -> PyResult<u64> {
        let view = View {
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
            device,
        };
        self.describe(py, view, registry.as_ref(), None)
    }

    /// `(storage, handle, address, span_lo, span_hi, index_bits)`, or `None` before
    /// `_init_meta` (for tests).
    #[getter]
    fn _meta(&self) -> Option<(u64, u64, u64, u64, u64, u32)> {
        self.desc().map(|d| {
            let v = &d.view;
            let bits = if d.wide { 64 } else { 32 };
            (v.storage, v.handle, v.address, d.span.0, d.span.1, bits)
        })
    }

    /// The allocation the view is of.
    #[getter]
    fn _alloc(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.fields()?.alloc.clone_ref(py))
    }

    /// The registry storage (the allocation) the view is of.
    #[getter]
    fn _storage(&self) -> PyResult<u64> {
        Ok(self.view()?.storage)
    }

    /// The registry handle this object owns.
    #[getter]
    fn _handle(&self) -> PyResult<u64> {
        Ok(self.view()?.handle)
    }

    /// Byte offset of element `[0, ..., 0]` in the allocation.
    #[getter]
    fn _offset(&self) -> PyResult<i64> {
        Ok(self.view()?.offset)
    }

    /// Address of element `[0, ..., 0]` (a device pointer on the GPU).
    #[getter]
    fn address(&self) -> PyResult<u64> {
        Ok(self.view()?.address)
    }

    /// The ordinal of the device whose memory this is (a launch runs on the device of
    /// its tensors).
    #[getter]
    fn device(&self) -> PyResult<u32> {
        Ok(self.view()?.device)
    }

    #[getter]
    fn shape(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        Ok(self.fields()?.shape.clone_ref(py))
    }

    /// Strides in elements.
    #[getter]
    fn strides(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        Ok(self.fields()?.strides.clone_ref(py))
    }

    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.fields()?.dtype.clone_ref(py))
    }

    /// A partition's tile shape (AttributeError for a tensor).
    #[getter]
    fn tile_shape(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        match &self.fields()?.tile_shape {
            Some(t) => Ok(t.clone_ref(py)),
            None => Err(PyAttributeError::new_err("a Tensor has no tile_shape")),
        }
    }

    /// A persistent partition's block count (`None`: one per multiprocessor, or not
    /// persistent); AttributeError for a tensor.
    #[getter]
    fn num_blocks(&self) -> PyResult<Option<u64>> {
        let v = self.view()?;
        if v.tile.is_none() {
            return Err(PyAttributeError::new_err("a Tensor has no num_blocks"));
        }
        Ok(v.num_blocks)
    }

    /// Lowest and one-past-highest byte the view touches, relative to the allocation.
    fn _span_bytes(&self) -> PyResult<(u64, u64)> {
        self.desc()
            .map(|d| d.span)
            .ok_or_else(|| PyAttributeError::new_err("this handle has no metadata yet"))
    }
}

impl Drop for HandleMeta {
    /// The Python object died: its handle goes (a handle a pending op holds keeps its
    /// storage until the op gives it back; see `HostRegistry::release_handle`).
    fn drop(&mut self) {
        if let Some((reg, handle)) = self.inner.get().and_then(|i| i.owner.as_ref()) {
            let _ = Python::try_attach(|py| {
                if let Ok(mut r) = reg.bind(py).try_borrow_mut() {
                    let _ = r.inner.release_handle(*handle);
                }
            });
        }
    }
}
