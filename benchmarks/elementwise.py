"""f32 vector add, z = x + y, on 2^28 elements: cutile vs cuTile Python vs torch (and Triton),
all in one process on one GPU. Bandwidth counts 3 x 4 bytes per element (two reads, one write).

    python benchmarks/elementwise.py [--log 28] [--json out.json]

Also reports the host cost of one safe launch (`add(z, x, y).sync()` on a tiny tensor)
against cuTile Python's `ct.launch` + synchronize and torch's add + synchronize.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import Timed, alternate, host_time, spin, time_on_stream

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like

try:  # the peer; cuTile resolves `ct.Constant` in this module's globals
    import cuda.tile as ct
except ImportError:  # pragma: no cover - reported as a missing peer
    ct = None


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


# Each bench_* returns its result and a `Timed` of its launch (the tensors it needs held by
# the closure), so that `main` can re-time the best of each alternately (`duel`); cutile's
# also returns the op that owns its tensors until the duel is over.

def bench_cutile(n: int, tile: int, xs: np.ndarray, ys: np.ndarray
                 ) -> tuple[dict[str, Any], Timed, Any]:
    x, y = api.from_numpy(xs), api.from_numpy(ys)
    z = api.empty([n], f32).partition([tile])
    z, x, y = add(z, x, y).sync()                       # compiles, runs, checks
    out = z.unpartition().to_numpy()
    ok = bool(np.array_equal(out, xs + ys))
    z = api.full([n], np.nan, f32).partition([tile])
    op = add(z, x, y)                                   # the safe path, for its binding
    timed = Timed.of_launch(add, op)
    t = time_on_stream(timed.enqueue, timed.stream)
    return {"tile": tile, "s": t, "tbps": 12 * n / t / 1e12, "correct": ok}, timed, op


if ct is not None:

    @ct.kernel
    def ct_add(a, b, c, TILE: ct.Constant[int]):  # type: ignore[no-untyped-def]
        bid = ct.bid(0)
        ta = ct.load(a, index=(bid,), shape=(TILE,))
        tb = ct.load(b, index=(bid,), shape=(TILE,))
        ct.store(c, index=(bid,), tile=ta + tb)


def bench_cutile_python(n: int, tile: int, xs: np.ndarray, ys: np.ndarray
                        ) -> tuple[dict[str, Any], Timed]:
    import torch

    a = torch.from_numpy(xs).cuda()
    b = torch.from_numpy(ys).cuda()
    c = torch.full_like(a, float("nan"))
    stream = torch.cuda.current_stream()
    grid = (-(-n // tile), 1, 1)
    ct.launch(stream, grid, ct_add, (a, b, c, tile))
    torch.cuda.synchronize()
    ok = bool(torch.equal(c, a + b))
    def call() -> None:
        ct.launch(stream, grid, ct_add, (a, b, c, tile))

    t = time_on_stream(call, stream)
    return ({"tile": tile, "s": t, "tbps": 12 * n / t / 1e12, "correct": ok},
            Timed(call, stream))


def bench_torch(n: int, xs: np.ndarray, ys: np.ndarray) -> tuple[dict[str, Any], Timed]:
    import torch

    a = torch.from_numpy(xs).cuda()
    b = torch.from_numpy(ys).cuda()
    c = torch.empty_like(a)
    stream = torch.cuda.current_stream()
    def call() -> None:
        torch.add(a, b, out=c)

    call()
    torch.cuda.synchronize()
    ok = bool(torch.equal(c, a + b))
    t = time_on_stream(call, stream)
    return {"s": t, "tbps": 12 * n / t / 1e12, "correct": ok}, Timed(call, stream)


def bench_triton(n: int, xs: np.ndarray, ys: np.ndarray) -> tuple[dict[str, Any], Timed]:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def tr_add(a, b, c, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(c + offs, tl.load(a + offs, mask=m) + tl.load(b + offs, mask=m), mask=m)

    a = torch.from_numpy(xs).cuda()
    b = torch.from_numpy(ys).cuda()
    c = torch.empty_like(a)
    grid = (triton.cdiv(n, 1024),)
    tr_add[grid](a, b, c, n, BLOCK=1024)
    torch.cuda.synchronize()
    ok = bool(torch.equal(c, a + b))
    stream = torch.cuda.current_stream()
    def call() -> None:
        tr_add[grid](a, b, c, n, BLOCK=1024)

    t = time_on_stream(call, stream)
    return {"s": t, "tbps": 12 * n / t / 1e12, "correct": ok}, Timed(call, stream)


def duel(results: dict[str, Any], timers: dict[str, Timed], rounds: int) -> None:
    """The best cutile tile and each peer's best again, alternating (`timing.alternate`),
    each behind a spin kernel so that no host cost shows: per peer, cutile's speed over the
    peer's as the median of the per-round ratios, with their spread (`results["duel"]`)."""
    contenders = {}
    for name, t in timers.items():
        prelude = spin(t.stream)
        contenders[name] = Timed(t.enqueue, t.stream, prelude)
    results["duel"] = alternate(contenders, "cutile", rounds=rounds, reps=20, trials=11)


