"""`_native.KernelLauncher` / `KernelOp` / `HandleMeta` on their own registry and
runtime (ledger and virtual streams), with Python stand-ins for the compiler and the
interpreter. The launcher reads the real checker's facts for `add` (launch predicates,
launch kind)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import cutile
from cutile import _native
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.errors import BorrowError, LaunchError


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


class World:
    """A registry, a ledger, three 1-D f32 handles (z partitioned by 128) and a launcher for
    `add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]])`."""

    def __init__(self, n: int = 1024, tile: int = 128) -> None:
        self.reg = _native.HostRegistry()
        self.ledger = _native.Runtime(self.reg)
        self.compiled: list[tuple[Any, ...]] = []
        self.ran: list[tuple[Any, ...]] = []
        self.handles = []
        for i, name in enumerate("zxy"):
            s = self.reg.new_storage(4 * n)
            h = self.reg.new_handle(s, 0, [n], [1], 4)
            m = _native.HandleMeta()
            m._init_meta(s, h, 4096 * (i + 1), 0, [n], [1], "f32", 4,
                         [tile] if name == "z" else None)
            self.handles.append(m)
        self.launcher = self.make()

    def compile(self, consts: Any, facts: Any, index_bits: int, device: int) -> Any:
        self.compiled.append((consts, facts, index_bits))
        return ("runnable", 0, [], 0, False, [])  # (..., buffer size, pdl, early)

    def run(self, *args: Any) -> None:
        self.ran.append(args)

    def make(self, **overrides: Any) -> _native.KernelLauncher:
        kw: dict[str, Any] = dict(
            kernel="add",
            params=[("z", "mut_tensor", "f32", ["B"]), ("x", "tensor", "f32", [-1]),
                    ("y", "tensor", "f32", [-1])],
            consts=[("B", "int")],
            checked=add.check(),
            unchecked=False,
            sm_counts=[132],
            registry=self.reg,
            runtime=self.ledger,
            owner=lambda: None,
            compile=lambda: self.compile,
            interpret=self.run,
            cuda_error=lambda code, what: None,
        )
        kw.update(overrides)
        return _native.KernelLauncher(**kw)

    def holders(self) -> list[str | None]:
        return [self.reg.holder(m._meta[1]) for m in self.handles]  # type: ignore[index]


def test_prepare_run_and_give_back() -> None:
    w = World()
    p = w.launcher.prepare(tuple(w.handles), {})
    assert p is not None
    assert p.grid == (8, 1, 1) and p.consts == [("B", 128)]
    assert w.holders() == [p.name] * 3 and p.name == f"`add` (op #{p.op_id})"
    assert p._run() == tuple(w.handles)
    assert w.holders() == [None] * 3 and len(w.ledger) == 0
    facts = [("z", "f32", 1, True, True, (16,), (1,)), ("x", "f32", 1, True, True, (16,), (1,)),
             ("y", "f32", 1, True, True, (16,), (1,))]
    assert w.compiled == [([("B", 128)], facts, 32)]
    assert w.ran == [("runnable", (8, 1, 1), ("z", "x", "y"), tuple(w.handles))]
    p2 = w.launcher.prepare(tuple(w.handles))
    assert p2 is not None
    p2._run()
    assert len(w.compiled) == 1 and len(w.launcher) == 1  # compiled once per specialization


def test_ledger_holds_the_ranges_until_finish() -> None:
    w = World()
    p = w.launcher.prepare(tuple(w.handles))
    assert p is not None
    wait = p._start()
    z_storage = w.handles[0]._meta[0]  # type: ignore[index]
    assert w.ledger.conflicts(z_storage, 0, 4, False) == [p.op_id]
    wait()
    assert p._finish() == tuple(w.handles)
    assert len(w.ledger) == 0 and not p.holding


def test_a_ledger_conflict_refuses_and_gives_back() -> None:
    w = World()
    z_storage = w.handles[0]._meta[0]  # type: ignore[index]
    w.ledger.acquire(10**9, [(z_storage, 0, 4096, False)])
    p = w.launcher.prepare(tuple(w.handles))
    assert p is not None
    with pytest.raises(BorrowError) as info:
        p._start()
    assert info.value.code == "CT5008"
    assert not p.holding and w.holders() == [None] * 3
    w.ledger.release(10**9)


def test_refusals_are_typed_errors_and_move_nothing() -> None:
    w = World()
    hs = tuple(w.handles)
    cases = [
        ((hs[:2], {}), "CT6104", "missing argument `y`"),
        ((hs, {"C": 1}), "CT6104", "no parameter `C`"),
        ((hs, {"B": 128.0}), "CT6102", "`B` expects an int"),
        ((hs, {"B": 64}), "CT6103", "`B` is 64 from the keyword `B=64` but 128 from the tile"),
        (((hs[1], hs[0], hs[2]), {}), "CT6101", "`z` is a kernel output"),
        ((hs, {"x": hs[1]}), "CT6104", "got argument `x` twice"),
        (((*hs, hs[0]), {}), "CT6104", "takes 3 positional arguments"),
    ]
    for (args, kwargs), code, needle in cases:
        with pytest.raises(LaunchError) as info:
            w.launcher.prepare(args, kwargs)
        assert info.value.code == code and needle in str(info.value), (code, str(info.value))
        assert w.holders() == [None] * 3
    # keywords are placed by name
    p = w.launcher.prepare((hs[0],), {"y": hs[2], "x": hs[1]})
    assert p is not None and p.values == hs
    p._give_back()


def test_values_it_cannot_read_are_slow_until_normalized() -> None:
    w = World()
    hs = tuple(w.handles)
    odd = (hs[0], np.float32(1.0), hs[2])
    assert w.launcher.prepare(odd) is None
    with pytest.raises(_native.SlowPath):
        _native.KernelOp(w.launcher, odd)
    with pytest.raises(LaunchError) as info:  # with the last word: the typed error
        _native.KernelOp(w.launcher, odd, None, True)
    assert info.value.code == "CT6101" and "float32" in str(info.value)
    assert w.holders() == [None] * 3


def test_a_failed_predicate_refuses_and_moves_nothing() -> None:
    w = World()
    short = _native.HandleMeta()
    s = w.reg.new_storage(64)
    short._init_meta(s, w.reg.new_handle(s, 0, [16], [1], 4), 64, 0, [16], [1], "f32", 4)
    with pytest.raises(LaunchError) as info:
        w.launcher.prepare((w.handles[0], short, w.handles[2]))
    assert info.value.code == "CT6200"
    assert "grid(0) <= cdiv(dim(x, 0), B)" in str(info.value) and "dim(x, 0) = 16" in str(
        info.value)
    assert w.holders() == [None] * 3


def test_moved_handles_raise_the_registry_error() -> None:
    w = World()
    p = w.launcher.prepare(tuple(w.handles))
    with pytest.raises(BorrowError) as info:
        w.launcher.prepare(tuple(w.handles))
    assert info.value.code == "CT5001" and p is not None and p.name in str(info.value)
    p._give_back()


def test_dropping_a_started_launch_gives_back() -> None:
    w = World()
    p = w.launcher.prepare(tuple(w.handles))
    assert p is not None and w.holders()[0] is not None
    p._start()
    del p
    # handed back without waiting; the ledger keeps the launch's ranges until the stream
    # is known complete (what touches the tensors next is ordered after it)
    assert w.holders() == [None] * 3 and len(w.ledger) == 3
    for m in w.handles:
        w.reg.check_live(m._meta[1], "read")  # type: ignore[index]
    w.ledger.synchronize()
    assert len(w.ledger) == 0


def test_dropping_a_launch_that_never_started_abandons_its_handles() -> None:
    w = World()
    p = w.launcher.prepare(tuple(w.handles))
    with pytest.warns(cutile.OpNeverRunWarning, match=r"`z`, `x`, `y` moved into it"):
        del p
    for m, name in zip(w.handles, "zxy", strict=True):
        with pytest.raises(BorrowError) as info:
            w.reg.check_live(m._meta[1], "read")  # type: ignore[index]
        assert info.value.code == "CT5009" and f"`{name}` was moved into `add`" in str(info.value)


def test_bad_compile_results_and_arguments() -> None:
    w = World()
    w.compile = lambda *a: ("r", 0, [("ptr", 0, 0, "Z", 0)], 8)  # type: ignore[method-assign]
    p = w.launcher.prepare(tuple(w.handles))
    assert p is not None
    with pytest.raises(ValueError):
        p._run()
    assert w.holders() == [None] * 3
    # an early load (ahead of the PDL wait) of a parameter the kernel does not have
    w2 = World()
    w2.compile = lambda *a: ("r", 0, [], 0, True, [99])  # type: ignore[method-assign]
    p2 = w2.launcher.prepare(tuple(w2.handles))
    assert p2 is not None
    with pytest.raises(ValueError, match="early load names no parameter"):
        p2._run()
    with pytest.raises(ValueError):
        w.make(consts=[("B", "complex")])
    with pytest.raises(ValueError):  # a GPU runtime with null driver entry points
        _native.Runtime(w.reg, 1, {s: 0 for s in _native.DRIVER_SYMBOLS}, [(1, 1)])
    with pytest.raises(ValueError):  # ... or without streams
        _native.Runtime(w.reg, 1, {s: 1 for s in _native.DRIVER_SYMBOLS}, [])
    m = _native.HandleMeta()
    with pytest.raises(ValueError):
        m._init_meta(1, 1, 0, 0, [4, 4], [1], "f32", 4)
    assert m._meta is None


def test_next_op_id_increases() -> None:
    a, b = _native.next_op_id(), _native.next_op_id()
    assert b == a + 1
