//! DLPack capsules (the C structs of `dlpack.h` 1.x): the C half of `cutile.from_dlpack`
//! and `Tensor.__dlpack__`.
//!
//! `dlpack_take` consumes a producer's capsule (renames it `used_dltensor*`, as the
//! protocol asks) and returns a `DLPackTensor` that reads its fields and calls the
//! producer's deleter when it dies, which is when the cutile tensor viewing the memory
//! dies. `dlpack_capsule` makes a capsule whose deleter drops a Python `owner` (the
//! object that keeps cutile's memory alive and ends the export): a consumer that never
//! takes the capsule gets it deleted with the capsule. What may be imported or exported
//! (devices, dtypes, layouts, ownership) is decided in Python
//! (`python/cutile/runtime/interop/`); nothing here enforces a rule.

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::ffi::{c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

const DLTENSOR: &CStr = c"dltensor";
const USED_DLTENSOR: &CStr = c"used_dltensor";
const DLTENSOR_VERSIONED: &CStr = c"dltensor_versioned";
const USED_DLTENSOR_VERSIONED: &CStr = c"used_dltensor_versioned";

/// The ABI this module reads and writes: major 1 (minor versions only add enum values).
const MAJOR: u32 = 1;
/// Written into exported capsules: 1.1 has the fp8 type codes cutile exports.
const MINOR: u32 = 1;
/// More axes than any producer makes: a capsule claiming them is corrupt.
const MAX_NDIM: i32 = 64;

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

/// A producer's managed tensor, owned: its deleter runs exactly once, on drop.
enum Managed {
    Legacy(*mut DLManagedTensor),
    Versioned(*mut DLManagedTensorVersioned),
}

struct Owned(Managed);

// SAFETY: the managed tensor is owned by this value alone (the capsule was renamed
// `used_*`, so neither the capsule nor another consumer calls its deleter), and the
// DLPack contract lets the owner call the deleter from any thread.
unsafe impl Send for Owned {}
unsafe impl Sync for Owned {}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: the pointers came from a `dltensor*` capsule whose ownership passed to
        // us; the deleter (when there is one) frees the struct, and runs once.
        unsafe {
            match self.0 {
                Managed::Legacy(p) => {
                    if let Some(d) = (*p).deleter {
                        d(p);
                    }
                }
                Managed::Versioned(p) => {
                    if let Some(d) = (*p).deleter {
                        d(p);
                    }
                }
            }
        }
    }
}

/// A tensor taken from a producer's DLPack capsule: its fields as Python reads them. The
/// producer's memory stays valid while this object lives; its deleter runs when it dies.
#[pyclass(module = "cutile._native", frozen)]
pub struct DLPackTensor {
    _owned: Owned,
    /// `data` (the pointer as given; `byte_offset` is not added).
    #[pyo3(get)]
    data: u64,
    #[pyo3(get)]
    byte_offset: u64,
    /// `(device_type, device_id)`.
    #[pyo3(get)]
    device: (i32, i32),
    /// `(code, bits, lanes)`.
    #[pyo3(get)]
    dtype: (u8, u8, u16),
    #[pyo3(get)]
    shape: Vec<i64>,
    /// In elements; `None` where a legacy producer gave none (row-major).
    #[pyo3(get)]
    strides: Option<Vec<i64>>,
    /// `DLPACK_FLAG_BITMASK_*` (0 from a legacy capsule, which has no flags).
    #[pyo3(get)]
    flags: u64,
    /// `(major, minor)`, or `None` for a legacy (`dltensor`) capsule.
    #[pyo3(get)]
    version: Option<(u32, u32)>,
}

#[pymethods]
impl DLPackTensor {
    fn __repr__(&self) -> String {
        let strides = match &self.strides {
            Some(s) => format!("{s:?}"),
            None => "None".into(),
        };
        format!(
            "DLPackTensor(device={:?}, dtype={:?}, shape={:?}, strides={strides}, flags={})",
            self.device, self.dtype, self.shape, self.flags
        )
    }
}

/// The fields of `t`; `owned` is dropped (the producer's deleter runs) when they do not
/// describe a tensor.
///
/// SAFETY: `t` points into a live managed tensor that `owned` holds.
unsafe fn read(
    owned: Owned,
    t: *const DLTensor,
    flags: u64,
    version: Option<(u32, u32)>,
) -> PyResult<DLPackTensor> {
    let t = &*t;
    if t.ndim < 0 || t.ndim > MAX_NDIM || (t.ndim > 0 && t.shape.is_null()) {
        return Err(PyValueError::new_err(format!(
            "the DLPack capsule describes no tensor (ndim {}, shape pointer {:?})",
            t.ndim, t.shape
        )));
    }
    let n = t.ndim as usize;
    let shape = if n == 0 {
        Vec::new()
    } else {
        std::slice::from_raw_parts(t.shape, n).to_vec()
    };
    let strides = if t.strides.is_null() {
        None
    } else if n == 0 {
        Some(Vec::new())
    } else {
        Some(std::slice::from_raw_parts(t.strides, n).to_vec())
    };
    Ok(DLPackTensor {
        _owned: owned,
        data: t.data as usize as u64,
        byte_offset: t.byte_offset,
        device: (t.device.device_type, t.device.device_id),
        dtype: (t.dtype.code, t.dtype.bits, t.dtype.lanes),
        shape,
        strides,
        flags,
        version,
    })
}

