"""CT6120-CT6123 (`LaunchError`) and CT7010-CT7013 (`CompileError`): raw CUDA C++ kernels
(`cutile.unsafe.raw_kernel`), compiled by NVRTC and linked by nvJitLink."""

TEXTS: dict[str, str] = {
    "CT6120": """
        A raw kernel is CUDA C++: only a GPU runs it. This process runs kernels on the
        CPU interpreter (no CUDA driver, or `CUTILE_BACKEND=interpreter`), which runs tile
        kernels only. The call is refused before anything is held; its arguments were
        checked first, so a wrong argument shows its own error here too.

        Example:

            axpy(2.0, x, y, n, grid=4).sync()
            # [CT6120] raw kernel `axpy` is CUDA C++ and runs only on a GPU; ...

        Fix: run on a machine with an NVIDIA GPU, or write the computation as a tile
        kernel (`@cutile.entry`), which the interpreter runs. `axpy.compile("sm_90")`
        builds the cubin without a GPU.
    """,
    "CT6121": """
        A raw kernel call's launch shape cannot be used: `grid=` is missing, `grid` or
        `block` is not an int or 1 to 3 ints (grid extents >= 0, block extents >= 1), the
        block is past CUDA's limits (x and y up to 1024, z up to 64, 1024 threads in all),
        no block size was given (neither to the call nor to `raw_kernel`), or
        `shared_mem` is not a byte count.

        Example:

            axpy(2.0, x, y, n, grid=4, block=(32, 64))
            # [CT6121] block [32, 64, 1] of raw kernel `axpy` is past CUDA's limits ...

        Fix: `grid=` blocks per axis, `block=` threads per axis (at most 1024 in all),
        `shared_mem=` bytes of dynamic shared memory per block.
    """,
    "CT6122": """
        A raw kernel's declaration cannot be used: `params` is not a list of declarations
        (`cutile.unsafe.read`, `write`, `atomic`, `scalar`), a name is declared twice or
        is not an identifier (or is `grid`, `block` or `shared_mem`, which a call takes
        for its launch), a scalar's C type is unknown, `options` is not a list of str or
        names the target or LTO (cutile picks those), or `link` holds something other
        than CUDA C++ text or LTO-IR bytes.

        Example:

            cutile.unsafe.raw_kernel(SRC, "axpy", [unsafe.scalar("n", "int128")])
            # [CT6122] `n`: 'int128' is not a C scalar type cutile can pass

        Fix: one declaration per C++ parameter, in order: `read`/`write`/`atomic` for a
        pointer (with its element type), `scalar(name, "int")` for a value.
    """,
    "CT6123": """
        A raw kernel's declarations do not match its C++ signature, as the compiler laid
        it out in the cubin: a different number of parameters, or a parameter of another
        size (an `int` declared for a `long long`, a scalar for a pointer). Launching it
        would hand the kernel garbage, so it is refused when the kernel is compiled.

        Example:

            # __global__ void fill(float* y, long long n)
            k = unsafe.raw_kernel(SRC, "fill", [unsafe.write("y", f32),
                                                unsafe.scalar("n", "int")])
            k.compile()
            # [CT6123] parameter 1 of raw kernel `fill`, `n` (int), is 4 bytes, but the
            # C++ parameter 1 is 8 bytes

        Fix: declare each parameter with the C type of the C++ signature.
    """,
    "CT7010": """
        NVRTC (or nvJitLink, for a linked raw kernel) cannot be loaded: its library is
        not installed, or not of the CUDA major that cuda-bindings was built for. Raw
        kernels need them to compile; tile kernels do not.

        Example:

            axpy.compile()
            # [CT7010] NVRTC cannot be loaded: Failure finding "libnvrtc.so.13" ...

        Fix: `python -m pip install 'cutile[tileiras]'`, which installs
        `nvidia-cuda-nvrtc` and `nvidia-nvjitlink` of the matching release.
    """,
    "CT7011": """
        NVRTC rejected a raw kernel's program (a C++ error) or its options. The error
        carries NVRTC's log, with the line of the program (`raw_kernel.cu(LINE)`) that
        is wrong.

        Example:

            unsafe.raw_kernel("__global__ void k( {}", "k", []).compile()
            # [CT7011] NVRTC could not compile raw_kernel.cu for sm_90 (NVRTC_ERROR_COMPILATION)
            # raw_kernel.cu(1): error: ...

        Fix: correct the C++ (or the option) NVRTC's log points at.
    """,
    "CT7012": """
        The program has no `__global__` function by the kernel's name. The name is a C++
        name expression: `axpy` for `extern "C"` or a plain function, `ns::axpy` in a
        namespace, `scale<float>` for a template instance (NVRTC instantiates it). A
        `__device__` function is not a kernel.

        Example:

            unsafe.raw_kernel(SRC, "axpby", params).compile()
            # [CT7012] there is no kernel `axpby` in raw_kernel.cu: NVRTC finds no
            # `__global__` function of that name

        Fix: name the `__global__` function as C++ spells it.
    """,
    "CT7013": """
        nvJitLink could not link a raw kernel with the device code it calls: a function
        is declared but defined in none of the linked programs (or in two), or a program
        was built for another target. The error carries nvJitLink's log.

        Example:

            # the kernel calls `extern "C" __device__ float twice(float)`
            unsafe.raw_kernel(SRC, "k", params, link=[]).compile()
            # [CT7013] nvJitLink could not link raw_kernel.cu for sm_90: ...
            # ptxas fatal   : Unresolved extern function 'twice'

        Fix: pass every program that defines a called function in `link=[...]` (CUDA C++
        text, or LTO-IR compiled with `-dlto` for the same target).
    """,
}
