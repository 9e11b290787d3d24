"""What the decode GEMV candidates of `llm_gemv.py` look like before they run: each is
assembled for sm_90 here (tileiras, no GPU) and read back from the cubin (registers,
threads, shared memory, spills), and the arithmetic of one launch on the H200's 132 SMs
follows: CTAs per SM, waves, load stages in shared memory and the bytes in flight when the
kernel starts.

    python benchmarks/llm_gemv_static.py               # every candidate of the quick set
    python benchmarks/llm_gemv_static.py --shapes qkv,o_proj

Why it matters: a Qwen3-4B decode GEMV moves 21-100 MB, 5-24 us at the copy bandwidth, and
every launch also pays a fixed cost (launch, the first bytes' latency, the tail). A grid that
fits in one wave, blocks of equal work and enough bytes in flight from the first moment
(latency x bandwidth: ~1 us x 4.2 TB/s ~ 4 MB over the GPU) are what a candidate must have
to get close to the copy bandwidth; this prints them so the GPU run only times candidates
that have them (and a few controls that do not).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from llm.plan import SMS, GemvTiles, cdiv

from cutile.dump import find_cuobjdump

REGS_PER_SM = 65536
SMEM_PER_SM = 233472          # 228 KiB; each CTA also reserves 1 KiB
MAX_CTAS = 32
MAX_THREADS = 2048


def cubin_resources(cubin: bytes) -> dict[str, int]:
    """Registers, shared memory, local memory (spills) and threads per CTA of a cubin."""
    tool = find_cuobjdump()
    if tool is None:
        raise SystemExit("needs cuobjdump: pip install nvidia-cuda-cuobjdump")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        res = subprocess.run([str(tool), "-res-usage", str(path)], capture_output=True,
                             text=True, check=True).stdout
        elf = subprocess.run([str(tool), "-elf", str(path)], capture_output=True, text=True,
                             check=True).stdout
    usage = {k.lower(): int(v) for k, v in re.findall(r"(REG|SHARED|LOCAL|STACK):(\d+)", res)}
    ntid = re.search(r"EIATTR_REQNTID\s*\n\s*Format:\s*\S+\s*\n\s*Value:\s*(0x[0-9a-f]+)", elf)
    usage["threads"] = int(ntid.group(1), 16) if ntid else 128
    return usage


def ctas_per_sm(r: dict[str, int]) -> int:
    warps = cdiv(r["threads"], 32)
    regs_per_warp = cdiv(max(r["reg"], 1) * 32, 256) * 256
    by_regs = REGS_PER_SM // (regs_per_warp * warps)
    by_smem = SMEM_PER_SM // (r["shared"] + 1024)
    return max(0, min(by_regs, by_smem, MAX_CTAS, MAX_THREADS // r["threads"]))


def analyse(kind: str, t: GemvTiles, n: int, k: int, cubin: bytes) -> dict[str, Any]:
    """The launch arithmetic of candidate `t` for an (n, k) GEMV of `kind`."""
    r = cubin_resources(cubin)
    if kind == "lm":
        blocks, per_block, stage = cdiv(n, t.BO), t.BO * k * 2, t.BO * t.BK * 2
    elif kind == "swiglu":
        blocks, per_block, stage = n // 2 // t.BO, t.BO * k * 4, t.BO * t.BK * 4
    elif kind == "attn_add":                    # + the shares' f32 slice per weight tile
        from llm_gemv import ATTN

        blocks, per_block = cdiv(n, t.BO) * ATTN["KV"], t.BO * t.KPS * t.BK * 2
        stage = t.BO * t.BK * 2 + ATTN["NS"] * t.BK * 4
    else:
        blocks = cdiv(n, t.BO) * t.splits(k)
        per_block, stage = t.BO * t.KPS * t.BK * 2, t.BO * t.BK * 2
    per_sm = ctas_per_sm(r)
    slots = per_sm * SMS
    stages = max(1, r["shared"] // stage)           # the x vectors and barriers are small
    in_flight = min(per_block, stages * stage)
    return {"regs": r["reg"], "threads": r["threads"], "smem_kb": r["shared"] / 1024,
            "spills": r["local"] > 0, "ctas_per_sm": per_sm, "blocks": blocks,
            "waves": blocks / slots if slots else float("inf"), "block_kb": per_block / 1024,
            "stages": stages, "start_mb": min(blocks, slots) * in_flight / 2**20}


def main() -> None:
    from llm_gemv import GEMVS, candidates, compile_candidate, label

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=",".join(GEMVS))
    ap.add_argument("--sweep", choices=("quick", "full"), default="quick")
    args = ap.parse_args()
    for name in args.shapes.split(","):
        n, k, kind = GEMVS[name]
        print(f"{name} {n}x{k} ({n * k * 2 / 1e6:.1f} MB)")
        print(f"  {'candidate':<34}{'regs':>5}{'thr':>5}{'smem':>7}{'cta/SM':>7}{'blocks':>7}"
              f"{'waves':>7}{'KB/blk':>8}{'stages':>7}{'MB@t0':>7}")
        for ck, t in candidates(n, k, kind, args.sweep):
            try:
                a = analyse(ck, t, n, k, compile_candidate(ck, t, n, k))
            except Exception as exc:  # a candidate that does not assemble is shown, not fatal
                print(f"  {label(ck, t):<34}{type(exc).__name__}: {str(exc)[:80]}")
                continue
            print(f"  {label(ck, t):<34}{a['regs']:>5}{a['threads']:>5}{a['smem_kb']:>6.0f}K"
                  f"{a['ctas_per_sm']:>7}{a['blocks']:>7}{a['waves']:>7.2f}{a['block_kb']:>8.0f}"
                  f"{a['stages']:>7}{a['start_mb']:>7.1f}{'  SPILLS' if a['spills'] else ''}")


if __name__ == "__main__":
    main()
