"""FP8 GEMM, 8192^3 e4m3 x e4m3 with per-row scales of A and per-column scales of B, bf16
result: cutile's `examples/fp8_gemm.py` persistent kernel against `torch._scaled_mm`
(cuBLASLt) with the same row/column scales, and with one scale per tensor, one process,
random inputs; every result checked against float64 on 256 rows of the dequantized inputs.

    python benchmarks/fp8_gemm.py [--n 8192] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import fp8_gemm as ex
from timing import time_launch, time_on_stream

# name -> (BM, BN, BK, hints, latency): the A and B loads' latency hint (None: tileiras's
# own pipeline depth, 5 stages at 128x128x128 with 8 worker warps, 2 for 2-CTA tiles).
# num_worker_warps=8 gives the 128-row tile two consumer warpgroups of 64 rows: without it
# one warpgroup holds the 128x128 accumulator twice over (the f8 MMA's partial sums and the
# f32 sum they are added to each k-step) and spills (STL/LDL in the k-loop). A 2-CTA
# cluster is one persistent block: the grid gets SMs / 2 of them, all resident at once.
NWW8 = {"num_worker_warps": 8}
CONFIGS: dict[str, tuple[int, int, int, dict[str, int], int | None]] = {
    "128x128x128 nww8": (128, 128, 128, NWW8, None),
    "128x256x128 ctas2 nww8": (128, 256, 128, {"num_ctas": 2, **NWW8}, None),
    "128x256x128 ctas2 nww8 lat6": (128, 256, 128, {"num_ctas": 2, **NWW8}, 6),
    "128x128x128 nww8 lat4": (128, 128, 128, NWW8, 4),
    "128x128x128": (128, 128, 128, {}, None),
    "128x256x128 ctas2": (128, 256, 128, {"num_ctas": 2}, None),
}


def bench(n: int) -> dict[str, Any]:
    import torch

    from cutile import api
    from cutile.core import bf16, f8e4m3fn, f32

    torch.manual_seed(0)
    e4m3 = torch.float8_e4m3fn
    a = (torch.randn(n, n, device="cuda") * 2).to(e4m3)
    bt = (torch.randn(n, n, device="cuda") * 2).to(e4m3)        # B stored as B^T: K-major
    sa = torch.rand(n, 1, device="cuda") + 0.5
    sb = torch.rand(n, 1, device="cuda") + 0.5
    ref = (a[:256].double() * sa[:256].double()) @ (bt.double() * sb.double()).T
    flops = 2 * n**3
    out: dict[str, Any] = {"n": n, "cutile": {}}

    def err_of(c: Any) -> float:
        return float((c[:256].double() - ref).norm() / ref.norm())

    s = torch.cuda.current_stream()
    peers = {
        "torch_scaled_mm_rowwise": lambda: torch._scaled_mm(
            a, bt.t(), scale_a=sa, scale_b=sb.t(), out_dtype=torch.bfloat16),
        "torch_scaled_mm_tensorwise": lambda: torch._scaled_mm(
            a, bt.t(), scale_a=sa[:1, :1].reshape(()), scale_b=sb[:1, :1].reshape(()),
            out_dtype=torch.bfloat16),
    }
    for name, call in peers.items():
        try:
            c = call()
            t = time_on_stream(call, s, reps=10, trials=7)
            entry: dict[str, Any] = {"tflops": flops / t / 1e12}
            if name.endswith("rowwise"):
                entry["rel_err"] = err_of(c)
            out[name] = entry
        except Exception as exc:  # reported, not fatal
            out[name] = {"error": f"{type(exc).__name__}: {str(exc)[:160]}"}

    def to_ct(t: Any, dt: Any) -> Any:
        raw = t.contiguous().view(torch.uint8).cpu().numpy()
        tt = api.empty(list(t.shape), dt)
        tt._alloc.write(0, raw.reshape(-1))
        return tt

    x, w = to_ct(a, f8e4m3fn), to_ct(bt, f8e4m3fn)
    xs, ws = to_ct(sa.reshape(-1), f32), to_ct(sb.reshape(-1), f32)  # the kernel's vectors
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for name, (bm, bn, bk, hints, lat) in CONFIGS.items():
        kernel = ex.make_fp8_gemm_persistent(lat).with_hints(**hints)
        blocks = sms * hints.get("occupancy", 1) // hints.get("num_ctas", 1)
        try:
            z = api.empty([n, n], bf16).partition([bm, bn]).persistent(blocks)
            z, x, w, xs, ws = kernel(z, x, w, xs, ws, BK=bk, G=8).sync()
            raw = z.unpartition()
            host = raw._alloc.read(0, 256 * n * 2)
            c = torch.from_numpy(host.view("int16").reshape(256, n).copy()).view(
                torch.bfloat16)
            err = err_of(c.cuda())
            op = kernel(raw.partition([bm, bn]).persistent(blocks), x, w, xs, ws, BK=bk, G=8)
            t = time_launch(kernel, op, reps=10, trials=7)
            z, x, w, xs, ws = op.sync()
            out["cutile"][name] = {"tflops": flops / t / 1e12, "rel_err": err}
        except Exception as exc:  # a configuration tileiras rejects is reported, not fatal
            out["cutile"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--json")
    args = ap.parse_args()
    r = bench(args.n)
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=2))
    print(f"\nFP8 GEMM {args.n}^3 e4m3, row/column scales, bf16 out: TFLOP/s (rel err)")
    for name in ("torch_scaled_mm_rowwise", "torch_scaled_mm_tensorwise"):
        v = r[name]
        print(f"  {name:<30} " + (f"{v['tflops']:8.1f}" if "tflops" in v else v["error"]))
    peer = r["torch_scaled_mm_rowwise"].get("tflops", float("nan"))
    for name, v in r["cutile"].items():
        if "tflops" in v:
            print(f"  cutile {name:<23} {v['tflops']:8.1f}  / rowwise {v['tflops'] / peer:.3f}"
                  f"  ({v['rel_err']:.1e})")
        else:
            print(f"  cutile {name:<23} {v['error']}")
    best = max((v["tflops"] for v in r["cutile"].values() if "tflops" in v), default=0.0)
    print(f"  best cutile / torch._scaled_mm (rowwise): {best / peer:.3f}")


if __name__ == "__main__":
    main()