/// Take the managed tensor out of a producer's capsule (`obj.__dlpack__(...)`): the
/// capsule is renamed `used_dltensor[_versioned]` and the returned object owns the tensor.
/// A capsule of another major version has its deleter called (as the protocol says) and
/// raises `ValueError`, as does anything that is not an unused DLPack capsule.
#[pyfunction]
pub fn dlpack_take(capsule: &Bound<'_, PyAny>) -> PyResult<DLPackTensor> {
    if capsule.cast::<PyCapsule>().is_err() {
        return Err(PyValueError::new_err(format!(
            "`__dlpack__` returned a `{}`, not a capsule",
            capsule.get_type().name()?
        )));
    }
    let cap = capsule.as_ptr();
    // SAFETY: `cap` is a live capsule (checked above, and borrowed for this call).
    let name = unsafe { ffi::PyCapsule_GetName(cap) };
    if name.is_null() {
        return Err(PyErr::take(capsule.py())
            .unwrap_or_else(|| PyValueError::new_err("a capsule without a name")));
    }
    // SAFETY: a capsule's name is a NUL-terminated string that outlives the capsule.
    let name = unsafe { CStr::from_ptr(name) };
    let versioned = if name == DLTENSOR_VERSIONED {
        true
    } else if name == DLTENSOR {
        false
    } else if name == USED_DLTENSOR || name == USED_DLTENSOR_VERSIONED {
        return Err(PyValueError::new_err(
            "the DLPack capsule was already consumed (each `__dlpack__()` capsule is \
             taken once)",
        ));
    } else {
        return Err(PyValueError::new_err(format!(
            "a capsule named {name:?} is not a DLPack capsule"
        )));
    };
    let (want, used) = if versioned {
        (DLTENSOR_VERSIONED, USED_DLTENSOR_VERSIONED)
    } else {
        (DLTENSOR, USED_DLTENSOR)
    };
    // SAFETY: the name was checked; the static `used` name outlives the capsule.
    let p = unsafe { ffi::PyCapsule_GetPointer(cap, want.as_ptr()) };
    if p.is_null() {
        return Err(PyErr::take(capsule.py())
            .unwrap_or_else(|| PyValueError::new_err("a DLPack capsule without a tensor")));
    }
    if unsafe { ffi::PyCapsule_SetName(cap, used.as_ptr()) } != 0 {
        return Err(PyErr::take(capsule.py())
            .unwrap_or_else(|| PyValueError::new_err("the DLPack capsule cannot be renamed")));
    }
    // From here on the managed tensor is ours: every path drops `owned` or keeps it.
    if versioned {
        let m = p as *mut DLManagedTensorVersioned;
        let owned = Owned(Managed::Versioned(m));
        // SAFETY: a versioned capsule holds a `DLManagedTensorVersioned`; its version
        // (and deleter) fields are stable across major versions, the rest is not.
        let v = unsafe { (*m).version };
        if v.major != MAJOR {
            drop(owned);
            return Err(PyValueError::new_err(format!(
                "the producer made a DLPack {}.{} tensor; cutile reads DLPack {MAJOR}.x",
                v.major, v.minor
            )));
        }
        // SAFETY: major version 1: the layout above.
        unsafe {
            let flags = (*m).flags;
            read(
                owned,
                &raw const (*m).dl_tensor,
                flags,
                Some((v.major, v.minor)),
            )
        }
    } else {
        let m = p as *mut DLManagedTensor;
        // SAFETY: a legacy capsule holds a `DLManagedTensor`.
        unsafe {
            read(
                Owned(Managed::Legacy(m)),
                &raw const (*m).dl_tensor,
                0,
                None,
            )
        }
    }
}

/// What an exported capsule's `manager_ctx` holds: the arrays its `DLTensor` points at
/// and the Python object that keeps the memory alive.
struct ExportCtx {
    shape: Vec<i64>,
    strides: Vec<i64>,
    owner: Option<Py<PyAny>>,
}

/// Free an export's context and drop its owner, attached to the interpreter. After the
/// interpreter is gone (a consumer freeing its tensor at exit) the owner is leaked
/// instead: touching a finalized interpreter would crash.
///
/// SAFETY: `ctx` is null or a `Box<ExportCtx>` made by `dlpack_capsule`, released once.
unsafe fn release_ctx(ctx: *mut c_void) {
    if ctx.is_null() {
        return;
    }
    let mut ctx = Box::from_raw(ctx as *mut ExportCtx);
    let mut owner = ctx.owner.take();
    let attached = Python::try_attach(|_py| {
        // A panic must not unwind into the consumer's C code.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(owner.take())));
    });
    if attached.is_none() {
        std::mem::forget(owner.take());
    }
}

