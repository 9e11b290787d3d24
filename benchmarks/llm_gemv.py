"""The decode GEMVs of Qwen3-4B on the GPU (`llm_decode.py --parts gemv`): each shape's tile
candidates against torch's bf16 F.linear at batch 1, in TB/s of weight bytes, and what a
launch costs before it moves a byte.

- Each candidate runs back to back on one stream (20 launches between two events, the
  GPU held by a spin kernel while they are enqueued), over rotating copies of the weight
  (>= 4x the 50 MB L2, so every launch reads HBM), checked against torch in f32 first.
  The best few per shape are timed again captured in a CUDA graph (what the engine's
  decode step will be), and so is torch.
- `floor`: a kernel that does nothing (132 blocks storing one float) and one that loads a
  single (64, 64) weight tile per block, back to back on the stream and in a graph: the
  launch-to-launch cost and the first bytes' latency, which every GEMV pays on top of its
  bytes / bandwidth. With them, a GEMV's time splits into fixed cost + streaming.

Kinds: "partial" (split-K partial sums, QKV), "add" (atomic adds into the residual: o_proj,
down), "swiglu" (gate/up fused with SwiGLU, whole rows), "attn_add" (o_proj with attention's
combine of Qwen3-4B's 32 flash-decoding shares folded in; `combine_us` beside it is the
`attn_combine` kernel it replaces), "lm" (LM head + argmax).
"""

from __future__ import annotations

import math
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llm_tools as lt
from llm.config import preset
from llm.kernels.gemv import gemv_kernels
from llm.kernels.pdl import with_pdl
from llm.plan import GemvTiles, cdiv, plan_for, pow2_at_least

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, bf16, block_id, f32, i32, zeros

# Qwen3-4B's attention at decode: kv heads, query heads per kv head, head_dim, shares
ATTN = {"KV": 8, "G": 4, "D": 128, "NS": 32}
GEMVS = {"qkv": (6144, 2560, "partial"), "o_proj": (2560, 4096, "add"),
         "gate_up": (19456, 2560, "partial"), "down": (2560, 9728, "add"),
         "lm_head": (151936, 2560, "lm"),
         # Qwen3-8B (hidden 4096, intermediate 12288, 32 query and 8 kv heads of 128)
         "qkv_8b": (6144, 4096, "partial"), "o_proj_8b": (4096, 4096, "add"),
         "gate_up_8b": (24576, 4096, "partial"), "down_8b": (4096, 12288, "add")}
GEMVS_4B = ("qkv", "o_proj", "gate_up", "down", "lm_head")
L2 = 50 * 2**20
EPS = 1e-6

Candidate = tuple[str, GemvTiles]


def T(bo: int, bk: int, kps: int, occ: int | None = None, loop: bool = False,
      lat: int | None = None) -> GemvTiles:
    return GemvTiles(bo, bk, kps, occ, loop, lat)


