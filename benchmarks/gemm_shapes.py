"""GEMM over a sweep of shapes, 1k to 16k, square and skinny (issue 8: geomean >= 0.95x
cuBLAS): for each (M, N, K) and dtype, every candidate configuration of `gemm_sweep.py`'s
kernels is timed and the fastest is kept (what `cutile.autotune` does for a user), beside
cuBLAS (torch.matmul), cuTile Python's tiled kernel with its best 8192^3 hints, and a Triton
kernel (128x256x64 tiles, 3 stages, 8 warps: the usual Hopper choice), one process, random
inputs, each result checked against float64 on a slice of rows.

    python benchmarks/gemm_shapes.py [--dtypes f16,bf16] [--shapes 1024x1024x1024,...]
        [--configs NAME,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_sweep import CONFIGS, DTYPES, ct, persistent, tiled
from timing import Timed, alternate_times, paired, raw_launch, time_on_stream

SQUARES = [(n, n, n) for n in (1024, 2048, 4096, 8192, 16384)]
SKINNY = [(1024, 8192, 8192), (8192, 1024, 8192), (8192, 8192, 1024), (16384, 16384, 1024),
          (1024, 16384, 16384), (4096, 16384, 4096), (16384, 4096, 16384)]
CANDIDATES = ["persistent 128x256x64 g8 warps8", "persistent 256x128x64 g8 warps8",
              "persistent 128x256x64 g8 ctas2", "persistent 256x128x64 g8 ctas2",
              "persistent 128x128x64 g8", "128x128x64 occ2", "128x64x64 occ2",
              "64x128x64 occ2"]


def rel_err(c: Any, a: Any, b: Any) -> float:
    ref = a[:256].double() @ b.double()
    return float((c[:256].double() - ref).norm() / ref.norm())


def triton_gemm() -> Any:
    try:
        import triton
        import triton.language as tl
    except ImportError:  # pragma: no cover - reported as a missing peer
        return None

    @triton.jit
    def kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               G: tl.constexpr):
        pid = tl.program_id(0)
        grid_m, grid_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        group = pid // (G * grid_n)
        first = group * G
        rows = min(grid_m - first, G)
        pm = first + (pid % (G * grid_n)) % rows
        pn = (pid % (G * grid_n)) // rows
        om = pm * BM + tl.arange(0, BM)
        on = pn * BN + tl.arange(0, BN)
        ok = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            ta = tl.load(a + om[:, None] * K + (k * BK + ok)[None, :],
                         mask=(om[:, None] < M) & ((k * BK + ok)[None, :] < K), other=0.0)
            tb = tl.load(b + (k * BK + ok)[:, None] * N + on[None, :],
                         mask=((k * BK + ok)[:, None] < K) & (on[None, :] < N), other=0.0)
            acc = tl.dot(ta, tb, acc)
        tl.store(c + om[:, None] * N + on[None, :], acc.to(c.dtype.element_ty),
                 mask=(om[:, None] < M) & (on[None, :] < N))

    def run(a: Any, b: Any, c: Any) -> None:
        m, k = a.shape
        n = b.shape[1]
        grid = (triton.cdiv(m, 128) * triton.cdiv(n, 256),)
        kernel[grid](a, b, c, m, n, k, BM=128, BN=256, BK=64, G=8, num_stages=3, num_warps=8)

    return run


def ct_tiled() -> Any:
    if ct is None:
        return None

    @ct.kernel(num_ctas=2)
    def ct_gemm(a, b, c, BM: ct.Constant[int], BN: ct.Constant[int],  # type: ignore[no-untyped-def]
                BK: ct.Constant[int]):
        acc = ct.full((BM, BN), 0, dtype=ct.float32)
        for k in range(ct.num_tiles(a, axis=1, shape=(BM, BK))):
            ta = ct.load(a, index=(ct.bid(0), k), shape=(BM, BK))
            tb = ct.load(b, index=(k, ct.bid(1)), shape=(BK, BN))
            acc = ct.mma(ta, tb, acc)
        ct.store(c, index=(ct.bid(0), ct.bid(1)), tile=ct.astype(acc, c.dtype))

    def run(stream: Any, a: Any, b: Any, c: Any) -> None:
        grid = (math.ceil(a.shape[0] / 128), math.ceil(b.shape[1] / 256), 1)
        ct.launch(stream, grid, ct_gemm, (a, b, c, 128, 256, 64))

    return run


def bench(shape: tuple[int, int, int], dtype_name: str, names: list[str], sms: int,
          peers: dict[str, Any]) -> dict[str, Any]:
    import torch

    from cutile import api

    m, n, k = shape
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype_name]
    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=tdt)
    b = torch.randn(k, n, device="cuda", dtype=tdt)
    flops = 2 * m * n * k
    out: dict[str, Any] = {"shape": list(shape), "dtype": dtype_name, "cutile": {}}
    c = torch.empty(m, n, device="cuda", dtype=tdt)
    s = torch.cuda.current_stream()
    t = time_on_stream(lambda: torch.matmul(a, b, out=c), s, reps=5, trials=5)
    out["cublas"] = {"tflops": flops / t / 1e12, "rel_err": rel_err(c, a, b)}
    for peer, run in peers.items():
        if run is None:
            continue
        try:
            c2 = torch.empty(m, n, device="cuda", dtype=tdt)
            args = (s, a, b, c2) if peer == "cutile_python" else (a, b, c2)

            def call(run: Any = run, args: tuple[Any, ...] = args) -> None:
                run(*args)

            call()
            torch.cuda.synchronize()
            t = time_on_stream(call, s, reps=5, trials=5)
            out[peer] = {"tflops": flops / t / 1e12, "rel_err": rel_err(c2, a, b)}
        except Exception as exc:  # reported, not fatal
            out[peer] = {"error": f"{type(exc).__name__}: {str(exc)[:160]}"}

    def to_ct(t: Any) -> Any:  # through raw bytes: numpy has no bf16
        raw = t.contiguous().view(torch.int16).cpu().numpy()
        tt = api.empty(list(t.shape), DTYPES[dtype_name])
        tt._alloc.write(0, raw.reshape(-1).view("uint8"))
        return tt

    def to_torch(t: Any) -> Any:
        host = t._alloc.read(0, 256 * n * 2)  # the rows the error is measured on
        return torch.from_numpy(host.view("int16").reshape(256, n).copy()).view(tdt).cuda()

    first = iter([(to_ct(a), to_ct(b))])       # the first configuration's inputs
    timers: dict[str, Any] = {}
    for name in names:
        kind, (bm, bn, bk), hints, latency = CONFIGS[name]
        make = tiled if kind == "tiled" else persistent
        kernel = make(DTYPES[dtype_name], latency).with_hints(**hints)
        consts: dict[str, int] = {"BK": bk} if kind == "tiled" else {"BK": bk, "G": 8}

        def part_of(raw: Any, tile: tuple[int, int] = (bm, bn),
                    blocks: int | None = (sms * hints.get("occupancy", 1)
                                          if kind == "persistent" else None)) -> Any:
            p = raw.partition(list(tile))
            return p.persistent(blocks) if blocks is not None else p

        try:
            # each configuration's timed op holds its own inputs until the duel below
            # (an op owns what it was given while it is pending)
            xi, yi = next(first, None) or (to_ct(a), to_ct(b))
            z, xi, yi = kernel(part_of(api.empty([m, n], DTYPES[dtype_name])), xi, yi,
                               **consts).sync()
            raw = z.unpartition()
            err = rel_err(to_torch(raw), a, b)
            op = kernel(part_of(raw), xi, yi, **consts)
            run = raw_launch(kernel, op)
            t = time_on_stream(run, run.stream, reps=5, trials=5)
            timers[name] = (op, run)
            out["cutile"][name] = {"tflops": flops / t / 1e12, "rel_err": err}
        except Exception as exc:  # a configuration tileiras rejects is reported, not fatal
            out["cutile"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    duel(out, timers, lambda: torch.matmul(a, b, out=c), s, flops)
    for op, _ in timers.values():
        op.sync()
    return out


def duel(out: dict[str, Any], timers: dict[str, Any], cublas: Any, s: Any, flops: int,
         rounds: int = 7) -> None:
    """The best configuration and cuBLAS again, alternating (timing.alternate_times), so
    that neither runs on a cooler (faster-clocked) GPU than the other: TFLOP/s from the
    medians, and the ratio as the median of the per-round ratios with its spread."""
    ok = {k: v["tflops"] for k, v in out["cutile"].items() if "tflops" in v}
    if not ok:
        return
    best = max(ok, key=lambda k: ok[k])
    _, run = timers[best]
    times = alternate_times({"cublas": Timed(cublas, s), "cutile": Timed(run, run.stream)},
                            rounds=rounds)
    vs = paired(times, "cutile", "cublas")
    out["duel"] = {"config": best, "cutile": flops / vs["ours_s"] / 1e12,
                   "cublas": flops / vs["peer_s"] / 1e12,
                   "ratio": vs["ratio"], "low": vs["low"], "high": vs["high"]}


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    shapes = []
    for item in text.split(","):
        m, n, k = (int(v) for v in item.split("x"))
        shapes.append((m, n, k))
    return shapes


def main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--shapes")
    ap.add_argument("--configs", default=",".join(CANDIDATES))
    ap.add_argument("--json")
    args = ap.parse_args()
    shapes = parse_shapes(args.shapes) if args.shapes else SQUARES + SKINNY
    names = [c for c in args.configs.split(",") if c]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    peers = {"triton": triton_gemm(), "cutile_python": ct_tiled()}
    results = [bench(sh, d, names, sms, peers) for d in args.dtypes.split(",") for sh in shapes]
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print(f"\n{'dtype':<5} {'M x N x K':<20} {'cutile':>7} {'cuBLAS':>7} {'Triton':>7} "
          f"{'cuTilePy':>8} {'/cuBLAS':>8}  best config (cutile and cuBLAS: alternating "
          "re-runs, medians)")
    ratios: dict[str, list[float]] = {}
    for r in results:
        ok = {k: v for k, v in r["cutile"].items() if "tflops" in v}
        d = r.get("duel", {})
        best_name = d.get("config", "-")
        best = d.get("cutile", 0.0)
        cub = d.get("cublas", r["cublas"]["tflops"])
        cells = [r.get(p, {}).get("tflops", float("nan")) for p in ("triton", "cutile_python")]
        shape = "x".join(str(v) for v in r["shape"])
        print(f"{r['dtype']:<5} {shape:<20} {best:7.1f} {cub:7.1f} {cells[0]:7.1f} "
              f"{cells[1]:8.1f} {best / cub:8.3f}  {best_name}")
        if ok:
            ratios.setdefault(r["dtype"], []).append(best / cub)
        for name, v in r["cutile"].items():
            if "error" in v:
                print(f"     {name}: {v['error']}")
    for dt, rs in ratios.items():
        geo = math.exp(sum(math.log(x) for x in rs) / len(rs))
        print(f"geomean cutile / cuBLAS, {dt}: {geo:.3f} over {len(rs)} shapes")


if __name__ == "__main__":
    main()
