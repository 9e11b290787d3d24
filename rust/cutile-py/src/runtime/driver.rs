//! The CUDA driver entry points the runtime calls natively (their addresses come from
//! `cuGetProcAddress`, in Python), and the stream handles it drives.

use super::launch_ex::{launch_pdl, LaunchExFn};
use super::*;

/// `CUresult f(CUstream)`: cuStreamSynchronize, cuStreamQuery.
type StreamFn = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `CUresult cuEventRecord(CUevent, CUstream)`.
type RecordFn = unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int;
/// `CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned)`.
type WaitEventFn = unsafe extern "C" fn(*mut c_void, *mut c_void, c_uint) -> c_int;
/// `CUresult cuMemAllocFromPoolAsync(CUdeviceptr*, size_t, CUmemoryPool, CUstream)`.
type AllocFn = unsafe extern "C" fn(*mut u64, usize, *mut c_void, *mut c_void) -> c_int;
/// `CUresult cuMemFreeAsync(CUdeviceptr, CUstream)`.
type FreeFn = unsafe extern "C" fn(u64, *mut c_void) -> c_int;
/// `CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream)`.
type MemsetD8Fn = unsafe extern "C" fn(u64, u8, usize, *mut c_void) -> c_int;
/// `CUresult cuMemsetD16Async(CUdeviceptr, unsigned short, size_t, CUstream)`.
type MemsetD16Fn = unsafe extern "C" fn(u64, u16, usize, *mut c_void) -> c_int;
/// `CUresult cuMemsetD32Async(CUdeviceptr, unsigned int, size_t, CUstream)`.
type MemsetD32Fn = unsafe extern "C" fn(u64, u32, usize, *mut c_void) -> c_int;
/// `CUresult cuMemsetD2D32Async(CUdeviceptr, size_t pitch, unsigned, size_t w, size_t h,
/// CUstream)`.
type MemsetD2D32Fn = unsafe extern "C" fn(u64, usize, u32, usize, usize, *mut c_void) -> c_int;
/// `CUresult cuMemcpyHtoDAsync(CUdeviceptr, const void*, size_t, CUstream)`.
type HtoDFn = unsafe extern "C" fn(u64, *const c_void, usize, *mut c_void) -> c_int;
/// `CUresult cuMemcpyDtoDAsync(CUdeviceptr, CUdeviceptr, size_t, CUstream)`.
type DtoDFn = unsafe extern "C" fn(u64, u64, usize, *mut c_void) -> c_int;
/// `CUresult cuGraphLaunch(CUgraphExec, CUstream)`.
type GraphLaunchFn = unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int;
/// `CUresult cuCtxSetCurrent(CUcontext)`.
type SetContextFn = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `CUresult cuCtxGetCurrent(CUcontext*)`.
type GetContextFn = unsafe extern "C" fn(*mut *mut c_void) -> c_int;
/// `CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src,
/// CUcontext srcCtx, size_t, CUstream)`.
type PeerFn = unsafe extern "C" fn(u64, *mut c_void, u64, *mut c_void, usize, *mut c_void) -> c_int;

/// Every symbol the runtime needs, by name: Python passes `{name: address}`.
pub(crate) const SYMBOLS: [&str; 18] = [
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cuStreamSynchronize",
    "cuStreamQuery",
    "cuEventRecord",
    "cuStreamWaitEvent",
    "cuMemAllocFromPoolAsync",
    "cuMemFreeAsync",
    "cuMemsetD8Async",
    "cuMemsetD16Async",
    "cuMemsetD32Async",
    "cuMemsetD2D32Async",
    "cuMemcpyHtoDAsync",
    "cuMemcpyDtoDAsync",
    "cuGraphLaunch",
    "cuCtxSetCurrent",
    "cuCtxGetCurrent",
    "cuMemcpyPeerAsync",
];

pub(crate) struct Driver {
    pub launch: LaunchFn,
    launch_ex: LaunchExFn,
    sync: StreamFn,
    query: StreamFn,
    record: RecordFn,
    wait_event: WaitEventFn,
    alloc: AllocFn,
    free: FreeFn,
    memset8: MemsetD8Fn,
    memset16: MemsetD16Fn,
    memset32: MemsetD32Fn,
    memset2d32: MemsetD2D32Fn,
    htod: HtoDFn,
    dtod: DtoDFn,
    graph_launch: GraphLaunchFn,
    set_context: SetContextFn,
    get_context: GetContextFn,
    peer: PeerFn,
}

fn ptr(handle: usize) -> *mut c_void {
    handle as *mut c_void
}

