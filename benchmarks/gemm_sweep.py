"""GEMM configurations with compiler hints (issue 8 item 11): tile shapes, persistent grids
with a grouped schedule, `num_ctas`, `occupancy` and load `latency` hints, against cuBLAS
(torch.matmul) and cuTile Python's kernel with the same hints, one process, random inputs.

    python benchmarks/gemm_sweep.py [--n 8192] [--dtypes f16,bf16] [--json out.json]

Prints TFLOP/s per configuration, each one's error vs float64 on a slice, and the best
cutile configuration's ratio to cuBLAS.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import time_launch, time_on_stream

import cutile
from cutile.core import Const, Mut, Tensor, bf16, block_id, f16, f32, mma, num_tiles, zeros

try:
    import cuda.tile as ct
except ImportError:  # pragma: no cover - reported as a missing peer
    ct = None

DTYPES = {"f16": f16, "bf16": bf16}


def tiled(dt: Any, latency: int | None) -> cutile.EntryKernel:
    @cutile.entry
    def gemm(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]], y: Tensor[dt, [-1, -1]],
             BM: Const[int], BN: Const[int], BK: Const[int]):
        acc = zeros((BM, BN), f32)
        for k in range(num_tiles(x, 1, (BM, BK))):
            a = x.load_tile((BM, BK), (block_id(0), k), latency=latency)
            b = y.load_tile((BK, BN), (k, block_id(1)), latency=latency)
            acc = mma(a, b, acc)
        z.store(acc.astype(dt))

    return gemm


def persistent(dt: Any, latency: int | None) -> cutile.EntryKernel:
    @cutile.entry
    def pgemm(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
              y: Tensor[dt, [-1, -1]], BM: Const[int], BN: Const[int], BK: Const[int],
              G: Const[int]):
        for idx in z.iter_indices(group=G):
            acc = zeros((BM, BN), f32)
            for k in range(num_tiles(x, 1, (BM, BK))):
                a = x.load_tile((BM, BK), (idx[0], k), latency=latency)
                b = y.load_tile((BK, BN), (k, idx[1]), latency=latency)
                acc = mma(a, b, acc)
            z.store(acc.astype(dt), index=idx)

    return pgemm


# name -> (kind, (BM, BN, BK), hints, latency)
CONFIGS: dict[str, tuple[str, tuple[int, int, int], dict[str, Any], int | None]] = {
    "128x128x64": ("tiled", (128, 128, 64), {}, None),
    "128x128x64 occ2": ("tiled", (128, 128, 64), {"occupancy": 2}, None),
    "128x128x64 occ2 ctas2": ("tiled", (128, 128, 64), {"occupancy": 2, "num_ctas": 2}, None),
    "128x128x64 occ2 lat2": ("tiled", (128, 128, 64), {"occupancy": 2}, 2),
    "256x128x64 ctas2": ("tiled", (256, 128, 64), {"num_ctas": 2}, None),
    "128x256x64 ctas2": ("tiled", (128, 256, 64), {"num_ctas": 2}, None),
    "128x64x64 occ2": ("tiled", (128, 64, 64), {"occupancy": 2}, None),
    "64x128x64 occ2": ("tiled", (64, 128, 64), {"occupancy": 2}, None),
    "persistent 128x128x64 g8": ("persistent", (128, 128, 64), {}, None),
    "persistent 128x128x64 g8 occ2": ("persistent", (128, 128, 64), {"occupancy": 2}, None),
    "persistent 256x128x64 g8 ctas2": ("persistent", (256, 128, 64), {"num_ctas": 2}, None),
    "persistent 128x256x64 g8 ctas2": ("persistent", (128, 256, 64), {"num_ctas": 2}, None),
    # 8 worker warps: two consumer warpgroups share the 128x256 (or 256x128) tile; without
    # the hint tileiras gives 128x256 one warpgroup and spills the accumulator (SASS: ~800 STL)
    "persistent 128x256x64 g8 warps8": ("persistent", (128, 256, 64),
                                        {"num_worker_warps": 8}, None),
    "persistent 256x128x64 g8 warps8": ("persistent", (256, 128, 64),
                                        {"num_worker_warps": 8}, None),
    "persistent 128x256x64 g8 ctas2 warps8": ("persistent", (128, 256, 64),
                                              {"num_ctas": 2, "num_worker_warps": 8}, None),
    "persistent 128x128x64 g8 warps8": ("persistent", (128, 128, 64),
                                        {"num_worker_warps": 8}, None),
    "persistent 128x128x64 g8 lat3": ("persistent", (128, 128, 64), {}, 3),
    "persistent 128x128x128 g8": ("persistent", (128, 128, 128), {}, None),
}


def rel_err(c: Any, a: Any, b: Any) -> float:
    rows = slice(0, 256)
    ref = a[rows].double() @ b.double()
    return float((c[rows].double() - ref).norm() / ref.norm())


def bench(n: int, dtype_name: str, names: list[str]) -> dict[str, Any]:
    import torch

    from cutile import api

    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype_name]
    a = torch.randn(n, n, device="cuda", dtype=tdt)
    b = torch.randn(n, n, device="cuda", dtype=tdt)
    flops = 2 * n**3
    out: dict[str, Any] = {"n": n, "dtype": dtype_name, "cutile": {}, "cutile_python": {}}
    c = torch.empty(n, n, device="cuda", dtype=tdt)
    s = torch.cuda.current_stream()
    t = time_on_stream(lambda: torch.matmul(a, b, out=c), s, reps=10, trials=7)
    out["cublas"] = {"tflops": flops / t / 1e12, "rel_err": rel_err(c, a, b)}

    def to_ct(t: Any) -> Any:  # through raw bytes: numpy has no bf16
        raw = t.contiguous().view(torch.int16).cpu().numpy()
        tt = api.empty(list(t.shape), DTYPES[dtype_name])
        tt._alloc.write(0, raw.reshape(-1).view("uint8"))
        return tt

    def to_torch(t: Any) -> Any:
        host = t._alloc.read(0, t.nbytes)
        return torch.from_numpy(host.view("int16").reshape(n, n).copy()).view(tdt).cuda()

    x, y = to_ct(a), to_ct(b)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for name in names:
        kind, (bm, bn, bk), hints, latency = CONFIGS[name]
        make = tiled if kind == "tiled" else persistent
        kernel = make(DTYPES[dtype_name], latency).with_hints(**hints)
        consts: dict[str, int] = {"BK": bk} if kind == "tiled" else {"BK": bk, "G": 8}
        try:
            part = api.empty([n, n], DTYPES[dtype_name]).partition([bm, bn])
            if kind == "persistent":
                part = part.persistent(sms * hints.get("occupancy", 1))
            op = kernel(part, x, y, **consts)
            z, x, y = op.sync()
            raw = z.unpartition()
            err = rel_err(to_torch(raw), a, b)
            part = raw.partition([bm, bn])
            if kind == "persistent":
                part = part.persistent(sms * hints.get("occupancy", 1))
            op = kernel(part, x, y, **consts)
            t = time_launch(kernel, op, reps=10, trials=7)
            z, x, y = op.sync()
            out["cutile"][name] = {"tflops": flops / t / 1e12, "rel_err": err}
        except Exception as exc:  # a configuration tileiras rejects is reported, not fatal
            out["cutile"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        if ct is not None and kind == "tiled":
            out["cutile_python"][name] = ct_bench(a, b, (bm, bn, bk), hints, latency, flops)
    return out


def ct_bench(a: Any, b: Any, tiles: tuple[int, int, int], hints: dict[str, Any],
             latency: int | None, flops: int) -> dict[str, Any]:
    import torch

    assert ct is not None
    bm, bn, bk = tiles
    kw = {k: v for k, v in hints.items() if k in ("num_ctas", "occupancy")}

    @ct.kernel(**kw)
    def ct_gemm(a, b, c, BM: ct.Constant[int], BN: ct.Constant[int],  # type: ignore[no-untyped-def]
                BK: ct.Constant[int]):
        bx, by = ct.bid(0), ct.bid(1)
        acc = ct.full((BM, BN), 0, dtype=ct.float32)
        for k in range(ct.num_tiles(a, axis=1, shape=(BM, BK))):
            ta = ct.load(a, index=(bx, k), shape=(BM, BK), latency=latency)
            tb = ct.load(b, index=(k, by), shape=(BK, BN), latency=latency)
            acc = ct.mma(ta, tb, acc)
        ct.store(c, index=(bx, by), tile=ct.astype(acc, c.dtype))

    n = a.shape[0]
    c2 = torch.empty_like(a)
    s = torch.cuda.current_stream()
    grid = (n // bm, n // bn, 1)
    try:
        ct.launch(s, grid, ct_gemm, (a, b, c2, bm, bn, bk))
        torch.cuda.synchronize()
        t = time_on_stream(lambda: ct.launch(s, grid, ct_gemm, (a, b, c2, bm, bn, bk)), s,
                           reps=10, trials=7)
        return {"tflops": flops / t / 1e12, "rel_err": rel_err(c2, a, b)}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--json")
    args = ap.parse_args()
    names = [c for c in args.configs.split(",") if c]
    results = [bench(args.n, d, names) for d in args.dtypes.split(",")]
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    for r in results:
        cub = r["cublas"]["tflops"]
        print(f"\nGEMM {r['n']}^3 {r['dtype']}: cuBLAS {cub:.1f} TFLOP/s")
        print(f"  {'config':<32} {'cutile':>8} {'/cuBLAS':>8} {'cuTile Py':>10}  err")
        for name, got in r["cutile"].items():
            peer = r["cutile_python"].get(name, {})
            peer_s = f"{peer['tflops']:10.1f}" if "tflops" in peer else f"{'-':>10}"
            if "tflops" in got:
                print(f"  {name:<32} {got['tflops']:8.1f} {got['tflops'] / cub:8.3f} "
                      f"{peer_s}  {got['rel_err']:.1e}")
            else:
                print(f"  {name:<32} {got['error']}")
        best = max((v["tflops"] for v in r["cutile"].values() if "tflops" in v), default=0.0)
        print(f"  best cutile / cuBLAS: {best / cub:.3f}")


if __name__ == "__main__":
    main()
