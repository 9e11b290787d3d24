"""One collective (`cutile.distributed.all_gather`, `all_reduce`, `broadcast`): a `DeviceOp`
that holds its tensors as a kernel launch does, until the collective completed.

Made by the call: the tensors are moved into the op (host registry: what the collective
writes exclusively, what it only reads shared; one tensor twice where either is written,
or overlapping bytes, is refused). `_start` enqueues it on a stream of its device (the
pool's turn, or the thread's current stream):

- across processes, through `torch.distributed` (NCCL): the stream is ordered after the
  conflicting work (ledger events, as for a launch), then NCCL runs after it and the
  stream waits for NCCL's end (`torch.cuda.ExternalStream` over cutile's stream; torch's
  `work.wait()` only makes that stream wait). Between ordering and enqueueing, which
  happen in two steps because torch does the enqueueing, the ledger holds the tensors for
  the op on no stream, so any conflicting work or host access is refused (CT5008) rather
  than ordered too early (`InFlight::begin_external`);
- in a world of one process, locally: an all-gather is a device copy, an all-reduce or a
  broadcast changes nothing (one rank's values are the result), recorded in the ledger
  all the same.

Either way the collective's byte ranges sit in the ledger at a position of that stream
after the collective: a host read waits for it, another stream waits on its event, a free
is ordered after it, and the ranges go when the stream is known past that position (the
same way every op's go). `_wait` waits for that position; `_finish` hands the tensors back.
Dropped before it ran, it warns (`OpNeverRunWarning`) and its tensors stay unusable, like
every op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import BorrowError
from . import devices, streams
from .ownership import next_op_id, registry
from .stream_op import StreamOp
from .tensor import _Handle
from .unrun_ops import Site


@dataclass(frozen=True)
class Arg:
    """One tensor of a collective: its parameter name, and whether it is written."""

    name: str
    value: _Handle
    written: bool


# `(op, rt, slot) -> (position on slot, what to keep until completion)`: enqueues the
# collective's work, ordered through the runtime's ledger.
Enqueue = Callable[["CollectiveOp", Any, int], tuple[int, Any]]


class CollectiveOp(StreamOp):
    """One collective (see the module docstring)."""

    def __init__(self, kind: str, args: Sequence[Arg], enqueue: Enqueue,
                 site: Site | None) -> None:
        self.kind = kind
        self.args = tuple(args)
        self.op_id = next_op_id()
        self._name = f"`{kind}` (op #{self.op_id})"
        self._site = site
        self._enqueue = enqueue
        self._keep: Any = None
        self.device = devices.one_device(f"`{kind}`", [(a.name, a.value) for a in args])
        registry().move_in(self.op_id, kind, [(a.value._handle, a.written) for a in self.args])
        self._holding = True

    def __repr__(self) -> str:
        return f"<cutile.distributed.CollectiveOp {self._name}>"

    @property
    def values(self) -> tuple[Any, ...]:
        return tuple(a.value for a in self.args)

    def accesses(self) -> list[tuple[int, int, int, bool]]:
        """`(storage, lo, hi, exclusive)` of every tensor, for the ledger."""
        out = []
        for a in self.args:
            storage, lo, hi = a.value._ledger_range()
            out.append((storage, lo, hi, a.written))
        return out

    def _start(self) -> Callable[[], None]:
        self._started = True
        try:
            rt = streams.runtime()
            slot = int(rt.pick(self.device))
            seq, self._keep = self._enqueue(self, rt, slot)
            self._position = (slot, seq)
        except BaseException:
            self._release()
            raise
        return self._wait

    def _wait_on_stream(self, rt: Any, position: tuple[int, int]) -> None:
        rt.wait_for(*position)
        self._keep = None  # the collective completed: torch's work object may go

    def _moved_names(self) -> list[tuple[Any, str]]:
        return [(a.value._handle, a.name) for a in self.args]


def refuse_in_capture(rt: Any, slot: int, op: CollectiveOp) -> None:
    """BorrowError CT5066 for a collective on a stream a graph capture records (the local
    path would be recorded, the NCCL one could not: neither is allowed)."""
    if rt.capturing(slot):
        raise BorrowError(
            f"{op.name} cannot be captured into a CUDA Graph: another library enqueues a "
            "collective, outside the capture's record", code="CT5066",
            hint="run the collective before or after the capture, on its own",
            op_id=op.op_id)
