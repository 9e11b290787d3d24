"""Kernels the GPU runtime tests share (imported by the test modules of this folder and by
`distributed_checks.py`, which torchrun starts as a script from here)."""

from __future__ import annotations

import numpy as np

import cutile
from cutile.core import Const, Mut, Tensor, f32, i32, load_tile_like


@cutile.entry
def smooth(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], steps: i32, B: Const[int]):
    """A kernel whose run time grows with `steps` (to keep the GPU busy); the result
    converges to x / 2."""
    v = load_tile_like(x, z)
    acc = v
    for _ in range(steps):
        acc = acc * 0.5 + v * 0.25  # converges to v / 2
    z.store(acc)


@cutile.entry
def axpb(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], a: f32, B: Const[int]):
    z.store(load_tile_like(x, z) * a + 1.0)


def rand(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)
