"""`a @ b` / `matmul`, `expand_dims` and its subscript spellings (`t[None]`, `t[:, None]`,
`t[..., None]`), and `.item()` (issue 8 item 5) through the public API on the active backend
(the CPU interpreter without a GPU): numerics against numpy float64 (or exact integer)
references on random inputs with ragged last tiles, typed errors for misuse, and an sm_90
cubin from tileiras for each kernel."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    arange,
    block_id,
    expand_dims,
    f16,
    f32,
    f64,
    full,
    i8,
    i32,
    load_tile_like,
    matmul,
    num_tiles,
    ones,
    zeros,
)

rng = np.random.default_rng(8052)


def _lower_error(kernel: Any, **consts: Any) -> cutile.KernelCheckError:
    with pytest.raises(cutile.KernelCheckError) as info:
        kernel.lowered(kernel.specialization(consts))
    return info.value


# ------------------------------------------------------------------------------ a @ b


@cutile.entry
def gemm_at(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f16, [-1, -1]],
            y: Tensor[f16, [-1, -1]], BM: Const[int], BN: Const[int], BK: Const[int]):
    acc = zeros((BM, BN), f32)
    for k in range(num_tiles(x, 1, (BM, BK))):
        a = x.load_tile((BM, BK), (block_id(0), k))
        b = y.load_tile((BK, BN), (k, block_id(1)))
        acc = acc + (a @ b).astype(f32)          # f16 @ f16 is f16, as in cuTile Python
    z.store(acc)


@cutile.entry
def one_product(z: Mut[Tensor[f16, ["BM", "BN"]]], x: Tensor[f16, [-1, 64]],
                y: Tensor[f16, [64, -1]], BM: Const[int], BN: Const[int]):
    z.store(matmul(x.load_tile((BM, 64), (block_id(0), 0)),
                   y.load_tile((64, BN), (0, block_id(1)))))


@cutile.entry
def product_f32(z: Mut[Tensor[f32, ["BM", 32]]], x: Tensor[f32, [-1, 32]],
                y: Tensor[f32, [32, 32]], BM: Const[int]):
    z.store(x.load_tile((BM, 32), (block_id(0), 0)) @ y.load_tile((32, 32), (0, 0)))


@cutile.entry
def product_f64(z: Mut[Tensor[f64, [16, 16]]], x: Tensor[f64, [16, 8]], y: Tensor[f64, [8, 16]]):
    z.store(x.load_tile((16, 8), (0, 0)) @ y.load_tile((8, 16), (0, 0)))


@cutile.entry
def product_i8(z: Mut[Tensor[i32, ["BM", 16]]], x: Tensor[i8, [-1, 32]], y: Tensor[i8, [32, 16]],
               BM: Const[int]):
    p = x.load_tile((BM, 32), (block_id(0), 0)) @ y.load_tile((32, 16), (0, 0))
    z.store(p.astype(i32))                       # i8 @ i8 is i8: the i32 sum wraps to 8 bits


@cutile.entry
def mixed_types(z: Mut[Tensor[f32, [16, 16]]], x: Tensor[i8, [16, 32]], y: Tensor[f16, [32, 16]]):
    z.store((x.load_tile((16, 32), (0, 0)) @ y.load_tile((32, 16), (0, 0))).astype(f32))


@cutile.entry
def vectors(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [32]], m: Tensor[f32, [32, 16]],
            w: Tensor[f32, [16, 32]]):
    v = x.load_tile((32,), (0,))
    a = m.load_tile((32, 16), (0, 0))
    row = v @ a                                   # (32,) @ (32, 16) -> (16,)
    col = w.load_tile((16, 32), (0, 0)) @ v       # (16, 32) @ (32,) -> (16,)
    dot = matmul(v, v)                            # (32,) @ (32,) -> a scalar
    z.store(row + col + dot)


@cutile.entry
def batched(z: Mut[Tensor[f32, [2, 16, 16]]], x: Tensor[f16, [2, 16, 32]],
            y: Tensor[f16, [32, 16]]):
    p = x.load_tile((2, 16, 32), (0, 0, 0)) @ y.load_tile((32, 16), (0, 0))  # batch broadcast
    z.store(p.astype(f32))


def test_a_tiled_gemm_written_with_the_operator_ragged_on_every_axis() -> None:
    m, n, k = 90, 70, 56                          # none a multiple of its tile
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    z = api.full([m, n], np.nan, f32).partition([32, 32])
    z, _, _ = gemm_at(z, api.from_numpy(a), api.from_numpy(b), BK=16).sync()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=1e-2, atol=1e-2)


def test_an_f16_product_is_the_f32_sum_rounded_once_to_f16() -> None:
    m, n = 40, 24
    a = rng.standard_normal((m, 64)).astype(np.float16)
    b = rng.standard_normal((64, n)).astype(np.float16)
    z = api.full([m, n], np.nan, f16).partition([16, 16])
    z, _, _ = one_product(z, api.from_numpy(a), api.from_numpy(b)).sync()
    ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16).astype(np.float64)
    got = z.unpartition().to_numpy().astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-3)   # one f16 ulp, near-ties


def test_f32_operands_go_through_tf32_like_mma() -> None:
    m = 48
    a = rng.standard_normal((m, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)
    z = api.full([m, 32], np.nan, f32).partition([16, 32])
    z, _, _ = product_f32(z, api.from_numpy(a), api.from_numpy(b)).sync()
    ref = a.astype(np.float64) @ b
    err = np.abs(z.unpartition().to_numpy() - ref).max()
    assert 0 < err < 1e-2                         # tf32 products: not f32-exact, close


def test_f64_products_are_f64() -> None:
    a = rng.standard_normal((16, 8))
    b = rng.standard_normal((8, 16))
    z = api.full([16, 16], np.nan, f64).partition([16, 16])
    z, _, _ = product_f64(z, api.from_numpy(a), api.from_numpy(b)).sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), a @ b, rtol=1e-13, atol=1e-13)


def test_an_i8_product_accumulates_in_i32_and_wraps_to_i8() -> None:
    m = 24
    a = rng.integers(-128, 128, (m, 32)).astype(np.int8)
    b = rng.integers(-128, 128, (32, 16)).astype(np.int8)
    z = api.zeros([m, 16], i32).partition([16, 16])
    z, _, _ = product_i8(z, api.from_numpy(a), api.from_numpy(b)).sync()
    exact = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(z.unpartition().to_numpy(), exact.astype(np.int8))
    assert np.abs(exact).max() > 127              # the wrap is exercised


def test_mixed_operands_promote_before_the_product() -> None:
    a = rng.integers(-3, 4, (16, 32)).astype(np.int8)
    b = rng.standard_normal((32, 16)).astype(np.float16)
    z = api.zeros([16, 16], f32).partition([16, 16])
    z, _, _ = mixed_types(z, api.from_numpy(a), api.from_numpy(b)).sync()
    ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=2e-3, atol=2e-3)


def test_one_dimensional_operands_are_a_row_and_a_column() -> None:
    v = rng.standard_normal(32).astype(np.float32)
    m = rng.standard_normal((32, 16)).astype(np.float32)
    w = rng.standard_normal((16, 32)).astype(np.float32)
    z = api.zeros([16], f32).partition([16])
    z, *_ = vectors(z, api.from_numpy(v), api.from_numpy(m), api.from_numpy(w)).sync()
    v64 = v.astype(np.float64)
    ref = v64 @ m + w @ v64 + v64 @ v64
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=1e-2, atol=3e-2)


def test_a_batch_of_products_broadcasts_the_right_operand() -> None:
    a = rng.standard_normal((2, 16, 32)).astype(np.float16)
    b = rng.standard_normal((32, 16)).astype(np.float16)
    z = api.zeros([2, 16, 16], f32).partition([2, 16, 16])
    z, _, _ = batched(z, api.from_numpy(a), api.from_numpy(b)).sync()
    ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=2e-3, atol=2e-3)


@cutile.entry
def bad_product(z: Mut[Tensor[i32, [16, 16]]], x: Tensor[i32, [16, 16]], K: Const[int],
                WHICH: Const[int]):
    t = x.load_tile((16, 16), (0, 0))
    if WHICH == 0:
        z.store(t @ t)                                         # i32: no tensor-core type
    elif WHICH == 1:
        z.store((t.astype(f16) @ ones((K, 16), f16)).astype(i32))  # inner extents differ
    elif WHICH == 2:
        z.store(t.astype(f16) @ 2.0)                           # a number
    else:
        z.store(zeros((2, 2, 16, 16), f16) @ t.astype(f16))    # rank 4


@pytest.mark.parametrize(("which", "needle"), [
    (0, "`@` does not multiply `i32` tiles"),
    (1, "shapes do not multiply: [16, 16] @ [32, 16]"),
    (2, "`@` multiplies two tiles"),
    (3, "`@` takes tiles of rank 1 to 3"),
])
def test_products_that_cannot_be_formed_are_ct3004(which: int, needle: str) -> None:
    err = _lower_error(bad_product, K=32, WHICH=which)
    assert err.codes == ["CT3004"] and needle in str(err), str(err)


# ------------------------------------------------------------------------------ new axes


@cutile.entry
def outer(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]],
          BM: Const[int], BN: Const[int]):
    u = x.load_tile((BM,), (block_id(0),))
    v = y.load_tile((BN,), (block_id(1),))
    z.store(u[:, None] * v[None, :] + expand_dims(u, 1) - u[..., None] + v[None])


@cutile.entry
def axes3(z: Mut[Tensor[f32, [4, 8, 2]]], x: Tensor[f32, [8]]):
    t = x.load_tile((8,), (0,))
    a = t[None, :, None]                          # (1, 8, 1)
    b = expand_dims(expand_dims(arange(4, f32), -1), -1)   # (4, 1, 1)
    c = expand_dims(arange(2, f32), 0)[None]      # (1, 1, 2)
    z.store(a * 100.0 + b * 10.0 + c)


def test_new_axes_make_an_outer_product_with_ragged_tiles() -> None:
    m, n = 45, 30
    xs = rng.standard_normal(m).astype(np.float32)
    ys = rng.standard_normal(n).astype(np.float32)
    z = api.full([m, n], np.nan, f32).partition([16, 16])
    z, _, _ = outer(z, api.from_numpy(xs), api.from_numpy(ys)).sync()
    x64, y64 = xs.astype(np.float64), ys.astype(np.float64)
    ref = np.outer(x64, y64) + y64[None, :]
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=1e-6, atol=1e-6)


def test_new_axes_go_where_the_subscript_puts_them() -> None:
    xs = rng.standard_normal(8).astype(np.float32)
    z = api.full([4, 8, 2], np.nan, f32).partition([4, 8, 2])
    z, _ = axes3(z, api.from_numpy(xs)).sync()
    ref = (xs.astype(np.float64)[None, :, None] * 100 + np.arange(4.0)[:, None, None] * 10
           + np.arange(2.0)[None, None, :])
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=1e-6)


def test_a_subscript_of_nones_is_written_as_expand_dims_calls() -> None:
    def k(z: Mut[Tensor[f32, [1, 8, 1, 1]]]):
        t = zeros((8,), f32)
        z.store(t[None, ..., None, None])

    doc = json.loads(cutile.entry(k).kast_json())  # type: ignore[arg-type]
    call = doc["functions"][0]["body"][1]["value"]["args"][0]
    axes = []
    while call.get("kind") == "call":
        assert call["func"] == "expand_dims"
        axes.append(call["args"][1]["value"])
        call = call["args"][0]
    assert call == {**call, "kind": "name", "id": "t"}
    assert axes[::-1] == [0, -1, -2]            # innermost first: front, then from the end


@cutile.entry
def ellipsis_and_bounds(z: Mut[Tensor[f32, [8]]]):
    z.store(z.load()[..., 0:8])


@cutile.entry
def two_ellipses(z: Mut[Tensor[f32, [8]]]):
    z.store(z.load()[..., None, ...])


@pytest.mark.parametrize(("kernel", "needle"), [
    (two_ellipses, "a subscript can have one `...`"),
    (ellipsis_and_bounds, "`...` is accepted only among `None` and `:`"),
])
def test_ellipses_other_than_in_new_axes_are_ct0001(kernel: Any, needle: str) -> None:
    # Slices with bounds and indices are tile slicing (tests/kernels/test_tile_slicing.py).
    with pytest.raises(cutile.KernelCheckError) as info:
        kernel.check()
    assert info.value.codes == ["CT0001"] and needle in str(info.value), str(info.value)


@cutile.entry
def far_axis(z: Mut[Tensor[f32, [8, 1]]], A: Const[int]):
    z.store(expand_dims(z.load().reshape((8,)), A))


def test_an_axis_past_the_result_is_ct3046() -> None:
    for axis in (2, -3):
        err = _lower_error(far_axis, A=axis)
        assert err.codes == ["CT3046"] and f"axis {axis} out of range" in str(err)


# ------------------------------------------------------------------------------ .item()


@cutile.entry
def items(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    t = load_tile_like(x, z)
    first = x.load_tile((1,), (0,)).item()                      # shape (1,) -> ()
    total = t.sum(axis=0, keepdims=True).item()                 # shape (1,) -> ()
    corner = t.reshape((1, B))[:, None].sum(axis=2).reshape((1, 1)).item() * 0.0
    z.store(t * first + full((B,), total, f32) + corner + t.sum().item())


def test_item_makes_a_scalar_of_one_element_tiles() -> None:
    n = 100
    xs = rng.standard_normal(n).astype(np.float32)
    z = api.full([n], np.nan, f32).partition([32])
    z, _ = items(z, api.from_numpy(xs)).sync()
    x64 = xs.astype(np.float64)
    sums = np.concatenate([np.full(32, x64[i:i + 32].sum()) for i in range(0, n, 32)])[:n]
    np.testing.assert_allclose(z.unpartition().to_numpy(), x64 * x64[0] + 2 * sums,
                               rtol=1e-5, atol=1e-5)


@cutile.entry
def item_of_many(z: Mut[Tensor[f32, [16]]]):
    z.store(full((16,), z.load().item(), f32))


def test_item_of_a_tile_of_several_elements_is_ct3054() -> None:
    err = _lower_error(item_of_many)
    assert err.codes == ["CT3054"]
    assert "`.item()` needs a tile of one element, not one of shape [16]" in str(err)


# ------------------------------------------------------------------------------ assembly

ASSEMBLED = [
    (gemm_at, {"BM": 32, "BN": 32, "BK": 16}),
    (one_product, {"BM": 16, "BN": 16}),
    (product_f32, {"BM": 16}),
    (product_f64, {}),
    (product_i8, {"BM": 16}),
    (mixed_types, {}),
    (vectors, {}),
    (batched, {}),
    (outer, {"BM": 16, "BN": 16}),
    (axes3, {}),
    (items, {"B": 32}),
]


@pytest.mark.tileiras
@pytest.mark.parametrize(("kernel", "consts"), ASSEMBLED,
                         ids=[k.__name__ for k, _ in ASSEMBLED])
def test_each_kernel_assembles_for_sm_90(kernel: Any, consts: dict[str, int]) -> None:
    assert kernel.compile(target="sm_90", **consts).cubin[:4] == b"\x7fELF"
