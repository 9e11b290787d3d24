"""Issue 8's speed table from one GPU session: every workload of the kernel language next to
its peers, each workload's peers timed in the same process as cutile, and one table with the
ratio, the target and whether it is met.

    python benchmarks/speed_table.py run --out DIR [--parts gemm,fp8,add,attention,norms,compile]
        [--cutile-python-sample PATH/AttentionFMHA.py]
    python benchmarks/speed_table.py render DIR [DIR ...] [--markdown table.md] [--json all.json]

`run` starts each part's own benchmark script (gemm_shapes.py, fp8_gemm.py, elementwise.py,
attention.py, norms.py, compile_examples.py) in a fresh process with a time limit, writes its
JSON and log under DIR, and renders what it has; `render` rebuilds the table from one or
more such directories (the parts of one session may run as two commands on one warm
machine). A part that failed or ran out of time is reported as missing, not guessed.

What each row compares (targets from issue 8):
- GEMM 8192^3: the best configuration and cuBLAS re-timed alternately (gemm_shapes' duel).
- GEMM sweep: geomean over the 1k-16k shapes of (best configuration / cuBLAS), each from the
  shape's alternating duel.
- FP8: the best "f32"-accumulating kernel against `torch._scaled_mm` rowwise (the same
  accumulation), and the best "fast" kernel against `use_fast_accum=True` (the same
  accumulation) and against the default rowwise mode.
- attention: the best configuration per shape against cuDNN and against cuTile Python's FMHA
  sample tuned by its own search.
- norms: each example's own plan against the faster of torch and Triton; from 16k columns
  also against the copy bandwidth (>= 90%).
- add: the best tile against cuTile Python's best tile.
- compile: each kernel with a cuTile Python counterpart, cold.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GEMM_CONFIGS = ("persistent 128x256x64 g8 warps8,persistent 128x128x64 g8,"
                "128x64x64 occ2,64x128x64 occ2")
# part -> (script and arguments, seconds allowed)
PARTS: dict[str, tuple[list[str], int]] = {
    "gemm": (["gemm_shapes.py", "--configs", GEMM_CONFIGS], 300),
    "fp8": (["fp8_gemm.py", "--focus"], 120),
    "add": (["elementwise.py"], 90),
    "attention": (["attention.py"], 280),
    "norms": (["norms.py", "--variants", "plan"], 150),
    "compile": (["compile_examples.py"], 130),
}
SAMPLE_PARTS = ("attention", "compile")   # take --cutile-python-sample
Row = dict[str, Any]


def run_parts(out: Path, parts: list[str], sample: str | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for part in parts:
        script, limit = PARTS[part]
        cmd = [sys.executable, str(HERE / script[0]), *script[1:], "--json",
               str(out / f"{part}.json")]
        if sample and part in SAMPLE_PARTS:
            cmd += ["--cutile-python-sample", sample]
        t0 = time.perf_counter()
        with open(out / f"{part}.log", "w") as log:
            try:
                rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=limit,
                                    env=dict(os.environ, PYTHONUNBUFFERED="1")).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        print(f"{part}: exit {rc} in {time.perf_counter() - t0:.0f} s", flush=True)


def load(dirs: list[Path]) -> dict[str, Any]:
    """Each part's JSON, the last directory that has it winning."""
    got: dict[str, Any] = {}
    for d in dirs:
        for part in PARTS:
            f = d / f"{part}.json"
            if f.exists():
                got[part] = json.loads(f.read_text())
    return got


def row(workload: str, ours: float | None, peer: float | None, peer_name: str, unit: str,
        target: float, lower_is_better: bool = False,
        duel: dict[str, float] | None = None, scale: float = 1.0) -> Row:
    """One comparison. With `duel` (timing.alternate's result for this peer; `scale` turns
    its ratio of times into one of the row's units, when the two move different bytes) the
    ratio is the alternating re-times', with the spread of their rounds; the caller passes
    their values as `ours` and `peer`."""
    low = high = None
    ratio: float | None
    if duel is not None:
        ratio, low, high = (duel[k] * scale for k in ("ratio", "low", "high"))
    elif ours and peer:
        ratio = peer / ours if lower_is_better else ours / peer
    else:
        ratio = None
    return {"workload": workload, "cutile": ours, "peer": peer, "peer_name": peer_name,
            "unit": unit, "ratio": ratio, "low": low, "high": high, "target": target,
            "met": None if ratio is None else ratio >= target}


def gemm_rows(res: list[dict[str, Any]]) -> list[Row]:
    rows, ratios = [], {}
    for r in res:
        d = r.get("duel") or first_pass(r)   # older runs had no alternating re-times
        if not d:
            continue
        shape = "x".join(str(v) for v in r["shape"])
        ratios.setdefault(r["dtype"], []).append(d.get("ratio", d["cutile"] / d["cublas"]))
        if r["shape"] == [8192, 8192, 8192]:   # with its rounds' spread, where it has one
            rows.append(row(f"GEMM {r['dtype']} {shape} ({d['config']})", d["cutile"],
                            d["cublas"], "cuBLAS", "TFLOP/s", 1.0,
                            duel=d if "ratio" in d else None))
    for dt, rs in ratios.items():
        geo = math.exp(sum(math.log(x) for x in rs) / len(rs))
        rows.append({"workload": f"GEMM {dt} sweep, geomean of {len(rs)} shapes (1k-16k)",
                     "cutile": None, "peer": None, "peer_name": "cuBLAS", "unit": "",
                     "ratio": geo, "target": 0.95, "met": geo >= 0.95})
    return rows