impl Driver {
    /// From `{symbol: address}`; every symbol of [`SYMBOLS`] must be there and non-null.
    pub(crate) fn from_addresses(addresses: &HashMap<String, usize>) -> PyResult<Driver> {
        let get = |name: &str| -> PyResult<usize> {
            match addresses.get(name) {
                Some(&a) if a != 0 => Ok(a),
                _ => Err(PyValueError::new_err(format!(
                    "no address for the driver entry point `{name}`"
                ))),
            }
        };
        // SAFETY: each address comes from cuGetProcAddress for exactly the symbol named,
        // whose C signature the type it is transmuted to spells out (see the aliases).
        unsafe {
            use std::mem::transmute as t;
            Ok(Driver {
                launch: t::<usize, LaunchFn>(get("cuLaunchKernel")?),
                launch_ex: t::<usize, LaunchExFn>(get("cuLaunchKernelEx")?),
                sync: t::<usize, StreamFn>(get("cuStreamSynchronize")?),
                query: t::<usize, StreamFn>(get("cuStreamQuery")?),
                record: t::<usize, RecordFn>(get("cuEventRecord")?),
                wait_event: t::<usize, WaitEventFn>(get("cuStreamWaitEvent")?),
                alloc: t::<usize, AllocFn>(get("cuMemAllocFromPoolAsync")?),
                free: t::<usize, FreeFn>(get("cuMemFreeAsync")?),
                memset8: t::<usize, MemsetD8Fn>(get("cuMemsetD8Async")?),
                memset16: t::<usize, MemsetD16Fn>(get("cuMemsetD16Async")?),
                memset32: t::<usize, MemsetD32Fn>(get("cuMemsetD32Async")?),
                memset2d32: t::<usize, MemsetD2D32Fn>(get("cuMemsetD2D32Async")?),
                htod: t::<usize, HtoDFn>(get("cuMemcpyHtoDAsync")?),
                dtod: t::<usize, DtoDFn>(get("cuMemcpyDtoDAsync")?),
                graph_launch: t::<usize, GraphLaunchFn>(get("cuGraphLaunch")?),
                set_context: t::<usize, SetContextFn>(get("cuCtxSetCurrent")?),
                get_context: t::<usize, GetContextFn>(get("cuCtxGetCurrent")?),
                peer: t::<usize, PeerFn>(get("cuMemcpyPeerAsync")?),
            })
        }
    }

    // SAFETY (every method below): the function pointers are the driver's entry points
    // (`from_addresses`); streams, events, graphs and pools are live handles the runtime
    // created and keeps; device pointers are allocations of the runtime's pool whose
    // bounds the callers checked; no call touches Rust memory except where a host pointer
    // is passed, which the caller keeps alive for the call.

    /// Launch a tile kernel (block (1, 1, 1), no dynamic shared memory): with `pdl`, by
    /// `cuLaunchKernelEx` with the programmatic-stream-serialization attribute (only for a
    /// kernel compiled with the PDL prologue, `launch_ex`), else by `cuLaunchKernel`.
    /// Returns the `CUresult` and the entry point's name (for the error).
    ///
    /// # Safety
    /// `function` is a CUfunction of a loaded module (compiled with the PDL prologue when
    /// `pdl`), `stream` a live stream of the runtime, `params` one pointer per kernel
    /// parameter, valid during the call.
    pub(crate) unsafe fn launch_tile_kernel(
        &self,
        function: usize,
        grid: [c_uint; 3],
        stream: usize,
        params: *mut *mut c_void,
        pdl: bool,
    ) -> (c_int, &'static str) {
        let f = function as *mut c_void;
        let s = ptr(stream);
        if pdl {
            let code = unsafe { launch_pdl(self.launch_ex, f, grid, s, params) };
            return (code, "cuLaunchKernelEx");
        }
        let code = unsafe {
            (self.launch)(
                f,
                grid[0],
                grid[1],
                grid[2],
                1,
                1,
                1,
                0,
                s,
                params,
                std::ptr::null_mut(),
            )
        };
        (code, "cuLaunchKernel")
    }

    pub(crate) fn synchronize(&self, stream: usize) -> c_int {
        unsafe { (self.sync)(ptr(stream)) }
    }

    /// 0 when every piece of work on the stream completed.
    pub(crate) fn query(&self, stream: usize) -> c_int {
        unsafe { (self.query)(ptr(stream)) }
    }

    pub(crate) fn record(&self, event: usize, stream: usize) -> c_int {
        unsafe { (self.record)(ptr(event), ptr(stream)) }
    }

    pub(crate) fn wait_event(&self, stream: usize, event: usize) -> c_int {
        unsafe { (self.wait_event)(ptr(stream), ptr(event), 0) }
    }

    /// `nbytes` from the memory pool `pool` (the device's), ordered on `stream`.
    pub(crate) fn alloc(&self, nbytes: usize, pool: usize, stream: usize) -> Result<u64, c_int> {
        let mut out = 0u64;
        let code = unsafe { (self.alloc)(&mut out, nbytes, ptr(pool), ptr(stream)) };
        if code == 0 {
            Ok(out)
        } else {
            Err(code)
        }
    }

    pub(crate) fn free(&self, dptr: u64, stream: usize) -> c_int {
        unsafe { (self.free)(dptr, ptr(stream)) }
    }

