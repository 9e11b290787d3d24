"""CT8xxx: settings cutile cannot use (`ConfigError`: environment variables, the command
line) and cutile's warnings (`CutileWarning`)."""

TEXTS: dict[str, str] = {
    "CT8001": """
        `CUTILE_BACKEND` has a value cutile does not know. It picks where kernels run:
        `gpu`, `interpreter` (or `cpu`), or empty / unset for the GPU when there is one and
        the interpreter otherwise. An unknown value is an error, never a silent fallback.

        Example:

            $ CUTILE_BACKEND=cuda python my_program.py
            [CT8001] CUTILE_BACKEND='cuda' is not one of `gpu`, `interpreter`, `cpu`

        Fix: `CUTILE_BACKEND=gpu`, `CUTILE_BACKEND=interpreter`, or unset it.
    """,
    "CT8002": """
        `CUTILE_DEVICE` is not the ordinal (0, 1, ...) of a device this process has: the
        index of the GPU work goes to by default (on the interpreter, of a device it
        models, `CUTILE_INTERPRETER_DEVICES`).

        Example:

            $ CUTILE_DEVICE=gpu1 python my_program.py
            [CT8002] CUTILE_DEVICE='gpu1' is not the ordinal of one of the 2 visible GPUs

        Fix: `CUTILE_DEVICE=1`, or unset it for GPU 0 (`nvidia-smi -L` lists them;
        `CUDA_VISIBLE_DEVICES` decides which ones the process sees, renumbered from 0).
    """,
    "CT8003": """
        `CUTILE_CACHE_MAX` (or `python -m cutile cache --max`) is not a size: the bound of
        the cubin cache on disk, a number of bytes with an optional `K`, `M` or `G`.

        Example:

            $ CUTILE_CACHE_MAX=lots python my_program.py
            [CT8003] CUTILE_CACHE_MAX='lots' is not a size

        Fix: `CUTILE_CACHE_MAX=500M` or `2G`; unset it for the default.
    """,
    "CT8004": """
        `CUTILE_LOG` is not `debug`, `info` or `warning`. This is a warning
        (`cutile.CutileWarning` with `code == "CT8004"`), not an error: logging stays as the
        program configured it.

        Example:

            $ CUTILE_LOG=verbose python my_program.py
            CutileWarning: [CT8004] CUTILE_LOG='verbose' is not one of ...; logging stays as
            the program configured it

        Fix: `CUTILE_LOG=debug` (every compile and launch), `info` or `warning`.
    """,
    "CT8005": """
        `CUTILE_DUMP` names a stage that does not exist. It lists the stages whose output is
        written to disk (comma-separated): `kast`, `facts`, `ir`, `bytecode`, `cubin`,
        `sass`, or `all`.

        Example:

            $ CUTILE_DUMP=ptx python my_program.py
            [CT8005] CUTILE_DUMP names an unknown stage `ptx`

        Fix: `CUTILE_DUMP=ir,sass` (Tile IR has no PTX stage; `sass` is the machine code).
    """,
    "CT8006": """
        `CUTILE_TILEIRAS_TIMEOUT` is not a number of seconds above 0 (how long one tileiras
        run may take).

        Example:

            $ CUTILE_TILEIRAS_TIMEOUT=10m python my_program.py
            [CT8006] CUTILE_TILEIRAS_TIMEOUT='10m' is not a number of seconds above 0

        Fix: `CUTILE_TILEIRAS_TIMEOUT=600`, or unset it for the default.
    """,
    "CT8007": """
        `CUTILE_STREAMS` is not a stream count from 1 to 64: how many streams the pool
        has that ops take in turn when no stream is chosen (`cutile.stream()`).

        Example:

            $ CUTILE_STREAMS=many python my_program.py
            [CT8007] CUTILE_STREAMS='many' is not a stream count from 1 to 64

        Fix: `CUTILE_STREAMS=4` (the default), `CUTILE_STREAMS=1` to run every op on one
        stream, or unset it.
    """,
    "CT8008": """
        `CUTILE_PDL` is not `0` or `1`. It turns programmatic dependent launch off for
        every kernel (`0`, also `off`, `false`, `no`), or leaves it to each kernel's
        `@cutile.entry(pdl=...)` (`1`, also `on`, `true`, `yes`, or unset). It is read when
        a kernel is compiled, and an unknown value is an error, never a silent choice.

        Example:

            $ CUTILE_PDL=maybe python my_program.py
            [CT8008] CUTILE_PDL='maybe' is not one of `0`, `off`, `false`, ...

        Fix: `CUTILE_PDL=0` to compare a program without programmatic dependent launch,
        or unset it.
    """,
    "CT8009": """
        `CUTILE_INTERPRETER_DEVICES` is not a device count from 1 to 16: how many devices
        the CPU interpreter models, so that programs using several devices (`device=`,
        `t.to(i)`, tensors of two devices refused in one launch) run without a GPU.

        Example:

            $ CUTILE_BACKEND=interpreter CUTILE_INTERPRETER_DEVICES=many python prog.py
            [CT8009] CUTILE_INTERPRETER_DEVICES='many' is not a device count from 1 to 16

        Fix: `CUTILE_INTERPRETER_DEVICES=2`, or unset it for one device.
    """,
    "CT8010": """
        A file named on the command line (`python -m cutile check FILE`, `compile FILE`)
        does not exist or is not a file.

        Example:

            $ python -m cutile check kernels/ad.py
            [CT8010] no such file: kernels/ad.py

        Fix: check the path; it is relative to the working directory.
    """,
    "CT8011": """
        A file named on the command line raised an error while it was imported (the CLI
        imports it to find its kernels), or is not Python source.

        Example:

            $ python -m cutile check broken.py
            [CT8011] cannot import broken.py: NameError: name 'f33' is not defined

        Fix: `python broken.py` shows the error with its traceback.
    """,
    "CT8012": """
        A `-D` option of `python -m cutile compile` is not `NAME=VALUE` with an integer, a
        float, `True` or `False`.

        Example:

            $ python -m cutile compile add.py -k add -D B
            [CT8012] -D B: expected NAME=VALUE

        Fix: one `-D` per Const parameter: `-D B=128`.
    """,
    "CT8013": """
        The `-D` options of `python -m cutile compile` do not match the kernel's `Const`
        parameters: one the kernel does not have, one given twice, or one missing.

        Example:

            $ python -m cutile compile add.py -k add -D C=1
            [CT8013] `add` has no Const parameter `C`

        Fix: give each of the kernel's `Const` parameters once (the hint lists them).
    """,
    "CT8014": """
        The `-o` output file of `python -m cutile compile` cannot be written.

        Example:

            $ python -m cutile compile add.py -k add -D B=128 -o /no/such/dir/add.cubin
            [CT8014] cannot write -o /no/such/dir/add.cubin: No such file or directory

        Fix: name a file in a directory that exists and is writable.
    """,
    "CT8015": """
        `python -m cutile compile FILE -k NAME` names a kernel the file does not define.

        Example:

            $ python -m cutile compile add.py -k sub -D B=128
            [CT8015] no kernel `sub` in add.py

        Fix: use one of the kernels the hint lists (the `@cutile.entry` functions of the
        file).
    """,
    "CT8016": """
        `python -m cutile explain CODE` got a code that does not exist.

        Example:

            $ python -m cutile explain CT1234
            [CT8016] unknown error code CT1234

        Fix: `python -m cutile explain` lists every code with its summary.
    """,
    "CT8020": """
        A compiler hint of `@cutile.entry(...)` (or `kernel.with_hints(...)`) is out of
        range. Hints tell tileiras how to compile the kernel, never what it computes:
        `num_ctas` (CTAs per cluster: 1, 2, 4, 8 or 16), `occupancy` (blocks per SM it should
        aim for: 1 to 32), `num_worker_warps` (a power of two from 1 to 32), `opt_level` (0 to
        3). Each may be one value or `cutile.ByTarget(sm_90=..., default=...)`. `pdl`
        (programmatic dependent launch, docs/pdl.md) is `True` or `False`; `pdl_early` is a
        tuple naming read-only tensor parameters (`Tensor[...]`, not `Mut`, `Atomic`,
        scalars or pointers) whose first loads may run ahead of the PDL wait. `fp_contract`
        (products fused into the adds that use them, one rounding) is `True` or `False`.

        Example:

            @cutile.entry(num_ctas=3)
            def gemm(...): ...
            [CT8020] `num_ctas=3` is not a power of two from 1 to 16

            @cutile.entry(pdl=True, pdl_early=("y",))     # y: Mut[Tensor[...]]
            def gemv(y, w, x, ...): ...
            [CT8020] `pdl_early` names `y` of `gemv`, a `mut_tensor` parameter

        Fix: a value in range, e.g. `num_ctas=2`, or `ByTarget(sm_100=4, default=1)`; for
        `pdl_early`, the names of read-only tensor parameters, e.g. `pdl_early=("w",)`.
    """,
    "CT8021": """
        An autotune search space cannot be used as written: `cutile.Config` got a value
        that is not a `Const` value (an int, float or bool) or a `num_blocks` below 1, the
        configs name a `Const` the kernel does not have, `key` names a parameter the kernel
        does not have, or the call passes a `Const` that the configs tune.

        Example:

            tuned = cutile.autotune(matmul, configs=[cutile.Config({"BM": 64, "BK": 32})])
            tuned(z, x, y, BK=16)
            [CT8021] `BK` is tuned by the configs of `matmul`; the call cannot also set it

        Fix: name only the kernel's `Const`s and parameters, and leave the tuned `Const`s
        to the configs (pass the others at the call, as to the kernel itself).
    """,
    "CT8022": """
        No config of an autotune search space survived for this call. Every config is
        checked with its `Const` values (tile sizes must be powers of two, tiles at most
        2^24 elements, ...), bound to the call's arguments and compiled before it is timed;
        one that fails is skipped (logged on the `cutile.autotune` logger at level INFO),
        and here every one failed. `err.failures` lists each config with its error.

        Example:

            tuned = cutile.autotune(matmul, configs=[cutile.Config({"BM": 48, "BN": 48})])
            tuned(z, x, y, BK=16)
            [CT8022] no config of `matmul` can run these arguments (1 tried): ...

        Fix: give tile sizes that are powers of two and small enough for the kernel, and
        read `CUTILE_LOG=info` output for each config's reason.
    """,
    "CT8023": """
        `CUTILE_AUTOTUNE` has a value cutile does not know. It says what `cutile.autotune`
        does on a call whose choice is not cached: `1` (or unset) benchmarks the configs,
        `0` uses the first valid config without benchmarking (and caches nothing), and
        `retune` benchmarks again even where a choice is cached on disk.

        Example:

            $ CUTILE_AUTOTUNE=fast python my_program.py
            [CT8023] CUTILE_AUTOTUNE='fast' is not one of `1`, `0`, `retune`, ...

        Fix: `CUTILE_AUTOTUNE=0`, `1` or `retune`, or unset it.
    """,
    "CT8901": """
        The cubin cache directory cannot be used (it is not writable, say). A warning
        (`cutile.CacheWarning`), once per directory and process: kernels still compile,
        only without the cache, so every process compiles them again.

        Example:

            $ CUTILE_CACHE_DIR=/read-only/dir python my_program.py
            CacheWarning: [CT8901] the cubin cache at /read-only/dir cannot be written: ...

        Fix: point `CUTILE_CACHE_DIR` at a writable directory, or set it to `off`.
    """,
    "CT8902": """
        An op was dropped before anything ran it (`cutile.OpNeverRunWarning`, like Python's
        "coroutine was never awaited"). Calling a kernel only builds an op; `.sync()` or
        `await` runs it. The warning points at the line that made the op, and the tensors
        moved into it stay unusable: reading one raises `BorrowError` CT5009.

        Example:

            add(z, x, y)        # builds the op, which is dropped at once
            # my.py:12: OpNeverRunWarning: [CT8902] `add` (op #1), made at my.py:12, was
            #   dropped without running: the kernel never ran, and `z`, `x`, `y` moved
            #   into it stay unusable
            z.to_numpy()        # [CT5009] cannot read: `z` was moved into `add` (op #1), ...

        Fix: `z, x, y = add(z, x, y).sync()` (or `await add(z, x, y)`).
    """,
}
