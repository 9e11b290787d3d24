"""Kernels and a reference for the programmatic-dependent-launch tests (`test_pdl.py`, and
`tests/gpu/test_pdl_gpu.py` on the GPU): a step that reads the *next* tile of what the
previous step wrote, so a step that ran ahead of its predecessor would read stale data
in another block's tile, not only in its own."""

from __future__ import annotations

from typing import Any

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, block_id, f32, load_tile_like, num_blocks

B = 256


@cutile.entry(pdl=True)
def shift_step(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]],
               B: Const[int]):
    """z[tile i] = x[tile i + 1 (mod tiles)] * 0.5 + y[tile i] (the product is exact, so an
    FMA or a multiply and an add give the same float)."""
    nxt = (block_id(0) + 1) % num_blocks(0)
    z.store(x.load_tile([B], nxt) * 0.5 + load_tile_like(y, z))


# the same kernel without PDL: a chain may mix the two (each keeps stream order)
shift_step_plain = shift_step.with_hints(pdl=False)
# ... and with the launch of dependents before its wait (a cascade of grids)
shift_step_first = shift_step.with_hints(pdl_trigger_first=True)


def reference(a: np.ndarray, y: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Both buffers after `steps` ping-pong steps (b = step(a), a = step(b), ...), in f32."""
    bufs = [a.astype(np.float32).copy(), np.zeros_like(a, dtype=np.float32)]
    for s in range(steps):
        src, dst = bufs[s % 2], bufs[(s + 1) % 2]
        dst[:] = np.roll(src, -B) * np.float32(0.5) + y
    return bufs[0], bufs[1]


def kernel_of(s: int, plain_every: int, first_every: int = 0) -> Any:
    """Step `s`'s kernel: PDL, except every `plain_every`-th step (0: never); every
    `first_every`-th of the others triggers its dependents before its wait (1: all)."""
    if plain_every and s % plain_every == plain_every - 1:
        return shift_step_plain
    return shift_step_first if first_every and s % first_every == 0 else shift_step


def run_chain(a0: np.ndarray, y0: np.ndarray, steps: int, plain_every: int = 0,
              first_every: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Both buffers after `steps` ping-pong steps launched as one flat `then` chain: back to
    back on one stream, no host wait in between (where PDL lets a kernel start early)."""
    def step(s: int) -> Any:
        def go(z: Any, x: Any, yy: Any) -> Any:
            return kernel_of(s, plain_every, first_every)(x.partition([B]), z.unpartition(),
                                                          yy)
        return go

    a, b, y = api.from_numpy(a0), api.zeros([a0.size], f32), api.from_numpy(y0)
    op = kernel_of(0, plain_every, first_every)(b.partition([B]), a, y)
    for s in range(1, steps):
        op = op.then(step(s))
    z, x, _ = op.sync()
    written, read = z.unpartition().to_numpy(), x.to_numpy()
    return (written, read) if steps % 2 == 0 else (read, written)


def chain_in_graph(a: Any, b: Any, y: Any, steps: int, plain_every: int = 0,
                   first_every: int = 0) -> Any:
    """For `cutile.graph`: the steps recorded in order; returns (a, b) as tensors."""
    for s in range(steps):
        src, dst = (a, b) if s % 2 == 0 else (b, a)
        z, x, y = kernel_of(s, plain_every, first_every)(dst.partition([B]), src, y).sync()
        if s % 2 == 0:
            a, b = x, z.unpartition()
        else:
            b, a = x, z.unpartition()
    return a, b
