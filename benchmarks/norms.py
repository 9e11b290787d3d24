"""Softmax, RMSNorm and LayerNorm over the rows of an M x N matrix (M = 4096, N = 1k, 4k,
16k, 32k) in bf16 and f32: cutile's kernels from examples/softmax.py, rmsnorm.py and
layernorm.py against torch (F.softmax, F.rms_norm, F.layer_norm) and straightforward Triton
kernels (one program per row, the whole row in one block), one process, random inputs.
A torch clone of x gives the copy bandwidth for reference.

TB/s counts the bytes read and written once (x and the output; the weight and bias too)
over the time; times are CUDA-event medians (timing.py) with a spin kernel ahead of each
trial, so that short kernels are timed without the host's launch cost between them (at
1k columns x and the output fit in L2: those TB/s can pass HBM's). Each cutile config is
checked against torch's f32 result before it is timed (max |y - ref| / (1 + |ref|), printed
with it; a config past 1e-2 in bf16 or 1e-4 in f32 does not count as the best).

    python benchmarks/norms.py [--ops softmax,rmsnorm,layernorm] [--cols 1024,4096,16384,32768]
        [--dtypes bf16,f32] [--rows 4096] [--quick] [--json out.json]
    python benchmarks/norms.py --compile-only     # every config through tileiras, no GPU

cutile configs (CONFIGS, per N): "row" is one (BM, BN >= N) tile of whole rows per block;
"loop" walks whole rows in (BM, BK) column tiles, once for the statistics and once to
write; hints are `occupancy` and `num_worker_warps`. The best config per case is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import layernorm as layernorm_ex
import rmsnorm as rmsnorm_ex
import softmax as softmax_ex
from timing import time_on_stream

import cutile
from cutile.core import bf16, f32

EXAMPLES = {"softmax": softmax_ex, "rmsnorm": rmsnorm_ex, "layernorm": layernorm_ex}
EPS = {"rmsnorm": 1e-6, "layernorm": 1e-5}
DTYPES = {"bf16": bf16, "f32": f32}

# (kind, BM, BK, hints); BN is the power of two at or above N
Config = tuple[str, int, int | None, dict[str, int]]
CONFIGS: dict[int, list[Config]] = {
    1024: [("row", 4, None, {}), ("row", 1, None, {}), ("row", 2, None, {}),
           ("row", 8, None, {}), ("row", 4, None, {"occupancy": 4}),
           ("row", 1, None, {"num_worker_warps": 4}), ("row", 2, None, {"occupancy": 8})],
    4096: [("row", 1, None, {}), ("row", 2, None, {}), ("row", 1, None, {"occupancy": 2}),
           ("row", 1, None, {"num_worker_warps": 8}), ("row", 1, None, {"num_worker_warps": 16}),
           ("loop", 1, 1024, {}), ("loop", 2, 1024, {"occupancy": 2})],
    16384: [("loop", 1, 4096, {}), ("loop", 1, 2048, {}), ("row", 1, None, {}),
            ("row", 1, None, {"num_worker_warps": 16}), ("loop", 1, 4096, {"num_worker_warps": 8}),
            ("loop", 2, 2048, {"occupancy": 2}), ("loop", 1, 8192, {})],
    32768: [("loop", 1, 4096, {}), ("loop", 1, 2048, {}), ("loop", 1, 8192, {}),
            ("loop", 1, 4096, {"num_worker_warps": 8}), ("loop", 1, 4096, {"occupancy": 2}),
            ("loop", 2, 2048, {}), ("row", 1, None, {"num_worker_warps": 16})],
}
QUICK = 3  # --quick: the first configs of each list


def next_pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def label(cfg: Config) -> str:
    kind, bm, bk, hints = cfg
    text = f"{kind} BM={bm}" + (f" BK={bk}" if bk else "")
    names = {"occupancy": "occ", "num_worker_warps": "warps"}
    return text + "".join(f" {names[k]}={v}" for k, v in hints.items())


_KERNELS: dict[tuple[str, str, bool, tuple[tuple[str, int], ...]], cutile.EntryKernel] = {}


def kernel_for(op: str, dtype: str, cfg: Config) -> cutile.EntryKernel:
    """The example's kernel for this op, dtype and kind, with the config's hints (one object
    per combination: its compiled variants are kept with it)."""
    kind, _, _, hints = cfg
    key = (op, dtype, kind == "loop", tuple(sorted(hints.items())))
    got = _KERNELS.get(key)
    if got is None:
        base = EXAMPLES[op].KERNELS[(DTYPES[dtype], kind == "loop")]
        got = base.with_hints(**hints) if hints else base
        _KERNELS[key] = got
    return got


def consts_for(n: int, cfg: Config) -> dict[str, int]:
    kind, bm, bk, _ = cfg
    consts = {"BM": bm, "BN": next_pow2(n)}
    if kind == "loop":
        assert bk is not None
        consts["BK"] = min(bk, next_pow2(n))
    return consts


def precompile(jobs: list[tuple[str, str, int, Config]], target: str, workers: int
               ) -> dict[tuple[str, str, int, str], str]:
    """Assemble every config with tileiras in parallel (a launch then finds its cubin in the
    cache: a launch on contiguous, 16-byte aligned tensors whose extents are multiples of 16
    has the ahead-of-time build's specialization). Returns the failures by job."""
    for op, dtype, _, cfg in jobs:  # the checker and the AST once per kernel, before threads
        kernel_for(op, dtype, cfg).check()

    def build(job: tuple[str, str, int, Config]) -> str | None:
        op, dtype, n, cfg = job
        try:
            kernel_for(op, dtype, cfg).compile(target=target, **consts_for(n, cfg))
            return None
        except Exception as exc:  # reported, not fatal
            return f"{type(exc).__name__}: {str(exc)[:200]}"

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(build, jobs))
    return {(op, dtype, n, label(cfg)): err
            for (op, dtype, n, cfg), err in zip(jobs, results, strict=True) if err}


