"""Adversarial review (2026-12, threads): programs that use the same tensors from several
Python threads, from asyncio tasks that are cancelled or whose loop closes, and through
exports interleaved with pending work. Each test is an attack through the public API; the
runtime must refuse it with a typed error (a stable CTxxxx code), wait, or run it safely.

Interleavings are forced, not hoped for: a graph-captured function blocks on an event in
the middle of its capture (user code runs there), an export's `max_version` is a sequence
whose `__getitem__` runs the attacker's code between the export's checks and its pin, and
a kernel is paused inside the CPU interpreter with a trace function (where another thread
would be preempted). Threads are joined with timeouts so that a hang fails the test.
"""

from __future__ import annotations

import asyncio
import gc
import linecache
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.errors import BorrowError
from cutile.runtime import streams
from cutile.runtime.null_gpu import null_gpu
from cutile.runtime.ownership import registry

N = 1024
TILE = 256
JOIN_S = 20.0


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


def _fresh() -> tuple[api.Partition, api.Tensor, api.Tensor]:
    return api.zeros([N], f32).partition([TILE]), api.ones([N], f32), api.ones([N], f32)


@pytest.fixture
def rt() -> Iterator[Any]:
    with null_gpu() as r:
        yield r


def _code(e: BaseException) -> str | None:
    return getattr(e, "code", None)


def _run_threads(*targets: Callable[[], None]) -> list[BaseException]:
    """Run each target in its own thread; the exceptions they raised (none may hang)."""
    errors: list[BaseException] = []
    lock = threading.Lock()

    def wrap(f: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                f()
            except BaseException as e:  # collected for the test to judge
                with lock:
                    errors.append(e)
        return run

    threads = [threading.Thread(target=wrap(f)) for f in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_S)
        assert not t.is_alive(), "a thread hung"
    return errors


def _only_typed(errors: list[BaseException], *codes: str) -> None:
    for e in errors:
        assert isinstance(e, BorrowError) and _code(e) in codes, repr(e)


# -- 1. several threads, the same tensors ----------------------------------------------------


@pytest.mark.parametrize("backend", ["interpreter", "null_gpu"])
def test_threads_racing_to_launch_with_one_shared_input(backend: str) -> None:
    """Eight threads launch at once, each with its own output and the same inputs: an
    input moved into one op is refused to the others (CT5001) until handed back; nothing
    else goes wrong, and every launch that ran computed the right thing."""
    ctx = null_gpu() if backend == "null_gpu" else _nothing()
    with ctx:
        _, x, y = _fresh()
        outs = [api.zeros([N], f32).partition([TILE]) for _ in range(8)]
        add(api.zeros([N], f32).partition([TILE]), x, y).sync()  # compiled once, first
        barrier = threading.Barrier(len(outs))
        ran: list[Any] = []

        def launcher(z: api.Partition) -> Callable[[], None]:
            def go() -> None:
                barrier.wait()
                for _ in range(20):
                    try:
                        ran.append(add(z, x, y).sync()[0])
                        return
                    except BorrowError as e:
                        if _code(e) != "CT5001" or "pass it to" not in str(e):
                            raise
            return go

        errors = _run_threads(*(launcher(z) for z in outs))
        _only_typed(errors, "CT5001")
        assert ran, "no launch ran"
        if backend == "interpreter":
            for z in ran:
                np.testing.assert_array_equal(z.unpartition().to_numpy(), 2.0)
        x[0:1]  # every op handed x back (a view checks the handle is live)


@pytest.mark.parametrize("backend", ["interpreter"])  # (the null driver makes no graphs)
def test_replaying_one_graph_from_two_threads_while_a_third_closes_it(backend: str) -> None:
    """Two threads replay one graph while a third gives its tensors back: each replay
    runs whole or is refused (CT5062, the graph is spent); the tensors come back once, and
    the replay handles of finished replays still wait and poll."""
    ctx = null_gpu() if backend == "null_gpu" else _nothing()
    with ctx:
        z, x, y = _fresh()
        g = cutile.graph(add(z, x, y))
        barrier = threading.Barrier(3)
        replays: list[Any] = []
        results: list[Any] = []

        def replayer() -> None:
            barrier.wait()
            for _ in range(50):
                replays.append(g.replay(np.full(N, 3, np.float32)))

        def closer() -> None:
            barrier.wait()
            results.append(g.into_inner())

        errors = _run_threads(replayer, replayer, closer)
        _only_typed(errors, "CT5062")
        assert len(results) == 1
        for r in replays:
            r.wait()
            assert r.done()
        with pytest.raises(BorrowError) as e:
            g.into_inner()
        assert _code(e.value) == "CT5062"
        z2, x2, _ = results[0]
        if backend == "interpreter" and replays:
            np.testing.assert_array_equal(z2.unpartition().to_numpy(), 4.0)
            np.testing.assert_array_equal(x2.to_numpy(), 3.0)


class _Capture:
    """`cutile.graph(fn, z, x, y)` on a thread, where `fn` starts `add` and then blocks in
    the middle of the capture until `release()`."""

    def __init__(self) -> None:
        self.inside = threading.Event()
        self.go = threading.Event()
        self.graph: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run)

    def start(self, z: Any, x: Any, y: Any) -> None:
        self.args = (z, x, y)
        self.thread.start()
        assert self.inside.wait(JOIN_S)

    def _fn(self, z: Any, x: Any, y: Any) -> Any:
        out = add(z, x, y).sync()  # recorded, not run; handed back at once
        self.inside.set()
        assert self.go.wait(JOIN_S)
        return out

    def _run(self) -> None:
        try:
            self.graph = cutile.graph(self._fn, *self.args)
        except BaseException as e:  # judged by the test
            self.error = e

    def release(self) -> Any:
        self.go.set()
        self.thread.join(JOIN_S)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error
        return self.graph