def first_pass(r: dict[str, Any]) -> dict[str, Any] | None:
    best = best_of(r["cutile"], "tflops")
    if not best or "tflops" not in r.get("cublas", {}):
        return None
    return {"config": best[0], "cutile": best[1], "cublas": r["cublas"]["tflops"]}


def best_of(entries: dict[str, Any], key: str, prefix: str = "") -> tuple[str, float] | None:
    ok = {k: v[key] for k, v in entries.items() if key in v and k.startswith(prefix)}
    if not ok:
        return None
    name = max(ok, key=lambda k: ok[k])
    return name, ok[name]


FP8_PEERS = {"torch_scaled_mm_rowwise": "_scaled_mm rowwise",
             "torch_scaled_mm_rowwise_fast_accum": "_scaled_mm rowwise fast_accum"}


def fp8_rows(r: dict[str, Any]) -> list[Row]:
    """The best "f32" and "fast" accumulation against their peers: from the alternating
    re-times where the run has them (`fp8_gemm.py --focus --rounds`), else the first pass."""
    n = r["n"]
    flops = 2 * n**3 / 1e12
    rows = []
    pairs = (("f32", "f32 accumulation", ("torch_scaled_mm_rowwise",)),
             ("fast", "fast accumulation", ("torch_scaled_mm_rowwise_fast_accum",
                                            "torch_scaled_mm_rowwise")))
    for acc, what, peers in pairs:
        first = best_of(r["cutile"], "tflops", acc)
        d = r.get("duel", {}).get(acc)
        config = d["config"] if d else first[0] if first else None
        if config is None:
            continue
        for p in peers:
            name = FP8_PEERS[p] + (" (default)" if acc == "fast" and p.endswith("rowwise")
                                   else "")
            vs = d["vs"].get(p) if d else None
            if vs is not None:
                rows.append(row(f"FP8 GEMM {n}^3, {what} ({config})", flops / vs["ours_s"],
                                flops / vs["peer_s"], name, "TFLOP/s", 1.0, duel=vs))
            else:
                rows.append(row(f"FP8 GEMM {n}^3, {what} ({config})",
                                first[1] if first else None,
                                r.get(p, {}).get("tflops"), name, "TFLOP/s", 1.0))
    return rows


def attention_rows(res: list[dict[str, Any]]) -> list[Row]:
    rows = []
    for r in res:
        best = best_of(r["cutile"], "tflops")
        if not best:
            continue
        # the re-times' winner among the first pass's two best, where the part has them
        config = r.get("duel", {}).get("config", best[0])
        duels = r.get("duel", {}).get("vs", {})
        causal = "causal" if r["causal"] else "non-causal"
        name = f"attention d{r['d']} {causal} seq {r['seq']} ({config})"
        flops = 4 * r["bh"] * r["seq"] ** 2 * r["d"] / (2 if r["causal"] else 1)
        sample = r.get("cutile_python", {})
        for key, peer_name in (("torch_cudnn", "cuDNN"), ("cutile_python", "cuTile Python "
                               f"sample ({sample.get('config', 'tuned')})")):
            if "tflops" not in r.get(key, {}):
                continue
            d = duels.get(key)
            ours, peer = ((flops / d["ours_s"] / 1e12, flops / d["peer_s"] / 1e12) if d
                          else (best[1], r[key]["tflops"]))
            rows.append(row(name, ours, peer, peer_name, "TFLOP/s", 1.0, duel=d))
    return rows


def norm_rows(res: list[dict[str, Any]]) -> list[Row]:
    rows = []
    for r in res:
        plan = r["cutile"].get(r.get("plan") or "", {})
        if "tbps" not in plan:
            continue
        peers = {p: r[p]["tbps"] for p in ("torch", "triton") if "tbps" in r.get(p, {})}
        if not peers:
            continue
        duels = r.get("duel", {})
        if all(p in duels for p in peers):   # the faster peer by the alternating re-times
            faster = min(peers, key=lambda p: duels[p]["ratio"])
        else:
            faster = max(peers, key=lambda p: peers[p])
        name = f"{r['op']} {r['dtype']} {r['m']}x{r['n']}"
        copy_bytes = 2 * r["m"] * r["n"] * (2 if r["dtype"] == "bf16" else 4)
        for peer, nbytes, target, label in ((faster, r["bytes"], 1.0, f"{faster} (the faster)"),
                                            ("copy", copy_bytes, 0.9, "copy")):
            if peer == "copy" and (r["n"] < 16384 or "tbps" not in r.get("copy", {})):
                continue
            d = duels.get(peer)
            ours, theirs = ((r["bytes"] / d["ours_s"] / 1e12, nbytes / d["peer_s"] / 1e12)
                            if d else (plan["tbps"], r[peer]["tbps"]))
            rows.append(row(name, ours, theirs, label, "TB/s", target, duel=d,
                            scale=r["bytes"] / nbytes))
    return rows


