"""How many weight loads of each decode GEMV tileiras keeps ahead of the PDL wait, per
`Plan.early_steps` (no GPU: each kernel is assembled for sm_90 and its SASS read back).

    python benchmarks/llm_early_sass.py                         # the engine's plans
    python benchmarks/llm_early_sass.py --configs qwen3-4b --ahead 1,2,3,4 \
        --qkv 128x64x8o2,64x64x8o4,32x128x4o4        # QKV (`gemv_ss`) tile candidates

The lowering puts `griddepcontrol.wait` after a GEMV's first `ahead` weight loads
(`llm.kernels.gemv.weight_steps`); tileiras then schedules the SASS, and may sink a TMA
load (UTMALDG) below the wait (ACQBULK) or keep it above. Each row: the weight/activation
loads (UTMALDG, LDG) before and after the wait, registers, local memory (spills: LDL/STL)
and CTAs per SM.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from llm.config import preset
from llm.kernels.gemv import gemv_kernels
from llm.kernels.gemv_ss import gemv_ss_kernels
from llm.kernels.pdl import with_pdl
from llm.plan import GemvTiles, plan_for, pow2_at_least

from cutile.dump import resources, sass

LOAD = re.compile(r"\b(UTMALDG|LDG)")
SPILL = re.compile(r"\b(LDL|STL)\b")
TILES = re.compile(r"(\d+)x(\d+)x(\d+)(?:o(\d+))?(L?)$")


def scan(kernel: Any, consts: dict[str, int]) -> dict[str, Any]:
    """Loads before and after the wait in `kernel`'s PDL twin (early weight loads on)."""
    cubin = with_pdl(kernel).compile(target="sm_90", **consts).cubin
    text = sass(cubin)
    if text is None:
        raise SystemExit("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    lines = [ln for ln in text.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", ln)]
    wait = next(i for i, ln in enumerate(lines) if "ACQBULK" in ln)
    loads = [i for i, ln in enumerate(lines) if LOAD.search(ln)]
    before = sum(1 for i in loads if i < wait)
    res = resources(cubin)
    return {"before": before, "after": len(loads) - before, "spill": bool(SPILL.search(text)),
            "regs": res.registers if res else None,
            "ctas": res.blocks_per_sm() if res else None}


def cases(cfg: Any, plan: Any, ahead: int, qkv: list[GemvTiles]) -> list[tuple[str, Any, Any]]:
    """(role, kernel, consts) of the decode step's GEMVs at the plan's tiles."""
    hb = pow2_at_least(cfg.hidden_size)
    out = []
    for t in [plan.qkv, *qkv]:
        g = gemv_ss_kernels(t.occupancy, t.latency, ahead)
        k = g.norm_partial_ss_loop if t.loop else g.norm_partial_ss
        out.append((f"qkv {tiles_name(t)}", k,
                    dict(BO=t.BO, BK=t.BK, **({} if t.loop else {"KPS": t.KPS}))))
    for role in ("o", "down"):
        t = getattr(plan, role)
        g = gemv_kernels(t.occupancy, t.latency, ahead)
        out.append((f"{role} {tiles_name(t)}", g.add_loop if t.loop else g.add,
                    dict(BO=t.BO, BK=t.BK, **({} if t.loop else {"KPS": t.KPS}))))
    t = plan.gate_up
    out.append((f"gate_up {tiles_name(t)}", gemv_kernels(t.occupancy, t.latency, ahead).swiglu,
                dict(BO=t.BO, BK=t.BK, HB=hb, UP=cfg.intermediate_size // t.BO)))
    lm = gemv_kernels(plan.lm_occupancy, None, ahead).lm_head_argmax
    out.append((f"lm_head {plan.lm_bo}x{plan.lm_bk}o{plan.lm_occupancy}", lm,
                dict(BO=plan.lm_bo, BK=plan.lm_bk, HB=hb)))
    return out


def tiles_name(t: GemvTiles) -> str:
    lat = f"l{t.latency}" if t.latency else ""
    return f"{t.BO}x{t.BK}x{t.KPS}o{t.occupancy}{lat}{'L' if t.loop else ''}"


def parse_tiles(spec: str) -> GemvTiles:
    m = TILES.match(spec)
    if m is None:
        raise SystemExit(f"bad tiles {spec!r}: BOxBKxKPS[o<occupancy>][L]")
    bo, bk, kps, occ, loop = m.groups()
    return GemvTiles(int(bo), int(bk), int(kps), int(occ) if occ else None, loop == "L")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default="qwen3-4b,qwen3-8b,qwen3-0.6b")
    ap.add_argument("--ahead", default="1,2,4")
    ap.add_argument("--qkv", default="", help="more QKV tiles to scan (BOxBKxKPS[o<occ>][L])")
    args = ap.parse_args()
    qkv = [parse_tiles(s) for s in args.qkv.split(",") if s]
    aheads = [int(a) for a in args.ahead.split(",")]
    print(f"{'config':11s} {'GEMV':26s} " + " ".join(f"{'ahead ' + str(a):>22s}" for a in aheads))
    for name in args.configs.split(","):
        cfg = preset(name)
        plan = plan_for(cfg)
        rows: dict[str, list[str]] = {}
        for a in aheads:
            for role, kernel, consts in cases(cfg, plan, a, qkv):
                r = scan(kernel, consts)
                cell = (f"{r['before']}/{r['after']} r{r['regs']} x{r['ctas']}"
                        f"{' SPILL' if r['spill'] else ''}")
                rows.setdefault(role, []).append(cell)
        for role, cells in rows.items():
            print(f"{name:11s} {role:26s} " + " ".join(f"{c:>22s}" for c in cells), flush=True)
    print("cells: weight/activation loads before/after the wait, registers, CTAs per SM")


if __name__ == "__main__":
    main()