@pytest.mark.parametrize("backend", ["interpreter"])  # (the null driver makes no graphs)
def test_other_threads_touching_tensors_while_a_capture_records_them(backend: str) -> None:
    """While thread A captures a graph that writes `z` (handed back to A's function, and
    so live), the main thread reads `z` (CT5060: nothing ran), launches a writer of it on
    the pool (CT5060), exports it (CT5060), partitions and starts a second capture writing
    it (CT5060), and launches a reader of the inputs only (runs: nothing writes them).
    Afterwards the graph owns the tensors (CT5001) and its replays compute the sum."""
    ctx = null_gpu() if backend == "null_gpu" else _nothing()
    with ctx:
        z, x, y = _fresh()
        other = api.zeros([N], f32).partition([TILE])
        add(api.zeros([N], f32).partition([TILE]), x, y).sync()  # compiled outside
        cap = _Capture()
        cap.start(z, x, y)
        try:
            if backend == "interpreter":
                with pytest.raises(BorrowError) as e:
                    z.to_numpy()
                assert _code(e.value) == "CT5060"
            with pytest.raises(BorrowError) as e:
                add(z, x, y).sync()
            assert _code(e.value) == "CT5060"
            whole = z.unpartition()  # live: the capture handed z back to its function
            with pytest.raises(BorrowError) as e:
                whole.__dlpack__()
            assert _code(e.value) == "CT5060"
            with pytest.raises(BorrowError) as e:
                whole.to_numpy()
            assert _code(e.value) == "CT5060"
            with pytest.raises(BorrowError) as e:
                cutile.graph(add(other, whole, y))
            assert _code(e.value) == "CT5060"
            other, x, y = add(other, x, y).sync()  # reads only what the capture reads
            cutile.synchronize()  # the capture's stream is not waited for (nothing runs)
        finally:
            g = cap.release()
        with pytest.raises(BorrowError) as e:
            x[0:1]
        assert _code(e.value) == "CT5001"
        g.replay().wait()
        np.testing.assert_array_equal(whole.to_numpy(), 2.0)  # ordered after the replay
        np.testing.assert_array_equal(other.unpartition().to_numpy(), 2.0)
        g.into_inner()


