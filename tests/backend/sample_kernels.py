"""Kernels and single-op entries built with `cutile.ir.Builder`, shared by the backend tests.

The representative kernels follow the calling convention of docs/design.md §4: a tensor travels
as base pointer, shape[0..N), stride[0..N) (i32), each a rank-0 tile parameter, with
`assume` hints on pointers (div_by 16), shapes (bounded >= 0) and leading strides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cutile import dtypes as dt
from cutile.ir import Bounded, Builder, DivBy, Location, Module, SameElements, TileType, Value
from cutile.ir.types import I32, PointerType, Type, scalar

FILE = "/src/kernels/sample.py"


def loc(line: int, col: int = 4, function: str = "kernel") -> Location:
    return Location(FILE, line, col, function)


def ptr(dtype: dt.DType) -> TileType:
    return scalar(PointerType(dtype))


def _tensor_view(
    b: Builder, base: Value, shape: list[Value], strides: list[Value | int], lead_div: int
) -> Value:
    """make_tensor_view with the hints cuTile emits: div_by<16> pointer, bounded shapes,
    div_by on the leading (dynamic) strides."""
    base = b.assume(base, DivBy(16))
    dims = [b.assume(s, Bounded(0, None)) for s in shape]
    hinted: list[Value | int] = []
    for s in strides:
        if isinstance(s, Value):
            s = b.assume(b.assume(s, Bounded(0, None)), DivBy(lead_div))
        hinted.append(s)
    return b.make_tensor_view(base, dims, hinted)


def vector_add_f32(tile: int = 1024) -> Module:
    """z[i] = x[i] + y[i] over 1-D f32 tensors, one tile of `tile` per block."""
    b = Builder()
    fn = b.entry("vector_add", [ptr(dt.f32), I32, I32] * 3, loc=loc(1, 0, "vector_add"))
    p = fn.params
    with b.location(loc(2, function="vector_add")):
        token = b.make_token()
        views = [
            b.make_partition_view(_tensor_view(b, p[3 * i], [p[3 * i + 1]], [1], 1), [tile])
            for i in range(3)
        ]
        bx, _, _ = b.block_ids()
    with b.location(loc(3, function="vector_add")):
        x, _ = b.load_view(views[0], [bx], token)
        y, _ = b.load_view(views[1], [bx], token)
    with b.location(loc(4, function="vector_add")):
        b.store_view(b.binary("addf", x, y), views[2], [bx], token)
        b.return_()
    return b.module


def exp_2d(tile: tuple[int, int] = (64, 64)) -> Module:
    """y = exp(x) over 2-D f32 tensors tiled by a 2-D grid."""
    b = Builder()
    fn = b.entry("exp_2d", [ptr(dt.f32), I32, I32, I32, I32] * 2, loc=loc(10, 0, "exp_2d"))
    p = fn.params
    with b.location(loc(11, function="exp_2d")):
        token = b.make_token()
        views = []
        for i in range(2):
            base, m, n, s0, _ = p[5 * i : 5 * i + 5]
            tv = _tensor_view(b, base, [m, n], [s0, 1], 4)
            views.append(b.make_partition_view(tv, list(tile), padding="zero"))
        bx, by, _ = b.block_ids()
    with b.location(loc(12, function="exp_2d")):
        x, _ = b.load_view(views[0], [bx, by], token)
        y = b.unary("exp", x)
    with b.location(loc(13, function="exp_2d")):
        b.store_view(y, views[1], [bx, by], token)
        b.return_()
    return b.module


def saxpy(tile: int = 256) -> Module:
    """y = a * x + y with a scalar f32 parameter `a`."""
    b = Builder()
    params: list[Type] = [scalar(dt.f32), ptr(dt.f32), I32, I32, ptr(dt.f32), I32, I32]
    fn = b.entry("saxpy", params, loc=loc(20, 0, "saxpy"))
    a, xp, xn, _, yp, yn, _ = fn.params
    with b.location(loc(21, function="saxpy")):
        token = b.make_token()
        xv = b.make_partition_view(_tensor_view(b, xp, [xn], [1], 1), [tile])
        yv = b.make_partition_view(_tensor_view(b, yp, [yn], [1], 1), [tile])
        bx, _, _ = b.block_ids()
        x, _ = b.load_view(xv, [bx], token)
        y, t1 = b.load_view(yv, [bx], token)
    with b.location(loc(22, function="saxpy")):
        a_tile = b.broadcast(b.reshape(a, [1]), [tile])
        out = b.fma(a_tile, x, y)
    with b.location(loc(23, function="saxpy")):
        b.store_view(out, yv, [bx], t1)  # ordered after the load of y through its token
        b.return_()
    return b.module


def matmul_f16(bm: int = 128, bn: int = 128, bk: int = 64) -> Module:
    """C = A @ B in f16 with an f32 accumulator: a `for` loop over K tiles with `mmaf`."""
    b = Builder()
    fn = b.entry("matmul", [ptr(dt.f16), I32, I32, I32, I32] * 3, loc=loc(30, 0, "matmul"))
    p = fn.params

    def view(i: int, tile: list[int], padding: str | None) -> Value:
        base, m, n, s0, _ = p[5 * i : 5 * i + 5]
        return b.make_partition_view(
            _tensor_view(b, base, [m, n], [s0, 1], 8), tile, padding=padding
        )

    with b.location(loc(31, function="matmul")):
        token = b.make_token()
        av = view(0, [bm, bk], "zero")
        bv = view(1, [bk, bn], "zero")
        cv = view(2, [bm, bn], None)
        bx, by, _ = b.block_ids()
        k_tiles = b.get_index_space_shape(av)[1]
        zero = b.scalar_const(0, dt.i32)
        one = b.scalar_const(1, dt.i32)
        acc0 = b.constant(0.0, TileType((bm, bn), dt.f32))
    with b.location(loc(32, function="matmul")), b.for_(zero, k_tiles, one, [acc0]) as loop:
        (acc,) = loop.iter_args
        with b.location(loc(33, 8, "matmul")):
            a, _ = b.load_view(av, [bx, loop.iv], token)
            bt, _ = b.load_view(bv, [loop.iv, by], token)
        with b.location(loc(34, 8, "matmul")):
            b.continue_([b.mmaf(a, bt, acc)])
    with b.location(loc(35, function="matmul")):
        out = b.convert("ftof", loop.results[0], dt.f16)
        b.store_view(out, cv, [bx, by], token)
        b.return_()
    return b.module


REPRESENTATIVE: dict[str, Callable[[], Module]] = {
    "vector_add_f32": vector_add_f32,
    "exp_2d": exp_2d,
    "saxpy": saxpy,
    "matmul_f16": matmul_f16,
}


# -- single-op entries -------------------------------------------------------------------


@dataclass(frozen=True)
class OpCase:
    """An entry exercising one op; `expect` must all appear in the `tileirdisasm` text."""

    name: str
    build: Callable[[Builder, list[Value]], object]
    expect: tuple[str, ...]
    params: tuple[Type, ...] = ()
    since: str = "13.3"

    def module(self) -> Module:
        b = Builder()
        fn = b.entry("k", list(self.params), loc=loc(1, 0, "k"))
        with b.location(loc(2, function="k")):
            self.build(b, fn.params)
            b.return_()
        return b.module


def _t(*shape: int, e: dt.DType = dt.f32) -> TileType:
    return TileType(tuple(shape), e)


def _f(b: Builder, *shape: int) -> Value:
    return b.constant(1.5, _t(*(shape or (16,))))


def _i(b: Builder, *shape: int, e: dt.DType = dt.i32) -> Value:
    return b.constant(3, _t(*(shape or (16,)), e=e))


Body = Callable[[Builder, list[Value]], object]


def _binary(name: str, operand: Callable[[Builder], Value], **attrs: str) -> Body:
    return lambda b, p: b.binary(name, operand(b), operand(b), **attrs)


def _unary(name: str) -> Body:
    return lambda b, p: b.unary(name, _f(b))


def _cases() -> list[OpCase]:
    cases: list[OpCase] = []

    def add(
        name: str, build: Callable[[Builder, list[Value]], object], *expect: str, **kw: object
    ) -> None:
        cases.append(OpCase(name, build, expect or (name,), **kw))  # type: ignore[arg-type]

    for n in ("addf", "subf", "mulf", "divf"):
        add(n, _binary(n, _f), f"= {n} ")
    add("addf_rounding_ftz",
        lambda b, p: b.binary("addf", _f(b), _f(b), rounding_mode="zero", flush_to_zero=True),
        "addf", "rounding<zero>", "flush_to_zero")  # fmt: skip
    add("remf", lambda b, p: b.binary("remf", _f(b), _f(b)))
    add("maxf", lambda b, p: b.binary("maxf", _f(b), _f(b), propagate_nan=True),
        "maxf", "propagate_nan")  # fmt: skip
    add("minf", lambda b, p: b.binary("minf", _f(b), _f(b), flush_to_zero=True),
        "minf", "flush_to_zero")  # fmt: skip
    add("pow", lambda b, p: b.binary("pow", _f(b), _f(b)), "= fpowf ")  # 13.4+ spelling
    add("atan2", lambda b, p: b.binary("atan2", _f(b), _f(b)))
    for n in ("addi", "subi", "muli", "shli"):
        add(n, _binary(n, _i, overflow="no_signed_wrap"), f"= {n} ", "overflow<no_signed_wrap>")
    add("divi", lambda b, p: b.binary("divi", _i(b), _i(b), signedness="unsigned",
                                       rounding="positive_inf"),
        "divi", "unsigned", "rounding<positive_inf>")  # fmt: skip
    for n in ("remi", "maxi", "mini", "shri"):
        add(n, _binary(n, _i, signedness="unsigned"), f"= {n} ", "unsigned")
    for n in ("andi", "ori", "xori", "mulhii"):
        add(n, _binary(n, _i), f"= {n} ")
    for n in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh",
              "cosh", "tanh", "floor", "ceil", "absf", "negf"):  # fmt: skip
        add(n, _unary(n), f"= {n} ")
    add("exp_approx", lambda b, p: b.unary("exp", _f(b), rounding_mode="approx"),
        "exp", "rounding<approx>")  # fmt: skip
    add("sqrt_attrs", lambda b, p: b.unary("sqrt", _f(b), rounding_mode="approx",
                                           flush_to_zero=True),
        "sqrt", "rounding<approx>", "flush_to_zero")  # fmt: skip
    add("tanh_approx", lambda b, p: b.unary("tanh", _f(b), rounding_mode="approx"),
        "tanh", "rounding<approx>")  # fmt: skip
    add(
        "exp2_ftz", lambda b, p: b.unary("exp2", _f(b), flush_to_zero=True), "exp2", "flush_to_zero"
    )
    add("rsqrt_ftz", lambda b, p: b.unary("rsqrt", _f(b), flush_to_zero=True),
        "rsqrt", "flush_to_zero")  # fmt: skip
    add("absi", lambda b, p: b.unary("absi", _i(b)))
    add("negi", lambda b, p: b.unary("negi", _i(b), overflow="no_signed_wrap"),
        "negi", "overflow<no_signed_wrap>")  # fmt: skip
    add("fma", lambda b, p: b.fma(_f(b), _f(b), _f(b), rounding_mode="positive_inf"),
        "fma", "rounding<positive_inf>")  # fmt: skip
    add("fpowi", lambda b, p: b.op("fpowi", [_f(b), _i(b)], [_t(16)]).result, "fpowi", since="13.4")
    add("cmpf", lambda b, p: b.cmp("cmpf", "less_than", _f(b), _f(b),
                                   comparison_ordering="unordered"),
        "cmpf less_than unordered", "-> tile<16xi1>")  # fmt: skip
    add("cmpi", lambda b, p: b.cmp("cmpi", "greater_than_or_equal", _i(b), _i(b),
                                   signedness="unsigned"),
        "cmpi greater_than_or_equal", ", unsigned")  # fmt: skip
    add("select", lambda b, p: b.select(b.cmp("cmpf", "equal", _f(b), _f(b)), _f(b), _f(b)),
        "select")  # fmt: skip
    add("mmaf", lambda b, p: b.mmaf(b.constant(1.0, _t(64, 16, e=dt.f16)),
                                    b.constant(1.0, _t(16, 32, e=dt.f16)),
                                    b.constant(0.0, _t(64, 32))),
        "mmaf", "tile<64x16xf16>, tile<16x32xf16>, tile<64x32xf32>")  # fmt: skip
    add("mmai", lambda b, p: b.mmai(_i(b, 64, 32, e=dt.i8), _i(b, 32, 32, e=dt.i8),
                                    _i(b, 64, 32), "unsigned", "signed"),
        "mmai", "unsigned signed")  # fmt: skip
    add("ftof", lambda b, p: b.convert("ftof", _f(b), dt.bf16, rounding_mode="zero"),
        "ftof", "rounding<zero>", "-> tile<16xbf16>")  # fmt: skip
    add("ftoi", lambda b, p: b.convert("ftoi", _f(b), dt.i32, signedness="signed"),
        "ftoi", "signed", "-> tile<16xi32>")  # fmt: skip
    add("itof", lambda b, p: b.convert("itof", _i(b), dt.f32, signedness="unsigned"),
        "itof", "unsigned", "-> tile<16xf32>")  # fmt: skip
    add("exti", lambda b, p: b.convert("exti", _i(b), dt.i64, signedness="signed"),
        "exti", "-> tile<16xi64>")  # fmt: skip
    add("trunci", lambda b, p: b.convert("trunci", _i(b), dt.i16, overflow="no_unsigned_wrap"),
        "trunci", "overflow<no_unsigned_wrap>", "-> tile<16xi16>")  # fmt: skip
    add("bitcast", lambda b, p: b.convert("bitcast", _f(b), dt.i32), "bitcast", "-> tile<16xi32>")
    add("reshape", lambda b, p: b.reshape(_f(b, 16), [4, 4]), "reshape", "-> tile<4x4xf32>")
    add("broadcast", lambda b, p: b.broadcast(_f(b, 1, 16), [8, 16]),
        "broadcast", "-> tile<8x16xf32>")  # fmt: skip
    add(
        "permute",
        lambda b, p: b.permute(_f(b, 4, 16), [1, 0]),
        "permute",
        "[1, 0]",
        "-> tile<16x4xf32>",
    )
    add(
        "cat",
        lambda b, p: b.cat(_f(b, 4, 16), _f(b, 4, 16), 1),
        "cat",
        "dim = 1",
        "-> tile<4x32xf32>",
    )
    add("extract", lambda b, p: b.extract(_f(b, 8, 16), [b.scalar_const(1, dt.i32),
                                                         b.scalar_const(0, dt.i32)], [4, 16]),
        "extract", "-> tile<4x16xf32>")  # fmt: skip
    add("insert", lambda b, p: b.op("insert", [_f(b, 4, 16), _f(b, 8, 16),
                                               b.scalar_const(1, dt.i32),
                                               b.scalar_const(0, dt.i32)], [_t(8, 16)]).result,
        "insert", since="13.4")  # fmt: skip
    add("gdc_wait_tko", lambda b, p: b.gdc_wait(), "= gdc_wait_tko -> token",
        since="13.4")  # fmt: skip
    add("gdc_launch_dependents_tko", lambda b, p: b.gdc_launch_dependents(b.gdc_wait()),
        "= gdc_wait_tko -> token", "= gdc_launch_dependents_tko token = %0 -> token",
        since="13.4")  # fmt: skip
    add("iota", lambda b, p: b.iota(32, dt.i32), "iota : tile<32xi32>")
    add("constant_dense_i32", lambda b, p: b.constant(list(range(8)), _t(8, e=dt.i32)),
        "<i32: [0, 1, 2, 3, 4, 5, 6, 7]>")  # fmt: skip
    add("constant_i1", lambda b, p: b.constant([True, False, False, True] * 4, _t(16, e=dt.bool_)),
        "<i1: [true, false, false, true, true, false,")  # fmt: skip
    add("constant_bf16", lambda b, p: b.constant([1.0, -2.5, 0.15625, 0.0], _t(4, e=dt.bf16)),
        "<bf16: [1.000000e+00, -2.500000e+00, 1.562500e-01, 0.000000e+00]>")  # fmt: skip
    add("constant_f16", lambda b, p: b.constant([1.0, -2.5, 65504.0, 0.0], _t(4, e=dt.f16)),
        "<f16: [1.000000e+00, -2.500000e+00, 6.550400e+04, 0.000000e+00]>")  # fmt: skip
    add("constant_i64", lambda b, p: b.constant([-1, 2**40], _t(2, e=dt.i64)),
        "<i64: [-1, 1099511627776]>")  # fmt: skip
    add("constant_tf32", lambda b, p: b.constant(0.5, _t(8, e=dt.tf32)),
        "<tf32: 5.000000e-01>")  # fmt: skip
    add("assume_div_by", lambda b, p: b.assume(p[0], DivBy(16)), "assume div_by<16>, %arg0",
        params=(ptr(dt.f32),))  # fmt: skip
    add("assume_div_by_every", lambda b, p: b.assume(_i(b), DivBy(4, every=2, along=0)),
        "div_by<4, every 2 along 0>")  # fmt: skip
    add("assume_bounded", lambda b, p: b.assume(p[0], Bounded(-3, 100)), "bounded<-3, 100>",
        params=(I32,))  # fmt: skip
    add("assume_same_elements", lambda b, p: b.assume(_i(b), SameElements((4,))),
        "same_elements<[4]>")  # fmt: skip
    add("assert", lambda b, p: b.assert_(b.cmp("cmpi", "less_than", _i(b), _i(b)), "bad value"),
        'assert %', '"bad value"')  # fmt: skip
    add("print_tko", lambda b, p: b.print_("x=%f y=%d\n", [_f(b), _i(b)], b.make_token()),
        'print_tko "x=%f y=%d\\0A"', "token=")  # fmt: skip
    add("get_tile_block_id", lambda b, p: b.block_ids(), "get_tile_block_id : tile<i32>")
    add("get_num_tile_blocks", lambda b, p: b.num_blocks(), "get_num_tile_blocks : tile<i32>")
    add("join_tokens", lambda b, p: b.join_tokens([b.make_token(), b.make_token()]),
        "join_tokens")  # fmt: skip

    def pointers(b: Builder, p: list[Value]) -> None:
        ptrs = b.broadcast(b.reshape(p[0], [1]), [16])
        ptrs = b.offset(ptrs, b.iota(16, dt.i32))
        mask = b.cmp("cmpi", "less_than", b.iota(16, dt.i32), _i(b))
        v, t = b.load_ptr(ptrs, mask, _f(b), b.make_token(), memory_ordering_semantics="relaxed",
                          memory_scope="device")  # fmt: skip
        t2 = b.store_ptr(ptrs, v, mask, t)
        old, t3 = b.atomic_rmw(ptrs, v, "addf", mask, t2)
        b.atomic_cas(ptrs, v, old, None, t3, "acq_rel", "sys")
        b.int_to_ptr(b.ptr_to_int(ptrs), dt.f32)
        b.op("ptr_to_ptr", [ptrs], [TileType((16,), PointerType(dt.i32))])

    add("pointers", pointers,
        "offset", "load_ptr_tko relaxed device", "store_ptr_tko weak",
        "atomic_rmw_tko relaxed device", ", addf,", "atomic_cas_tko acq_rel sys",
        "ptr_to_int", "int_to_ptr", "ptr_to_ptr", params=(ptr(dt.f32),))  # fmt: skip

    def views(b: Builder, p: list[Value]) -> None:
        tv = b.make_tensor_view(p[0], [p[1], 64], [64, 1])
        b.get_tensor_shape(tv)
        pv = b.make_partition_view(tv, [16, 32], dim_map=[1, 0], padding="neg_inf")
        b.get_index_space_shape(pv)
        z = b.scalar_const(0, dt.i32)
        x, t = b.load_view(pv, [z, z], None, memory_scope="device",
                           memory_ordering_semantics="acquire")  # fmt: skip
        b.store_view(x, pv, [z, z], t,
                     optimization_hints={"sm_90": {"allow_tma": False, "latency": 3}})  # fmt: skip

    add("views", views,
        "make_tensor_view %arg0, shape = [%arg1, 64], strides = [64, 1]",
        "get_tensor_shape", "padding_value = neg_inf", "dim_map=[1, 0]",
        "get_index_space_shape", "load_view_tko acquire device",
        "optimization_hints = <sm_90 = {allow_tma = false, latency = 3}>",
        params=(ptr(dt.f32), I32))  # fmt: skip

    def control(b: Builder, p: list[Value]) -> None:
        z, one, n = (b.scalar_const(v, dt.i32) for v in (0, 1, 10))
        with b.for_(z, n, one, [_f(b)], unsigned_cmp=True) as loop:
            c = b.cmp("cmpi", "less_than", loop.iv, n)
            with b.if_(c, [loop.iter_args[0].type]) as branch:
                with branch.then_():
                    b.yield_([b.binary("addf", loop.iter_args[0], _f(b))])
                with branch.else_():
                    b.yield_([loop.iter_args[0]])
            b.continue_(branch.results)
        with b.loop([z], [I32]) as lp:
            i2 = b.binary("addi", lp.iter_args[0], one)
            with b.if_(b.cmp("cmpi", "greater_than", i2, n)) as branch:
                with branch.then_():
                    b.break_([i2])
            b.continue_([i2])

    add("control", control,
        "for unsigned %", "iter_values(", "if %", "yield %", "} else {", "continue %",
        "loop iter_values(", "break %")  # fmt: skip

    def reductions(b: Builder, p: list[Value]) -> None:
        x = _f(b, 8, 16)
        with b.reduce([x], 1, [float("-inf")]) as r:
            b.yield_([b.binary("maxf", *r.args)])
        with b.reduce([x, _i(b, 8, 16)], 0, [0.0, 0]) as r:
            e0, a0, e1, a1 = r.args
            b.yield_([b.binary("addf", e0, a0), b.binary("addi", e1, a1)])
        with b.scan([x], 1, [1.0], reverse=True) as s:
            b.yield_([b.binary("mulf", *s.args)])

    add("reductions", reductions,
        "reduce %", "dim=1 identities=[0xFF800000 : f32]", "-> tile<8xf32>",
        "identities=[0.000000e+00 : f32, 0 : i32]", "scan %", "reverse=true",
        "identities=[1.000000e+00 : f32]")  # fmt: skip
    add("return", lambda b, p: None, "return")
    return cases


OP_CASES: list[OpCase] = _cases()


def ops_in(module: Module) -> set[str]:
    return {op.name for fn in module.functions for op in fn.walk()}