def bench_launch_overhead() -> dict[str, float]:
    """Host seconds for one tiny launch + wait, per framework."""
    out: dict[str, float] = {}
    n = 1024
    x, y = api.from_numpy(np.ones(n, np.float32)), api.from_numpy(np.ones(n, np.float32))
    state = {"z": api.zeros([n], f32).partition([n]), "x": x, "y": y}

    def ours() -> None:
        state["z"], state["x"], state["y"] = add(state["z"], state["x"], state["y"]).sync()

    out["cutile_safe_sync"] = host_time(ours)
    try:
        import torch

        a = torch.ones(n, device="cuda")
        b = torch.ones(n, device="cuda")
        c = torch.empty_like(a)
        s = torch.cuda.current_stream()

        def theirs() -> None:
            ct.launch(s, (1, 1, 1), ct_add, (a, b, c, n))
            s.synchronize()

        out["cutile_python_launch_sync"] = host_time(theirs)

        def torch_add() -> None:
            torch.add(a, b, out=c)
            s.synchronize()

        out["torch_add_sync"] = host_time(torch_add)
    except Exception as exc:  # a peer missing is reported, not fatal
        out["peer_error"] = str(exc)  # type: ignore[assignment]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", type=int, default=28)
    ap.add_argument("--tiles", default="1024,2048,4096,8192")
    ap.add_argument("--rounds", type=int, default=7,
                    help="alternating re-times of the best of each (0: none)")
    ap.add_argument("--json")
    args = ap.parse_args()
    n = 1 << args.log
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(n, dtype=np.float32)
    ys = rng.standard_normal(n, dtype=np.float32)
    tiles = [int(t) for t in args.tiles.split(",")]
    results: dict[str, Any] = {"n": n}
    timers: dict[str, Timed] = {}
    ours = [bench_cutile(n, t, xs, ys) for t in tiles]
    results["cutile"] = [r for r, _, _ in ours]
    best_i = max(range(len(ours)), key=lambda i: ours[i][0]["tbps"])
    timers["cutile"] = ours[best_i][1]
    for i, (_, _, op) in enumerate(ours):      # all but the best hand their tensors back
        if i != best_i:
            op.sync()
    try:
        theirs = [bench_cutile_python(n, t, xs, ys) for t in tiles]
        results["cutile_python"] = [r for r, _ in theirs]
        timers["cutile_python"] = max(theirs, key=lambda rt: rt[0]["tbps"])[1]
    except Exception as exc:
        results["cutile_python_error"] = repr(exc)
    results["torch"], timers["torch"] = bench_torch(n, xs, ys)
    try:
        results["triton"], timers["triton"] = bench_triton(n, xs, ys)
    except Exception as exc:
        results["triton_error"] = repr(exc)
    if args.rounds:
        duel(results, timers, args.rounds)
    ours[best_i][2].sync()
    del timers, ours
    results["launch_overhead_s"] = bench_launch_overhead()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    best = max(results["cutile"], key=lambda r: r["tbps"])
    print(f"\nf32 add, n = 2^{args.log} ({n} elements), bytes = 12 n")
    print(f"{'impl':<16}{'tile':>6}{'time (ms)':>12}{'TB/s':>8}{'correct':>9}")
    for r in results["cutile"]:
        print(f"{'cutile':<16}{r['tile']:>6}{r['s'] * 1e3:>12.3f}{r['tbps']:>8.2f}"
              f"{r['correct']!s:>9}")
    for r in results.get("cutile_python", []):
        print(f"{'cuTile Python':<16}{r['tile']:>6}{r['s'] * 1e3:>12.3f}{r['tbps']:>8.2f}"
              f"{r['correct']!s:>9}")
    for name in ("torch", "triton"):
        if name in results:
            r = results[name]
            print(f"{name:<16}{'':>6}{r['s'] * 1e3:>12.3f}{r['tbps']:>8.2f}{r['correct']!s:>9}")
    if "cutile_python" in results:
        peer = max(results["cutile_python"], key=lambda r: r["tbps"])
        print(f"best cutile / best cuTile Python: {best['tbps'] / peer['tbps']:.3f}")
    print(f"best cutile / torch: {best['tbps'] / results['torch']['tbps']:.3f}")
    for peer, d in results.get("duel", {}).items():
        print(f"alternating re-times, cutile / {peer}: {d['ratio']:.3f} "
              f"({d['low']:.3f}-{d['high']:.3f})")
    for k, v in results["launch_overhead_s"].items():
        if isinstance(v, float):
            print(f"host launch+sync {k}: {v * 1e6:.1f} us")


if __name__ == "__main__":
    main()
