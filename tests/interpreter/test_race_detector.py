"""The race and bounds detector on hand-built Tile IR (`run(..., check=True)`): every kind of
conflict is reported with its tensor, element, blocks and line, and race-free patterns
(own tiles, shared inputs, atomics) are not."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cutile import CutileError, RaceError
from cutile.interpreter import InterpreterError, Pointer, TensorArg, run
from cutile.ir import Builder, Value, scalar

from .kit import (
    TOKEN,
    atomic_cas,
    atomic_rmw,
    const,
    dt,
    i32,
    load,
    load_ptr,
    new_kernel,
    offset,
    ptr,
    ptr_tile,
    raw,
    splat,
    store,
    store_ptr,
    view,
)

N, T = 16, 4  # a 16-element f32 tensor in tiles of 4: 4 blocks own one tile each
Z = [TensorArg("z"), TensorArg("x")]


def div(b: Builder, v: Value, k: int) -> Value:
    return b.binary("divi", v, i32(b, k), signedness="signed")


def rem(b: Builder, v: Value, k: int) -> Value:
    return b.binary("remi", v, i32(b, k), signedness="signed")


def add(b: Builder, v: Value, k: int) -> Value:
    return b.binary("addi", v, i32(b, k))


def tiles_kernel(
    body: Callable[[Builder, Value, Value, Value], None], name: str = "k"
) -> Builder:
    """k(z, x): `body(b, z_view, x_view, block_x)` with both 16-element views in tiles of 4."""
    b, (zp, xp) = new_kernel([ptr(dt.f32), ptr(dt.f32)], name)
    bx, _, _ = b.block_ids()
    body(b, view(b, zp, [N], [1], [T]), view(b, xp, [N], [1], [T]), bx)
    return b


def launch(b: Builder, grid: tuple[int, int, int] = (4, 1, 1), *, check: bool = True,
           z: np.ndarray | None = None) -> np.ndarray:
    z = np.zeros(N, np.float32) if z is None else z
    x = np.arange(N, dtype=np.float32) + 1
    run(b.module, "k", grid, [Pointer.to(z), Pointer.to(x)], check=check, tensors=Z)
    return z


# -- write-write -----------------------------------------------------------------------------


def test_two_blocks_storing_one_tile_is_a_write_write_race() -> None:
    # block x stores x's tile at tile x // 2: blocks 0 and 1 both write tile 0
    b = tiles_kernel(lambda b, pz, px, bx: store(b, load(b, px, [bx]), pz, [div(b, bx, 2)]))
    with pytest.raises(RaceError) as info:
        launch(b)
    err = info.value
    assert (err.kind, err.code, err.tensor, err.element) == ("write-write", "CT6911", "z", (0,))
    assert err.blocks == ((0, 0, 0), (1, 0, 0))
    assert err.location == "kernel.py:42" and err.kernel == "k" and err.op == "store_view_tko"
    assert str(err).startswith(
        "[CT6911] k: blocks (0, 0, 0) and (1, 0, 0) both write z[0] (kernel.py:42)")
    assert "help:" in str(err) and err.hint
    assert isinstance(err, InterpreterError) and isinstance(err, CutileError)


def test_the_racing_write_is_stopped_before_it_lands() -> None:
    b = tiles_kernel(lambda b, pz, px, bx: store(b, load(b, px, [bx]), pz, [div(b, bx, 2)]))
    z = np.zeros(N, np.float32)
    with pytest.raises(RaceError):
        launch(b, z=z)
    assert z[:4].tolist() == [1, 2, 3, 4]  # block 0's tile, not block 1's
    # Without the detector the same kernel runs, and the last block wins silently.
    z = launch(b, check=False)
    assert z[:4].tolist() == [5, 6, 7, 8]


def test_elements_are_named_by_their_multi_index_in_the_argument() -> None:
    # z is (8, 32) in (4, 16) tiles; every block stores tile (1, 1), which starts at z[4, 16]
    b, (zp,) = new_kernel([ptr(dt.i32)], "k")
    pz = view(b, zp, [8, 32], [32, 1], [4, 16])
    store(b, const(b, 7, dt.i32, (4, 16)), pz, [i32(b, 1), i32(b, 1)])
    z = np.zeros((8, 32), np.int32)
    with pytest.raises(RaceError) as info:
        run(b.module, "k", (1, 2, 1), [Pointer.to(z)], check=True,
            tensors=[TensorArg("z", (8, 32))])
    assert info.value.element == (4, 16)
    assert info.value.blocks == ((0, 0, 0), (0, 1, 0))
    assert "both write z[4, 16]" in str(info.value)


# -- read-write ------------------------------------------------------------------------------


def test_reading_a_tile_another_block_already_wrote_is_a_read_write_race() -> None:
    # each block stores its own tile, then reads the previous block's tile
    def body(b: Builder, pz: Value, px: Value, bx: Value) -> None:
        store(b, load(b, px, [bx]), pz, [bx])
        load(b, pz, [rem(b, add(b, bx, 3), 4)])

    with pytest.raises(RaceError) as info:
        launch(tiles_kernel(body))
    err = info.value
    assert (err.kind, err.code, err.tensor, err.element) == ("read-write", "CT6912", "z", (0,))
    assert err.blocks == ((0, 0, 0), (1, 0, 0))
    assert "k: block (1, 0, 0) reads z[0], which block (0, 0, 0) writes" in str(err)
    assert err.op == "load_view_tko"


def test_writing_a_tile_another_block_already_read_is_a_read_write_race() -> None:
    # each block reads the next block's tile before that block writes it
    def body(b: Builder, pz: Value, px: Value, bx: Value) -> None:
        t = load(b, pz, [rem(b, add(b, bx, 1), 4)])
        store(b, t, pz, [bx])

    with pytest.raises(RaceError) as info:
        launch(tiles_kernel(body))
    err = info.value
    assert (err.kind, err.tensor, err.element) == ("read-write", "z", (4,))
    assert err.blocks == ((0, 0, 0), (1, 0, 0))
    assert "k: block (1, 0, 0) writes z[4], which block (0, 0, 0) reads" in str(err)


def test_a_block_rereading_and_rewriting_its_own_tile_is_fine() -> None:
    def body(b: Builder, pz: Value, px: Value, bx: Value) -> None:
        store(b, load(b, px, [bx]), pz, [bx])
        t = load(b, pz, [bx])
        store(b, b.binary("addf", t, t), pz, [bx])
        load(b, pz, [bx])

    z = launch(tiles_kernel(body))
    assert z.tolist() == [2 * (i + 1) for i in range(N)]


def test_shared_inputs_read_by_every_block_are_fine() -> None:
    # every block reads every tile of x (a reduction over all of x) and writes its own tile
    def body(b: Builder, pz: Value, px: Value, bx: Value) -> None:
        acc = load(b, px, [i32(b, 0)])
        for j in range(1, 4):
            acc = b.binary("addf", acc, load(b, px, [i32(b, j)]))
        store(b, acc, pz, [bx])

    z = launch(tiles_kernel(body))
    assert z[:4].tolist() == [28, 32, 36, 40]


def test_three_readers_then_a_writer_names_a_reader_other_than_itself() -> None:
    # blocks 0..2 read tile 3 of z; block 3 then writes it: the report names another block
    def body(b: Builder, pz: Value, px: Value, bx: Value) -> None:
        load(b, pz, [i32(b, 3)])
        store(b, load(b, px, [bx]), pz, [bx])

    with pytest.raises(RaceError) as info:
        launch(tiles_kernel(body))
    first, second = info.value.blocks
    assert second == (3, 0, 0) and first != second


# -- out of bounds ---------------------------------------------------------------------------


def test_tile_index_outside_the_index_space() -> None:
    b = tiles_kernel(lambda b, pz, px, bx: store(b, load(b, px, [bx]), pz, [add(b, bx, 1)]))
    with pytest.raises(InterpreterError) as plain:
        launch(b, check=False)
    assert not isinstance(plain.value, RaceError)
    with pytest.raises(RaceError) as info:
        launch(b)
    err = info.value
    assert (err.kind, err.code, err.tensor, err.element) == ("out-of-bounds", "CT6913", "z",
                                                            (16,))
    assert err.blocks == ((3, 0, 0),)
    assert "k: block (3, 0, 0) writes tile [4] of `z`, outside its index space [4]" in str(err)


def test_pointer_store_outside_the_arguments_view_of_a_bigger_buffer() -> None:
    # z is elements 16..31 of a 64-element buffer; element 16 of z exists in memory
    b, (zp, k) = new_kernel([ptr(dt.f32), scalar(dt.i32)], "k")
    store_ptr(b, offset(b, zp, k), const(b, 1.0, dt.f32))
    buf = np.zeros(64, np.float32)
    args = [Pointer.to(buf, 16 * 4), 16]
    run(b.module, "k", (1, 1, 1), args)  # unchecked: the bytes exist, nothing is said
    assert buf[32] == 1.0
    with pytest.raises(RaceError) as info:
        run(b.module, "k", (1, 1, 1), args, check=True, tensors=[TensorArg("z", (16,)), None])
    err = info.value
    assert (err.kind, err.tensor, err.element, err.blocks) == ("out-of-bounds", "z", (16,),
                                                              ((0, 0, 0),))
    assert "k: block (0, 0, 0) writes z[16], outside `z` (shape [16])" in str(err)
    args[1] = -1
    with pytest.raises(RaceError, match=r"writes z\[-1\]"):
        run(b.module, "k", (1, 1, 1), args, check=True, tensors=[TensorArg("z", (16,)), None])
    args[1] = 15
    run(b.module, "k", (1, 1, 1), args, check=True, tensors=[TensorArg("z", (16,)), None])


def test_a_pointer_walking_into_the_next_argument_of_the_same_buffer() -> None:
    # x and y are adjacent views of one buffer: x[8] is y[0] in memory, still out of bounds
    b, (xp, _) = new_kernel([ptr(dt.f32), ptr(dt.f32)], "k")
    load_ptr(b, ptr_tile(b, xp, b.iota(16, dt.i32)))
    mem = np.zeros(16, np.float32)
    args = [Pointer.to(mem), Pointer.to(mem, 8 * 4)]
    with pytest.raises(RaceError) as info:
        run(b.module, "k", (1, 1, 1), args, check=True,
            tensors=[TensorArg("x", (8,)), TensorArg("y", (8,))])
    assert (info.value.tensor, info.value.element) == ("x", (8,))
    assert "reads x[8]" in str(info.value)


def test_strided_argument_gaps_are_out_of_bounds() -> None:
    # z is every other element of the buffer: z[1] is at element 2; element 1 is a gap
    b, (zp, k) = new_kernel([ptr(dt.f32), scalar(dt.i32)], "k")
    load_ptr(b, offset(b, zp, k))
    buf = np.zeros(8, np.float32)
    z = TensorArg("z", (4,), (2,))
    run(b.module, "k", (1, 1, 1), [Pointer.to(buf), 2], check=True, tensors=[z, None])
    with pytest.raises(RaceError, match="out") as info:
        run(b.module, "k", (1, 1, 1), [Pointer.to(buf), 1], check=True, tensors=[z, None])
    assert info.value.kind == "out-of-bounds"


def test_an_address_inside_no_argument() -> None:
    b, _ = new_kernel([ptr(dt.i32)], "k")
    bogus = b.int_to_ptr(b.scalar_const(12345 * 8, dt.i64), dt.i32)
    store_ptr(b, bogus, const(b, 1, dt.i32))
    with pytest.raises(RaceError) as info:
        run(b.module, "k", (1, 1, 1), [Pointer.to(np.zeros(4, np.int32))], check=True)
    assert (info.value.kind, info.value.tensor, info.value.element) == ("out-of-bounds", None,
                                                                        None)
    assert "inside no argument" in str(info.value)


def test_unnamed_pointer_arguments_are_named_by_position() -> None:
    b, (_, zp) = new_kernel([ptr(dt.f32), ptr(dt.f32)], "k")
    store_ptr(b, offset(b, zp, i32(b, 4)), const(b, 1.0, dt.f32))
    args = [Pointer.to(np.zeros(2, np.float32)), Pointer.to(np.zeros(4, np.float32))]
    with pytest.raises(RaceError, match=r"writes arg1\[4\]"):
        run(b.module, "k", (1, 1, 1), args, check=True)


# -- pointers, masks, atomics ----------------------------------------------------------------


def scatter_kernel(build: Callable[[Builder, Value, Value, Value], None]) -> Builder:
    """k(h: ptr<i32>): `build(b, h, lanes, block_x)` with 8 lanes."""
    b, (hp,) = new_kernel([ptr(dt.i32)], "k")
    bx, _, _ = b.block_ids()
    build(b, hp, b.iota(8, dt.i32), bx)
    return b


def run_h(b: Builder, grid: int = 8, n: int = 8) -> np.ndarray:
    h = np.zeros(n, np.int32)
    run(b.module, "k", (grid, 1, 1), [Pointer.to(h)], check=True, tensors=[TensorArg("h")])
    return h


def test_atomics_from_many_blocks_on_one_element_are_fine() -> None:
    def build(b: Builder, hp: Value, lanes: Value, bx: Value) -> None:
        zeros = b.binary("muli", lanes, const(b, 0, dt.i32, (8,)))
        atomic_rmw(b, ptr_tile(b, hp, zeros), const(b, 1, dt.i32, (8,)), "add")
        atomic_cas(b, offset(b, hp, i32(b, 1)), i32(b, 0), i32(b, 1))

    h = run_h(scatter_kernel(build))
    assert h[:2].tolist() == [64, 1]


def test_a_plain_write_and_an_atomic_on_one_element_race() -> None:
    # block 0 stores h[0]; every block then adds to h[0] atomically
    def build(b: Builder, hp: Value, lanes: Value, bx: Value) -> None:
        store_ptr(b, offset(b, hp, bx), const(b, 5, dt.i32))
        atomic_rmw(b, hp, i32(b, 1), "add")

    with pytest.raises(RaceError) as info:
        run_h(scatter_kernel(build))
    err = info.value
    assert (err.kind, err.element, err.blocks) == ("write-write", (0,), ((0, 0, 0), (1, 0, 0)))
    assert "block (1, 0, 0) atomically updates h[0], which block (0, 0, 0) writes" in str(err)


def test_a_plain_read_of_an_element_other_blocks_update_atomically_races() -> None:
    def build(b: Builder, hp: Value, lanes: Value, bx: Value) -> None:
        atomic_rmw(b, hp, i32(b, 1), "add")
        load_ptr(b, hp)

    with pytest.raises(RaceError) as info:
        run_h(scatter_kernel(build))
    assert info.value.kind == "read-write"
    assert "block (1, 0, 0) atomically updates h[0], which block (0, 0, 0) reads" in str(
        info.value)


def test_block_scoped_atomics_are_not_atomic_across_blocks() -> None:
    def build(b: Builder, hp: Value, lanes: Value, bx: Value) -> None:
        raw(b, "atomic_rmw_tko", [hp, i32(b, 1)], [scalar(dt.i32), TOKEN], mode="add",
            memory_ordering_semantics="relaxed", memory_scope="tl_blk", has_mask=False,
            has_token=False)

    with pytest.raises(RaceError, match="both write h"):
        run_h(scatter_kernel(build))


def acquire_load(b: Builder, p: Value) -> None:
    raw(b, "load_ptr_tko", [p], [scalar(dt.i32), TOKEN], memory_ordering_semantics="acquire",
        memory_scope="device", has_mask=False, has_padding_value=False, has_token=False)


def test_acquire_loads_of_atomically_updated_elements_are_fine() -> None:
    def build(b: Builder, hp: Value, lanes: Value, bx: Value) -> None:
        atomic_rmw(b, hp, i32(b, 1), "add")
        acquire_load(b, hp)

    assert run_h(scatter_kernel(build))[0] == 8


def test_an_acquire_load_of_an_element_another_block_writes_plainly_races() -> None:
    def build(b: Builder, hp: Value, lanes: Value, bx: Value) -> None:
        acquire_load(b, hp)
        store_ptr(b, offset(b, hp, bx), const(b, 5, dt.i32))

    with pytest.raises(RaceError) as info:
        run_h(scatter_kernel(build))
    assert info.value.kind == "read-write"
    assert "block (1, 0, 0) atomically reads h[0], which block (0, 0, 0) writes" in str(
        info.value)


def test_masked_off_lanes_are_not_accesses() -> None:
    # every block's pointer tile covers all of h, but only lane == block is active
    def build(b: Builder, hp: Value, lanes: Value, bx: Value) -> None:
        mine = b.cmp("cmpi", "equal", lanes, splat(b, bx, (8,)))
        store_ptr(b, ptr_tile(b, hp, lanes), splat(b, bx, (8,)), mine)
        load_ptr(b, ptr_tile(b, hp, lanes), mine)

    assert run_h(scatter_kernel(build)).tolist() == list(range(8))


def test_two_lanes_of_one_store_writing_one_element_race() -> None:
    # docs/unsafe.md: scatter lanes that collide race. All 8 lanes of block 0 write h[0].
    def build(b: Builder, hp: Value, lanes: Value, bx: Value) -> None:
        same = splat(b, bx, (8,))
        store_ptr(b, ptr_tile(b, hp, same), lanes)

    with pytest.raises(RaceError) as info:
        run_h(scatter_kernel(build))
    err = info.value
    assert (err.kind, err.element, err.blocks) == ("write-write", (0,), ((0, 0, 0),) * 2)
    assert "two lanes of one store in block (0, 0, 0) write h[0]" in str(err)


def test_duplicate_addresses_of_one_blocks_atomics_and_separate_stores_are_fine() -> None:
    # an atomic's lanes may meet; two stores of one block are ordered (program order)
    def build(b: Builder, hp: Value, lanes: Value, bx: Value) -> None:
        same = splat(b, bx, (8,))
        atomic_rmw(b, ptr_tile(b, hp, same), const(b, 1, dt.i32, (8,)), "add")
        store_ptr(b, offset(b, hp, bx), i32(b, 9))
        store_ptr(b, offset(b, hp, bx), i32(b, 7))

    assert run_h(scatter_kernel(build)).tolist() == [7] * 8


def test_byte_writes_into_another_blocks_f32_element() -> None:
    # one buffer seen as f32 (z) and as bytes (zb): block 0 writes z[0] whole, block 1
    # writes byte 2 of it; the shadow splits its f32 grains to see the overlap
    b, (zp, zbp) = new_kernel([ptr(dt.f32), ptr(dt.i8)], "k")
    bx, _, _ = b.block_ids()
    first = b.cmp("cmpi", "equal", bx, i32(b, 0))
    zero = b.binary("muli", bx, i32(b, 0))
    store_ptr(b, splat(b, offset(b, zp, zero), (1,)), const(b, 1.0, dt.f32, (1,)),
              splat(b, first, (1,)))
    second = b.cmp("cmpi", "equal", bx, i32(b, 1))
    store_ptr(b, splat(b, offset(b, zbp, i32(b, 2)), (1,)), const(b, 9, dt.i8, (1,)),
              splat(b, second, (1,)))
    buf = np.zeros(4, np.float32)
    with pytest.raises(RaceError) as info:
        run(b.module, "k", (2, 1, 1), [Pointer.to(buf), Pointer.to(buf)], check=True,
            tensors=[TensorArg("z"), TensorArg("zb")])
    assert (info.value.kind, info.value.tensor, info.value.element) == ("write-write", "zb",
                                                                        (2,))


def test_tensor_descriptions_must_match_the_arguments() -> None:
    b = tiles_kernel(lambda b, pz, px, bx: None)
    with pytest.raises(InterpreterError, match="tensor descriptions"):
        run(b.module, "k", (1, 1, 1), [Pointer.to(np.zeros(N, np.float32))] * 2, check=True,
            tensors=[TensorArg("z")])


# -- against a brute-force model -------------------------------------------------------------

NTILES = 4


Report = tuple[str, int, tuple[int, ...]]


def model(grid: int, program: list[str], table: list[int]) -> Report | None:
    """The first report of a launch in which block x does program[j] ("r" or "w") on tile
    table[x * len(program) + j] of z, in the interpreter's order: (kind, tile, blocks)."""
    writer: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    for x in range(grid):
        for j, what in enumerate(program):
            t = table[x * len(program) + j] & 0xFFFFFFFF  # view ops read indices unsigned
            if not t < NTILES:
                return ("out-of-bounds", t, (x,))
            w = writer.get(t)
            others = [r for r in readers.get(t, []) if r != x]
            if w is not None and w != x:
                return ("write-write" if what == "w" else "read-write", t, (w, x))
            if what == "w" and others:
                return ("read-write", t, (others[0], x))
            if what == "w":
                writer[t] = x
            elif x not in readers.setdefault(t, []):
                readers[t].append(x)
    return None


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 5), st.lists(st.sampled_from("rw"), min_size=1, max_size=4), st.data())
def test_reports_agree_with_a_brute_force_model(grid: int, program: list[str],
                                                data: st.DataObject) -> None:
    table = data.draw(st.lists(st.integers(-1, NTILES), min_size=grid * len(program),
                               max_size=grid * len(program)))
    b, (zp, tp) = new_kernel([ptr(dt.f32), ptr(dt.i32)], "k")
    bx, _, _ = b.block_ids()
    pz = view(b, zp, [N], [1], [T])
    tile = const(b, 1.0, dt.f32, (T,))
    for j, what in enumerate(program):
        slot = b.binary("addi", b.binary("muli", bx, i32(b, len(program))), i32(b, j))
        t = load_ptr(b, offset(b, tp, slot))
        if what == "w":
            store(b, tile, pz, [t])
        else:
            load(b, pz, [t])
    z = np.zeros(N, np.float32)
    args = [Pointer.to(z), Pointer.to(np.array(table, np.int32))]
    expected = model(grid, program, table)
    if expected is None:
        run(b.module, "k", (grid, 1, 1), args, check=True, tensors=[TensorArg("z"), None])
        return
    with pytest.raises(RaceError) as info:
        run(b.module, "k", (grid, 1, 1), args, check=True, tensors=[TensorArg("z"), None])
    kind, t, blocks = expected
    err = info.value
    assert err.kind == kind
    assert err.blocks == tuple((x, 0, 0) for x in blocks)
    assert err.element == (t * T,)
