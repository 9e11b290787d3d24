"""The launch path (rust/cutile-host's launch plan through rust/cutile-py/src/launch.rs),
the only binder: every misuse raises its typed error and moves nothing, accepted launches
get the grid, Consts, values and specialization their arguments imply, and random argument
mixes never raise anything but a cutile error."""

from __future__ import annotations

import re
import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import cutile
from cutile import _native, api
from cutile.core import Const, Mut, Tensor, f16, f32, i8, i32, load_tile_like
from cutile.errors import CutileError
from cutile.kernel import EntryKernel
from cutile.lowering.signature import Specialization, TensorFacts
from cutile.runtime.ownership import next_op_id, registry
from cutile.runtime.tensor import Partition, _Handle


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@cutile.entry
def saxpy(y: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], a: f32, B: Const[int]):
    y.store(a * load_tile_like(x, y) + y.load())


@cutile.entry
def shift(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, ["N"]], k: i8, N: Const[int]):
    z.store(load_tile_like(x, z) + k)


@cutile.entry
def two_out(z: Mut[Tensor[f32, ["B"]]], w: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]],
            B: Const[int]):
    t = load_tile_like(x, z)
    z.store(t)
    w.store(t * 2.0)


@cutile.entry
def scaled(z: Mut[Tensor[f32, ["B"]]], m: f32, B: Const[int], S: Const[float]):
    z.store(z.load() * S + m)


@cutile.entry
def exp2d(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
          BN: Const[int]):
    z.store(load_tile_like(x, z))


@cutile.entry
def walk(z: Mut[Tensor[f32, [4, 8]]], x: Tensor[f32, [-1, -1]], G: Const[int]):
    for idx in z.iter_indices(group=G):
        z.store(x.load_tile((4, 8), idx), index=idx)


KERNELS: list[EntryKernel] = [add, saxpy, shift, two_out, scaled, exp2d, walk]

NUMBERED = re.compile(r"(op #|operation |handle )\d+")


def _norm(text: str) -> str:
    return NUMBERED.sub(r"\1N", text)


def _outcome(fn: Any) -> tuple[Any, ...]:
    try:
        return ("ok", fn())
    except CutileError as e:
        return ("error", type(e).__name__, e.code, _norm(str(e)))
    except Exception as e:  # the reference may raise anything; so must the native path
        return ("exception", type(e).__name__, _norm(str(e)))


def _persistent(kernel: EntryKernel) -> set[str]:
    return {name for name, kind in kernel.check().outputs if kind == "persistent"}