def add_rows(r: dict[str, Any]) -> list[Row]:
    """cutile's best tile against each peer's best: from the alternating re-times where the
    run has them (`elementwise.py --rounds`), else from the first pass."""
    ours = max((x["tbps"] for x in r["cutile"] if x.get("correct")), default=None)
    first = {"cutile_python": max((x["tbps"] for x in r.get("cutile_python", [])
                                   if x.get("correct")), default=None)}
    for p in ("torch", "triton"):
        if r.get(p, {}).get("correct", True) and "tbps" in r.get(p, {}):
            first[p] = r[p]["tbps"]
    names = {"cutile_python": "cuTile Python", "torch": "torch", "triton": "triton"}
    moved = 12 * r.get("n", 1 << 28) / 1e12      # TB per launch: two reads and a write
    out = []
    for p, peer in first.items():
        d = r.get("duel", {}).get(p)
        if d is not None:
            out.append(row("f32 add 2^28", moved / d["ours_s"], moved / d["peer_s"], names[p],
                           "TB/s", 1.0, duel=d))
        elif peer is not None or p == "cutile_python":
            out.append(row("f32 add 2^28", ours, peer, names[p], "TB/s", 1.0))
    return out


def compile_rows(r: dict[str, Any]) -> list[Row]:
    sys.path.insert(0, str(HERE))
    from compile_examples import PEERS

    rows = []
    for (example, kernel), which in PEERS.items():
        ours = r["cutile"].get(example, {}).get(kernel)
        peer = r["cutile_python"].get(which, {}).get("compile_s")
        if isinstance(ours, float):
            rows.append(row(f"cold compile {example}/{kernel}", ours, peer,
                            f"cuTile Python {which}", "s", 1.0, lower_is_better=True))
    return rows


RENDER = {"gemm": gemm_rows, "fp8": fp8_rows, "add": add_rows, "attention": attention_rows,
          "norms": norm_rows, "compile": compile_rows}


def table(got: dict[str, Any]) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    for part, make in RENDER.items():
        if part in got:
            rows += make(got[part])
    return rows, [p for p in PARTS if p not in got]


def fmt(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def within_spread(r: Row) -> bool:
    """A row below target whose best round reached it: which side of the target it lands
    on is decided by run-to-run noise (METHOD.md), not by the kernel."""
    return r["met"] is False and r.get("high") is not None and r["high"] >= r["target"]


def markdown(rows: list[Row], missing: list[str]) -> str:
    lines = ["ratio: cutile's speed over the peer's (> 1: cutile is faster; for compile times,"
             " the peer's seconds over cutile's); spread: the lowest and highest round of the"
             " alternating re-times, where the part has them", "",
             "| workload | cutile | peer | peer value | unit | ratio | spread | target | met |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        met = {True: "yes", False: "**no**", None: "-"}[r["met"]]
        met += " (within spread)" if within_spread(r) else ""
        digits = 2 if r["unit"] in ("TB/s", "s") else 1
        spread = (f"{r['low']:.3f}–{r['high']:.3f}" if r.get("low") is not None else "-")
        lines.append(f"| {r['workload']} | {fmt(r['cutile'], digits)} | {r['peer_name']} | "
                     f"{fmt(r['peer'], digits)} | {r['unit']} | {fmt(r['ratio'], 3)} | "
                     f"{spread} | ≥ {r['target']} | {met} |")
    n_met = sum(1 for r in rows if r["met"])
    n_near = sum(1 for r in rows if within_spread(r))
    lines.append("")
    lines.append(f"{n_met} of {len(rows)} rows met"
                 + (f" ({n_near} more not met but within the spread of their rounds)"
                    if n_near else "")
                 + (f"; parts missing: {', '.join(missing)}" if missing else ""))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--parts", default=",".join(PARTS))
    r.add_argument("--cutile-python-sample")
    s = sub.add_parser("render")
    s.add_argument("dirs", nargs="+")
    s.add_argument("--markdown")
    s.add_argument("--json")
    args = ap.parse_args()
    if args.cmd == "run":
        parts = [p for p in args.parts.split(",") if p]
        unknown = [p for p in parts if p not in PARTS]
        if unknown:
            sys.exit(f"unknown parts {unknown}: choose from {', '.join(PARTS)}")
        run_parts(Path(args.out), parts, args.cutile_python_sample)
        dirs = [Path(args.out)]
    else:
        dirs = [Path(d) for d in args.dirs]
    rows, missing = table(load(dirs))
    text = markdown(rows, missing)
    print(text)
    if args.cmd == "render" and args.markdown:
        Path(args.markdown).write_text(text + "\n")
    if args.cmd == "render" and args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "missing": missing}, indent=1))


if __name__ == "__main__":
    main()
