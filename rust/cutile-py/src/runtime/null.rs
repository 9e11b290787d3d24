//! A CUDA driver that does nothing: every entry point of [`SYMBOLS`] succeeds at once and
//! counts its call, and allocations hand out addresses nothing ever touches. A `Runtime`
//! made with it runs the GPU code path (streams, events, the memory pool, launches, PDL
//! launches, context switches between devices, peer copies) on a machine without a GPU,
//! so tests and benchmarks can measure and count the host's part of that path
//! (`cutile._native.null_driver()`; never a backend a program selects).
//!
//! Two entry points keep what a caller could observe: the current context is kept per
//! thread (`cuCtxGetCurrent` reads what `cuCtxSetCurrent` set), and `cuLaunchKernelEx`
//! checks that its config carries the one attribute cutile sets (programmatic stream
//! serialization), failing with `CUDA_ERROR_INVALID_VALUE` otherwise.

use super::launch_ex::{LaunchConfig, PROGRAMMATIC_STREAM_SERIALIZATION};
use super::SYMBOLS;
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

static CALLS: [AtomicU64; SYMBOLS.len()] = [const { AtomicU64::new(0) }; SYMBOLS.len()];
/// The next address an allocation hands out (256-byte aligned, like the driver's).
static NEXT_ADDRESS: AtomicU64 = AtomicU64::new(1 << 40);

thread_local! {
    /// This thread's current context (`cuCtxSetCurrent`), as the driver keeps it.
    static CONTEXT: Cell<usize> = const { Cell::new(0) };
}

fn count(symbol: usize) -> c_int {
    CALLS[symbol].fetch_add(1, Ordering::Relaxed);
    0
}

type P = *mut c_void;

extern "C" fn launch(
    _: P,
    _: c_uint,
    _: c_uint,
    _: c_uint,
    _: c_uint,
    _: c_uint,
    _: c_uint,
    _: c_uint,
    _: P,
    _: *mut P,
    _: *mut P,
) -> c_int {
    count(0)
}
extern "C" fn launch_ex(config: *const LaunchConfig, _: P, _: *mut P, _: *mut P) -> c_int {
    count(1);
    // SAFETY: the runtime passes a config that lives during the call, whose `attrs` point
    // at `num_attrs` attributes (`launch_ex::launch_pdl`).
    let pdl = unsafe {
        config.as_ref().is_some_and(|c| {
            c.num_attrs == 1
                && c.attrs.as_ref().is_some_and(|a| {
                    a.id == PROGRAMMATIC_STREAM_SERIALIZATION && a.value.int_value == 1
                })
        })
    };
    if pdl {
        0
    } else {
        1 // CUDA_ERROR_INVALID_VALUE
    }
}
extern "C" fn synchronize(_: P) -> c_int {
    count(2)
}
extern "C" fn query(_: P) -> c_int {
    count(3)
}
extern "C" fn record(_: P, _: P) -> c_int {
    count(4)
}
extern "C" fn wait_event(_: P, _: P, _: c_uint) -> c_int {
    count(5)
}
extern "C" fn alloc(out: *mut u64, nbytes: usize, _: P, _: P) -> c_int {
    let size = (nbytes as u64).max(1).div_ceil(256) * 256;
    if !out.is_null() {
        // SAFETY: the runtime passes the address of a live `u64` (`Driver::alloc`).
        unsafe { *out = NEXT_ADDRESS.fetch_add(size, Ordering::Relaxed) };
    }
    count(6)
}
extern "C" fn free(_: u64, _: P) -> c_int {
    count(7)
}
extern "C" fn memset8(_: u64, _: u8, _: usize, _: P) -> c_int {
    count(8)
}
extern "C" fn memset16(_: u64, _: u16, _: usize, _: P) -> c_int {
    count(9)
}
extern "C" fn memset32(_: u64, _: u32, _: usize, _: P) -> c_int {
    count(10)
}
extern "C" fn memset2d32(_: u64, _: usize, _: u32, _: usize, _: usize, _: P) -> c_int {
    count(11)
}
extern "C" fn htod(_: u64, _: *const c_void, _: usize, _: P) -> c_int {
    count(12)
}
extern "C" fn dtod(_: u64, _: u64, _: usize, _: P) -> c_int {
    count(13)
}
extern "C" fn graph_launch(_: P, _: P) -> c_int {
    count(14)
}
extern "C" fn set_context(ctx: P) -> c_int {
    CONTEXT.with(|c| c.set(ctx as usize));
    count(15)
}
extern "C" fn get_context(out: *mut P) -> c_int {
    if !out.is_null() {
        // SAFETY: the runtime passes the address of a live pointer (`Driver::context`).
        unsafe { *out = CONTEXT.with(|c| c.get()) as P };
    }
    count(16)
}
extern "C" fn peer_copy(_: u64, _: P, _: u64, _: P, _: usize, _: P) -> c_int {
    count(17)
}

/// `{symbol: address}` of the null driver's entry points (what `Runtime(driver=...)` takes).
pub(crate) fn addresses() -> HashMap<String, usize> {
    let fns: [usize; SYMBOLS.len()] = [
        launch as *const () as usize,
        launch_ex as *const () as usize,
        synchronize as *const () as usize,
        query as *const () as usize,
        record as *const () as usize,
        wait_event as *const () as usize,
        alloc as *const () as usize,
        free as *const () as usize,
        memset8 as *const () as usize,
        memset16 as *const () as usize,
        memset32 as *const () as usize,
        memset2d32 as *const () as usize,
        htod as *const () as usize,
        dtod as *const () as usize,
        graph_launch as *const () as usize,
        set_context as *const () as usize,
        get_context as *const () as usize,
        peer_copy as *const () as usize,
    ];
    SYMBOLS.iter().map(|s| s.to_string()).zip(fns).collect()
}

/// Make `context` this thread's current one, without counting a call.
pub(crate) fn make_current(context: usize) {
    CONTEXT.with(|c| c.set(context));
}

/// Calls so far, by symbol (every null driver of the process shares the counts).
pub(crate) fn calls() -> HashMap<String, u64> {
    SYMBOLS
        .iter()
        .zip(&CALLS)
        .map(|(s, c)| (s.to_string(), c.load(Ordering::Relaxed)))
        .collect()
}
