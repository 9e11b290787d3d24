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

# The decode GEMVs and the LM head load their first weight tiles (`Plan.early_steps`, one
# by default) before anything else: with `pdl_early` those loads run ahead of the wait,
# while the kernel before finishes (the launcher keeps it in full stream order whenever
# something in flight writes the weights).
EARLY_WEIGHTS = frozenset({
    "gemv_norm_partial", "gemv_add", "lm_head_argmax", "gemv_norm_partial_loop",
    "gemv_add_loop", "gemv_swiglu", "gemv_norm_partial_ss", "gemv_norm_partial_ss_loop",
    "gemv_attn_add"})

# Decode attention on the "ahead" path loads the position and its share's first key and
# value tiles before anything else; its predecessor (`qkv_heads_new`) writes none of them.
EARLY_LOADS = {"attn_decode_ahead": ("pos", "kc", "vc")}


@functools.cache
def with_pdl(kernel: cutile.EntryKernel, early: bool = True,
             trigger_first: bool = False) -> cutile.EntryKernel:
    """`kernel` compiled and launched with programmatic dependent launch (one twin per
    kernel, so each compiles once); a GEMV's first weight load ahead of the wait unless
    `early` is False; `trigger_first`: the next kernel may be scheduled before this one's
    wait (`Plan.trigger_first`)."""
    names = EARLY_LOADS.get(kernel.name, ("w",) if kernel.name in EARLY_WEIGHTS else ())
    names = names if early else ()
    return kernel.with_hints(pdl=True, pdl_early=names, pdl_trigger_first=trigger_first)


@functools.cache
def with_contract(kernel: cutile.EntryKernel) -> cutile.EntryKernel:
    """`kernel` compiled with `fp_contract` (`Plan.fp_contract`; one twin per kernel)."""
    return kernel.with_hints(fp_contract=True)
