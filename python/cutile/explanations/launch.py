"""CT61xx-CT69xx: launches (`LaunchError`), the driver (`DeviceError`) and the interpreter
(`InterpreterError`, `RaceError`)."""

TEXTS: dict[str, str] = {
    "CT6101": """
        An argument of the wrong kind for its parameter: a `Mut` output takes a
        `Partition`, an input takes a `Tensor`, a scalar parameter a number.

        Example:

            z, x, y = api.zeros([1024], f32), api.ones([1024], f32), api.ones([1024], f32)
            add(z, x, y)
            # [CT6101] `z` is a kernel output (`Mut`); it takes a Partition, not a Tensor

        Fix: partition outputs (`z.partition([128])`); pass inputs whole.
    """,
    "CT6102": """
        A value does not match its parameter's type: a tensor's element type differs from
        the declaration, a scalar is not a number of the parameter's kind (or does not fit
        it, or a finite float overflows it to infinity), or a `Const` value is not of its
        declared type (at a call or in `kernel.compile(...)`).

        Example:

            saxpy(y, x, 1e39)           # [CT6102] `a` = 1e39 overflows `f32` (it would be infinite)
            add.compile(B="x")          # [CT6102] `B` expects an int, got a `str` ('x')

        Fix: pass tensors of the declared dtype (`api.from_numpy(a.astype(np.float32))`)
        and values in range; `float("inf")` is accepted when meant.
    """,
    "CT6103": """
        A `Const` value is refused: two sources give it different values (a keyword and a
        tile shape, or two tensor shapes), a `Const` used in a shape is below 1, or an int
        `Const` does not fit in 32 bits.

        Example:

            z = api.zeros([1024], f32).partition([128])
            add(z, x, y, B=64)
            # [CT6103] `B` is 64 from the keyword `B=64` but 128 from the tile shape of `z` (axis 0)

        Fix: let the launch infer it (drop the keyword), or make the sources agree.
    """,
    "CT6104": """
        The call's arguments do not match the parameters: too many positional arguments,
        one given twice, an unknown keyword, a missing argument, a `Const` that nothing
        determines (not given, not in any shape), or a `grid=` that is not an int or a
        tuple of one to three ints >= 0; `compile()` needs every `Const`.

        Example:

            add(z, x)                   # [CT6104] `add` is missing argument `y`
            add.compile()               # [CT6104] compile() needs a value for `B`

        Fix: pass each parameter once; pass `Const`s by keyword (`B=128`).
    """,
    "CT6105": """
        A tensor's shape contradicts its declaration: a different number of axes, or an
        axis declared with a fixed size (`Tensor[f32, [-1, 128]]`) that the tensor does
        not have.

        Example:

            # k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1, 128]])
            k(z, api.ones([16, 64], f32))   # [CT6105] `x` must have size 128 on axis 1; it has 64

        Fix: pass a tensor of the declared shape, or declare the axis `-1` (any size).
    """,
    "CT6106": """
        A partition's tiles have a different number of axes than the `Mut` parameter
        declares.

        Example:

            # k(z: Mut[Tensor[f32, ["BM", "BN"]]], ...)
            k(api.zeros([1024], f32).partition([128]))
            # [CT6106] `z` is declared with 2-D tiles but the partition's tiles are [128]

        Fix: partition a tensor of the declared rank.
    """,
    "CT6107": """
        The kernel has no `Mut` output, so no partition decides how many blocks run, and
        the call gives no `grid=`. A kernel whose outputs are `Atomic` tensors (shared by
        every block, updated atomically) runs the grid it is given.

        Example:

            @cutile.entry
            def histogram(counts: Atomic[Tensor[i32, [-1]]], x: Tensor[i32, [-1]],
                          B: Const[int]):
                atomic_add(counts, gather(x, block_id(0) * B + arange(B, i32)), 1)
            histogram(counts, x, B=256)
            # [CT6107] `histogram` has no `Mut` output, so no partition determines its grid

        Fix: pass the grid, `histogram(counts, x, B=256, grid=(cdiv(n, 256),))`; a kernel
        with neither outputs nor `Atomic` tensors has no effect.
    """,
    "CT6108": """
        Several persistent outputs ask for different block counts through
        `persistent(num_blocks)`; one launch has one grid.

        Example:

            k(z.persistent(8), w.persistent(16))
            # [CT6108] persistent partitions ask for different block counts (8 and 16)

        Fix: give every persistent partition the same `num_blocks` (or none).
    """,
    "CT6109": """
        The launch grid is past CUDA's limits: the partition has more tiles on an axis
        than blocks may run (x up to 2^31 - 1, y and z up to 65,535), or a persistent
        schedule's tile count plus its block count reaches 2^31 (it counts tile ids in 32
        bits). Checked before anything runs.

        Example:

            z = api.zeros([1, 65536], i8).partition([1, 1])
            k(z)
            # [CT6109] `k`: the grid needs 65536 blocks on axis 1; CUDA allows at most 65535

        Fix: use larger tiles, or a persistent kernel (`iter_indices()`), whose grid is
        `num_blocks` whatever the tile count.
    """,
    "CT6110": """
        A `Ptr[...]` parameter (of an unsafe entry) takes a Tensor: the kernel receives
        its device address, and the launch holds the tensor exclusively while it runs
        (the kernel may write through the pointer), like an output. A Partition, a number
        or anything else is refused; the tensor's element type must be the pointee's
        (CT6102).

        Example:

            @cutile.entry(unsafe=True)
            def k(p: Ptr[f32]):
                ...
            k(0x7f0000000000, grid=(1,))
            # [CT6110] `p` is a pointer (`Ptr[f32]`); it takes a Tensor (...), not an int

        Fix: pass a Tensor (`api.from_numpy(...)`, `api.zeros(...)`), and the grid
        (`grid=(blocks,)`) when the kernel has no `Mut` output.
    """,
    "CT6111": """
        A tensor has 2^31 elements or more on one axis. Tile kernels index each axis with
        32-bit integers, and the checker proves indices in that width.

        Example:

            t = api.zeros([2**31], i8)
            k(t.partition([1024]))
            # [CT6111] `z` has 2147483648 elements on axis 0; tile kernels take extents below 2^31

        Fix: reshape the tensor so that every axis is below 2^31 (`t.reshape([2**16, 2**15])`).
    """,
    "CT6200": """
        A launch check from the checker is false for these arguments: an index the
        checker proved in bounds only under a condition on the shapes (`grid(0) <=
        cdiv(dim(x, 0), B)`), evaluated on the host before the launch, failed. Nothing ran.
        `kernel.check_report()` lists every such condition.

        Example:

            z = api.zeros([1024], f32).partition([128])
            add(z, api.ones([16], f32), y)
            # [CT6200] `add`: launch check `grid(0) <= cdiv(dim(x, 0), B)` failed with
            #   grid(0) = 8, dim(x, 0) = 16, B = 128: the tile index of `x` on axis 0 in
            #   `load_tile_like` is in bounds (line 6)

        Fix: pass inputs at least as large as the output they are read alongside.
    """,
    "CT6201": """
        A launch check cannot be decided for these arguments (its arithmetic overflows 64
        bits, say), so the launch is refused: launch checks fail closed.

        Example:

            k(z, x, S=2**31 - 1)
            # [CT6201] `k`: launch check `S * grid(0) <= dim(x, 0)` cannot be decided (...)

        Fix: use smaller `Const` values or shapes; `kernel.check_report()` shows the check.
    """,
    "CT6900": """
        The CUDA driver reported an error: the base code of `DeviceError`, which the
        specific codes CT6901 to CT6903 refine; a `DeviceError` without a finer code
        reads `[CT6900]`.

        Example:

            try:
                api.zeros([2**40], f32)     # on a GPU: [CT6901] cuMemAlloc_v2 failed: ...
            except cutile.DeviceError as err:
                print(err.code)             # CT6901, or CT6900 where nothing finer applies

        Fix: see the driver's message; `python -m cutile info` shows the driver and GPU.
    """,
    "CT6901": """
        A CUDA driver call failed: an allocation, a copy, a launch, a synchronize. The
        message names the call and the driver's error.

        Example:

            api.zeros([2**40], f32)
            # [CT6901] cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)

        Fix: as the driver's error says (free memory, smaller tensors, a healthy device).
    """,
    "CT6902": """
        `CUTILE_BACKEND=gpu` forces the GPU, but there is no usable CUDA driver or device.

        Example:

            $ CUTILE_BACKEND=gpu python my_program.py   # on a machine without a GPU
            [CT6902] CUTILE_BACKEND=gpu but the CUDA driver cannot be used (...)

        Fix: unset `CUTILE_BACKEND` (the CPU interpreter runs kernels when there is no
        GPU), or fix the driver installation (`nvidia-smi`).
    """,
    "CT6903": """
        A kernel faulted on the GPU: a device assert failed (an index the checker could
        only guard at run time) or an address was invalid (an `unsafe` kernel). The CUDA
        context is lost after such a fault, so the process cannot launch again.

        Example:

            z, x = k(z, x, n).sync()    # [CT6903] `k` faulted on the GPU: ... (CUDA_ERROR_ASSERT)

        Fix: run the same launch under the interpreter (`CUTILE_BACKEND=interpreter
        CUTILE_INTERPRET=check`), which names the op, block and element; fix the input
        or the index arithmetic, then restart the process.
    """,
    "CT6904": """
        The `CUTILE_INTERPRET` environment variable has a value other than `check` or
        empty. It is read at every interpreted launch.

        Example:

            $ CUTILE_INTERPRET=races python my_program.py
            [CT6904] CUTILE_INTERPRET='races' is not a mode the interpreter knows
              (accepted: `check`, or empty)

        Fix: `CUTILE_INTERPRET=check` runs interpreted launches under the race and bounds
        detector; unset it (or leave it empty) for plain runs.
    """,
    "CT6910": """
        The CPU interpreter stopped a kernel: an access outside every buffer, a failed
        `assert`, an index outside a partition's index space, or another fault a GPU would
        not report cleanly. `InterpreterError` carries the op, the tile block and the
        source location.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, ["B"]]], n: i32, B: Const[int]):
                assert n > 0
                z.store(z.load())
            k(z, 0).sync()              # [CT6910] assertion failed: assertion failed

        Fix: fix the input or the kernel at the location shown.
    """,
    "CT6911": """
        The race detector (`CUTILE_INTERPRET=check` or `with cutile.check_races():`) saw
        two tile blocks write one element, with plain stores (or a plain store and an
        atomic). Only `unsafe` kernels can do this: the checker proves safe kernels free
        of it. `RaceError` names the tensor, the element and both blocks.

        Example:

            @cutile.entry(unsafe=True)
            def k(z: Mut[Tensor[f32, [16]]]):
                z.store_unchecked(zeros((16,), f32), (0,))    # every block writes tile 0

            with cutile.check_races():
                k(api.zeros([64], f32).partition([16])).sync()
                # [CT6911] k: blocks (0, 0, 0) and (1, 0, 0) both write z[0] (my.py:3)

        Fix: give each block its own tiles, or make the kernel safe so the checker proves it.
    """,
    "CT6912": """
        The race detector saw one tile block read an element that another block writes in
        the same launch, so the value read depends on the blocks' order. The checker
        refuses such kernels (reading another block's tile of an output is CT1005 /
        CT1007, even inside `unsafe`), so this is seen when a rejected kernel runs
        unchecked, as the soundness tests replay the checker's counterexamples.

        Example:

            def reads_previous_tile(z: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1]]):
                z.store(load_tile_like(x, z))
                t = z.load(index=((block_id(0) + 3) % 4,))    # the previous block's tile
                z.store(t, index=(block_id(0),))
            # run unchecked under the detector:
            # [CT6912] k: block (1, 0, 0) reads z[0], which block (0, 0, 0) writes

        Fix: read inputs from a tensor no block writes, or only the block's own tile.
    """,
    "CT6913": """
        The race detector saw an access outside its tensor argument (or outside a
        partition's index space): an unchecked index past the end. (`unsafe` kernels
        only; safe kernels' indices are proved or guarded.)

        Example:

            @cutile.entry(unsafe=True)
            def k(z: Mut[Tensor[f32, [16]]]):
                z.store_unchecked(zeros((16,), f32), (block_id(0) + 1,))

            with cutile.check_races():
                k(api.zeros([64], f32).partition([16])).sync()
                # [CT6913] k: block (3, 0, 0) writes tile [4] of `z`, outside its index space [4]

        Fix: keep unchecked indices inside the partition's tile grid.
    """,
}
