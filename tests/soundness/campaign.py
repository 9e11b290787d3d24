"""A long fuzzing campaign: many generated kernels over several processes.

    python -m tests.soundness.campaign --seconds 7200 --seed 1 --out /tmp/fuzz-out
    python -m tests.soundness.campaign --kernels 20000 --workers 2 --out /tmp/f
    python -m tests.soundness.campaign --replay 1:12345     # one case's full report

Case `i` of seed `K` is generated from its own random stream, so `--replay K:i` rebuilds it
exactly. Every kernel is checked and judged by brute force on its sampled launches; every
`--launch-every`-th accepted kernel is also launched on the interpreter. Findings are written
to `OUT/findings/<kind>/<case>.txt` (at most `--keep` per kind and feature signature), and a
summary (counts, throughput, completeness by feature) to `OUT/summary.json` and stdout.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

# Features reported in the completeness table (the list first).
FEATURES = ["modaffine", "clamp", "digits", "digit-swap", "iter-tuple", "transpose",
            "identity", "reverse", "cancel", "overflow", "scalar", "mutshape", "random",
            "persistent", "persistent-direct", "persistent-alias", "persistent-device",
            "subpartition", "device-fn", "device-store", "device-called-twice", "hoist",
            "tuple-assign", "alias", "load-tile", "kw-axis", "store-pos", "store-allkw",
            "store-rev", "like-kw", "like-rev", "multi-same", "multi-two-maps",
            "multi-pair-alias", "kind-two-outputs", "mutated", "while",
            "while-data-dependent", "while-load", "while-subtile", "break", "continue",
            "early-return", "early-return-same", "persistent-break", "extent-keys",
            "extent-keys-same-input", "const-product", "const-product-block",
            "const-product-i64-scalar", "const-product-dead-branch"]

# Kinds that mean "an accepted kernel did something unsafe".
UNSOUND = {"unsound", "race", "oob", "div-zero", "fault", "oob-ragged-subtile"}


def case_seed(seed: int, i: int) -> int:
    return seed * 1_000_003 + i


def known_class(features: list[str], kinds: set[str], source: str) -> str:
    """A best guess at which known class a finding belongs to (for grouping only)."""
    f = set(features)
    if "oob-ragged-subtile" in kinds or any("ragged" in k for k in kinds):
        return "ragged-subtile"
    if "extent-keys" in f:  # (worlds.py: both were hand-written bugs first)
        return "12-extent-keys"
    if "const-product" in f:
        return "13-const-product"
    if f & {"tensor-choice", "input-choice"}:
        return "11-tensor-choice"
    if f & {"narrow", "int-wrap", "unsigned-scalar", "narrow-scalar"}:
        return "10-narrow-integers"
    if f & {"store-badkw", "bad-kw"} or "like-badkw" in f:
        return "1-keywords"
    if f & {"while", "break", "continue", "early-return", "persistent-break"}:
        return "9-control-flow"
    if "device-load-twice" in f and ("unsound" in kinds or any(k.startswith("oob")
                                                               for k in kinds)):
        return "5-device-twice"
    if f & {"persistent-alias", "persistent-device"}:
        return "4-persistent-alias"
    if "multi-pair-alias" in f:
        return "8-pair-alias"
    if f & {"mutshape", "num_tiles-shape"}:
        return "2-mut-shape"
    if any(str(2**p) in source or f"2 ** {p}" in source for p in range(29, 41)) or \
            "i64-scalar" in f or "overflow" in f:
        return "3-wraparound"
    if f & {"like-kw", "like-rev", "like-mixed"}:
        return "1-keywords"
    if "div-zero" in kinds:
        return "new-div-zero"
    if "mut-load" in f:
        return "new-load-vs-store-map"
    if "relay-loop" in f:
        return "6-loop-offsets"
    if f & {"device-called-twice", "device-reused"}:
        return "5-device-twice"
    if "persistent" in f:
        return "7-persistent-count"
    return "other"


class Stats:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.classes: Counter[str] = Counter()
        self.codes: Counter[str] = Counter()
        self.feat: dict[str, Counter[str]] = defaultdict(Counter)
        self.missed_codes: Counter[str] = Counter()  # rejection codes of truly safe kernels
        self.timings: Counter[str] = Counter()

    def add(self, o: Any, cls: str) -> None:
        c = self.counts
        c["generated"] += 1
        c[o.status] += 1
        for t, v in o.seconds.items():
            self.timings[t] += v
        kinds = {f.kind for f in o.findings}
        for k in kinds:
            self.kinds[k] += 1
        if kinds & UNSOUND:
            c["unsound-kernels"] += 1
            self.classes[cls] += 1
        if "untyped" in kinds:
            c["untyped-kernels"] += 1
            self.classes["untyped:" + cls] += 1
        if o.launched:
            c["launched"] += 1
        if o.truly_safe is None:
            c["model-invalid"] += 1
        elif o.truly_safe:
            c["truly-safe"] += 1
            if o.status == "accepted":
                c["safe-accepted"] += 1
                c["safe-accepted-admitted"] += o.admits_all_safe
            elif o.status == "rejected":
                for code in set(o.codes):
                    self.missed_codes[code] += 1
        else:
            c["truly-unsafe"] += 1
        for code in set(o.codes):
            self.codes[code] += 1
        for f in o.features:
            fc = self.feat[f]
            fc["n"] += 1
            fc["accepted"] += o.status == "accepted"
            if o.truly_safe:
                fc["safe"] += 1
                fc["safe-accepted"] += o.status == "accepted"
                fc["safe-admitted"] += o.status == "accepted" and o.admits_all_safe
            if kinds & UNSOUND:
                fc["unsound"] += 1

    def merge(self, other: Stats) -> None:
        self.counts.update(other.counts)
        self.kinds.update(other.kinds)
        self.classes.update(other.classes)
        self.codes.update(other.codes)
        self.missed_codes.update(other.missed_codes)
        self.timings.update(other.timings)
        for f, c in other.feat.items():
            self.feat[f].update(c)

    def as_json(self) -> dict[str, Any]:
        return {"counts": dict(self.counts), "finding_kinds": dict(self.kinds),
                "unsound_by_class": dict(self.classes), "codes": dict(self.codes),
                "safe_but_rejected_codes": dict(self.missed_codes),
                "seconds_by_stage": {k: round(v, 2) for k, v in self.timings.items()},
                "features": {f: dict(c) for f, c in sorted(self.feat.items())}}


CASE_SECONDS = 30


class CaseTimeout(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise CaseTimeout(f"the case ran for more than {CASE_SECONDS} s")


def worker(wid: int, workers: int, seed: int, n: int, deadline: float, out: str,
           launch_every: int, keep: int, q: Any, first: int | None = None) -> None:
    # Imported here: each process sets up cutile (interpreter backend) itself.
    from .draw import Draw, RandomSource
    from .generate import generate
    from .oracle import Finding, Loader, Outcome, report, run_case
    from .program import render_kernel

    loader = Loader(Path(tempfile.mkdtemp(prefix=f"cutile-fuzz-{wid}-")))
    signal.signal(signal.SIGALRM, _on_alarm)
    stats = Stats()
    kept: Counter[tuple[str, str]] = Counter()
    accepted = 0
    last = time.time()
    i = wid if first is None else first
    current = Path(out) / f".current-{wid}"
    try:
        while i < n and time.time() < deadline:
            # The case in hand, for the parent to name if this process dies in it.
            current.write_text(str(i))
            # A case that runs past CASE_SECONDS (a hang in the checker, the lowering, the
            # interpreter or the fuzzer) is stopped by SIGALRM and kept as a `slow` finding.
            signal.alarm(CASE_SECONDS)
            try:
                k = generate(Draw(RandomSource(case_seed(seed, i))), f"{seed}_{i}")
                out_ = run_case(k, loader, launch=(accepted % launch_every == 0))
            except Exception as exc:  # a bug of the fuzzer or a hang: keep it, keep going
                slow = isinstance(exc, CaseTimeout)
                k = generate(Draw(RandomSource(case_seed(seed, i))), f"{seed}_{i}")
                out_ = Outcome(k.case_id, sorted(k.features), status="slow" if slow else
                               "harness")
                out_.findings.append(Finding("slow" if slow else "harness", "".join(
                    traceback.format_exception(exc)[-8:])))
                k.files = render_kernel(k)
                loader.unload(k)
            finally:
                signal.alarm(0)
            accepted += out_.status == "accepted"
            kinds = {f.kind for f in out_.findings}
            cls = known_class(out_.features, kinds, "\n".join(k.files.values()))
            stats.add(out_, cls)
            for kind in sorted(kinds - {"generator"}) or ([] if "generator" not in kinds
                                                           else ["generator"]):
                key = (kind, cls)
                kept[key] += 1
                if kept[key] <= keep:
                    d = Path(out) / "findings" / kind
                    d.mkdir(parents=True, exist_ok=True)
                    (d / f"{cls}__{k.case_id}.txt").write_text(
                        f"# replay: python -m tests.soundness.campaign --replay {seed}:{i}\n"
                        f"# class guess: {cls}\n" + report(k, out_))
            i += workers
            if time.time() - last > 2.0:
                q.put(("stats", wid, stats))
                stats = Stats()
                last = time.time()
    finally:
        q.put(("stats", wid, stats))
        q.put(("done", wid, None))
        loader.close()


def table(stats: Stats, elapsed: float) -> str:
    c = stats.counts
    n = c["generated"]
    lines = [f"kernels: {n} in {elapsed:.0f} s = {n / max(elapsed, 1e-9):.1f} kernels/s "
             f"({c['launched']} launched on the interpreter)",
             f"  accepted {c['accepted']}  rejected {c['rejected']}  frontend {c['frontend']}  "
             f"untyped-in-check {c['untyped']}  invalid {c['invalid']}",
             f"  truly safe {c['truly-safe']}  truly unsafe {c['truly-unsafe']}  "
             f"model-invalid {c['model-invalid']}",
             f"  UNSOUND (accepted but unsafe) {c['unsound-kernels']}   "
             f"untyped errors {c['untyped-kernels']}",
             f"  completeness: accepted / truly safe = {c['safe-accepted']}/{c['truly-safe']}"
             f" = {100 * c['safe-accepted'] / max(c['truly-safe'], 1):.1f}%  "
             f"(and admitting every safe launch: {c['safe-accepted-admitted']})",
             "  finding kinds: " + ", ".join(f"{k} {v}" for k, v in stats.kinds.most_common()),
             "  unsound by class: " + ", ".join(f"{k} {v}" for k, v in
                                               stats.classes.most_common()),
             "  safe but rejected, by code: " + ", ".join(
                 f"{k} {v}" for k, v in stats.missed_codes.most_common(8)),
             "", f"  {'feature':22s} {'n':>7s} {'safe':>7s} {'acc|safe':>8s} {'complete':>8s} "
             f"{'unsound':>7s}"]
    focus = sorted(f for f in stats.feat if f.startswith("focus:"))
    for f in focus + FEATURES + sorted(set(stats.feat) - set(FEATURES) - set(focus)):
        fc = stats.feat.get(f)
        if not fc:
            continue
        pct = f"{100 * fc['safe-accepted'] / fc['safe']:.1f}%" if fc["safe"] else "-"
        lines.append(f"  {f:22s} {fc['n']:7d} {fc['safe']:7d} {fc['safe-accepted']:8d} "
                     f"{pct:>8s} {fc['unsound']:7d}")
    return "\n".join(lines)


def campaign(args: argparse.Namespace) -> Stats:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    start = time.time()
    deadline = start + args.seconds
    def spawn(w: int, first: int | None = None) -> Any:
        p = ctx.Process(target=worker, args=(w, args.workers, args.seed, args.kernels,
                                             deadline, str(out), args.launch_every, args.keep,
                                             q, first))
        p.start()
        return p

    procs = [spawn(w) for w in range(args.workers)]
    total = Stats()
    finished: set[int] = set()
    last_print = time.time()
    while len(finished) < len(procs):
        try:
            kind, wid, payload = q.get(timeout=5)
        except queue.Empty:
            # A worker that died without saying so (a crash in native code, the OOM
            # killer): the case it was running is a `crash` finding; go on after it.
            for w, p in enumerate(procs):
                if w in finished or p.is_alive():
                    continue
                p.join()
                case = int((out / f".current-{w}").read_text() or w)
                d = out / "findings" / "crash"
                d.mkdir(parents=True, exist_ok=True)
                (d / f"crash__{args.seed}_{case}.txt").write_text(
                    f"# replay: python -m tests.soundness.campaign --replay {args.seed}:{case}\n"
                    f"# the worker process died (exit code {p.exitcode}) in this case\n")
                total.kinds["crash"] += 1
                procs[w] = spawn(w, case + args.workers)
            continue
        if kind == "done":
            finished.add(wid)
            continue
        total.merge(payload)
        if time.time() - last_print > args.progress:
            el = time.time() - start
            c = total.counts
            print(f"[{el:6.0f}s] {c['generated']} kernels ({c['generated'] / el:.1f}/s), "
                  f"accepted {c['accepted']}, unsound {c['unsound-kernels']}, "
                  f"untyped {c['untyped-kernels']}", flush=True)
            last_print = time.time()
    for p in procs:
        p.join()
    elapsed = time.time() - start
    text = table(total, elapsed)
    summary = total.as_json() | {"seconds": elapsed, "seed": args.seed,
                                 "workers": args.workers, "launch_every": args.launch_every}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    (out / "summary.txt").write_text(text + "\n")
    print(text, flush=True)
    return total


def replay(spec: str) -> None:
    from .draw import Draw, RandomSource
    from .generate import generate
    from .oracle import Loader, report, run_case

    seed, i = (int(x) for x in spec.split(":"))
    k = generate(Draw(RandomSource(case_seed(seed, i))), f"{seed}_{i}")
    loader = Loader(Path(tempfile.mkdtemp(prefix="cutile-fuzz-replay-")))
    try:
        print(report(k, run_case(k, loader)))
    finally:
        loader.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", type=int, default=10**12, help="stop after this many")
    ap.add_argument("--seconds", type=float, default=60.0, help="stop after this long")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    ap.add_argument("--out", default="fuzz-out")
    ap.add_argument("--launch-every", type=int, default=1,
                    help="launch every n-th accepted kernel on the interpreter")
    ap.add_argument("--keep", type=int, default=20,
                    help="finding files kept per (kind, class) and worker")
    ap.add_argument("--progress", type=float, default=30.0, help="seconds between progress lines")
    ap.add_argument("--replay", help="SEED:I: print one case's report and exit")
    args = ap.parse_args(argv)
    # The race and bounds detector lives in the interpreter: the campaign never runs on a
    # GPU, even where there is one (spawned workers inherit the environment).
    os.environ["CUTILE_BACKEND"] = "interpreter"
    os.environ.setdefault("CUTILE_QUIET", "1")
    if args.replay:
        replay(args.replay)
        return 0
    stats = campaign(args)
    return 1 if stats.counts["unsound-kernels"] or stats.counts["untyped-kernels"] else 0


if __name__ == "__main__":
    sys.exit(main())
