"""Lazy device operations: a kernel call returns a `DeviceOp` that owns its arguments.

Calling a kernel only builds the op. `op.sync()` runs it and hands every argument back;
`await op` does the same without blocking the event loop; `op.submit()` starts it and
returns a `Submitted` handle to wait on later (the host is free meanwhile);
`op.sync_on(stream)` runs it on a given stream. `op.then(f)` runs `f` on the results as
soon as `op` is enqueued, on the same stream, without waiting for the device: the results
are handed back early and the ledger orders whatever touches them next (a kernel on
another stream waits on an event, a host read waits for the writer, a free is ordered
after the work). `cutile.zip(a, b)` runs several ops (on the pool's streams in turn) and
returns all their results. An op dropped before anything ran it warns
(`OpNeverRunWarning`) and the tensors moved into it stay unusable (`unrun_ops.py`).
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Generator
from typing import Any

from .. import _native
from ..errors import BorrowError
from . import driver, streams
from .unrun_ops import Site, call_site, warn_composite

# How long `await` polls for completion before it waits in a worker thread: a short
# kernel is done by then, and a thread hop costs more than the poll.
AWAIT_SPIN_S = 20e-6

# A kernel call's op (native; registered as a DeviceOp in `cutile.kernel`).
_KernelOp = _native.KernelOp


class DeviceOp(abc.ABC):  # noqa: B024 - an ABC for `register` (KernelOp is native)
    """Base class: `_start()` submits the work and returns a waiter; `_finish()` returns
    the results once it completed; `_hand_back()` returns them right after `_start()`
    (the ledger orders what touches them next); `_done()` polls. An op runs at most once.
    `cutile.KernelOp` is native and registered as a virtual subclass; it reuses `_claim`,
    `then`, `submit`, `sync_on` and `await` from here."""

    _name = "op"
    _ran = False
    # A composite op (zip, then) took this one over and answers for it if dropped.
    _adopted = False
    # Handed back without running, on purpose (a zip whose other op failed to start).
    _released = False
    _site: Site | None = None

    @property
    def name(self) -> str:
        """How errors name this op."""
        return self._name

    def _start(self) -> Callable[[], None]:
        raise NotImplementedError

    def _finish(self) -> Any:
        raise NotImplementedError

    def _hand_back(self) -> Any:
        raise NotImplementedError

    def _done(self) -> bool:
        return False

    def _last_slot(self) -> int | None:
        """The stream the op's last launch went to (None: it launched nothing)."""
        return None

    def _inner(self) -> tuple[Any, ...]:
        """The ops this one runs (composites)."""
        return ()

    def _adopt(self) -> None:
        self._adopted = True

    def _give_back(self) -> None:
        """Hand every tensor back without running (idempotent); no warning follows."""
        self._released = True
        for op in self._inner():
            op._give_back()

    def _claim(self) -> None:
        if self._ran:
            raise BorrowError(
                f"{self.name} already ran; an operation runs once and hands its tensors back "
                "once", code="CT5020", hint="call the kernel again to launch it again",
                op_id=getattr(self, "op_id", None),
                kernel=getattr(getattr(self, "kernel", None), "name", None),
            )
        self._ran = True

    def __del__(self) -> None:
        if self._ran or self._adopted or self._released:
            return
        unrun = [op.name for op in self._inner() if not op._ran]
        if unrun:
            warn_composite(self.name, self._site, unrun)

    def sync(self) -> Any:
        """Run, wait for completion, and return the results."""
        self._claim()
        wait = self._start()
        wait()
        return self._finish()

    def on(self, stream: streams.Stream) -> DeviceOp:
        """This op, started on `stream` however it is run (`sync`, `await`, `submit`, in a
        `zip` or a `then` chain): `cutile.zip(a.on(s1), b.on(s2))` runs them side by side
        on chosen streams."""
        return OnStream(self, streams.slot_of(stream))

    def sync_on(self, stream: streams.Stream) -> Any:
        """`sync()` with the op on `stream` (a `cutile.Stream`)."""
        with streams.on_slot(streams.slot_of(stream)):
            return self.sync()

    def submit(self, stream: streams.Stream | None = None) -> Submitted:
        """Start the op now (on `stream`, else the runtime's choice) and return a handle:
        `.wait()` (or `await handle`) gives the results, `.done()` polls. The tensors stay
        in the op until then; the host thread is free meanwhile."""
        self._claim()
        slot = None if stream is None else streams.slot_of(stream)
        with streams.on_slot(slot):
            wait = self._start()
        return Submitted(self, wait)

    def __await__(self) -> Generator[Any, None, Any]:
        return self._run_async().__await__()

    async def _run_async(self) -> Any:
        self._claim()
        wait = self._start()
        await _completion(self, wait)
        return self._finish()

    def then(self, fn: Callable[..., Any]) -> DeviceOp:
        """An op that runs this one, then `fn(*results)` right away (no wait for the device;
        ops it starts run on the same stream); if `fn` returns a DeviceOp, that runs too
        and its results are the chain's."""
        return ThenOp(self, [fn])


