"""Time to import and to first launch, cutile beside cuTile Python: cold (frontend +
checker + lowering + tileiras) and with the disk cache warm (a fresh process; cutile reads
the cubin from its launch cache, `CUTILE_CACHE_DIR`), for a vector add (and cutile's exp2d
example). Each measurement runs in its own Python process; warm numbers are the best of 5.

    python benchmarks/compile_times.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CUTILE = r'''
import sys, time, json
sys.path.insert(0, {examples!r})
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import cutile
t2 = time.perf_counter()
from cutile import api
from cutile.core import f32
from add import add
from exp2d import exp2d
x = api.from_numpy(np.ones(4096, np.float32))
z = api.zeros([4096], f32).partition([1024])
t3 = time.perf_counter()
z, x, _ = add(z, x, x).sync()
t4 = time.perf_counter()
a = api.from_numpy(np.ones((256, 256), np.float32))
w = api.zeros([256, 256], f32).partition([64, 128])
t5 = time.perf_counter()
w, a = exp2d(w, a).sync()
t6 = time.perf_counter()
print(json.dumps({{"import_numpy_s": t1 - t0, "import_s": t2 - t1,
                   "add_first_launch_s": t4 - t3, "exp2d_first_launch_s": t6 - t5}}))
'''

CUTILE_PYTHON = r'''
import sys, time, json
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import cuda.tile as ct
t2 = time.perf_counter()
import torch

@ct.kernel
def ct_add(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(c, index=(bid,), tile=ct.load(a, index=(bid,), shape=(TILE,))
             + ct.load(b, index=(bid,), shape=(TILE,)))

x = torch.ones(4096, device="cuda")
c = torch.empty_like(x)
stream = torch.cuda.current_stream()
torch.cuda.synchronize()
t3 = time.perf_counter()
ct.launch(stream, (4, 1, 1), ct_add, (x, x, c, 1024))
torch.cuda.synchronize()
t4 = time.perf_counter()
print(json.dumps({{"import_numpy_s": t1 - t0, "import_s": t2 - t1,
                   "add_first_launch_s": t4 - t3}}))
'''


def run(code: str, env: dict[str, str]) -> dict[str, float]:
    # From a file: both DSLs read their kernels' source.
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(code)
    try:
        r = subprocess.run([sys.executable, f.name], env=env, capture_output=True, text=True,
                           timeout=600)
    finally:
        os.unlink(f.name)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return dict(json.loads(r.stdout.strip().splitlines()[-1]))


def measure(code: str, env: dict[str, str], runs: int = 5) -> dict[str, dict[str, float]]:
    cold = run(code, env)
    warm = [run(code, env) for _ in range(runs)]
    return {"cold": cold, "warm_best": {k: min(w[k] for w in warm) for k in warm[0]}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, CUTILE_CACHE_DIR=cache)
        env.pop("CUTILE_BACKEND", None)
        out["cutile"] = measure(CUTILE.format(examples=str(ROOT / "examples")), env)
        try:
            out["cutile_python"] = measure(CUTILE_PYTHON.format(), dict(os.environ))
        except RuntimeError as exc:  # pragma: no cover - the peer is optional
            out["cutile_python"] = {"error": str(exc).splitlines()[-1:]}
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    print(f"{'':<26}{'cutile cold':>12}{'cutile warm':>13}{'cuTile Py cold':>16}"
          f"{'cuTile Py warm':>16}   (ms)")
    peer = out["cutile_python"] if isinstance(out["cutile_python"], dict) else {}
    for k in ("import_numpy_s", "import_s", "add_first_launch_s", "exp2d_first_launch_s"):
        cu = out["cutile"]
        assert isinstance(cu, dict)
        row = [cu["cold"].get(k), cu["warm_best"].get(k),
               peer.get("cold", {}).get(k) if "cold" in peer else None,
               peer.get("warm_best", {}).get(k) if "warm_best" in peer else None]
        cells = "".join(f"{v * 1e3:>13.1f}" if v is not None else f"{'-':>13}" for v in row)
        print(f"{k:<26}{cells}")


if __name__ == "__main__":
    main()
