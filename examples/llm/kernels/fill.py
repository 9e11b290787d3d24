"""Filling and copying tensors on the device.

- `init_uniform_2d` / `init_uniform_1d`: seeded random weights, offset + scale * (2u - 1)
  with u = `sampling.uniform(flat index, seed)`: a model's billions of weights are made
  where they live, at memory speed, and the host can recompute any of them
  (`reference.uniform_weights`).
- `copy_tiles`: z = x, the measure of the copy bandwidth the roofline is computed from.
"""

from __future__ import annotations

import cutile
from cutile.core import Const, Mut, Tensor, arange, bf16, block_id, f32, i32, load_tile_like, u32

from .sampling import uniform


@cutile.entry
def init_uniform_2d(z: Mut[Tensor[bf16, ["BR", "BC"]]], seed: u32, scale: f32, offset: f32,
                    BR: Const[int], BC: Const[int]):
    rows = block_id(0) * BR + arange(BR, i32)
    cols = block_id(1) * BC + arange(BC, i32)
    flat = (rows[:, None] * z.shape[1] + cols[None, :]).astype(u32)
    z.store((offset + scale * (2.0 * uniform(flat, seed) - 1.0)).astype(bf16))


@cutile.entry
def init_uniform_1d(z: Mut[Tensor[bf16, ["B"]]], seed: u32, scale: f32, offset: f32,
                    B: Const[int]):
    flat = (block_id(0) * B + arange(B, i32)).astype(u32)
    z.store((offset + scale * (2.0 * uniform(flat, seed) - 1.0)).astype(bf16))


@cutile.entry
def copy_tiles(z: Mut[Tensor[bf16, ["B"]]], x: Tensor[bf16, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z))
