"""Ops that cannot be forgotten: calling a kernel only builds an op. Dropped before anything
ran it, an op warns (`cutile.OpNeverRunWarning`, at the line that made it) and the tensors
moved into it stay unusable (BorrowError CT5009), so an output that was never written
cannot be read as if it had been. Ops that ran, or that failed to start, or that were
handed back on purpose, stay silent."""

from __future__ import annotations

import asyncio
import gc
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.kernel import EntryKernel
from cutile.lowering.signature import Specialization


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@cutile.entry
def fails_to_build(z: Mut[Tensor[f32, ["B"]]], B: Const[int]):
    z.store(z.load() + 1.0)


def args(n: int = 64) -> tuple[api.Partition, api.Tensor, api.Tensor]:
    return api.zeros([n], f32).partition([16]), api.ones([n], f32), api.ones([n], f32)


def next_line() -> int:
    """The line after the caller's."""
    return sys._getframe(1).f_lineno + 1


@contextmanager
def no_unrun_warning() -> Iterator[None]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        yield
        gc.collect()
    unrun = [w for w in seen if issubclass(w.category, cutile.OpNeverRunWarning)]
    assert unrun == [], [str(w.message) for w in unrun]


def test_a_dropped_op_warns_at_the_line_that_made_it() -> None:
    z, x, y = args()
    with pytest.warns(cutile.OpNeverRunWarning) as seen:
        line = next_line()
        add(z, x, y)  # builds the op; nothing runs it
    assert len(seen) == 1
    w = seen[0]
    assert (w.filename, w.lineno) == (__file__, line)
    text = str(w.message)
    assert text.startswith("[CT8902] `add` (op #")
    assert f"made at {__file__}:{line}" in text
    assert "was dropped without running" in text and "`z`, `x`, `y`" in text
    assert "`.sync()` or `await`" in text


def test_the_warning_names_the_op_on_the_fast_path_too() -> None:
    add(*args()).sync()  # the launcher exists: the next call never leaves Rust
    with pytest.warns(cutile.OpNeverRunWarning) as seen:
        op = add(*args())
        line = sys._getframe().f_lineno - 1
        name = op.name
        assert op.call_site == (__file__, line)
        del op
    assert name in str(seen[0].message) and (seen[0].filename, seen[0].lineno) == (__file__, line)


def test_tensors_of_a_dropped_op_stay_unusable() -> None:
    z, x, y = args()
    with pytest.warns(cutile.OpNeverRunWarning):
        op = add(z, x, y)
        name = op.name
        del op
    with pytest.raises(cutile.BorrowError) as info:
        z.to_numpy()
    assert info.value.code == "CT5009"
    assert info.value.message == (
        f"cannot read: `z` was moved into {name}, which was dropped without running")
    assert ".sync()" in (info.value.hint or "")
    # an input, too: its contents are fine, but the program lost track of it
    with pytest.raises(cutile.BorrowError, match=r"`x` was moved into `add` \(op #\d+\), "
                       r"which was dropped without running") as info:
        x.to_numpy()
    assert info.value.code == "CT5009"
    # and no later launch or partition operation takes them
    with pytest.raises(cutile.BorrowError) as info:
        add(z, api.ones([64], f32), api.ones([64], f32))
    assert info.value.code == "CT5009"
    with pytest.raises(cutile.BorrowError) as info:
        z.unpartition()
    assert info.value.code == "CT5009"


def test_ops_that_ran_do_not_warn() -> None:
    async def awaited() -> Any:
        return await add(*args())

    with no_unrun_warning():
        z, _, _ = add(*args()).sync()
        np.testing.assert_array_equal(z.unpartition().to_numpy(), np.full(64, 2.0))
        asyncio.run(awaited())
        add(*args()).then(lambda z, x, y: add(z, x, y)).sync()
        cutile.zip(add(*args()), add(*args())).sync()
        op = add(*args())
        op.sync()
        op.then(lambda *r: None)  # dropped, but nothing in it was left to run
        del op


def test_ops_that_failed_to_start_do_not_warn(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: EntryKernel, spec: Specialization, device: int | None = None) -> Any:
        raise cutile.CompileError("no assembler today", code="CT7001")

    monkeypatch.setattr(EntryKernel, "_runnable", broken)
    fails_to_build._launcher = None
    z = api.zeros([32], f32).partition([16])
    with no_unrun_warning():
        op = fails_to_build(z)
        with pytest.raises(cutile.CompileError):
            op.sync()
        del op
    np.testing.assert_array_equal(z.to_numpy(), np.zeros(32))  # handed back, usable


def test_a_zip_whose_op_fails_to_start_hands_every_tensor_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    original = EntryKernel._runnable

    def only_add(self: EntryKernel, spec: Specialization, device: int | None = None) -> Any:
        if self is fails_to_build:
            raise cutile.CompileError("no assembler today", code="CT7001")
        return original(self, spec, device)

    monkeypatch.setattr(EntryKernel, "_runnable", only_add)
    fails_to_build._launcher = None
    z1, x1, y1 = args()
    z2 = api.zeros([32], f32).partition([16])
    z3, x3, y3 = args()
    with no_unrun_warning():
        with pytest.raises(cutile.CompileError):
            cutile.zip(add(z1, x1, y1), fails_to_build(z2), add(z3, x3, y3)).sync()
    # the op that started completed; the one after the failure never ran; all hand back
    np.testing.assert_array_equal(z1.to_numpy(), np.full(64, 2.0))
    np.testing.assert_array_equal(z2.to_numpy(), np.zeros(32))
    np.testing.assert_array_equal(z3.to_numpy(), np.zeros(64))
    assert x3.to_numpy()[0] == 1.0


def test_handing_back_on_purpose_does_not_warn() -> None:
    z, x, y = args()
    with no_unrun_warning():
        op = add(z, x, y)
        op._give_back()
        del op
    np.testing.assert_array_equal(z.to_numpy(), np.zeros(64))


def test_a_dropped_composite_warns_once_for_what_it_holds() -> None:
    z, x, y = args()
    with pytest.warns(cutile.OpNeverRunWarning) as seen:
        line = next_line()
        chain = add(z, x, y).then(lambda *r: None)
        name = chain.name
        del chain
    assert len(seen) == 1  # the chain answers for the op inside it
    assert str(seen[0].message).startswith(
        f"[CT8902] {name}, made at {__file__}:{line}, was dropped")
    with pytest.raises(cutile.BorrowError) as info:
        z.to_numpy()
    assert info.value.code == "CT5009"
    with pytest.warns(cutile.OpNeverRunWarning) as seen:
        cutile.zip(add(*args()), add(*args()))
    assert len(seen) == 1 and str(seen[0].message).startswith("[CT8902] zip(`add` (op #")
