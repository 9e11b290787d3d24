"""CT7xxx (the Tile IR assembler, `CompileError`) and CT9xxx (bugs in cutile)."""

TEXTS: dict[str, str] = {
    "CT7001": """
        No `tileiras` (NVIDIA's Tile IR assembler) was found: not in `CUTILE_TILEIRAS`,
        not installed with the `tileiras` extra, not on `PATH`. It is needed to build a
        cubin (a GPU launch, `kernel.compile(...)`); the CPU interpreter does not need it.

        Example:

            add.compile(B=128)          # [CT7001] no tileiras found

        Fix: `python -m pip install 'cutile[tileiras]'`; `python -m cutile info` shows
        what was found.
    """,
    "CT7002": """
        `CUTILE_TILEIRAS` is set but does not name an executable file.

        Example:

            $ CUTILE_TILEIRAS=/opt/missing/tileiras python -c "import m; m.add.compile(B=128)"
            [CT7002] CUTILE_TILEIRAS=/opt/missing/tileiras is not an executable

        Fix: point `CUTILE_TILEIRAS` at a tileiras binary, or unset it.
    """,
    "CT7003": """
        `tileiras --version` (or the bytecode versions it lists) could not be read, so
        cutile cannot tell which Tile IR bytecode to write.

        Example:

            add.compile(B=128)          # [CT7003] `/usr/bin/tileiras --version` failed

        Fix: reinstall the `tileiras` extra (`nvidia-cuda-tileiras`, `nvidia-cuda-nvcc`,
        `nvidia-nvvm` of one release).
    """,
    "CT7004": """
        tileiras rejected the generated program, or exited without writing a cubin. The
        error carries tileiras's log and the kernel's line where it is known. A target it
        does not know (`target="sm_xx"`) ends here too.

        Example:

            add.compile(target="sm_xx", B=128)
            # [CT7004] tileiras rejected the kernel for sm_xx: ... Cannot find option named 'sm_xx'!

        Fix: use a target tileiras supports (`sm_90`, `sm_100`, ...); anything else is a
        cutile bug: please report it with the kernel and the log.
    """,
    "CT7005": """
        tileiras ran longer than its time limit (very large tiles make very long
        compiles).

        Example:

            big.compile(B=1 << 22)      # [CT7005] tileiras timed out after 300 s

        Fix: smaller tiles compile faster; `CUTILE_TILEIRAS_TIMEOUT` (seconds) raises the
        limit. `cutile.autotune(..., compile_timeout=60)` gives each candidate a limit of
        its own: one that runs past it is skipped (with this code), not waited for.
    """,
    "CT7006": """
        `compiled.ir_text()` needs `tileirdisasm` next to tileiras, and it is missing.

        Example:

            add.compile(B=128).ir_text()    # [CT7006] no tileirdisasm next to /usr/bin/tileiras

        Fix: tileirdisasm ships with nvidia-cuda-tileiras 13.4 and newer.
    """,
    "CT7007": """
        The kernel needs a newer Tile IR bytecode than the installed `tileiras` reads. A
        kernel with programmatic dependent launch (`@cutile.entry(pdl=True)`) uses the
        grid-dependency ops `gdc_wait_tko` and `gdc_launch_dependents_tko`, which exist
        from bytecode 13.4; every other kernel is written as 13.3. cutile refuses before
        writing the bytecode, and never falls back to a kernel without the ops: that would
        be a different kernel from the one asked for (`tileiras --list-versions` prints
        what an assembler reads; `python -m cutile info` too).

        Example:

            @cutile.entry(pdl=True)
            def step(z: Mut[Tensor[f32, ["B"]]], B: Const[int]): ...

            step.compile(B=128)
            # [CT7007] `step` (its `gdc_wait_tko`) needs Tile IR bytecode 13.4, and the
            # assembler /usr/local/cuda/bin/tileiras reads versions up to 13.3

        Fix: install tileiras 13.4 or newer (`pip install 'cutile[tileiras]'`), or compile
        without programmatic dependent launch: `pdl=False`, `kernel.with_hints(pdl=False)`,
        or `CUTILE_PDL=0` for every kernel.
    """,
    "CT9001": """
        An internal error: an invariant inside cutile broke (a Rust panic caught at the
        boundary, or a state that cannot happen). It is a bug in cutile, not in the
        program.

        Example:

            add(z, x, y).sync()     # [CT9001] internal error in cutile._native: ...

        Fix: please report it with the kernel and the arguments that triggered it.
    """,
    "CT9002": """
        An internal error in the compiler: the Tile IR it generated failed its own
        verifier, or the lowering met a construct the frontend should have refused.

        Example:

            add.compile(B=128)      # [CT9002] invalid Tile IR (1 problem): ...

        Fix: please report it with the kernel and its `Const` values.
    """,
}