def launch_outcome(kernel: EntryKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """Make the op and give its arguments back: "ok", or the code of the typed error. A
    refused call moves nothing; an accepted one holds exactly its handles."""
    handles = [a for a in (*args, *kwargs.values()) if isinstance(a, _Handle)]
    live_before = [registry().holder(h._handle) is None for h in handles]
    got = _outcome(lambda: kernel(*args, **kwargs))
    if got[0] != "ok":
        assert got[0] == "error", f"{kernel.name}{args} {kwargs}: {got}"
        assert [registry().holder(h._handle) is None for h in handles] == live_before
        return str(got[2])
    op = got[1]
    try:
        b = op.binding
        assert len(b.values) == len(b.params)
        runtime = [p.name for p in kernel.entry.params if p.kind != "const"]
        assert [p.name for p in b.params] == runtime
        assert all(registry().holder(v._handle) == op.name for v in b.values
                   if isinstance(v, _Handle))
        assert all(g >= 1 for g in op.grid) or op.grid == (0, 0, 0)
    finally:
        op._give_back()
    assert all(registry().holder(h._handle) is None for h in handles)
    return "ok"


# -- handle metadata ---------------------------------------------------------------------------


def test_handle_metadata_is_given_once() -> None:
    t = api.from_numpy(np.arange(24, dtype=np.float32).reshape(4, 6))
    v = t[1:, ::2]
    for h in (t, v):
        meta = h._meta
        assert meta is not None
        storage, handle, address, lo, hi, bits = meta
        assert (storage, handle, address) == (h._storage, h._handle, h.address)
        assert (lo, hi) == h._span_bytes()
        assert bits == 32
    with pytest.raises(RuntimeError):
        t._init_meta(1, 1, 0, 0, [1], [1], "f32", 4)
    p = api.zeros([64], f32).partition([16])
    assert isinstance(p, _native.HandleMeta) and p._meta is not None


def test_op_ids_come_from_one_counter() -> None:
    a = next_op_id()
    op = add(api.zeros([64], f32).partition([64]), api.ones([64], f32), api.ones([64], f32))
    b = next_op_id()
    assert a < op.op_id < b
    op.sync()


# -- the fast path is the common path ----------------------------------------------------------


def test_common_calls_never_reach_python(monkeypatch: pytest.MonkeyPatch) -> None:
    z = api.zeros([256], f32).partition([128])
    x, y = api.ones([256], f32), api.ones([256], f32)
    z, x, y = add(z, x, y).sync()  # builds the launcher and compiles
    y2, x, _ = saxpy(api.ones([256], f32).partition([64]), x, 2.0).sync()

    def refuse(*a: Any, **k: Any) -> None:
        raise AssertionError("the slow path ran")

    monkeypatch.setattr(EntryKernel, "_call_checked", refuse)
    for _ in range(3):
        z, x, y = add(z, x, y).sync()
        z, x, y = add(z, x, y, B=128).sync()
    y2, x, a = saxpy(api.ones([256], f32).partition([64]), x, 2).sync()
    assert type(a) is float and a == 2.0  # an int for an f32 scalar comes back a float
    z, x, y = add(z, y=y, x=x).sync()  # keywords are placed natively
    np.testing.assert_array_equal(y2.unpartition().to_numpy(), np.full(256, 3.0))
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.full(256, 2.0))


def test_numpy_scalars_are_normalized() -> None:
    x = api.ones([64], f32)
    op = saxpy(y=api.zeros([64], f32).partition([32]), x=x, a=np.float32(0.5))
    _, x, a = op.sync()
    assert type(a) is float and a == 0.5
    op = add(api.zeros([64], f32).partition([32]), x, x, B=np.int64(32))
    assert dict(op.consts) == {"B": 32}
    op.sync()


def test_op_object() -> None:
    op = add(api.zeros([64], f32).partition([16]), api.ones([64], f32), api.ones([64], f32))
    assert isinstance(op, cutile.DeviceOp) and isinstance(op, _native.KernelOp)
    assert op.kernel is add
    assert op.name == f"`add` (op #{op.op_id})"
    assert op.grid == (4, 1, 1) and op.binding.grid == (4, 1, 1)
    assert op.holding
    op.sync()
    assert not op.holding
    with pytest.raises(cutile.BorrowError) as info:
        op.sync()
    assert info.value.code == "CT5020" and op.name in str(info.value)


def test_dropped_ops_hand_back_once_started() -> None:
    # (dropped before anything started them, ops abandon their tensors: test_unrun_ops.py)
    z = api.zeros([64], f32).partition([16])
    x = api.ones([64], f32)
    op = add(z, x, x)
    op._claim()
    wait = op._start()
    del op, wait
    np.testing.assert_array_equal(x.to_numpy(), np.ones(64))
    (z2, _, _) = add(z, x, x).sync()
    np.testing.assert_array_equal(z2.unpartition().to_numpy(), np.full(64, 2.0))


def test_a_failed_start_gives_everything_back(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: EntryKernel, spec: Specialization, device: int | None = None) -> Any:
        raise cutile.CompileError("no assembler today", code="CT7001")

    monkeypatch.setattr(EntryKernel, "_runnable", broken)
    add._launcher = None  # a new launcher: nothing compiled yet
    x = api.ones([32], f32)
    op = add(api.zeros([32], f32).partition([16]), x, x)
    with pytest.raises(cutile.CompileError):
        op.sync()
    assert not op.holding
    np.testing.assert_array_equal(x.to_numpy(), np.ones(32))


def test_threads_launch_side_by_side() -> None:
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            z = api.zeros([128], f32).partition([32])
            x = api.full([128], float(k), f32)
            for _ in range(20):
                z, x, _ = add(z, x, x).sync()
            assert (z.unpartition().to_numpy() == 2 * k).all()
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# -- every misuse has its typed error -------------------------------------------------------------


