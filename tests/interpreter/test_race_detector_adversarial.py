"""Adversarial probes of the race and bounds detector, the soundness fuzzer's oracle.

Each probe is a pair: a kernel that races or leaves its tensor on a real GPU (the detector
must report it, typed: `RaceError` with the right kind) and a near-identical one that does
not (the detector must stay quiet, or the fuzzer would call a safe kernel unsafe). Kernels
are hand-built Tile IR run with `run(..., check=True)`: no checker stands in the way, and
every probe is a few blocks, so the file runs in a second or two. A few probes go through
real kernels (`cutile.check_races()`) where the host side (launcher layouts, lowering of
gather/atomics) is part of what is probed."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import pytest

from cutile import RaceError
from cutile.interpreter import Pointer, TensorArg, run
from cutile.interpreter.memory import ALIGNMENT_KEPT
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

Body = Callable[[Builder, list[Value], Value], None]


def kernel(params: Sequence[object], body: Body) -> Builder:
    """k(params...): `body(b, params, block_x)`."""
    b, ps = new_kernel(list(params), "k")  # type: ignore[arg-type]
    bx, _, _ = b.block_ids()
    body(b, ps, bx)
    return b


@contextmanager
def on_block(b: Builder, bx: Value, k: int) -> Iterator[None]:
    """The ops built inside run only in block k."""
    with b.if_(b.cmp("cmpi", "equal", bx, i32(b, k), signedness="signed")) as br:
        with br.then_():
            yield


def launch(b: Builder, grid: int, bufs: Sequence[object],
           tensors: Sequence[TensorArg | None] | None = None) -> None:
    run(b.module, "k", (grid, 1, 1), list(bufs), check=True, tensors=tensors)


def races(kind: str, b: Builder, grid: int, bufs: Sequence[object],
          tensors: Sequence[TensorArg | None] | None = None) -> RaceError:
    with pytest.raises(RaceError) as info:
        launch(b, grid, bufs, tensors)
    assert info.value.kind == kind, str(info.value)
    return info.value


def launch_expecting(report: str | None, b: Builder, bufs: Sequence[object],
                     tensors: Sequence[TensorArg | None]) -> None:
    """One block: the `report` race kind (None: a clean run)."""
    if report:
        races(report, b, 1, bufs, tensors)
    else:
        launch(b, 1, bufs, tensors)


def tile_of(b: Builder, v: float, n: int = 4, d: dt.DType = dt.f32) -> Value:
    return const(b, v, d, (n,))


F32 = [ptr(dt.f32)]


def blind(what: str) -> pytest.MarkDecorator:
    """A detector blind spot this file found and the detector does not handle yet."""
    return pytest.mark.xfail(strict=True, reason=f"blind spot: {what}")


def buf(n: int = 16, d: type = np.float32) -> np.ndarray:
    return np.zeros(n, d)


# -- overlapping tiles through different views of one argument ------------------------------


@pytest.mark.parametrize(("index8", "racy"), [(0, True), (1, False)])
def test_views_with_different_tile_shapes(index8: int, racy: bool) -> None:
    # block 0 stores elements 4..7 (tile 1 of 4); block 1 stores tile `index8` of 8
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        with on_block(b, bx, 0):
            store(b, tile_of(b, 1.0), view(b, ps[0], [16], [1], [4]), [i32(b, 1)])
        with on_block(b, bx, 1):
            store(b, tile_of(b, 2.0, 8), view(b, ps[0], [16], [1], [8]), [i32(b, index8)])

    k = kernel(F32, body)
    if racy:
        err = races("write-write", k, 2, [Pointer.to(buf())], [TensorArg("z")])
        assert err.element == (4,) and err.blocks == ((0, 0, 0), (1, 0, 0))
    else:
        launch(k, 2, [Pointer.to(buf())], [TensorArg("z")])


@pytest.mark.parametrize(("tile_row", "racy"), [(0, True), (1, False)])
def test_a_transposed_view_against_the_plain_one(tile_row: int, racy: bool) -> None:
    # z is 4 x 4; block 0 stores z[0:2, 0:2]; block 1 stores a 2 x 2 tile of z's transpose
    # (a tensor view with strides (1, 4)): tile (tile_row, 0) is z[0:2, 2*tile_row:...]
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        t = const(b, 1.0, dt.f32, (2, 2))
        with on_block(b, bx, 0):
            store(b, t, view(b, ps[0], [4, 4], [4, 1], [2, 2]), [i32(b, 0), i32(b, 0)])
        with on_block(b, bx, 1):
            store(b, t, view(b, ps[0], [4, 4], [1, 4], [2, 2]), [i32(b, tile_row), i32(b, 0)])

    k = kernel(F32, body)
    z = TensorArg("z", (4, 4))
    if racy:
        assert races("write-write", k, 2, [Pointer.to(buf())], [z]).element == (0, 0)
    else:
        launch(k, 2, [Pointer.to(buf())], [z])


@pytest.mark.parametrize(("dim_map", "index", "racy"),
                         [((1, 0), (1, 0), True), ((1, 0), (2, 0), False)])
def test_a_dim_mapped_partition(dim_map: tuple[int, int], index: tuple[int, int],
                                racy: bool) -> None:
    # z is 4 x 8; block 0 stores z[0:2, 0:4]; block 1 stores a (2, 4) tile whose dim 0
    # walks z's columns (dim_map (1, 0)): tile (j, 0) is z[0:4, 2j:2j + 2]
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        with on_block(b, bx, 0):
            store(b, const(b, 1.0, dt.f32, (2, 4)), view(b, ps[0], [4, 8], [8, 1], [2, 4]),
                  [i32(b, 0), i32(b, 0)])
        with on_block(b, bx, 1):
            pv = view(b, ps[0], [4, 8], [8, 1], [2, 4], dim_map=list(dim_map))
            store(b, const(b, 2.0, dt.f32, (2, 4)), pv, [i32(b, i) for i in index])

    k = kernel(F32, body)
    z = TensorArg("z", (4, 8))
    bufs = [Pointer.to(buf(32))]
    if racy:
        races("write-write", k, 2, bufs, [z])
    else:
        launch(k, 2, bufs, [z])


@pytest.mark.parametrize(("shift", "racy"), [(2, True), (4, False), (3, True)])
def test_views_at_an_offset_inside_the_argument(shift: int, racy: bool) -> None:
    # block 0 stores z[0:4]; block 1 stores tile 0 of a view that starts at z[shift]
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        with on_block(b, bx, 0):
            store(b, tile_of(b, 1.0), view(b, ps[0], [16], [1], [4]), [i32(b, 0)])
        with on_block(b, bx, 1):
            moved = offset(b, ps[0], i32(b, shift))
            store(b, tile_of(b, 2.0), view(b, moved, [8], [1], [4]), [i32(b, 0)])

    k = kernel(F32, body)
    if racy:
        assert races("write-write", k, 2, [Pointer.to(buf())], [TensorArg("z")]).element == (
            (shift,))
    else:
        launch(k, 2, [Pointer.to(buf())], [TensorArg("z")])


@pytest.mark.parametrize(("strides", "racy"), [((0, 1), True), ((1, 1), True), ((4, 1), False)])
def test_a_view_whose_tiles_alias(strides: tuple[int, int], racy: bool) -> None:
    # a 4 x 4 view over z with row stride 0 (every row is z[0:4]) or 1 (rows overlap):
    # block x stores row x, distinct tiles of the view, the same bytes of z
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        pv = view(b, ps[0], [4, 4], list(strides), [1, 4])
        store(b, const(b, 1.0, dt.f32, (1, 4)), pv, [bx, i32(b, 0)])

    k = kernel(F32, body)
    if racy:
        races("write-write", k, 4, [Pointer.to(buf())], [TensorArg("z")])
    else:
        launch(k, 4, [Pointer.to(buf())], [TensorArg("z")])


# -- ragged tiles: padded lanes are no access, real ones are --------------------------------


@pytest.mark.parametrize(("start", "racy"), [(10, False), (9, True)])
def test_the_padded_lanes_of_a_ragged_store(start: int, racy: bool) -> None:
    # block 0 stores tile 2 of z[0:10] in tiles of 4 (lanes 10, 11 are padding); block 1
    # stores z[start:start + 2] through a view of its own
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        with on_block(b, bx, 0):
            store(b, tile_of(b, 1.0), view(b, ps[0], [10], [1], [4]), [i32(b, 2)])
        with on_block(b, bx, 1):
            tail = view(b, offset(b, ps[0], i32(b, start)), [2], [1], [2])
            store(b, tile_of(b, 2.0, 2), tail, [i32(b, 0)])

    k = kernel(F32, body)
    z = [TensorArg("z", (12,))]
    if racy:
        assert races("write-write", k, 2, [Pointer.to(buf(12))], z).element == (9,)
    else:
        launch(k, 2, [Pointer.to(buf(12))], z)


@pytest.mark.parametrize(("extent", "racy"), [(10, False), (11, True)])
def test_the_padded_lanes_of_a_ragged_load(extent: int, racy: bool) -> None:
    # block 0 loads tile 2 of z[0:extent] (padded from `extent` on); block 1 writes z[10:12]
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        with on_block(b, bx, 0):
            load(b, view(b, ps[0], [extent], [1], [4], padding="zero"), [i32(b, 2)])
        with on_block(b, bx, 1):
            tail = view(b, offset(b, ps[0], i32(b, 10)), [2], [1], [2])
            store(b, tile_of(b, 2.0, 2), tail, [i32(b, 0)])

    k = kernel(F32, body)
    z = [TensorArg("z", (12,))]
    if racy:
        assert races("read-write", k, 2, [Pointer.to(buf(12))], z).element == (10,)
    else:
        launch(k, 2, [Pointer.to(buf(12))], z)


def test_a_tile_of_an_empty_tensor_is_out_of_bounds() -> None:
    k = kernel(F32, lambda b, ps, bx: store(b, tile_of(b, 1.0), view(b, ps[0], [0], [1], [4]),
                                            [i32(b, 0)]))
    races("out-of-bounds", k, 1, [Pointer.to(buf())], [TensorArg("z")])


# -- masks, gathers and scatters --------------------------------------------------------------

I32 = [ptr(dt.i32)]


def lanes(b: Builder, n: int = 8) -> Value:
    return b.iota(n, dt.i32)


def scaled(b: Builder, v: Value, k: int, n: int = 8) -> Value:
    """v * k, v a rank-0 i32, broadcast to n lanes."""
    return splat(b, b.binary("muli", v, i32(b, k)), (n,))


@pytest.mark.parametrize(("lane", "racy"), [(0, True), (1, False)])
def test_a_masked_store_counts_only_its_live_lanes(lane: int, racy: bool) -> None:
    # every block's pointers cover h[0:8]; block 0 writes lane 0 only, block 1 lane `lane`
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        live = b.cmp("cmpi", "equal", lanes(b), splat(b, b.binary("muli", bx, i32(b, lane)),
                                                          (8,)), signedness="signed")
        store_ptr(b, ptr_tile(b, ps[0], lanes(b)), lanes(b), live)

    k = kernel(I32, body)
    if racy:
        assert races("write-write", k, 2, [Pointer.to(buf(8, np.int32))]).element == (0,)
    else:
        launch(k, 2, [Pointer.to(buf(8, np.int32))])


@pytest.mark.parametrize(("limit", "report"), [(8, None), (9, "out-of-bounds")])
def test_masked_off_lanes_past_the_end_are_no_access(limit: int, report: str | None) -> None:
    # 16 lanes over an 8-element h, masked to lanes < limit: lane 8 is h[8] when live
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        idx = lanes(b, 16)
        live = b.cmp("cmpi", "less_than", idx, const(b, limit, dt.i32, (16,)),
                     signedness="signed")
        load_ptr(b, ptr_tile(b, ps[0], idx), live, const(b, 0, dt.i32, (16,)))
        atomic_rmw(b, ptr_tile(b, ps[0], idx), const(b, 1, dt.i32, (16,)), "add", live)

    k = kernel(I32, body)
    if report:
        err = races(report, k, 1, [Pointer.to(buf(8, np.int32))], [TensorArg("h")])
        assert err.element == (8,) and err.op == "load_ptr_tko"
    else:
        launch(k, 1, [Pointer.to(buf(8, np.int32))], [TensorArg("h")])


@pytest.mark.parametrize(("step", "racy"), [(8, False), (6, True)])
def test_scatters_whose_index_ranges_overlap_across_blocks(step: int, racy: bool) -> None:
    # block x scatters to h[x * step + lane]: step 6 makes blocks 0 and 1 share h[6], h[7]
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        idx = b.binary("addi", lanes(b), scaled(b, bx, step))
        store_ptr(b, ptr_tile(b, ps[0], idx), lanes(b))

    k = kernel(I32, body)
    if racy:
        assert races("write-write", k, 2, [Pointer.to(buf(16, np.int32))]).element == (6,)
    else:
        launch(k, 2, [Pointer.to(buf(16, np.int32))])


@pytest.mark.parametrize(("step", "racy"), [(8, False), (4, True)])
def test_a_gather_from_the_output_other_blocks_scatter_to(step: int, racy: bool) -> None:
    # block x writes h[8x : 8x + 8], then gathers h[step * x + lane]
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        store_ptr(b, ptr_tile(b, ps[0], b.binary("addi", lanes(b), scaled(b, bx, 8))), lanes(b))
        load_ptr(b, ptr_tile(b, ps[0], b.binary("addi", lanes(b), scaled(b, bx, step))))

    k = kernel(I32, body)
    if racy:
        races("read-write", k, 2, [Pointer.to(buf(16, np.int32))])
    else:
        launch(k, 2, [Pointer.to(buf(16, np.int32))])


# -- atomics ------------------------------------------------------------------------------------


def ordered(b: Builder, name: str, operands: list[Value], results: list[object],
            order: str, scope: str, **attrs: object) -> None:
    raw(b, name, operands, results, memory_ordering_semantics=order,  # type: ignore[arg-type]
        memory_scope=scope, has_mask=False, has_token=False, **attrs)


@pytest.mark.parametrize(("scope", "racy"), [("device", False), ("sys", False),
                                             ("tl_blk", True)])
def test_cas_and_exchange_from_every_block(scope: str, racy: bool) -> None:
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        ordered(b, "atomic_cas_tko", [ps[0], i32(b, 0), bx], [scalar(dt.i32), TOKEN],
                "acq_rel", scope)
        ordered(b, "atomic_rmw_tko", [offset(b, ps[0], i32(b, 1)), bx],
                [scalar(dt.i32), TOKEN], "relaxed", "device", mode="xchg")

    k = kernel(I32, body)
    if racy:
        races("write-write", k, 3, [Pointer.to(buf(2, np.int32))])
    else:
        launch(k, 3, [Pointer.to(buf(2, np.int32))])


@pytest.mark.parametrize(("plain", "kind"), [("load", "read-write"), ("store", "write-write")])
def test_a_cas_against_a_plain_access_in_another_block(plain: str, kind: str) -> None:
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        with on_block(b, bx, 1):
            atomic_cas(b, ps[0], i32(b, 0), i32(b, 1))
        with on_block(b, bx, 0):
            if plain == "load":
                load_ptr(b, ps[0])
            else:
                store_ptr(b, ps[0], i32(b, 5))

    races(kind, kernel(I32, body), 2, [Pointer.to(buf(2, np.int32))])


@pytest.mark.parametrize(("order", "racy"), [("weak", True), ("release", False)])
def test_stores_by_many_blocks_atomic_only_when_ordered(order: str, racy: bool) -> None:
    # a release store is an atomic: many of them (and atomic updates) do not race; a weak
    # store does
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        ordered(b, "store_ptr_tko", [ps[0], bx], [TOKEN], order, "device")
        atomic_rmw(b, offset(b, ps[0], i32(b, 0)), i32(b, 1), "add")

    k = kernel(I32, body)
    if racy:
        races("write-write", k, 2, [Pointer.to(buf(2, np.int32))])
    else:
        launch(k, 2, [Pointer.to(buf(2, np.int32))])


def test_a_block_scoped_acquire_load_is_a_plain_read() -> None:
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        raw(b, "load_ptr_tko", [ps[0]], [scalar(dt.i32), TOKEN],
            memory_ordering_semantics="acquire", memory_scope="tl_blk", has_mask=False,
            has_padding_value=False, has_token=False)
        atomic_rmw(b, ps[0], i32(b, 1), "add")

    races("read-write", kernel(I32, body), 2, [Pointer.to(buf(2, np.int32))])


# -- loops and control flow ---------------------------------------------------------------------


@pytest.mark.parametrize(("per_block", "racy"), [(1, False), (2, True)])
def test_a_persistent_loop_whose_schedule_overlaps(per_block: int, racy: bool) -> None:
    # block x stores tiles (x + i) % 4 for i < per_block: with 2, blocks share tiles
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        pv = view(b, ps[0], [16], [1], [4])
        with b.for_(i32(b, 0), i32(b, per_block), i32(b, 1)) as lp:
            t = b.binary("remi", b.binary("addi", bx, lp.iv), i32(b, 4), signedness="signed")
            store(b, tile_of(b, 1.0), pv, [t])

    k = kernel(F32, body)
    if racy:
        races("write-write", k, 4, [Pointer.to(buf())])
    else:
        launch(k, 4, [Pointer.to(buf())])


@pytest.mark.parametrize(("stop_at", "racy"), [(1, False), (2, True)])
def test_stores_in_a_loop_with_break(stop_at: int, racy: bool) -> None:
    # `loop`: block x stores tile x + i and breaks after `stop_at` stores
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        pv = view(b, ps[0], [16], [1], [4])
        with b.loop([i32(b, 0)]) as lp:
            (i,) = lp.args
            t = b.binary("remi", b.binary("addi", bx, i), i32(b, 4), signedness="signed")
            store(b, tile_of(b, 1.0), pv, [t])
            nxt = b.binary("addi", i, i32(b, 1))
            with b.if_(b.cmp("cmpi", "equal", nxt, i32(b, stop_at), signedness="signed")) as br:
                with br.then_():
                    b.break_()
            b.continue_([nxt])

    k = kernel(F32, body)
    if racy:
        races("write-write", k, 4, [Pointer.to(buf())])
    else:
        launch(k, 4, [Pointer.to(buf())])


@pytest.mark.parametrize(("returns", "racy"), [(True, False), (False, True)])
def test_an_early_return_skips_the_racing_store(returns: bool, racy: bool) -> None:
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        if returns:
            with on_block(b, bx, 1):
                b.return_()
        store(b, tile_of(b, 1.0), view(b, ps[0], [16], [1], [4]), [i32(b, 0)])

    k = kernel(F32, body)
    if racy:
        races("write-write", k, 2, [Pointer.to(buf())])
    else:
        launch(k, 2, [Pointer.to(buf())])


# -- one memory, several element types, several arguments ---------------------------------------


@pytest.mark.parametrize(("f32_index", "racy"), [(1, True), (2, False)])
def test_an_f64_view_and_an_f32_view_of_the_same_bytes(f32_index: int, racy: bool) -> None:
    # block 0 stores wide[0] (bytes 0..7), block 1 stores narrow[f32_index]
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        with on_block(b, bx, 0):
            store(b, const(b, 1.0, dt.f64, (1,)), view(b, ps[0], [4], [1], [1]), [i32(b, 0)])
        with on_block(b, bx, 1):
            store(b, const(b, 2.0, dt.f32, (1,)), view(b, ps[1], [8], [1], [1]),
                  [i32(b, f32_index)])

    k = kernel([ptr(dt.f64), ptr(dt.f32)], body)
    mem = buf(4, np.float64)
    bufs = [Pointer.to(mem), Pointer.to(mem)]
    names = [TensorArg("wide"), TensorArg("narrow")]
    if racy:
        assert races("write-write", k, 2, bufs, names).tensor == "narrow"
    else:
        launch(k, 2, bufs, names)


@pytest.mark.parametrize(("byte", "racy"), [(3, True), (4, False)])
def test_a_byte_read_of_an_f32_another_block_writes(byte: int, racy: bool) -> None:
    # the byte view starts one byte into the buffer: its grain is not the f32's
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        with on_block(b, bx, 0):
            store_ptr(b, ps[0], const(b, 1.0, dt.f32))
        with on_block(b, bx, 1):
            load_ptr(b, offset(b, ps[1], i32(b, byte - 1)))

    k = kernel([ptr(dt.f32), ptr(dt.i8)], body)
    mem = buf(4)
    raw_bytes = mem.view(np.uint8)
    bufs = [Pointer.to(mem), Pointer(raw_bytes[1:])]
    if racy:
        races("read-write", k, 2, bufs)
    else:
        launch(k, 2, bufs)


def _slices() -> list[Pointer]:
    # x = mem[0:8], y = mem[4:12] as separate numpy views: y[0] is x[4]
    mem = buf()
    return [Pointer.to(mem[0:8]), Pointer.to(mem[4:12])]


def _frombuffer() -> list[Pointer]:
    # np.frombuffer gives arrays whose base is the bytearray, not an ndarray: two of them
    # at different offsets are two numpy "roots" over the same bytes
    mem = bytearray(64)
    return [Pointer(np.frombuffer(mem, np.uint8, 32, 0)),
            Pointer(np.frombuffer(mem, np.uint8, 32, 16))]


@pytest.mark.parametrize("racy", [True, False])
@pytest.mark.parametrize("make", [_slices, _frombuffer], ids=["numpy-slices", "frombuffer"])
def test_two_arguments_over_one_host_buffer(make: Callable[[], list[Pointer]],
                                            racy: bool) -> None:
    # the second argument starts at the first's element 4
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        with on_block(b, bx, 0):
            store_ptr(b, offset(b, ps[0], i32(b, 4 if racy else 3)), const(b, 1.0, dt.f32))
        with on_block(b, bx, 1):
            store_ptr(b, ps[1], const(b, 2.0, dt.f32))

    k = kernel([ptr(dt.f32), ptr(dt.f32)], body)
    if racy:
        races("write-write", k, 2, make())
    else:
        launch(k, 2, make())


# -- out of bounds ------------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "report"), [(15, None), (16, "out-of-bounds"),
                                           (-1, "out-of-bounds")])
def test_pointer_one_past_either_end(k: int, report: str | None) -> None:
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        store_ptr(b, offset(b, ps[0], ps[1]), const(b, 1.0, dt.f32))

    kern = kernel([ptr(dt.f32), scalar(dt.i32)], body)
    mem = buf(32)
    args = [Pointer.to(mem, 8 * 4), k]  # z = mem[8:24]: both neighbours exist in memory
    names = [TensorArg("z", (16,)), None]
    if report:
        races(report, kern, 1, args, names)
    else:
        launch(kern, 1, args, names)


@pytest.mark.parametrize(("n", "report"), [(16, None), (17, "out-of-bounds")])
def test_a_tensor_view_longer_than_its_argument(n: int, report: str | None) -> None:
    # the kernel's view claims n elements of a 16-element z inside a 32-element buffer
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        load(b, view(b, ps[0], [n], [1], [4]), [i32(b, (n - 1) // 4)])

    kern = kernel(F32, body)
    args = [Pointer.to(buf(32))]
    names = [TensorArg("z", (16,))]
    if report:
        assert races(report, kern, 1, args, names).element == (16,)
    else:
        launch(kern, 1, args, names)


def test_negative_and_huge_tile_indices_are_typed_out_of_bounds() -> None:
    # a -1 tile index reads as 2^32 - 1 (view indices are unsigned); on a view with a large
    # row stride its first element's byte offset does not fit in 64 bits
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        pv = view(b, ps[0], [2, 1], [1 << 16, 1], [1 << 16, 1])
        load(b, pv, [i32(b, -1), i32(b, 0)])

    err = races("out-of-bounds", kernel(F32, body), 1, [Pointer.to(buf((1 << 16) + 1))],
                [TensorArg("z")])
    assert "tile [4294967295, 0]" in str(err)


@pytest.mark.parametrize("racy", [
    pytest.param(True, marks=blind("provenance is the address region")),
    False,
])
def test_a_pointer_walked_into_another_arguments_region(racy: bool) -> None:
    # x + 2^40 bytes (and the two buffers' distance modulo a page, which the address
    # space keeps) is, in the interpreter's address space, y[0]: on a GPU it is nowhere
    bufs = [Pointer.to(buf(4)), Pointer.to(buf(4))]
    x_at, y_at = (p.buffer.ctypes.data % ALIGNMENT_KEPT for p in bufs)

    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        steps = ((1 << 40) + y_at - x_at) // 4 if racy else 3
        load_ptr(b, offset(b, ps[0], b.scalar_const(steps, dt.i64)))

    k = kernel([ptr(dt.f32), ptr(dt.f32)], body)
    if racy:
        races("out-of-bounds", k, 1, bufs, [TensorArg("x"), TensorArg("y")])
    else:
        launch(k, 1, bufs, [TensorArg("x"), TensorArg("y")])


# -- layouts whose elements are not found greedily ---------------------------------------------


@pytest.mark.parametrize(("elem", "report"), [
    (4, None),
    (1, "out-of-bounds"),
])
def test_an_interleaved_strided_argument(elem: int, report: str | None) -> None:
    # x is (2, 3) with strides (3, 2): its elements sit at 0 2 4 / 3 5 7. Element (0, 2) is
    # at 4, which is not 1 * 3 + something: dividing by the largest stride first misses it
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        load_ptr(b, offset(b, ps[0], i32(b, elem)))

    k = kernel(F32, body)
    args = [Pointer.to(buf(8))]
    names = [TensorArg("x", (2, 3), (3, 2))]
    launch_expecting(report, k, args, names)


@pytest.mark.parametrize(("elem", "report"), [
    (2, None),
    (1, "out-of-bounds"),
])
def test_an_overlapping_argument_that_spans_exactly_its_element_count(
        elem: int, report: str | None) -> None:
    # x is (3, 3) with strides (2, 2) (a read-only broadcast-like import): 9 elements over 9
    # slots, yet only the even slots are elements; slot 1 is someone else's
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        load_ptr(b, offset(b, ps[0], i32(b, elem)))

    k = kernel(F32, body)
    args = [Pointer.to(buf(9))]
    names = [TensorArg("x", (3, 3), (2, 2))]
    launch_expecting(report, k, args, names)


@pytest.mark.parametrize(("n", "report"), [
    (2, None),
    (3, "out-of-bounds"),
])
def test_a_wider_view_reading_past_the_arguments_end(n: int, report: str | None) -> None:
    # z is 5 f32 at bytes 8..28 of a 48-byte buffer; the kernel reads it as n f64: the
    # third f64 (bytes 24..32) runs 4 bytes past z's end
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        wide = raw(b, "ptr_to_ptr", [ps[0]], [ptr(dt.f64)]).result
        load(b, view(b, wide, [n], [1], [1]), [i32(b, n - 1)])

    k = kernel(F32, body)
    args = [Pointer.to(buf(12), 8)]
    names = [TensorArg("z", (5,))]
    launch_expecting(report, k, args, names)


@pytest.mark.parametrize(("width", "report"), [
    (dt.f32, None),
    (dt.f64, "out-of-bounds"),
])
def test_a_wide_pointer_read_over_a_strided_arguments_gap(width: dt.DType,
                                                          report: str | None) -> None:
    # z is every other f32 of the buffer: an f64 read at z[0] takes the gap after it too
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        load_ptr(b, raw(b, "ptr_to_ptr", [ps[0]], [ptr(width)]).result)

    k = kernel(F32, body)
    args = [Pointer.to(buf(8))]
    names = [TensorArg("z", (4,), (2,))]
    launch_expecting(report, k, args, names)


@pytest.mark.parametrize(("rows", "report"), [
    (4, None),
    (5, "out-of-bounds"),
])
def test_an_axis_of_extent_one_with_a_large_stride(rows: int, report: str | None) -> None:
    # x is (4, 1) with strides (2, 3) (element (i, 0) at 2i: 0 2 4 6). The launcher passes
    # the unit axis's stride as 1 (its only index is 0), so the kernel's view differs from
    # the argument's layout and every element is looked up: element (2, 0), at 4, was taken
    # for x[0, 1] (4 = 1 * 3 + 1 * ...) and reported out of bounds. A fifth row (at 8) is
    # outside x
    def body(b: Builder, ps: list[Value], bx: Value) -> None:
        load(b, view(b, ps[0], [rows, 1], [2, 1], [8, 1]), [i32(b, 0), i32(b, 0)])

    k = kernel(F32, body)
    args = [Pointer.to(buf(12))]
    names = [TensorArg("x", (4, 1), (2, 3))]
    launch_expecting(report, k, args, names)
