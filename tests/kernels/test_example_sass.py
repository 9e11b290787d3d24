"""The tensor-core examples compile to Hopper's fast paths: the SASS of the GEMMs and of
flash attention (assembled for sm_90 by the real tileiras) uses warpgroup MMA (HGMMA) and
TMA loads (UTMALDG). A change that knocks a kernel off those paths (a device check in the
inner loop, a lost alignment fact) fails here, in CI, without a GPU."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_examples import AOT, load

pytestmark = pytest.mark.tileiras

FAST_PATH = [
    ("attention", "attention"), ("attention", "attention_causal"),
    ("persistent_gemm", "persistent_gemm"), ("batched_gemm", "batched_gemm"),
    ("swiglu_mlp", "swiglu_up"), ("swiglu_mlp", "down_proj"),
]


def _cuobjdump() -> Path | None:
    from cutile.backend.tileiras import find_tileiras

    beside = find_tileiras().path.with_name("cuobjdump")
    if beside.is_file() and beside.with_name("nvdisasm").is_file():
        return beside
    found = shutil.which("cuobjdump")
    return Path(found) if found and shutil.which("nvdisasm") else None


def sass_of(cubin: bytes, tmp_path: Path) -> str:
    dump = _cuobjdump()
    if dump is None:
        pytest.skip("cuobjdump/nvdisasm not installed (pip install nvidia-cuda-cuobjdump)")
    path = tmp_path / "k.cubin"
    path.write_bytes(cubin)
    env = dict(os.environ, PATH=f"{dump.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([str(dump), "-sass", str(path)], capture_output=True, text=True,
                          env=env, timeout=120, check=True)
    return done.stdout


@pytest.mark.parametrize(("example", "kernel"), FAST_PATH)
def test_tensor_core_examples_use_wgmma_and_tma(example: str, kernel: str,
                                               tmp_path: Path) -> None:
    k: Any = getattr(load(example), kernel)
    text = sass_of(k.compile(target="sm_90", **AOT[example][kernel]).cubin, tmp_path)
    assert "HGMMA" in text, f"{example}.{kernel}: no warpgroup MMA"
    assert "UTMALDG" in text, f"{example}.{kernel}: no TMA load"
