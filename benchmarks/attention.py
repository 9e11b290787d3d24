"""Flash attention forward, bf16: cutile's `examples/attention.py` kernel against torch's
scaled_dot_product_attention with the flash and the cuDNN backends and against cuTile
Python's own FMHA sample (`samples/AttentionFMHA.py` of NVIDIA/cutile-python, tuned by its
own `tune_cutile_fmha` search, timed through its own wrapper), one process, random inputs,
(batch * heads) = 32 x seq x d; TFLOP/s counts 4 * bh * seq^2 * d (half of it causal) and
the error is against torch's math backend in f32 on one head.

    python benchmarks/attention.py [--seqs 1024,4096,16384] [--ds 64,128] [--json out.json]
        [--cutile-python-sample PATH/AttentionFMHA.py] [--candidates]

`--candidates` is the focused run of the SASS round (issue 8): only the rows below 1.0x
cuDNN in the last run (`CANDIDATES`' keys: d = 128 non-causal, d = 64 causal), with only
the current best configurations and the candidates next to the peers.

The sample is not part of this repository (its licence is NVIDIA's); point the option at a
checkout's `samples/AttentionFMHA.py` (its `utils/benchmark.py` must sit beside it). Without
it the cuTile Python column is left out.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import attention as ex
from timing import (
    Timed,
    alternate_times,
    paired,
    spin,
    time_launch,
    time_on_stream,
)

# (BM, BN, hints, grid) per (causal, d). grid "q": the query tiles of one head on the grid's x
# axis (the example's default, as cuTile Python's sample launches); "h": the heads on x (the
# example's former grid), kept to measure what the grid order is worth. 128x128 with 2-CTA
# clusters and occupancy 2 and 64x64 with occupancy 4 are the sample's own tuned winners
# (tileiras splits a 2-CTA tile's rows between the CTAs and multicasts K and V to both);
# 256x128 over 4 CTAs runs the same 64-row loop per CTA with K and V multicast to four.
OCC2 = {"occupancy": 2}
OCC4 = {"occupancy": 4}
CTA2 = {"num_ctas": 2, "occupancy": 2}
CTA4 = {"num_ctas": 4, "occupancy": 2}
Config = tuple[int, int, dict[str, Any], str]
CONFIGS: dict[tuple[bool, int], list[Config]] = {
    (False, 64): [(128, 128, CTA2, "q"), (64, 64, OCC4, "q"), (256, 128, CTA4, "q"),
                  (128, 128, OCC2, "q"), (128, 128, CTA2, "h")],
    (False, 128): [(128, 128, CTA2, "q"), (64, 64, OCC4, "q"), (256, 128, CTA4, "q"),
                   (128, 64, OCC2, "q"), (128, 128, CTA2, "h"), (128, 64, OCC2, "h")],
    (True, 64): [(128, 128, CTA2, "q"), (64, 64, OCC4, "q"), (256, 128, CTA4, "q"),
                 (128, 128, OCC2, "q"), (128, 128, CTA2, "h")],
    # (128x64 at occupancy 2, never the fastest here, spills with the added mask: left out)
    (True, 128): [(128, 128, CTA2, "q"), (64, 64, OCC4, "q"), (256, 128, CTA4, "q"),
                  (128, 128, CTA2, "h")],
}


# The SASS round's candidates (2026-12, issue 8), per (causal, d): (BM, BN, hints, grid,
# kernel options of `make_attention`). The first one or two are the current best of each
# row (results/2026-11-30-attention-tuned.json). What tileiras makes of the others (sm_90;
# tests/kernels/test_attention_candidates_sass.py checks each assembles without a spill):
# - no cluster (64x128, one consumer warpgroup of 64 rows, occupancy 2): the same loop as
#   the 2-CTA winner without the MEMBAR.SC.CTA before each of its 4 barrier releases a key
#   tile (cluster arrivals), at the price of no K/V multicast;
# - num_worker_warps=8: two consumer warpgroups of 64 rows share one K/V stream (FA3's
#   layout, without its ping-pong barrier), 168 registers, occupancy 1;
# - lazy: `lazy_softmax_step` (the accumulator rescaled only when a row's max grew by more
#   than 2^8), off clusters: there its block-wide test is a cluster reduction with
#   MEMBAR.ALL.GPU;
# - pipelined: Q K_{j+1}^T issued before the softmax of tile j; tileiras still waits for it
#   at once (WARPGROUP.DEPBAR.LE gsb0, 0x0), so this measures the reordering alone.
# - select_mask: the masked tiles' scores selected (`where`), the kernel's mask before the
#   added 0 / -inf tile became the default (the select kept a predicate per score live
#   across the MMA at 64x64: P2R and a spill; 6-9% slower at d = 64 causal).
W8 = {"num_worker_warps": 8, "occupancy": 1}
W8C2 = {"num_ctas": 2, "num_worker_warps": 8, "occupancy": 1}
LAZY = {"lazy_rescale": True}
PIPE = {"pipelined": True}
SELECT = {"select_mask": True}
Candidate = tuple[int, int, dict[str, Any], str, dict[str, bool]]
CANDIDATES: dict[tuple[bool, int], list[Candidate]] = {
    (False, 128): [(128, 128, CTA2, "q", {}), (64, 128, OCC2, "q", {}),
                   (64, 128, OCC2, "q", LAZY), (128, 128, W8, "q", {}),
                   (256, 128, W8C2, "q", {}), (128, 64, CTA2, "q", PIPE)],
    (True, 128): [(128, 128, CTA2, "q", {}), (128, 128, CTA2, "q", SELECT),
                  (128, 128, CTA2, "h", {}), (128, 128, CTA2, "h", SELECT)],
    (True, 64): [(64, 64, OCC4, "q", {}), (64, 64, OCC4, "q", SELECT), (128, 128, CTA2, "h", {}),
                 (128, 128, CTA2, "h", SELECT), (128, 128, OCC2, "q", {}),
                 # the lazy step spills with the added mask at 64x64: it keeps the select
                 (64, 64, OCC4, "q", {**LAZY, **SELECT}), (128, 128, W8, "q", {}),
                 (128, 128, W8, "q", LAZY), (256, 128, W8C2, "q", {})],
}


def label_of(bm: int, bn: int, hints: dict[str, Any], grid: str,
             variant: dict[str, bool]) -> str:
    """How a configuration is named in the results: tiles, hints, grid, kernel options."""
    return (f"{bm}x{bn}" + "".join(f" {k}={v}" for k, v in hints.items())
            + (" heads-on-x" if grid == "h" else "")
            + "".join(f" {k}" for k, on in variant.items() if on))


def load_sample(path: str | None) -> Any:
    """cuTile Python's FMHA sample as a module, or None (no path, or cuda.tile missing)."""
    if not path or not Path(path).exists():
        return None
    sys.path.insert(0, str(Path(path).resolve().parent))  # the sample imports utils.benchmark
    spec = importlib.util.spec_from_file_location("cutile_python_fmha_sample", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except ImportError as exc:
        print(f"cuTile Python sample not loaded: {exc}")
        return None
    return mod


def bench_sample(mod: Any, q: Any, k: Any, v: Any, causal: bool, ref: Any,
                 flops: int, prelude: Any) -> tuple[dict[str, Any], Any]:
    """The sample tuned by its own search (its search space and hints), then timed through
    its own launch wrapper on (2, bh / 2, seq, d) views of the same inputs; and that call
    (None if it failed), for the alternating re-times."""
    import torch

    bh, seq, d = q.shape
    q4, k4, v4 = (t.view(2, bh // 2, seq, d) for t in (q, k, v))
    scale = 1.0 / math.sqrt(d)
    try:
        cfg = mod.tune_cutile_fmha(q4, k4, v4, qk_scale=scale, causal=causal)
        kern = mod.fmha_kernel.replace_hints(num_ctas=cfg.num_ctas, occupancy=cfg.occupancy)

        def call() -> Any:
            return mod.cutile_fmha(q4, k4, v4, scale, 0, cfg.TILE_M, cfg.TILE_N, 1, causal,
                                   kern)

        o = call()
        torch.cuda.synchronize()
        err = float((o.view(bh, seq, d)[:1].float() - ref).abs().max())
        t = time_on_stream(call, torch.cuda.current_stream(), reps=5, trials=5,
                           prelude=prelude)
        label = f"{cfg.TILE_M}x{cfg.TILE_N} ctas={cfg.num_ctas} occ={cfg.occupancy}"
        return {"tflops": flops / t / 1e12, "err": err, "config": label}, call
    except Exception as exc:  # reported, not fatal
        return {"error": f"{type(exc).__name__}: {str(exc)[:160]}"}, None


def bench(bh: int, seq: int, d: int, causal: bool, sample: Any,
          configs: list[Candidate]) -> dict[str, Any]:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel


    torch.manual_seed(0)
    q, k, v = (torch.randn(bh, seq, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    flops = 4 * bh * seq * seq * d // (2 if causal else 1)
    out: dict[str, Any] = {"bh": bh, "seq": seq, "d": d, "causal": causal, "cutile": {}}
    ref = F.scaled_dot_product_attention(q[:1].float(), k[:1].float(), v[:1].float(),
                                         is_causal=causal)
    s = torch.cuda.current_stream()
    q4, k4, v4 = (t.unsqueeze(0) for t in (q, k, v))
    prelude = spin(s)        # each trial's launches enqueued before the GPU reaches them
    peers: dict[str, Timed] = {}

    def sdpa() -> Any:
        return F.scaled_dot_product_attention(q4, k4, v4, is_causal=causal)

    for name, backend in (("torch_flash", SDPBackend.FLASH_ATTENTION),
                          ("torch_cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            with sdpa_kernel(backend):   # entered once, around the timing
                o = sdpa()
                t = time_on_stream(sdpa, s, reps=5, trials=5, prelude=prelude)
            err = float((o[0, :1].float() - ref).abs().max())
            out[name] = {"tflops": flops / t / 1e12, "err": err}
            peers[name] = Timed(sdpa, s, prelude, lambda b=backend: sdpa_kernel(b))
        except Exception as exc:
            out[name] = {"error": f"{type(exc).__name__}: {str(exc)[:120]}"}

    if sample is not None:
        out["cutile_python"], call = bench_sample(sample, q, k, v, causal, ref, flops,
                                                  prelude)
        if call is not None:
            peers["cutile_python"] = Timed(call, s, prelude)

    from cutile import api
    from cutile.dtypes import bf16
    from cutile.runtime import driver

    def to_ct(t: Any) -> Any:  # through raw bytes: numpy has no bf16
        raw = t.contiguous().view(torch.int16).cpu().numpy()
        tt = api.empty(list(t.shape), bf16)
        tt._alloc.write(0, raw.reshape(-1).view("uint8"))
        return tt

    def to_torch(t: Any) -> Any:
        host = t._alloc.read(0, t.nbytes)
        return torch.from_numpy(host.view("int16").reshape(bh, seq, d).copy()).view(
            torch.bfloat16).cuda()

    x = [to_ct(t) for t in (q, k, v)]
    ct_prelude = spin(driver.state().stream)
    made: dict[str, tuple[Any, int, int, bool]] = {}
    for bm, bn, hints, grid, variant in configs:
        label = label_of(bm, bn, hints, grid, variant)
        kernel = ex.make_attention(causal, queries_on_x=grid == "q", even_keys=seq % bn == 0,
                                   **variant).with_hints(**hints)
        qx = grid == "q"
        made[label] = (kernel, bm, bn, qx)
        try:
            o, *back = kernel(ex.output(bh, seq, d, bm, qx), *x, 1.0 / math.sqrt(d),
                              BN=bn).sync()
            x = back[:3]  # the tensors come back (the scalar too)
            raw = o.unpartition()  # the kernel's view; to_torch reads its storage's bytes
            err = float((to_torch(raw)[:1].float() - ref).abs().max())
            op = kernel(raw.partition(o.tile_shape), *x, 1.0 / math.sqrt(d), BN=bn)
            t = time_launch(kernel, op, reps=5, trials=5, prelude=ct_prelude)
            o, *back = op.sync()
            x = back[:3]
            out["cutile"][label] = {"tflops": flops / t / 1e12, "err": err}
        except Exception as exc:  # a configuration that fails is reported, not fatal
            out["cutile"][label] = {"error": f"{type(exc).__name__}: {str(exc)[:160]}"}
    ok = {k: v["tflops"] for k, v in out["cutile"].items() if "tflops" in v}
    if ok and peers:   # the two best configurations and the peers again, alternating
        top = sorted(ok, key=lambda k: -ok[k])[:2]
        ops, ours = [], {}
        for label in top:
            kernel, bm, bn, qx = made[label]
            xs = [to_ct(t) for t in (q, k, v)]    # each pending op holds its own inputs
            op = kernel(ex.output(bh, seq, d, bm, qx), *xs, 1.0 / math.sqrt(d), BN=bn)
            ops.append(op)
            ours[label] = Timed.of_launch(kernel, op, ct_prelude)
        try:
            times = alternate_times({**ours, **peers})
            best = min(top, key=lambda k: statistics.median(times[k]))
            out["duel"] = {"config": best, "vs": {p: paired(times, best, p) for p in peers},
                           "cutile_s": {k: times[k] for k in top}}
        finally:
            for op in ops:
                op.sync()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seqs", default="1024,4096,16384")
    ap.add_argument("--ds", default="64,128")
    ap.add_argument("--bh", type=int, default=32)
    ap.add_argument("--json")
    ap.add_argument("--cutile-python-sample")
    ap.add_argument("--candidates", action="store_true",
                    help="only the rows and configurations of CANDIDATES")
    args = ap.parse_args()
    sample = load_sample(args.cutile_python_sample)
    results = []
    for d in (int(x) for x in args.ds.split(",")):
        for causal in (False, True):
            if args.candidates:
                if (causal, d) not in CANDIDATES:
                    continue
                configs = CANDIDATES[(causal, d)]
            else:
                configs = [(*c, {}) for c in CONFIGS[(causal, d)]]
            for seq in (int(x) for x in args.seqs.split(",")):
                results.append(bench(args.bh, seq, d, causal, sample, configs))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print(f"\nflash attention fwd bf16, bh={args.bh}: TFLOP/s (max abs err vs f32 math)")
    print(f"{'d':>4} {'causal':>6} {'seq':>6} {'cutile best':>28} {'flash':>7} {'cuDNN':>7} "
          f"{'cuTilePy':>8} {'/flash':>7} {'/cuDNN':>7} {'/cuTilePy':>9}")
    for r in results:
        ok = {k: v for k, v in r["cutile"].items() if "tflops" in v}
        best_name = max(ok, key=lambda k: ok[k]["tflops"]) if ok else "-"
        best = ok[best_name]["tflops"] if ok else 0.0
        fl = r.get("torch_flash", {}).get("tflops", float("nan"))
        cd = r.get("torch_cudnn", {}).get("tflops", float("nan"))
        err = ok[best_name]["err"] if ok else float("nan")
        ctp = r.get("cutile_python", {})
        cp = ctp.get("tflops", float("nan"))
        print(f"{r['d']:>4} {r['causal']!s:>6} {r['seq']:>6} {best:7.1f} ({best_name:<18}) "
              f"{fl:7.1f} {cd:7.1f} {cp:8.1f} {best / fl:7.2f} {best / cd:7.2f} "
              f"{best / cp:9.2f}  err {err:.1e}  cuTilePy {ctp.get('config', '')}")
        if "error" in ctp:
            print(f"     cuTile Python: {ctp['error']}")
        for name, v in r["cutile"].items():
            if "error" in v:
                print(f"     {name}: {v['error']}")


if __name__ == "__main__":
    main()
