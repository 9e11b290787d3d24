"""The Qwen3 engine (examples/llm) on the H200: decode GEMV bandwidth, decode tok/s against
the memory roofline and Hugging Face, prefill, time to first token.

    python benchmarks/llm_decode.py                       # everything below, Qwen3-4B
    python benchmarks/llm_decode.py --parts gemv --sweep full --json gemv.json
    python benchmarks/llm_decode.py --parts decode,hf --configs qwen3-0.6b,qwen3-8b \
        --contexts 1024
    python benchmarks/llm_decode.py --parts prefill,ttft

Parts:
- gemv: each decode GEMV of Qwen3-4B (QKV 2560->6144, o_proj 4096->2560, gate/up
  2560->2x9728, down 9728->2560, LM head 2560->151936) in TB/s of weight bytes, cutile's
  tile candidates (`--sweep`) against torch's bf16 F.linear at batch 1; the weights rotate
  over enough copies (>= 4x the 50 MB L2) that every launch reads HBM; every candidate is
  checked against torch in f32 first. The best configs are what `llm/plan.py`'s TUNED
  table should hold.
- copy: device copy bandwidth (cutile's copy kernel and torch's clone, 1 GiB).
- decode: tok/s at each context (`--contexts`), three ways: the engine as it runs today
  (each kernel launched and waited for by the safe path), the recorded launches of one
  step replayed back to back (device time), and the same launches in a raw CUDA graph
  (what `cutile.graph` will give); against the roofline = copy bandwidth / bytes read per
  token (every weight once + the KV cache at that context); and a per-kernel breakdown of
  one step (events between kernels) with each kernel's share of the copy bandwidth.
- hf: transformers' Qwen3ForCausalLM (bf16, eager; `--hf-compile`: torch.compile with a
  static cache) on the same random weights, decode tok/s at the same contexts.
- prefill: the engine's prefill of 2048 tokens against Hugging Face's forward pass.
- ttft: `generate.py` start to first token in fresh processes, cold (empty kernel cache)
  and warm.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llm_tools as lt
from llm.config import preset
from llm.kernels.fill import copy_tiles
from llm.kernels.gemv import gemv_kernels
from llm.model import Engine
from llm.plan import GemvTiles, pow2_at_least
from llm.weights import random_weights

from cutile import api
from cutile.core import bf16, f32, i32

ROOT = Path(__file__).resolve().parents[1]
GEMVS = {"qkv": (6144, 2560, "partial"), "o_proj": (2560, 4096, "add"),
         "gate_up": (19456, 2560, "partial"), "down": (2560, 9728, "add"),
         "lm_head": (151936, 2560, "lm")}
L2 = 50 * 2**20


def candidates(n: int, k: int, kind: str, sweep: str) -> list[GemvTiles]:
    """Tile candidates of one GEMV shape."""
    if kind == "lm":
        base = [(128, 128, 2), (64, 128, 2), (128, 64, 2), (256, 64, None), (64, 256, 2),
                (32, 256, 4), (128, 128, None), (64, 128, 3)]
        return [GemvTiles(bo, bk, 1, occ) for bo, bk, occ in base]
    shapes = [(64, 128, None), (64, 128, 2), (32, 128, 3), (32, 256, 2), (128, 64, 2),
              (64, 64, 4), (16, 256, 4), (128, 128, None)]
    if sweep == "full":
        shapes += [(bo, bk, occ) for bo in (16, 32, 64, 128) for bk in (64, 128, 256)
                   for occ in (None, 2, 3, 4) if (bo, bk, occ) not in shapes]
    out = []
    for bo, bk, occ in shapes:
        tiles = -(-k // bk)
        for kps in (1, 2, 4, 5, 8, 16, 19, 20, 38):
            if tiles % kps == 0 and (sweep == "full" or kps in (2, 4, 5, 8)):
                out.append(GemvTiles(bo, bk, kps, occ))
            if tiles % kps == 0 and kps >= 4:   # a pipelined loop over KPS tiles
                out.append(GemvTiles(bo, bk, kps, occ, loop=True))
    return out


def label(t: GemvTiles) -> str:
    occ = f" occ{t.occupancy}" if t.occupancy else ""
    return f"{t.BO}x{t.BK} kps{t.KPS}{occ}{' loop' if t.loop else ''}"


def bench_gemv(name: str, sweep: str) -> dict[str, Any]:
    import torch
    import torch.nn.functional as F

    n, k, kind = GEMVS[name]
    nbytes = n * k * 2
    copies = max(1, math.ceil(4 * L2 / nbytes))
    torch.manual_seed(0)
    ws = [(torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16) for _ in range(copies)]
    h = torch.randn(k, device="cuda")
    nw = (torch.rand(k, device="cuda") + 0.5).to(torch.bfloat16)
    xb = (h * nw.float()).to(torch.bfloat16)
    ref = ws[0].float() @ xb.float()
    if kind == "lm":
        ref = ref * torch.rsqrt((h * h).mean() + 1e-6)
    s = torch.cuda.current_stream()
    res: dict[str, Any] = {"shape": [n, k], "weight_bytes": nbytes, "copies": copies,
                           "cutile": {}}
    i = [0]

    def torch_call() -> None:
        F.linear(xb[None, :], ws[i[0] % copies])
        i[0] += 1

    torch_call()
    res["torch_tbps"] = nbytes / lt.timed(torch_call, s, 20) / 1e12
    cw = [lt.to_cutile(w) for w in ws]
    cands = candidates(n, k, kind, sweep)
    with ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 4)) as pool:
        list(pool.map(lambda t: precompile(kind, t), cands))
    for t in cands:
        try:
            tbps, err = time_candidate(kind, t, cw, h, nw, ref, n, k)
            res["cutile"][label(t)] = {"tbps": tbps, "err": err, "ok": err < 2e-2}
        except Exception as exc:  # a candidate that fails is reported, not fatal
            res["cutile"][label(t)] = {"error": f"{type(exc).__name__}: {str(exc)[:160]}"}
    ok = {c: v for c, v in res["cutile"].items() if v.get("ok")}
    res["best"] = max(ok, key=lambda c: ok[c]["tbps"]) if ok else None
    return res


def precompile(kind: str, t: GemvTiles) -> None:
    g = gemv_kernels(t.occupancy)
    try:
        if kind == "lm":
            g.lm_head_argmax.compile(BO=t.BO, BK=t.BK, HB=4096)
        elif t.loop:
            (g.add_loop if kind == "add" else g.norm_partial_loop).compile(BO=t.BO, BK=t.BK)
        elif kind == "add":
            g.add.compile(BO=t.BO, BK=t.BK, KPS=t.KPS)
        else:
            g.norm_partial.compile(BO=t.BO, BK=t.BK, KPS=t.KPS)
    except Exception:  # reported when the candidate is timed
        pass


def gemv_op(kind: str, t: GemvTiles, w: Any, h: Any, nw: Any, n: int, k: int
            ) -> tuple[Any, Any]:
    """(kernel, op) of one candidate on weight copy `w`, with fresh outputs."""
    import torch

    g = gemv_kernels(t.occupancy)
    hh, nww = lt.to_cutile(h), lt.to_cutile(nw)
    if kind == "lm":
        nb = -(-n // t.BO)
        outs = (api.empty([n], f32).partition([t.BO]), api.empty([nb], f32).partition([1]),
                api.empty([nb], i32).partition([1]))
        return g.lm_head_argmax, g.lm_head_argmax(*outs, w, hh, nww, 1e-6, BK=t.BK,
                                                  HB=pow2_at_least(k))
    if kind == "add":
        xb = lt.to_cutile((h * nw.float()).to(torch.bfloat16))
        grid = (-(-n // t.BO), t.splits(k))
        if t.loop:
            return g.add_loop, g.add_loop(api.zeros([n], f32), w, xb, t.KPS, BO=t.BO,
                                          BK=t.BK, grid=grid)
        return g.add, g.add(api.zeros([n], f32), w, xb, BO=t.BO, BK=t.BK, KPS=t.KPS,
                            grid=grid)
    part = api.empty([t.splits(k), n], f32).partition([1, t.BO])
    if t.loop:
        return g.norm_partial_loop, g.norm_partial_loop(part, w, hh, nww, t.KPS, BK=t.BK)
    return g.norm_partial, g.norm_partial(part, w, hh, nww, BK=t.BK, KPS=t.KPS)


def time_candidate(kind: str, t: GemvTiles, cw: list[Any], h: Any, nw: Any, ref: Any, n: int,
                   k: int) -> tuple[float, float]:
    """(TB/s of weight bytes, max error / max |ref|): checked once, then timed over the
    rotating weight copies."""
    _, op = gemv_op(kind, t, cw[0], h, nw, n, k)
    first = op.sync()[0]
    got = first.unpartition().to_numpy() if hasattr(first, "unpartition") else first.to_numpy()
    got = got.sum(axis=0) if kind == "partial" else got
    want = ref.cpu().numpy()
    err = float(np.abs(got - want).max() / (np.abs(want).max() + 1e-9))
    ops, launches = [], []
    for w in cw:
        kern, op = gemv_op(kind, t, w, h, nw, n, k)
        ops.append(op)
        launches.append(lt.bind(kern, op))
    i = [0]

    def call() -> None:
        launches[i[0] % len(launches)].run()
        i[0] += 1

    try:
        sec = lt.timed(call, lt.stream(), 20)
    finally:
        for op in ops:              # each runs once more and hands its tensors back
            op.sync()
    return n * k * 2 / sec / 1e12, err


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


def bench_decode(name: str, contexts: list[int], steps: int, bw: float, hf: bool,
                 hf_compile: bool) -> list[dict[str, Any]]:
    cfg = preset(name)
    weights = random_weights(cfg, seed=0)
    rows = []
    rng = np.random.default_rng(0)
    for ctx in contexts:
        prompt = [int(t) for t in rng.integers(0, cfg.vocab_size, ctx + 1)]
        engine = Engine(weights, ctx + 4 * steps + 64)
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
        breakdown = kernel_breakdown(launches, bw)
        graph.close()
        row = {"config": name, "context": ctx, "first_prefill_s": t_prefill,  # with compiles
               "bytes_per_token": per_token, "roofline_tok_s": roof,
               "kernels_per_step": len(launches),
               "safe_tok_s": 1 / safe, "replay_tok_s": 1 / replayed,
               "graph_tok_s": 1 / graphed, "graph_of_roofline": 1 / graphed / roof,
               "breakdown": breakdown}
        if hf:
            row["hf"] = hf_decode(cfg, weights, prompt, steps, hf_compile)
        rows.append(row)
        print(show_decode(row), flush=True)
        del engine
    return rows


def kernel_breakdown(launches: list[lt.Launch], bw: float, trials: int = 5
                     ) -> list[dict[str, Any]]:
    """Device time of each kernel of a step, from events recorded between the launches of
    one replay (median of `trials` replays), grouped by kernel and grid."""
    cu = lt._cu()
    s = lt.stream()
    evs = [lt.check(cu.cuEventCreate(0)) for _ in range(len(launches) + 1)]
    per: list[list[float]] = [[] for _ in launches]
    spin = lt.spin(s, 40_000_000)     # the GPU waits until the whole step is enqueued
    for _ in range(trials):
        if spin is not None:
            spin()
        for e, launch in zip(evs, launches, strict=False):
            lt.check(cu.cuEventRecord(e, s))
            launch.run()
        lt.check(cu.cuEventRecord(evs[-1], s))
        lt.check(cu.cuEventSynchronize(evs[-1]))
        for i in range(len(launches)):
            per[i].append(float(lt.check(cu.cuEventElapsedTime(evs[i], evs[i + 1]))) * 1e-3)
    for e in evs:
        cu.cuEventDestroy(e)
    groups: dict[tuple[str, tuple[int, int, int]], dict[str, Any]] = {}
    for launch, times in zip(launches, per, strict=True):
        g = groups.setdefault((launch.name, launch.grid), {"kernel": launch.name,
                                                           "grid": list(launch.grid),
                                                           "count": 0, "s": 0.0, "bytes": 0})
        g["count"] += 1
        g["s"] += statistics.median(times)
        g["bytes"] += launch.nbytes
    out = sorted(groups.values(), key=lambda g: -g["s"])
    for g in out:
        g["tbps"] = g["bytes"] / g["s"] / 1e12 if g["bytes"] else None
        g["of_copy"] = g["bytes"] / g["s"] / bw if g["bytes"] else None
    return out


def hf_decode(cfg: Any, weights: Any, prompt: list[int], steps: int, compile_: bool
              ) -> dict[str, Any]:
    import torch

    model = lt.hf_model(cfg, weights)
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
            try:
                model.forward = torch.compile(model.forward, mode="reduce-overhead",
                                              fullgraph=True)
                kw = {"do_sample": False, "cache_implementation": "static"}
                model.generate(ids, max_new_tokens=steps + 1, **kw)   # compiles
                t_one = lt.wall(lambda: model.generate(ids, max_new_tokens=1, **kw), 2)
                t_all = lt.wall(lambda: model.generate(ids, max_new_tokens=steps + 1, **kw), 2)
                out["compile_tok_s"] = steps / (t_all - t_one)
            except Exception as exc:  # reported, not fatal
                out["compile_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    del model
    torch.cuda.empty_cache()
    return out


def bench_prefill(name: str, tokens: int, hf: bool) -> dict[str, Any]:
    import torch

    cfg = preset(name)
    weights = random_weights(cfg, seed=0)
    prompt = [int(t) for t in np.random.default_rng(1).integers(0, cfg.vocab_size, tokens + 1)]
    engine = Engine(weights, tokens + 64)
    engine.load_prompt(prompt)                     # compiles, warms
    out: dict[str, Any] = {"config": name, "tokens": tokens,
                           "cutile_s": lt.wall(lambda: engine.load_prompt(prompt), 3)}
    if hf:
        model = lt.hf_model(cfg, weights)
        ids = torch.tensor([prompt[:tokens]], device="cuda")

        def fwd() -> None:
            with torch.no_grad():
                model(ids, use_cache=True)
            torch.cuda.synchronize()

        fwd()
        out["hf_eager_s"] = lt.wall(fwd, 3)
    print(f"prefill {name} {tokens} tokens: cutile {out['cutile_s'] * 1e3:.1f} ms"
          + (f", HF eager {out['hf_eager_s'] * 1e3:.1f} ms" if "hf_eager_s" in out else ""))
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
    lines = [f"{r['config']} context {r['context']}: roofline {r['roofline_tok_s']:.1f} tok/s "
             f"({r['bytes_per_token'] / 1e9:.3f} GB/token); safe path {r['safe_tok_s']:.1f}, "
             f"replay {r['replay_tok_s']:.1f}, raw graph {r['graph_tok_s']:.1f} tok/s = "
             f"{100 * r['graph_of_roofline']:.1f}% of the roofline; "
             f"{r['kernels_per_step']} kernels"]
    if "hf" in r:
        lines.append(f"  HF: {json.dumps(r['hf'])}")
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
    ap.add_argument("--sweep", choices=("quick", "full"), default="quick")
    ap.add_argument("--hf-compile", action="store_true")
    ap.add_argument("--json", help="write every result here")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    results: dict[str, Any] = {}
    if "gemv" in parts:
        results["gemv"] = {}
        for name in GEMVS:
            r = bench_gemv(name, args.sweep)
            results["gemv"][name] = r
            best = r["cutile"].get(r["best"], {}) if r["best"] else {}
            print(f"{name:<8} {r['shape']}: torch {r['torch_tbps']:.2f} TB/s, cutile best "
                  f"{best.get('tbps', 0):.2f} TB/s ({r['best']})", flush=True)
    bw = None
    if parts & {"copy", "decode"}:
        results["copy"] = copy_bandwidth()
        bw = results["copy"]["cutile_tbps"] * 1e12
        print(f"copy: cutile {results['copy']['cutile_tbps']:.2f} TB/s, torch "
              f"{results['copy']['torch_tbps']:.2f} TB/s", flush=True)
    if "decode" in parts:
        assert bw is not None
        results["decode"] = [r for name in args.configs.split(",")
                             for r in bench_decode(name, [int(c) for c in
                                                          args.contexts.split(",")],
                                                   args.steps, bw, "hf" in parts,
                                                   args.hf_compile)]
    if "prefill" in parts:
        results["prefill"] = bench_prefill("qwen3-4b", 2048, "hf" in parts)
    if "ttft" in parts:
        results["ttft"] = bench_ttft("qwen3-4b")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