def test_closing_a_stream_while_another_thread_launches_on_it() -> None:
    """One thread launches on a stream while another closes it: each launch runs (before
    the close) or is refused (CT5061); the tensors come back either way."""
    s = cutile.Stream("doomed")
    z, x, y = _fresh()
    add(api.zeros([N], f32).partition([TILE]), x, y).sync()
    barrier = threading.Barrier(2)
    state = {"z": z, "x": x, "y": y}

    def launcher() -> None:
        barrier.wait()
        for _ in range(200):
            try:
                state["z"], state["x"], state["y"] = add(
                    state["z"], state["x"], state["y"]).sync_on(s)
            except BorrowError as e:
                assert _code(e) == "CT5061"
                return

    def closer() -> None:
        barrier.wait()
        s.close()

    _only_typed(_run_threads(launcher, closer))
    state["z"], state["x"], state["y"] = add(state["z"], state["x"], state["y"]).sync()
    with pytest.raises(BorrowError) as e:
        add(state["z"], state["x"], state["y"]).sync_on(s)
    assert _code(e.value) == "CT5061"


# -- 2. asyncio --------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["interpreter", "null_gpu"])
def test_a_task_cancelled_before_its_op_started_leaves_typed_dead_tensors(backend: str) -> None:
    """A task awaiting an op is cancelled before it ran: the op never ran, so it warns and
    its tensors are unusable with a typed error (CT5009), never silently half-written."""
    ctx = null_gpu() if backend == "null_gpu" else _nothing()
    with ctx:
        z, x, y = _fresh()

        async def main() -> None:
            async def run(op: Any) -> Any:
                return await op
            task = asyncio.ensure_future(run(add(z, x, y)))
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            asyncio.run(main())
            gc.collect()
        assert any("never ran" in str(m.message) or "never run" in str(m.message)
                   for m in w), [str(m.message) for m in w]
        with pytest.raises(BorrowError) as e:
            x[0:1]
        assert _code(e.value) == "CT5009"


@pytest.mark.parametrize("backend", ["interpreter", "null_gpu"])
def test_a_loop_closed_with_an_op_in_flight_hands_the_tensors_back(backend: str) -> None:
    """The event loop closes with a task that started an op and never resumed: the op is
    dropped started, so its tensors come back (after the work, by the ledger)."""
    ctx = null_gpu() if backend == "null_gpu" else _nothing()
    with ctx:
        z, x, y = _fresh()
        started: list[bool] = []
        pending: list[Any] = []

        async def main() -> None:
            async def run() -> Any:
                op = add(z, x, y)
                op.submit()
                started.append(True)
                await asyncio.Event().wait()  # never set: the loop closes first
            pending.append(asyncio.ensure_future(run()))
            await asyncio.sleep(0)

        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(main())
        finally:
            loop.close()
        pending.clear()
        gc.collect()
        assert started
        if backend == "interpreter":
            np.testing.assert_array_equal(z.to_numpy(), 2.0)
        add(z, x, y).sync()  # usable again


# -- 3. exports, views and held tensors --------------------------------------------------------


def test_views_and_exports_of_a_tensor_a_pending_op_holds_are_refused(rt: Any) -> None:
    """While an op holds `x` (started, unwaited), its view, reshape, permute and both
    exports are refused (CT5001); a view made before the launch may not become a written
    partition (CT5004), and its writable export waits for the op's pending read first."""
    z, x, y = _fresh()
    before = x[0:512]
    op = add(z, x, y)
    sub = op.submit(streams.pool()[1])
    for attempt in (lambda: x[0:4], lambda: x.reshape([32, 32]), lambda: x.permute(0),
                    lambda: x.__dlpack__(), lambda: x.partition([TILE])):
        with pytest.raises(BorrowError) as e:
            attempt()
        assert _code(e.value) == "CT5001"
    with pytest.raises(BorrowError) as e:
        before.partition([TILE])
    assert _code(e.value) == "CT5004"
    lo, hi = x._span_bytes()
    assert rt.conflicts(x._storage, lo, hi, True)  # the op's read is pending
    cap = before.__dlpack__(stream=-1, max_version=(1, 0))
    assert not rt.conflicts(x._storage, lo, hi, True)  # it finished before the hand-over
    del cap
    sub.wait()