def _p(shape: list[int], tile: list[int], dtype: Any = f32) -> Partition:
    return api.zeros(shape, dtype).partition(tile)


def _t(shape: list[int], dtype: Any = f32) -> Any:
    return api.zeros(shape, dtype)


ERROR_CASES: list[tuple[str, EntryKernel, Any]] = [
    ("CT6104", add, lambda: ((_p([64], [16]), _t([64]), _t([64]), _t([64])), {})),
    ("CT6104", add, lambda: ((_p([64], [16]), _t([64])), {})),
    ("CT6104", add, lambda: ((_p([64], [16]), _t([64]), _t([64])), {"C": 3})),
    ("CT6104", add, lambda: ((_p([64], [16]), _t([64]), _t([64])), {"x": _t([64])})),
    ("CT6101", add, lambda: ((_t([64]), _t([64]), _t([64])), {})),
    ("CT6101", add, lambda: ((_p([64], [16]), _p([64], [16]), _t([64])), {})),
    ("CT6101", add, lambda: ((_p([64], [16]), 3.0, _t([64])), {})),
    ("CT6102", add, lambda: ((_p([64], [16]), _t([64], f16), _t([64])), {})),
    ("CT6102", add, lambda: ((_p([64], [16], i32), _t([64]), _t([64])), {})),
    ("CT6103", add, lambda: ((_p([64], [16]), _t([64]), _t([64])), {"B": 32})),
    ("CT6102", add, lambda: ((_p([64], [16]), _t([64]), _t([64])), {"B": 16.0})),
    ("CT6102", add, lambda: ((_p([64], [16]), _t([64]), _t([64])), {"B": True})),
    ("CT6105", add, lambda: ((_p([64], [16]), _t([8, 8]), _t([64])), {})),
    ("CT6106", exp2d, lambda: ((_p([64], [16]), _t([8, 8])), {})),
    ("CT6102", saxpy, lambda: ((_p([64], [16]), _t([64]), "2"), {})),
    ("CT6101", saxpy, lambda: ((_p([64], [16]), _t([64]), _t([64])), {})),
    ("CT6102", shift, lambda: ((_p([8], [4], i32), _t([8], i32), 128), {})),
    ("CT6102", shift, lambda: ((_p([8], [4], i32), _t([8], i32), 2.0), {})),
    ("CT6102", shift, lambda: ((_p([8], [4], i32), _t([8], i32), True), {})),
    ("CT6103", shift, lambda: ((_p([8], [4], i32), _t([8], i32), 1), {"N": 4})),
    ("CT6103", shift, lambda: ((_p([8], [4], i32), _t([0], i32), 1), {})),
    ("CT6002", shift, lambda: ((_p([8], [2], i32), _t([8], i32), 1), {})),
    ("CT6200", shift, lambda: ((_p([32], [4], i32), _t([8], i32), 1), {})),
    ("CT6200", add, lambda: ((_p([64], [16]), _t([32]), _t([64])), {})),
    ("CT6003", two_out, lambda: ((_p([64], [16]), _p([32], [16]), _t([64])), {})),
    ("CT6104", scaled, lambda: ((_p([64], [16]), 1.0), {})),
    ("CT6102", scaled, lambda: ((_p([64], [16]), 1.0), {"S": "x"})),
    ("CT5005", two_out, lambda: ((lambda p: (p, p, _t([64])))(_p([64], [16])), {})),
    ("CT6108", walk, lambda: ((_p([16, 16], [4, 8]).persistent(2), _t([16, 16])), {"G": 1})),
]


@cutile.entry
def times(z: Mut[Tensor[f32, [16]]], C: Const[int]):
    z.store(z.load() * C)


@pytest.mark.parametrize("c", [2**31, 2**63, -(2**64)])
def test_an_int_const_past_32_or_64_bits_is_ct6103(c: int) -> None:
    # one past 64 bits reached the native binder as "another value": CT6102, "expects an
    # int, got an int"
    assert launch_outcome(times, (_p([16], [16]),), {"C": c}) == "CT6103"


