"""The kernel-side DSL: annotations (`Tensor`, `Mut`, `Atomic`, `Const`, `Ptr`, `Tile`),
element types, and the operations a kernel may call.

Nothing here runs: a kernel's body is captured as source and compiled. Calling an operation
outside a kernel raises an error that says so (Triton's `@builtin` habit).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from .annotations import (
    Atomic,
    AtomicSpec,
    Const,
    ConstSpec,
    Mut,
    MutSpec,
    Ptr,
    PtrSpec,
    Tensor,
    TensorSpec,
    Tile,
    TileSpec,
)
from .dtypes import (
    DType,
    bf16,
    bool_,
    f8e4m3fn,
    f8e5m2,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    tf32,
    u8,
    u16,
    u32,
    u64,
)
from .errors import CutileError

F = TypeVar("F", bound=Callable[..., Any])

# name -> True when the op needs `unsafe`
OPS: dict[str, bool] = {}


def _op(name: str, *, unsafe: bool = False) -> Callable[[F], F]:
    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def stub(*args: Any, **kwargs: Any) -> NoReturn:
            raise CutileError(
                f"`cutile.core.{name}` can only be used inside a `@cutile.entry` or "
                "`@cutile.device` function",
                code="CT0010",
                hint="kernel bodies are compiled, not run by Python; call the kernel instead",
            )

        stub.__cutile_op__ = name  # type: ignore[attr-defined]
        OPS[name] = unsafe
        return stub  # type: ignore[return-value]

    return wrap


# ---------------------------------------------------------------------------- grid
@_op("block_id")
def block_id(axis: int | None = None) -> Any:
    """This block's tile-block index along `axis` (0, 1, 2); with no axis, all three."""


@_op("num_blocks")
def num_blocks(axis: int | None = None) -> Any:
    """The launch grid's size along `axis`."""


@_op("num_tiles")
def num_tiles(tensor: Any, axis: int, shape: Any = None) -> Any:
    """Number of `shape` tiles along `axis` of `tensor`'s full extent (ceil division); for
    a `Mut` output without `shape`, the tile count of its own partition."""


@_op("cdiv")
def cdiv(a: Any, b: Any) -> Any:
    """Ceiling division of integers."""


# ---------------------------------------------------------------------------- memory
@_op("load_tile_like")
def load_tile_like(src: Any, like: Any, padding: str = "zero", latency: int | None = None,
                   allow_tma: bool | None = None) -> Any:
    """Load the tile of `src` at `like`'s tile position and shape (`like` is a `Mut`).
    `latency` (1-10) and `allow_tma` are hints to tileiras (loads of `x.load_tile(...)` and
    `z.load(...)` take them too); they change speed, never the values read. Each may be a
    `cutile.ByTarget(sm_90=..., sm_100=..., default=...)` of values per GPU architecture."""


# ---------------------------------------------------------------------------- creation
@_op("full")
def full(shape: Any, value: Any, dtype: DType = f32) -> Any:
    """A tile of `shape` filled with `value`."""


@_op("zeros")
def zeros(shape: Any, dtype: DType = f32) -> Any:
    """A tile of zeros."""


@_op("ones")
def ones(shape: Any, dtype: DType = f32) -> Any:
    """A tile of ones."""


@_op("arange")
def arange(start: Any, stop: Any = None, step: Any = 1, dtype: DType | None = None) -> Any:
    """The 1-D tile `[start, start + step, ...]` up to but excluding `stop`, as numpy's
    `arange`: `arange(n)` is `[0, 1, ..., n-1]`.

    `start`, `stop` and `step` are compile-time numbers (literals, `Const`s, module
    constants); the length `ceil((stop - start) / step)` must be a power of two (CT3070;
    tiles have power-of-two sizes). `dtype` defaults to `i32`, or `f32` when a bound is a
    float; `arange(n, f32)` (a dtype in `stop`'s place) still means `arange(0, n, 1, f32)`.
    Add a runtime offset afterwards: `arange(0, B) + block_id(0) * B`.

    Example::

        idx = arange(16)                 # [0, 1, ..., 15] (i32)
        odd = arange(1, 32, 2)           # [1, 3, ..., 31]
        xs = arange(0.0, 2.0, 0.25)      # [0.0, 0.25, ..., 1.75] (f32)
    """


