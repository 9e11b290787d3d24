"""How much faster Qwen3-4B's decode GEMVs run when their weight is already in L2: the
upside of loading a GEMV's weight into L2 while the latency-bound kernels before it run
(attention's three small kernels leave the memory system idle for ~8 us a layer).

Each GEMV is the engine's own tiles (`plan_for`), timed in a CUDA graph (`llm_gemv`) over
rotating weight copies (>= 4x L2: every launch reads HBM, as in the engine) and over one
copy (after the first launch, the weight is read from L2 when it fits: o_proj 21 MB and
QKV 31.5 MB do, in the H200's 50 MB).

    python benchmarks/llm_l2_probe.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llm_gemv as g
import llm_tools as lt


def probe(name: str) -> dict[str, Any]:
    import torch

    n, k, _ = g.GEMVS[name]
    kind, t = g.plan_tiles(name)
    nbytes = n * k * 2
    copies = max(1, math.ceil(4 * g.L2 / nbytes))
    torch.manual_seed(0)
    ws = [(torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16) for _ in range(copies)]
    h = torch.randn(k, device="cuda")
    nw = (torch.rand(k, device="cuda") + 0.5).to(torch.bfloat16)
    want = g.reference(kind, ws[0], h, nw)
    cw = [lt.to_cutile(w) for w in ws]
    cold = g.time_candidate(kind, t, cw, h, nw, want, n, k, graph=True)
    warm = g.time_candidate(kind, t, cw[:1], h, nw, want, n, k, graph=True)
    us = {s: nbytes / r["graph_tbps"] / 1e12 * 1e6 for s, r in (("cold", cold), ("warm", warm))}
    return {"tiles": g.label(kind, t), "mb": nbytes / 2**20, "cold_us": us["cold"],
            "warm_us": us["warm"], "cold_tbps": cold["graph_tbps"],
            "warm_tbps": warm["graph_tbps"], "ok": cold["ok"] and warm["ok"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gemvs", default="o_proj,qkv,down")
    ap.add_argument("--json")
    args = ap.parse_args()
    out = {name: probe(name) for name in args.gemvs.split(",")}
    print(f"{'gemv':<8} {'tiles':<28} {'MB':>6} {'HBM us':>8} {'L2 us':>8} {'saved':>7}")
    for name, r in out.items():
        print(f"{name:<8} {r['tiles']:<28} {r['mb']:6.1f} {r['cold_us']:8.2f} "
              f"{r['warm_us']:8.2f} {r['cold_us'] - r['warm_us']:7.2f}"
              + ("" if r["ok"] else "  WRONG RESULT"))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