@pytest.mark.parametrize("index", range(len(ERROR_CASES)))
def test_each_misuse_has_its_error(index: int) -> None:
    code, kernel, make = ERROR_CASES[index]
    args, kwargs = make()
    if code == "CT6108":  # no such error for one mapped partition: it must launch
        code = "ok"
    assert launch_outcome(kernel, args, kwargs) == code


def test_moved_and_overlapping_arguments() -> None:
    x = api.ones([64], f32)
    held = add(_p([64], [16]), x, x)
    assert launch_outcome(add, (_p([64], [16]), x, _t([64])), {}) == "CT5001"
    held.sync()
    base = api.zeros([64], f32)
    view = base[:32]
    out = _p([32], [16])
    assert launch_outcome(add, (out, view, base[16:48]), {}) == "ok"
    # an output overlapping an input: the partition's storage is unique, so build the
    # overlap from two outputs of one kernel instead
    p = _p([64], [16])
    assert launch_outcome(two_out, (p, p, x), {}) == "CT5005"


def test_persistent_grids_follow_the_facts() -> None:
    assert _persistent(walk) == {"z"} and _persistent(add) == set()
    for nb, want in ((None, 20), (1, 1), (3, 3), (40, 40)):
        z = _p([16, 40], [4, 8]).persistent(nb)
        op = walk(z, _t([16, 40]), G=2)
        assert op.grid == (want, 1, 1)  # 20 tiles; one block per SM (132) is capped by them
        op._give_back()


# -- property: random argument mixes ------------------------------------------------------------

DTYPES = {"f32": f32, "f16": f16, "i32": i32}
TILES = [1, 2, 4, 8, 16]


@st.composite
def tensor_like(draw: st.DrawFn, shape: list[int], dtype: Any) -> Any:
    """A tensor of `shape`: whole, a slice of a larger one, or a strided view."""
    kind = draw(st.sampled_from(["whole", "whole", "slice", "step"]))
    if kind == "whole":
        return api.zeros(shape, dtype)
    if kind == "slice":
        t = api.zeros([d + 3 for d in shape], dtype)
        return t[tuple(slice(1, 1 + d) for d in shape)]
    t = api.zeros([2 * d + 1 for d in shape], dtype)
    return t[tuple(slice(0, 2 * d, 2) for d in shape)]


@st.composite
def valid_call(draw: st.DrawFn, kernel: EntryKernel) -> tuple[list[Any], dict[str, Any]]:
    """Arguments the kernel accepts (shapes agree, Consts consistent, inputs long enough)."""
    runtime = [p for p in kernel.entry.params if p.kind != "const"]
    consts = {p.name: p for p in kernel.entry.params if p.kind == "const"}
    value: dict[str, Any] = {}
    extents: list[int] = []
    args: list[Any] = []
    for p in runtime:
        if p.kind == "mut_tensor":
            tile = []
            for d in p.shape or []:
                if isinstance(d, str):
                    value.setdefault(d, draw(st.sampled_from(TILES)))
                    tile.append(value[d])
                else:
                    tile.append(d)
            if not extents:
                extents = [draw(st.integers(1, 40)) for _ in tile]
            part = api.zeros(extents, DTYPES[p.dtype or "f32"]).partition(tile)
            if p.name in _persistent(kernel):
                part = part.persistent(draw(st.sampled_from([None, 1, 2, 7])))
            args.append(part)
        elif p.kind == "tensor":
            shape = []
            for axis, d in enumerate(p.shape or []):
                if isinstance(d, str):
                    value.setdefault(d, extents[axis] if axis < len(extents) else 8)
                    shape.append(value[d])
                elif d == -1:
                    base = extents[axis] if axis < len(extents) else 8
                    shape.append(base + draw(st.sampled_from([0, 0, 0, 3])))
                else:
                    shape.append(d)
            args.append(draw(tensor_like(shape, DTYPES[p.dtype or "f32"])))
        else:
            d = p.dtype or "f32"
            args.append(draw(st.floats(-8, 8, width=32)) if d.startswith("f")
                        else draw(st.integers(-128, 127)))
    kwargs: dict[str, Any] = {}
    for name, c in consts.items():
        if name not in value:
            kwargs[name] = draw(st.floats(-4, 4)) if c.dtype == "float" else draw(
                st.sampled_from([1, 2, 3]))
        elif draw(st.integers(0, 3)) == 0:
            kwargs[name] = value[name]  # a keyword that agrees
    return args, kwargs


