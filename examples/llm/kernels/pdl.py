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

# Decode attention on the "heads" and "fused" paths loads the position first (its
# predecessor, `qkv_heads` or the QKV GEMV, reads it at most): ahead of the wait, the key
# and value tiles' addresses are known as soon as the wait returns (`Plan.pos_early`).
EARLY_POSITION = {"attn_decode_q": ("pos",), "attn_decode_qkv": ("pos",)}


@functools.cache
def with_pdl(kernel: cutile.EntryKernel, early: bool = True,
             position: bool = True) -> cutile.EntryKernel:
    """`kernel` compiled and launched with programmatic dependent launch (one twin per
    kernel, so each compiles once); with `early`, a GEMV's first weight loads and the
    "ahead" attention's first loads ahead of the wait, and with `position` too decode
    attention's position load."""
    names: tuple[str, ...] = ()
    if early:
        names = EARLY_LOADS.get(kernel.name, ("w",) if kernel.name in EARLY_WEIGHTS else ())
        if position:
            names = EARLY_POSITION.get(kernel.name, names)
    return kernel.with_hints(pdl=True, pdl_early=names)
