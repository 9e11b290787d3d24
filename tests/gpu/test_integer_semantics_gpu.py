"""What the H200 computes where the checker's integer model and the interpreter must agree
with it (an adversarial review, 2026-12-01). Each test asserts what the interpreter does.

- Narrow integers (a `u8` scalar, an `i8` merged after an `if`) wrap in their own width,
  and `int(x)` of an `i64` truncates to `i32`. The checker once read them as exact 32-bit
  values and accepted kernels that then raced (`test_known_classes.py`,
  `test_new_narrow_integers_in_an_index`); it now follows no arithmetic on them.
- Device asserts: every obligation the checker discharges on the device relies on a failed
  Tile IR `assert` stopping the kernel on the H200.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import cutile
from cutile import api
from cutile.core import Mut, Tensor, block_id, full, i8, i32, i64, u8, u32

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


@cutile.entry
def narrow_values(z: Mut[Tensor[i32, [4]]], s: u8, t: i8, q: i64):
    w = s + 0
    c = (w + 200) + 100 - w           # u8: 300 mod 256 = 44, not 300
    v = t
    if t > 0:
        v = t + 1
    d = (v + 100) + 100 - v           # i8: 200 - 256 = -56, not 200
    e = min(int(q), 0)                # int() of the i64 2**32 - 5 truncates: -5, not 0
    k = block_id(0)
    z.store(full((4,), 0, i32) + (c + k * 0) * (k == 0) + (d + k * 0) * (k == 1)
            + e * (k == 2))


@cutile.entry
def device_checked_load(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]], s: u32):
    z.store(x.load_tile((4,), (s,)))  # obligation `bounds`, discharged on the device


def test_narrow_integers_wrap_in_their_type() -> None:
    z = api.zeros([12], i32).partition([4])
    z = narrow_values(z, 0, 0, 2**32 - 5).sync()[0]
    got = z.unpartition().to_numpy().reshape(3, 4)[:, 0].tolist()
    # [300, 200, 0] would mean the GPU computes these in 32/64 bits: the interpreter would
    # then be wrong about narrow integers and int() (and the checker right by accident)
    assert got == [44, -56, -5]


_ASSERT_SCRIPT = """
import numpy as np, cutile
from cutile import api
from cutile.core import i32
from tests.gpu.test_integer_semantics_gpu import device_checked_load
z = api.zeros([4], i32).partition([4])
x = api.from_numpy(np.arange(8, dtype=np.int32))
try:
    device_checked_load(z, x, 1000).sync()
except cutile.CutileError as err:
    print("CODE", err.code)
else:
    print("RAN")
"""


def test_a_device_assert_stops_the_kernel() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", _ASSERT_SCRIPT], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    # "RAN" would mean a failed Tile IR `assert` does not stop the kernel on the H200:
    # every obligation the checker discharges on the device would then be unchecked
    assert "CODE CT6903" in done.stdout, done.stdout + done.stderr
