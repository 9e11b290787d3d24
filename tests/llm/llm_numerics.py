"""Host-side numerics the engine's tests compare with: f32 copies of arrays and bf16
rounding (what the kernels store), and the fused gate/up + SwiGLU reference, shared by the
kernel, prefill, small-kernel and GEMV tests."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

BF16 = ml_dtypes.bfloat16


def f32_of(a: Any) -> np.ndarray:
    return np.asarray(a).astype(np.float32)


def bf16_round(a: Any) -> np.ndarray:
    """`a` rounded to bf16 (nearest even), as f32."""
    return f32_of(np.asarray(a, np.float32).astype(BF16))


def swiglu_want(w: np.ndarray, x: np.ndarray, h: np.ndarray, i: int,
                eps: float = 1e-6) -> np.ndarray:
    """silu(g) * u of the MLP: g and u the first and second i rows of the fused weight `w`
    (already in the reference's float type) times the norm numerator `x`, each scaled by
    RMSNorm's factor of the residual `h`."""
    inv = 1 / np.sqrt((h * h).mean() + eps)
    g, u = (w[:i] @ x) * inv, (w[i:] @ x) * inv
    return g / (1 + np.exp(-g)) * u