# The quick set: the 2026-11-30 winners (controls) and the shapes `llm_gemv_static.py` shows
# fitting one wave with several MB in flight at the start. Whole-row candidates (KPS = every
# column tile: one split) have equal work per block and no partial sums.
QUICK: dict[str, list[Candidate]] = {
    "qkv": [("partial", t) for t in (
        T(128, 64, 8, 2), T(64, 64, 8, 4), T(128, 64, 8, 2, True, 10), T(32, 128, 5, 3),
        T(64, 128, 4, 2), T(128, 128, 4), T(16, 128, 20, 3, True), T(32, 128, 20, 2, True, 10),
        T(32, 64, 40, 3, True))],
    "o_proj": [("add", t) for t in (
        T(64, 64, 8, 4), T(32, 128, 8, 3), T(16, 256, 8, 4), T(64, 128, 8, 2),
        T(128, 64, 8, 2), T(32, 128, 8, 3, True), T(64, 64, 16, 2, True, 10),
        T(32, 128, 16, 2, True, 10), T(16, 256, 16, 2, True, 10), T(128, 128, 4))] + [
        ("attn_add", t) for t in (T(64, 64, 8, 4), T(128, 64, 8, 2), T(64, 128, 4, 3),
                                  T(64, 64, 8, 3), T(128, 128, 4, 2))],
    "gate_up": [("partial", T(64, 64, 8, 4)), ("partial", T(64, 64, 5, 4)),
                ("partial", T(32, 128, 4, 3))] + [("swiglu", t) for t in (
        T(64, 64, 40, 2, True, 10), T(64, 64, 40, 2, True), T(32, 64, 40, 3, True),
        T(64, 32, 80, 2, True, 10), T(32, 128, 20, 3, True), T(128, 64, 40, None, True))],
    "down": [("add", t) for t in (
        T(32, 128, 19, 3, True), T(64, 64, 4, 4), T(32, 128, 4, 3), T(32, 128, 19, 2, True, 10),
        T(64, 128, 19, 2, True, 10), T(64, 64, 38, 2, True, 10),
        T(32, 128, 38, 2, True, 10), T(16, 256, 38, 2, True, 10), T(128, 64, 8, 2))],
    "lm_head": [("lm", t) for t in (
        T(128, 128, 1, 2), T(64, 256, 1, 2), T(64, 128, 1, 3), T(128, 64, 1, 2),
        T(128, 64, 1, 2, False, 10), T(64, 128, 1, 2, False, 10))],
}


# Ramp and tail of the two short GEMVs (QKV 31 MB, o_proj 21 MB: ~4 us of fixed cost on
# 7.5 and 5 us of streaming): more, smaller blocks that still fit one wave at their
# occupancy (blocks <= occupancy x 132), so the last SMs to finish hold less work, and one
# of fewer, longer blocks. QKV: 384, 384, 192 blocks; o_proj: 640, 640, 320, 640.
QUICK["qkv"] += [("partial", t) for t in (T(64, 64, 10, 4), T(64, 128, 5, 3),
                                          T(128, 64, 10, 2))]
QUICK["o_proj"] += [("add", t) for t in (T(64, 64, 4, 5), T(32, 128, 4, 5),
                                         T(128, 64, 4, 3), T(32, 64, 8, 5))]

# Qwen3-8B: what `plan.gemv_tiles`' rule picks (the controls: QKV 64x128 kps8 occ2 is 384
# blocks on 264 slots, down 768), and grids that fit one wave at their occupancy (blocks <=
# occupancy x 132) with several MB in flight, as the 4B winners do. QKV: 192-384 blocks;
# o_proj: 256-512; gate/up (SwiGLU, whole rows): 192 or 384; down: 256-384.
QUICK["qkv_8b"] = [("partial", t) for t in (
    T(64, 128, 8, 2), T(128, 64, 16, 2), T(64, 64, 16, 4), T(64, 128, 8, 3), T(128, 128, 8, 2),
    T(32, 128, 32, 3, True), T(128, 64, 16, 2, True, 10), T(64, 64, 16, 4, True))]
QUICK["o_proj_8b"] = [("add", t) for t in (
    T(64, 128, 8, 2), T(64, 64, 8, 4), T(32, 128, 16, 3), T(128, 64, 8, 2), T(32, 128, 8, 4),
    T(64, 64, 16, 2, True, 10), T(32, 128, 16, 3, True))]
QUICK["gate_up_8b"] = [("swiglu", t) for t in (
    T(64, 64, 64, 2, True, 10), T(64, 64, 64, 2, True), T(32, 64, 64, 3, True),
    T(32, 128, 32, 3, True), T(32, 64, 64, 3, True, 10), T(128, 64, 64, None, True))]
QUICK["down_8b"] = [("add", t) for t in (
    T(64, 128, 8, 2), T(32, 128, 32, 3, True), T(64, 128, 24, 2, True, 10),
    T(64, 64, 48, 2, True, 10), T(32, 128, 48, 2, True, 10), T(16, 256, 48, 2, True, 10),
    T(64, 64, 48, 4, True), T(32, 128, 24, 3, True))]


