"""The builder's region and memory helpers produce ops with the right types and shape."""

from __future__ import annotations

import pytest

from cutile import dtypes as dt
from cutile.ir import Block, Builder, TileType
from cutile.ir.types import I32, TOKEN, PointerType, scalar


def cur(b: Builder) -> Block:
    assert b.block is not None
    return b.block


def new() -> Builder:
    b = Builder()
    b.entry("k", [scalar(PointerType(dt.f32)), I32])
    return b


def test_for_carries_values_and_adds_continue_when_nothing_is_carried() -> None:
    b = new()
    zero = b.scalar_const(0, dt.i32)
    acc = b.constant(0.0, TileType((8,), dt.f32))
    with b.for_(zero, zero, zero, [acc]) as loop:
        assert loop.iv.type == zero.type and [a.type for a in loop.iter_args] == [acc.type]
        b.continue_(loop.iter_args)
    assert [r.type for r in loop.results] == [acc.type]
    with b.for_(zero, zero, zero, unsigned_cmp=True) as bare:
        pass
    assert bare.op.attrs == {"unsignedCmp": True}
    assert [op.name for op in bare.op.regions[0].ops] == ["continue"]


def test_if_adds_yields_only_without_results() -> None:
    b = new()
    c = b.cmp("cmpi", "equal", b.scalar_const(0, dt.i32), b.scalar_const(0, dt.i32))
    with b.if_(c) as plain:
        pass
    assert [[o.name for o in r.ops] for r in plain.op.regions] == [["yield"], ["yield"]]
    with b.if_(c, [I32]) as valued:
        with valued.then_():
            b.yield_([b.scalar_const(1, dt.i32)])
        with valued.else_():
            b.yield_([b.scalar_const(2, dt.i32)])
    assert [r.type for r in valued.results] == [I32]
    assert [o.name for o in valued.op.regions[1].ops] == ["constant", "yield"]


def test_builder_returns_to_the_outer_block_after_a_region() -> None:
    b = new()
    outer = b.block
    zero = b.scalar_const(0, dt.i32)
    with b.loop([zero], [I32]) as lp:
        assert b.block is lp.op.regions[0]
        b.break_([lp.iter_args[0]])
    assert b.block is outer


@pytest.mark.parametrize("dim", [0, 1])
def test_reduce_removes_the_dimension_and_pairs_arguments(dim: int) -> None:
    b = new()
    x = b.constant(0.0, TileType((8, 16), dt.f32))
    y = b.constant(0, TileType((8, 16), dt.i32))
    with b.reduce([x, y], dim, [0.0, 0]) as r:
        b.yield_([r.args[0], r.args[2]])
    kept = (16,) if dim == 0 else (8,)
    assert [v.type for v in r.results] == [TileType(kept, dt.f32), TileType(kept, dt.i32)]
    assert [str(a.type) for a in r.args] == ["tile<f32>", "tile<f32>", "tile<i32>", "tile<i32>"]
    assert r.op.attrs == {"dim": dim, "identities": (0.0, 0)}


def test_scan_keeps_the_shape() -> None:
    b = new()
    x = b.constant(0.0, TileType((8, 16), dt.f32))
    with b.scan([x], 1, [0.0], reverse=True) as s:
        b.yield_([s.args[0]])
    assert s.results[0].type == x.type and s.op.attrs["reverse"] is True


def test_shape_helpers() -> None:
    b = new()
    a = b.constant(0.0, TileType((4, 16), dt.f32))
    assert b.cat(a, a, 0).type == TileType((8, 16), dt.f32)
    assert b.cat(a, a, 1).type == TileType((4, 32), dt.f32)
    i = b.scalar_const(0, dt.i32)
    assert b.extract(a, [i, i], [2, 8]).type == TileType((2, 8), dt.f32)
    pv = b.make_partition_view(b.make_tensor_view(cur(b).args[0], [64, 64], [64, 1]), [16, 32])
    assert len(b.get_index_space_shape(pv)) == 2


def test_pointer_helpers_record_optional_operands() -> None:
    b = new()
    ptrs = b.broadcast(b.reshape(cur(b).args[0], [1]), [16])
    mask = b.cmp("cmpi", "less_than", b.iota(16, dt.i32), b.iota(16, dt.i32))
    tok = b.make_token()
    value, t = b.load_ptr(ptrs, mask=mask, token=tok)
    assert value.type == TileType((16,), dt.f32) and t.type == TOKEN
    load = cur(b).ops[-1]
    assert (load.attrs["has_mask"], load.attrs["has_padding_value"], load.attrs["has_token"]) == (
        True,
        False,
        True,
    )
    assert load.operands == [ptrs, mask, tok]
    old, _ = b.atomic_rmw(ptrs, value, "addf")
    rmw = cur(b).ops[-1]
    assert old.type == value.type
    assert (rmw.attrs["memory_ordering_semantics"], rmw.attrs["memory_scope"]) == (
        "relaxed",
        "device",
    )
    as_int = b.ptr_to_int(ptrs)
    assert as_int.type == TileType((16,), dt.i64)
    assert b.int_to_ptr(as_int, dt.f16).type == TileType((16,), PointerType(dt.f16))


def test_mma_results_take_the_accumulator_type() -> None:
    b = new()
    a = b.constant(0.0, TileType((64, 16), dt.f16))
    w = b.constant(0.0, TileType((16, 32), dt.f16))
    acc = b.constant(0.0, TileType((64, 32), dt.f32))
    out = b.mmaf(a, w, acc, fast_acc=True)
    assert out.type == acc.type and cur(b).ops[-1].attrs == {"fast_acc": True}
