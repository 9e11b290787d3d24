"""Compile time of every example kernel, cold (an empty cache), beside cuTile Python where
it has the same kernel: the vector add, the tiled GEMM and its FMHA sample (its own kernel,
`samples/AttentionFMHA.py`, at the tile sizes our attention example assembles).

cutile: `kernel.compile(target)` per kernel with the Const values CI assembles
(tests/kernels/test_examples.py's AOT table), frontend + checker + lowering + tileiras, in a
fresh process per example with an empty `CUTILE_CACHE_DIR`. cuTile Python: the first
`ct.launch` + synchronize minus a second one, in a fresh process with an empty
`CUDA_TILE_CACHE_DIR` (its frontend, its lowering and tileiras).

    python benchmarks/compile_examples.py [--target sm_90] [--cutile-python-sample PATH]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

OURS = r'''
import importlib.util, json, sys, time
sys.path.insert(0, {examples!r})
sys.path.insert(0, {kernels_dir!r})  # the AOT table's own imports (kernel_source)
spec = importlib.util.spec_from_file_location("aot", {aot_file!r})
aot = importlib.util.module_from_spec(spec); spec.loader.exec_module(aot)
mod = aot.load({name!r})
times = {{}}
for kernel, consts in aot.AOT[{name!r}].items():
    t0 = time.perf_counter()
    getattr(mod, kernel).compile(target={target!r}, **consts)
    times[kernel] = time.perf_counter() - t0
print(json.dumps(times))
'''

PEER = r'''
import json, math, sys, time
import torch
import cuda.tile as ct
which = {which!r}
s = torch.cuda.current_stream()
if which == "add":
    @ct.kernel
    def k(a, b, c, T: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, index=(i,), tile=ct.load(a, index=(i,), shape=(T,))
                 + ct.load(b, index=(i,), shape=(T,)))
    x = torch.ones(4096, device="cuda"); c = torch.empty_like(x)
    call = lambda: ct.launch(s, (4, 1, 1), k, (x, x, c, 1024))
elif which == "gemm":
    @ct.kernel
    def k(a, b, c, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
        acc = ct.full((BM, BN), 0, dtype=ct.float32)
        for kk in range(ct.num_tiles(a, axis=1, shape=(BM, BK))):
            acc = ct.mma(ct.load(a, index=(ct.bid(0), kk), shape=(BM, BK)),
                         ct.load(b, index=(kk, ct.bid(1)), shape=(BK, BN)), acc)
        ct.store(c, index=(ct.bid(0), ct.bid(1)), tile=ct.astype(acc, c.dtype))
    a = torch.randn(256, 256, device="cuda", dtype=torch.float16); c = torch.empty_like(a)
    call = lambda: ct.launch(s, (4, 4, 1), k, (a, a, c, 64, 64, 32))  # autotune_gemm AOT tiles
else:
    import importlib.util
    sys.path.insert(0, {sample_dir!r})
    spec = importlib.util.spec_from_file_location("fmha", {sample!r})
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    causal = which == "fmha_causal"
    d, tm, tn = (64, 128, 128) if causal else (128, 128, 64)
    q = torch.randn(1, 2, 256, d, device="cuda", dtype=torch.bfloat16)
    call = lambda: m.cutile_fmha(q, q, q, 1 / math.sqrt(d), 0, tm, tn, 1, causal)
torch.cuda.synchronize()
t0 = time.perf_counter(); call(); torch.cuda.synchronize(); t1 = time.perf_counter()
call(); torch.cuda.synchronize(); t2 = time.perf_counter()
print(json.dumps({{"compile_s": (t1 - t0) - (t2 - t1)}}))
'''

# our (example, kernel) -> the cuTile Python kernel that computes the same thing
PEERS = {("add", "add"): "add", ("autotune_gemm", "gemm"): "gemm",
         # the sample runs its EVEN_K kernel (256 keys, 64- or 128-key tiles): our even_keys
         # kernels are the same computation
         ("attention", "attention_even"): "fmha",
         ("attention", "attention_causal_even"): "fmha_causal"}


def run(code: str, env: dict[str, str]) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(code)  # from a file: both DSLs read their kernels' source
    try:
        r = subprocess.run([sys.executable, f.name], env=env, capture_output=True, text=True,
                           timeout=600)
    finally:
        os.unlink(f.name)
    if r.returncode:
        raise RuntimeError(r.stderr[-1500:])
    return dict(json.loads(r.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="sm_90")
    ap.add_argument("--cutile-python-sample")
    ap.add_argument("--json")
    ap.add_argument("--examples", help="only these examples (comma-separated), e.g. the "
                    "ones with a cuTile Python counterpart: add,autotune_gemm,attention")
    args = ap.parse_args()
    aot_file = str(ROOT / "tests" / "kernels" / "test_examples.py")
    spec_src = Path(aot_file).read_text()
    names = sorted({line.split('"')[1] for line in spec_src.split("AOT:")[1].split("\n}")[0]
                    .splitlines() if line.startswith('    "')})
    if args.examples:
        names = [n for n in names if n in args.examples.split(",")]
    ours: dict[str, Any] = {}
    for name in names:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, CUTILE_CACHE_DIR=cache)
            try:
                ours[name] = run(OURS.format(examples=str(ROOT / "examples"), name=name,
                                             kernels_dir=str(ROOT / "tests" / "kernels"),
                                             aot_file=aot_file, target=args.target), env)
            except RuntimeError as exc:
                ours[name] = {"error": str(exc).splitlines()[-1:]}
    peers: dict[str, Any] = {}
    for which in sorted({w for (name, _), w in PEERS.items() if name in names}):
        if which.startswith("fmha") and not args.cutile_python_sample:
            continue
        sample = args.cutile_python_sample or ""
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, CUDA_TILE_CACHE_DIR=cache)
            try:
                peers[which] = run(PEER.format(which=which, sample=sample,
                                               sample_dir=str(Path(sample).parent)), env)
            except RuntimeError as exc:
                peers[which] = {"error": str(exc).splitlines()[-1:]}
    out = {"cutile": ours, "cutile_python": peers}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    print(f"\ncold compile time, {args.target} (s)")
    print(f"{'example':<16} {'kernel':<24} {'cutile':>7} {'cuTile Py':>9} {'ratio':>6}")
    total = 0.0
    for name, times in ours.items():
        if "error" in times:
            print(f"{name:<16} error: {times['error']}")
            continue
        for kernel, t in times.items():
            total += t
            peer = peers.get(PEERS.get((name, kernel), ""), {}).get("compile_s")
            cells = f"{peer:9.2f} {t / peer:6.2f}" if peer else f"{'-':>9} {'-':>6}"
            print(f"{name:<16} {kernel:<24} {t:7.2f} {cells}")
    print(f"total over every example kernel: {total:.1f} s")


if __name__ == "__main__":
    main()
