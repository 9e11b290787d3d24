"""One regression per known class of unsound acceptance (issue 6, classes 1-8, and the new
ones the fuzzer found): each kernel below was once accepted by the checker and then raced,
faulted, or failed with an untyped exception on the interpreter. A correct system rejects
it, refuses the launch with a typed error, or runs it safely under the race detector;
`assert_sound` accepts any of those and nothing else. Classes 9-11 (reading a kernel) are in
`test_one_reading.py` and `tests/frontend/test_check_finds_compile_errors.py`."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

import cutile
from cutile import api
from cutile.core import (
    Atomic,
    Const,
    Mut,
    Tensor,
    atomic_add,
    block_id,
    cdiv,
    f32,
    full,
    i8,
    i32,
    i64,
    load_tile_like,
    num_blocks,
    num_tiles,
    u8,
    u32,
)
from cutile.core import arange as iota

from .harness import assert_sound, outcome
from .known.loop_entry import sub_loop


def part(n: int, tile: int) -> api.Partition:  # type: ignore[name-defined]
    return api.zeros([n], i32).partition([tile])


def arange(n: int) -> object:
    return api.from_numpy(np.arange(n, dtype=np.int32))


# -- 1. call arguments by keyword --------------------------------------------------------


@cutile.entry
def like_by_keyword(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [8]]):
    z.store(load_tile_like(src=x, like=z))


@cutile.entry
def like_unknown_keyword(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    z.store(load_tile_like(x, z, pad="zero"))


@cutile.entry
def store_unknown_keyword(z: Mut[Tensor[i32, [4]]]):
    b = block_id(0)
    z.store(full((4,), b + 1, i32), idx=(b + 1,))


def test_1_load_tile_like_by_keyword_keeps_its_bounds_check() -> None:
    # x has 2 tiles of 4, the grid has 4 blocks: positionally this launch is refused
    assert_sound(like_by_keyword, lambda: ((part(16, 4), arange(8)), {}))


def test_1_unknown_keyword_is_a_typed_error() -> None:
    assert_sound(like_unknown_keyword, lambda: ((part(16, 4), arange(16)), {}))


def test_1_unknown_store_keyword_is_rejected() -> None:
    # `idx=` is not a parameter of `store`: Python would raise TypeError; the kernel must
    # not silently store the own tile instead of tile b + 1
    what, _ = outcome(store_unknown_keyword, lambda: ((part(16, 4),), {}))
    assert what == "rejected" or what.startswith("refused"), what


# -- 2. `z.shape` of a `Mut`, `num_tiles(z, axis, shape)` --------------------------------


@cutile.entry
def mut_shape_index(z: Mut[Tensor[i32, [4]]]):
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=(b * z.shape[0] // 4,))


@cutile.entry
def num_tiles_foreign_shape(z: Mut[Tensor[i32, [4]]]):
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=(num_tiles(z, 0, (2,)) - 1 - b,))


def test_2_mut_shape_is_one_thing() -> None:
    assert_sound(mut_shape_index, lambda: ((part(16, 4),), {}))


def test_2_num_tiles_with_a_shape() -> None:
    assert_sound(num_tiles_foreign_shape, lambda: ((part(16, 4),), {}))


# -- 3. 32-bit wraparound ----------------------------------------------------------------


@cutile.entry
def wrap_literal(z: Mut[Tensor[i32, [4]]]):
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=((b * 2**30) // 2**30,))


@cutile.entry
def wrap_const(z: Mut[Tensor[i32, [4]]], C: Const[int]):
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=(b + C - C,))


@cutile.entry
def wrap_scalar(z: Mut[Tensor[i32, [4]]], s: i32):
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=(b * s // s,))


def test_3_wraparound_of_a_literal_product() -> None:
    assert_sound(wrap_literal, lambda: ((part(16, 4),), {}))


def test_3_a_const_beyond_i32() -> None:
    assert_sound(wrap_const, lambda: ((part(16, 4),), {"C": 2**32}))


def test_3_a_runtime_scalar_near_2_31() -> None:
    assert_sound(wrap_scalar, lambda: ((part(16, 4), 2**30), {}))


@cutile.entry
def wrap_i64_multiple(z: Mut[Tensor[i32, [4]]], s: i64):
    # b * 2**32 + 5 truncates to 5 on every block: injective only over unbounded integers
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=(b * s + 5,))


@cutile.entry
def wrap_i64_cancels(z: Mut[Tensor[i32, [4]]], s: i64):
    # b + s - s wraps in 64 bits for s near 2**63 and still truncates to b: accepted
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=(b + s - s,))


def test_3_an_i64_index_is_its_value_modulo_2_32() -> None:
    assert_sound(wrap_i64_multiple, lambda: ((part(16, 4), 2**32), {}))
    assert_sound(wrap_i64_cancels, lambda: ((part(16, 4), 2**63 - 1), {}))
    wrap_i64_cancels.check()  # the sum may wrap; the index is the exact b all the same
    what, _ = outcome(wrap_i64_cancels, lambda: ((part(16, 4), 2**63 - 1), {}))
    assert what == "ran", what


@cutile.entry
def loop_from_wrapping_product(z: Mut[Tensor[i32, [8]]], a: i32, b: i32, n: i32):
    # the loop starts at the device's i32 product: 46341 * 46341 wraps to -2147479015, so
    # `0 <= a * b` over the integers does not keep the sub-tile stores in the block's tile
    p = z.partition_mut((4,))
    for j in range(a * b, n):
        p.store(full((4,), j + 1, i32), (j,))


@cutile.entry
def loop_from_i64(z: Mut[Tensor[i32, [8]]], s: i64, n: i32):
    # the i32 loop counter truncates an i64 start: 2**32 - 1 starts at -1
    p = z.partition_mut((4,))
    for j in range(s, n):
        p.store(full((4,), j + 1, i32), (j,))


def test_3_a_loop_start_that_wraps() -> None:
    assert_sound(loop_from_wrapping_product, lambda: ((part(32, 8), 46341, 46341, 2), {}))
    assert_sound(loop_from_wrapping_product, lambda: ((part(32, 8), 1, 1, 2), {}))
    assert_sound(loop_from_i64, lambda: ((part(32, 8), 2**32 - 1, 2), {}))
    assert_sound(loop_from_i64, lambda: ((part(32, 8), 0, 2), {}))


# -- 4. persistent loop through an alias or a device function ----------------------------


@cutile.device
def walk(o, v):
    for idx in o.iter_indices():
        o.store(v, index=idx)


@cutile.entry
def persistent_alias(z: Mut[Tensor[i32, [4, 4]]]):
    lin = block_id(0) + num_blocks(0) * block_id(1)
    w = z
    for idx in w.iter_indices():
        w.store(full((4, 4), lin + 1, i32), index=idx)


@cutile.entry
def persistent_in_device(z: Mut[Tensor[i32, [4, 4]]]):
    lin = block_id(0) + num_blocks(0) * block_id(1)
    walk(z, full((4, 4), lin + 1, i32))


def test_4_persistent_loop_through_an_alias() -> None:
    assert_sound(persistent_alias, lambda: ((api.zeros([8, 8], i32).partition([4, 4]),), {}))


def test_4_persistent_loop_in_a_device_function() -> None:
    assert_sound(persistent_in_device,
                 lambda: ((api.zeros([8, 8], i32).partition([4, 4]),), {}))


# -- 5. a device function called twice ---------------------------------------------------


@cutile.device
def get(src, i):
    return src.load_tile((4,), (i,))


@cutile.entry
def device_called_twice(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    a = get(x, block_id(0) + 1)  # needs grid(0) + 1 <= tiles of x
    c = get(x, block_id(0))  # needs grid(0) <= tiles of x
    z.store(a + c)


def test_5_each_call_site_keeps_its_obligations() -> None:
    assert_sound(device_called_twice, lambda: ((part(16, 4), arange(16)), {}))


# -- 6. two loops at the same byte offset of two files -----------------------------------


def test_6_loops_at_one_offset_in_two_files() -> None:
    here = Path(__file__).parent / "known"
    offsets = []
    for name, var in (("loop_entry.py", "i"), ("loop_helper.py", "j")):
        text = (here / name).read_text()
        m = re.search(rf"^ +for ({var}) in", text, re.M)
        assert m is not None
        offsets.append(len(text[: m.start(1)].encode()))
    assert offsets[0] == offsets[1], f"the fixture lost its alignment: {offsets}"
    assert_sound(sub_loop, lambda: ((part(16, 4),), {}))


# -- 7. persistent launches with more blocks than tiles, or no tiles ---------------------


@cutile.entry
def persistent_with_own_load(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    t = load_tile_like(x, z)  # the block's "own" position is its block id
    for idx in z.iter_indices():
        z.store(t, index=idx)


def test_7_more_blocks_than_tiles() -> None:
    assert_sound(persistent_with_own_load,
                 lambda: ((part(16, 4).persistent(8), arange(16)), {}))


def test_7_zero_tiles() -> None:
    assert_sound(persistent_with_own_load, lambda: ((part(0, 4).persistent(), arange(0)), {}))


# -- 8. `a, b = z, z` --------------------------------------------------------------------


@cutile.entry
def pair_of_one_mut(z: Mut[Tensor[i32, [4]]]):
    b = block_id(0)
    a, c = z, z
    t = a.load()
    c.store(t + b + 1, index=(num_tiles(c, 0) - 1 - b,))


def test_8_two_live_names_for_one_mut() -> None:
    # docs/design.md §3 rule 3: `a, c = z, z` moves `z` twice; here `c` writes the tile that
    # another block read through `a`
    assert_sound(pair_of_one_mut, lambda: ((part(16, 4),), {}))


# -- new classes found by the fuzzer -----------------------------------------------------


@cutile.entry
def own_load_then_reversed_store(z: Mut[Tensor[i32, [4]]]):
    b = block_id(0)
    t = z.load()
    z.store(t + b + 1, index=(num_tiles(z, 0) - 1 - b,))


@cutile.entry
def ragged_sub_tile(z: Mut[Tensor[i32, [8]]]):
    p = z.partition_mut((4,))
    p.store(full((4,), block_id(0) + 1, i32), (1,))


@cutile.entry
def index_divides_by_zero(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    b = block_id(0)
    t = x.load_tile((4,), (b % b,))
    z.store(t)


def test_new_own_tile_load_races_with_a_permuted_store() -> None:
    # each map alone is fine; block b reads tile b while block n-1-b writes it
    assert_sound(own_load_then_reversed_store, lambda: ((part(16, 4),), {}))


def test_new_sub_tile_past_a_ragged_end() -> None:
    # 12 elements in tiles of 8: the last block's second sub-tile (elements 12..15) is
    # inside its own tile but outside the (4,)-partition's index space
    assert_sound(ragged_sub_tile, lambda: ((part(12, 8),), {}))


def test_new_index_that_divides_by_zero() -> None:
    assert_sound(index_divides_by_zero, lambda: ((part(16, 4), arange(16)), {}))


# -- a `for` over a range with a run-time step --------------------------------------------


@cutile.entry
def loop_with_scalar_step(z: Mut[Tensor[i32, [8]]], s: i32):
    # Tile IR's `for` requires a positive step: a step of 0 or less was undefined
    # behaviour on the device (the interpreter's `for` stopped with a fault), and on a
    # loop compiled as `j += s while j < 2` the sub-tile index would leave the own tile
    p = z.partition_mut((4,))
    for j in range(0, 2, s):
        p.store(full((4,), j + 1, i32), (j,))


@cutile.entry
def own_tile_loop_with_i64_step(z: Mut[Tensor[i32, [4]]], s: i64):
    # the i64 step 2**32 runs as the i32 step 0
    for j in range(0, 2, s):
        z.store(full((4,), j + 1, i32))


@cutile.entry
def loop_with_carried_step(z: Mut[Tensor[i32, [8]]], s: i32):
    # the step changes round the `while`: not known before the loop, so a device check
    p = z.partition_mut((4,))
    t = s
    k = 0
    while k < 2:
        for j in range(0, 2, t):
            p.store(full((4,), j + 1, i32), (j,))
        t = t - 1
        k += 1


def test_new_loop_step_that_is_not_positive() -> None:
    # The checker owns the goal (obligation `loop-step-positive`): a launch-known step is
    # checked at launch, against the i32 value the loop runs with.
    for s in (-1, 0, -2**31):
        what, detail = outcome(loop_with_scalar_step, lambda s=s: ((part(32, 8), s), {}))
        assert what == "refused CT6200", (s, what)
        assert "the step of `range(0, 2, s)` is positive" in detail, detail
    assert_sound(loop_with_scalar_step, lambda: ((part(32, 8), 1), {}))
    what, _ = outcome(loop_with_scalar_step, lambda: ((part(32, 8), 1), {}))
    assert what == "ran", what
    # 2**32 runs as the step 0; 2**32 + 1 would run as 1, but a step that does not fit
    # the 32-bit counter is refused like a bound that does not fit
    for s in (2**32, 2**32 + 1):
        what, _ = outcome(own_tile_loop_with_i64_step, lambda s=s: ((part(16, 4), s), {}))
        assert what == "refused CT6200", (s, what)
    what, _ = outcome(own_tile_loop_with_i64_step, lambda: ((part(16, 4), 3), {}))
    assert what == "ran", what
    # A step known only on the device: the lowering emits the check the checker named.
    kinds = {o.kind: o.discharged for o in loop_with_carried_step.check_report()}
    assert kinds["loop-step-positive"] == "device", kinds
    what, _ = outcome(loop_with_carried_step, lambda: ((part(32, 8), 1), {}))
    assert what == "device-check", what
    what, _ = outcome(loop_with_carried_step, lambda: ((part(32, 8), 3), {}))
    assert what == "ran", what


# -- a `for` counter that passes 2^31 - 1 --------------------------------------------------


@cutile.entry
def loop_counter_near_the_top(z: Mut[Tensor[i32, [16]]], x: Tensor[i32, [-1]], lo: i32,
                              hi: i32, s: i32):
    # The checker takes `j` in [lo, hi); the H200 stepped a 32-bit counter past 2^31 - 1,
    # where it wrapped to a negative `j` still below `hi`, so `j - lo` left the tensor.
    acc = full((16,), 0, i32)
    for j in range(lo, hi, s):
        acc += x.load_tile((16,), (j - lo,))
    z.store(acc)


def test_new_loop_counter_that_wraps() -> None:
    top = 2**31
    args = (part(16, 16), arange(64), top - 17, top - 16, 2**30 + 1)
    what, detail = outcome(loop_counter_near_the_top, lambda: (args, {}))
    assert what == "ran", (what, detail)     # once, over tile 0 (the lowering counts in i64)
    z = loop_counter_near_the_top(*args).sync()[0]
    assert z.unpartition().to_numpy().tolist() == list(range(16))


# -- integers narrower than 32 bits, unsigned, or of a type the checker does not know ------
# (an adversarial review, 2026-12-01). The checker read every value it did not follow as a
# 32-bit integer and cancelled `(w + 200) + 100 - w` to 300; the device computes a `u8` in
# 8 bits (44). Now every operation with such an operand is a value the checker does not
# follow either, so indices built from them are checked on the device or not proved.


@cutile.entry
def u8_cancelled(z: Mut[Tensor[i32, [4]]], s: u8):
    w = max(min(s + 0, 100), 0)
    c = (w + 200) + 100 - w            # u8 on the device: 44, not 300
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=(min(b, num_blocks(0) + c - 301),))


@cutile.entry
def i8_merged(z: Mut[Tensor[i32, [4]]], t: i8):
    v = t
    if t > 0:
        v = t + 1                      # the merge of two i8 values is an i8
    c = (v + 100) + 100 - v            # i8 on the device: -56, not 200
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=(min(b, num_blocks(0) + c - 201),))


@cutile.entry
def i8_folded(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], s: i8):
    # `s * 0` folded to the constant 0 and lost its type: + 100 + 100 wraps in i8 to -56
    z.store(x.load_tile((16,), ((s * 0 + 100) + 100 + block_id(0),)))


@cutile.entry
def i8_tile_value(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]], y: Tensor[i8, [-1]]):
    w = max(min(y.load_tile((1,), (0,)).item(), 10), 0)
    c = (w + 100) + 100 - w            # i8 on the device: -56, not 200
    z.store(x.load_tile((4,), (min(block_id(0), c - 1 + num_blocks(0) - 200),)))


@cutile.entry
def u32_difference(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]], s: u32):
    w = s + 0
    e = (w - 1) - w                    # u32 on the device: 2**32 - 1, not -1
    z.store(x.load_tile((4,), (block_id(0) + (e // 2 + 1),)))


@cutile.entry
def int_of_i64(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]], s: i64):
    d = max(min(int(s), 0), -10)       # int() is the value in i32: 2**32 - 5 is -5
    z.store(x.load_tile((4,), (block_id(0) + d,)))


def test_new_narrow_integers_in_an_index() -> None:
    # stores whose index the narrow value moves: not proved
    for k in (u8_cancelled, i8_merged):
        what, detail = outcome(k, lambda: ((part(4 * 300, 4), 0), {}))
        assert what == "rejected", (k.name, what, detail)
    # loads: the bound is checked on the device, where the value is what the device made
    xs = api.from_numpy(np.arange(16 * 300, dtype=np.float32))
    what, _ = outcome(i8_folded, lambda: ((api.zeros([16], f32).partition([16]), xs, 5), {}))
    assert what == "device-check", what
    y = api.from_numpy(np.array([3], np.int8))
    what, _ = outcome(i8_tile_value, lambda: ((part(4 * 8, 4), arange(4 * 8), y), {}))
    assert what == "device-check", what
    what, _ = outcome(u32_difference, lambda: ((part(4 * 8, 4), arange(4 * 8), 7), {}))
    assert what == "device-check", what
    for k in (i8_folded, i8_tile_value, u32_difference):
        assert any(o.discharged == "device" for o in k.check_report()), k.name
    # int() of an i64 that does not fit i32: refused at launch
    what, _ = outcome(int_of_i64, lambda: ((part(4 * 30, 4), arange(4 * 120), 2**32 - 5), {}))
    assert what == "refused CT6200", what
    assert_sound(int_of_i64, lambda: ((part(4 * 30, 4), arange(4 * 120), 3), {}))


@cutile.entry
def i8_clamp_plus_block(z: Mut[Tensor[i32, [4]]], s: i8):
    b = block_id(0)
    # `b` is an i32 on the device: the i8 clamp is promoted, and the sum is exact
    z.store(full((4,), b + 1, i32), index=(b + max(min(s, 0), -3),))


@cutile.entry
def i8_clamp_plus_constant(z: Mut[Tensor[i32, [4]]], s: i8):
    c = max(min(s, 100), 0) + 100      # an i8 sum (a constant takes its partner's type)
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=(min(b, num_blocks(0) + c - 201),))


@cutile.entry
def i8_plus_named_extent(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, ["S"]], s: i8,
                         S: Const[int]):
    c = x.shape[0] + s                 # S is folded: an i8 sum, 100 + 100 is -56
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=(min(b, num_blocks(0) + c - S - s - 1),))


@cutile.entry
def i8_plus_tile_count(z: Mut[Tensor[i32, [32]]], s: i8):
    c = num_tiles(z, 0) + s            # 8 + s, folded: an i8 sum, 8 + 127 is -121
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=(min(b, num_blocks(0) + c - s - 9),))


def test_narrow_values_promoted_by_a_32_bit_device_value_are_followed() -> None:
    # An operation with a block id, a loop variable or an i32/i64 scalar is computed in
    # 32 bits or more, so a narrow operand enters with its value; the bound is a launch
    # predicate, and a clamp that moves the store off the grid is refused at launch.
    assert i8_clamp_plus_block.check().ok
    for s in (0, 1, 127):
        assert outcome(i8_clamp_plus_block, lambda s=s: ((part(4 * 8, 4), s), {}))[0] == "ran"
    for s in (-1, -3, -128):
        what, _ = outcome(i8_clamp_plus_block, lambda s=s: ((part(4 * 8, 4), s), {}))
        assert what == "refused CT6200", (s, what)
    # with a constant, or an extent the compiler folds (a `Const`'s), the sum is narrow
    for k, args in ((i8_clamp_plus_constant, (part(4 * 8, 4), 100)),
                    (i8_plus_named_extent, (part(4 * 8, 4), arange(100), 100)),
                    (i8_plus_tile_count, (part(4 * 8, 4), 127))):
        kw = {"S": 100} if k is i8_plus_named_extent else {}
        what, detail = outcome(k, lambda args=args, kw=kw: (args, kw))
        assert what == "rejected", (k.name, what, detail)


# -- the two readers of one kernel (an adversarial review, 2026-12-01) ----------------------
# The compiler folds a constant `if` test (`if 0:`, `if C == 2:`) to one branch, which the
# checker did not: a name bound to different tensors on the two branches was followed as
# the first branch's, and the compiler kept the other (refused as CT1010 since). The checker
# now folds the test itself (`KernelFacts.folded_branches`, the lowering follows): the
# tensor of the live branch is followed exactly, in each specialization. And the checker
# stopped following device calls 32 deep while the compiler inlined them 33 deep.


@cutile.entry
def outputs_chosen_by_a_constant_test(z1: Mut[Tensor[i32, [4]]], z2: Mut[Tensor[i32, [4]]]):
    b = block_id(0)
    z2.store(full((4,), b + 1, i32), index=(num_tiles(z2, 0) - 1 - b,))
    if 0:
        w = z1
    else:
        w = z2
    w.store(w.load() + 1)


@cutile.entry
def partitions_chosen_by_a_const(z: Mut[Tensor[i32, [8]]], S: Const[int]):
    if S == 2:
        p = z.partition_mut((2,))
    else:
        p = z.partition_mut((S,))
    for j in range(4):
        p.store(full((S,), j + 1, i32), (j,))


def test_new_tensors_chosen_by_a_constant_test() -> None:
    # `w` is `z2` (the live branch of `if 0:`), stored through a second map: the race
    what, detail = outcome(outputs_chosen_by_a_constant_test,
                           lambda: ((part(16, 4), part(16, 4)), {}))
    assert what == "rejected" and "CT2010" in detail and "CT1010" not in detail, detail
    # `p` is followed on each branch: 4 sub-tiles of 2, or 8 // S of S (a launch check)
    assert partitions_chosen_by_a_const.check().ok
    what, detail = outcome(partitions_chosen_by_a_const, lambda: ((part(32, 8),), {"S": 4}))
    assert what == "refused CT6200" and "4 <= 8 // S" in detail, (what, detail)
    what, detail = outcome(partitions_chosen_by_a_const, lambda: ((part(32, 8),), {"S": 2}))
    assert what == "ran", (what, detail)


def test_new_device_calls_nested_past_the_checkers_depth(tmp_path: Path) -> None:
    import importlib.util

    chain = ["import cutile", "from cutile.core import *", "",
             "@cutile.device", "def f0(z):",
             "    z.store_unchecked(full((4,), block_id(0) + 1, i32), (0,))"]
    for i in range(1, 33):
        chain += ["", "@cutile.device", f"def f{i}(z):", f"    f{i - 1}(z)"]
    chain += ["", "@cutile.entry", "def k(z: Mut[Tensor[i32, [4]]]):", "    f32(z)", ""]
    src = tmp_path / "deep_chain.py"
    src.write_text("\n".join(chain))
    spec = importlib.util.spec_from_file_location("deep_chain", src)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    what, detail = outcome(mod.k, lambda: ((part(16, 4),), {}))
    assert what == "rejected" and "CT1012" in detail, (what, detail)


# A `while` whose test folds to False on the `Const`s compiles no iteration, which the checker
# did not see: a name bound to an input before the loop and to an output inside it was
# followed as the output after the loop (a join keeps a `Mut`), while the compiler kept the
# input. In safe code the output's extent proved a reversed store index that the input's
# extent put out of bounds; inside `unsafe`, an atomic wrote the shared input.


@cutile.entry
def extent_after_a_folded_while(z: Mut[Tensor[i32, [4]]], w: Mut[Tensor[i32, [4]]],
                                x: Tensor[i32, [-1]], C: Const[int]):
    b = x
    while C == 1:
        b = z
        break
    w.store(full((4,), block_id(0) + 1, i32), index=(cdiv(b.shape[0], 4) - 1 - block_id(0),))


@cutile.entry
def atomic_after_a_folded_while(a: Atomic[Tensor[i32, [-1]]], x: Tensor[i32, [-1]],
                                C: Const[int]):
    b = x
    for _ in range(C):
        b = a
    with cutile.unsafe():  # an atomic on a raw value: the author vouches, never for an input
        atomic_add(b, iota(4, i32), 1)


def test_new_tensors_chosen_by_a_folded_loop() -> None:
    what, detail = outcome(extent_after_a_folded_while,
                           lambda: ((part(8, 4), part(8, 4), arange(16)), {"C": 0}))
    assert what == "rejected" and "CT1010" in detail, (what, detail)
    assert "before this loop and another after an iteration" in detail
    what, detail = outcome(atomic_after_a_folded_while,
                           lambda: ((api.zeros([4], i32), arange(4)), {"C": 0, "grid": (2,)}))
    assert what == "rejected" and "CT1010" in detail, (what, detail)
