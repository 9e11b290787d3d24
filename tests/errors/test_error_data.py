"""Errors travel: every cutile exception pickles (multiprocessing, pytest-xdist) with its
code, message, hint and data, and exposes that data as plain values (`data()`; a
`KernelCheckError`'s `diagnostics` are `DiagnosticData`)."""

from __future__ import annotations

import json
import multiprocessing
import pickle
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f16, f32, load_tile_like, zeros
from cutile.diagnostic_data import DiagnosticData, LabelData
from cutile.errors import (
    CompileError,
    CutileError,
    DeviceError,
    InternalCompilerError,
    InterpreterError,
)


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@cutile.entry
def reads_a_neighbour(z: Mut[Tensor[f32, [16]]]):
    z.store(z.load(index=(0,)))  # the checker: not provably the block's own tile


@cutile.entry
def calls_host(z: Mut[Tensor[f32, [16]]]):
    sorted(z.load())


@cutile.entry(unsafe=True)
def all_write_tile_zero(z: Mut[Tensor[f32, [16]]]):
    z.store_unchecked(zeros((16,), f32), (0,))


def raised(fn: Callable[[], Any]) -> CutileError:
    with pytest.raises(CutileError) as info:
        fn()
    return info.value


def round_trip(err: CutileError) -> CutileError:
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert (back.code, back.message, back.hint, str(back)) == (
        err.code, err.message, err.hint, str(err))
    assert back.data() == err.data()
    json.dumps(back.data())  # plain values only
    return back


def test_a_checker_error_keeps_its_diagnostics_as_data() -> None:
    err = raised(reads_a_neighbour.check)
    assert isinstance(err, cutile.KernelCheckError)
    back = round_trip(err)
    assert isinstance(back, cutile.KernelCheckError)
    assert back.codes == err.codes and back.result is None  # the verdict stays behind
    d = back.diagnostics[0]
    assert isinstance(d, DiagnosticData) and isinstance(d.primary, LabelData)
    data = back.data()["diagnostics"][0]
    assert set(data) == {"code", "severity", "message", "file", "line", "column", "labels",
                         "notes", "help"}
    assert data["code"] == err.codes[0] and data["severity"] == "error"
    assert data["file"] == __file__ and data["line"] == reads_a_neighbour.fn.__code__ \
        .co_firstlineno + 2
    label = data["labels"][0]
    assert label["primary"] and label["file"] == __file__
    assert {"line", "column", "end_line", "end_column", "lo", "hi", "message"} <= set(label)
    with open(__file__, encoding="utf-8") as f:
        src = f.read()
    assert src.encode()[label["lo"]:label["hi"]] == b"(0,)"  # the span: the index
    line = src.splitlines()[label["line"] - 1]
    assert d.column == label["column"] == d.primary.col + 1 == line.index("(0,)") + 1


def test_a_frontend_error_keeps_its_diagnostics_as_data() -> None:
    back = round_trip(raised(calls_host.check))
    assert isinstance(back, cutile.KernelCheckError)
    (d,) = back.diagnostics
    assert (d.code, d.file, d.line) == ("CT0007", __file__,
                                        calls_host.fn.__code__.co_firstlineno + 2)
    assert d.help and "kernels have the builtins" in d.help
    assert d.to_dict()["labels"][0]["message"] == "not in kernels"


def test_borrow_and_launch_errors_keep_what_they_name() -> None:
    x = api.ones([64], f32)
    op = add(api.zeros([64], f32).partition([16]), x, api.ones([64], f32))
    back = round_trip(raised(x.to_numpy))
    assert isinstance(back, cutile.BorrowError)
    assert back.data() | {"message": None, "hint": None} == {
        "error": "BorrowError", "code": "CT5001", "message": None, "hint": None,
        "tensor": None, "kernel": "add", "op_id": op.op_id, "op": op.name}
    op.sync()
    back = round_trip(raised(lambda: add(api.zeros([64], f32).partition([16]),
                                         api.ones([64], f16), api.ones([64], f32))))
    assert isinstance(back, cutile.LaunchError)
    assert (back.code, back.kernel, back.tensor) == ("CT6102", "add", "x")
    back = round_trip(raised(lambda: add.compile(B="x")))
    assert isinstance(back, cutile.LaunchError) and back.kernel == "add"


def test_a_dropped_ops_tensor_error_names_the_tensor() -> None:
    z = api.zeros([64], f32).partition([16])
    with pytest.warns(cutile.OpNeverRunWarning):
        add(z, api.ones([64], f32), api.ones([64], f32))
    back = round_trip(raised(z.to_numpy))
    assert isinstance(back, cutile.BorrowError)
    assert (back.code, back.tensor, back.kernel) == ("CT5009", "z", "add")


def test_every_other_error_class_round_trips() -> None:
    with cutile.check_races():
        race = raised(lambda: all_write_tile_zero(api.zeros([64], f32).partition([16])).sync())
    assert isinstance(race, cutile.RaceError)
    back = round_trip(race)
    assert back.data()["kind"] == "write-write" and back.data()["blocks"][0] == [0, 0, 0]
    for err in (
        raised(lambda: api.zeros(-5)),
        CompileError("tileiras rejected it", code="CT7004", hint="report it",
                     location="k.py:3:1", log="error: x"),
        DeviceError("cuMemAlloc failed", code="CT6901"),
        InternalCompilerError("invariant broke"),
        InterpreterError("assertion failed", op="assert", block_id=(1, 0, 0),
                         location="k.py:4"),
    ):
        back = round_trip(err)
        for key, value in err.data().items():
            assert back.data()[key] == value
    assert round_trip(InterpreterError("x", block_id=(2, 0, 0))).data()["block_id"] == [2, 0, 0]


def _check_in_a_child() -> None:
    reads_a_neighbour.check()


def test_errors_cross_a_process_boundary() -> None:
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        err = pool.submit(_check_in_a_child).exception(timeout=120)
    assert isinstance(err, cutile.KernelCheckError)
    assert err.codes and err.diagnostics[0].file == __file__
