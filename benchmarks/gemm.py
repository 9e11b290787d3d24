"""f16/bf16 GEMM, C = A @ B with f32 accumulation, at 8192^3 (default): cutile vs cuTile
Python vs cuBLAS (torch.matmul), one process, random inputs, relative error vs float64 on a
slice. Non-persistent 128x128x64 tiles for both tile DSLs.

    python benchmarks/gemm.py [--n 8192] [--json out.json]
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


def make_kernel(dt: Any) -> Any:
    @cutile.entry
    def gemm(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]], y: Tensor[dt, [-1, -1]],
             BM: Const[int], BN: Const[int], BK: Const[int]):
        acc = zeros((BM, BN), f32)
        for k in range(num_tiles(x, 1, (BM, BK))):
            a = x.load_tile((BM, BK), (block_id(0), k))
            b = y.load_tile((BK, BN), (k, block_id(1)))
            acc = mma(a, b, acc)
        z.store(acc.astype(dt))

    return gemm


gemm_f16 = make_kernel(f16)
gemm_bf16 = make_kernel(bf16)

if ct is not None:

    @ct.kernel
    def ct_gemm(a, b, c, BM: ct.Constant[int], BN: ct.Constant[int],  # type: ignore[no-untyped-def]
                BK: ct.Constant[int]):
        bx, by = ct.bid(0), ct.bid(1)
        acc = ct.full((BM, BN), 0, dtype=ct.float32)
        for k in range(ct.num_tiles(a, axis=1, shape=(BM, BK))):
            ta = ct.load(a, index=(bx, k), shape=(BM, BK), padding_mode=ct.PaddingMode.ZERO)
            tb = ct.load(b, index=(k, by), shape=(BK, BN), padding_mode=ct.PaddingMode.ZERO)
            acc = ct.mma(ta, tb, acc)
        ct.store(c, index=(bx, by), tile=ct.astype(acc, c.dtype))


def rel_err(c: Any, a: Any, b: Any) -> float:
    rows = slice(0, 256)
    ref = a[rows].double() @ b.double()
    return float((c[rows].double() - ref).norm() / ref.norm())


def bench(n: int, dtype_name: str, tiles: tuple[int, int, int]) -> dict[str, Any]:
    import torch

    from cutile import api

    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype_name]
    kernel = {"f16": gemm_f16, "bf16": gemm_bf16}[dtype_name]
    bm, bn, bk = tiles
    a = torch.randn(n, n, device="cuda", dtype=tdt)
    b = torch.randn(n, n, device="cuda", dtype=tdt)
    flops = 2 * n**3
    out: dict[str, Any] = {"n": n, "dtype": dtype_name, "tiles": tiles}

    # cuBLAS through torch
    c = torch.empty(n, n, device="cuda", dtype=tdt)
    s = torch.cuda.current_stream()
    t = time_on_stream(lambda: torch.matmul(a, b, out=c), s, reps=10, trials=7)
    out["cublas"] = {"s": t, "tflops": flops / t / 1e12, "rel_err": rel_err(c, a, b)}

    # cutile (numpy round trip for inputs: our tensors own their memory)
    x = api.from_numpy(a.cpu().float().numpy().astype(
        "float16" if dtype_name == "f16" else "float32")) if dtype_name == "f16" else None
    if x is None:  # bf16: build through raw bytes (numpy has no bf16)
        from cutile.dtypes import bf16 as cbf16

        def to_ct(t: Any) -> Any:
            raw = t.contiguous().view(torch.int16).cpu().numpy()
            tt = api.empty(list(t.shape), cbf16)
            tt._alloc.write(0, raw.reshape(-1).view("uint8"))
            return tt

        x, y = to_ct(a), to_ct(b)
    else:
        y = api.from_numpy(b.cpu().numpy())
    zt = api.empty([n, n], {"f16": f16, "bf16": bf16}[dtype_name]).partition([bm, bn])
    zt, x, y = kernel(zt, x, y, BK=bk).sync()
    raw = zt.unpartition()
    host = raw._alloc.read(0, raw.nbytes)
    cz = torch.from_numpy(host.view("int16").reshape(n, n).copy()).view(tdt).cuda()
    err = rel_err(cz, a, b)
    op = kernel(raw.partition([bm, bn]), x, y, BK=bk)
    t = time_launch(kernel, op, reps=10, trials=7)
    op.sync()
    out["cutile"] = {"s": t, "tflops": flops / t / 1e12, "rel_err": err}

    if ct is not None:
        c2 = torch.empty(n, n, device="cuda", dtype=tdt)
        grid = (n // bm, n // bn, 1)
        ct.launch(s, grid, ct_gemm, (a, b, c2, bm, bn, bk))
        torch.cuda.synchronize()
        t = time_on_stream(lambda: ct.launch(s, grid, ct_gemm, (a, b, c2, bm, bn, bk)), s,
                           reps=10, trials=7)
        out["cutile_python"] = {"s": t, "tflops": flops / t / 1e12, "rel_err": rel_err(c2, a, b)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--json")
    args = ap.parse_args()
    results = [bench(args.n, d, (128, 128, 64)) for d in ("f16", "bf16")]
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print(f"\nGEMM {args.n}^3, 128x128x64 tiles, TFLOP/s (rel err vs f64)")
    for r in results:
        row = [f"{r['dtype']:<5}"]
        for impl in ("cutile", "cutile_python", "cublas"):
            if impl in r:
                row.append(f"{impl} {r[impl]['tflops']:7.1f} ({r[impl]['rel_err']:.1e})")
        ratio = r["cutile"]["tflops"] / r["cublas"]["tflops"]
        row.append(f"cutile/cuBLAS {ratio:.3f}")
        print("  ".join(row))


if __name__ == "__main__":
    main()
