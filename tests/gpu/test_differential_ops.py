"""The interpreter computes what the GPU computes: every op of `differential_ops.py` runs on
the H200 and on the interpreter (one subprocess each, same inputs, NaN/±inf/±0/subnormals
and a ragged last tile mixed in), and the results agree bit for bit, or within the stated
ulp bound where the GPU approximates (transcendental functions, `rounding="approx"`) or
sums in another order (reductions, scans)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

# max ulp between GPU and interpreter (f32); absent: bit for bit (NaN equals NaN)
ULP_BOUNDS = {
    "exp": 2, "exp2": 2, "exp2_ftz": 2, "log": 2, "log2": 2, "rsqrt": 2,
    "sin": 2, "cos": 2, "tan": 4, "sinh": 4, "cosh": 4, "tanh": 4, "atan2": 4,
    "div_approx": 2, "fma": 1,
}
# relative tolerance: sums in another order
REL_BOUNDS = {"row_sum": 1e-5, "row_cumsum": 5e-5}


def _run(backend: str, out: Path) -> None:
    env = dict(os.environ, CUTILE_BACKEND=backend, CUTILE_INTERPRET="")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "tests.gpu.differential_ops", str(out)],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in f32 steps; NaN against NaN is 0, NaN against a number is huge."""
    def ordered(v: np.ndarray) -> np.ndarray:
        i = v.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    d = np.abs(ordered(a) - ordered(b))
    both_nan = np.isnan(a) & np.isnan(b)
    one_nan = np.isnan(a) ^ np.isnan(b)
    return np.where(both_nan, 0, np.where(one_nan, 2**40, d))


def compare(gpu: dict[str, np.ndarray], cpu: dict[str, np.ndarray]) -> dict[str, object]:
    report: dict[str, object] = {}
    for name in sorted(cpu):
        g, c = gpu[name], cpu[name]
        if name in REL_BOUNDS:
            err = float(np.max(np.abs(g - c) / np.maximum(np.abs(c), 1.0)))
            report[name] = {"rel": err, "ok": err <= REL_BOUNDS[name]}
        elif g.dtype == np.float32:
            worst = int(ulps(g, c).max())
            report[name] = {"ulp": worst, "ok": worst <= ULP_BOUNDS.get(name, 0)}
        else:
            same = g.view(np.uint8).tobytes() == c.view(np.uint8).tobytes()
            report[name] = {"exact": same, "ok": same}
        if not report[name]["ok"]:  # type: ignore[index]
            bits = {2: np.uint16, 4: np.uint32, 1: np.uint8}[g.dtype.itemsize]
            where = np.flatnonzero(g.view(bits) != c.view(bits))[:6]
            x = _inputs()["x"]
            report[name]["first"] = [  # type: ignore[index]
                [int(i), hex(int(g.view(bits).flat[i])), hex(int(c.view(bits).flat[i])),
                 float(x.flat[i]) if i < x.size else None] for i in where]
    return report


def _inputs() -> dict[str, np.ndarray]:
    sys.path.insert(0, str(ROOT))
    from tests.gpu.differential_ops import inputs

    return inputs()


@pytest.mark.gpu
def test_gpu_and_interpreter_agree_op_by_op(tmp_path: Path) -> None:
    _run("gpu", tmp_path / "gpu.npz")
    _run("interpreter", tmp_path / "cpu.npz")
    report = compare(dict(np.load(tmp_path / "gpu.npz")), dict(np.load(tmp_path / "cpu.npz")))
    target = os.environ.get("OUT")
    if target:
        Path(target, "differential_ops.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report))
    bad = {k: v for k, v in report.items() if not v["ok"]}  # type: ignore[index]
    assert not bad, bad
