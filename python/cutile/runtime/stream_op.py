"""What a `DeviceOp` made in Python (a raw kernel launch, a collective) does once it sits at
a position of one of its device's streams: wait for that position, say whether the stream
is past it, and hand its tensors back. (A tile kernel's op does the same natively.)

A subclass moves its tensors into the registry, sets `_holding`, `device` and, once
enqueued, `_position = (stream slot, sequence number)`; it says how to wait
(`_wait_on_stream`) and which tensors to name when it is dropped unrun (`_moved_names`).
"""

from __future__ import annotations

from typing import Any

from . import driver, streams
from .device_op import DeviceOp
from .ownership import registry
from .unrun_ops import Site, warn_kernel_op


class StreamOp(DeviceOp):
    _holding = False  # (also for `__del__` of an op whose construction failed)
    _started = False
    _position: tuple[int, int] | None = None
    op_id: int
    device: int
    _name: str
    _site: Site | None

    @property
    def values(self) -> tuple[Any, ...]:
        """The op's arguments, in order (what it hands back)."""
        raise NotImplementedError

    @property
    def holding(self) -> bool:
        """Whether the tensors are still moved in."""
        return self._holding

    def _wait_on_stream(self, rt: Any, position: tuple[int, int]) -> None:
        raise NotImplementedError

    def _moved_names(self) -> list[tuple[Any, str]]:
        """`(handle, parameter name)` of every tensor moved in."""
        raise NotImplementedError

    def _wait(self) -> None:
        if self._position is None:
            return
        try:
            with driver.on_device(self.device):
                self._wait_on_stream(streams.runtime(), self._position)
        except BaseException:
            self._release()
            raise

    def _done(self) -> bool:
        return self._position is None or bool(streams.runtime().query(*self._position))

    def _last_slot(self) -> int | None:
        return None if self._position is None else self._position[0]

    def _hand_back(self) -> tuple[Any, ...]:
        """After `_start`: the tensors back now; the ledger orders what touches them next
        after the op."""
        self._release()
        return self.values

    def _finish(self) -> tuple[Any, ...]:
        self._release()
        return self.values

    def _give_back(self) -> None:
        self._released = True
        self._release()

    def _release(self) -> None:
        """Hand the tensors back (idempotent). A started op's ledger ranges stay until its
        stream is known past it: what touches the tensors next, a free included, is
        ordered after it."""
        if self._holding:
            self._holding = False
            registry().give_back(self.op_id)

    def __del__(self) -> None:
        if not self._holding:
            return
        if self._started:
            # ran but not finished: hand back without waiting (the ledger orders what
            # touches the tensors next after the op)
            try:
                self._release()
            except Exception:  # interpreter shutdown: the registry is gone
                pass
            return
        self._holding = False
        names = self._moved_names()
        try:
            registry().abandon(self.op_id, names)
        except Exception:  # interpreter shutdown
            return
        if not (self._adopted or self._released):
            # (under `-W error` this raises, and Python reports it as unraisable)
            warn_kernel_op(self._name, self._site, list(dict.fromkeys(n for _, n in names)))
