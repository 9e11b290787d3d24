"""The Qwen3 engine's prefill on the H200 (`llm_decode.py --parts prefill,prefill_gemms`):

- prefill: for each prefill variant (`--prefill-plans`, `llm/prefill_plan.py`), the wall
  time of `load_prompt` (what a user waits for), of `load_prompt` + the first decode step
  (the prompt's last token through every layer and the LM head), of `load_prompt(...,
  first_token=True)` (every prompt token through the prefill, then the LM head on the last
  one: what Hugging Face's forward pass computes, less its logits of the other rows), the
  device time of the recorded launches of one prefill replayed
  back to back, and a per-kernel breakdown from events between the launches (µs per kernel
  group, TFLOP/s for the GEMMs and attention); against Hugging Face's forward pass of the
  same tokens (`hf`, eager and with `--hf-compile`).
- prefill_gemms: each prefill GEMM alone at the Qwen3-4B shapes (M = tokens; QKV N=6144
  K=2560, o_proj N=2560 K=4096, gate/up N=2x9728 K=2560, down N=2560 K=9728) in every
  candidate configuration, with its fused epilogue, beside cuBLAS's plain GEMM of the
  same shape (torch.matmul, no epilogue), and causal attention beside torch's flash SDPA;
  each candidate's output compared with the first's (the old configuration).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import llm_tools as lt
import numpy as np
from llm.config import preset
from llm.kernels.fill import init_uniform_2d
from llm.model import Engine
from llm.plan import plan_for
from llm.prefill_plan import GemmTiles, gemm_kernel, variants
from llm.reference import rope_tables
from llm.weights import random_weights

from cutile import api
from cutile.core import bf16, f32

# -- the engine's prefill -------------------------------------------------------------------


def gemm_flops(binding: Any) -> int:
    """2 M N K of a prefill GEMM launch (its op's binding): x [M, K], W [N, K]; a split-K
    launch from column tile J0 (the hybrid's two launches) covers grid[1] column tiles of
    BN only."""
    vals = dict(zip([p.name for p in binding.params], binding.values, strict=True))
    m, k = vals["x"].shape
    n = vals["w"].shape[0]
    if "J0" in vals:
        bn = binding.consts["BN"]
        n = min(n - vals["J0"] * bn, binding.grid[1] * bn)
    return 2 * m * n * k


def causal_flops(t: int, heads: int, d: int) -> int:
    """QK^T and PV over the causal half (keys 0..i for query i)."""
    return 4 * heads * d * t * (t + 1) // 2


def record_prefill(engine: Engine, prompt: list[int]) -> tuple[list[lt.Launch],
                                                              list[tuple[str, int]], list[Any]]:
    """One `load_prompt` through the safe path, recording each launch, its group label and
    FLOPs, and holding its arguments (the prefill's scratch buffers stay allocated, so the
    recorded launches can be replayed)."""
    launches: list[lt.Launch] = []
    labels: list[tuple[str, int]] = []
    held: list[Any] = []
    c = engine.cfg

    def observe(kernel: Any, op: Any) -> None:
        b = op.binding
        vals = dict(zip([p.name for p in b.params], b.values, strict=True))
        launches.append(lt.bind(kernel, op))
        held.append(b.values)
        name, flops = kernel.name, 0
        if name.startswith("gemm_"):
            flops = gemm_flops(b)
            name = f"{name} K={vals['x'].shape[1]}"
        elif name == "attn_prefill":
            flops = causal_flops(vals["qkv"].shape[0], c.num_heads, c.head_dim)
        labels.append((name, flops))

    engine.observer = observe
    try:
        engine.load_prompt(prompt)
    finally:
        engine.observer = None
    return launches, labels, held


def breakdown(launches: list[lt.Launch], labels: list[tuple[str, int]]
              ) -> list[dict[str, Any]]:
    """Device time per kernel group (kernel, and K for a GEMM), from events between the
    launches of one replay (median of 5)."""
    times = lt.launch_times(launches)
    groups: dict[str, dict[str, Any]] = {}
    for (name, flops), sec in zip(labels, times, strict=True):
        g = groups.setdefault(name, {"kernel": name, "count": 0, "s": 0.0, "flops": 0})
        g["count"] += 1
        g["s"] += sec
        g["flops"] += flops
    out = sorted(groups.values(), key=lambda g: -g["s"])
    for g in out:
        g["tflops"] = g["flops"] / g["s"] / 1e12 if g["flops"] else None
    return out


def latency(row: dict[str, Any], key: str, fn: Any, reps: int = 7) -> None:
    """row[key]: the median wall seconds of `reps` calls; row[key + "_runs"]: each call."""
    runs = lt.wall_runs(fn, reps)
    row[key] = float(np.median(runs))
    row[key + "_runs"] = runs


def bench_plan(cfg: Any, weights: Any, prompt: list[int], variant: str) -> dict[str, Any]:
    engine = Engine(weights, len(prompt) + 64, plan_for(cfg, prefill=variant))
    engine.load_prompt(prompt)                          # compiles, warms
    row: dict[str, Any] = {"plan": variant}
    latency(row, "load_prompt_s", lambda: engine.load_prompt(prompt))

    def with_first_token() -> None:
        engine.load_prompt(prompt)
        engine.decode_step(chained=True)                # the last token, one wait
        engine.position()

    def to_first_token() -> None:   # the tokens HF's forward takes, then the LM head
        engine.load_prompt(prompt[:-1], first_token=True)
        engine.position()

    with_first_token()
    latency(row, "with_first_token_s", with_first_token)
    to_first_token()
    latency(row, "to_first_token_s", to_first_token)
    launches, labels, held = record_prefill(engine, prompt)
    lt.sync()
    row["kernels"] = len(launches)
    row["device_s"] = lt.timed(lambda: lt.replay(launches), lt.stream(), 1, trials=5,
                               warmup=1, cycles=40_000_000)
    row["breakdown"] = breakdown(launches, labels)
    row["sum_of_kernels_s"] = sum(g["s"] for g in row["breakdown"])
    flops = sum(f for _, f in labels)
    row["tflops"] = flops / row["device_s"] / 1e12
    pp = engine.plan.prefill
    row["config"] = {k: getattr(pp, k).describe() for k in ("qkv", "o", "gate_up", "down")}
    row["config"]["attn"] = f"{pp.attn_bm} occ={pp.attn_occupancy} ctas={pp.attn_ctas}"
    row["config"]["chained"] = pp.chained
    row["config"]["kv_only_last"] = pp.kv_only_last
    del held, launches
    return row


def show_plan(r: dict[str, Any]) -> str:
    cfg = r["config"]
    lines = [f"  plan {r['plan']}: load_prompt {r['load_prompt_s'] * 1e3:.1f} ms wall, "
             f"+ first decode step {r['with_first_token_s'] * 1e3:.1f} ms; every token "
             f"to the first token's logits {r['to_first_token_s'] * 1e3:.1f} ms; device "
             f"{r['device_s'] * 1e3:.1f} ms back to back ({r['kernels']} kernels, "
             f"{r['tflops']:.0f} TFLOP/s), kernels alone {r['sum_of_kernels_s'] * 1e3:.1f} ms",
             "    " + "; ".join(f"{k} {v}" for k, v in cfg.items())]
    for g in r["breakdown"]:
        rate = f"{g['tflops']:7.1f} TFLOP/s" if g["tflops"] else ""
        lines.append(f"    {g['kernel']:<32} x{g['count']:<3} {g['s'] * 1e3:8.2f} ms "
                     f"{g['s'] / g['count'] * 1e6:9.1f} us each  {rate}")
    return "\n".join(lines)


def bench_prefill(name: str, tokens: int, plans: list[str], hf: bool, hf_compile: bool
                  ) -> dict[str, Any]:
    cfg = preset(name)
    weights = random_weights(cfg, seed=0)
    prompt = [int(t) for t in np.random.default_rng(1).integers(0, cfg.vocab_size, tokens + 1)]
    out: dict[str, Any] = {"config": name, "tokens": tokens, "plans": []}
    print(f"prefill {name}, {tokens} tokens:", flush=True)
    for variant in plans:
        try:
            row = bench_plan(cfg, weights, prompt, variant)
        except Exception as exc:  # a variant that fails is reported, the others still run
            row = {"plan": variant, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            print(f"  plan {variant}: {row['error']}", flush=True)
            lt.sync()
            continue
        out["plans"].append(row)
        print(show_plan(row), flush=True)
    if hf:
        out.update(hf_forward(cfg, weights, prompt[:tokens], hf_compile))
        print("  HF forward: " + ", ".join(f"{k[3:-2]} {out[k] * 1e3:.1f} ms" for k in
                                           ("hf_eager_s", "hf_compile_s") if k in out)
              + (f" ({out['hf_compile_error']})" if "hf_compile_error" in out else ""))
    return out


def hf_forward(cfg: Any, weights: Any, ids_: list[int], compile_: bool) -> dict[str, Any]:
    import torch

    model = lt.hf_model(cfg, weights, attn="sdpa")
    ids = torch.tensor([ids_], device="cuda")
    out: dict[str, Any] = {}

    def fwd() -> None:
        with torch.no_grad():
            model(ids, use_cache=True)
        torch.cuda.synchronize()

    fwd()
    latency(out, "hf_eager_s", fwd)
    if compile_:
        try:
            model.forward = torch.compile(model.forward)
            fwd()                                    # compiles
            fwd()
            latency(out, "hf_compile_s", fwd)
        except Exception as exc:  # reported, not fatal
            out["hf_compile_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    del model
    torch.cuda.empty_cache()
    return out


# -- the GEMMs alone -----------------------------------------------------------------------

def candidates(old: GemmTiles, new: GemmTiles, extra: list[GemmTiles]) -> list[GemmTiles]:
    seen: list[GemmTiles] = []
    for t in [old, new, *extra]:
        if t not in seen:
            seen.append(t)
    return seen


def gemm_candidates(cfg: Any) -> dict[str, list[GemmTiles]]:
    """Per GEMM: the old plan's configuration first, then the new plan's and the others
    worth a measurement (each assembled without spills: tests/llm/test_prefill.py)."""
    v = variants(cfg, lt_sms())
    old, new = v["old"], v["new"]
    w8 = {"warps": 8}
    residual = [GemmTiles(128, 128, 64, persistent=True), GemmTiles(128, 128, 64, occupancy=2),
                GemmTiles(256, 128, 64, **w8), GemmTiles(256, 128, 64, persistent=True, **w8),
                GemmTiles(128, 128, 64, persistent=True, **w8),
                GemmTiles(128, 64, 64, occupancy=2),
                # atomic adds into hs, K split (llm/kernels/prefill_splitk.py): S by the
                # rule (4 at 2048 tokens), 2 and 3; whole waves + split rest; stream-K
                GemmTiles(256, 128, 64, atomic="splitk", **w8),
                GemmTiles(256, 128, 64, atomic="splitk", splits=2, **w8),
                GemmTiles(256, 128, 64, atomic="splitk", splits=3, **w8),
                GemmTiles(256, 128, 64, atomic="hybrid", **w8),
                GemmTiles(256, 128, 64, atomic="streamk", **w8),
                GemmTiles(128, 128, 64, atomic="splitk", **w8)]
    return {
        "qkv": candidates(old.qkv, new.qkv, [
            GemmTiles(128, cfg.head_dim, 64, persistent=True, **w8),
            # the latency hint takes tileiras to fewer stages: 211 KB of shared memory
            # instead of 227 (tileiras does not finish the ctas=2 variant in 300 s)
            GemmTiles(128, cfg.head_dim, 64, latency=3, **w8),
            GemmTiles(64, cfg.head_dim, 64, persistent=True)]),
        "o": candidates(old.o, new.o, residual),
        "down": candidates(old.down, new.down, residual),
        "gate_up": candidates(old.gate_up, new.gate_up, [
            GemmTiles(128, 128, 64, persistent=True, **w8),
            GemmTiles(256, 64, 64, **w8), GemmTiles(128, 64, 64, **w8),
            GemmTiles(128, 128, 64, ctas=2, **w8),
            GemmTiles(128, 64, 64, persistent=True)]),
    }


def lt_sms() -> int:
    from cutile.runtime import driver

    return int(driver.state().sm_count or 132)


def random_bf16(rows: int, cols: int, seed: int, scale: float = 1.0) -> Any:
    t = api.empty([rows, cols], bf16).partition([16, 256])
    return init_uniform_2d(t, seed, scale, 0.0).sync()[0].unpartition()


def time_op(kernel: Any, make: Callable[[], Any]) -> tuple[float, np.ndarray]:
    """Run once (compile, the output read back), then the median of 5 x 10 launches."""
    res = make().sync()
    first = res[0].unpartition().to_numpy().astype(np.float32)
    op = make()
    launch = lt.bind(kernel, op)
    sec = lt.timed(launch.run, lt.stream(), 10, trials=5, warmup=2)
    op.sync()
    return sec, first


def time_atomic(kernel: Any, tiles: GemmTiles, x: Any, w: Any) -> tuple[float, np.ndarray]:
    """An atomic residual GEMM's launches (one, or two for the hybrid) into a zeroed hs:
    run once (compile; hs read back: x W^T), then the launches replayed back to back, the
    median of 5 x 10 (hs keeps growing: the time does not depend on its values)."""
    (t, k), n = x.shape, w.shape[0]
    hs = api.zeros([t, n], f32)
    launches, held = [], []
    for la in tiles.launches(t, n, k, lt_sms()):
        extra = () if tiles.atomic == "streamk" else (la.J0, la.KPS)
        op = kernel(hs, x, w, *extra, BM=tiles.BM, BN=tiles.BN, BK=tiles.BK, grid=la.grid)
        launches.append(lt.bind(kernel, op))
        hs, *rest = op.sync()
        held.append(rest)
    first = hs.to_numpy().astype(np.float32)
    sec = lt.timed(lambda: lt.replay(launches), lt.stream(), 10, trials=5, warmup=2)
    lt.sync()
    del held
    return sec, first


def bench_gemms(name: str, tokens: int) -> dict[str, Any]:
    cfg = preset(name)
    t, h, i, d = tokens, cfg.hidden_size, cfg.intermediate_size, cfg.head_dim
    shapes = {"qkv": (cfg.qkv_size, h), "o": (h, cfg.q_size), "gate_up": (2 * i, h),
              "down": (h, i)}
    cos, sin = (api.from_numpy(a) for a in rope_tables(cfg, t))
    norm = api.full([d], 1.0, bf16)
    common = {"hs": api.zeros([t, h], f32), "inv": api.full([t], 0.05, f32), "norm": norm,
              "cos": cos, "sin": sin}
    out: dict[str, Any] = {}
    print(f"prefill GEMMs of {name} alone, M = {t}:", flush=True)
    for seed, (role, tiles_list) in enumerate(gemm_candidates(cfg).items()):
        n, k = shapes[role]
        x = random_bf16(t, k, seed + 1)
        w = random_bf16(n, k, seed + 10, 1.0 / math.sqrt(k))
        rows = [bench_gemm(cfg, role, tiles, t, x, w, common) for tiles in tiles_list]
        base = next((r.pop("out") for r in rows if "out" in r), None)
        for r in rows:
            got = r.pop("out", None)
            if got is not None and base is not None:
                r["rel_diff"] = float(np.abs(got - base).max() / max(1e-30, np.abs(base).max()))
        out[role] = {"shape": [t, n, k], "cutile": rows, "cublas_tflops": cublas(t, n, k)}
        print(show_gemms(role, out[role]), flush=True)
    out["attention"] = bench_attention(cfg, t)
    return out


def bench_gemm(cfg: Any, role: str, tiles: GemmTiles, t: int, x: Any, w: Any,
               common: dict[str, Any]) -> dict[str, Any]:
    """One GEMM configuration at [t, N, K] (N, K from w): time, TFLOP/s, its output."""
    i = cfg.intermediate_size
    n, k = w.shape
    which = {"qkv": "qkv", "gate_up": "swiglu"}.get(role, "residual")
    kernel = gemm_kernel(which, tiles)
    cols = i if role == "gate_up" else n
    dt = f32 if which == "residual" else bf16
    blocks = tiles.blocks(t, cols, lt_sms())

    def make() -> Any:
        o = api.empty([t, cols], dt).partition([tiles.BM, tiles.BN])
        o = o if blocks is None else o.persistent(blocks)
        if which == "qkv":
            return kernel(o, x, w, common["inv"], common["norm"], common["norm"],
                          common["cos"], common["sin"], 1e-6, BK=tiles.BK,
                          NH=cfg.num_heads, NKV=cfg.num_kv_heads)
        if which == "swiglu":
            return kernel(o, x, w, common["inv"], BK=tiles.BK, UP=i // tiles.BN)
        return kernel(o, common["hs"], x, w, BK=tiles.BK)

    try:
        if tiles.atomic:
            sec, got = time_atomic(kernel, tiles, x, w)
        else:
            sec, got = time_op(kernel, make)
    except Exception as exc:  # a configuration that fails is reported, not fatal
        return {"config": tiles.describe(), "error": f"{type(exc).__name__}: {str(exc)[:160]}"}
    return {"config": tiles.describe(), "us": sec * 1e6,
            "tflops": 2 * t * n * k / sec / 1e12, "rel_diff": 0.0, "out": got}


def cublas(m: int, n: int, k: int) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    s = torch.cuda.current_stream()
    sec = lt.timed(lambda: torch.matmul(a, b.t(), out=c), s, 10, trials=5)
    return 2 * m * n * k / sec / 1e12


def show_gemms(role: str, r: dict[str, Any]) -> str:
    m, n, k = r["shape"]
    peer = r["cublas_tflops"]
    lines = [f"  {role} {m}x{n}x{k}: cuBLAS (plain) "
             + (f"{peer:.1f} TFLOP/s" if peer else "n/a")]
    for c in r["cutile"]:
        if "error" in c:
            lines.append(f"    {c['config']:<42} {c['error']}")
            continue
        ratio = f"{c['tflops'] / peer:5.2f}x cuBLAS" if peer else ""
        lines.append(f"    {c['config']:<42} {c['us']:8.1f} us {c['tflops']:7.1f} TFLOP/s "
                     f"{ratio}  (max diff vs first {c['rel_diff']:.1e})")
    return "\n".join(lines)


ATTN_CONFIGS: list[tuple[int, dict[str, int]]] = [
    (64, {}), (64, {"occupancy": 2}), (128, {"num_ctas": 2, "occupancy": 2}),
    (128, {"num_ctas": 2}),
]


def bench_attention(cfg: Any, t: int) -> dict[str, Any]:
    from llm.kernels.attention import attn_prefill

    d, nh, nkv = cfg.head_dim, cfg.num_heads, cfg.num_kv_heads
    qkv = random_bf16(t, cfg.qkv_size, 7)
    flops = causal_flops(t, nh, d)
    rows: list[dict[str, Any]] = []
    base = None
    for bm, hints in ATTN_CONFIGS:
        kernel = attn_prefill.with_hints(**hints) if hints else attn_prefill

        def make(kernel: Any = kernel, bm: int = bm) -> Any:
            o = api.empty([t, cfg.q_size], bf16).partition([bm, d])
            return kernel(o, qkv, 1.0 / math.sqrt(d), G=cfg.group, NH=nh, NKV=nkv)

        label = f"{bm}x{bm} " + " ".join(f"{k}={v}" for k, v in hints.items())
        try:
            sec, got = time_op(kernel, make)
            base = got if base is None else base
            rows.append({"config": label, "us": sec * 1e6, "tflops": flops / sec / 1e12,
                         "rel_diff": float(np.abs(got - base).max())})
        except Exception as exc:  # reported, not fatal
            rows.append({"config": label, "error": f"{type(exc).__name__}: {str(exc)[:160]}"})
    peer = flash_sdpa(t, nh, nkv, d)
    print(f"  causal attention T={t}, {nh} heads / {nkv} kv heads, d={d}: torch flash SDPA "
          + (f"{flops / peer / 1e12:.1f} TFLOP/s ({peer * 1e6:.1f} us)" if peer else "n/a"))
    for r in rows:
        print(f"    {r['config']:<28} " + (r["error"] if "error" in r else
              f"{r['us']:8.1f} us {r['tflops']:7.1f} TFLOP/s (max diff vs first "
              f"{r['rel_diff']:.1e})"))
    return {"cutile": rows, "flash_s": peer}


def flash_sdpa(t: int, nh: int, nkv: int, d: int) -> float | None:
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return None
    q = torch.randn(1, nh, t, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, nh, t, d, device="cuda", dtype=torch.bfloat16)  # kv heads expanded
    v = torch.randn(1, nh, t, d, device="cuda", dtype=torch.bfloat16)
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return lt.timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                            torch.cuda.current_stream(), 10, trials=5)
    except RuntimeError:
        return None


def main_parts(parts: set[str], name: str, tokens: int, plans: list[str], hf_compile: bool
               ) -> dict[str, Any]:
    """What `llm_decode.py` runs for `--parts prefill` and `--parts prefill_gemms`."""
    results: dict[str, Any] = {}
    t0 = time.perf_counter()
    if "prefill_gemms" in parts:
        results["prefill_gemms"] = bench_gemms(name, tokens)
    if "prefill" in parts:
        results["prefill"] = bench_prefill(name, tokens, plans, "hf" in parts, hf_compile)
    results["prefill_wall_s"] = time.perf_counter() - t0
    return results

