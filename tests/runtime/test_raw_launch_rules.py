"""The host's side of a raw kernel, which needs no GPU: declarations, argument binding,
launch shapes, and the ownership rules. A tensor declared `write` or `atomic` is held
exclusively (one tensor may not be passed to it and to another parameter; overlapping
views are refused), `read` tensors are shared; on the CPU interpreter a raw kernel cannot
run (CT6120), and the refused call leaves every tensor usable."""

from __future__ import annotations

import ctypes
import gc
import struct
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api, unsafe
from cutile.core import Const, Mut, Tensor, f16, f32, i32, load_tile_like
from cutile.runtime import driver, raw_args

SRC = r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
axpy = unsafe.raw_kernel(SRC, "axpy", [unsafe.scalar("a", "float"), unsafe.read("x", f32),
                                       unsafe.write("y", f32), unsafe.scalar("n", "int")],
                         block=256)


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@pytest.fixture(autouse=True)
def interpreter() -> Iterator[None]:
    if driver.backend() == "interpreter":
        yield
        return
    driver.reset_for_tests("interpreter")
    try:
        yield
    finally:
        driver.reset_for_tests(None)


def tensors(n: int = 64) -> tuple[api.Tensor, api.Tensor]:
    rng = np.random.default_rng(n)
    return (api.from_numpy(rng.standard_normal(n, dtype=np.float32)),
            api.from_numpy(rng.standard_normal(n, dtype=np.float32)))


def refused(fn: Any, *args: Any, **kwargs: Any) -> cutile.CutileError:
    with pytest.raises(cutile.CutileError) as err:
        fn(*args, **kwargs)
    return err.value


# -- declarations ------------------------------------------------------------------------


@pytest.mark.parametrize(("make", "words"), [
    (lambda: unsafe.raw_kernel(SRC, "axpy", "float a"), "list of parameter declarations"),
    (lambda: unsafe.raw_kernel(SRC, "axpy", [("a", "float")]), "not a declaration"),
    (lambda: unsafe.raw_kernel(SRC, "axpy", [unsafe.read("x"), unsafe.write("x")]),
     "declares `x` twice"),
    (lambda: unsafe.read("2x"), "is an identifier"),
    (lambda: unsafe.write("grid"), "a raw kernel call takes `grid=`"),
    (lambda: unsafe.scalar("n", "int128"), "not a C scalar type"),
    (lambda: unsafe.read("x", "f128"), "there is no element type `f128`"),
    (lambda: unsafe.raw_kernel(SRC, "axpy", [], options="-O3"), "a list of NVRTC options"),
    (lambda: unsafe.raw_kernel(SRC, "axpy", [], link="helper.cu"), "`link` of raw kernel"),
    (lambda: unsafe.raw_kernel(SRC, "axpy", [], lto="yes"), "True or False"),
    (lambda: unsafe.raw_kernel(SRC, "", []), "C++ name of its `__global__` function"),
    (lambda: unsafe.raw_kernel(b"__global__ void k() {}", "k", []), "CUDA C++ text"),
])
def test_a_declaration_that_cannot_be_used_is_ct6122(make: Any, words: str) -> None:
    err = refused(make)
    assert isinstance(err, cutile.LaunchError) and err.code == "CT6122", err
    assert words in err.message and err.hint


def test_a_bad_default_block_is_refused_at_the_declaration() -> None:
    err = refused(unsafe.raw_kernel, SRC, "axpy", [], block=(64, 64))
    assert err.code == "CT6121" and "past CUDA's limits" in err.message


def test_scalars_take_c_spellings_or_cutile_types() -> None:
    assert unsafe.scalar("n", "unsigned   int").dtype == cutile.core.u32
    assert unsafe.scalar("n", "long long").dtype == cutile.core.i64
    assert unsafe.scalar("h", "__half").dtype == f16
    assert unsafe.scalar("v", i32).dtype == i32 and unsafe.scalar("v", i32).ctype == "i32"
    assert unsafe.scalar("b", "bool").size == 1 and unsafe.read("p").size == 8
    assert repr(axpy) == ("<cutile.unsafe.raw_kernel axpy(`a` (float), `x` (read f32), "
                          "`y` (write f32), `n` (int))>")
    assert unsafe.atomic("c", i32).exclusive and not unsafe.read("x").exclusive


# -- arguments ---------------------------------------------------------------------------


