"""The tensor-core examples compile to Hopper's fast paths: the SASS of the GEMMs and of
flash attention (assembled for sm_90 by the real tileiras) uses warpgroup MMA (HGMMA) and
TMA loads (UTMALDG). A change that knocks a kernel off those paths (a device check in the
inner loop, a lost alignment fact) fails here, in CI, without a GPU."""

from __future__ import annotations

from typing import Any

import pytest
from test_examples import AOT, load

from cutile.dump import sass

pytestmark = pytest.mark.tileiras

FAST_PATH = [
    ("attention", "attention"), ("attention", "attention_causal"),
    ("persistent_gemm", "persistent_gemm"), ("batched_gemm", "batched_gemm"),
    ("swiglu_mlp", "swiglu_up"), ("swiglu_mlp", "down_proj"),
]


def sass_of(cubin: bytes) -> str:
    text = sass(cubin)
    if text is None:
        pytest.skip("cuobjdump/nvdisasm not installed (pip install nvidia-cuda-cuobjdump)")
    return text


@pytest.mark.parametrize(("example", "kernel"), FAST_PATH)
def test_tensor_core_examples_use_wgmma_and_tma(example: str, kernel: str) -> None:
    k: Any = getattr(load(example), kernel)
    text = sass_of(k.compile(target="sm_90", **AOT[example][kernel]).cubin)
    assert "HGMMA" in text, f"{example}.{kernel}: no warpgroup MMA"
    assert "UTMALDG" in text, f"{example}.{kernel}: no TMA load"
