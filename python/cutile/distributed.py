"""Several GPUs, one process each: collectives through `torch.distributed` with the NCCL
backend (never a transport of cutile's own), holding their tensors in the ledger until
they complete.

    world = cutile.distributed.init()       # joins torchrun's process group; GPU LOCAL_RANK
    part = api.empty([rows, n], bf16)       # this rank's rows, on its GPU
    ...
    out = api.empty([world.size * rows, n], bf16)
    out, part = cutile.distributed.all_gather(out, part).sync()

Launch one process per GPU with `torchrun --nproc-per-node=N script.py`; across hosts the
same script runs on every host with `torchrun --nnodes=M --nproc-per-node=N
--rdzv-backend=c10d --rdzv-endpoint=HOST:PORT script.py` (docs/runtime.md). A plain
`python script.py` is a world of one process: there the collectives are local (an
all-gather copies, an all-reduce or a broadcast of one rank changes nothing) and torch is
not needed. torch is imported only for a world of more than one process (or when the
program set up `torch.distributed` itself); without it a collective there is
DistributedError CT6130.

Every collective is a `DeviceOp` (`.sync()`, `await`, `.submit()`, `.then`, `.on(stream)`)
on the stream of its device the runtime picks: it runs after the work its tensors wait for
(ledger events, as for a launch) and holds them (outputs exclusively, inputs shared) until
it completed (`runtime/collective.py`). Tensors are handed to torch zero-copy (DLPack).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from . import _native
from .errors import DistributedError, LaunchError
from .runtime import devices, driver
from .runtime.collective import Arg, CollectiveOp, refuse_in_capture
from .runtime.interop import codes
from .runtime.tensor import _Handle, contiguous_strides
from .runtime.unrun_ops import call_site

REDUCE_OPS = ("sum", "prod", "min", "max", "avg")
# Element types NCCL reduces (by cutile name); an all-gather or a broadcast moves bytes,
# so it takes every element type.
REDUCIBLE = ("f16", "bf16", "f32", "f64", "i8", "u8", "i32", "i64")


@dataclass(frozen=True)
class World:
    """The processes collectives run across: this one's `rank` of `size`, its
    `local_rank` on its host, the `device` it runs on, and the `backend` (`"nccl"`
    through torch.distributed, `"local"` for a world of one process without it)."""

    rank: int
    size: int
    local_rank: int
    device: int
    backend: str


_world: World | None = None


def _torch() -> Any:
    """torch, with torch.distributed and NCCL (DistributedError CT6130 otherwise)."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        raise DistributedError(
            "collectives across processes go through torch.distributed, and torch is not "
            "installed", code="CT6130",
            hint="install torch with CUDA (`pip install torch`), or run one process "
            "(`python script.py`: a world of one needs no torch)") from None
    if not dist.is_available() or not dist.is_nccl_available():
        raise DistributedError(
            "this torch has no NCCL backend for torch.distributed", code="CT6130",
            hint="install a CUDA build of torch (its wheels come with NCCL)")
    return torch


