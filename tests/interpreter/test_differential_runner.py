"""The op runner of the GPU-vs-interpreter differential test (tests/gpu/differential_ops.py)
works without a GPU: every op's kernel runs on the interpreter, under the race detector,
on the awkward inputs, and produces a result of the declared size."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def test_every_differential_op_runs_on_the_interpreter(tmp_path: Path) -> None:
    out = tmp_path / "cpu.npz"
    env = dict(os.environ, CUTILE_BACKEND="interpreter", CUTILE_INTERPRET="check")
    done = subprocess.run([sys.executable, "-m", "tests.gpu.differential_ops", str(out)],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    got = dict(np.load(out))
    assert len(got) >= 35
    assert got["add"].shape == (1000,) and got["row_cumsum"].shape == (8, 200)
    x = got["exp"]
    assert np.isnan(x).any() and np.isinf(x).any()   # the specials went through
