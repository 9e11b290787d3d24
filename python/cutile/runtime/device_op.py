"""Lazy device operations: a kernel call returns a `DeviceOp` that owns its arguments.

Calling a kernel only builds the op. `op.sync()` runs it and hands every argument back;
`await op` does the same without blocking the event loop; `op.then(f)` runs `f` on the
results once `op` completed; `cutile.zip(a, b)` runs several ops and returns all their
results. An op dropped before anything ran it warns (`OpNeverRunWarning`) and the tensors
moved into it stay unusable (`unrun_ops.py`).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Generator
from typing import Any

from ..errors import BorrowError
from . import driver
from .unrun_ops import Site, call_site, warn_composite


class DeviceOp(abc.ABC):  # noqa: B024 - an ABC for `register` (KernelOp is native)
    """Base class: `_start()` submits the work and returns a waiter; `_finish()` returns
    the results. An op runs at most once. `cutile.KernelOp` is native and registered as a
    virtual subclass; it reuses `_claim`, `then` and `await` from here."""

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

    def __await__(self) -> Generator[Any, None, Any]:
        return self._run_async().__await__()

    async def _run_async(self) -> Any:
        self._claim()
        wait = self._start()
        import asyncio  # here: only `await op` needs it, and importing it takes ~20 ms

        loop = asyncio.get_running_loop()

        def in_thread() -> None:
            driver.ensure_current()
            wait()

        await loop.run_in_executor(None, in_thread)
        return self._finish()

    def then(self, fn: Callable[..., Any]) -> DeviceOp:
        """An op that runs this one, then `fn(*results)`; if `fn` returns a DeviceOp, that
        runs too and its results are the chain's."""
        return ThenOp(self, fn)


class ThenOp(DeviceOp):
    def __init__(self, first: DeviceOp, fn: Callable[..., Any]) -> None:
        self.first = first
        self.fn = fn
        self._name = f"{first.name}.then({getattr(fn, '__name__', 'fn')})"
        self._result: Any = None
        self._site = call_site()
        first._adopt()

    def _inner(self) -> tuple[Any, ...]:
        return (self.first,)

    def _start(self) -> Callable[[], None]:
        res = self.first.sync()
        out = self.fn(*res) if isinstance(res, tuple) else self.fn(res)
        if isinstance(out, DeviceOp):
            out._claim()
            wait = out._start()

            def done() -> None:
                wait()
                self._result = out._finish()

            return done
        self._result = out
        return lambda: None

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

    def _finish(self) -> Any:
        return tuple(op._finish() for op in self.ops)


def zip_ops(*ops: DeviceOp) -> DeviceOp:
    """Run several ops (submitted back to back) and return a tuple of their results."""
    return ZipOp(ops)
