//! `cuLaunchKernelEx` for kernels compiled for programmatic dependent launch (PDL): the C
//! layouts of `CUlaunchConfig` and `CUlaunchAttribute` (cuda.h of CUDA 12 and 13), and the
//! one attribute cutile sets, `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 1`.
//!
//! The attribute lets the kernel's blocks start before the previous kernel on the stream
//! completed. That is sound only for a kernel whose every memory access waits for that
//! completion first (`griddepcontrol.wait`, the prologue `python/cutile/lowering/pdl.py`
//! emits), so the launcher sets it only for a kernel compiled with that prologue, as the
//! compiled kernel says (`KernelEntry::pdl`), and every other kernel keeps `cuLaunchKernel`.

use std::ffi::{c_int, c_uint, c_void};

/// `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION` (`CUlaunchAttributeID`).
pub(crate) const PROGRAMMATIC_STREAM_SERIALIZATION: c_uint = 6;

/// `CUlaunchAttributeValue`: a 64-byte union, 8-byte aligned (some members hold
/// pointers). The PDL attribute's member, `int programmaticStreamSerializationAllowed`,
/// is its first four bytes.
#[repr(C, align(8))]
pub(crate) struct LaunchAttributeValue {
    pub int_value: c_int,
    rest: [u8; 60],
}

/// `CUlaunchAttribute`: the id (an enum, 4 bytes), padding to 8, then the value.
#[repr(C)]
pub(crate) struct LaunchAttribute {
    pub id: c_uint,
    pad: [u8; 4],
    pub value: LaunchAttributeValue,
}

impl LaunchAttribute {
    /// The attribute that allows the kernel to overlap its predecessor on the stream.
    pub(crate) fn programmatic_stream_serialization() -> Self {
        LaunchAttribute {
            id: PROGRAMMATIC_STREAM_SERIALIZATION,
            pad: [0; 4],
            value: LaunchAttributeValue {
                int_value: 1,
                rest: [0; 60],
            },
        }
    }
}

/// `CUlaunchConfig`.
#[repr(C)]
pub(crate) struct LaunchConfig {
    pub grid_dim_x: c_uint,
    pub grid_dim_y: c_uint,
    pub grid_dim_z: c_uint,
    pub block_dim_x: c_uint,
    pub block_dim_y: c_uint,
    pub block_dim_z: c_uint,
    pub shared_mem_bytes: c_uint,
    pub h_stream: *mut c_void,
    pub attrs: *mut LaunchAttribute,
    pub num_attrs: c_uint,
}

/// `CUresult cuLaunchKernelEx(const CUlaunchConfig*, CUfunction, void** kernelParams,
/// void** extra)`.
pub(crate) type LaunchExFn = unsafe extern "C" fn(
    *const LaunchConfig,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> c_int;

/// Launch a tile kernel (block (1, 1, 1), no dynamic shared memory: the cubin carries its
/// real CTA size) with the PDL attribute.
///
/// # Safety
/// `launch` is the driver's `cuLaunchKernelEx`, `function` a `CUfunction` of a loaded
/// module compiled with the PDL prologue, `stream` a live stream, `params` one pointer per
/// kernel parameter, valid during the call (the driver copies the values).
pub(crate) unsafe fn launch_pdl(
    launch: LaunchExFn,
    function: *mut c_void,
    grid: [c_uint; 3],
    stream: *mut c_void,
    params: *mut *mut c_void,
) -> c_int {
    // Both live on this frame for the call; the driver reads them during it.
    let mut attr = LaunchAttribute::programmatic_stream_serialization();
    let config = LaunchConfig {
        grid_dim_x: grid[0],
        grid_dim_y: grid[1],
        grid_dim_z: grid[2],
        block_dim_x: 1,
        block_dim_y: 1,
        block_dim_z: 1,
        shared_mem_bytes: 0,
        h_stream: stream,
        attrs: &mut attr,
        num_attrs: 1,
    };
    unsafe { launch(&config, function, params, std::ptr::null_mut()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    // The numbers are cuda.h's (CUDA 13.x, x86-64 and aarch64), as a C compiler lays the
    // structs out: `sizeof` / `offsetof` printed by a program built against the header.
    #[test]
    fn launch_attribute_has_the_c_layout() {
        assert_eq!(size_of::<LaunchAttributeValue>(), 64);
        assert_eq!(align_of::<LaunchAttributeValue>(), 8);
        assert_eq!(size_of::<LaunchAttribute>(), 72);
        assert_eq!(align_of::<LaunchAttribute>(), 8);
        assert_eq!(offset_of!(LaunchAttribute, id), 0);
        assert_eq!(offset_of!(LaunchAttribute, value), 8);
    }

    #[test]
    fn launch_config_has_the_c_layout() {
        assert_eq!(size_of::<LaunchConfig>(), 56);
        assert_eq!(align_of::<LaunchConfig>(), 8);
        assert_eq!(offset_of!(LaunchConfig, grid_dim_x), 0);
        assert_eq!(offset_of!(LaunchConfig, block_dim_x), 12);
        assert_eq!(offset_of!(LaunchConfig, shared_mem_bytes), 24);
        assert_eq!(offset_of!(LaunchConfig, h_stream), 32);
        assert_eq!(offset_of!(LaunchConfig, attrs), 40);
        assert_eq!(offset_of!(LaunchConfig, num_attrs), 48);
    }

    #[test]
    fn the_pdl_attribute_sets_its_id_and_the_first_int_of_the_value() {
        let a = LaunchAttribute::programmatic_stream_serialization();
        // SAFETY: reading the attribute's own bytes, all initialized (no padding holes:
        // the explicit `pad` and `rest` fields cover every byte).
        let bytes: &[u8] = unsafe {
            std::slice::from_raw_parts(
                (&a as *const LaunchAttribute).cast::<u8>(),
                size_of::<LaunchAttribute>(),
            )
        };
        assert_eq!(&bytes[0..4], &6u32.to_ne_bytes());
        assert_eq!(&bytes[8..12], &1i32.to_ne_bytes());
        assert!(bytes[4..8].iter().chain(&bytes[12..]).all(|b| *b == 0));
    }

    /// A stand-in for the driver: it reads the config through the C layout (raw offsets,
    /// as the driver does) and records what it saw.
    unsafe extern "C" fn fake_driver(
        config: *const LaunchConfig,
        function: *mut c_void,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> c_int {
        unsafe {
            let base = config.cast::<u8>();
            let word = |off: usize| base.add(off).cast::<u32>().read();
            let grid = [word(0), word(4), word(8)];
            let block = [word(12), word(16), word(20)];
            let stream = base.add(32).cast::<usize>().read();
            let attrs = base.add(40).cast::<*const u8>().read();
            let num = word(48);
            let id = attrs.cast::<u32>().read();
            let allowed = attrs.add(8).cast::<i32>().read();
            let ok = grid == [3, 2, 1]
                && block == [1, 1, 1]
                && word(24) == 0
                && stream == 0x5000
                && num == 1
                && id == 6
                && allowed == 1
                && function as usize == 0x1234
                && params as usize == 0x7000
                && extra.is_null();
            if ok {
                0
            } else {
                999
            }
        }
    }

    #[test]
    fn launch_pdl_passes_grid_stream_attribute_and_parameters() {
        // SAFETY: the fake driver only reads the config it is given during the call.
        let code = unsafe {
            launch_pdl(
                fake_driver,
                0x1234 as *mut c_void,
                [3, 2, 1],
                0x5000 as *mut c_void,
                0x7000 as *mut *mut c_void,
            )
        };
        assert_eq!(code, 0);
    }
}
