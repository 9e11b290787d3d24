"""The engine's kernels with programmatic dependent launch (`Plan.pdl`).

A decode step is ~250 dependent kernels on one stream. With PDL each one is launched so
that its blocks become resident while the kernel before it finishes, and wait (their first
op, `griddepcontrol.wait`) for that kernel's completion before touching memory: the
launch gap and ramp-up of each kernel hide behind the tail of the previous one, and what
every kernel computes is unchanged (docs/pdl.md). The twin of a kernel is the same kernel
(same body, same proof) compiled with `pdl=True`."""

from __future__ import annotations

import functools

import cutile


@functools.cache
def with_pdl(kernel: cutile.EntryKernel) -> cutile.EntryKernel:
    """`kernel` compiled and launched with programmatic dependent launch (one twin per
    kernel, so each compiles once)."""
    return kernel.with_hints(pdl=True)
