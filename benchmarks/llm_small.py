"""The decode step's kernels one kind at a time, in CUDA graphs (`llm_decode.py --parts
smallkernels`): for each plan variant of the small kernels (`llm.plan.SMALL_VARIANTS`), how
long each kernel takes per launch, how long one layer's attention block takes (QKV GEMV to
output projection), and the whole step, all replayed from graphs (no host launch cost, no
event between kernels).

For each variant the engine (Qwen3-4B, random weights, position set to the context, no
prefill: timing does not depend on the cache's values) records one decode step's launches.
Then, each captured in a raw CUDA graph and timed with events around replays:
- per kernel: that kernel's launches of all layers back to back (each layer's own weights
  and cache, as in the step), microseconds per launch;
- attention block: every layer's launches from its QKV GEMV through its output projection,
  back to back, microseconds per layer (the comparison that counts: a variant with one
  kernel less per layer wins here if the kernel it drops cost more than its fold adds);
- step: the whole step's launches, microseconds per token.
The `floor` line is a kernel that does nothing (`llm_gemv.bench_floor`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llm_gemv
import llm_tools as lt
from llm.config import preset
from llm.model import Engine
from llm.weights import random_weights

from cutile import api

DEFAULT_VARIANTS = ("default,split_attn,heads_tma,fused,fused_tma,fused_ldg,fused_bs32,"
                    "fused_ns16")
OUTPUT_PROJECTIONS = ("gemv_add", "gemv_add_loop", "gemv_attn_add")


def graph_us(launches: list[lt.Launch], per: int) -> float:
    """Microseconds per `per` launches, `launches` captured in one raw graph."""
    graph = lt.RawGraph(launches)
    try:
        return lt.timed(graph.launch, lt.stream(), 3, trials=7, warmup=2) * 1e6 / per
    finally:
        graph.close()


def layers(launches: list[lt.Launch], num_layers: int) -> list[list[lt.Launch]]:
    """The step's launches cut into its layers: after `embed_row`, up to the LM head (the
    tail: LM head and sampling, dropped), in equal parts."""
    head = next(i for i, x in enumerate(launches) if x.name == "lm_head_argmax")
    body = launches[1:head]
    if len(body) % num_layers:
        raise ValueError(f"{len(body)} launches do not split into {num_layers} layers")
    per = len(body) // num_layers
    return [body[i:i + per] for i in range(0, len(body), per)]


def attention_block(layer: list[lt.Launch]) -> list[lt.Launch]:
    """A layer's launches from the QKV GEMV through the output projection."""
    for i, launch in enumerate(layer[1:], 1):
        if launch.name in OUTPUT_PROJECTIONS:
            return layer[:i + 1]
    raise ValueError(f"no output projection among {[x.name for x in layer]}")


def bench_variant(weights: Any, name: str, context: int, plan_named: Any) -> dict[str, Any]:
    cfg = weights.cfg
    engine = Engine(weights, context + 64, plan_named(cfg, name))
    engine.pos.t = api.from_numpy(np.array([context], np.int32))
    engine.prompt_loaded = True       # (no prompt: a position set by hand, a cache of zeros)
    engine.decode_step()                                  # compiles, warms
    engine.pos.t = api.from_numpy(np.array([context], np.int32))
    launches = lt.record_step(engine, context)
    lt.sync()
    by_layer = layers(launches, cfg.num_layers)
    kernels: dict[str, Any] = {}
    for launch in by_layer[0]:
        if launch.name in kernels:
            continue
        same = [x for layer in by_layer for x in layer if x.name == launch.name]
        kernels[launch.name] = {"grid": list(launch.grid), "per_step": len(same),
                                "us": graph_us(same, len(same))}
    block = [x for layer in by_layer for x in attention_block(layer)]
    out = {"plan": name, "context": context, "kernels": kernels,
           "attention_block_kernels": [x.name for x in attention_block(by_layer[0])],
           "attention_block_us": graph_us(block, len(by_layer)),
           "step_us": graph_us(launches, 1), "launches_per_step": len(launches)}
    del engine
    return out


def show(r: dict[str, Any]) -> str:
    lines = [f"{r['plan']:<11} attention block {r['attention_block_us']:7.2f} us/layer "
             f"({' > '.join(r['attention_block_kernels'])}); step {r['step_us']:8.1f} us "
             f"({1e6 / r['step_us']:.1f} tok/s, {r['launches_per_step']} launches)"]
    for k, v in r["kernels"].items():
        lines.append(f"    {k:<24} grid {v['grid']!s:<14} {v['us']:6.2f} us  "
                     f"x{v['per_step']:<3} = {v['us'] * v['per_step']:7.1f} us/step")
    return "\n".join(lines)


def bench_small(config: str, context: int, variants: str, plan_named: Any
                ) -> dict[str, Any]:
    floor = llm_gemv.bench_floor()
    print("floor (us per launch): " + ", ".join(f"{k} {v:.2f}" for k, v in floor.items()),
          flush=True)
    weights = random_weights(preset(config), seed=0)
    rows = []
    for name in variants.split(","):
        try:
            rows.append(bench_variant(weights, name, context, plan_named))
            print(show(rows[-1]), flush=True)
        except Exception as exc:             # one variant failing does not stop the rest
            print(f"{name}: failed: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            rows.append({"plan": name, "error": f"{type(exc).__name__}: {exc}"})
    good = [r for r in rows if "error" not in r]
    if good:
        base = good[0]
        print(f"attention block per layer and step, against {base['plan']}:")
        for r in good:
            print(f"    {r['plan']:<11} {r['attention_block_us']:7.2f} us/layer "
                  f"({r['attention_block_us'] - base['attention_block_us']:+6.2f}), step "
                  f"{r['step_us']:8.1f} us ({r['step_us'] - base['step_us']:+7.1f})")
    return {"floor": floor, "variants": rows}
