"""Shared pieces of the Qwen3 engine's GPU benchmark and correctness check: tensors between
torch and cutile, a recorder of the kernels one decode step launches (for timing them back
to back, one by one, or captured in a raw CUDA graph), and Hugging Face's Qwen3ForCausalLM
on the engine's weights.

Recording reads what a launch would pass to `cuLaunchKernel` (the bound op's arguments) and
replays it on cutile's stream without the ownership layer: a measurement of the device
time of a step, which is what `cutile.graph` replay will give the engine itself. It is for
this benchmark only; the engine launches through the safe path.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from timing import raw_launch, time_on_stream

from cutile import api
from cutile.runtime import driver


def _cu() -> Any:
    from cuda.bindings import driver as cu

    return cu


def check(res: Any) -> Any:
    cu = _cu()
    err = res[0] if isinstance(res, tuple) else res
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA error {err}")
    return res[1] if isinstance(res, tuple) and len(res) > 1 else None


def stream() -> Any:
    return driver.state().stream


# -- tensors ---------------------------------------------------------------------------------

def to_cutile(t: Any) -> Any:
    """A cutile tensor with the contents of a torch tensor (through host bytes)."""
    import torch

    from cutile.core import bf16, f32, i32

    dt = {torch.bfloat16: bf16, torch.float32: f32, torch.int32: i32}[t.dtype]
    raw = t.detach().contiguous().view(torch.int16 if t.element_size() == 2 else torch.int32)
    out = api.empty(list(t.shape), dt)
    out._alloc.write(0, raw.cpu().numpy().reshape(-1).view(np.uint8))
    return out


def to_torch(arr: np.ndarray, device: str = "cuda") -> Any:
    """A torch tensor from a numpy array (bf16 from ml_dtypes through its bits)."""
    import ml_dtypes
    import torch

    if arr.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(np.ascontiguousarray(arr).view(np.int16)).view(
            torch.bfloat16).to(device)
    return torch.from_numpy(np.ascontiguousarray(arr)).to(device)


# -- recording and replaying launches ---------------------------------------------------------

@dataclass
class Launch:
    name: str
    grid: tuple[int, int, int]
    run: Any                   # () -> None: enqueue on cutile's stream
    nbytes: int                # bytes the kernel must read (weights, cache), 0 if small


def bind(kernel: Any, op: Any, nbytes: int = 0) -> Launch:
    """The raw launch of a bound op (before it runs: its arguments' addresses are fixed)."""
    run = raw_launch(kernel, op, stream())
    return Launch(kernel.name, tuple(run.grid), run, nbytes)  # type: ignore[arg-type]


def weight_bytes(kernel: Any, op: Any, context: int, cfg: Any) -> int:
    """What a decode kernel must read from memory: the weight of a GEMV, the keys and values
    up to the context for attention; 0 for the small kernels."""
    b = op.binding
    names = [p.name for p in b.params]
    vals = dict(zip(names, b.values, strict=True))
    if "w" in vals:
        return int(vals["w"].nbytes)
    if kernel.name.startswith("attn_decode"):      # attn_decode, _q, _qkv: the whole cache
        return 2 * cfg.num_kv_heads * context * cfg.head_dim * 2
    return 0


def record_step(engine: Any, context: int) -> list[Launch]:
    """Run one decode step through the safe path, recording each launch."""
    launches: list[Launch] = []

    def observe(kernel: Any, op: Any) -> None:
        launches.append(bind(kernel, op, weight_bytes(kernel, op, context, engine.cfg)))

    engine.observer = observe
    try:
        engine.decode_step()
    finally:
        engine.observer = None
    return launches


def replay(launches: list[Launch]) -> None:
    for launch in launches:
        launch.run()


def launch_times(launches: list[Launch], trials: int = 5, cycles: int = 40_000_000
                 ) -> list[float]:
    """Device seconds of each launch (median of `trials` replays), from events recorded
    between the launches; the GPU spins first (`cycles`), so the whole replay is enqueued
    before it starts and no launch waits for the host."""
    import statistics

    cu = _cu()
    s = stream()
    evs = [check(cu.cuEventCreate(0)) for _ in range(len(launches) + 1)]
    per: list[list[float]] = [[] for _ in launches]
    pre = spin(s, cycles)
    for _ in range(trials):
        if pre is not None:
            pre()
        for e, launch in zip(evs, launches, strict=False):
            check(cu.cuEventRecord(e, s))
            launch.run()
        check(cu.cuEventRecord(evs[-1], s))
        check(cu.cuEventSynchronize(evs[-1]))
        for i in range(len(launches)):
            per[i].append(float(check(cu.cuEventElapsedTime(evs[i], evs[i + 1]))) * 1e-3)
    for e in evs:
        cu.cuEventDestroy(e)
    return [statistics.median(t) for t in per]


class RawGraph:
    """The recorded launches of one step captured into a CUDA graph on cutile's stream;
    or whatever `record` enqueues there (other streams join through events), instantiated
    with `flags`."""

    def __init__(self, launches: list[Launch], record: Any = None, flags: Any = 0):
        cu = _cu()
        s = stream()
        check(cu.cuStreamBeginCapture(s, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
        try:
            record() if record is not None else replay(launches)
        finally:
            graph = check(cu.cuStreamEndCapture(s))
        self.graph = graph
        self.exec = check(cu.cuGraphInstantiate(graph, flags))

    def launch(self) -> None:
        check(_cu().cuGraphLaunch(self.exec, stream()))

    def close(self) -> None:
        cu = _cu()
        cu.cuGraphExecDestroy(self.exec)
        cu.cuGraphDestroy(self.graph)


def sync() -> None:
    check(_cu().cuStreamSynchronize(stream()))


def spin(on: Any, cycles: int = 4_000_000) -> Any:
    """A prelude for `timing.time_on_stream`: torch's spin kernel on `on` (a torch stream or
    cutile's), so the GPU waits while the host enqueues a trial; None without it."""
    import torch

    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return None
    ext = on if isinstance(on, torch.cuda.Stream) else torch.cuda.ExternalStream(int(on))

    def run() -> None:
        with torch.cuda.stream(ext):
            sleep(cycles)

    return run


def timed(enqueue: Any, on: Any, reps: int, trials: int = 7, warmup: int = 2,
          cycles: int = 4_000_000) -> float:
    """Median seconds per `enqueue` (work on stream `on` only), CUDA events, spin first."""
    return float(time_on_stream(enqueue, on, reps=reps, trials=trials, warmup=warmup,
                                prelude=spin(on, cycles)))


def wall(fn: Any, reps: int) -> float:
    """Mean wall seconds per call of `fn` over `reps` calls back to back (a throughput)."""
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def wall_runs(fn: Any, reps: int) -> list[float]:
    """Wall seconds of each of `reps` calls of `fn` (a latency: report the median, which
    one slow call, a garbage collection or a host hiccup, does not move)."""
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return runs


# -- Hugging Face -----------------------------------------------------------------------------

def hf_model(cfg: Any, weights: Any, dtype: str = "bfloat16", attn: str = "eager") -> Any:
    """transformers' Qwen3ForCausalLM with the engine's weights, on the GPU, eval mode
    (`attn`: "eager" for the numerics checks, "sdpa" (HF's default) as a speed peer)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    hf = cfg.to_hf()
    conf = Qwen3Config(**{k: v for k, v in hf.items()
                          if k not in ("architectures", "model_type", "torch_dtype")})
    conf._attn_implementation = attn
    tdt = getattr(torch, dtype)
    default = torch.get_default_dtype()
    torch.set_default_dtype(tdt)
    try:
        with torch.device("cuda"):
            model = Qwen3ForCausalLM(conf)
    finally:
        torch.set_default_dtype(default)
    state = {k: to_torch(v).to(tdt) for k, v in weights.to_hf().items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    allowed = {"lm_head.weight"} if cfg.tie_word_embeddings else set()
    if set(missing) - allowed or unexpected:
        raise RuntimeError(f"weights do not fit the HF model: missing {missing}, "
                           f"unexpected {unexpected}")
    if cfg.tie_word_embeddings:
        model.tie_weights()
    return model.eval()