async def _completion(op: DeviceOp, wait: Callable[[], None]) -> None:
    """Wait for a started op without blocking the event loop."""
    await _completion_of(op._done, wait)


async def _completion_of(done: Callable[[], bool], wait: Callable[[], None]) -> None:
    """Wait for started work without blocking the event loop: poll `done` briefly, then
    `wait` in a worker thread."""
    deadline = time.perf_counter() + AWAIT_SPIN_S
    while True:
        if done():
            wait()  # nothing left to wait for: the ledger learns it completed
            return
        if time.perf_counter() >= deadline:
            break
    import asyncio  # here: only `await op` needs it, and importing it takes ~20 ms

    loop = asyncio.get_running_loop()

    def in_thread() -> None:
        driver.ensure_current()
        wait()

    await loop.run_in_executor(None, in_thread)


class Submitted:
    """A started op (`op.submit()`): `wait()` blocks until it completed and returns its
    results (once; later calls return the same), `await` does it without blocking the event
    loop, `done()` polls. Dropped unwaited, the op's tensors are handed back without
    waiting; their memory is freed after the work completes."""

    def __init__(self, op: DeviceOp, wait: Callable[[], None]) -> None:
        self._op = op
        self._wait = wait
        self._finished = False
        self._result: Any = None

    def __repr__(self) -> str:
        state = "finished" if self._finished else "pending"
        return f"<cutile.Submitted {self._op.name} ({state})>"

    @property
    def op(self) -> DeviceOp:
        return self._op

    def done(self) -> bool:
        """Whether the work completed (never blocks)."""
        return self._finished or self._op._done()

    def wait(self) -> Any:
        """Block until the work completed; return the op's results."""
        if not self._finished:
            self._wait()
            self._result = self._op._finish()
            self._finished = True
        return self._result

    def __await__(self) -> Generator[Any, None, Any]:
        return self._wait_async().__await__()

    async def _wait_async(self) -> Any:
        if not self._finished:
            await _completion(self._op, self._wait)
        return self.wait()


class OnStream(DeviceOp):
    """`op.on(stream)`: `op`, started on `stream`."""

    def __init__(self, op: DeviceOp, slot: int) -> None:
        self.op = op
        self.slot = slot
        self._name = op.name
        self._site = call_site()
        op._adopt()

    def _inner(self) -> tuple[Any, ...]:
        return (self.op,)

    def _start(self) -> Callable[[], None]:
        self.op._claim()
        with streams.on_slot(self.slot):
            return self.op._start()

    def _finish(self) -> Any:
        return self.op._finish()

    def _hand_back(self) -> Any:
        return self.op._hand_back()

    def _done(self) -> bool:
        return bool(self.op._done())

    def _last_slot(self) -> int | None:
        return last_slot(self.op)


def last_slot(op: Any) -> int | None:
    """The stream `op`'s last launch went to (a kernel op says where it launched)."""
    position = getattr(op, "_position", None)
    if position is not None:
        return int(position[0])
    getter = getattr(op, "_last_slot", None)
    return getter() if getter is not None else None