OTHER_VALUES = [np.float32(1.5), np.int64(7), np.int8(3), 2**70, None, "s", True, 1.0, 3,
                -129, 128]


@st.composite
def call(draw: st.DrawFn, kernel: EntryKernel | None = None, dead: bool = True,
         ) -> tuple[EntryKernel, tuple[Any, ...], dict[str, Any], list[Any]]:
    """A valid call (of `kernel`, else of any), then up to two mutations: each makes it
    invalid, or valid only after the Python binder normalizes it. (`dead=False`: no
    mutation passes a tensor an unrun op holds; such an op, made while drawing an example
    Hypothesis then drops, would warn that it never ran.)"""
    kernel = kernel or draw(st.sampled_from(KERNELS))
    kernel._launcher or kernel._make_launcher()
    args, kwargs = draw(valid_call(kernel))
    runtime = [p for p in kernel.entry.params if p.kind != "const"]
    held: list[Any] = []
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2]))):
        i = draw(st.integers(0, max(len(args) - 1, 0)))
        m = draw(st.sampled_from([
            "dtype", "swap", "rank", "value", "const", "alias", "dead", "extra", "missing",
            "keyword", "short", "tile", "nan",
        ]))
        if i >= len(args) and m in ("value", "alias", "nan"):
            continue  # nothing at position i (a keyword mutation emptied the positionals)
        a = args[i] if i < len(args) else None
        if m == "dtype" and isinstance(a, _Handle):
            d = draw(st.sampled_from([f32, f16, i32]))
            args[i] = (api.zeros(list(a.shape), d).partition(list(a.tile_shape))
                       if isinstance(a, Partition) else api.zeros(list(a.shape), d))
        elif m == "swap" and isinstance(a, _Handle):
            args[i] = (api.zeros(list(a.shape), a.dtype) if isinstance(a, Partition)
                       else api.zeros(list(a.shape), a.dtype).partition([1] * a.ndim))
        elif m == "rank" and isinstance(a, _Handle):
            args[i] = api.zeros([*a.shape, 2], a.dtype)
        elif m == "value":
            args[i] = draw(st.sampled_from(OTHER_VALUES))
        elif m == "const":
            names = [p.name for p in kernel.entry.params if p.kind == "const"] + ["nope"]
            kwargs[draw(st.sampled_from(names))] = draw(st.sampled_from(
                [0, -1, 1, 2, 4, 16, 1.0, 2.5, True, np.int64(4), "4"]))
        elif m == "alias" and len(args) >= 2:
            j = draw(st.integers(0, len(args) - 1))
            args[j] = args[i]
        elif m == "dead" and dead and isinstance(a, _Handle):
            t = api.zeros([8], f32)
            held.append(add(api.zeros([8], f32).partition([8]), t, t))
            args[i] = t
        elif m == "extra":
            args.append(api.zeros([4], f32))
        elif m == "missing" and args:
            args.pop()
        elif m == "keyword" and len(args) == len(runtime):
            kwargs[runtime[i].name] = args.pop(i)
            if i < len(args):  # a keyword before a positional: keep the rest by keyword
                for p in runtime[i + 1:]:
                    kwargs[p.name] = args.pop(i)
        elif m == "short" and isinstance(a, _Handle) and not isinstance(a, Partition):
            args[i] = api.zeros([max(d - 3, 0) for d in a.shape], a.dtype)
        elif m == "tile" and isinstance(a, Partition):
            args[i] = api.zeros(list(a.shape), a.dtype).partition(
                [draw(st.sampled_from(TILES)) for _ in a.shape])
        elif m == "nan":
            args[i] = float("nan")
    return kernel, tuple(args), kwargs, held


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(call())
def test_random_calls_launch_or_raise_a_typed_error(
    c: tuple[EntryKernel, tuple[Any, ...], dict[str, Any], list[Any]],
) -> None:
    kernel, args, kwargs, held = c
    try:
        event(f"{kernel.name}: {launch_outcome(kernel, args, kwargs)}")
    finally:
        for op in held:
            op._give_back()