def _torch_group() -> Any:
    """torch.distributed if the program (or `init`) set up a process group, else None;
    torch is not imported for this."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist


def init() -> World:
    """Join the process group `torchrun` describes (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`,
    `MASTER_ADDR`/`MASTER_PORT` or a rendezvous) with the NCCL backend, on GPU
    `LOCAL_RANK`, which becomes this process's default device (one process under torchrun
    joins too: NCCL runs with one rank). Without torchrun (no `WORLD_SIZE`), a world of
    one process on the current device, without torch.
    Idempotent; a group the program made itself (`dist.init_process_group`) is joined
    as it is."""
    global _world
    if _world is not None:
        return _world
    if "WORLD_SIZE" not in os.environ and _torch_group() is None:  # not under torchrun
        _world = World(0, 1, 0, devices.current(), "local")
        return _world
    size = int(os.environ.get("WORLD_SIZE", "1") or "1")
    if driver.backend() != "gpu":
        raise DistributedError(
            f"a world of {size} processes needs NCCL, which needs GPUs; this process runs "
            f"kernels on the CPU interpreter ({driver.state().reason})", code="CT6130",
            hint="run on GPUs, or run one process (`python script.py`) on the interpreter")
    torch = _torch()
    dist = torch.distributed
    local = int(os.environ.get("LOCAL_RANK", "0") or "0")
    device = devices.check(local)
    devices.set_default(device)
    torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl", device_id=torch.device("cuda", device))
    _world = World(dist.get_rank(), dist.get_world_size(), local, device, "nccl")
    return _world


def world() -> World:
    """The world collectives run across: the one `init` joined, else a process group the
    program set up with torch.distributed, else this process alone on the current
    device."""
    if _world is not None:
        return _world
    dist = _torch_group()
    if dist is None:
        return World(0, 1, 0, devices.current(), "local")
    import torch

    device = int(torch.cuda.current_device())
    return World(dist.get_rank(), dist.get_world_size(), device, device, "nccl")


def barrier() -> None:
    """Block until every process reached this point (nothing to wait for alone)."""
    w = world()
    if w.backend == "nccl":
        _torch().distributed.barrier(device_ids=[w.device])


def destroy() -> None:
    """Leave the process group `init` joined (call before the program exits)."""
    global _world
    if _world is not None and _world.backend == "nccl":
        dist = _torch_group()
        if dist is not None:
            dist.destroy_process_group()
    _world = None


# -- the collectives -------------------------------------------------------------------


def _misfit(kind: str, message: str, hint: str, tensor: str | None = None) -> LaunchError:
    return LaunchError(f"`{kind}`: {message}", code="CT6131", hint=hint, tensor=tensor,
                       kernel=kind)


def _check_tensors(kind: str, w: World, named: list[tuple[str, Any]]) -> None:
    """Cutile tensors, each one contiguous block of bytes (a collective moves whole
    buffers), on the device the process group runs on."""
    for name, t in named:
        if not isinstance(t, _Handle):
            raise _misfit(kind, f"`{name}` is a {type(t).__name__}, not a cutile tensor",
                          "pass cutile tensors (`api.empty(...)`, `cutile.from_dlpack(x)`)",
                          name)
        t._ensure_live(f"pass it to `{kind}`")
        if t.ndim == 0 or tuple(t.strides) != contiguous_strides(t.shape):
            raise _misfit(kind, f"`{name}` is not one contiguous row-major tensor (shape "
                          f"{list(t.shape)}, strides {list(t.strides)})",
                          "a collective sends and receives whole buffers: pass the tensor "
                          "itself or a view of whole leading rows", name)
    device = devices.one_device(f"`{kind}`", named)
    if w.backend == "nccl" and device != w.device:
        raise _misfit(kind, f"the tensors are on device {device}, but this process's "
                      f"process group runs on device {w.device}",
                      f"make them on device {w.device} (`cutile.distributed.init()` made it "
                      "the default), or copy them there with `.to(...)`")


def all_gather(out: Any, inp: Any) -> CollectiveOp:
    """Every rank's `inp`, in rank order along the first axis, into each rank's `out`
    (shape `[world size * inp.shape[0], *inp.shape[1:]]`, same element type). A
    `DeviceOp`: `out, inp = all_gather(out, inp).sync()`."""
    w = world()
    _check_tensors("all_gather", w, [("out", out), ("inp", inp)])
    want = [w.size * inp.shape[0], *inp.shape[1:]]
    if out.dtype != inp.dtype or list(out.shape) != want:
        raise _misfit("all_gather", f"`out` is {out.dtype.name} {list(out.shape)}; "
                      f"{w.size} rank(s) of `inp` {inp.dtype.name} {list(inp.shape)} need "
                      f"{inp.dtype.name} {want}", "make `out` the ranks' inputs stacked "
                      "along the first axis", "out")
    return CollectiveOp("all_gather", [Arg("out", out, True), Arg("inp", inp, False)],
                        _gather(w), call_site())


def all_reduce(t: Any, op: str = "sum") -> CollectiveOp:
    """Reduce `t` across the ranks in place (`op`: sum, prod, min, max, avg): every rank's
    `t` ends up holding the result. A `DeviceOp`: `(t,) = all_reduce(t).sync()`."""
    w = world()
    _check_tensors("all_reduce", w, [("t", t)])
    # (a str first: `in` on an array or another container would compare elementwise)
    if not isinstance(op, str) or op not in REDUCE_OPS or (op == "avg"
                                                            and not t.dtype.is_float):
        raise _misfit("all_reduce", f"{op!r} is not a reduction of {t.dtype.name} values",
                      f"use one of {', '.join(REDUCE_OPS)} (`avg` for floats)")
    if t.dtype.name not in REDUCIBLE:
        raise _misfit("all_reduce", f"NCCL does not reduce {t.dtype.name} values",
                      f"reduce one of {', '.join(REDUCIBLE)} (convert first)", "t")
    return CollectiveOp("all_reduce", [Arg("t", t, True)], _reduce(w, op), call_site())


def broadcast(t: Any, src: int = 0) -> CollectiveOp:
    """Rank `src`'s `t` into every rank's `t`. A `DeviceOp`: `(t,) =
    broadcast(t, src).sync()`."""
    w = world()
    _check_tensors("broadcast", w, [("t", t)])
    if isinstance(src, bool) or not isinstance(src, int) or not 0 <= src < w.size:
        raise _misfit("broadcast", f"`src={src!r}` is not a rank of a world of {w.size}",
                      f"pass a rank from 0 to {w.size - 1}")
    return CollectiveOp("broadcast", [Arg("t", t, True)], _broadcast(w, src), call_site())


# -- enqueueing ------------------------------------------------------------------------


def _gather(w: World) -> Any:
    def enqueue(op: CollectiveOp, rt: Any, slot: int) -> tuple[int, Any]:
        refuse_in_capture(rt, slot, op)
        if w.backend == "local":
            out, inp = op.values
            return _local_copy(rt, slot, op, out, inp), None
        return _nccl(op, rt, slot, lambda dist, v: dist.all_gather_into_tensor(
            v[0], v[1], async_op=True), as_bytes=True)

    return enqueue


def _reduce(w: World, name: str) -> Any:
    def enqueue(op: CollectiveOp, rt: Any, slot: int) -> tuple[int, Any]:
        refuse_in_capture(rt, slot, op)
        if w.backend == "local":
            return int(rt.note(slot, op.accesses(), op.op_id)), None
        return _nccl(op, rt, slot, lambda dist, v: dist.all_reduce(
            v[0], op=getattr(dist.ReduceOp, name.upper()), async_op=True), as_bytes=False)

    return enqueue


def _broadcast(w: World, src: int) -> Any:
    def enqueue(op: CollectiveOp, rt: Any, slot: int) -> tuple[int, Any]:
        refuse_in_capture(rt, slot, op)
        if w.backend == "local":
            return int(rt.note(slot, op.accesses(), op.op_id)), None
        return _nccl(op, rt, slot, lambda dist, v: dist.broadcast(v[0], src=src,
                                                                     async_op=True),
                     as_bytes=True)

    return enqueue


def _local_copy(rt: Any, slot: int, op: CollectiveOp, out: Any, inp: Any) -> int:
    """A world of one: the all-gather is a copy of `inp` into `out` on `slot`."""
    dst, src = out._ledger_range(), inp._ledger_range()
    nbytes = src[2] - src[1]
    if rt.gpu:
        return int(rt.copy_dtod(slot, (dst[0], out._alloc.address, dst[1]),
                                (src[0], inp._alloc.address, src[1]), nbytes))
    seq = int(rt.note(slot, op.accesses(), op.op_id))  # the interpreter runs it now
    out._alloc.buffer[dst[1]:dst[1] + nbytes] = inp._alloc.buffer[src[1]:src[1] + nbytes]
    return seq


def _torch_view(torch: Any, t: Any, as_bytes: bool) -> Any:
    """A torch tensor over `t`'s memory (DLPack, no copy): its bytes (`uint8`), or its
    elements. The capsule keeps the allocation alive, not the cutile tensor: torch may
    hold the view after the op handed `t` back, and must not count as a live view."""
    lo, hi = t._span_bytes()
    if as_bytes:
        dtype, shape, strides = (1, 8, 1), [hi - lo], [1]
    else:
        dtype, shape, strides = codes.dlpack_dtype(t.dtype), list(t.shape), list(t.strides)
    capsule = _native.dlpack_capsule(t._alloc, t._alloc.address + lo, (codes.CUDA, t.device),
                                     dtype, shape, strides, 0, 0, False)
    return torch.from_dlpack(capsule)


def _nccl(op: CollectiveOp, rt: Any, slot: int, call: Any, as_bytes: bool) -> tuple[int, Any]:
    """Run `call(torch.distributed, views)` on cutile's stream `slot` (see
    `runtime/collective.py`): ordered after the work it waits for, NCCL's end waited for
    by the stream, the accesses recorded at the position after it."""
    torch = _torch()
    views = [_torch_view(torch, a.value, as_bytes) for a in op.args]
    accesses = op.accesses()
    rt.begin_external(op.op_id, slot, accesses, f"the collective `{op.kind}`")
    try:
        dev = torch.device("cuda", op.device)
        stream = torch.cuda.ExternalStream(int(rt.stream_info(slot)[0]), device=dev)
        with torch.cuda.device(dev), torch.cuda.stream(stream):
            work = call(torch.distributed, views)
            work.wait()  # cutile's stream waits for NCCL's end (the host does not)
    except BaseException:
        rt.abort_external(op.op_id)
        raise
    seq = int(rt.end_external(op.op_id, slot, accesses))
    return seq, (work, views)


__all__ = ["World", "all_gather", "all_reduce", "barrier", "broadcast", "destroy", "init",
           "world"]
