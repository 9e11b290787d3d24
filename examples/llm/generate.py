"""Generate tokens with the Qwen3 engine and report its speed against the memory roofline.

    python examples/llm/generate.py --random-weights qwen3-4b --prompt-len 128 --new-tokens 256
    python examples/llm/generate.py --checkpoint ~/Qwen3-4B --prompt "The capital of France is"
    python examples/llm/generate.py --random-weights tiny --new-tokens 8        # CPU interpreter

Prints tok/s and ms/token of the decode steps, the bytes one step reads (every weight once,
plus the KV cache at the mean context of the run), the copy bandwidth measured in the same
run, the roofline those give (tok/s = bandwidth / bytes per token) and the share of it
reached. The prefill takes the whole prompt and ends with the LM head on its last token, so
it gives the first token; the decode steps after it replay one step captured once with
`cutile.graph` (the capture compiles the step's kernels), which owns the
engine's weights, KV cache and buffers meanwhile (`--op-by-op`: launch and wait for each
kernel from the host instead, the host's time counting). The replays go to the GPU
`--stream-every` steps (default 16) back to back, then the host waits for them and has
their tokens: the host's part of each replay overlaps the GPU's work, as in a serving
engine that streams tokens in chunks. ms/token is the time of a chunk over its steps;
`--stream-every 1` waits for every step, the figure a caller that needs each token before
the next step sees (the host's part of a replay then counts).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cutile import api
from cutile.core import bf16
from cutile.runtime import driver
from llm.config import PRESETS, CheckpointError, from_checkpoint, human, preset, with_layers
from llm.model import Engine, check_config
from llm.plan import SMALL_VARIANTS, plan_for
from llm.reference import Sampling
from llm.weights import load_checkpoint, random_weights


class Bar:
    """A one-line progress bar on stderr (silent when disabled)."""

    def __init__(self, enabled: bool, width: int = 30):
        self.enabled, self.width = enabled, width
        self._last = 0.0

    def __call__(self, done: int, total: int, what: str) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        filled = self.width * done // max(total, 1)
        sys.stderr.write(f"\r  [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} "
                         f"{what}   ")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _copy_chain(dsts: list[Any], src: Any, done: list[Any]) -> Any:
    """One op: `src` copied into each of `dsts` in turn (a `then` chain: one stream, no
    wait between copies); every destination but the last is appended to `done`."""
    from llm.kernels.fill import copy_tiles

    def into(dst: Any) -> Callable[..., Any]:
        def copy(z: Any, x: Any) -> Any:
            done.append(z)
            return copy_tiles(dst, x)
        return copy

    op = copy_tiles(dsts[0], src)
    for dst in dsts[1:]:
        op = op.then(into(dst))
    return op


def copy_bandwidth(elements: int, repeats: int = 5, batch: int = 4) -> float:
    """Device copy bandwidth (bytes read + written per second) of cutile's copy kernel:
    `batch` copies in one chain with one wait at the end, so the host's launch and wait
    (tens of µs) are spread over the batch instead of shortening the bandwidth of each
    copy (and flattering the roofline). The best of `repeats` chains."""
    src = api.zeros([elements], bf16)
    dsts = [api.empty([elements], bf16).partition([4096]) for _ in range(batch)]
    best = float("inf")
    for i in range(repeats + 1):
        done: list[Any] = []
        op = _copy_chain(dsts, src, done)
        t0 = time.perf_counter()
        last, src = op.sync()
        if i >= 1:
            best = min(best, (time.perf_counter() - t0) / batch)
        dsts = [*done, last]
    return 2 * elements * 2 / best


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--random-weights", metavar="CONFIG",
                     help="random weights of a named config: qwen3-0.6b, qwen3-1.7b, "
                          "qwen3-4b, qwen3-8b, tiny")
    src.add_argument("--checkpoint", metavar="DIR", help="Hugging Face checkpoint directory")
    ap.add_argument("--layers", type=int, help="use only this many layers (quick runs)")
    prompt = ap.add_mutually_exclusive_group()
    prompt.add_argument("--prompt", help="prompt text (needs tokenizer.json)")
    prompt.add_argument("--prompt-ids", help="prompt as comma-separated token ids")
    prompt.add_argument("--prompt-len", type=int, default=16, help="random prompt of this length")
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--max-seq", type=int, help="positions to allocate (default: enough)")
    ap.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    ap.add_argument("--top-k", type=int, default=50, help="0: no top-k (top-p alone)")
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--copy-mib", type=float,
                    help="copy-bandwidth buffer size in MiB (default 1024, 4 copies back to "
                         "back; 0.25 interpreted)")
    ap.add_argument("--stream-every", type=int, metavar="N",
                    help="decode steps replayed back to back before the host waits for them "
                         "and reads their tokens (1: wait for every step; default 16)")
    ap.add_argument("--op-by-op", action="store_true",
                    help="launch each kernel of a step from the host (no cutile.graph)")
    ap.add_argument("--small-kernels", choices=sorted(SMALL_VARIANTS), default=None,
                    help="a variant of the decode step's small kernels (llm/plan.py "
                         "SMALL_VARIANTS; default: the plan's)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    check_args(ap, args)
    return args


def check_args(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Ranges argparse's types do not check: each bad value is a one-line usage error
    (exit 2) here, not a traceback from numpy or the engine later."""
    at_least = {"--prompt-len": (args.prompt_len, 1), "--new-tokens": (args.new_tokens, 1),
                "--layers": (args.layers, 1), "--max-seq": (args.max_seq, 2),
                "--stream-every": (args.stream_every, 1), "--seed": (args.seed, 0)}
    for flag, (value, low) in at_least.items():
        if value is not None and value < low:
            ap.error(f"{flag} takes a number >= {low}, got {value}")
    if args.copy_mib is not None and not args.copy_mib > 0:
        ap.error(f"--copy-mib takes a size > 0, got {args.copy_mib}")
    if args.random_weights and args.random_weights.lower() not in PRESETS:
        ap.error(f"--random-weights: no config named {args.random_weights!r}; known: "
                 f"{', '.join(PRESETS)}")
    if args.op_by_op and args.stream_every is not None:
        ap.error("--stream-every sets how many graph replays run between waits; "
                 "--op-by-op has no graph")
    try:
        Sampling(args.temperature, args.top_k, args.top_p, args.seed)
    except ValueError as e:
        msg = str(e)
        for name, flag in (("temperature", "--temperature"), ("top_k", "--top-k"),
                           ("top_p", "--top-p"), ("seed", "--seed")):
            if msg.startswith(name):
                msg = flag + msg[len(name):]
        ap.error(msg)
    if args.prompt_ids is not None:
        try:
            args.prompt_ids = [int(x) for x in args.prompt_ids.split(",") if x.strip()]
        except ValueError:
            ap.error(f"--prompt-ids takes comma-separated integers, got {args.prompt_ids!r}")
        if not args.prompt_ids:
            ap.error("--prompt-ids names no token")


