"""Does loading a decode GEMV's weight into L2 on a side branch of the step's graph pay?

A Qwen3-4B decode step leaves the memory system mostly idle for ~8 us a layer while
attention's three small kernels run (their chain is latency-bound), then streams the
output projection and gate/up weights. `llm_l2_probe.py` measured the output projection
at 7.7 us from HBM and 5.3 us from L2. This benchmark puts that idle time to work: the
step's recorded launches are captured in a raw CUDA graph as in `llm_decode.py`, and after
each layer's QKV GEMV a fork on a second stream runs `l2_touch` kernels (safe cutile
kernels that read a weight's tiles and write one number per tile to a scratch output of
their own) over the layer's output-projection weight and the first rows of its gate and
up weights. The branch joins the main chain `--join` layers later. Nothing the step
computes changes: the touches only read weights, and write nothing the step reads.

    python benchmarks/llm_prefetch.py [--config qwen3-4b] [--context 1024] \
        [--variants base,o,o+gu8,o+gu16,o+gu24] [--rounds 3] [--json out.json]

Variant names: `base` (the step as `llm_decode.py` times it), `o` (the output projection),
`gu<MB>` (MB of gate rows and up rows, in the order the GEMV's blocks read them), `d<MB>`
(the down projection's first rows), `nil` (one tile: what the fork and join cost by
themselves), each with `:N` for N blocks that loop over the tiles instead of a block a
tile (`o:32`), joined by `+`; `@down` forks after the previous layer's down projection
instead of after QKV.

Each round times every variant once (raw graph, CUDA events, a spin first); rounds
alternate, and the table gives each variant's median tok/s and its ratio to `base`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import llm_tools as lt
from llm.config import preset
from llm.model import Engine
from llm.weights import random_weights
from timing import raw_launch

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, bf16, block_id, f32, i32, num_blocks, num_tiles, zeros

BR, BC = 32, 512          # a touch tile: 32 KB of bf16, one per block


@cutile.entry
def l2_touch(out: Mut[Tensor[f32, [1, 1]]], w: Tensor[bf16, [-1, -1]], r0: i32,
             BR: Const[int], BC: Const[int]):
    """Read weight tile (r0 + block row, block column) and keep its sum: the tile's bytes
    pass through L2, where the GEMV that follows finds them."""
    t = w.load_tile((BR, BC), (r0 + block_id(0), block_id(1)))
    out.store(t.astype(f32).sum(axis=1, keepdims=True).sum(axis=0, keepdims=True))


@cutile.entry
def l2_touch_pair(out: Mut[Tensor[f32, [1, 1]]], w: Tensor[bf16, [-1, -1]], r0: i32, r1: i32,
                  BR: Const[int], BC: Const[int]):
    """`l2_touch` of two row ranges of one weight (an op holds its arguments, so one op
    touches gate and up rows)."""
    t = (w.load_tile((BR, BC), (r0 + block_id(0), block_id(1))).astype(f32)
         + w.load_tile((BR, BC), (r1 + block_id(0), block_id(1))).astype(f32))
    out.store(t.sum(axis=1, keepdims=True).sum(axis=0, keepdims=True))


@cutile.entry
def l2_touch_loop(out: Mut[Tensor[f32, [1, "BC"]]], w: Tensor[bf16, [-1, -1]], r0: i32,
                  r1: i32, rows: i32, BR: Const[int], BC: Const[int]):
    """Few blocks, each walking row tiles b, b + grid, ... below `rows` from tile row r0
    and from r1 (the same range twice when r1 == r0), every column tile: the touch holds a
    handful of multiprocessors instead of all of them, and keeps a column sum (BC floats)."""
    acc = zeros((BC,), f32)
    for j in range(block_id(0), rows, num_blocks(0)):
        for c in range(num_tiles(w, 1, (BR, BC))):
            acc = acc + w.load_tile((BR, BC), (r0 + j, c)).astype(f32).sum(axis=0)
            if r1 != r0:
                acc = acc + w.load_tile((BR, BC), (r1 + j, c)).astype(f32).sum(axis=0)
    out.store(acc.reshape((1, BC)))


@dataclass
class Touch:
    """One `l2_touch` launch, bound, on the side stream."""
    run: Any
    nbytes: int
    keep: Any                  # the scratch output the raw launch writes, kept alive


def touch(w: Any, tile_rows: int, tile_cols: int, rows: tuple[int, ...], side: Any,
          blocks: int = 0) -> Touch:
    """Touch `tile_rows` row tiles from each tile row in `rows` (one or two ranges): one
    block a tile, or `blocks` blocks that loop."""
    if blocks:
        out = api.zeros([blocks, BC], f32).partition([1, BC])
        kernel = l2_touch_loop
        op = kernel(out, w, rows[0], rows[-1], tile_rows, BR=BR, BC=BC)
    else:
        out = api.zeros([tile_rows, tile_cols], f32).partition([1, 1])
        kernel = l2_touch if len(rows) == 1 else l2_touch_pair
        op = kernel(out, w, *rows, BR=BR, BC=BC)
    run = raw_launch(kernel, op, side)
    back = op.sync()           # runs once through the safe path, which hands `w` back
    return Touch(run, len(rows) * tile_rows * tile_cols * BR * BC * 2, back[0])


def touches_for(variant: str, lw: Any, cfg: Any, side: Any) -> list[Touch]:
    """The touches of one layer for `variant` (see the module docs)."""
    h, inter = cfg.hidden_size, cfg.intermediate_size
    out = []
    for spec in variant.replace("@down", "").split("+"):
        part, _, nb = spec.partition(":")            # `o:32`: 32 looping blocks
        blocks = int(nb) if nb else 0
        if part in ("base", ""):
            continue
        if sum(part.startswith(p) for p in ("o", "gu", "d", "nil")) == 0:
            raise SystemExit(f"unknown variant part {part!r}")
        if part == "nil":                                 # one tile: the fork's own cost
            out.append(touch(lw.wo, 1, 1, (0,), side))
        elif part == "o":                                   # wo: [hidden, heads * head_dim]
            n, k = lw.wo.shape
            out.append(touch(lw.wo, n // BR, k // BC, (0,), side, blocks))
        elif part.startswith("gu"):                       # wgu: gate rows, then up rows
            mb = float(part[2:])
            rows = min(inter, int(mb * 2**20 / 2 / (h * 2)) // BR * BR)
            out.append(touch(lw.wgu, rows // BR, h // BC, (0, inter // BR), side, blocks))
        elif part.startswith("d"):                        # wd: [hidden, inter]
            mb = float(part[1:])
            rows = min(h, int(mb * 2**20 / (inter * 2)) // BR * BR)
            out.append(touch(lw.wd, rows // BR, inter // BC, (0,), side, blocks))
    return out


def layer_starts(launches: list[lt.Launch]) -> list[int]:
    """Index of each layer's QKV GEMV in the step's launches."""
    return [i for i, x in enumerate(launches) if x.name.startswith("gemv_norm_partial")]


class ForkedGraph(lt.RawGraph):
    """The step's launches in a raw CUDA graph, with each layer's touches on a side stream
    forked after its QKV GEMV (or the previous layer's down projection, `@down`) and
    joined `join` layers later (all joined before the LM head)."""

    def __init__(self, launches: list[lt.Launch], touches: list[list[Touch]], side: Any,
                 join: int, at_down: bool, priority: bool):
        cu = lt._cu()
        starts = layer_starts(launches)
        fork_after = {(i - 1 if at_down else i): n for n, i in enumerate(starts)}
        join_before = {starts[n + join]: n for n in range(len(starts) - join)}
        last = max(i for i, x in enumerate(launches) if x.name.startswith("gemv"))
        self.events = [lt.check(cu.cuEventCreate(0)) for _ in range(2 * len(starts))]

        def record() -> None:
            s = lt.stream()
            done: dict[int, Any] = {}
            for i, launch in enumerate(launches):
                n = join_before.get(i)
                if n is not None and n in done:
                    lt.check(cu.cuStreamWaitEvent(s, done.pop(n), 0))
                if i == last + 1:
                    for ev in done.values():
                        lt.check(cu.cuStreamWaitEvent(s, ev, 0))
                    done.clear()
                launch.run()
                n = fork_after.get(i)
                if n is not None and touches[n]:
                    ev = self.events[2 * n]
                    lt.check(cu.cuEventRecord(ev, s))
                    lt.check(cu.cuStreamWaitEvent(side, ev, 0))
                    for t in touches[n]:
                        t.run()
                    done[n] = self.events[2 * n + 1]
                    lt.check(cu.cuEventRecord(done[n], side))
            for ev in done.values():
                lt.check(cu.cuStreamWaitEvent(s, ev, 0))

        # with the flag, each node keeps the priority of the stream it was captured on
        super().__init__(launches, record, (
            cu.CUgraphInstantiate_flags.CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY
            if priority else 0))

    def close(self) -> None:
        super().close()
        for ev in self.events:
            lt._cu().cuEventDestroy(ev)


def touch_bandwidth(touches: list[Touch]) -> float:
    """TB/s of one layer's touches alone, back to back on the side stream."""
    if not touches:
        return 0.0
    side = touches[0].run.stream
    sec = lt.timed(lambda: [t.run() for t in touches], side, 20, trials=5, warmup=2)
    return sum(t.nbytes for t in touches) / sec / 1e12


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="qwen3-4b")
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--variants", default="base,o,o+gu8,o+gu16,o+gu24")
    ap.add_argument("--join", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--priority", action="store_true",
                    help="the side stream at the highest priority, kept by the graph's nodes")
    ap.add_argument("--json")
    args = ap.parse_args()
    cu = lt._cu()
    cfg = preset(args.config)
    weights = random_weights(cfg, seed=0)
    rng = np.random.default_rng(0)
    prompt = [int(t) for t in rng.integers(0, cfg.vocab_size, args.context + 1)]
    engine = Engine(weights, args.context + 4096, None)
    engine.load_prompt(prompt)
    engine.decode_step()                                     # compiles, warms
    launches = lt.record_step(engine, args.context)
    flags = cu.CUstream_flags.CU_STREAM_NON_BLOCKING
    if args.priority:
        err, _least, greatest = cu.cuCtxGetStreamPriorityRange()
        lt.check(err)
        side = lt.check(cu.cuStreamCreateWithPriority(flags, greatest))
    else:
        side = lt.check(cu.cuStreamCreate(flags))
    variants = args.variants.split(",")
    graphs, per_layer_mb, touch_tbps = {}, {}, {}
    for v in variants:
        touches = [touches_for(v, lw, cfg, side) for lw in weights.layers]
        per_layer_mb[v] = sum(t.nbytes for t in touches[0]) / 2**20
        touch_tbps[v] = touch_bandwidth(touches[0])
        graphs[v] = (ForkedGraph(launches, touches, side, args.join, "@down" in v,
                                  args.priority), touches)
    lt.sync()
    sec: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(args.rounds):
        for v in variants:
            sec[v].append(lt.timed(graphs[v][0].launch, lt.stream(), 4, trials=5, warmup=1))
    med = {v: statistics.median(s) for v, s in sec.items()}
    base = med.get("base", med[variants[0]])
    rows = [{"variant": v, "tok_s": 1 / med[v], "vs_base": base / med[v],
             "rounds_tok_s": [1 / s for s in sec[v]], "touched_mb_per_layer": per_layer_mb[v],
             "touch_alone_tbps": touch_tbps[v]} for v in variants]
    print(f"{args.config} context {args.context}, join {args.join}"
          f"{', side stream first' if args.priority else ''}: raw graph tok/s "
          f"(median of {args.rounds} alternating rounds)")
    print(f"{'variant':<18} {'MB/layer':>8} {'touch TB/s':>10} {'tok/s':>7} {'vs base':>7}  rounds")
    for r in rows:
        print(f"{r['variant']:<18} {r['touched_mb_per_layer']:8.1f} {r['touch_alone_tbps']:10.2f} "
              f"{r['tok_s']:7.1f} {r['vs_base']:7.3f}  "
              + " ".join(f"{x:.1f}" for x in r["rounds_tok_s"]))
    for g, _ in graphs.values():
        g.close()
    if args.json:
        Path(args.json).write_text(json.dumps({"config": args.config, "context": args.context,
                                               "join": args.join, "priority": args.priority,
                                               "rows": rows}, separators=(",", ":")))


if __name__ == "__main__":
    main()
