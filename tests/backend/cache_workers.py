"""Code that runs in child processes of the cache concurrency tests (a module of its own,
so that `multiprocessing`'s spawn can import it)."""

from __future__ import annotations

from typing import Any

BYTECODE = b"\x7fTileIR\x00\x0d\x03\x00\x00one kernel, many processes"


def compile_once(barrier: Any, results: Any) -> None:
    from cutile.backend.cache import compile_cubin

    barrier.wait()  # every process asks at once
    results.put(compile_cubin(BYTECODE, "sm_90").cubin)
