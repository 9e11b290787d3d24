"""The examples on the GPU (random inputs, every element checked), and the interpreter
agreeing with the GPU bit for bit on the same kernel and inputs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["add", "saxpy", "exp2d", "fp8_gemm", "raw_kernel",
                                  "interop_torch", "streams", "async_pipeline", "cuda_graph",
                                  "multi_gpu"])
def test_example_on_gpu(name: str) -> None:
    env = dict(os.environ)
    env.pop("CUTILE_BACKEND", None)
    out = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "interpreter" not in out.stderr
    print(out.stdout)


def test_gpu_and_interpreter_agree_on_add() -> None:
    code = (
        f"import numpy as np, sys; sys.path.insert(0, {str(EXAMPLES)!r})\n"
        "from add import add\n"
        "from cutile import api\n"
        "from cutile.core import f32\n"
        "rng = np.random.default_rng(7)\n"
        "xs = rng.standard_normal(10007, dtype=np.float32)\n"
        "ys = rng.standard_normal(10007, dtype=np.float32)\n"
        "z = api.full([10007], np.nan, f32).partition([256])\n"
        "z, _, _ = add(z, api.from_numpy(xs), api.from_numpy(ys)).sync()\n"
        "np.save(sys.argv[1], z.unpartition().to_numpy())\n"
    )
    results = []
    for backend in ("gpu", "interpreter"):
        path = Path(f"/tmp/cutile_agree_{backend}.npy")
        env = dict(os.environ, CUTILE_BACKEND=backend)
        r = subprocess.run([sys.executable, "-c", code, str(path)], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        results.append(np.load(path))
    np.testing.assert_array_equal(results[0], results[1])