def decisions(kernel: EntryKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What the launcher decides for a call: its grid, Consts, specialization and the types
    of its values, or its typed error. Hands the arguments back."""
    got = _outcome(lambda: kernel(*args, **kwargs))
    if got[0] != "ok":
        return got
    op = got[1]
    try:
        return (op.grid, tuple(op.consts), op.specialization,
                tuple(type(v).__name__ for v in op.values))
    finally:
        op._give_back()


def test_layouts_that_share_their_facts_launch_their_own_grids() -> None:
    """Extents 256, 384 and 512 all divide by 16: their specialization is the same, their
    grids are not. Launched in turn, each call runs its own grid over its own data."""
    rng = np.random.default_rng(7)
    for n in [256, 384, 256, 512, 384] * 2:
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        z = api.full([n], np.nan, f32).partition([128])
        op = add(z, api.from_numpy(a), api.from_numpy(b))
        assert op.grid == (n // 128, 1, 1)
        z, _, _ = op.sync()
        np.testing.assert_array_equal(z.unpartition().to_numpy(), a + b)
    # the same layout at another alignment is another specialization
    base = api.from_numpy(np.arange(257, dtype=np.float32))
    for x, aligned in ((base[:256], True), (base[1:], False), (base[:256], True)):
        op = add(api.zeros([256], f32).partition([128]), x, api.ones([256], f32))
        assert dict(op.binding.spec.tensors)["x"].base_align16 is aligned
        z, _, _ = op.sync()
        np.testing.assert_array_equal(z.unpartition().to_numpy(), x.to_numpy() + 1)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(KERNELS).flatmap(
    lambda k: st.tuples(*(call(k, dead=False) for _ in range(3)))))
def test_remembered_decisions_are_the_ones_binding_makes(calls: Any) -> None:
    """A launcher reuses the decisions of an earlier call whose arguments have the same
    launch facts (`LaunchMemo`): after any calls, a call decides what it decides on a fresh
    launcher (grid, Consts, specialization, values), or raises the same error."""
    kernel = calls[0][0]
    kernel._launcher = None
    after = [decisions(k, a, kw) for k, a, kw, _ in calls]
    for i, (k, a, kw, _) in enumerate(calls):
        kernel._launcher = None
        assert decisions(k, a, kw) == after[i]
    for k, a, kw, _ in calls:  # the same calls again, on a launcher that saw them
        event(f"{kernel.name}: {'error' if decisions(k, a, kw)[0] == 'error' else 'ok'}")
    kernel._launcher = None
    assert [decisions(k, a, kw) for k, a, kw, _ in calls + calls] == after + after


# -- specializations are the arguments' facts ---------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(1, 70), st.sampled_from([1, 2, 4, 8, 16, 32]), st.integers(0, 3),
       st.sampled_from([1, 2, 3]))
def test_compiled_specializations_are_the_arguments_facts(
    n: int, tile: int, offset: int, step: int,
) -> None:
    seen: list[Specialization] = []
    real = EntryKernel._runnable

    def record(self: EntryKernel, spec: Specialization, device: int | None = None) -> Any:
        seen.append(spec)
        return real(self, spec, device)

    EntryKernel._runnable = record  # type: ignore[method-assign]
    try:
        add._launcher = None  # a fresh kernel table: every launch compiles (from the cache)
        base = api.from_numpy(np.arange(offset + n * step, dtype=np.float32))
        x = base[offset::step]
        y = api.ones([x.shape[0]], f32)
        z = api.full([x.shape[0]], np.nan, f32).partition([tile])
        want = Specialization(
            (("B", tile),),
            tuple((name, TensorFacts.of(t.dtype, t.shape, t.strides, t.address))
                  for name, t in (("z", z), ("x", x), ("y", y))),
            32,
        )
        z, x, y = add(z, x, y).sync()
        assert seen == [want]
        np.testing.assert_array_equal(z.unpartition().to_numpy(), x.to_numpy() + 1)
    finally:
        EntryKernel._runnable = real  # type: ignore[method-assign]