class ThenOp(DeviceOp):
    """`first.then(f).then(g)...`: one op that runs `first`, then each function on the
    previous results, without waiting for the device in between (a chain of any length
    runs without recursion)."""

    # Set when the chain starts (a chain built step by step makes one op per step: each
    # is made with the least work).
    _result: Any = None
    _started: list[DeviceOp] | tuple[()] = ()
    _waits: list[Callable[[], None]] | tuple[()] = ()

    def __init__(self, first: DeviceOp, fns: list[Callable[..., Any]],
                 site: Site | None = None) -> None:
        self.first = first
        self.fns = fns
        if site is None:  # a new chain (its continuations share the site and the adoption)
            site = call_site()
            first._adopt()
        self._site = site

    @property
    def name(self) -> str:
        names = "".join(f".then({getattr(f, '__name__', 'fn')})" for f in self.fns[:3])
        return f"{self.first.name}{names}" + ("..." if len(self.fns) > 3 else "")

    def _inner(self) -> tuple[Any, ...]:
        return (self.first,)

    def then(self, fn: Callable[..., Any]) -> DeviceOp:
        """The same chain with one more step. This op is used up (it answers as run), so
        the new one takes its steps over as they are: a long chain costs O(1) a step."""
        self._claim()
        self.fns.append(fn)
        return ThenOp(self.first, self.fns, self._site)

    def _start(self) -> Callable[[], None]:
        waits: list[Callable[[], None]] = []
        started: list[DeviceOp] = []
        self._waits, self._started = waits, started
        res = self._start_early(self.first)
        # What the chain starts next runs on the stream the work before it took (ordered
        # there without events), unless the thread chose a stream.
        with streams.on_slot(last_slot(self.first)):
            for fn in self.fns:  # (`_start_early`, inline: this loop is the chain's cost)
                out = fn(*res) if type(res) is tuple else fn(res)
                # a kernel's op first: a check against the ABC costs more than the launch
                if type(out) is _KernelOp or isinstance(out, DeviceOp):
                    out._claim()
                    waits.append(out._start())
                    started.append(out)
                    res = out._hand_back()
                else:
                    res = out
        self._result = res
        # Last first: one stream synchronize covers everything before it on that stream.
        last_first = tuple(reversed(waits))

        def done() -> None:
            for w in last_first:
                w()

        return done

    def _start_early(self, op: DeviceOp) -> Any:
        """Claim and start `op`, and take its results back at once."""
        op._claim()
        assert isinstance(self._waits, list) and isinstance(self._started, list)
        self._waits.append(op._start())
        self._started.append(op)
        return op._hand_back()

    def _hand_back(self) -> Any:
        return self._result

    def _last_slot(self) -> int | None:
        return last_slot(self._started[-1]) if self._started else None

    def _done(self) -> bool:
        # last first: on one stream, a later op done means the earlier ones are
        return all(op._done() for op in reversed(self._started))

    def _finish(self) -> Any:
        return self._result


class ZipOp(DeviceOp):
    def __init__(self, ops: tuple[DeviceOp, ...]) -> None:
        self.ops = ops
        self._name = "zip(" + ", ".join(o.name for o in ops) + ")"
        self._site = call_site()
        for op in ops:
            op._adopt()

    def _inner(self) -> tuple[Any, ...]:
        return self.ops

    def _start(self) -> Callable[[], None]:
        waits: list[Callable[[], None]] = []
        try:
            for op in self.ops:
                op._claim()
                waits.append(op._start())
        except BaseException as err:
            self._unwind(waits, err)
            raise

        def done() -> None:
            for w in waits:
                w()

        return done

    def _unwind(self, waits: list[Callable[[], None]], err: BaseException) -> None:
        """An op failed to start: the ones before it complete (on a GPU they launched and
        may be writing their tensors), and every op hands its tensors back; none is left
        holding them, and none warns (the zip was run)."""
        for op, wait in zip(self.ops, waits, strict=False):
            try:
                wait()
            except Exception as also:  # the first failure is the one raised
                err.add_note(f"while completing {op.name} after that: {also}")
        for op in self.ops:
            op._give_back()

    def _hand_back(self) -> Any:
        return tuple(op._hand_back() for op in self.ops)

    def _last_slot(self) -> int | None:
        return last_slot(self.ops[-1]) if self.ops else None

    def _done(self) -> bool:
        return all(op._done() for op in self.ops)

    def _finish(self) -> Any:
        return tuple(op._finish() for op in self.ops)


def zip_ops(*ops: DeviceOp) -> DeviceOp:
    """Run several ops (submitted back to back) and return a tuple of their results."""
    return ZipOp(ops)
