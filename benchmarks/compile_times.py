"""Time to first launch: cold (frontend + checker + lowering + tileiras) and with the disk
cache warm (a fresh process, cubin read from ~/.cache/cutile), for the add and exp2d
examples. Each measurement runs in its own Python process.

    python benchmarks/compile_times.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r'''
import sys, time, json
sys.path.insert(0, {examples!r})
t0 = time.perf_counter()
import numpy as np
import cutile
from cutile import api
from cutile.core import f32
from add import add
from exp2d import exp2d
t1 = time.perf_counter()
x = api.from_numpy(np.ones(4096, np.float32))
z = api.zeros([4096], f32).partition([1024])
t2 = time.perf_counter()
z, x, _ = add(z, x, x).sync()
t3 = time.perf_counter()
a = api.from_numpy(np.ones((256, 256), np.float32))
w = api.zeros([256, 256], f32).partition([64, 128])
t4 = time.perf_counter()
w, a = exp2d(w, a).sync()
t5 = time.perf_counter()
print(json.dumps({{"import_s": t1 - t0, "add_first_launch_s": t3 - t2,
                   "exp2d_first_launch_s": t5 - t4}}))
'''


def run(cache: str) -> dict[str, float]:
    env = dict(os.environ, CUTILE_CACHE_DIR=cache)
    code = PROBE.format(examples=str(ROOT / "examples"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=600)
    if r.returncode:
        raise SystemExit(r.stderr)
    return dict(json.loads(r.stdout.strip().splitlines()[-1]))


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        cold = run(cache)
        warm = [run(cache) for _ in range(3)]
    best = {k: min(w[k] for w in warm) for k in warm[0]}
    print(json.dumps({"cold": cold, "warm_best_of_3": best}, indent=2))
    print(f"{'':<24}{'cold (s)':>10}{'disk cache (ms)':>18}")
    for k in ("add_first_launch_s", "exp2d_first_launch_s"):
        print(f"{k:<24}{cold[k]:>10.3f}{best[k] * 1e3:>18.1f}")


if __name__ == "__main__":
    main()
