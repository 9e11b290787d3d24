"""The Qwen3 engine (examples/llm) on the H200: decode GEMV bandwidth, decode tok/s against
the memory roofline and Hugging Face, prefill, time to first token.

    python benchmarks/llm_decode.py                       # everything below, Qwen3-4B
    python benchmarks/llm_decode.py --parts gemv --sweep full --json gemv.json
    python benchmarks/llm_decode.py --parts decode,hf --configs qwen3-0.6b,qwen3-8b \
        --contexts 1024
    python benchmarks/llm_decode.py --parts prefill,ttft
    python benchmarks/llm_decode.py --parts prefill_gemms,prefill \
        --prefill-plans old,new,sync,persistent,wide      # prefill variants, GEMMs alone
    python benchmarks/llm_decode.py --parts prefill_gemms,prefill \
        --prefill-plans wide,splitk,splitk2,hybrid,streamk  # atomic residual GEMMs
    python benchmarks/llm_decode.py --parts copy,decode --contexts 1024 \
        --plans default,attn_fused,split                  # decode-step variants
    python benchmarks/llm_decode.py --parts copy,decode --contexts 1024,8192 \
        --plans default,pdl                               # with and without PDL
    python benchmarks/llm_decode.py --parts copy,decode --contexts 1024,8192 \
        --plans default,early2,early4r2  # GEMV weight steps ahead of the PDL wait
    python benchmarks/llm_decode.py --parts copy,decode --contexts 1024 \
        --plans default,gate_up=32x128x20o3L              # a decode GEMV's tiles, in the step
    python benchmarks/llm_decode.py --parts copy,decode --configs qwen3-0.6b \
        --contexts 1024 --plans default,lm=64x128x1o3     # the LM head's tiles, in the step
    python benchmarks/llm_decode.py --parts smallkernels --contexts 1024

Parts:
- gemv: each decode GEMV of Qwen3-4B (QKV 2560->6144, o_proj 4096->2560, gate/up
  2560->2x9728, down 9728->2560, LM head 2560->151936) in TB/s of weight bytes, cutile's
  tile candidates (`--sweep`) against torch's bf16 F.linear at batch 1, on the stream and
  (the leaders) in a CUDA graph; plus the floor every launch pays (`llm_gemv.py`). The best
  configs are what `llm/plan.py`'s TUNED table should hold.
- copy: device copy bandwidth (cutile's copy kernel and torch's clone, 1 GiB).
- decode: tok/s at each context (`--contexts`), four ways: the engine op by op (each
  kernel launched and waited for by the safe path), the recorded launches of one step
  replayed back to back (device time), the same launches in a raw CUDA graph (no
  ownership, for comparison), and the step captured with `cutile.graph` (owning every
  buffer; each replay waited for, as generate.py does, and back to back); against the
  roofline = copy bandwidth / bytes read per token (every weight once + the KV cache at
  that context); and a per-kernel breakdown of one step (events between kernels) with each
  kernel's share of the copy bandwidth.
- hf: transformers' Qwen3ForCausalLM (bf16, eager; `--hf-compile`: torch.compile with a
  static cache) on the same random weights, decode tok/s at the same contexts.
- smallkernels (`llm_small.py`): each kernel of the step per launch, one layer's attention
  block (QKV GEMV to output projection) and the whole step, replayed from CUDA graphs, for
  each small-kernel variant (`--small-variants`; first config and context only).
- prefill: the engine's prefill of `--tokens` (2048) tokens in each `--prefill-plans`
  variant, with a per-kernel breakdown, against Hugging Face's forward pass (with `hf`);
  prefill_gemms: each prefill GEMM and attention alone in its candidate configurations,
  against cuBLAS and flash SDPA (`llm_prefill.py`).
- ttft: `generate.py` start to first token in fresh processes, cold (empty kernel cache)
  and warm.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llm_gemv
import llm_prefill
import llm_tools as lt
from llm.config import preset
from llm.kernels.fill import copy_tiles
from llm.model import Engine
from llm.plan import SMALL_VARIANTS, GemvTiles, plan_for
from llm.weights import random_weights

from cutile import api
from cutile.core import bf16

ROOT = Path(__file__).resolve().parents[1]


def copy_bandwidth() -> dict[str, float]:
    import torch

    n = 2**29                                   # 1 GiB of bf16
    src = api.zeros([n], bf16)
    dst = api.empty([n], bf16).partition([4096])
    op = copy_tiles(dst, src)
    launch = lt.bind(copy_tiles, op)
    sec = lt.timed(launch.run, lt.stream(), 5)
    op.sync()
    x = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    t = lt.timed(lambda: x.clone(), torch.cuda.current_stream(), 5)
    return {"cutile_tbps": 4 * n / sec / 1e12, "torch_tbps": 4 * n / t / 1e12}


# `--plans`: engine variants of the decode step (llm/plan.py's plan_for keywords)
# (`pdl`: every kernel with programmatic dependent launch; `--plans default,pdl` compares
# the two in one run)
PLANS: dict[str, dict[str, Any]] = {
    "default": {}, "attn_fused": {"attn_fused": True},
    "mlp_split": {"mlp_fused": False}, "split": {"mlp_fused": False, "attn_fused": False},
    "pdl": {"pdl": True}, "attn_fused_pdl": {"attn_fused": True, "pdl": True},
    "nopdl": {"pdl": False},              # PDL off (`plan.pdl_by_default` turns it on)
    # PDL on the small latency-bound kernels only, and on the GEMVs only
    "pdl_small": {"pdl": True, "pdl_kernels": (
        "attn_decode", "qkv_finish", "attn_combine", "embed_row", "select_greedy",
        "qkv_heads", "attn_decode_q", "attn_combine_heads", "attn_decode_qkv",
        "attn_combine_cache", "embed_row_rope")},
    # the small kernels and the output projection (its blocks fit beside attention's
    # combine, so starting early cannot unbalance them)
    "pdl_small_o": {"pdl": True, "pdl_kernels": (
        "qkv_heads", "attn_decode_q", "attn_combine_heads", "attn_decode_qkv",
        "attn_combine_cache", "embed_row_rope", "select_greedy", "gemv_add")},
    "pdl_gemv": {"pdl": True, "pdl_kernels": ("gemv_swiglu", "gemv_add_loop",
                                              "gemv_norm_partial", "gemv_add",
                                              "lm_head_argmax")},
}


# Plan fields by name: "noearly", no GEMV load ahead of the PDL wait; "earlyN", each decode
# GEMV's first N weight steps ahead of it (`Plan.early_steps`; default 2); "early4r2": 4 in
# the split GEMVs, 2 in the whole-row ones (gate/up + SwiGLU, LM head: `Plan.early_rows`),
# whose sm_90 code spills beyond that (`llm_early_sass.py`).
FIELD_PLANS: dict[str, dict[str, object]] = {
    "noearly": {"pdl_early": False},
    "early1": {"early_steps": 1},
    "early2": {"early_steps": 2},
    "early3": {"early_steps": 3},
    "early4": {"early_steps": 4},
    "early4r2": {"early_steps": 4, "early_rows": 2},
    "early_o3": {"early_o": 3},           # the output projection alone, 3 or 4 steps ahead
    "early_o4": {"early_o": 4},
    # the small attention kernels let the next kernel be scheduled before their own PDL
    # wait, so the output projection's early weight loads overlap attention too
    "tf_combine": {"trigger_first": ("attn_combine_heads",)},
    "tf_attn": {"trigger_first": ("attn_decode_q", "attn_combine_heads")},
    "tf_small": {"trigger_first": ("qkv_heads", "attn_decode_q", "attn_combine_heads")},
    "bf16attn": {"attn_exact": False},    # decode attention's q and p as bf16 (one MMA each)
    "exactattn": {"attn_exact": True},    # ... as hi + lo bf16 halves (f32 accuracy)
    "counted": {"attn_counted": True},    # attention's loop over the share's tiles only
    "occ3": {"attn_occupancy": 3},        # decode attention's CTAs per SM
    "occ4": {"attn_occupancy": 4},
    "ns64": {"attn_splits": 64},          # decode attention's shares per kv head
    "ns128": {"attn_splits": 128},
    "bs32": {"attn_bs": 32},              # keys per tile (the default on real configs)
    "bs64": {"attn_bs": 64},
    "w1": {"attn_warps": 1},              # decode attention on one warp (the default)
    "w4": {"attn_warps": None},           # ... on tileiras' own four warps
    "contract": {"fp_contract": True},    # every kernel with fp_contract (fma fusion)
}

GEMV_ROLES = ("qkv", "o", "gate_up", "down")
TILE_SPEC = re.compile(r"(\d+)x(\d+)x(\d+)(?:o(\d+))?(?:l(\d+))?(L?)$")


def gemv_tiles_of(spec: str) -> GemvTiles:
    """`BOxBKxKPS[o<occupancy>][l<latency>][L]` (L: the looped kernel), e.g. 32x128x20o3L
    for gate/up + SwiGLU in 32-row blocks of whole rows at occupancy 3."""
    m = TILE_SPEC.match(spec)
    if m is None:
        raise SystemExit(f"bad GEMV tiles {spec!r}: BOxBKxKPS[o<occ>][l<latency>][L]")
    bo, bk, kps, occ, lat, loop = m.groups()
    return GemvTiles(int(bo), int(bk), int(kps), int(occ) if occ else None, loop == "L",
                     int(lat) if lat else None)


def plan_named(cfg: Any, name: str) -> Any:
    """The plan a `--plans` name stands for: `PLANS` (plan_for keywords),
    `llm.plan.SMALL_VARIANTS` (field changes) and `role=tiles` (a decode GEMV's tiles,
    `gemv_tiles_of`; roles qkv, o, gate_up, down, and lm for the LM head's rows and columns
    per block and occupancy), joined by "+" (e.g. `fused+mlp_split`,
    `gate_up=32x128x20o3L+down=16x128x19o5L`)."""
    kw: dict[str, Any] = {}
    changes: dict[str, object] = {}
    for part in name.split("+"):
        role, _, spec = part.partition("=")
        if spec and role in GEMV_ROLES:
            changes[role] = gemv_tiles_of(spec)
        elif spec and role == "lm":          # the LM head: BOxBKx1[o<occupancy>]
            t = gemv_tiles_of(spec)
            changes.update(lm_bo=t.BO, lm_bk=t.BK, lm_occupancy=t.occupancy)
        elif part in PLANS:
            kw.update(PLANS[part])
        elif part in SMALL_VARIANTS:
            changes.update(SMALL_VARIANTS[part])
        elif part in FIELD_PLANS:
            changes.update(FIELD_PLANS[part])
        else:
            raise SystemExit(f"unknown plan {part!r}: one of "
                             f"{', '.join([*PLANS, *SMALL_VARIANTS, *FIELD_PLANS])}"
                             " (or several joined by +)")
    return plan_for(cfg, **kw).with_(**changes)


def bench_decode(name: str, contexts: list[int], steps: int, bw: float, hf: bool,
                 hf_compile: bool, plan: str = "default") -> list[dict[str, Any]]:
    cfg = preset(name)
    weights = random_weights(cfg, seed=0)
    rows = []
    rng = np.random.default_rng(0)
    for ctx in contexts:
        prompt = [int(t) for t in rng.integers(0, cfg.vocab_size, ctx + 1)]
        engine = Engine(weights, ctx + 4 * steps + 64, plan_named(cfg, plan))
        t_prefill = lt.wall(lambda: engine.load_prompt(prompt), 1)  # noqa: B023
        engine.decode_step()                                        # compiles, warms
        per_token = weights.decode_bytes() + engine.kv_bytes(ctx + steps)
        roof = bw / per_token
        safe = lt.wall(engine.decode_step, steps)
        launches = lt.record_step(engine, ctx + steps)
        lt.sync()
        # a step is ~300 launches: a long spin lets the host enqueue a trial ahead
        replayed = lt.timed(lambda: lt.replay(launches), lt.stream(), 2, trials=5,  # noqa: B023
                            warmup=1, cycles=40_000_000)
        graph = lt.RawGraph(launches)
        graphed = lt.timed(graph.launch, lt.stream(), 4, trials=5, warmup=1)
        # the raw graph launched and waited for per token: what a replay's launch and wait
        # cost without cutile's ownership (compare `cutile_graph_tok_s`)
        raw_waited = lt.wall(lambda: (graph.launch(), lt.sync()), steps)  # noqa: B023
        breakdown = kernel_breakdown(launches, bw)
        graph.close()
        subsets = subset_times(launches)
        lt.sync()
        cutile_graph = cutile_graph_decode(engine, steps)
        row = {"config": name, "plan": plan, "context": ctx,
               "first_prefill_s": t_prefill,  # with compiles
               "bytes_per_token": per_token, "roofline_tok_s": roof,
               "kernels_per_step": len(launches),
               "safe_tok_s": 1 / safe, "replay_tok_s": 1 / replayed,
               "graph_tok_s": 1 / graphed, "graph_of_roofline": 1 / graphed / roof,
               "raw_graph_waited_tok_s": 1 / raw_waited,
               **cutile_graph,
               "cutile_graph_of_roofline": cutile_graph["cutile_graph_tok_s"] / roof,
               "breakdown": breakdown, "subsets": subsets}
        if hf:
            row["hf"] = hf_decode(cfg, weights, prompt, steps, hf_compile)
        rows.append(row)
        print(show_decode(row), flush=True)
        del engine
    return rows


def cutile_graph_decode(engine: Engine, steps: int) -> dict[str, Any]:
    """The step captured once with `cutile.graph` (owning the engine's weights, cache and
    buffers) and replayed: each replay waited for (what `generate.py` does per token), and
    `steps` replays back to back with one wait (device throughput)."""
    import time

    t0 = time.perf_counter()
    g = engine.capture_decode()
    capture = time.perf_counter() - t0
    g.step().wait()                                                  # first replay, warm
    waited = lt.wall(lambda: g.step().wait(), steps)
    host = []                 # the host's part of a replay: `step()` until it returns
    for _ in range(steps):
        t0 = time.perf_counter()
        r = g.step()
        host.append(time.perf_counter() - t0)
        r.wait()
    t0 = time.perf_counter()
    for _ in range(steps):
        g.step()
    g.wait()
    back_to_back = (time.perf_counter() - t0) / steps
    launches = g.launches
    g.close()
    return {"cutile_graph_tok_s": 1 / waited, "cutile_graph_b2b_tok_s": 1 / back_to_back,
            "cutile_graph_replay_host_us": float(np.median(host)) * 1e6,
            "cutile_graph_capture_s": capture, "cutile_graph_launches": launches}


def subset_times(launches: list[lt.Launch]) -> dict[str, float]:
    """Device seconds of one step's launches replayed in a raw CUDA graph (back to back,
    PDL edges as in the step), whole and split in two: the weight-streaming kernels
    (GEMVs, LM head) alone and the rest alone. Without the events of `kernel_breakdown`
    in between, so kernels overlap as they do in the step; what each half costs next to
    the other (the sum exceeds the whole by what they overlap)."""
    def streaming(launch: lt.Launch) -> bool:
        return launch.name.startswith(("gemv_", "lm_head"))

    out = {}
    for key, part in (("step_s", launches),
                      ("gemvs_s", [x for x in launches if streaming(x)]),
                      ("small_s", [x for x in launches if not streaming(x)])):
        graph = lt.RawGraph(part)
        out[key] = lt.timed(graph.launch, lt.stream(), 4, trials=5, warmup=1)
        graph.close()
    return out


def kernel_breakdown(launches: list[lt.Launch], bw: float, trials: int = 5
                     ) -> list[dict[str, Any]]:
    """Device time of each kernel of a step, from events recorded between the launches of
    one replay (median of `trials` replays), grouped by kernel and grid."""
    times = lt.launch_times(launches, trials)
    groups: dict[tuple[str, tuple[int, int, int]], dict[str, Any]] = {}
    for launch, sec in zip(launches, times, strict=True):
        g = groups.setdefault((launch.name, launch.grid), {"kernel": launch.name,
                                                           "grid": list(launch.grid),
                                                           "count": 0, "s": 0.0, "bytes": 0})
        g["count"] += 1
        g["s"] += sec
        g["bytes"] += launch.nbytes
    out = sorted(groups.values(), key=lambda g: -g["s"])
    for g in out:
        g["tbps"] = g["bytes"] / g["s"] / 1e12 if g["bytes"] else None
        g["of_copy"] = g["bytes"] / g["s"] / bw if g["bytes"] else None
    return out


def hf_decode(cfg: Any, weights: Any, prompt: list[int], steps: int, compile_: bool
              ) -> dict[str, Any]:
    import torch

    model = lt.hf_model(cfg, weights, attn="sdpa")
    ids = torch.tensor([prompt], device="cuda")
    out: dict[str, Any] = {}
    with torch.no_grad():
        res = model(ids, use_cache=True)
        past, nxt = res.past_key_values, res.logits[:, -1].argmax(-1, keepdim=True)
        torch.cuda.synchronize()

        def step() -> None:
            nonlocal past, nxt
            r = model(nxt, past_key_values=past, use_cache=True)
            past, nxt = r.past_key_values, r.logits[:, -1].argmax(-1, keepdim=True)
            torch.cuda.synchronize()

        step()
        out["eager_tok_s"] = 1 / lt.wall(step, steps)
        if compile_:
            # transformers compiles the forward itself when generate() runs on a static
            # cache (its recommended torch.compile path); wrapping forward in our own
            # reduce-overhead compile breaks on its CUDA-graph output buffers
            try:
                kw = {"do_sample": False, "cache_implementation": "static"}
                model.generate(ids, max_new_tokens=steps + 1, **kw)   # compiles
                t_one = lt.wall(lambda: model.generate(ids, max_new_tokens=1, **kw), 2)
                t_all = lt.wall(lambda: model.generate(ids, max_new_tokens=steps + 1, **kw), 2)
                out["compile_tok_s"] = steps / (t_all - t_one)
                out["compiled"] = hasattr(model, "_compiled_call")
            except Exception as exc:  # reported, not fatal
                out["compile_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    del model
    torch.cuda.empty_cache()
    return out


def bench_ttft(name: str) -> dict[str, Any]:
    """Fresh processes of generate.py: cold (an empty kernel cache) and warm."""
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, CUTILE_CACHE_DIR=cache, CUTILE_QUIET="1")
        for run in ("cold", "warm"):
            proc = subprocess.run(
                [sys.executable, str(ROOT / "examples/llm/generate.py"), "--random-weights",
                 name, "--prompt-len", "128", "--new-tokens", "2", "--no-progress"],
                capture_output=True, text=True, env=env, timeout=600)
            line = [ln for ln in proc.stdout.splitlines() if "time to first token" in ln]
            got = line[0].split("time to first token")[1].strip() if line else None
            out[run] = got or proc.stderr[-300:]
    print(f"time to first token ({name}, random weights): cold {out['cold']}, warm {out['warm']}")
    return out


def show_decode(r: dict[str, Any]) -> str:
    lines = [f"{r['config']} ({r['plan']} plan) context {r['context']}: roofline "
             f"{r['roofline_tok_s']:.1f} tok/s "
             f"({r['bytes_per_token'] / 1e9:.3f} GB/token); safe path {r['safe_tok_s']:.1f}, "
             f"replay {r['replay_tok_s']:.1f}, raw graph {r['graph_tok_s']:.1f} tok/s = "
             f"{100 * r['graph_of_roofline']:.1f}% of the roofline, cutile.graph "
             f"{r['cutile_graph_tok_s']:.1f} tok/s waited per token = "
             f"{100 * r['cutile_graph_of_roofline']:.1f}% ({r['cutile_graph_b2b_tok_s']:.1f} "
             f"back to back; captured in {r['cutile_graph_capture_s'] * 1e3:.0f} ms, "
             f"{r['cutile_graph_launches']} launches, replay() on the host "
             f"{r['cutile_graph_replay_host_us']:.1f} us); raw graph waited per token "
             f"{r['raw_graph_waited_tok_s']:.1f} tok/s; {r['kernels_per_step']} kernels"]
    if "hf" in r:
        lines.append(f"  HF: {json.dumps(r['hf'])}")
    sub = r["subsets"]
    lines.append(f"  raw graph of the step {sub['step_s'] * 1e3:.3f} ms; its GEMVs and LM head "
                 f"alone {sub['gemvs_s'] * 1e3:.3f} ms, the other kernels alone "
                 f"{sub['small_s'] * 1e3:.3f} ms")
    for g in r["breakdown"][:14]:
        bw = f"{g['tbps']:.2f} TB/s ({100 * g['of_copy']:.0f}% of copy)" if g["tbps"] else ""
        lines.append(f"  {g['kernel']:<20} grid {g['grid']!s:<16} x{g['count']:<3} "
                     f"{g['s'] * 1e6:8.1f} us  {bw}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="gemv,copy,decode,hf,prefill,ttft")
    ap.add_argument("--configs", default="qwen3-4b")
    ap.add_argument("--contexts", default="1024,8192")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--sweep", choices=("quick", "full", "plan"), default="quick",
                    help="--parts gemv: the curated candidates, a grid, or only the "
                    "engine's own tiles (also timed as PDL twins in a graph)")
    ap.add_argument("--hf-compile", action="store_true")
    ap.add_argument("--plans", default="default",
                    help="decode-step variants to time: "
                         f"{', '.join([*PLANS, *SMALL_VARIANTS, *FIELD_PLANS])} (or "
                         "several joined by +)")
    ap.add_argument("--small-variants", default=None,
                    help="--parts smallkernels: the plans to time (default: "
                         "llm_small.DEFAULT_VARIANTS)")
    ap.add_argument("--tokens", type=int, default=2048, help="prefill tokens")
    ap.add_argument("--prefill-plans", default="old,wide",
                    help="prefill variants to time (llm/prefill_plan.py), e.g. "
                         "old,new,sync,persistent,wide,splitk,splitk2,hybrid,streamk")
    ap.add_argument("--gemvs", help="the GEMV shapes of --parts gemv (llm_gemv.GEMVS; default "
                    "Qwen3-4B's five), e.g. qkv_8b,o_proj_8b,gate_up_8b,down_8b")
    ap.add_argument("--json", help="write every result here")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    results: dict[str, Any] = {}
    if "gemv" in parts:
        results["gemv_floor"] = llm_gemv.bench_floor()
        print("launch floor (us per launch): " + ", ".join(
            f"{k} {v:.2f}" for k, v in results["gemv_floor"].items()), flush=True)
        results["gemv"] = {}
        for name in args.gemvs.split(",") if args.gemvs else llm_gemv.GEMVS_4B:
            results["gemv"][name] = r = llm_gemv.bench_gemv(name, args.sweep)
            print(llm_gemv.show(name, r), flush=True)
    bw = None
    if parts & {"copy", "decode"}:
        results["copy"] = copy_bandwidth()
        bw = results["copy"]["cutile_tbps"] * 1e12
        print(f"copy: cutile {results['copy']['cutile_tbps']:.2f} TB/s, torch "
              f"{results['copy']['torch_tbps']:.2f} TB/s", flush=True)
    if "decode" in parts:
        assert bw is not None
        contexts = [int(c) for c in args.contexts.split(",")]
        plans = args.plans.split(",")
        results["decode"] = [r for name in args.configs.split(",") for plan in plans
                             for r in bench_decode(name, contexts, args.steps, bw,
                                                   "hf" in parts and plan == plans[0],
                                                   args.hf_compile, plan)]
    if "smallkernels" in parts:
        import llm_small

        results["smallkernels"] = llm_small.bench_small(
            args.configs.split(",")[0], int(args.contexts.split(",")[0]),
            args.small_variants or llm_small.DEFAULT_VARIANTS, plan_named)
    if parts & {"prefill", "prefill_gemms"}:
        results.update(llm_prefill.main_parts(parts, "qwen3-4b", args.tokens,
                                              args.prefill_plans.split(","), args.hf_compile))
    if "ttft" in parts:
        results["ttft"] = bench_ttft("qwen3-4b")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
