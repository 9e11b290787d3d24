"""Host-side numerics the engine's tests compare with: f32 copies of arrays and bf16
rounding (what the kernels store), shared by the kernel, prefill and small-kernel tests."""

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
