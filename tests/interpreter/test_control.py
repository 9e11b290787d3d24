"""Control flow (for/if/loop with carried values, continue, break, return), assert,
print_tko, assume, and the errors the interpreter reports."""

from __future__ import annotations

import numpy as np
import pytest

from cutile.interpreter import InterpreterError, Pointer, run
from cutile.ir import Bounded, DivBy, scalar
from cutile.ir.core import Op

from .kit import (
    LOC,
    assert_,
    dt,
    for_loop,
    i32,
    if_op,
    loop,
    new_kernel,
    offset,
    ptr,
    raw,
    store_ptr,
    term,
)


def scalar_out(build, *params, args=()):  # type: ignore[no-untyped-def]
    """Kernel with an i32 output pointer first; build(b, params) -> value to store."""
    b, ps = new_kernel([ptr(dt.i32), *params], "k")
    store_ptr(b, ps[0], build(b, ps[1:]))
    out = np.zeros(1, np.int32)
    run(b.module, "k", (1, 1, 1), [Pointer.to(out), *args])
    return int(out[0])


def test_for_with_carried_values_and_conditional_continue() -> None:
    # sum of odd i in [lo, hi) step 1, skipping via `continue` inside an `if`
    def build(b, ps):  # type: ignore[no-untyped-def]
        lo, hi = ps
        with for_loop(b, lo, hi, i32(b, 1), [i32(b, 0)]) as (iv, (acc,), op):
            odd = b.binary("andi", iv, i32(b, 1))
            is_even = b.cmp("cmpi", "equal", odd, i32(b, 0))
            _, then, other = if_op(b, is_even)
            with b.at(then):
                term(b, "continue", [acc])
            with b.at(other):
                term(b, "yield")
            term(b, "continue", [b.binary("addi", acc, iv)])
        return op.results[0]

    assert scalar_out(build, scalar(dt.i32), scalar(dt.i32), args=(-7, 20)) == sum(
        i for i in range(-7, 20) if i % 2
    )
    assert scalar_out(build, scalar(dt.i32), scalar(dt.i32), args=(5, 5)) == 0


def test_for_unsigned_bounds_and_step() -> None:
    def build(b, ps):  # type: ignore[no-untyped-def]
        (hi,) = ps
        with for_loop(b, i32(b, 0), hi, i32(b, 3), [i32(b, 0)], unsignedCmp=True) as (
            _iv,
            (acc,),
            op,
        ):
            term(b, "continue", [b.binary("addi", acc, i32(b, 1))])
        return op.results[0]

    assert scalar_out(build, scalar(dt.i32), args=(10,)) == 4
    assert scalar_out(build, scalar(dt.i32), args=(0,)) == 0


def test_for_counter_that_would_wrap_is_a_fault() -> None:
    # The H200 steps an i32 counter in 32 bits: 2^31 - 17 + (2^30 + 1) wraps negative,
    # below the bound, and the loop ran four times (tests/kernels/test_loop_step.py).
    # The interpreter does not quietly stop after one: it reports the counter.
    def build(b, ps):  # type: ignore[no-untyped-def]
        lo, hi, st = ps
        with for_loop(b, lo, hi, st, [i32(b, 0)]) as (_iv, (acc,), op):
            term(b, "continue", [b.binary("addi", acc, i32(b, 1))])
        return op.results[0]

    params = (scalar(dt.i32),) * 3
    with pytest.raises(InterpreterError, match="counter passes the top of i32"):
        scalar_out(build, *params, args=(2**31 - 17, 2**31 - 16, 2**30 + 1))
    # the last value plus the step exactly at the top is no wrap
    assert scalar_out(build, *params, args=(2**31 - 17, 2**31 - 16, 16)) == 1
    assert scalar_out(build, *params, args=(0, 2**30, 2**30 - 1)) == 2


def test_if_with_yields() -> None:
    def build(b, ps):  # type: ignore[no-untyped-def]
        (x,) = ps
        neg = b.cmp("cmpi", "less_than", x, i32(b, 0))
        op, then, other = if_op(b, neg, [scalar(dt.i32)])
        with b.at(then):
            term(b, "yield", [b.unary("negi", x)])
        with b.at(other):
            term(b, "yield", [b.binary("muli", x, i32(b, 10))])
        return op.results[0]

    assert scalar_out(build, scalar(dt.i32), args=(-4,)) == 4
    assert scalar_out(build, scalar(dt.i32), args=(4,)) == 40


def test_loop_with_break_collatz() -> None:
    def build(b, ps):  # type: ignore[no-untyped-def]
        (n0,) = ps
        with loop(b, [n0, i32(b, 0)], [scalar(dt.i32)]) as ((n, steps), op):
            done = b.cmp("cmpi", "equal", n, i32(b, 1))
            _, then, other = if_op(b, done)
            with b.at(then):
                term(b, "break", [steps])
            with b.at(other):
                term(b, "yield")
            odd = b.cmp("cmpi", "equal", b.binary("andi", n, i32(b, 1)), i32(b, 1))
            nxt = b.select(
                odd,
                b.binary("addi", b.binary("muli", n, i32(b, 3)), i32(b, 1)),
                b.binary("divi", n, i32(b, 2), signedness="signed"),
            )
            term(b, "continue", [nxt, b.binary("addi", steps, i32(b, 1))])
        return op.results[0]

    assert scalar_out(build, scalar(dt.i32), args=(27,)) == 111