def test_arguments_bind_by_position_and_by_name() -> None:
    x, y = tensors()
    values = raw_args.bind("axpy", axpy.params, (2.0, x), {"n": 64, "y": y})
    assert values == (2.0, x, y, 64)


@pytest.mark.parametrize(("args", "kwargs", "code", "words"), [
    ((2.0, "X", "Y", 64, 5), {}, "CT6104", "takes 4 arguments"),
    ((2.0, "X", "Y"), {"m": 1}, "CT6104", "has no parameter `m`"),
    ((2.0, "X", "Y", 64), {"a": 1.0}, "CT6104", "given twice"),
    ((2.0, "X"), {}, "CT6104", "missing `y`, `n`"),
    (("X", "X", "Y", 64), {}, "CT6101", "`a` (float) of raw kernel `axpy` is a scalar"),
    ((2.0, np.ones(4, np.float32), "Y", 64), {}, "CT6101", "takes a Tensor or a Partition"),
    ((2.0, "I", "Y", 64), {}, "CT6102", "takes `f32` elements, got a `i32` tensor"),
    ((2.0, "X", "Y", 64.0), {}, "CT6102", "takes an int, got float"),
    ((2.0, "X", "Y", True), {}, "CT6102", "takes an int, got bool"),
    ((2.0, "X", "Y", 2**31), {}, "CT6102", "does not fit in `i32`"),
    ((True, "X", "Y", 64), {}, "CT6102", "takes a number, got bool"),
    ((1e39, "X", "Y", 64), {}, "CT6102", "overflows `f32`"),
])
def test_an_argument_unlike_its_declaration_is_refused(args: tuple[Any, ...],
                                                       kwargs: dict[str, Any], code: str,
                                                       words: str) -> None:
    x, y = tensors()
    ints = api.zeros([64], i32)
    given = tuple({"X": x, "Y": y, "I": ints}.get(a, a) if isinstance(a, str) else a
                  for a in args)
    err = refused(axpy, *given, grid=1, **kwargs)
    assert isinstance(err, cutile.LaunchError) and err.code == code, err
    assert words in err.message, err.message
    assert err.kernel == "axpy"
    np.testing.assert_array_equal(x.to_numpy(), tensors()[0].to_numpy())  # nothing moved


def test_numpy_scalars_and_an_int_for_a_float_are_taken() -> None:
    x, y = tensors()
    values = raw_args.bind("axpy", axpy.params, (np.float32(1.5), x, y, np.int64(7)), {})
    assert values[0] == 1.5 and values[3] == 7
    assert raw_args.bind("axpy", axpy.params, (3, x, y, 7), {})[0] == 3


# -- launch shapes -----------------------------------------------------------------------


@pytest.mark.parametrize(("launch", "code", "words"), [
    ({}, "CT6121", "needs `grid=`"),
    ({"grid": -1}, "CT6121", "1 to 3 ints >= 0"),
    ({"grid": (1, 2, 3, 4)}, "CT6121", "1 to 3 ints >= 0"),
    ({"grid": 2.0}, "CT6121", "1 to 3 ints"),
    ({"grid": 1, "block": 0}, "CT6121", "ints >= 1"),
    ({"grid": 1, "block": (1024, 2)}, "CT6121", "past CUDA's limits"),
    ({"grid": 1, "block": (1, 1, 65)}, "CT6121", "past CUDA's limits"),
    ({"grid": (1, 65536)}, "CT6109", "past CUDA's limits"),
    ({"grid": 2**31}, "CT6109", "past CUDA's limits"),
    ({"grid": 1, "shared_mem": -1}, "CT6121", "byte count"),
    ({"grid": 1, "shared_mem": True}, "CT6121", "byte count"),
])
def test_a_launch_shape_past_cudas_limits_is_refused(launch: dict[str, Any], code: str,
                                                     words: str) -> None:
    x, y = tensors()
    err = refused(axpy, 2.0, x, y, 64, **launch)
    assert err.code == code and words in err.message, err


def test_a_kernel_with_no_block_size_is_refused() -> None:
    k = unsafe.raw_kernel(SRC, "axpy", axpy.params)
    x, y = tensors()
    err = refused(k, 2.0, x, y, 64, grid=1)
    assert err.code == "CT6121" and "no block size" in err.message
    assert refused(k, 2.0, x, y, 64, grid=1, block=(16, 16)).code == "CT6120"  # accepted