unsafe extern "C" fn delete_versioned(p: *mut DLManagedTensorVersioned) {
    if !p.is_null() {
        let m = Box::from_raw(p);
        release_ctx(m.manager_ctx);
    }
}

unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    if !p.is_null() {
        let m = Box::from_raw(p);
        release_ctx(m.manager_ctx);
    }
}

/// The capsule died. Still named `dltensor*`: no consumer took the tensor, so its deleter
/// is ours to call; renamed `used_*`: the consumer owns it and calls the deleter.
unsafe extern "C" fn destroy_versioned_capsule(cap: *mut ffi::PyObject) {
    if ffi::PyCapsule_IsValid(cap, DLTENSOR_VERSIONED.as_ptr()) == 1 {
        let p = ffi::PyCapsule_GetPointer(cap, DLTENSOR_VERSIONED.as_ptr());
        delete_versioned(p as *mut DLManagedTensorVersioned);
    }
}

unsafe extern "C" fn destroy_legacy_capsule(cap: *mut ffi::PyObject) {
    if ffi::PyCapsule_IsValid(cap, DLTENSOR.as_ptr()) == 1 {
        let p = ffi::PyCapsule_GetPointer(cap, DLTENSOR.as_ptr());
        delete_legacy(p as *mut DLManagedTensor);
    }
}

/// A new DLPack capsule over `data` (a device or host address) with the given device
/// `(type, id)`, dtype `(code, bits, lanes)`, shape and strides (elements), byte offset
/// and flags: `dltensor_versioned` (DLPack 1.1, with `flags`) when `versioned`, else a
/// legacy `dltensor` (no flags: `flags` must be 0). `owner` lives until the consumer
/// calls the deleter (or, untaken, until the capsule dies).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (owner, data, device, dtype, shape, strides, byte_offset, flags, versioned))]
pub fn dlpack_capsule(
    py: Python<'_>,
    owner: Py<PyAny>,
    data: u64,
    device: (i32, i32),
    dtype: (u8, u8, u16),
    shape: Vec<i64>,
    strides: Vec<i64>,
    byte_offset: u64,
    flags: u64,
    versioned: bool,
) -> PyResult<Py<PyAny>> {
    if shape.len() != strides.len() {
        return Err(PyValueError::new_err(format!(
            "{} extents but {} strides",
            shape.len(),
            strides.len()
        )));
    }
    if !versioned && flags != 0 {
        return Err(PyValueError::new_err(
            "a legacy DLPack capsule has no flags",
        ));
    }
    let ndim = i32::try_from(shape.len())
        .ok()
        .filter(|n| *n <= MAX_NDIM)
        .ok_or_else(|| PyValueError::new_err("too many axes for DLPack"))?;
    let data = usize::try_from(data)
        .map_err(|_| PyValueError::new_err("address does not fit a pointer"))?;
    let mut ctx = Box::new(ExportCtx {
        shape,
        strides,
        owner: Some(owner),
    });
    // The vectors' heap buffers do not move with the box: the pointers stay valid until
    // the deleter frees the context.
    let (shape_ptr, strides_ptr) = if ndim == 0 {
        (ptr::null_mut(), ptr::null_mut())
    } else {
        (ctx.shape.as_mut_ptr(), ctx.strides.as_mut_ptr())
    };
    let tensor = DLTensor {
        data: data as *mut c_void,
        device: DLDevice {
            device_type: device.0,
            device_id: device.1,
        },
        ndim,
        dtype: DLDataType {
            code: dtype.0,
            bits: dtype.1,
            lanes: dtype.2,
        },
        shape: shape_ptr,
        strides: strides_ptr,
        byte_offset,
    };
    let ctx = Box::into_raw(ctx) as *mut c_void;
    // SAFETY: each capsule owns a freshly boxed managed tensor; on failure it is freed
    // here (its context and owner with it), else by the deleter, exactly once.
    unsafe {
        let cap = if versioned {
            let m = Box::into_raw(Box::new(DLManagedTensorVersioned {
                version: DLPackVersion {
                    major: MAJOR,
                    minor: MINOR,
                },
                manager_ctx: ctx,
                deleter: Some(delete_versioned),
                flags,
                dl_tensor: tensor,
            }));
            let cap = ffi::PyCapsule_New(
                m as *mut c_void,
                DLTENSOR_VERSIONED.as_ptr(),
                Some(destroy_versioned_capsule),
            );
            if cap.is_null() {
                delete_versioned(m);
            }
            cap
        } else {
            let m = Box::into_raw(Box::new(DLManagedTensor {
                dl_tensor: tensor,
                manager_ctx: ctx,
                deleter: Some(delete_legacy),
            }));
            let cap = ffi::PyCapsule_New(
                m as *mut c_void,
                DLTENSOR.as_ptr(),
                Some(destroy_legacy_capsule),
            );
            if cap.is_null() {
                delete_legacy(m);
            }
            cap
        };
        Bound::from_owned_ptr_or_err(py, cap).map(Bound::unbind)
    }
}
