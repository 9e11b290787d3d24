"""cumsum / cumprod (Tile IR `scan`), argmax / argmin (one `reduce` over (value, index)
pairs) and `reduce` with a `@cutile.device` combiner, run on the active backend (the CPU
interpreter without a GPU) against numpy float64 references on random inputs, ragged tiles
included; each kernel also assembles to an sm_90 cubin."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from kernel_source import load_kernel

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    argmax,
    argmin,
    bf16,
    block_id,
    cat,
    cumprod,
    cumsum,
    f16,
    f32,
    i32,
    load_tile_like,
    maximum,
    reduce,
)
from cutile.errors import KernelCheckError

rng = np.random.default_rng(8)


# ---------------------------------------------------------------------------- cumsum, cumprod
@cutile.entry
def row_cumsum(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
               BN: Const[int], REV: Const[bool]):
    z.store(cumsum(load_tile_like(x, z), 1, reverse=REV))


@cutile.entry
def col_cumsum_method(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]],
                      BM: Const[int], BN: Const[int]):
    z.store(load_tile_like(x, z).cumsum(axis=0))


@cutile.entry
def flat_cumsum(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1, -1]], B: Const[int]):
    t = x.load_tile((4, 8), (block_id(0), 0))
    z.store(cumsum(t))                     # no axis: flattened row-major, as numpy


@cutile.entry
def half_cumsum(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f16, [-1]], y: Tensor[bf16, [-1]],
                B: Const[int]):
    z.store(cumsum(load_tile_like(x, z)).astype(f32) + cumsum(load_tile_like(y, z)).astype(f32))


@cutile.entry
def int_scans(s: Mut[Tensor[i32, ["B"]]], p: Mut[Tensor[i32, ["B"]]], c: Mut[Tensor[i32, ["B"]]],
              x: Tensor[i32, [-1]], B: Const[int]):
    t = load_tile_like(x, s)
    s.store(cumsum(t, 0, True))
    p.store(cumprod(t, 0))
    c.store(cumsum(t > 0))                 # booleans count in i32


@cutile.entry
def row_cumprod(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
                BN: Const[int], REV: Const[bool]):
    z.store(load_tile_like(x, z).cumprod(1, REV))


def _run(kernel: Any, outs: list[Any], *args: Any, **consts: Any) -> list[np.ndarray]:
    got = kernel(*outs, *(api.from_numpy(a) for a in args), **consts).sync()
    return [t.unpartition().to_numpy() for t in got[: len(outs)]]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize(("m", "n", "bm", "bn"), [(16, 64, 8, 64), (37, 50, 8, 64)])
def test_cumsum_rows_ragged(reverse: bool, m: int, n: int, bm: int, bn: int) -> None:
    xs = rng.standard_normal((m, n)).astype(np.float32)
    (out,) = _run(row_cumsum, [api.full([m, n], np.nan, f32).partition([bm, bn])], xs,
                  REV=reverse)
    x64 = xs.astype(np.float64)
    ref = np.flip(np.cumsum(np.flip(x64, 1), 1), 1) if reverse else np.cumsum(x64, 1)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_cumsum_columns_as_a_tile_method() -> None:
    xs = rng.standard_normal((40, 24)).astype(np.float32)
    (out,) = _run(col_cumsum_method, [api.zeros([40, 24], f32).partition([32, 8])], xs)
    ref = np.concatenate([np.cumsum(xs[:32].astype(np.float64), 0),
                          np.cumsum(xs[32:].astype(np.float64), 0)])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_cumsum_without_axis_flattens() -> None:
    xs = rng.standard_normal((8, 8)).astype(np.float32)
    (out,) = _run(flat_cumsum, [api.zeros([64], f32).partition([32])], xs)
    ref = np.concatenate([np.cumsum(xs[:4, :8].astype(np.float64)),
                          np.cumsum(xs[4:, :8].astype(np.float64))])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_f16_and_bf16_accumulate_in_their_own_type() -> None:
    # As in cuTile, a scan runs in the tile's element type: the f16 sums are rounded to
    # f16 at each step, so they agree with float64 only to f16 accuracy.
    xs = rng.uniform(0.5, 1.0, 64).astype(np.float16)
    ys = rng.uniform(0.5, 1.0, 64).astype(ml_dtypes.bfloat16)
    (out,) = _run(half_cumsum, [api.zeros([64], f32).partition([32])], xs, ys)
    ref = np.concatenate([np.cumsum(xs[:32].astype(np.float64)) +
                          np.cumsum(ys[:32].astype(np.float64)),
                          np.cumsum(xs[32:].astype(np.float64)) +
                          np.cumsum(ys[32:].astype(np.float64))])
    np.testing.assert_allclose(out, ref, rtol=2e-2)
    assert not np.allclose(out, ref, rtol=1e-6)   # it did round: not computed in f64


def test_integer_cumsum_reverse_cumprod_and_bool_counts() -> None:
    xs = rng.integers(-3, 4, 64).astype(np.int32)
    xs[xs == 0] = 2
    outs = [api.zeros([64], i32).partition([16]) for _ in range(3)]
    s, p, c = _run(int_scans, outs, xs)
    blocks = xs.reshape(4, 16).astype(np.int64)
    np.testing.assert_array_equal(s, np.flip(np.cumsum(np.flip(blocks, 1), 1), 1).ravel())
    np.testing.assert_array_equal(p, np.cumprod(blocks, 1).astype(np.int32).ravel())
    np.testing.assert_array_equal(c, np.cumsum(blocks > 0, 1).ravel())


@pytest.mark.parametrize("reverse", [False, True])
def test_cumprod_rows(reverse: bool) -> None:
    xs = rng.uniform(0.5, 1.5, (16, 32)).astype(np.float32)
    (out,) = _run(row_cumprod, [api.zeros([16, 32], f32).partition([4, 32])], xs, REV=reverse)
    x64 = xs.astype(np.float64)
    ref = np.flip(np.cumprod(np.flip(x64, 1), 1), 1) if reverse else np.cumprod(x64, 1)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


# ---------------------------------------------------------------------------- argmax, argmin
@cutile.entry
def row_argmax(z: Mut[Tensor[i32, ["BM"]]], w: Mut[Tensor[i32, ["BM"]]],
               x: Tensor[f32, [-1, -1]], BM: Const[int], BN: Const[int]):
    z.store(argmax(x.load_tile((BM, BN), (block_id(0), 0), padding="neg_inf"), axis=1))
    w.store(x.load_tile((BM, BN), (block_id(0), 0), padding="pos_inf").argmin(1))


@cutile.entry
def int_arg(z: Mut[Tensor[i32, [8, 1]]], w: Mut[Tensor[i32, [1, 16]]], x: Tensor[i32, [-1, -1]]):
    t = x.load_tile((8, 16), (block_id(0), block_id(1)))
    z.store(argmax(t, 1, keepdims=True))
    w.store(argmin(t, axis=0, keepdims=True))


@cutile.entry
def flat_arg(z: Mut[Tensor[i32, [2]]], x: Tensor[f16, [-1, -1]]):
    t = x.load_tile((8, 16), (block_id(0), 0))
    z.store(cat((argmax(t, keepdims=True).reshape((1,)), argmin(t).reshape((1,))), 0))


def test_argmax_argmin_first_index_on_ties_and_ragged_rows() -> None:
    m, n = 37, 50                                  # 64-column tiles: the tail is padding
    xs = rng.integers(-4, 5, (m, n)).astype(np.float32)  # many ties
    z = api.zeros([m], i32).partition([8])
    w = api.zeros([m], i32).partition([8])
    z, w, _ = row_argmax(z, w, api.from_numpy(xs), BN=64).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.argmax(xs, axis=1))
    np.testing.assert_array_equal(w.unpartition().to_numpy(), np.argmin(xs, axis=1))


def test_argmax_argmin_nan_is_found_first_as_numpy_does() -> None:
    m, n = 16, 32
    xs = rng.standard_normal((m, n)).astype(np.float32)
    xs[3, 7] = xs[3, 20] = np.nan                  # the first NaN wins
    xs[5, 0] = np.nan
    xs[9, 31] = np.nan
    xs[12, :] = np.nan
    xs[14, 4] = np.inf
    xs[14, 9] = -np.inf
    z = api.zeros([m], i32).partition([8])
    w = api.zeros([m], i32).partition([8])
    z, w, _ = row_argmax(z, w, api.from_numpy(xs), BN=32).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.argmax(xs, axis=1))
    np.testing.assert_array_equal(w.unpartition().to_numpy(), np.argmin(xs, axis=1))


def test_arg_reductions_without_axis_index_the_flattened_tile() -> None:
    xs = rng.standard_normal((16, 16)).astype(np.float16)
    xs[3, 5] = xs[6, 2] = 9.0                      # a tie across rows: the first (row-major)
    z = api.zeros([4], i32).partition([2])
    z, _ = flat_arg(z, api.from_numpy(xs)).sync()
    want = [f(xs[r:r + 8].ravel()) for r in (0, 8) for f in (np.argmax, np.argmin)]
    np.testing.assert_array_equal(z.unpartition().to_numpy(), want)


def test_integer_arg_reductions_keep_dims() -> None:
    xs = rng.integers(-3, 3, (16, 32)).astype(np.int32)
    xs[0, :] = np.iinfo(np.int32).min              # all equal: index 0
    xs[1, :] = np.iinfo(np.int32).max
    z = api.zeros([16, 2], i32).partition([8, 1])
    w = api.zeros([2, 32], i32).partition([1, 16])
    z, w, _ = int_arg(z, w, api.from_numpy(xs)).sync()
    tiles = xs.reshape(2, 8, 2, 16).transpose(0, 2, 1, 3)   # [bi, bj, 8, 16]
    np.testing.assert_array_equal(z.unpartition().to_numpy(),
                                  np.argmax(tiles, axis=3).transpose(0, 2, 1).reshape(16, 2))
    np.testing.assert_array_equal(w.unpartition().to_numpy(),
                                  np.argmin(tiles, axis=2).reshape(2, 32))


# ------------------------------------------------------------------------- reduce(x, axis, f, id)
@cutile.device
def absmax(a, b):
    return maximum(abs(a), abs(b))


@cutile.device
def sum_of_squares_step(acc, v):
    return acc + v


@cutile.entry
def custom_rows(z: Mut[Tensor[f32, ["BM"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
                BN: Const[int]):
    t = x.load_tile((BM, BN), (block_id(0), 0))
    z.store(reduce(t, 1, absmax, 0.0))


@cutile.entry
def custom_all(z: Mut[Tensor[f32, [1, 1]]], w: Mut[Tensor[i32, [1]]], x: Tensor[f32, [-1, -1]],
               y: Tensor[i32, [-1]]):
    t = x.load_tile((8, 16), (block_id(0), 0))
    z.store(reduce(t * t, None, sum_of_squares_step, 0.0, keepdims=True))
    w.store(reduce(y.load_tile((32,), (block_id(0),)), 0, combiner=pick_larger,
                   identity=-2147483648))


@cutile.device
def pick_larger(a, b):
    return a if a > b else b                  # `x if c else y` on scalars: a select


def test_reduce_with_a_device_function_combiner() -> None:
    xs = rng.standard_normal((40, 64)).astype(np.float32)
    z = api.zeros([40], f32).partition([8])
    z, _ = custom_rows(z, api.from_numpy(xs), BN=64).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.abs(xs).max(axis=1))


def test_reduce_over_all_axes_keeping_dims_and_with_keywords() -> None:
    xs = rng.standard_normal((16, 16)).astype(np.float32)
    ys = rng.integers(-1000, 1000, 64).astype(np.int32)
    z = api.zeros([2, 1], f32).partition([1, 1])
    w = api.zeros([2], i32).partition([1])
    z, w, _, _ = custom_all(z, w, api.from_numpy(xs), api.from_numpy(ys)).sync()
    ref = (xs.astype(np.float64) ** 2).reshape(2, 8, 16).sum(axis=(1, 2)).reshape(2, 1)
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=1e-5)
    np.testing.assert_array_equal(w.unpartition().to_numpy(), ys.reshape(2, 32).max(axis=1))


def test_the_combiner_is_read_by_the_checker_and_inlined_into_the_reduce_body() -> None:
    doc = custom_rows.document()
    call = next(e for e in _walk(doc) if getattr(e, "func", None) == "reduce")
    comb = call.args[2]
    assert type(comb).__name__ == "CallDevice" and comb.func == "absmax"
    assert [a.type for a in comb.args] == ["none", "none"]
    module = custom_rows.lowered(custom_rows.specialization({"BM": 8, "BN": 64})).module
    reduces = [op for op in module.functions[0].body.walk() if op.name == "reduce"]
    assert len(reduces) == 1
    assert {op.name for op in reduces[0].regions[0].ops} >= {"absf", "maxf", "yield"}


def _walk(doc: Any) -> list[Any]:
    from cutile.lowering.support import _all_exprs

    return [e for fn in doc.functions for e in _all_exprs(fn.body)]


# ---------------------------------------------------------------------------- refusals
def _kernel(body: str, tmp_path: Any, extra: str = "") -> Any:

    return load_kernel(tmp_path, extra + "\n\n@cutile.entry\n"
                       "def k(z: Mut[Tensor[f32, [8]]], x: Tensor[f32, [-1, -1]], n: i32):\n"
                       "    t = x.load_tile((8, 16), (block_id(0), 0))\n"
                       f"    {body}\n")


DEVICE_FNS = '''
@cutile.device
def branchy(a, b):
    m = b
    if a > b:
        m = a
    return m

@cutile.device
def calls_branchy(a, b):
    return branchy(a, b)

@cutile.device
def widens(a, b):
    return (a + b).astype(i32)

@cutile.device
def three(a, b, c):
    return a + b + c

@cutile.device
def nested(a, b):
    return cumsum(a + b)[0]
'''


@pytest.mark.parametrize(("body", "needle"), [
    ("z.store(reduce(t, 1, branchy, 0.0))", "has an `if` statement"),
    ("z.store(reduce(t, 1, calls_branchy, 0.0))", "`branchy` is used as a combiner"),
    ("z.store(reduce(t, 1, three, 0.0))", "takes 3 parameters"),
    ("z.store(reduce(t, 1, lambda a, b: a + b, 0.0))", "takes a `@cutile.device` function"),
    ("z.store(reduce(t, 1, branchy(1.0, 2.0), 0.0))", "takes a `@cutile.device` function"),
    ("z.store(reduce(t, 1, t, 0.0))", "takes a `@cutile.device` function"),
])
def test_a_bad_combiner_is_refused_by_check(body: str, needle: str, tmp_path: Any) -> None:
    k = _kernel(body, tmp_path, DEVICE_FNS)
    with pytest.raises(KernelCheckError) as info:
        k.check()
    assert info.value.codes == ["CT3074"], str(info.value)
    assert needle in str(info.value)


@pytest.mark.parametrize(("body", "code", "needle"), [
    ("z.store(reduce(t, 1, widens, 0.0))", "CT3074", "returns a tile<i32>"),
    ("z.store(reduce(t, 1, nested, 0.0))", "CT3074", "not straight-line"),
    ("z.store(reduce(t, 1, three2, n))", "CT3074", "compile-time number"),
    ("z.store(reduce(t, 2, three2, 0.0))", "CT3046", "axis 2 out of range"),
    ("z.store(cumsum(t, 1, n > 0)[:, 0])", "CT3034", "`reverse` must be a compile-time bool"),
    ("z.store(argmax(t, axis=-3).astype(f32))", "CT3046", "axis -3 out of range"),
])
def test_misuse_is_a_typed_error_when_compiling(body: str, code: str, needle: str,
                                                 tmp_path: Any) -> None:
    extra = DEVICE_FNS + "\n@cutile.device\ndef three2(a, b):\n    return a + b\n"
    k = _kernel(body, tmp_path, extra)
    k.check()                                     # the checker and the linter accept it
    with pytest.raises(KernelCheckError) as info:
        k.lowered(k.specialization({}))
    assert info.value.codes == [code], str(info.value)
    assert needle in str(info.value)


# ---------------------------------------------------------------------------- sm_90 cubins
ASSEMBLED: list[tuple[Any, dict[str, Any]]] = [
    (row_cumsum, {"BM": 8, "BN": 64, "REV": True}),
    (col_cumsum_method, {"BM": 32, "BN": 8}),
    (flat_cumsum, {"B": 32}),
    (half_cumsum, {"B": 32}),
    (int_scans, {"B": 16}),
    (row_cumprod, {"BM": 4, "BN": 32, "REV": False}),
    (row_argmax, {"BM": 8, "BN": 64}),
    (int_arg, {}),
    (flat_arg, {}),
    (custom_rows, {"BM": 8, "BN": 64}),
    (custom_all, {}),
]


@pytest.mark.tileiras
@pytest.mark.parametrize(("kernel", "consts"), ASSEMBLED, ids=lambda v: getattr(v, "name", ""))
def test_each_kernel_assembles_for_sm_90(kernel: Any, consts: dict[str, Any]) -> None:
    assert kernel.compile(target="sm_90", **consts).cubin[:4] == b"\x7fELF"