# ---------------------------------------------------------------------------- elementwise
@_op("where")
def where(cond: Any, a: Any, b: Any) -> Any:
    """Elementwise select."""


# Elementwise math, one generated function per entry: name -> what it computes.
UNARY_MATH: dict[str, str] = {
    "exp": "the exponential of each element (`e ** x`)",
    "exp2": "two raised to each element (`2 ** x`)",
    "log": "the natural logarithm of each element",
    "log2": "the base-2 logarithm of each element",
    "sqrt": "the square root of each element",
    "rsqrt": "the reciprocal square root of each element (`1 / sqrt(x)`)",
    "sin": "the sine of each element (in radians)",
    "cos": "the cosine of each element (in radians)",
    "tan": "the tangent of each element (in radians)",
    "sinh": "the hyperbolic sine of each element",
    "cosh": "the hyperbolic cosine of each element",
    "tanh": "the hyperbolic tangent of each element",
    "floor": "each element rounded down to an integral value",
    "ceil": "each element rounded up to an integral value",
}


def _unary(name: str) -> Callable[[Any], Any]:
    def fn(x: Any) -> Any:
        raise AssertionError  # replaced by the stub

    what = UNARY_MATH[name]
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{what[0].upper() + what[1:]}: a tile of the same shape.

    `x` is a float tile (f16, bf16, f32, f64; an integer tile is converted to f32 first) or
    a number. Kernel code: call it inside an `@cutile.entry` or `@cutile.device` function;
    `numpy.{name}` and `math.{name}` compute on the host instead.

    Example::

        @cutile.entry
        def k(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
            z.store({name}(load_tile_like(x, z)))
    """
    return _op(name)(fn)


exp = _unary("exp")
log = _unary("log")
log2 = _unary("log2")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
sinh = _unary("sinh")
cosh = _unary("cosh")
tanh = _unary("tanh")
floor = _unary("floor")
ceil = _unary("ceil")


@_op("exp2")
def exp2(x: Any, flush_to_zero: bool = False) -> Any:
    """Two raised to each element (`2 ** x`): a tile of the same shape.

    `x` is a float tile (f16, bf16, f32, f64; an integer tile is converted to f32 first) or
    a number. `flush_to_zero=True` (f32 only) lets the GPU treat subnormal inputs and
    results as zero, the fast path attention kernels use for their softmax; the interpreter
    flushes the same way. Kernel code: `numpy.exp2` and `math.exp2` compute on the host.

    Example::

        @cutile.entry
        def k(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
            z.store(exp2(load_tile_like(x, z), flush_to_zero=True))
    """


@_op("sqrt")
def sqrt(x: Any, rounding: str = "nearest_even", flush_to_zero: bool = False) -> Any:
    """The square root of each element: a tile of the same shape.

    `x` is a float tile (an integer tile is converted to f32 first) or a number.
    `rounding` is "nearest_even" (IEEE, the default), "zero", "negative_inf",
    "positive_inf", or "approx" (f32 only: faster, within a few ulp); `flush_to_zero=True`
    (f32 only) treats subnormals as zero. `numpy.sqrt` and `math.sqrt` compute on the host.

    Example::

        @cutile.entry
        def k(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
            z.store(sqrt(load_tile_like(x, z), rounding="approx"))
    """


@_op("rsqrt")
def rsqrt(x: Any, flush_to_zero: bool = False) -> Any:
    """The reciprocal square root of each element (`1 / sqrt(x)`): a tile of the same shape.

    `x` is a float tile (an integer tile is converted to f32 first) or a number. The GPU
    computes it approximately (PTX `rsqrt.approx`); `flush_to_zero=True` (f32 only) treats
    subnormals as zero. `numpy.rsqrt` does not exist: on the host, `1 / numpy.sqrt(x)`.

    Example::

        @cutile.entry
        def k(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
            z.store(rsqrt(load_tile_like(x, z)))
    """


@_op("truediv")
def truediv(a: Any, b: Any, rounding: str = "nearest_even", flush_to_zero: bool = False
            ) -> Any:
    """`a / b` with a chosen rounding: "nearest_even" (IEEE, what `/` does), "zero",
    "negative_inf", "positive_inf", or "approx" (the GPU's fast division, within 2 ulp);
    `flush_to_zero` flushes f32 subnormal inputs and results to zero."""


@_op("maximum")
def maximum(a: Any, b: Any) -> Any:
    """Elementwise maximum."""


@_op("minimum")
def minimum(a: Any, b: Any) -> Any:
    """Elementwise minimum."""


@_op("pow")
def pow(a: Any, b: Any) -> Any:
    """Elementwise power, the same as `a ** b`.

    Floats use Tile IR's `pow`. Two integers give an integer: a compile-time exponent
    unrolls into multiplications (a negative one is refused, CT3053), a device exponent
    runs by repeated squaring; products wrap like `*`. A negative device exponent gives
    the integer part of the true power (1 for a base of 1, +-1 for -1, otherwise 0).

    Example::

        z.store(pow(load_tile_like(x, z), 3))     # x * x * x, also for integer tiles
    """


@_op("atan2")
def atan2(y: Any, x: Any) -> Any:
    """The angle of the point `(x, y)` in radians, elementwise, in [-pi, pi] (numpy's
    `arctan2(y, x)`): the operands broadcast and promote as for `+`; integers become f32.

    Example::

        z.store(atan2(load_tile_like(y, z), load_tile_like(x, z)))
    """


@_op("fma")
def fma(a: Any, b: Any, c: Any) -> Any:
    """`a * b + c` elementwise, rounded once (a fused multiply-add) for floats; the
    operands broadcast and promote as for `+`. Integer tiles multiply and add, wrapping.

    Example::

        z.store(fma(load_tile_like(x, z), 2.0, z.load()))
    """


@_op("isnan")
def isnan(x: Any) -> Any:
    """A bool tile: True where an element of `x` is NaN (False everywhere for integers).

    Example::

        t = load_tile_like(x, z)
        z.store(where(isnan(t), 0.0, t))
    """


# ---------------------------------------------------------------------------- reductions
@_op("sum")
def sum(x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
    """Sum along `axis` (all axes when None)."""


@_op("max")
def max(x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
    """Maximum along `axis`."""


@_op("min")
def min(x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
    """Minimum along `axis`."""


@_op("prod")
def prod(x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
    """Product along `axis`."""


# ---------------------------------------------------------------------------- scans, arg-reductions
@_op("cumsum")
def cumsum(x: Any, axis: int | None = None, reverse: bool = False) -> Any:
    """Inclusive cumulative sum along `axis`, as numpy's `cumsum`: element `i` is
    `x[0] + ... + x[i]` (with `reverse=True`, `x[i] + ... + x[n-1]`).

    With `axis=None` the tile is flattened first (row-major) and the result is 1-D. The sum
    runs in the tile's element type, as in cuTile (f16 adds in f16, integers wrap; convert
    with `.astype(f32)` first for more accuracy); a bool tile counts in `i32`. Lowered to
    Tile IR's `scan`. Also a tile method: `t.cumsum(axis)`.

    Example::

        run = cumsum(load_tile_like(x, z), axis=1)    # running sums along each row
    """


@_op("cumprod")
def cumprod(x: Any, axis: int | None = None, reverse: bool = False) -> Any:
    """Inclusive cumulative product along `axis` (`reverse`, flattening and element types
    as for `cumsum`). Also a tile method: `t.cumprod(axis)`.

    Example::

        powers = cumprod(full((8,), 2, i32))         # [2, 4, 8, ..., 256]
    """


@_op("argmax")
def argmax(x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
    """The `i32` index of the largest element along `axis` (of the row-major flattened
    tile when `axis` is None), as numpy's `argmax`: ties give the first index, and a NaN
    counts as larger than every number (the first NaN wins). Lowered to one Tile IR
    `reduce` over (value, index) pairs. Also a tile method: `t.argmax(axis)`.

    Example::

        best = argmax(scores, axis=1)      # [M, N] -> [M] column indices
    """


@_op("argmin")
def argmin(x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
    """The `i32` index of the smallest element along `axis`, as numpy's `argmin`: ties
    give the first index, a NaN counts as smaller than every number. Also a tile method:
    `t.argmin(axis)`.

    Example::

        nearest = argmin(distances, axis=0)
    """


@_op("reduce")
def reduce(x: Any, axis: int | None, combiner: Any, identity: Any, keepdims: bool = False
           ) -> Any:
    """Reduce `x` along `axis` (all axes when None) with a `@cutile.device` function of
    two scalars, `combiner(acc, elem)`, which returns their combination; `identity` is a
    compile-time number with `combiner(identity, v) == v`.

    The combiner's body becomes the body of Tile IR's `reduce`: straight-line code
    (assignments, `where`, `a if c else b`, elementwise operations and device calls; no
    `if`, loops or asserts, CT3074) returning a scalar of `x`'s element type. It must be
    associative: Tile IR combines the elements in an order it chooses (make it commutative
    too, or the result may depend on the compiler).

    Example::

        @cutile.device
        def absmax(a, b):
            return maximum(abs(a), abs(b))

        peak = reduce(t, 1, absmax, 0.0)   # [M, N] -> [M]
    """


# ---------------------------------------------------------------------------- matrix, shape
@_op("mma")
def mma(a: Any, b: Any, acc: Any, fast_acc: bool = False) -> Any:
    """`a @ b + acc` on the tensor cores; a: [M, K], b: [K, N], acc: [M, N]. Operands ->
    accumulator: f16 -> f16/f32; bf16, tf32, f32 (as tf32) -> f32; f64 -> f64; f8e4m3fn,
    f8e5m2 -> f16/f32; i8, u8 (they may mix) -> i32.

    `fast_acc` (f8 operands only, a compile-time bool): let the tensor cores add into
    `acc` themselves. Hopper's f8 MMA sums with fewer bits than f32, so by default the
    compiler multiplies into a zeroed tile and adds that to `acc` in f32 each `mma` (as
    cuBLAS does without `use_fast_accum`); with `fast_acc=True` the whole sum stays on the
    tensor cores: no adds, and the next MMAs need not wait for them, at the price of that
    lower precision over the whole K (`torch._scaled_mm(..., use_fast_accum=True)`). Between
    the two: `acc = acc + mma(x, w, zeros(...), fast_acc=True)` over a longer K tile. The
    interpreter computes every `mma` exactly in f64."""


@_op("matmul")
def matmul(a: Any, b: Any) -> Any:
    """The matrix product `a @ b` (also written `a @ b` in a kernel), as cuTile Python's
    `matmul`: `[M, K] @ [K, N] -> [M, N]`, a 1-D `a` is a row and a 1-D `b` a column
    (squeezed from the result), and 3-D operands are batches (batch axes broadcast).

    The operands promote to one dtype, which is also the result's; the product runs
    through `mma` into a zero accumulator: f32 for f16, bf16, f32 (multiplied as tf32, as
    `mma` does), tf32 and f8 operands, f64 for f64, i32 for i8 and u8. Other integer types
    and bool are refused (CT3004).

    Example::

        c = x.load_tile((BM, BK), (i, k)) @ y.load_tile((BK, BN), (k, j))   # f16 x f16 -> f16
    """


@_op("astype")
def astype(x: Any, dtype: DType) -> Any:
    """Convert a tile's element type (values, not bits): floats round to nearest even, to
    f8 saturating at the largest finite value; floats to integers truncate toward zero and
    saturate (NaN is 0); integers wrap to narrower integers, as numpy's `astype`."""


@_op("bitcast")
def bitcast(x: Any, dtype: DType) -> Any:
    """The same bits read as another element type of the same width (also
    `t.bitcast(dtype)`): `bitcast(t, u32)` of an f32 tile gives its IEEE bit patterns.

    Example::

        bits = x.bitcast(u32)                            # f32 -> its bits
        sign_cleared = (bits & 0x7FFFFFFF).bitcast(f32)  # abs(x), through the bits
    """


@_op("pack_i4")
def pack_i4(x: Any) -> Any:
    """Two 4-bit integers per byte: an integer tile `[..., 2N]` -> a u8 tile `[..., N]`,
    element 2i in the low nibble of byte i and element 2i + 1 in the high one (each
    value's low 4 bits, so -8..7 and 0..15 both pack). Undone by `unpack_i4`."""


@_op("unpack_i4")
def unpack_i4(x: Any, signed: bool = True) -> Any:
    """The nibbles of a u8 (or i8) tile `[..., N]` -> `[..., 2N]`: the low nibble of byte
    i is element 2i, the high nibble element 2i + 1; `signed=True` reads them as -8..7 (an
    i8 tile), `signed=False` as 0..15 (a u8 tile).

    Example::

        w = unpack_i4(packed.load_tile((BK, BN // 2), (k, j)))   # [BK, BN] i8 in -8..7
        acc = mma(a, w, acc)                                        # i8 x i8 -> i32
    """


@_op("reshape")
def reshape(x: Any, shape: Any) -> Any:
    """Same elements, new shape."""


@_op("permute")
def permute(x: Any, axes: Any) -> Any:
    """Reorder axes."""


@_op("transpose")
def transpose(x: Any) -> Any:
    """Swap the two axes of a 2-D tile."""


@_op("broadcast_to")
def broadcast_to(x: Any, shape: Any) -> Any:
    """Numpy-style broadcast to `shape`."""


@_op("expand_dims")
def expand_dims(x: Any, axis: int) -> Any:
    """`x` with a new axis of size 1 at position `axis` (a compile-time int; negative
    counts from the end of the result, as numpy's `expand_dims`). `t[None]`,
    `t[:, None]` and `t[..., None]` are the same operation.

    Example::

        col = expand_dims(arange(16, f32), 1)     # shape (16, 1)
    """


@_op("cat")
def cat(tiles: Any, axis: int = 0) -> Any:
    """Concatenate a tuple of tiles along `axis`, as numpy's `concatenate`.

    The tiles have the same shape except along `axis`, and are joined pairwise with Tile
    IR's `cat`, so every join and the result must have a power-of-two size (two equal
    tiles always do; `(a, b, c, d)` of equal size too; sizes 4, 8, 4 do not: CT3072).
    Mixed element types promote as for `+`.

    Example::

        both = cat((lo, hi), axis=0)       # two [64] tiles -> one [128]
    """


@_op("extract")
def extract(x: Any, index: Any, shape: Any) -> Any:
    """The sub-tile number `index` of a partition of tile `x` into tiles of `shape`, as in
    cuTile (`extract(t, (1,), (4,))` of a 16-element tile is elements 4..7).

    `shape` is compile-time and divides `x.shape` on every axis (CT3073). Each index entry
    counts sub-tiles: a compile-time index must lie in range (negative ones count from the
    end, CT3073); a runtime index is taken modulo the number of sub-tiles, so it is never
    out of bounds. Also a tile method: `t.extract(index, shape)`; `t[a:b]` slices tiles with
    compile-time bounds.

    Example::

        half = extract(t, (0, 1), (16, 32))    # a [16, 64] tile's right half
    """


# ---------------------------------------------------------------------------- unsafe-only
@_op("assume_div_by", unsafe=True)
def assume_div_by(x: Any, divisor: int) -> Any:
    """`x` (an integer tile or scalar, or pointers), with the promise that every element is
    a multiple of `divisor` (a compile-time int > 0; for pointers, of bytes): Tile IR's
    `assume div_by`, which lets tileiras vectorize and align. Unsafe and unchecked on the
    GPU (a false promise is undefined behaviour); the interpreter checks it and raises. The
    checker never uses it in a proof.

    Example::

        with cutile.unsafe():
            n = assume_div_by(n, 16)      # the extent is a multiple of 16
    """


@_op("assume_bounds", unsafe=True)
def assume_bounds(x: Any, lo: int | None = None, hi: int | None = None) -> Any:
    """`x` (an integer tile or scalar), with the promise that `lo <= x <= hi` elementwise
    (compile-time ints; None is an open end): Tile IR's `assume bounded`. Unsafe and
    unchecked on the GPU; the interpreter checks it. The checker never uses it in a proof.

    Example::

        with cutile.unsafe():
            i = assume_bounds(i, 0, 1023)
    """


@_op("load_ptr", unsafe=True)
def load_ptr(ptrs: Any, mask: Any = None, padding: Any = None) -> Any:
    """The elements `ptrs` (a tile of pointers, or one pointer) point at: a tile of their
    shape. With `mask` (a bool tile, broadcast to the pointers' shape) a lane whose mask is
    False reads nothing and gives `padding` (a number or a padding name, default zero).
    Unsafe: nothing checks the addresses on the device; the interpreter's detector reports
    an access outside the tensor the pointer came from (CT6913).

    Example::

        with cutile.unsafe():
            offs = block_id(0) * 128 + arange(128, i32)
            v = load_ptr(ptr_offset(x, offs * stride), mask=offs < n, padding=0.0)
    """


@_op("store_ptr", unsafe=True)
def store_ptr(ptrs: Any, value: Any, mask: Any = None) -> Any:
    """Store `value` (converted to the pointee type, broadcast to the pointers' shape)
    where `ptrs` point; lanes whose `mask` is False store nothing. Unsafe: two lanes or two
    blocks may write one element (a race) and nothing checks the addresses on the device;
    test it under the interpreter's race detector (`CUTILE_INTERPRET=check`).

    Example::

        with cutile.unsafe():
            store_ptr(ptr_offset(z, offs), v, mask=offs < n)
    """


@_op("ptr_offset", unsafe=True)
def ptr_offset(ptr: Any, offsets: Any) -> Any:
    """Pointer arithmetic in elements: `ptr + offsets` for a pointer (a `Ptr` parameter)
    or a tile of pointers and an integer tile or number, broadcast together; the result is
    a tile of pointers of their common shape.

    Example::

        with cutile.unsafe():
            ptrs = ptr_offset(p, arange(64, i32) * 2)     # every other element
    """


@_op("int_to_ptr", unsafe=True)
def int_to_ptr(value: Any, dtype: DType) -> Any:
    """Forge pointers to `dtype` elements from integer addresses (a tile or a scalar,
    converted to i64). Unsafe: nothing says what they point at, and the interpreter knows
    only the addresses of the launch's arguments.

    Example::

        with cutile.unsafe():
            p = int_to_ptr(addr, f32)
    """


@_op("gather")
def gather(tensor: Any, indices: Any, padding: Any = "zero") -> Any:
    """Elements of a shared `tensor` at `indices`: `tensor[indices]`, elementwise.

    `indices` is an integer tile (any shape) for a 1-D tensor, or a tuple of integer tiles,
    one per axis, broadcast together; the result has their shape. Each lane is checked on
    the device: an index outside `0 <= i < tensor.shape[axis]` reads `padding` instead (a
    padding name such as "zero" or "neg_inf", or a number). Safe: a shared input cannot be
    written while the kernel runs, and the mask keeps every read in bounds.

    Example::

        rows = gather(table, ids)     # ids out of range read 0
    """


@_op("scatter", unsafe=True)
def scatter(tensor: Any, indices: Any, value: Any) -> Any:
    """Store `value` (broadcast to the indices' shape) at `indices` of a `Mut` tensor.

    Lanes outside the tensor do nothing. Unsafe: only inside `with cutile.unsafe():`, since
    two lanes or two blocks may write one element (CT4003); test it under the interpreter's
    race detector. For accumulation use an `Atomic` parameter and `atomic_add`, which is
    safe."""


# Atomic read-modify-writes, one generated function per entry: name -> what it does.
ATOMICS: dict[str, str] = {
    "atomic_add": "adds `value` to each element at `indices`",
    "atomic_max": "stores the larger of each element at `indices` and `value` (integers)",
    "atomic_min": "stores the smaller of each element at `indices` and `value` (integers)",
    "atomic_and": "bitwise-ands `value` into each element at `indices` (integers)",
    "atomic_or": "bitwise-ors `value` into each element at `indices` (integers)",
    "atomic_xor": "bitwise-xors `value` into each element at `indices` (integers)",
    "atomic_xchg": "stores `value` at each element at `indices`",
}
_ATOMIC_DOC = """

    `indices` is an integer tile for a 1-D tensor, or a tuple of integer tiles (one per
    axis, broadcast together); `value` is broadcast to their shape and converted to the
    tensor's element type. Lanes whose index is outside the tensor do nothing (their result
    is unspecified). `memory_order` is "relaxed", "acquire", "release" or "acq_rel" (the
    default); `scope` is "device" (the default), "system" or "block" (atomic only among one
    block's threads: on an `Atomic` tensor only inside `unsafe`, CT1018).

    Safe on an `Atomic[Tensor[...]]` parameter, which every block shares without a data
    race; on a `Mut` or shared `Tensor` only inside `with cutile.unsafe():` (CT4002).

    Example::

        @cutile.entry
        def histogram(counts: Atomic[Tensor[i32, [-1]]], x: Tensor[i32, [-1]], B: Const[int]):
            bins = x.load_tile((B,), (block_id(0),))
            {call}
    """


def _atomic(name: str) -> Callable[..., Any]:
    def fn(tensor: Any, indices: Any, value: Any, memory_order: str = "acq_rel",
           scope: str = "device") -> Any:
        raise AssertionError  # replaced by the stub

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Atomically {ATOMICS[name]} of `tensor`; returns the old values."
                  + _ATOMIC_DOC.format(call=f"{name}(counts, bins, 1)"))
    return _op(name)(fn)


atomic_add = _atomic("atomic_add")
atomic_max = _atomic("atomic_max")
atomic_min = _atomic("atomic_min")
atomic_and = _atomic("atomic_and")
atomic_or = _atomic("atomic_or")
atomic_xor = _atomic("atomic_xor")
atomic_xchg = _atomic("atomic_xchg")


@_op("atomic_cas")
def atomic_cas(tensor: Any, indices: Any, expected: Any, value: Any,
               memory_order: str = "acq_rel", scope: str = "device") -> Any:
    """Atomically compare and swap: where the element of `tensor` at `indices` equals
    `expected` (bit for bit), store `value`; returns the old values (a lane swapped where
    its old value equals `expected`)."""


atomic_cas.__doc__ = (atomic_cas.__doc__ or "") + _ATOMIC_DOC.format(
    call="atomic_cas(counts, bins, 0, 1)")


__all__ = [
    "OPS", "Atomic", "AtomicSpec", "Const", "ConstSpec", "Mut", "MutSpec", "Ptr", "PtrSpec",
    "Tensor", "TensorSpec", "Tile", "TileSpec", "arange", "argmax", "argmin", "assume_bounds",
    "assume_div_by", "astype", "atan2", "atomic_add", "atomic_and", "atomic_cas", "atomic_max",
    "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "bf16", "bitcast", "block_id", "bool_",
    "broadcast_to", "cat", "cdiv", "ceil", "cos", "cosh", "cumprod", "cumsum", "exp", "exp2",
    "expand_dims", "extract", "f8e4m3fn", "f8e5m2", "f16", "f32", "f64", "floor", "fma", "full",
    "gather", "i8", "i16", "i32", "i64", "int_to_ptr", "isnan", "load_ptr", "load_tile_like",
    "log", "log2", "matmul", "max", "maximum", "min", "minimum", "mma", "num_blocks", "num_tiles",
    "ones", "pack_i4", "permute", "pow", "prod", "ptr_offset", "reduce", "reshape", "rsqrt",
    "scatter", "sin", "sinh", "sqrt", "store_ptr", "sum", "tan", "tanh", "tf32", "transpose",
    "truediv", "u8", "u16", "u32", "u64", "unpack_i4", "where", "zeros",
]
