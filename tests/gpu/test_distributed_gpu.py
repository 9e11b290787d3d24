"""Collectives through torch.distributed (NCCL) in processes started by torchrun: one
process on one GPU (NCCL with one rank), and two processes on two GPUs (skipped with
fewer); each runs tests/gpu/distributed_checks.py, and the two-GPU case runs
examples/multi_gpu.py too. Needs torch with NCCL (skipped without)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import cutile

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
CHECKS = Path(__file__).resolve().parent / "distributed_checks.py"


def torchrun(nproc: int, script: Path, *args: str) -> str:
    pytest.importorskip("torch")
    if cutile.device_count() < nproc:
        pytest.skip(f"needs {nproc} GPUs visible to the process")
    env = dict(os.environ)
    env.pop("CUTILE_BACKEND", None)
    # the cutile this test imported (the checkout's, or an installed wheel), and the repo
    # root for the scripts' own imports
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(cutile.__file__).resolve().parents[1]), *(p for p in sys.path if p), str(ROOT)])
    out = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone",
         f"--nproc-per-node={nproc}", str(script), *args],
        env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-8000:]
    return out.stdout


@pytest.mark.parametrize("nproc", [1, 2])
def test_collectives_under_torchrun(nproc: int) -> None:
    stdout = torchrun(nproc, CHECKS)
    assert sorted(line for line in stdout.splitlines() if line.endswith(": ok")) == [
        f"rank {r}: ok" for r in range(nproc)]


def test_the_multi_gpu_example_on_two_gpus() -> None:
    stdout = torchrun(2, ROOT / "examples" / "multi_gpu.py", "--rows", "4096", "--cols", "4096",
                      "--depth", "4096", "--chunks", "2", "--reps", "3")
    lines = [line for line in stdout.splitlines() if line.startswith("multi_gpu:")]
    assert len(lines) == 2 and all("on 2 rank(s)" in line and "nccl" in line for line in lines)
    print("\n".join(lines))