def candidates(n: int, k: int, kind: str, sweep: str) -> list[Candidate]:
    """Tile candidates of one GEMV shape: the curated quick set, or (`full`) a grid."""
    name = next(g for g, v in GEMVS.items() if v[:2] == (n, k))
    if sweep == "plan":
        return [plan_tiles(name)]
    if sweep == "quick":
        return QUICK[name]
    if kind == "lm":
        return [("lm", T(bo, bk, 1, occ, False, lat)) for bo in (64, 128, 256)
                for bk in (64, 128, 256) for occ in (None, 2, 3) for lat in (None, 10)
                if bo * bk <= 32768]
    out: list[Candidate] = []
    kinds = [kind] + (["swiglu"] if name == "gate_up" else [])
    for ck, bo, bk, occ in ((ck, bo, bk, occ) for ck in kinds for bo in (16, 32, 64, 128)
                            for bk in (64, 128, 256) for occ in (None, 2, 3, 4)):
        tiles = cdiv(k, bk)
        lats = (None, 10) if occ == 2 else (None,)    # deeper loop pipelines: occupancy 2
        if ck != "swiglu":
            out += [(ck, T(bo, bk, kps, occ)) for kps in (2, 4, 5, 8) if tiles % kps == 0]
        loops = [tiles] if ck == "swiglu" else [d for d in range(8, tiles + 1) if tiles % d == 0]
        out += [(ck, T(bo, bk, kps, occ, True, lat)) for kps in loops for lat in lats]
    return out


def plan_of(name: str) -> Any:
    """The engine's plan for the model a GEMV shape belongs to (GEMVS: "_8b" or 4B)."""
    return plan_for(preset("qwen3-8b" if name.endswith("_8b") else "qwen3-4b"))


def plan_tiles(name: str) -> Candidate:
    """The engine's own tiles for one GEMV shape (`plan_for` of its model's config)."""
    plan = plan_of(name)
    role = name.removesuffix("_8b")
    if role == "lm_head":
        return "lm", T(plan.lm_bo, plan.lm_bk, 1, plan.lm_occupancy)
    if role == "gate_up":
        return "swiglu", plan.gate_up
    return {"qkv": ("partial", plan.qkv), "o_proj": ("add", plan.o),
            "down": ("add", plan.down)}[role]


def plan_ahead(name: str, kind: str) -> int:
    """The weight steps the engine loads ahead of each PDL wait in this GEMV."""
    return plan_of(name).early(kind in ("swiglu", "lm"))


def label(kind: str, t: GemvTiles) -> str:
    occ = f" occ{t.occupancy}" if t.occupancy else ""
    lat = f" lat{t.latency}" if t.latency else ""
    return f"{kind} {t.BO}x{t.BK} kps{t.KPS}{occ}{lat}{' loop' if t.loop else ''}"