    /// Fill `nbytes` at `dst` with copies of `pattern` (1, 2, 4 or 8 bytes; `nbytes` a
    /// multiple of its length), on the device.
    pub(crate) fn fill(&self, dst: u64, nbytes: usize, pattern: &[u8], stream: usize) -> c_int {
        let n = pattern.len();
        if n == 0 || !nbytes.is_multiple_of(n) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        let s = ptr(stream);
        unsafe {
            if pattern.iter().all(|b| *b == pattern[0]) {
                return (self.memset8)(dst, pattern[0], nbytes, s);
            }
            match n {
                2 => (self.memset16)(
                    dst,
                    u16::from_le_bytes([pattern[0], pattern[1]]),
                    nbytes / 2,
                    s,
                ),
                4 => {
                    let v = u32::from_le_bytes([pattern[0], pattern[1], pattern[2], pattern[3]]);
                    (self.memset32)(dst, v, nbytes / 4, s)
                }
                8 => {
                    // Two strided 32-bit fills: the low words, then the high words (a 2-D
                    // memset of one 32-bit column per 8-byte row).
                    let lo = u32::from_le_bytes([pattern[0], pattern[1], pattern[2], pattern[3]]);
                    let hi = u32::from_le_bytes([pattern[4], pattern[5], pattern[6], pattern[7]]);
                    let rows = nbytes / 8;
                    let code = (self.memset2d32)(dst, 8, lo, 1, rows, s);
                    if code != 0 {
                        return code;
                    }
                    (self.memset2d32)(dst + 4, 8, hi, 1, rows, s)
                }
                _ => CUDA_ERROR_INVALID_VALUE,
            }
        }
    }

    pub(crate) fn htod(&self, dst: u64, src: usize, nbytes: usize, stream: usize) -> c_int {
        unsafe { (self.htod)(dst, src as *const c_void, nbytes, ptr(stream)) }
    }

    pub(crate) fn dtod(&self, dst: u64, src: u64, nbytes: usize, stream: usize) -> c_int {
        unsafe { (self.dtod)(dst, src, nbytes, ptr(stream)) }
    }

    pub(crate) fn graph_launch(&self, exec: usize, stream: usize) -> c_int {
        unsafe { (self.graph_launch)(ptr(exec), ptr(stream)) }
    }

    /// Make `context` current on this thread (a device's primary context).
    pub(crate) fn set_context(&self, context: usize) -> c_int {
        unsafe { (self.set_context)(ptr(context)) }
    }

    /// The context current on this thread (0: none).
    pub(crate) fn context(&self) -> Result<usize, c_int> {
        let mut out: *mut c_void = std::ptr::null_mut();
        match unsafe { (self.get_context)(&mut out) } {
            0 => Ok(out as usize),
            code => Err(code),
        }
    }

    /// Copy `nbytes` from `src` (memory of the device of `src_ctx`) to `dst` (of
    /// `dst_ctx`)'s device on `stream`: directly where peer access is on, staged by the
    /// driver otherwise.
    pub(crate) fn peer_copy(
        &self,
        dst: (u64, usize),
        src: (u64, usize),
        nbytes: usize,
        stream: usize,
    ) -> c_int {
        unsafe { (self.peer)(dst.0, ptr(dst.1), src.0, ptr(src.1), nbytes, ptr(stream)) }
    }
}

/// `CUDA_ERROR_INVALID_VALUE`.
pub(crate) const CUDA_ERROR_INVALID_VALUE: c_int = 1;

/// Cross-stream ordering through the driver: one reusable event per stream. Streams of
/// different devices wait on each other's events too; with several devices in use
/// (`contexts`, by ordinal), each call runs with its stream's device context current.
pub(crate) struct GpuEvents<'a> {
    pub driver: &'a Driver,
    pub slots: &'a [Slot],
    pub contexts: Option<&'a [usize]>,
}

impl GpuEvents<'_> {
    fn bind(&self, slot: &Slot) -> Result<(), (c_int, &'static str)> {
        let Some(ctx) = self.contexts.and_then(|c| c.get(slot.device as usize)) else {
            return Ok(());
        };
        match self.driver.set_context(*ctx) {
            0 => Ok(()),
            code => Err((code, "cuCtxSetCurrent")),
        }
    }
}

impl EventOps for GpuEvents<'_> {
    type Error = (c_int, &'static str);

    fn record(&mut self, producer: u32) -> Result<(), Self::Error> {
        let s = &self.slots[producer as usize];
        self.bind(s)?;
        match self.driver.record(s.event, s.stream) {
            0 => Ok(()),
            code => Err((code, "cuEventRecord")),
        }
    }

    fn wait(&mut self, consumer: u32, producer: u32) -> Result<(), Self::Error> {
        let (c, p) = (
            &self.slots[consumer as usize],
            &self.slots[producer as usize],
        );
        self.bind(c)?;
        match self.driver.wait_event(c.stream, p.event) {
            0 => Ok(()),
            code => Err((code, "cuStreamWaitEvent")),
        }
    }
}
