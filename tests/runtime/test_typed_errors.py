"""The first hour: mistakes at the library's edges (tensor builders, ahead-of-time Const
values, scalar arguments, scalar annotations) are typed cutile errors with a stable code
and a hint, never a raw exception from inside cutile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f16, f32, i8, load_tile_like


@cutile.entry
def saxpy(y: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], a: f32, B: Const[int]):
    y.store(a * load_tile_like(x, y) + y.load())


@cutile.entry
def shift(y: Mut[Tensor[f16, ["B"]]], a: f16, B: Const[int]):
    y.store(y.load() + a)


@cutile.entry
def scale(y: Mut[Tensor[f32, [16]]], S: Const[float], on: Const[bool]):
    y.store(y.load() * S)


@cutile.entry
def plus(y: Mut[Tensor[f32, ["B"]]], a: float, B: Const[int]):  # `float` is `f32`
    y.store(y.load() + a)


def raises(fn: Callable[[], Any], cls: type[cutile.CutileError], code: str,
           needle: str) -> cutile.CutileError:
    with pytest.raises(cutile.CutileError) as info:
        fn()
    err = info.value
    assert type(err) is cls, repr(err)
    assert err.code == code and needle in err.message, str(err)
    assert err.hint, f"{code} without a hint"
    return err


@pytest.mark.parametrize(("consts", "code", "needle"), [
    ({"B": "x"}, "CT6102", "`B` expects an int, got a `str` ('x')"),
    ({"B": 1.5}, "CT6102", "`B` expects an int, got a `float` (1.5)"),
    ({"B": True}, "CT6102", "`B` expects an int, got a `bool` (True)"),
    ({"B": None}, "CT6102", "`B` expects an int, got a `NoneType` (None)"),
    ({"B": -4}, "CT6103", "`B` must be >= 1, got -4"),
    ({"B": 0}, "CT6103", "`B` must be >= 1, got 0"),
    ({"B": 1 << 31}, "CT6103", "`B` = 2147483648 does not fit in 32 bits"),
    ({"B": 16, "C": 1}, "CT6104", "`saxpy` has no Const parameter `C`"),
    ({}, "CT6104", "compile() needs a value for `B`"),
])
def test_compile_checks_const_values_as_a_launch_does(consts: dict[str, Any], code: str,
                                                      needle: str) -> None:
    raises(lambda: saxpy.compile(**consts), cutile.LaunchError, code, needle)


def test_compile_takes_consts_of_their_declared_types() -> None:
    assert saxpy.specialization({"B": np.int64(16)}).consts == (("B", 16),)
    assert dict(scale.specialization({"S": 2, "on": True}).consts) == {"S": 2.0, "on": True}
    raises(lambda: scale.specialization({"S": "2", "on": True}), cutile.LaunchError, "CT6102",
           "`S` expects a float")
    raises(lambda: scale.specialization({"S": 2.0, "on": 1}), cutile.LaunchError, "CT6102",
           "`on` expects a bool")


@pytest.mark.parametrize(("call", "code", "needle"), [
    (lambda: api.zeros(-5), "CT5030", "tensor extents are >= 0, but shape [-5] has -5"),
    (lambda: api.ones([4, -1], f32), "CT5030", "shape [4, -1] has -1"),
    (lambda: api.zeros([2.5]), "CT5030", "shape [2.5] has a `float` (2.5)"),
    (lambda: api.zeros(3.5), "CT5030", "not a `float` (3.5)"),
    (lambda: api.empty("abc"), "CT5030", "not a `str` ('abc')"),
    (lambda: api.zeros(None), "CT5030", "not a `NoneType` (None)"),
    (lambda: api.zeros([[2]]), "CT5030", "has a `list` ([2])"),
    (lambda: api.zeros([True, 2]), "CT5030", "has a `bool` (True)"),
    (lambda: api.zeros([1 << 62, 4]), "CT5033", "more than any memory holds"),
    (lambda: api.zeros(4, "f33"), "CT5031", "there is no element type `f33`"),
    (lambda: api.zeros(4, np.complex64), "CT5031", "numpy's `complex64` has no cutile"),
    (lambda: api.zeros(4, object), "CT5031", "numpy's `object` has no cutile"),
    (lambda: api.zeros(4, 3), "CT5031", "a `int` (3) is not an element type"),
    (lambda: api.from_numpy(np.zeros(4, np.complex128)), "CT5031", "`complex128`"),
    (lambda: api.from_numpy(np.array(["a", "b"])), "CT5031", "numpy's `<U1`"),
    (lambda: api.full(4, "x"), "CT5032", "an `f32` tensor cannot be filled with a `str`"),
    (lambda: api.full(4, 1e300, f16), "CT5032", "1e+300 overflows `f16`"),
    (lambda: api.full(4, 10**400, f32), "CT5032", "overflows `f32`"),
    (lambda: api.full(4, 300, i8), "CT5032", "300 does not fit in `i8` (-128 to 127)"),
    (lambda: api.full(4, 1.5, "i32"), "CT5032", "1.5 is not an integer"),
    (lambda: api.arange("a"), "CT5032", "`arange` takes numbers"),
    (lambda: api.arange(0, 4, 0), "CT5032", "a step other than 0"),
    (lambda: api.arange(4, dtype="zz"), "CT5031", "no element type `zz`"),
])
def test_tensor_builders_refuse_with_a_code(call: Callable[[], Any], code: str,
                                            needle: str) -> None:
    err = raises(call, cutile.TensorError, code, needle)
    # the exceptions these mistakes raised before they had codes still catch them
    assert isinstance(err, ValueError) and isinstance(err, TypeError)


def test_tensor_builders_still_take_what_they_took() -> None:
    assert api.zeros(np.int64(3)).shape == (3,)
    assert api.zeros((2, np.int32(3)), np.float32).dtype == f32
    assert api.zeros(4, int).dtype.name == "i64"  # numpy's reading of `int`
    assert api.full(2, True, "bool").to_numpy().tolist() == [True, True]
    np.testing.assert_array_equal(api.full(3, 2.0, "i8").to_numpy(), np.full(3, 2, np.int8))
    np.testing.assert_array_equal(api.full(2, float("inf"), f16).to_numpy(), [np.inf] * 2)
    assert api.zeros([0, 5]).shape == (0, 5)


@pytest.mark.parametrize(("kernel", "value", "needle"), [
    (saxpy, 1e39, "`a` = 1e39 overflows `f32` (it would be infinite)"),
    (saxpy, np.float64(-1e39), "`a` = -1e39 overflows `f32`"),
    (saxpy, 10**40, "is an int past 64 bits, which an `f32` parameter does not take"),
    (shift, 70000.0, "`a` = 70000.0 overflows `f16`"),
    (shift, 100000, "`a` = 100000.0 overflows `f16`"),  # an int too (it once ran as inf)
])
def test_a_scalar_that_overflows_to_infinity_is_refused(kernel: cutile.EntryKernel,
                                                        value: Any, needle: str) -> None:
    dtype = f16 if kernel is shift else f32
    y = api.zeros([64], dtype).partition([16])
    args = (y, api.ones([64], f32), value) if kernel is saxpy else (y, value)
    raises(lambda: kernel(*args), cutile.LaunchError, "CT6102", needle)
    assert y.to_numpy()[0] == 0  # refused before anything moved or ran


def test_an_explicit_infinity_is_passed_through() -> None:
    y, _, a = saxpy(api.zeros([64], f32).partition([16]), api.ones([64], f32),
                    float("inf")).sync()
    assert a == float("inf") and np.isinf(y.to_numpy()).all()


def test_a_float_annotation_is_an_f32_scalar() -> None:
    param = plus.entry.params[1]
    assert (param.kind, param.dtype) == ("scalar", "f32")
    y, _ = plus(api.ones([64], f32).partition([16]), 0.5).sync()
    np.testing.assert_array_equal(y.to_numpy(), np.full(64, 1.5, np.float32))
    raises(lambda: plus(api.ones([64], f32).partition([16]), 1e39), cutile.LaunchError,
           "CT6102", "overflows `f32`")


def test_an_int_annotation_is_ambiguous_and_says_both_spellings() -> None:
    def k(z: Mut[Tensor[f32, [16]]], n: int):  # type: ignore[no-untyped-def]
        pass

    with pytest.raises(cutile.KernelCheckError) as info:
        cutile.entry(k).check()
    assert info.value.codes == ["CT0003"]
    assert "`Const[int]`" in str(info.value) and "`i32`" in str(info.value)


def test_partition_reshape_and_persistent_take_ints_with_typed_errors() -> None:
    from cutile.errors import BorrowError, TensorError

    with pytest.raises(TensorError) as err:
        api.zeros([16], f32).partition([2.5])
    assert err.value.code == "CT5030"  # no silent truncation to 2
    with pytest.raises(TensorError) as err:
        api.zeros([4, 6], f32).reshape([5, 5])
    assert err.value.code == "CT5034" and "24 elements" in str(err.value)
    with pytest.raises(TensorError) as err:
        api.zeros([4, 6], f32)[:, ::2].reshape([12])
    assert err.value.code == "CT5034"
    with pytest.raises(BorrowError) as err2:
        api.zeros([16], f32).partition([4]).persistent(2.5)  # type: ignore[arg-type]
    assert err2.value.code == "CT5012"
    assert api.zeros([4, 6], f32).reshape([24]).shape == (24,)


@pytest.mark.parametrize(("key", "needle"), [
    ((slice(None, None, -1),), "step of 1 or more"),
    (slice(0, 2, 0), "step of 1 or more"),
    (4, "index 4 out of range for axis 0 of size 4"),
    (-5, "index -5 out of range"),
    ((0, 0, 0), "too many indices for a tensor of rank 2"),
    ("a", "unsupported index 'a'"),
    (slice("a", 2), "unsupported slice"),
])
def test_a_tensor_index_that_names_no_view_is_ct5037(key: Any, needle: str) -> None:
    t = api.zeros([4, 6], f32)
    e = raises(lambda: t[key], cutile.TensorIndexError, "CT5037", needle)
    assert isinstance(e, IndexError)  # what `t[i]` past the end raised before it had a code


def test_iterating_over_a_tensor_stops_at_its_end() -> None:
    t = api.from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3))
    rows = [r.to_numpy() for r in t]
    assert len(rows) == 4 and (rows[3] == [9, 10, 11]).all()