def compile_candidate(kind: str, t: GemvTiles, n: int, k: int) -> bytes:
    """The sm_90 cubin of a candidate (assembled here or on the GPU machine)."""
    g = gemv_kernels(t.occupancy, t.latency)
    hb = pow2_at_least(k)
    if kind == "lm":
        return g.lm_head_argmax.compile(BO=t.BO, BK=t.BK, HB=hb).cubin
    if kind == "swiglu":
        return g.swiglu.compile(BO=t.BO, BK=t.BK, HB=hb, UP=n // 2 // t.BO).cubin
    if kind == "attn_add":
        return g.attn_add.compile(BO=t.BO, BK=t.BK, G=ATTN["G"], D=ATTN["D"],
                                  NS=ATTN["NS"]).cubin
    if t.loop:
        kern = g.add_loop if kind == "add" else g.norm_partial_loop
        return kern.compile(BO=t.BO, BK=t.BK).cubin
    kern = g.add if kind == "add" else g.norm_partial
    return kern.compile(BO=t.BO, BK=t.BK, KPS=t.KPS).cubin


def gemv_op(kind: str, t: GemvTiles, w: Any, h: Any, nw: Any, n: int, k: int,
            pdl_ahead: int | None = None) -> tuple[Any, Any]:
    """(kernel, op) of one candidate on weight copy `w`, with fresh outputs; with
    `pdl_ahead`, the kernel's PDL twin (that many weight steps ahead of its wait), as the
    engine launches it."""
    import torch

    g = PdlTwins(gemv_kernels(t.occupancy, t.latency, pdl_ahead or 1), pdl_ahead is not None)
    hh, nww = lt.to_cutile(h), lt.to_cutile(nw)
    hb = pow2_at_least(k)
    if kind == "lm":
        nb = cdiv(n, t.BO)
        outs = (api.empty([n], f32).partition([t.BO]), api.empty([nb], f32).partition([1]),
                api.empty([nb], i32).partition([1]))
        return g.lm_head_argmax, g.lm_head_argmax(*outs, w, hh, nww, EPS, BK=t.BK, HB=hb)
    if kind == "swiglu":
        act = api.empty([n // 2], bf16).partition([t.BO])
        return g.swiglu, g.swiglu(act, w, hh, nww, EPS, BK=t.BK, HB=hb, UP=n // 2 // t.BO)
    if kind == "attn_add":
        o, m, sums = (api.from_numpy(a) for a in attn_shares())
        return g.attn_add, g.attn_add(api.zeros([n], f32), w, o, m, sums, BO=t.BO, BK=t.BK,
                                      G=ATTN["G"], D=ATTN["D"], NS=ATTN["NS"],
                                      grid=(cdiv(n, t.BO), ATTN["KV"]))
    if kind == "add":
        xb = lt.to_cutile((h * nw.float()).to(torch.bfloat16))
        grid = (cdiv(n, t.BO), t.splits(k))
        if t.loop:
            return g.add_loop, g.add_loop(api.zeros([n], f32), w, xb, t.KPS, BO=t.BO,
                                          BK=t.BK, grid=grid)
        return g.add, g.add(api.zeros([n], f32), w, xb, BO=t.BO, BK=t.BK, KPS=t.KPS,
                            grid=grid)
    part = api.empty([t.splits(k), n], f32).partition([1, t.BO])
    if t.loop:
        return g.norm_partial_loop, g.norm_partial_loop(part, w, hh, nww, t.KPS, BK=t.BK)
    return g.norm_partial, g.norm_partial(part, w, hh, nww, BK=t.BK, KPS=t.KPS)


class PdlTwins:
    """The GEMV kernels of one `gemv_kernels` set, each its PDL twin when `pdl`."""

    def __init__(self, kernels: Any, pdl: bool):
        self.kernels, self.pdl = kernels, pdl

    def __getattr__(self, name: str) -> Any:
        kernel = getattr(self.kernels, name)
        return with_pdl(kernel) if self.pdl else kernel


def attn_shares() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flash-decoding shares of Qwen3-4B's attention (seeded): outputs [KV, NS, G D], maxima
    and sums [KV, NS, G]; the last quarter of the shares empty, as at a short context."""
    kv, g, d, ns = ATTN["KV"], ATTN["G"], ATTN["D"], ATTN["NS"]
    rng = np.random.default_rng(3)
    o = rng.standard_normal((kv, ns, g * d)).astype(np.float32)
    m = (rng.standard_normal((kv, ns, g)) * 2).astype(np.float32)
    sums = rng.uniform(1, 8, (kv, ns, g)).astype(np.float32)
    o[:, 3 * ns // 4:], m[:, 3 * ns // 4:], sums[:, 3 * ns // 4:] = 0, -np.inf, 0
    return o, m, sums


def combined() -> np.ndarray:
    """The attention output (bf16 values, f32) of `attn_shares`, as `attn_combine` makes it."""
    import ml_dtypes

    o, m, sums = attn_shares()
    kv, g, d, ns = ATTN["KV"], ATTN["G"], ATTN["D"], ATTN["NS"]
    scale = np.exp2(m - m.max(axis=1, keepdims=True))
    num = (scale[..., None] * o.reshape(kv, ns, g, d)).sum(axis=1)
    x = (num / (scale * sums).sum(axis=1)[..., None]).reshape(-1)
    return x.astype(ml_dtypes.bfloat16).astype(np.float32)


def reference(kind: str, w: Any, h: Any, nw: Any) -> np.ndarray:
    """What a candidate of `kind` must compute on weight `w`, in f32 (torch)."""
    import torch

    if kind == "attn_add":
        return np.asarray((w.float() @ torch.from_numpy(combined()).cuda()).cpu().numpy())
    xb = (h * nw.float()).to(torch.bfloat16).float()
    y = w.float() @ xb
    inv = torch.rsqrt((h * h).mean() + EPS)
    if kind == "lm":
        y = y * inv
    if kind == "swiglu":
        g, u = y[:y.shape[0] // 2] * inv, y[y.shape[0] // 2:] * inv
        y = g / (1 + torch.exp(-g)) * u
    return np.asarray(y.cpu().numpy())


def result_of(kind: str, first: Any) -> np.ndarray:
    got = first.unpartition().to_numpy() if hasattr(first, "unpartition") else first.to_numpy()
    got = np.asarray(got).astype(np.float32)
    return got.sum(axis=0) if kind == "partial" else got


def graph_seconds(launches: list[lt.Launch], reps: int = 20) -> float:
    """Seconds per launch with `reps` of them (cycling) captured in one CUDA graph."""
    seq = [launches[i % len(launches)] for i in range(max(reps, len(launches)))]
    graph = lt.RawGraph(seq)
    try:
        return lt.timed(graph.launch, lt.stream(), 3) / len(seq)
    finally:
        graph.close()


def time_candidate(kind: str, t: GemvTiles, cw: list[Any], h: Any, nw: Any, want: np.ndarray,
                   n: int, k: int, graph: bool, pdl_ahead: int | None = None
                   ) -> dict[str, Any]:
    """TB/s of weight bytes on the stream (and in a graph), after one checked run; with
    `pdl_ahead`, also in a graph of the PDL twins (`graph_pdl_tbps`: each launch's blocks
    resident, its first weight steps loading, while the one before finishes)."""
    _, op = gemv_op(kind, t, cw[0], h, nw, n, k)
    got = result_of(kind, op.sync()[0])
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

    nbytes = n * k * 2
    try:
        out = {"tbps": nbytes / lt.timed(call, lt.stream(), 20) / 1e12, "err": err,
               "ok": err < 2e-2}
        if graph:
            out["graph_tbps"] = nbytes / graph_seconds(launches) / 1e12
    finally:
        for op in ops:              # each runs once more and hands its tensors back
            op.sync()
    if graph and pdl_ahead is not None:
        out.update(time_pdl_twins(kind, t, cw, h, nw, want, n, k, pdl_ahead))
    return out


def time_pdl_twins(kind: str, t: GemvTiles, cw: list[Any], h: Any, nw: Any,
                   want: np.ndarray, n: int, k: int, ahead: int) -> dict[str, Any]:
    """The PDL twins of a candidate, checked, then timed in a CUDA graph."""
    _, op = gemv_op(kind, t, cw[0], h, nw, n, k, ahead)
    got = result_of(kind, op.sync()[0])
    err = float(np.abs(got - want).max() / (np.abs(want).max() + 1e-9))
    ops, launches = [], []
    for w in cw:
        kern, op = gemv_op(kind, t, w, h, nw, n, k, ahead)
        ops.append(op)
        launches.append(lt.bind(kern, op))
    try:
        return {"graph_pdl_tbps": n * k * 2 / graph_seconds(launches) / 1e12,
                "pdl_err": err, "pdl_ok": err < 2e-2, "pdl_ahead": ahead}
    finally:
        for op in ops:
            op.sync()


def torch_seconds(ws: list[Any], xb: Any) -> tuple[float, float]:
    """torch's F.linear at batch 1 over the rotating copies: (stream, graph) s per call."""
    import torch
    import torch.nn.functional as F

    i = [0]

    def call() -> None:
        F.linear(xb[None, :], ws[i[0] % len(ws)])
        i[0] += 1

    call()
    stream_s = lt.timed(call, torch.cuda.current_stream(), 20)
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(side)
        reps = max(20, len(ws))
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for j in range(reps):
                F.linear(xb[None, :], ws[j % len(ws)])
        graph_s = lt.timed(g.replay, torch.cuda.current_stream(), 3) / reps
        del g
    except Exception as exc:  # reported as NaN, not fatal
        print(f"torch CUDA graph failed: {type(exc).__name__}: {str(exc)[:120]}")
        graph_s = math.nan
    return stream_s, graph_s


def bench_gemv(name: str, sweep: str, graph_top: int = 3) -> dict[str, Any]:
    import torch

    n, k, kind = GEMVS[name]
    nbytes = n * k * 2
    copies = max(1, math.ceil(4 * L2 / nbytes))
    torch.manual_seed(0)
    ws = [(torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16) for _ in range(copies)]
    h = torch.randn(k, device="cuda")
    nw = (torch.rand(k, device="cuda") + 0.5).to(torch.bfloat16)
    xb = (h * nw.float()).to(torch.bfloat16)
    ts, tg = torch_seconds(ws, xb)
    res: dict[str, Any] = {"shape": [n, k], "weight_bytes": nbytes, "copies": copies,
                           "torch_tbps": nbytes / ts / 1e12,
                           "torch_graph_tbps": nbytes / tg / 1e12, "cutile": {}}
    cw = [lt.to_cutile(w) for w in ws]
    cands = candidates(n, k, kind, sweep)
    wants = {ck: reference(ck, ws[0], h, nw) for ck in {ck for ck, _ in cands}}

    def pre(c: Candidate) -> None:
        try:
            compile_candidate(c[0], c[1], n, k)
        except Exception:  # reported when the candidate is timed
            pass

    with ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 4)) as pool:
        list(pool.map(pre, cands))
    for ck, t in cands:
        try:
            res["cutile"][label(ck, t)] = time_candidate(ck, t, cw, h, nw, wants[ck], n, k,
                                                         graph=False)
        except Exception as exc:  # a candidate that fails is reported, not fatal
            res["cutile"][label(ck, t)] = {"error": f"{type(exc).__name__}: {str(exc)[:160]}"}
    ok = {c: v for c, v in res["cutile"].items() if v.get("ok")}
    ranked = sorted(ok, key=lambda c: -ok[c]["tbps"])
    for c in ranked[:graph_top]:                   # the leaders again, in a CUDA graph
        ck, t = next((ck, t) for ck, t in cands if label(ck, t) == c)
        ahead = plan_ahead(name, ck) if sweep == "plan" else None
        res["cutile"][c] = time_candidate(ck, t, cw, h, nw, wants[ck], n, k, graph=True,
                                          pdl_ahead=ahead)
    res["best"] = ranked[0] if ranked else None
    if any(ck == "attn_add" for ck, _ in cands):
        res["combine_us"] = combine_seconds() * 1e6
    graphed = {c: v for c, v in res["cutile"].items() if "graph_tbps" in v}
    res["best_graph"] = max(graphed, key=lambda c: graphed[c]["graph_tbps"]) if graphed else None
    return res


def combine_seconds() -> float:
    """Seconds per `attn_combine` launch on Qwen3-4B's shares (what `attn_add` replaces)."""
    from llm.kernels.attention import attn_combine

    g, d, ns = ATTN["G"], ATTN["D"], ATTN["NS"]
    shares = attn_shares()
    ops = []
    for _ in range(4):  # each op owns its inputs while it is pending: one set per op
        o, m, sums = (api.from_numpy(a) for a in shares)
        ops.append(attn_combine(api.empty([ATTN["KV"] * g * d], bf16).partition([32]), o, m,
                                sums, G=g, D=d, NS=ns))
    launches = [lt.bind(attn_combine, op) for op in ops]
    i = [0]

    def call() -> None:
        launches[i[0] % len(launches)].run()
        i[0] += 1

    try:
        return lt.timed(call, lt.stream(), 20)
    finally:
        for op in ops:
            op.sync()


@cutile.entry
def store_one(out: Mut[Tensor[f32, [1]]]):
    out.store(zeros((1,), f32))


@cutile.entry(occupancy=2)
def load_one_tile(out: Mut[Tensor[f32, [1]]], w: Tensor[bf16, [-1, -1]], BO: Const[int],
                  BK: Const[int]):
    b = block_id(0)
    out.store(w.load_tile((BO, BK), (b, 0)).astype(f32).sum(axis=1).sum(keepdims=True))


def bench_floor() -> dict[str, float]:
    """Microseconds per launch of a kernel that does (almost) nothing and of one that loads
    one tile per block from rotating weight copies, on the stream and in a graph."""
    import torch

    out: dict[str, float] = {}
    blocks = 264
    dst = [api.empty([blocks], f32).partition([1]) for _ in range(8)]
    ops = [store_one(d) for d in dst]
    launches = [lt.bind(store_one, op) for op in ops]
    i = [0]

    def call(ls: list[lt.Launch]) -> None:
        ls[i[0] % len(ls)].run()
        i[0] += 1

    try:
        out["empty_stream_us"] = lt.timed(lambda: call(launches), lt.stream(), 20) * 1e6
        out["empty_graph_us"] = graph_seconds(launches) * 1e6
    finally:
        for op in ops:
            op.sync()
    n, k = 6144, 2560                       # QKV-sized copies, 8 of them (> 4x L2)
    ws = [lt.to_cutile((torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16))
          for _ in range(8)]
    dst = [api.empty([blocks], f32).partition([1]) for _ in ws]
    ops = [load_one_tile(d, w, BO=16, BK=128)                    # 4 KB per block
           for d, w in zip(dst, ws, strict=True)]
    launches = [lt.bind(load_one_tile, op) for op in ops]
    try:
        out["one_tile_stream_us"] = lt.timed(lambda: call(launches), lt.stream(), 20) * 1e6
        out["one_tile_graph_us"] = graph_seconds(launches) * 1e6
    finally:
        for op in ops:
            op.sync()
    return out


def show(name: str, r: dict[str, Any]) -> str:
    best = r["cutile"].get(r["best"], {}) if r["best"] else {}
    bg = r["cutile"].get(r["best_graph"], {}) if r["best_graph"] else {}
    line = (f"{name:<8} {r['shape']}: torch {r['torch_tbps']:.2f} TB/s (graph "
            f"{r['torch_graph_tbps']:.2f}), cutile best {best.get('tbps', 0):.2f} ({r['best']}),"
            f" in a graph {bg.get('graph_tbps', 0):.2f} ({r['best_graph']})")
    if "graph_pdl_tbps" in bg:
        line += (f", PDL twins in a graph {bg['graph_pdl_tbps']:.2f}"
                 f"{'' if bg.get('pdl_ok') else ' (WRONG RESULT)'}")
    if "combine_us" in r:
        fused = {c: v for c, v in r["cutile"].items() if c.startswith("attn_add") and v.get("ok")}
        if fused:
            top = max(fused, key=lambda c: fused[c]["tbps"])
            us = r["weight_bytes"] / fused[top]["tbps"] / 1e6
            plain = {c: v for c, v in r["cutile"].items() if c.startswith("add ") and v.get("ok")}
            add_us = r["weight_bytes"] / max(v["tbps"] for v in plain.values()) / 1e6 if plain \
                else float("nan")
            line += (f"\n         combine folded in ({top}): {us:.2f} us vs attn_combine "
                     f"{r['combine_us']:.2f} us + o_proj {add_us:.2f} us")
    return line