class _Meddler:
    """A `max_version` whose `__getitem__` partitions `t` and starts a writer of it (what
    another thread may do between an export's checks and its pin)."""

    def __init__(self, t: api.Tensor, start: Callable[[api.Partition], Any]) -> None:
        self.t, self.start, self.ops = t, start, []  # type: list[Any]

    def __getitem__(self, i: int) -> int:
        self.ops.append(self.start(self.t.partition([TILE])))
        return 1


@pytest.mark.parametrize("backend", ["interpreter", "null_gpu"])
def test_an_export_whose_tensor_is_partitioned_meanwhile_is_refused(backend: str) -> None:
    """Finding (fixed): the DLPack export checked the tensor, then read its arguments,
    then pinned the storage; a tensor partitioned and written in between was exported
    anyway (a capsule over memory a pending kernel writes, and, on the interpreter, a
    writable view of a partition cutile owns). Now the export checks again once pinned:
    CT5002 (the tensor was consumed), and the pin is gone again."""
    ctx = null_gpu() if backend == "null_gpu" else _nothing()
    with ctx:
        t, (_, x, y) = api.zeros([N], f32), _fresh()
        meddler = _Meddler(t, lambda p: add(p, x, y).submit(streams.pool()[1]))
        with pytest.raises(BorrowError) as e:
            t.__dlpack__(max_version=meddler)
        assert _code(e.value) == "CT5002"
        assert registry().storage_sharing(t._storage) == (False, 0)
        z = meddler.ops[0].wait()[0]
        add(z, x, y).sync()  # not pinned: the partition is still writable


# -- 4. the interpreter's "streams" and threads ------------------------------------------------


class _Paused:
    """`run()` on a thread, paused where `_stop(frame, event)` says (a trace function
    blocks there) until `release()`: work that has started, as a preempted thread leaves
    it."""

    def __init__(self) -> None:
        self.inside, self.go = threading.Event(), threading.Event()
        self.result: Any = None
        self.thread = threading.Thread(target=self._run)

    def run(self) -> Any:
        raise NotImplementedError

    def _stop(self, frame: Any, event: str) -> bool:
        raise NotImplementedError

    def _trace(self, frame: Any, event: str, arg: Any) -> Any:
        if not self.inside.is_set() and self._stop(frame, event):
            self.inside.set()
            self.go.wait(JOIN_S)
        return None if self.inside.is_set() else self._trace

    def _run(self) -> None:
        sys.settrace(self._trace)
        try:
            self.result = self.run()
        finally:
            sys.settrace(None)

    def start(self) -> None:
        self.thread.start()
        assert self.inside.wait(JOIN_S)

    def release(self) -> Any:
        self.go.set()
        self.thread.join(JOIN_S)
        assert not self.thread.is_alive()
        return self.result


class _PausedKernel(_Paused):
    """`add(z, x, y).sync()`, paused at its first call inside the CPU interpreter: a kernel
    that has been launched and is running."""

    def __init__(self, z: Any, x: Any, y: Any) -> None:
        super().__init__()
        self.args = (z, x, y)

    def run(self) -> Any:
        return add(*self.args).sync()

    def _stop(self, frame: Any, event: str) -> bool:
        return event == "call" and "cutile/interpreter/machine" in frame.f_code.co_filename