def fail(message: str) -> SystemExit:
    """A one-line error for what the run found wrong with its inputs (exit status 1)."""
    return SystemExit(f"generate.py: error: {message}")


def tokenizer_for(args: argparse.Namespace) -> Any:
    if not args.checkpoint:
        return None
    path = Path(args.checkpoint) / "tokenizer.json"
    if not path.exists():
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise fail(f"{path} needs the `tokenizers` package (pip install tokenizers, or the "
                   "[llm] extra); without it, give --prompt-ids or --prompt-len and move "
                   "tokenizer.json aside") from None
    try:
        return Tokenizer.from_file(str(path))
    except Exception as e:  # tokenizers raises plain Exception for a file it cannot parse
        raise fail(f"{path}: not a tokenizers file ({e})") from None


def prompt_ids(args: argparse.Namespace, vocab: int, tok: Any) -> list[int]:
    if args.prompt is not None:
        if tok is None:
            raise fail("--prompt needs a checkpoint with tokenizer.json; use --prompt-ids or "
                       "--prompt-len")
        ids = list(tok.encode(args.prompt).ids)
        if not ids:
            raise fail(f"the prompt {args.prompt!r} tokenizes to no token")
        bad = [t for t in ids if not 0 <= t < vocab]
        if bad:     # a tokenizer of another model: the engine would refuse the ids anyway
            raise fail(f"tokenizer.json gives token id {bad[0]}, outside the model's "
                       f"vocabulary [0, {vocab}): is it the tokenizer of another model?")
        return ids
    if args.prompt_ids:
        bad = [t for t in args.prompt_ids if not 0 <= t < vocab]
        if bad:
            raise fail(f"--prompt-ids: token id {bad[0]} is outside the vocabulary [0, {vocab})")
        return list(args.prompt_ids)
    rng = np.random.default_rng(args.seed)
    return [int(x) for x in rng.integers(0, vocab, args.prompt_len)]


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _replay_chunk(graph: Any, n: int) -> None:
    """`n` decode steps enqueued back to back, then waited for (the last replay's
    completion is every earlier one's: one stream)."""
    replays = [graph.step() for _ in range(n)]
    replays[-1].wait()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    stream_every = args.stream_every or 16
    bar = Bar(not args.no_progress)
    t_start = time.perf_counter()
    gpu = driver.backend() == "gpu"
    try:
        cfg = from_checkpoint(args.checkpoint) if args.checkpoint else preset(args.random_weights)
    except CheckpointError as e:
        raise fail(str(e)) from None
    if args.layers:
        if args.layers > cfg.num_layers:    # ("only this many": 10**9 made layers for hours)
            raise fail(f"--layers {args.layers}: the "
                       f"{'checkpoint' if args.checkpoint else 'config'} has {cfg.num_layers}")
        cfg = with_layers(cfg, args.layers)
    print(cfg.describe())
    print(f"backend: {driver.backend()}")
    print("loading weights" if args.checkpoint else f"making random weights (seed {args.seed})")
    t0 = time.perf_counter()
    try:
        # the checkpoint's own config unless --layers cut it: then the layers past it are
        # expected in the files, otherwise they are refused
        weights = (load_checkpoint(args.checkpoint, bar, cfg if args.layers else None)
                   if args.checkpoint else random_weights(cfg, args.seed, bar))
    except CheckpointError as e:
        raise fail(str(e)) from None
    t_load = time.perf_counter() - t0
    tok = tokenizer_for(args)
    ids = prompt_ids(args, cfg.vocab_size, tok)
    need = len(ids) + args.new_tokens
    if args.max_seq is not None and args.max_seq < need:
        raise fail(f"--max-seq {args.max_seq} cannot hold the prompt's {len(ids)} tokens and "
                   f"{args.new_tokens} new ones ({need} positions)")
    max_seq = args.max_seq or need + 1
    if need > cfg.max_position_embeddings:
        print(f"warning: {need} positions is past the model's max_position_embeddings "
              f"({cfg.max_position_embeddings}); the tokens past it are out of what it was "
              "trained on", file=sys.stderr)
    sampling = Sampling(args.temperature, args.top_k, args.top_p, args.seed)
    plan = plan_for(cfg).with_(**SMALL_VARIANTS.get(args.small_kernels or "", {}))
    try:      # shapes the kernels cannot take, a top-k past the sampler's candidates
        check_config(cfg, plan)
        engine = Engine(weights, max_seq, plan, sampling)
    except ValueError as e:
        raise fail(str(e)) from None

    # the whole prompt through the prefill and the LM head: the first token, one chain
    try:
        t_prefill = timed(lambda: engine.load_prompt(ids, first_token=True))
    except ValueError as e:   # (every id and length is checked above; the engine's word)
        raise fail(str(e)) from None
    ttft = time.perf_counter() - t_start
    steps = []
    ops_before = engine.ops
    t_capture = None
    if args.op_by_op:
        for i in range(args.new_tokens - 1):
            steps.append(timed(engine.decode_step))
            bar(i + 2, args.new_tokens, "tokens")
    elif args.new_tokens > 1:
        t0 = time.perf_counter()
        graph = engine.capture_decode()
        t_capture = time.perf_counter() - t0
        left = args.new_tokens - 1
        while left:
            n = min(stream_every, left)
            chunk = timed(lambda: _replay_chunk(graph, n))  # noqa: B023
            steps += [chunk / n] * n
            left -= n
            bar(args.new_tokens - left, args.new_tokens, "tokens")
        graph.close()
    out = engine.token_ids()
    new = [int(t) for t in out[len(ids):]]
    print(f"prompt: {len(ids)} tokens; generated {len(new)}: {new[:16]}"
          f"{' ...' if len(new) > 16 else ''}")
    if tok is not None:
        print(f"text: {tok.decode(new)}")

    elements = int((args.copy_mib or (1024 if gpu else 0.25)) * 2**20) // 2
    bw = copy_bandwidth(elements, repeats=5 if gpu else 1, batch=4 if gpu else 2)
    mean_ctx = len(ids) + args.new_tokens / 2
    per_token = weights.decode_bytes() + engine.kv_bytes(int(mean_ctx))
    roof = bw / per_token
    report: dict[str, Any] = {"config": cfg.name, "backend": driver.backend(),
                              "load_s": t_load, "prefill_s": t_prefill,
                              "ttft_s": ttft, "tokens": new,
                              "cutile_graph": t_capture is not None,
                              "stream_every": 1 if t_capture is None else stream_every}
    if t_capture is not None:
        report["capture_s"] = t_capture
    print(f"weights {human(weights.nbytes(), 'B')} made/loaded in {t_load:.2f} s; "
          f"prefill of {len(ids)} tokens to the first token {t_prefill * 1e3:.1f} ms; time "
          f"to first token {ttft:.2f} s")
    if steps:
        step = float(np.median(steps))
        report.update(ms_per_token=step * 1e3, tok_s=1 / step, copy_tbps=bw / 1e12,
                      bytes_per_token=per_token, roofline_tok_s=roof, of_roofline=1 / step / roof,
                      launches_per_step=(engine.ops - ops_before) / len(steps))
        how = ("launched one by one" if t_capture is None else
               f"replayed as one cutile.graph captured in {t_capture * 1e3:.1f} ms, "
               + ("each step waited for" if stream_every == 1 else
                  f"{stream_every} steps back to back per wait"))
        print(f"decode: {1 / step:.1f} tok/s, {step * 1e3:.2f} ms/token (median of "
              f"{len(steps)} steps, {report['launches_per_step']:.0f} kernels each, {how})")
        print(f"roofline: {human(per_token, 'B')}/token (weights "
              f"{human(weights.decode_bytes(), 'B')} + KV cache at context {mean_ctx:.0f}) at "
              f"copy bandwidth {human(bw, 'B')}/s = {roof:.1f} tok/s; reached "
              f"{100 / step / roof:.1f}%")
    return report


if __name__ == "__main__":
    main()
