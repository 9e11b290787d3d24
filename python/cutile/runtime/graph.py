"""CUDA Graphs that own their tensors: `cutile.graph(fn, *args)` or `cutile.graph(op)`.

Capture records a chain of ops without running it: on the GPU into a CUDA Graph (stream
capture on the graph's own stream), on the interpreter into a list of launches that a
replay runs in order. The graph then owns every tensor it touched (the arguments, what the
captured ops were given, what `fn` returned) for its whole life: their handles are held
(any use is refused, CT5001, naming the graph) and their memory cannot be freed (the graph
keeps them); and no one else may write the memory any captured launch read or wrote,
through whatever handle (a view made during the capture and kept, one made before it): a
mutable launch argument or a `partition` of it is refused (CT5001), so a replay never
overwrites another writer's bytes or reads bytes changed under it. So no replay can read
freed memory or race a user of the tensors:

- `g.replay(*inputs)` reruns the work; new input values go in through the graph's own
  input tensors (copied in on the graph's stream before the replay: a numpy array, or a
  cutile tensor, whose read is ordered by the ledger); it returns a handle to wait on;
- every replay enters the ledger with the bytes the captured work reads and writes, so a
  view of a graph tensor made inside `fn` and kept (not handed in) is still ordered: a
  host read waits for the replay, a kernel on another stream waits on its event;
- `g.read(i)` copies result `i` out after the replays in flight;
- `g.into_inner()` waits for the replays and gives the tensors back (and `fn`'s results);
  the graph is spent after (CT5062). Dropped, the graph gives its tensors back after its
  replays completed.

A capture runs on a fresh stream after every stream finished (it cannot wait for work
outside it); inside, allocating is refused (CT5063: allocate intermediates first), reading
a tensor a captured op writes is refused (CT5060: nothing ran), and `sync()` returns at
once (the work is ordered in the graph).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterable
from typing import Any

import numpy as np

from .. import _native
from ..errors import BorrowError
from . import driver, streams
from .device_op import DeviceOp, _completion_of
from .ownership import registry
from .tensor import _Handle, contiguous_strides


def _refuse(code: str, message: str, hint: str) -> BorrowError:
    return BorrowError(message, code=code, hint=hint)


def _handles(objs: Iterable[Any], out: list[_Handle]) -> None:
    """Every tensor handle in `objs`, looking into tuples, lists and dicts."""
    for o in objs:
        if isinstance(o, _Handle):
            out.append(o)
        elif isinstance(o, (tuple, list)):
            _handles(o, out)
        elif isinstance(o, dict):
            _handles(o.values(), out)


class Replay:
    """One replay in flight: `wait()` blocks until it completed, `await` does so without
    blocking the event loop, `done()` polls."""

    def __init__(self, name: str, slot: int, seq: int) -> None:
        self._name = name  # not the graph: a replay handle does not keep it alive
        self._slot = slot
        self._seq = seq

    def __repr__(self) -> str:
        return f"<cutile.Replay of {self._name} ({'done' if self.done() else 'pending'})>"

    def done(self) -> bool:
        return bool(streams.runtime().query(self._slot, self._seq))

    def wait(self) -> None:
        streams.runtime().wait_for(self._slot, self._seq)

    def __await__(self) -> Generator[Any, None, None]:
        return _completion_of(self.done, self.wait).__await__()


class Graph:
    """A captured chain of ops that owns its tensors (see the module docs)."""

    def __init__(self, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.name = f"cutile.graph({_name_of(target)})"
        rt = streams.runtime()
        self._rt = rt
        self._lock = threading.Lock()
        self._alive = False
        self._check_capturable(rt, target)
        rt.synchronize()  # a capture cannot wait for work outside it
        self._stream = streams.Stream(self.name)
        slot = self._stream.slot
        self._records: list[Any] = []
        self._exec: Any = None
        self._graph: Any = None
        rt.begin_capture(slot, self._records)
        self._begin_gpu_capture()
        try:
            with streams.on_slot(slot):
                result = _run_captured(target, args, kwargs)
        except BaseException:
            self._abort_capture()
            raise
        try:
            self._end_gpu_capture()
        except BaseException:
            self._abort_capture(gpu_ended=True)
            raise
        self._accesses = rt.end_capture(slot)
        # what every replay writes, besides its copy-ins
        self._written = sorted({st for st, _, _, write in self._accesses.tuples() if write})
        if not self._records:
            self._abort_capture(gpu_ended=True, ended=True)
            raise _refuse("CT5065", f"{self.name} started no op: there is nothing to replay",
                          "capture an op, or a function that starts ops "
                          "(`k(z, x).sync()`, or returns `k(z, x)`)")
        self._result = result
        self._inputs = list(target.values if isinstance(target, DeviceOp)
                            and hasattr(target, "values") else args)
        held: list[_Handle] = []
        _handles((*args, *kwargs.values(), result), held)
        _handles((rec[3] for rec in self._records), held)
        self._held = held  # their memory lives as long as the graph
        self._op_id = _native.next_op_id()
        registry().hold(self._op_id, self.name, [h._handle for h in held])
        # ... and no one else writes the memory any captured launch read or wrote, through
        # whatever handle (a view kept from the capture, one made before it): a replay
        # would overwrite what they wrote, or read what they changed (CT5001)
        registry().guard(self._op_id, sorted(
            {st for st, _, _, _ in self._accesses.tuples()} | {h._storage for h in held}))
        self._alive = True

    # -- capture ---------------------------------------------------------------------------

    def _check_capturable(self, rt: Any, target: Any) -> None:
        cur = rt.current()
        if cur is not None and rt.capturing(cur):
            raise _refuse("CT5065", f"{self.name} inside another capture on this thread",
                          "capture the graphs one after the other")
        if isinstance(target, DeviceOp):
            if target._ran:
                raise _refuse("CT5065", f"{target.name} already ran; a graph captures an op "
                              "that has not run", "capture a fresh op: call the kernel again")
        elif not callable(target):
            raise _refuse("CT5065", f"cutile.graph takes a DeviceOp or a function, not "
                          f"{type(target).__name__}",
                          "e.g. `cutile.graph(step, z, x)` or `cutile.graph(add(z, x, y))`")

    def _begin_gpu_capture(self) -> None:
        if not self._rt.gpu:
            return
        d = driver._driver()
        mode = d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        driver.check(d.cuStreamBeginCapture(d.CUstream(self._stream.handle), mode),
                     "cuStreamBeginCapture")

    def _end_gpu_capture(self) -> None:
        if not self._rt.gpu:
            return
        d = driver._driver()
        stream = d.CUstream(self._stream.handle)
        self._graph = driver.check(d.cuStreamEndCapture(stream), "cuStreamEndCapture")
        self._exec = driver.check(d.cuGraphInstantiate(self._graph, 0), "cuGraphInstantiate")
        driver.check(d.cuGraphUpload(self._exec, stream), "cuGraphUpload")

    def _abort_capture(self, gpu_ended: bool = False, ended: bool = False) -> None:
        """A capture failed: drop what it recorded (the ops it started handed their tensors
        back already), end the capture (the driver's unless `gpu_ended`, the runtime's
        unless `ended`), close the stream."""
        slot = self._stream.slot
        if self._rt.gpu and not gpu_ended:
            d = driver._driver()
            _, graph = d.cuStreamEndCapture(d.CUstream(self._stream.handle))
            if graph:
                d.cuGraphDestroy(graph)
        if not ended:
            self._rt.end_capture(slot)
        self._destroy_gpu_graph()
        self._records.clear()
        self._stream.close()

    def _destroy_gpu_graph(self) -> None:
        if not self._rt.gpu:
            return
        d = driver._driver()
        if self._exec is not None:
            d.cuGraphExecDestroy(self._exec)
            self._exec = None
        if self._graph is not None:
            d.cuGraphDestroy(self._graph)
            self._graph = None

    # -- use -------------------------------------------------------------------------------

    def __repr__(self) -> str:
        state = "alive" if self._alive else "spent"
        return f"<{self.name}: {len(self._records)} launches, {state}>"

    @property
    def num_launches(self) -> int:
        """Kernel launches the graph replays."""
        return len(self._records)

    def _check_alive(self, what: str) -> None:
        if not self._alive:
            raise _refuse("CT5062", f"{self.name} gave its tensors back (`into_inner()`); it "
                          f"cannot {what}",
                          "keep the graph while you use it and call `into_inner()` last; "
                          "capture a new graph to run the work again")

    def replay(self, *inputs: Any) -> Replay:
        """Run the captured work again (enqueued on the graph's stream; returns at once).
        `inputs[i]`, when given and not None, is copied into the graph's input `i` first: a
        numpy array or a cutile tensor of its shape and element type."""
        with self._lock:
            self._check_alive("replay")
            copies = self._copy_plan(inputs)
            # Memory another library may see is not cutile's to write: imported shared
            # (CT5040), or exported since the capture (CT5041, a view kept and exported).
            registry().check_writable([*(dst._storage for dst, _ in copies), *self._written],
                                      f"replay {self.name}")
            slot = self._stream.slot
            with streams.on_slot(slot):
                for dst, src in copies:
                    _copy_in(dst, src)
            token = _native.next_op_id()
            exec_handle = int(self._exec) if self._exec is not None else 0
            if self._rt.gpu:
                seq = self._rt.launch_graph(slot, token, exec_handle, self._accesses)
                return Replay(self.name, slot, seq)
            from ..kernel import _interpret

            # The interpreter runs the replay here, after enqueueing it: hold its host work
            # meanwhile, so that another thread's wait for the replay waits until it ran.
            self._rt.begin_host_work()
            try:
                seq = self._rt.launch_graph(slot, token, exec_handle, self._accesses)
                for runnable, grid, names, values in self._records:
                    _interpret(runnable, grid, names, values)
            finally:
                self._rt.end_host_work()
            return Replay(self.name, slot, seq)

    def _copy_plan(self, inputs: tuple[Any, ...]) -> list[tuple[_Handle, Any]]:
        """Check every replay input against the graph's (CT5064) before copying any."""
        if len(inputs) > len(self._inputs):
            raise _refuse("CT5064", f"{len(inputs)} replay inputs, but {self.name} has "
                          f"{len(self._inputs)}", "pass at most one value per input")
        plan = []
        for i, (new, dst) in enumerate(zip(inputs, self._inputs, strict=False)):
            if new is None:
                continue
            if not isinstance(dst, _Handle):
                raise _refuse("CT5064", f"replay input {i}: the graph's input {i} is "
                              f"{type(dst).__name__}, not a tensor", "pass None for it")
            if isinstance(new, _Handle):
                # A tensor an op holds (or consumed, or dropped with an op that never ran)
                # is dead to the program, as for any other read (CT5001, CT5002, CT5009).
                new._ensure_live(f"copy it into input {i} of {self.name}")
                shape, dtype = tuple(new.shape), new.dtype.name
            elif isinstance(new, np.ndarray):
                shape, dtype = tuple(new.shape), _numpy_name(new)
            else:
                raise _refuse("CT5064", f"replay input {i} is a {type(new).__name__}; it "
                              "takes a numpy array or a cutile tensor", "e.g. "
                              "`g.replay(np_array)`")
            if shape != tuple(dst.shape) or dtype != dst.dtype.name:
                raise _refuse("CT5064", f"replay input {i} has shape {list(shape)} and type "
                              f"`{dtype}`; the graph's input {i} has shape "
                              f"{list(dst.shape)} and type `{dst.dtype.name}`",
                              "pass a value of the input's shape and element type")
            for t in (dst, new):
                if isinstance(t, _Handle) and t.strides != contiguous_strides(t.shape):
                    raise _refuse("CT5064", f"replay input {i}: a copy-in takes contiguous "
                                  "tensors", "copy it into a contiguous tensor first")
            plan.append((dst, new))
        return plan

    def read(self, index: int = 0) -> np.ndarray:
        """A numpy copy of result `index` (what `fn` returned, or the op's results), after
        the replays in flight."""
        with self._lock:
            self._check_alive("read a result")
            res = self._result if isinstance(self._result, tuple) else (self._result,)
            t = res[index]
            if not isinstance(t, _Handle):
                raise TypeError(f"result {index} of {self.name} is not a tensor")
            return t._to_numpy()

    def wait(self) -> None:
        """Block until every replay so far completed."""
        self._stream.synchronize()

    def into_inner(self) -> Any:
        """Wait for the replays, give every tensor back, and return what `fn` returned (the
        op's results). The graph is spent afterwards."""
        with self._lock:
            self._check_alive("give its tensors back again")
            self._release()
            return self._result

    def _release(self) -> None:
        self._alive = False
        self._stream.close()  # waits for the replays in flight
        self._destroy_gpu_graph()
        registry().give_back(self._op_id)
        self._records = []
        self._held = []

    def __del__(self) -> None:
        if getattr(self, "_alive", False):
            try:
                self._release()
            except Exception:  # interpreter shutdown, or a lost context
                pass


def _run_captured(target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Start the op (or `fn(*args)`, and the op it returns) on the capturing stream."""
    op = target if isinstance(target, DeviceOp) else target(*args, **kwargs)
    if isinstance(op, DeviceOp):
        op._claim()
        op._start()
        return op._hand_back()
    return op


def _copy_in(dst: _Handle, src: Any) -> None:
    lo, _ = dst._span_bytes()
    if isinstance(src, _Handle):
        src_lo, _ = src._span_bytes()
        dst._alloc.copy_from(lo, src._alloc, src_lo, dst.nbytes)
    else:
        dst._alloc.write(lo, np.ascontiguousarray(src).reshape(-1).view(np.uint8))


def _numpy_name(a: np.ndarray) -> str:
    from ..runtime.tensor_args import dtype_of

    try:
        return dtype_of(a.dtype).name
    except Exception:
        return str(a.dtype)


def _name_of(target: Any) -> str:
    if isinstance(target, DeviceOp):
        return target.name
    return str(getattr(target, "__name__", type(target).__name__))


def graph(target: DeviceOp | Callable[..., Any], *args: Any, **kwargs: Any) -> Graph:
    """Capture `target` into a CUDA Graph that owns every tensor it touches: an op that has
    not run, or a function called as `target(*args, **kwargs)` that starts ops (and may
    return one, which runs too). See `cutile.runtime.graph`."""
    return Graph(target, args, kwargs)
