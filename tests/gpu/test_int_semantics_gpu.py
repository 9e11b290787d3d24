"""The GPU computes the language's integer semantics as the interpreter does, bit for bit:
every kernel of `int_semantics_ops.py` (wrapping arithmetic, Python division, shifts by
every amount, comparisons, powers in each integer type; float -> int of NaN, infinities
and values past each type's end; int -> float at the values a double rounding gets wrong)
runs in one subprocess per backend on the same inputs and the files are compared result by
result. `tests/kernels/test_int_semantics.py` pins the interpreter's side to exact
integers, so a difference here is the GPU's (or tileiras') to explain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(backend: str, out: Path) -> None:
    env = dict(os.environ, CUTILE_BACKEND=backend, CUTILE_INTERPRET="")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "tests.gpu.int_semantics_ops", str(out)],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr


def compare(gpu: dict[str, np.ndarray], cpu: dict[str, np.ndarray]) -> dict[str, object]:
    """Each result: bit for bit, or the first elements that differ (index, GPU, CPU)."""
    report: dict[str, object] = {}
    for name in sorted(cpu):
        g, c = np.ascontiguousarray(gpu[name]), np.ascontiguousarray(cpu[name])
        if g.dtype != c.dtype or g.shape != c.shape:
            report[name] = {"ok": False, "why": f"{g.dtype}{g.shape} vs {c.dtype}{c.shape}"}
            continue
        bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[g.dtype.itemsize]
        differ = np.flatnonzero(g.view(bits) != c.view(bits))
        report[name] = {"ok": differ.size == 0, "differ": int(differ.size),
                        "first": [[int(i), g.flat[i].item(), c.flat[i].item()]
                                  for i in differ[:5]]}
    return report


@pytest.mark.gpu
def test_gpu_and_interpreter_agree_on_integer_semantics(tmp_path: Path) -> None:
    _run("gpu", tmp_path / "gpu.npz")
    _run("interpreter", tmp_path / "cpu.npz")
    gpu, cpu = dict(np.load(tmp_path / "gpu.npz")), dict(np.load(tmp_path / "cpu.npz"))
    assert sorted(gpu) == sorted(cpu)
    report = compare(gpu, cpu)
    target = os.environ.get("OUT")
    if target:
        Path(target, "int_semantics.json").write_text(json.dumps(report, indent=1))
    bad = {k: v for k, v in report.items() if not v["ok"]}  # type: ignore[index]
    assert not bad, json.dumps(bad, indent=1)


def test_the_comparison_finds_one_flipped_bit() -> None:
    a = {"x": np.array([1.0, np.nan, -0.0], np.float32), "y": np.array([3, -1], np.int8)}
    b = {"x": np.array([1.0, np.nan, 0.0], np.float32), "y": np.array([3, -1], np.int8)}
    report = compare(a, b)
    assert report["y"]["ok"] and not report["x"]["ok"]  # type: ignore[index]
    assert report["x"]["first"][0][0] == 2  # type: ignore[index]
