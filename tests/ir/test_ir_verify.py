"""The verifier accepts well-formed kernels and names what is wrong with broken ones."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sample_kernels as sk

from cutile import dtypes as dt
from cutile.errors import InternalCompilerError
from cutile.ir import Block, Builder, DivBy, Location, Module, TileType, Value
from cutile.ir.types import I32, PointerType, TensorViewType, scalar
from cutile.ir.verify import VerificationError, check_module, verify


@pytest.mark.parametrize("name", sorted(sk.REPRESENTATIVE))
def test_representative_kernels_verify(name: str) -> None:
    verify(sk.REPRESENTATIVE[name]())


def test_every_op_case_verifies() -> None:
    for case in sk.OP_CASES:
        assert check_module(case.module()) == [], case.name


def build(body: Callable[[Builder, list[Value]], object], params: tuple = ()) -> Module:  # type: ignore[type-arg]
    b = Builder()
    fn = b.entry("k", list(params), loc=Location("/src/k.py", 1, 0, "k"))
    with b.location(Location("/src/k.py", 2, 4, "k")):
        body(b, fn.params)
        b.return_()
    return b.module


def cur(b: Builder) -> Block:
    assert b.block is not None
    return b.block


def problems(module: Module) -> list[str]:
    return [p.message for p in check_module(module)]


def f32(b: Builder, *shape: int) -> Value:
    return b.constant(1.0, TileType(shape or (16,), dt.f32))


def i32(b: Builder, *shape: int) -> Value:
    return b.constant(1, TileType(shape or (16,), dt.i32))


BROKEN: dict[str, tuple[Callable[[Builder, list[Value]], object], str]] = {
    "non_power_of_two": (lambda b, p: b.constant(1.0, TileType((3,), dt.f32)), "powers of two"),
    "too_many_elements": (
        lambda b, p: b.constant(1.0, TileType((1 << 13, 1 << 12), dt.f32)),
        "at most 16777216 elements",
    ),
    "partition_tile_not_power_of_two": (
        lambda b, p: b.make_partition_view(b.make_tensor_view(p[0], [64], [1]), [48]),
        "powers of two",
    ),
    "float_op_on_ints": (
        lambda b, p: b.op("addf", [i32(b), i32(b)], [TileType((16,), dt.i32)]),
        "expects float tiles",
    ),
    "mismatched_operands": (
        lambda b, p: b.op("addf", [f32(b, 16), f32(b, 32)], [TileType((16,), dt.f32)]),
        "types differ",
    ),
    "cmp_result_not_i1": (
        lambda b, p: b.op(
            "cmpf", [f32(b), f32(b)], [TileType((16,), dt.f32)], {"comparison_predicate": "equal"}
        ),
        "i1 tile",
    ),
    "select_shape": (
        lambda b, p: b.op(
            "select",
            [b.cmp("cmpf", "equal", f32(b, 8), f32(b, 8)), f32(b), f32(b)],
            [TileType((16,), dt.f32)],
        ),
        "condition must be an i1 tile of the value shape",
    ),
    "mma_shapes": (
        lambda b, p: b.mmaf(f32(b, 16, 8), f32(b, 16, 8), f32(b, 16, 8)),
        "do not multiply",
    ),
    "mma_types": (
        lambda b, p: b.mmaf(
            b.constant(1.0, TileType((16, 16), dt.bf16)),
            b.constant(1.0, TileType((16, 16), dt.bf16)),
            b.constant(1.0, TileType((16, 16), dt.f16)),
        ),
        "mmaf does not take bf16 x bf16 -> f16",
    ),
    "bad_broadcast": (lambda b, p: b.broadcast(f32(b, 2, 16), [8, 16]), "cannot broadcast"),
    "bad_reshape": (
        lambda b, p: b.op("reshape", [f32(b, 16)], [TileType((4, 8), dt.f32)]),
        "cannot reshape",
    ),
    "bad_permutation": (
        lambda b, p: b.op(
            "permute", [f32(b, 4, 8)], [TileType((8, 4), dt.f32)], {"permutation": (0, 0)}
        ),
        "not a permutation",
    ),
    "narrowing_exti": (
        lambda b, p: b.convert("exti", i32(b), dt.i16, signedness="signed"),
        "cannot go from i32 to i16",
    ),
    "bitcast_width": (lambda b, p: b.convert("bitcast", f32(b), dt.i16), "equal-width"),
    "unknown_op": (lambda b, p: b.op("frobnicate", [], []), "unknown op `frobnicate`"),
    "weak_atomic": (
        lambda b, p: b.atomic_rmw(
            b.broadcast(b.reshape(p[0], [1]), [16]),
            f32(b),
            "addf",
            memory_ordering_semantics="weak",
        ),
        "cannot be `weak`",
    ),
    "view_index_count": (
        lambda b, p: b.load_view(
            b.make_partition_view(b.make_tensor_view(p[0], [64, 64], [64, 1]), [16, 16]),
            [b.scalar_const(0, dt.i32)],
            None,
        ),
        "1 indices for a rank-2 view",
    ),
    "store_wrong_tile": (
        lambda b, p: b.store_view(
            f32(b, 32),
            b.make_partition_view(b.make_tensor_view(p[0], [64], [1]), [16]),
            [b.scalar_const(0, dt.i32)],
            None,
        ),
        "stores tile<32xf32> into tiles of tile<16xf32>",
    ),
    "tensor_view_dynamic_count": (
        lambda b, p: b.op(
            "make_tensor_view",
            [p[0]],
            [TensorViewType(dt.f32, (None,), (1,))],
            {"num_dynamic_shape": 0},
        ),
        "do not match the `?`s",
    ),
    "assume_bad_divisor": (lambda b, p: b.assume(p[0], DivBy(0)), "power-of-two divisor"),
    # tileiras takes only powers of two (it refused div_by<12>)
    "assume_divisor_not_pow2": (lambda b, p: b.assume(p[0], DivBy(12)),
                                "power-of-two divisor, got 12"),
    "ftoi_rounding": (  # tileiras takes only nearest_int_to_zero (it rejects `zero`)
        lambda b, p: b.convert("ftoi", f32(b, 16), dt.i32, signedness="signed",
                               rounding_mode="zero"),
        "ftoi rounds only toward zero (nearest_int_to_zero)",
    ),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_ir_is_reported(name: str) -> None:
    body, expected = BROKEN[name]
    found = problems(build(body, (scalar(PointerType(dt.f32)),)))
    assert any(expected in p for p in found), found


def test_entry_parameters_must_be_rank_0() -> None:
    found = problems(build(lambda b, p: None, (TileType((16,), dt.f32),)))
    assert any("entry parameters must be rank-0 tiles" in p for p in found)


def test_entry_must_return() -> None:
    b = Builder()
    b.entry("k", [])
    b.make_token()
    assert any("must end with `return`" in p for p in problems(b.module))


def test_use_outside_its_region_does_not_dominate() -> None:
    def body(b: Builder, p: list[Value]) -> None:
        zero = b.scalar_const(0, dt.i32)
        with b.for_(zero, zero, zero) as loop:
            inner = b.binary("addi", loop.iv, zero)
        b.binary("addi", inner, zero)

    assert any("does not dominate" in p for p in problems(build(body)))


def test_use_before_definition() -> None:
    b = Builder()
    b.entry("k", [])
    later = Value(TileType((), dt.i32))
    b.op("addi", [later, later], [later.type])
    b.op("constant", [], [later.type])
    cur(b).ops[-1].results = [later]  # defined after its use
    b.return_()
    assert any("does not dominate" in p for p in problems(b.module))


def test_value_defined_twice() -> None:
    b = Builder()
    b.entry("k", [])
    x = b.scalar_const(1, dt.i32)
    b.op("constant", [], [x.type]).results = [x]
    b.return_()
    assert any("defined twice" in p for p in problems(b.module))


def test_for_body_must_continue_with_carried_types() -> None:
    def missing(b: Builder, p: list[Value]) -> None:
        zero = b.scalar_const(0, dt.i32)
        with b.for_(zero, zero, zero, [f32(b)]):
            pass

    def wrong(b: Builder, p: list[Value]) -> None:
        zero = b.scalar_const(0, dt.i32)
        with b.for_(zero, zero, zero, [f32(b)]):
            b.continue_([zero])

    assert any("must end with `continue`" in p for p in problems(build(missing)))
    assert any("`continue` passes (tile<i32>)" in p for p in problems(build(wrong)))


def test_if_with_results_needs_matching_yields() -> None:
    def body(b: Builder, p: list[Value]) -> None:
        c = b.cmp("cmpi", "equal", b.scalar_const(0, dt.i32), b.scalar_const(1, dt.i32))
        with b.if_(c, [TileType((16,), dt.f32)]) as branch:
            with branch.then_():
                b.yield_([i32(b)])
            with branch.else_():
                b.yield_([f32(b)])

    assert any("`yield` passes (tile<16xi32>)" in p for p in problems(build(body)))


def test_break_out_of_for_is_refused_and_outside_loops_too() -> None:
    def in_for(b: Builder, p: list[Value]) -> None:
        zero = b.scalar_const(0, dt.i32)
        c = b.cmp("cmpi", "equal", zero, zero)
        with b.for_(zero, zero, zero):
            with b.if_(c) as branch, branch.then_():
                b.break_()
            b.continue_()

    def outside(b: Builder, p: list[Value]) -> None:
        zero = b.scalar_const(0, dt.i32)
        with b.if_(b.cmp("cmpi", "equal", zero, zero)) as branch, branch.then_():
            b.break_()

    assert any("cannot `break`" in p for p in problems(build(in_for)))
    assert any("`break` outside a loop" in p for p in problems(build(outside)))


def test_loop_exits_are_typed() -> None:
    def body(b: Builder, p: list[Value]) -> None:
        zero = b.scalar_const(0, dt.i32)
        with b.loop([zero], [I32]):
            b.break_([f32(b)])

    assert any("`break` passes (tile<16xf32>)" in p for p in problems(build(body)))


def test_reduce_body_must_be_pure_and_yield_scalars() -> None:
    def impure(b: Builder, p: list[Value]) -> None:
        with b.reduce([f32(b, 8, 16)], 1, [0.0]) as r:
            b.print_("x", [])
            b.yield_([b.binary("addf", *r.args)])

    def wrong_yield(b: Builder, p: list[Value]) -> None:
        with b.reduce([f32(b, 8, 16)], 1, [0.0]):
            b.yield_([f32(b)])

    assert any("`print_tko` is not pure" in p for p in problems(build(impure)))
    assert any("must `yield` (tile<f32>)" in p for p in problems(build(wrong_yield)))


def test_terminator_must_be_last_and_return_only_at_top() -> None:
    def body(b: Builder, p: list[Value]) -> None:
        zero = b.scalar_const(0, dt.i32)
        with b.if_(b.cmp("cmpi", "equal", zero, zero)) as branch, branch.then_():
            b.return_()
            b.yield_()

    found = problems(build(body))
    assert any("must be the last op" in p for p in found)
    assert any("only allowed at the top" in p for p in found)


def test_verification_error_lists_problems_with_locations() -> None:
    module = build(lambda b, p: b.constant(1.0, TileType((3,), dt.f32)))
    with pytest.raises(VerificationError) as err:
        verify(module)
    e = err.value
    assert isinstance(e, InternalCompilerError) and e.code == "CT9002"
    assert e.problems and "/src/k.py:2:5" in str(e)


@pytest.mark.parametrize(
    ("hints", "expected"),
    [
        ({"sm_90": {"ocupancy": 2}}, "unknown optimization hint `ocupancy`"),
        ({"hopper": {"occupancy": 2}}, "hint target `hopper`"),
        ({"default": {"occupancy": True}}, "`occupancy` takes an integer"),
    ],
)
def test_entry_hints_are_checked(hints: dict[str, dict[str, int]], expected: str) -> None:
    module = build(lambda b, p: None)
    module.functions[0].hints = hints
    assert any(expected in p for p in problems(module))


def test_known_hints_pass() -> None:
    module = build(lambda b, p: None)
    module.functions[0].hints = {"sm_90": {"num_worker_warps_per_cta": 2}, "default": {}}
    assert problems(module) == []


def test_memory_op_hints_are_checked() -> None:
    def body(b: Builder, p: list[Value]) -> None:
        pv = b.make_partition_view(b.make_tensor_view(p[0], [64], [1]), [16])
        b.load_view(pv, [b.scalar_const(0, dt.i32)], None,
                    optimization_hints={"sm_90": {"allow_tma": 1, "latncy": 2}})  # fmt: skip

    found = problems(build(body, (scalar(PointerType(dt.f32)),)))
    assert any("`allow_tma` takes a bool" in p for p in found)
    assert any("unknown optimization hint `latncy`" in p for p in found)


def test_integer_views_pad_with_zero_only() -> None:
    # tileiras refuses a float padding on integer elements (it can only take `zero`)
    def body(pad: str | None) -> Callable[[Builder, list[Value]], object]:
        return lambda b, p: b.make_partition_view(b.make_tensor_view(p[0], [64], [1]), [16],
                                                  padding=pad)

    params = (scalar(PointerType(dt.i32)),)
    assert problems(build(body("zero"), params)) == []
    assert problems(build(body(None), params)) == []
    found = problems(build(body("nan"), params))
    assert any("padding `nan` needs float elements" in p for p in found), found