# -- ownership ---------------------------------------------------------------------------


def test_one_tensor_written_and_read_by_one_launch_is_ct5005() -> None:
    _, y = tensors()
    err = refused(axpy, 2.0, y, y, 64, grid=1)
    assert isinstance(err, cutile.BorrowError) and err.code == "CT5005"
    assert "as both `x` (read f32) and `y` (write f32)" in err.message
    assert err.kernel == "axpy" and err.tensor == "y" and err.op_id is not None
    assert y.to_numpy().shape == (64,)  # refused before anything was held


def test_an_atomic_tensor_is_exclusive_and_reads_share() -> None:
    both = unsafe.raw_kernel(SRC, "k", [unsafe.atomic("a", i32), unsafe.atomic("b", i32),
                                        unsafe.read("c", i32), unsafe.read("d", i32)], block=32)
    counts, other = api.zeros([8], i32), api.zeros([8], i32)
    err = refused(both, counts, counts, other, other, grid=1)
    assert err.code == "CT5005" and "may update atomically" in err.message
    # one tensor read twice is two shared borrows: the host accepts it (and then says a
    # raw kernel needs a GPU)
    assert refused(both, counts, api.zeros([8], i32), other, other, grid=1).code == "CT6120"


def test_overlapping_views_are_ct5006_and_disjoint_views_are_not() -> None:
    x, _ = tensors()
    err = refused(axpy, 2.0, x[0:40], x[30:64], 64, grid=1)
    assert err.code == "CT5006"
    assert "tensor arguments: 0 = `x` (read f32), 1 = `y` (write f32)" in err.__notes__
    assert refused(axpy, 2.0, x[0:32], x[32:64], 32, grid=1).code == "CT6120"


def test_a_tensor_a_pending_tile_op_holds_cannot_be_passed() -> None:
    x, y = tensors()
    z = api.zeros([64], f32).partition([16])
    op = add(z, x, y)  # built, not run: it holds z, x and y
    err = refused(axpy, 2.0, api.zeros([64], f32), x, 64, grid=1)
    assert err.code == "CT5001" and "`add`" in err.message
    z, x, y = op.sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), x.to_numpy() + y.to_numpy())


def test_on_the_interpreter_a_raw_launch_is_ct6120_and_leaves_tensors_usable() -> None:
    x, y = tensors()
    expected = x.to_numpy() + y.to_numpy()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        err = refused(axpy, 2.0, x, y, 64, grid=1)
        gc.collect()
    assert isinstance(err, cutile.LaunchError) and err.code == "CT6120"
    assert "runs only on a GPU" in err.message and "CPU interpreter" in err.message
    assert err.hint and "@cutile.entry" in err.hint
    assert not [w for w in seen if issubclass(w.category, cutile.OpNeverRunWarning)]
    # every tensor is back: a tile kernel takes them at once
    z, x, y = add(api.zeros([64], f32).partition([16]), x, y).sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), expected, rtol=1e-6)
    assert refused(axpy, 2.0, x, y, 64, grid=0).code == "CT6120"  # an empty grid too


# -- the parameter buffer ----------------------------------------------------------------


def test_arguments_are_packed_at_their_offsets() -> None:
    params = [unsafe.scalar("c", "int8_t"), unsafe.write("p", f32),
              unsafe.scalar("h", "__half"), unsafe.scalar("d", "double"),
              unsafe.scalar("u", "uint32_t"), unsafe.scalar("b", "bool")]
    p = api.zeros([4], f32)
    layout = raw_args.natural_layout(params)
    buf, ptrs = raw_args.pack(params, layout, (-3, p, 1.5, -2.25, 2**32 - 1, True))
    raw = bytes(buf)
    assert struct.unpack_from("<b", raw, layout.offsets[0])[0] == -3
    assert struct.unpack_from("<Q", raw, layout.offsets[1])[0] == p.address
    assert struct.unpack_from("<e", raw, layout.offsets[2])[0] == 1.5
    assert struct.unpack_from("<d", raw, layout.offsets[3])[0] == -2.25
    assert struct.unpack_from("<I", raw, layout.offsets[4])[0] == 2**32 - 1
    assert struct.unpack_from("<?", raw, layout.offsets[5])[0] is True
    base = ctypes.addressof(buf)
    assert [ptrs[i] - base for i in range(len(params))] == list(layout.offsets)