def test_interpreter_host_access_waits_for_a_kernel_running_in_another_thread() -> None:
    """Finding (fixed): host rule 4 on the interpreter with threads. Thread A's kernel
    reads `x` (running, paused in the interpreter); another thread exports a view of `x`
    made earlier, writably, and writes through it. The export's wait for the pending read
    marked A's kernel complete without waiting (the interpreter's virtual streams took
    "enqueued" for "ran"), and A computed with the consumer's values (z == 101). Now the
    wait waits for the thread running the work, so A computes with the values it was
    launched with."""
    z, x, y = _fresh()
    add(api.zeros([N], f32).partition([TILE]), x, y).sync()  # compiled outside
    view = x[:]
    kernel = _PausedKernel(z, x, y)
    kernel.start()
    exported = threading.Event()

    def export_and_write() -> None:
        a = np.from_dlpack(view)
        a[:] = 100.0
        exported.set()

    other = threading.Thread(target=export_and_write)
    other.start()
    try:
        waited = not exported.wait(0.5)
    finally:
        z2 = kernel.release()[0]
        other.join(JOIN_S)
    assert waited, "the export did not wait for the kernel reading the memory"
    np.testing.assert_array_equal(z2.unpartition().to_numpy(), 2.0)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_interpreter_synchronize_waits_for_a_kernel_running_in_another_thread() -> None:
    """The same finding through `cutile.synchronize()` and a read of a view: neither may
    return while another thread's kernel that writes `z` still runs."""
    z, x, y = _fresh()
    add(api.zeros([N], f32).partition([TILE]), x, y).sync()  # compiled outside
    kernel = _PausedKernel(z, x, y)
    kernel.start()
    returned = threading.Event()

    def synchronize() -> None:
        cutile.synchronize()
        returned.set()

    other = threading.Thread(target=synchronize)
    other.start()
    try:
        waited = not returned.wait(0.3)
    finally:
        z2 = kernel.release()[0]
        other.join(JOIN_S)
    assert waited and returned.is_set()
    np.testing.assert_array_equal(z2.unpartition().to_numpy(), 2.0)


class _PausedRead(_Paused):
    """`t.to_numpy()`, paused at the line that copies the bytes to the host (after the
    read's checks and waits): a read another thread preempts mid-copy."""

    def __init__(self, t: Any) -> None:
        super().__init__()
        self.t = t

    def run(self) -> Any:
        return self.t.to_numpy()

    def _stop(self, frame: Any, event: str) -> bool:
        return (event == "line" and frame.f_code.co_name == "read"
                and frame.f_code.co_filename.endswith("cutile/runtime/memory.py")
                and "buffer[offset" in linecache.getline(frame.f_code.co_filename,
                                                          frame.f_lineno))


def test_a_writer_of_bytes_another_thread_is_copying_to_the_host_is_refused() -> None:
    """Finding (fixed): a host read checked the tensor and waited for its writers, then
    copied with nothing recorded, so another thread could move the same tensor into a
    partition and launch a kernel that writes it during the copy (a torn read). Now the
    read holds its bytes in the ledger until the copy is done: the writer is refused
    (CT5008) and the read sees the values it was asked for."""
    z = api.full([N], 3.0, f32)
    x, y = api.ones([N], f32), api.ones([N], f32)
    add(api.zeros([N], f32).partition([TILE]), x, y).sync()  # compiled outside
    read = _PausedRead(z)
    read.start()
    errors: list[BaseException] = []

    def write_it() -> None:
        try:
            add(z.partition([TILE]), x, y).sync()
        except BaseException as e:
            errors.append(e)

    other = threading.Thread(target=write_it)
    other.start()
    other.join(JOIN_S)
    got = read.release()
    assert not other.is_alive()
    assert [_code(e) for e in errors] == ["CT5008"], errors
    # the refusal says who holds the bytes, not only a number
    assert "by a copy to the host in progress (op #" in str(errors[0]), errors[0]
    np.testing.assert_array_equal(got, 3.0)