# -- peers ---------------------------------------------------------------------------------


def triton_kernels() -> dict[str, Any]:
    import triton
    import triton.language as tl

    @triton.jit
    def tr_softmax(x, y, stride, n, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64) * stride
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        v = tl.load(x + row + offs, mask=mask, other=-float("inf")).to(tl.float32)
        e = tl.exp(v - tl.max(v, axis=0))
        out = e / tl.sum(e, axis=0)
        tl.store(y + row + offs, out.to(y.dtype.element_ty), mask=mask)

    @triton.jit
    def tr_rmsnorm(x, w, y, stride, n, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64) * stride
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        v = tl.load(x + row + offs, mask=mask, other=0.0).to(tl.float32)
        inv = tl.rsqrt(tl.sum(v * v, axis=0) / n + eps)
        ws = tl.load(w + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y + row + offs, (v * inv * ws).to(y.dtype.element_ty), mask=mask)

    @triton.jit
    def tr_layernorm(x, w, b, y, stride, n, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64) * stride
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        v = tl.load(x + row + offs, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(v, axis=0) / n
        d = tl.where(mask, v - mean, 0.0)
        inv = tl.rsqrt(tl.sum(d * d, axis=0) / n + eps)
        ws = tl.load(w + offs, mask=mask, other=0.0).to(tl.float32)
        bs = tl.load(b + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y + row + offs, (d * inv * ws + bs).to(y.dtype.element_ty), mask=mask)

    return {"softmax": tr_softmax, "rmsnorm": tr_rmsnorm, "layernorm": tr_layernorm}


def triton_call(kernels: dict[str, Any], op: str, x: Any, w: Any, b: Any, y: Any
                ) -> Any:
    m, n = x.shape
    block = next_pow2(n)
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
    k = kernels[op]
    if op == "softmax":
        return lambda: k[(m,)](x, y, x.stride(0), n, BLOCK=block, num_warps=warps)
    if op == "rmsnorm":
        return lambda: k[(m,)](x, w, y, x.stride(0), n, EPS[op], BLOCK=block, num_warps=warps)
    return lambda: k[(m,)](x, w, b, y, x.stride(0), n, EPS[op], BLOCK=block, num_warps=warps)


def torch_call(op: str, x: Any, w: Any, b: Any) -> Any:
    import torch.nn.functional as F

    n = x.shape[1]
    if op == "softmax":
        return lambda: F.softmax(x, dim=-1)
    if op == "rmsnorm":
        return lambda: F.rms_norm(x, (n,), w, EPS[op])
    return lambda: F.layer_norm(x, (n,), w, b, EPS[op])


def reference(op: str, x: Any, w: Any, b: Any) -> Any:
    """torch's result in f32 (the error of every peer is measured against it)."""
    return torch_call(op, x.float(), None if w is None else w.float(),
                      None if b is None else b.float())()


# -- one case ------------------------------------------------------------------------------


def spin(stream: Any) -> Any:
    """A prelude for time_on_stream: about 2 ms of spinning on `stream` (None without
    torch's spin kernel: then the timing includes what the host costs)."""
    import torch

    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return None
    ext = stream if isinstance(stream, torch.cuda.Stream) else torch.cuda.ExternalStream(
        int(stream))

    def run() -> None:
        with torch.cuda.stream(ext):
            sleep(4_000_000)

    return run


def bench(op: str, dtype: str, m: int, n: int, configs: list[Config], tr: dict[str, Any] | None,
          failed: dict[tuple[str, str, int, str], str]) -> dict[str, Any]:
    import torch

    from cutile import api
    from cutile.runtime import driver
    from cutile.runtime.launch import flatten_args

    tdt = {"bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    torch.manual_seed(0)
    x = torch.randn(m, n, device="cuda", dtype=tdt) * 2 + 0.5
    w = (torch.rand(n, device="cuda", dtype=tdt) + 0.5) if op != "softmax" else None
    b = torch.randn(n, device="cuda", dtype=tdt) if op == "layernorm" else None
    size = x.element_size()
    moved = 2 * m * n * size + (0 if w is None else n * size) + (0 if b is None else n * size)
    ref = reference(op, x, w, b)
    tol = 1e-2 if dtype == "bf16" else 1e-4  # on |y - ref| / (1 + |ref|): bf16 keeps 8 bits
    out: dict[str, Any] = {"op": op, "dtype": dtype, "m": m, "n": n, "bytes": moved,
                           "cutile": {}}
    s = torch.cuda.current_stream()
    prelude = spin(s)

    def error(y: Any) -> float:
        return float(((y.float() - ref).abs() / (1 + ref.abs())).max())

    def peer(name: str, call: Any, nbytes: int, check: bool = True) -> None:
        try:
            y = call()
            torch.cuda.synchronize()
            t = time_on_stream(call, s, prelude=prelude)
            out[name] = {"tbps": nbytes / t / 1e12, "us": t * 1e6}
            if check:
                out[name]["err"] = error(y)
        except Exception as exc:  # a peer that fails is reported, not fatal
            out[name] = {"error": f"{type(exc).__name__}: {str(exc)[:160]}"}

    peer("copy", lambda: x.clone(), 2 * m * n * size, check=False)
    peer("torch", torch_call(op, x, w, b), moved)
    if tr is not None:
        y = torch.empty_like(x)
        call = triton_call(tr, op, x, w, b, y)

        def run_triton() -> Any:
            call()
            return y

        peer("triton", run_triton, moved)

    def to_ct(t: Any) -> Any:  # through raw bytes: numpy has no bf16
        raw = t.contiguous().view(torch.int16 if size == 2 else torch.int32).cpu().numpy()
        tt = api.empty(list(t.shape), DTYPES[dtype])
        tt._alloc.write(0, raw.reshape(-1).view("uint8"))
        return tt

    def to_torch(t: Any) -> Any:
        host = t._alloc.read(0, t.nbytes)
        raw = torch.from_numpy(host.view("int16" if size == 2 else "int32").reshape(m, n).copy())
        return raw.view(tdt).cuda()

    def fresh() -> tuple[list[Any], Any]:
        """cutile copies of the inputs, and an output (again after a failure that kept them)."""
        return [to_ct(t) for t in (x, w, b) if t is not None], api.empty([m, n], DTYPES[dtype])

    ins, result = fresh()
    scalars = [EPS[op]] if op in EPS else []
    stream = driver.state().stream
    ct_prelude = spin(stream)
    for cfg in configs:
        name = label(cfg)
        if (op, dtype, n, name) in failed:
            out["cutile"][name] = {"error": failed[(op, dtype, n, name)]}
            continue
        kernel = kernel_for(op, dtype, cfg)
        consts = consts_for(n, cfg)
        part = [consts.pop("BM"), consts.pop("BN")]     # the output's tiles; BK is passed
        try:
            back = kernel(result.partition(part), *ins, *scalars, **consts).sync()
            result, ins = back[0].unpartition(), list(back[1:1 + len(ins)])
            err = error(to_torch(result))
            timed = kernel(result.partition(part), *ins, *scalars, **consts)
            try:
                bnd = timed.binding
                loaded = kernel._runnable(bnd.spec)
                flat = flatten_args(loaded.abi, [p.name for p in bnd.params], bnd.values)
                launch, grid = loaded.launch, bnd.grid
                t = time_on_stream(lambda: launch(grid, flat, stream), stream,  # noqa: B023
                                   prelude=ct_prelude)
            finally:
                back = timed.sync()   # the op runs once more and hands the tensors back
                result, ins = back[0].unpartition(), list(back[1:1 + len(ins)])
            out["cutile"][name] = {"tbps": moved / t / 1e12, "us": t * 1e6, "err": err,
                                   "ok": err <= tol}
        except Exception as exc:  # a config that fails is reported, not fatal
            out["cutile"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            ins, result = fresh()
    ok = {k: v for k, v in out["cutile"].items() if v.get("ok")}
    out["best"] = max(ok, key=lambda k: ok[k]["tbps"]) if ok else None
    del x, w, b, ref, ins, result
    torch.cuda.empty_cache()
    return out


def show(r: dict[str, Any]) -> str:
    def tb(v: dict[str, Any] | None) -> str:
        return f"{v['tbps']:6.2f}" if v and "tbps" in v else f"{'-':>6}"

    best = r["cutile"][r["best"]] if r["best"] else None
    ratio = []
    for peer in ("torch", "triton"):
        p = r.get(peer, {})
        ratio.append(f"{best['tbps'] / p['tbps']:6.2f}" if best and "tbps" in p else f"{'-':>6}")
    name = r["best"] or "none passed"
    return (f"{r['op']:<10} {r['dtype']:<5} {r['n']:>6} {tb(best)} {name:<28} "
            f"{tb(r.get('torch'))} {tb(r.get('triton'))} {tb(r.get('copy'))} "
            f"{ratio[0]} {ratio[1]}")


HEADER = (f"{'op':<10} {'dtype':<5} {'cols':>6} {'cutile':>6} {'(best config)':<28} "
          f"{'torch':>6} {'triton':>6} {'copy':>6} {'/torch':>6} {'/trit.':>6}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", default="softmax,rmsnorm,layernorm")
    ap.add_argument("--cols", default="1024,4096,16384,32768")
    ap.add_argument("--dtypes", default="bf16,f32")
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--quick", action="store_true", help=f"the first {QUICK} configs per size")
    ap.add_argument("--compile-only", action="store_true",
                    help="assemble every config for sm_90 with tileiras and stop (no GPU)")
    ap.add_argument("--workers", type=int, default=min(16, os.cpu_count() or 1))
    ap.add_argument("--json")
    args = ap.parse_args()
    ops = [o for o in args.ops.split(",") if o]
    cols = [int(c) for c in args.cols.split(",") if c]
    dtypes = [d for d in args.dtypes.split(",") if d]

    def configs(n: int) -> list[Config]:
        got = CONFIGS.get(n) or CONFIGS[min(CONFIGS, key=lambda c: abs(c - n))]
        return got[:QUICK] if args.quick else got

    jobs = [(op, d, n, cfg) for op in ops for d in dtypes for n in cols for cfg in configs(n)]
    if args.compile_only:
        failed = precompile(jobs, "sm_90", args.workers)
        for (op, d, n, name), err in failed.items():
            print(f"FAILED {op} {d} {n} {name}: {err}")
        print(f"norms: {len(jobs) - len(failed)} of {len(jobs)} configs assembled for sm_90")
        return

    from cutile.runtime import driver

    if driver.backend() != "gpu":
        sys.exit("norms.py times on the GPU; `--compile-only` checks the configs without one")
    failed = precompile(jobs, driver.arch(), args.workers)
    try:
        tr: dict[str, Any] | None = triton_kernels()
    except Exception as exc:  # a missing peer is reported, not fatal
        print(f"triton unavailable: {exc}")
        tr = None
    results = []
    print(HEADER, flush=True)
    for op in ops:
        for d in dtypes:
            for n in cols:
                r = bench(op, d, args.rows, n, configs(n), tr, failed)
                results.append(r)
                print(show(r), flush=True)
                for name, v in r["cutile"].items():
                    if "error" in v:
                        print(f"     {name}: {v['error']}", flush=True)
                    elif not v["ok"]:
                        print(f"     {name}: error {v['err']:.2e} (too large)",
                              flush=True)
                for peer in ("torch", "triton", "copy"):
                    if "error" in r.get(peer, {}):
                        print(f"     {peer}: {r[peer]['error']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print("\nper config: TB/s (error vs torch f32); torch and triton errors")
    for r in results:
        cells = "  ".join(f"{k} {v['tbps']:.2f} ({v['err']:.0e})"
                          for k, v in r["cutile"].items() if "tbps" in v)
        peers = "  ".join(f"{p} {r[p]['err']:.0e}" for p in ("torch", "triton")
                          if "err" in r.get(p, {}))
        print(f"  {r['op']} {r['dtype']} {r['n']}: {cells}  |  {peers}")
    print(f"\nnorms over {args.rows} rows: TB/s = (bytes read + written) / time; copy = torch "
          f"clone; ratios are best cutile / peer")
    print(HEADER)
    for r in results:
        print(show(r))


if __name__ == "__main__":
    main()
