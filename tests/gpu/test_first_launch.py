"""The first launch of a cached kernel in a fresh process loads its cubin from the launch
cache: the lowering and the bytecode writer are never imported, and the result is right."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
PROBE = r"""
import json, sys, time
sys.path.insert(0, {examples!r})
import numpy as np
from cutile import api
from cutile.core import f32
from add import add
x = api.from_numpy(np.arange(4096, dtype=np.float32))
z = api.zeros([4096], f32).partition([1024])
t = time.perf_counter()
z, x, _ = add(z, x, x).sync()
ms = (time.perf_counter() - t) * 1e3
ok = bool((z.unpartition().to_numpy() == 2 * np.arange(4096)).all())
print(json.dumps({{"ms": ms, "ok": ok, "lowered": "cutile.lowering.lower" in sys.modules,
                   "bytecode": "cutile.backend.bytecode.writer" in sys.modules}}))
"""


def run(cache: Path) -> dict[str, object]:
    env = dict(os.environ, CUTILE_CACHE_DIR=str(cache))
    env.pop("CUTILE_BACKEND", None)
    env.pop("CUTILE_DUMP", None)
    out = subprocess.run([sys.executable, "-c", PROBE.format(examples=str(ROOT / "examples"))],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_a_cached_kernel_loads_without_lowering(tmp_path: Path) -> None:
    cold = run(tmp_path)
    assert cold["ok"] and cold["lowered"]
    warm = run(tmp_path)
    assert warm["ok"]
    assert not warm["lowered"] and not warm["bytecode"], warm
    print(f"first launch: cold {cold['ms']:.1f} ms, from the launch cache {warm['ms']:.1f} ms")