def test_return_inside_if_ends_the_block() -> None:
    b, (op_, x) = new_kernel([ptr(dt.i32), scalar(dt.i32)], "early")
    store_ptr(b, op_, i32(b, 1))
    _, then, other = if_op(b, b.cmp("cmpi", "greater_than", x, i32(b, 0)))
    with b.at(then):
        term(b, "return")
    with b.at(other):
        term(b, "yield")
    store_ptr(b, op_, i32(b, 2))
    out = np.zeros(1, np.int32)
    run(b.module, "early", (1, 1, 1), [Pointer.to(out), 5])
    assert out[0] == 1
    run(b.module, "early", (1, 1, 1), [Pointer.to(out), -5])
    assert out[0] == 2


def test_assert_failure_names_message_location_and_block() -> None:
    b, (x,) = new_kernel([scalar(dt.i32)], "chk")
    bx, _, _ = b.block_ids()
    lanes = b.iota(8, dt.i32)
    limit = b.broadcast(b.reshape(b.binary("addi", x, bx), (1,)), (8,))
    assert_(b, b.cmp("cmpi", "less_than", lanes, limit), "lane below limit")
    run(b.module, "chk", (2, 1, 1), [8])
    with pytest.raises(InterpreterError) as info:
        run(b.module, "chk", (3, 1, 1), [5])
    err = info.value
    assert "lane below limit" in str(err)
    assert err.location == str(LOC) and err.block_id == (0, 0, 0)
    assert "(5,)" in str(err)  # the first failing element


def test_print_tko(capsys: pytest.CaptureFixture[str]) -> None:
    b, (x, y) = new_kernel([scalar(dt.i32), scalar(dt.f32)], "pr")
    bx, _, _ = b.block_ids()
    v = b.iota(4, dt.i32)
    raw(b, "print_tko", [bx, x, y, v], [b.make_token().type], str="b%d x=%u y=%.2f v=%d 100%%\n")
    run(b.module, "pr", (2, 1, 1), [-1, 1.5])
    assert capsys.readouterr().out == (
        "b0 x=4294967295 y=1.50 v=[0, 1, 2, 3] 100%\nb1 x=4294967295 y=1.50 v=[0, 1, 2, 3] 100%\n"
    )


def test_assume_is_checked() -> None:
    b, (op_, x) = new_kernel([ptr(dt.i32), scalar(dt.i32)], "as")
    y = b.assume(b.assume(x, DivBy(16)), Bounded(0, 1024))
    store_ptr(b, op_, y)
    out = np.zeros(1, np.int32)
    run(b.module, "as", (1, 1, 1), [Pointer.to(out), 64])
    assert out[0] == 64
    with pytest.raises(InterpreterError, match="multiple of 16"):
        run(b.module, "as", (1, 1, 1), [Pointer.to(out), 65])
    with pytest.raises(InterpreterError, match="above 1024"):
        run(b.module, "as", (1, 1, 1), [Pointer.to(out), 2048])


def test_unsupported_op_is_reported_before_running() -> None:
    b, (op_,) = new_kernel([ptr(dt.i32)], "u")
    store_ptr(b, op_, i32(b, 1))
    b.block.ops.append(Op("no_such_op", [], [], {}, [], LOC))  # type: ignore[union-attr]
    out = np.zeros(1, np.int32)
    with pytest.raises(InterpreterError, match="no_such_op"):
        run(b.module, "u", (1, 1, 1), [Pointer.to(out)])
    assert out[0] == 0


def test_entry_and_argument_errors() -> None:
    b, _ = new_kernel([scalar(dt.i8)], "k")
    with pytest.raises(InterpreterError, match="no function"):
        run(b.module, "missing", (1, 1, 1), [1])
    with pytest.raises(InterpreterError, match="does not fit"):
        run(b.module, "k", (1, 1, 1), [300])
    run(b.module, "k", (1, 1, 1), [255])  # unsigned spelling of -1 is accepted


def test_block_ids_grid_and_constants() -> None:
    b, (op_,) = new_kernel([ptr(dt.i32)], "ids")
    bx, by, bz = b.block_ids()
    gx, gy, gz = b.num_blocks()
    vals = [bx, by, bz, gx, gy, gz]
    lin = b.binary("addi", bx, b.binary("muli", gx, by))
    base = b.binary("muli", lin, i32(b, 6))
    for k, v in enumerate(vals):
        store_ptr(b, offset(b, op_, b.binary("addi", base, i32(b, k))), v)
    out = np.zeros(6 * 6, np.int32)
    run(b.module, "ids", (3, 2, 1), [Pointer.to(out)])
    rows = out.reshape(6, 6)
    for x in range(3):
        for y in range(2):
            assert rows[x + 3 * y].tolist() == [x, y, 0, 3, 2, 1]
