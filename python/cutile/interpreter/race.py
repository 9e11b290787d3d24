"""The race and bounds detector (`CUTILE_INTERPRET=check`, `run(..., check=True)`).

It checks the checker. A shadow of every buffer a launch touches records, per element, which
tile block wrote it, read it or updated it atomically; the first access that two different
blocks could make concurrently on the GPU raises a `RaceError`, before it changes memory.

Why one pass in the interpreter's sequential order is enough: blocks run one after another,
so whichever of two conflicting accesses comes second finds the first one in the shadow.
Each kind of access keeps *two* distinct blocks per element (the first and one other): a
later access that conflicts with that kind conflicts with at least one of them that is not
itself, so the report always names a real second block without keeping every reader.

What conflicts (different blocks, same element):
    plain write   vs anything                      (write-write / read-write)
    plain read    vs plain write, atomic update    (read-write)
    atomic update vs plain write, plain read       (atomics among themselves are fine)
    atomic read   vs plain write                   (a non-weak load; reads never conflict)
Atomics with `tl_blk` scope are atomic only inside one block, so across blocks they count as
plain reads and writes.

Within one block, accesses are ordered (program order), except the lanes of one operation,
which run concurrently: two lanes of one plain (weak) store that write the same bytes (a
scatter whose indices collide, a view whose layout puts two elements at one address) are a
write-write race of that block with itself. The lanes of an atomic, or of an ordered store,
may meet.

Granularity: the shadow keeps one entry per `grain` bytes of a root buffer (the itemsize of
the accesses, usually), so an f32 tensor costs one int32 per element and per kind, and only
for the kinds that touch it. An access narrower than the grain (an i8 view of f32 bytes)
splits every entry (`_Shadow.lower_grain`). Accesses through partition views check and update
strided numpy views of the shadow, so a tile costs a few vectorised numpy calls.

Bounds: each pointer argument gets its own address region (`Memory.region_for(tag=...)`), so
the region an address falls in is the argument it was derived from; an access outside that
argument's bytes (its view inside a bigger buffer included) is out of bounds. A tile index
outside a partition's index space is out of bounds too. Of a strided argument, only the bytes
of its elements are in bounds, whatever the width of the access: an access must lie wholly
in elements (an f64 read at an element of a strided f32 argument takes the gap after it).
Elements are found by dividing by the largest stride first where that is exact (any slice
of a contiguous array), else in a table of the argument's element offsets (strides (3, 2),
overlapping layouts). Limit: provenance is the address, so a pointer moved by a multiple of
the region spacing (2^40 bytes) onto another argument is taken for that argument's.

Shadows are per run of overlapping host memory (not per numpy root: `np.frombuffer` arrays
over one buffer are distinct roots that share bytes).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RaceError
from ..ir.core import Op
from .memory import REGION_SPACING, PartitionView, Pointer, Region, TensorView
from .values import Array

READ, WRITE, ATOMIC, ATOMIC_READ = 0, 1, 2, 3
# Shadow categories: plain write, plain read, atomic update, atomic (non-weak) read.
_W, _R, _A, _S = 0, 1, 2, 3
# Per access kind: the categories it conflicts with (and the report kind), and the category
# it is recorded as.
_RULES: dict[int, tuple[tuple[tuple[int, str], ...], int]] = {
    READ: (((_W, "read-write"), (_A, "read-write")), _R),
    WRITE: (((_W, "write-write"), (_R, "read-write"), (_A, "write-write"), (_S, "read-write")),
            _W),
    ATOMIC: (((_W, "write-write"), (_R, "read-write")), _A),
    ATOMIC_READ: (((_W, "read-write"),), _S),
}
_VERB = {READ: "reads", WRITE: "writes", ATOMIC: "atomically updates",
         ATOMIC_READ: "atomically reads"}
_DID = {_W: "writes", _R: "reads", _A: "atomically updates", _S: "atomically reads"}
_HINTS = {
    "write-write": "on the GPU the two blocks run concurrently and which value lands last is "
    "unspecified: give each block its own tile (`z.store(tile)`), make the block id -> store "
    "index map injective, or combine the values with atomics",
    "read-write": "on the GPU the reading block may run before, during or after the writing "
    "one: read only the block's own tile of an output, or split the work into two launches",
    "out-of-bounds": "the access is outside the tensor argument (bytes beyond it, even in the "
    "same buffer, belong to someone else): check the index arithmetic and the mask",
}
_LANE_HINT = ("the lanes of one store run concurrently on the GPU, and which lane's value "
              "lands is unspecified: make the indices distinct (mask the duplicates), or "
              "combine the values with an atomic (`atomic_add`, `atomic_xchg`)")
_NONE = -1  # "no block" in the shadow


@dataclass(frozen=True)
class TensorArg:
    """How reports name one pointer argument of `run(..., check=True, tensors=[...])`.

    `name` is the kernel parameter; element (i0, i1, ...) of the tensor is at byte
    `itemsize * sum(i_k * strides[k])` from the pointer. Without a shape the argument is
    1-D, from the pointer to the end of its buffer; without strides it is C-contiguous;
    without an itemsize it is the pointee's. The argument's bytes are its bounds: a pointer
    derived from it that leaves them is out of bounds."""

    name: str
    shape: tuple[int, ...] | None = None
    strides: tuple[int, ...] | None = None
    itemsize: int | None = None


def _byte_bounds(a: Array) -> tuple[int, int]:
    try:
        from numpy.lib.array_utils import byte_bounds
    except ImportError:  # numpy < 2
        byte_bounds = np.byte_bounds  # type: ignore[attr-defined]
    low, high = byte_bounds(a)
    return int(low), int(high)


class _Shadow:
    """Who touched each grain of one root buffer: per category, a first block and a second,
    different one (int32 block numbers, -1 for none), allocated on first use."""

    def __init__(self, base: int, nbytes: int) -> None:
        self.base = base  # host address of the shadow's byte 0
        self.nbytes = nbytes
        self.grain = 16
        self.arrays: dict[tuple[int, int], Array] = {}

    def lower_grain(self, need: int) -> None:
        g = math.gcd(self.grain, need)
        if g == self.grain:
            return
        factor = self.grain // g
        for key, arr in self.arrays.items():
            self.arrays[key] = np.repeat(arr, factor)
        self.grain = g

    def get(self, cat: int, slot: int) -> Array | None:
        return self.arrays.get((cat, slot))

    def make(self, cat: int, slot: int) -> Array:
        arr = self.arrays.get((cat, slot))
        if arr is None:
            n = -(-self.nbytes // self.grain)
            arr = self.arrays[(cat, slot)] = np.full(n, _NONE, dtype=np.int32)
        return arr


class _Arg:
    """One pointer argument: its name, layout, bytes and shadow."""

    def __init__(self, region: Region, ptr: Pointer, name: str, itemsize: int,
                 shape: tuple[int, ...], strides: tuple[int, ...], shadow: _Shadow,
                 root_off: int) -> None:
        self.region = region
        self.name = name
        self.itemsize = itemsize
        self.shape = shape
        self.strides = strides
        self.origin = ptr.byte_offset  # byte of element 0 inside the region's buffer
        self.shadow = shadow
        self.root_off = root_off  # byte of the region's buffer inside the shadow's root
        if any(n == 0 for n in shape):
            self.lo = self.hi = self.origin
        else:
            pairs = list(zip(strides, shape, strict=True))
            self.lo = self.origin + itemsize * sum(min(0, s * (n - 1)) for s, n in pairs)
            self.hi = self.origin + itemsize * (sum(max(0, s * (n - 1)) for s, n in pairs) + 1)
        self.lo, self.hi = max(self.lo, 0), min(self.hi, region.size)
        self.order = sorted(range(len(shape)), key=lambda d: -abs(strides[d]))
        # Nested: each stride (largest first) steps over everything the smaller ones reach,
        # as in any slice of a C-contiguous array, so dividing by the largest stride first
        # finds the one multi-index of an element. Other layouts (strides (3, 2), overlaps,
        # negative strides) look slots up in a table of every element instead.
        live = [(abs(strides[d]), shape[d]) for d in self.order if shape[d] > 1 and strides[d]]
        self.nested = (all(strides[d] >= 0 for d in self.order) and all(
            s > sum(t * (m - 1) for t, m in live[i + 1:]) for i, (s, _) in enumerate(live)))
        self._table: tuple[Array, Array] | None = None
        # Dense: every byte of [lo, hi) belongs to an element, so the span is the bounds.
        # (An overlapping layout may span exactly as many slots as it has elements and still
        # leave holes: (3, 3) with strides (2, 2) covers the even slots of 0..8 only.)
        self.dense = (self.hi - self.lo == itemsize * math.prod(shape)
                      and all(s > 0 for s, n in zip(strides, shape, strict=True) if n > 1)
                      and (self.nested or np.unique(self.table()[0]).size == math.prod(shape)))

    def table(self) -> tuple[Array, Array]:
        """Every element's slot (its offset from element 0, in items), sorted, and the flat
        (C-order) index of the element at each; built on first use."""
        if self._table is None:
            slots = np.zeros(1, np.int64)
            for n, st in zip(self.shape, self.strides, strict=True):
                slots = (slots[:, None] + np.arange(n, dtype=np.int64) * st).reshape(-1)
            order = np.argsort(slots, kind="stable")
            self._table = (slots[order], order)
        return self._table

    def _lookup(self, slots: Array) -> tuple[Array, Array]:
        """Table lookup: whether each slot is an element's, and that element's flat index."""
        keys, flat = self.table()
        if keys.size == 0:
            return np.zeros(slots.shape, bool), np.zeros(slots.shape, np.int64)
        pos = np.minimum(np.searchsorted(keys, slots), keys.size - 1)
        return keys[pos] == slots, flat[pos]

    def elements(self, offs: Array) -> tuple[list[Array], Array]:
        """Multi-indices of byte offsets (outermost index unbounded, so that a reference
        past the end reads `z[16]`) and whether each is an element of the argument."""
        rel = np.asarray(offs, dtype=np.int64) - self.origin
        e, rem = np.divmod(rel, self.itemsize)
        idx, inside = self._greedy(e)
        if not self.nested:
            inside, flat = self._lookup(e)
            if inside.any():
                exact = np.unravel_index(flat, self.shape) if self.shape else ()
                idx = [np.where(inside, x, g) for x, g in zip(exact, idx, strict=True)]
        return idx, inside & (rem == 0)

    def _greedy(self, e: Array) -> tuple[list[Array], Array]:
        inside = np.ones(e.shape, bool)
        idx = [np.zeros_like(e) for _ in self.shape]
        for d in self.order:
            st = self.strides[d]
            if st == 0 or self.shape[d] == 1:
                continue  # (an axis of extent 1 has index 0, whatever its stride)
            q = e // st
            idx[d] = q
            e = e - q * st
            inside &= (q >= 0) & (q < self.shape[d])
        return idx, inside & (e == 0)

    def element(self, off: int) -> tuple[int, ...]:
        if -(1 << 62) < off < (1 << 62):
            idx, _ = self.elements(np.array([off]))
            return tuple(int(i[0]) for i in idx)
        # A report about a far-away tile (index 2^32 - 1 of a big view): Python ints, which
        # do not overflow, divided as `_greedy` does.
        e, out = (off - self.origin) // self.itemsize, [0] * len(self.shape)
        for d in self.order:
            if self.strides[d] and self.shape[d] != 1:
                out[d], e = divmod(e, self.strides[d])
        return tuple(out)

    def ref(self, element: tuple[int, ...] | None) -> str:
        if element is None:
            return self.name
        return f"{self.name}[{', '.join(str(i) for i in element)}]" if element else self.name

    def contains(self, offs: Array, size: int) -> Array:
        """Whether every byte of each access of `size` bytes at `offs` is an element's."""
        offs = np.asarray(offs, dtype=np.int64)
        ok = (offs >= self.lo) & (offs + size <= self.hi)
        if self.dense or not ok.any():
            return np.asarray(ok)
        # Every item slot the access touches must be an element's: an access wider than
        # the argument's items (an f64 through a strided f32 argument) spans gaps too.
        rel = offs - self.origin
        first, last = rel // self.itemsize, (rel + size - 1) // self.itemsize
        for j in range(int((last - first).max()) + 1):
            slot = np.minimum(first + j, last)
            ok &= self._lookup(slot)[0] if not self.nested else self._greedy(slot)[1]
        return np.asarray(ok)


class _ViewInfo:
    """A tensor view's place in its argument's shadow, for the current grain."""

    def __init__(self, tv: TensorView, arg: _Arg) -> None:
        self.tv = tv
        self.arg = arg
        shadow = arg.shadow
        size = tv.dtype.itemsize
        start = arg.root_off + tv.offset
        shadow.lower_grain(math.gcd(size, start))
        self.grain = g = shadow.grain
        self.per_elem = size // g
        self.shape = tv.shape + ((self.per_elem,) if self.per_elem > 1 else ())
        bstrides = tuple(4 * st * self.per_elem for st in tv.strides)
        self.bstrides = bstrides + ((4,) if self.per_elem > 1 else ())
        self.g0 = start // g
        self.views: dict[int, tuple[Array, Array]] = {}
        lo = tv.offset + size * sum(min(0, s * (n - 1)) for s, n in zip(tv.strides, tv.shape,
                                                                         strict=True))
        hi = tv.offset + size * (sum(max(0, s * (n - 1)) for s, n in zip(tv.strides, tv.shape,
                                                                        strict=True)) + 1)
        same = (tv.offset == arg.origin and tv.shape == arg.shape and tv.strides == arg.strides
                and size == arg.itemsize)
        # Inside: no access through the view can leave the argument, so none is checked.
        self.inside = (any(n == 0 for n in tv.shape) or same
                       or (arg.dense and arg.lo <= lo and hi <= arg.hi))
        # One address per element (strides nested, largest first): two lanes of one tile
        # cannot write the same bytes, so a store's lanes need no check among themselves.
        live = sorted(((abs(st), n) for st, n in zip(tv.strides, tv.shape, strict=True)
                       if n > 1), reverse=True)
        self.injective = any(n == 0 for n in tv.shape) or all(
            st > 0 and st > sum(t * (m - 1) for t, m in live[i + 1:])
            for i, (st, _) in enumerate(live))

    def view(self, arr: Array) -> Array:
        got = self.views.get(id(arr))
        if got is not None and got[0] is arr:
            return got[1]
        v = np.lib.stride_tricks.as_strided(arr[self.g0:], self.shape, self.bstrides)
        self.views[id(arr)] = (arr, v)
        return v


class Detector:
    """Watches every memory access of one launch (one `Machine`)."""

    def __init__(self, kernel: str, grid: tuple[int, int, int]) -> None:
        self.kernel = kernel
        self.grid = grid
        self.block = 0  # x + gx * (y + gy * z) of the running tile block
        self.args: dict[int, _Arg] = {}  # by region index
        self._shadows: list[_Shadow] = []
        self._views: dict[TensorView, _ViewInfo] = {}
        self._kinds: dict[Op, int] = {}
        self._bounds: tuple[Array, Array, Array, Array] | None = None

    # -- arguments -------------------------------------------------------------------------

    def bind(self, region: Region, ptr: Pointer, index: int, pointee_size: int,
             tensor: TensorArg | None) -> None:
        root = ptr.buffer
        while isinstance(root.base, np.ndarray):
            root = root.base
        shadow = self._shadow_for(*_byte_bounds(root))
        root_off = int(ptr.buffer.__array_interface__["data"][0]) - shadow.base
        itemsize = (tensor.itemsize if tensor is not None and tensor.itemsize else pointee_size)
        if tensor is not None and tensor.shape is not None:
            shape = tuple(int(n) for n in tensor.shape)
            strides = (tuple(int(s) for s in tensor.strides) if tensor.strides is not None
                       else _contiguous(shape))
        else:
            shape = ((ptr.buffer.size - ptr.byte_offset) // itemsize,)
            strides = (1,)
        name = tensor.name if tensor is not None else f"arg{index}"
        self.args[region.index] = _Arg(region, ptr, name, itemsize, shape, strides, shadow,
                                       root_off)
        self._bounds = None

    def _shadow_for(self, lo: int, hi: int) -> _Shadow:
        """The shadow of host bytes [lo, hi): one shadow per run of overlapping memory.
        Numpy roots are not enough: arrays made by `np.frombuffer` (or over an mmap) from
        one buffer at different offsets are distinct roots over shared bytes. Arguments
        are bound before any block runs, so shadows merged here are still empty, and the
        arguments that had them move to the merged one."""
        for sh in self._shadows:
            if sh.base <= lo and hi <= sh.base + sh.nbytes:
                return sh
        overlap = [sh for sh in self._shadows if sh.base < hi and lo < sh.base + sh.nbytes]
        for sh in overlap:
            assert not sh.arrays, "shadows are merged before any access"
            lo, hi = min(lo, sh.base), max(hi, sh.base + sh.nbytes)
        shadow = _Shadow(lo, hi - lo)
        self._shadows = [sh for sh in self._shadows if sh not in overlap] + [shadow]
        for arg in self.args.values():
            if arg.shadow in overlap:
                arg.root_off += arg.shadow.base - lo
                arg.shadow = shadow
        return shadow

    def _arg_bounds(self) -> tuple[Array, Array, Array, Array]:
        if self._bounds is None:
            n = max(self.args, default=-1) + 1
            known = np.zeros(n, bool)
            base, lo, hi = (np.zeros(n, np.int64) for _ in range(3))
            for k, a in self.args.items():
                known[k], base[k], lo[k], hi[k] = True, a.region.base, a.lo, a.hi
            self._bounds = (known, base, lo, hi)
        return self._bounds

    # -- access kinds ----------------------------------------------------------------------

    def kind_of(self, op: Op, plain: int) -> int:
        """`plain` (READ / WRITE / ATOMIC) refined by the op's memory ordering and scope."""
        kind = self._kinds.get(op)
        if kind is None:
            ordering = op.attrs.get("memory_ordering_semantics", "weak")
            block_scope = op.attrs.get("memory_scope") == "tl_blk"
            if plain == ATOMIC:
                kind = WRITE if block_scope else ATOMIC
            elif ordering == "weak" or block_scope:
                kind = plain
            else:
                kind = ATOMIC_READ if plain == READ else ATOMIC
            self._kinds[op] = kind
        return kind

    @staticmethod
    def _lanes_race(op: Op, plain: int) -> bool:
        """Do two lanes of this op that write the same bytes race? They do for a plain
        (weak) store; an atomic's lanes, or an ordered (atomic) store's, do not."""
        return plain == WRITE and op.attrs.get("memory_ordering_semantics", "weak") == "weak"

    # -- partition views -------------------------------------------------------------------

    def view_access(self, op: Op, view: PartitionView, index: list[int], plain: int) -> None:
        kind = self.kind_of(op, plain)
        if len(index) == len(view.index_space):
            for j, n in zip(index, view.index_space, strict=True):
                if not 0 <= j < n:
                    raise self._tile_oob(op, kind, view, index)
        tv = view.tensor
        arg = self.args.get(tv.region.index)
        if arg is None:  # a region no argument made: nothing to name, leave it to memory
            return
        info = self._views.get(tv)
        if info is None or info.grain != arg.shadow.grain:
            if len(self._views) > 1024:  # views are rebuilt when the interpreter's cache is
                self._views.clear()      # full; keep this one bounded the same way
            info = self._views[tv] = _ViewInfo(tv, arg)
        slices, _ = view.window(index)
        offs: Array | None = None
        if not info.inside:
            offs = _window_offsets(tv, slices)
            ok = arg.contains(offs, tv.dtype.itemsize)
            if not ok.all():
                off = int(offs.reshape(-1)[np.argmax(~ok.reshape(-1))])
                raise self._oob(op, kind, arg, off)
        if not info.injective and self._lanes_race(op, plain):
            if offs is None:
                offs = _window_offsets(tv, slices)
            flat = np.asarray(offs, dtype=np.int64).reshape(-1)
            hit = _first_overlap(flat, tv.dtype.itemsize)
            if hit is not None:
                raise self._lane_race(op, arg, int(flat[hit]))

        def get(arr: Array) -> Array:
            return info.view(arr)[slices]

        def offset(p: int) -> int:
            local = np.unravel_index(p, _window_shape(slices, info.per_elem))
            el = [int(s.start) + int(i) for s, i in zip(slices, local, strict=False)]
            return int(tv.offset) + tv.dtype.itemsize * sum(
                i * st for i, st in zip(el, tv.strides, strict=True))

        self._check(op, kind, arg, get, lambda arr, where: _put_view(get(arr), self.block, where),
                    offset)

    # -- pointers --------------------------------------------------------------------------

    def pointer_access(self, op: Op, addrs: Array, itemsize: int, plain: int) -> None:
        kind = self.kind_of(op, plain)
        a = np.asarray(addrs, dtype=np.int64).reshape(-1)
        if a.size == 0 or (itemsize > 1 and bool((a % itemsize).any())):
            return  # nothing touched, or misaligned: Memory reports that fault itself
        known, base, lo, hi = self._arg_bounds()
        k = a // REGION_SPACING - 1
        valid = (k >= 0) & (k < known.size)
        kk = np.where(valid, k, 0)
        valid &= known[kk]
        off = a - base[kk]
        valid &= (off >= lo[kk]) & (off + itemsize <= hi[kk])
        regions = np.unique(kk)
        for r in regions:
            arg = self.args.get(int(r))
            if arg is not None and not arg.dense:
                sel = kk == r
                valid[sel] &= arg.contains(off[sel], itemsize)
        if not valid.all():
            p = int(np.argmax(~valid))
            arg = self.args.get(int(k[p]))
            raise self._oob(op, kind, arg, None if arg is None else int(a[p]) - arg.region.base,
                            int(a[p]))
        if a.size > 1 and self._lanes_race(op, plain):
            # The lanes' host addresses: arguments that are views of one buffer meet there.
            host = np.zeros(known.size, np.int64)
            for r in regions:
                got = self.args[int(r)]
                host[int(r)] = got.shadow.base + got.root_off
            hit = _first_overlap(host[kk] + off, itemsize)
            if hit is not None:
                raise self._lane_race(op, self.args[int(kk[hit])], int(off[hit]))
        if regions.size == 1:
            self._pointer_group(op, kind, self.args[int(regions[0])], off, itemsize)
            return
        for r in regions:  # one pointer tile spanning several arguments: one shadow each
            self._pointer_group(op, kind, self.args[int(r)], off[kk == r], itemsize)

    def _pointer_group(self, op: Op, kind: int, arg: _Arg, off: Array, itemsize: int) -> None:
        shadow = arg.shadow
        shadow.lower_grain(math.gcd(itemsize, arg.root_off))
        g = shadow.grain
        per = itemsize // g
        idx = (arg.root_off + off) // g
        if per > 1:
            idx = idx[:, None] + np.arange(per)
        b = self.block

        def put(arr: Array, where: Array | None) -> None:
            arr[idx if where is None else idx[where]] = b

        self._check(op, kind, arg, lambda arr: arr[idx], put, lambda p: int(off[p // per]))

    # -- the shadow update -----------------------------------------------------------------

    def _check(self, op: Op, kind: int, arg: _Arg, get: Callable[[Array], Array],
               put: Callable[[Array, Array | None], None], offset: Callable[[int], int]) -> None:
        """Raise on the first element whose shadow conflicts with this access, else record
        it. `get` reads the access's entries of a shadow array, `put` writes this block
        there (where a mask is true), `offset` turns a flat position into a byte offset."""
        b = self.block
        shadow = arg.shadow
        rules, record = _RULES[kind]
        for cat, what in rules:
            first = shadow.get(cat, 0)
            if first is None:
                continue
            f = get(first)
            second = shadow.get(cat, 1)
            if second is None:
                hit = (f != b) & (f >= 0)
                other = f
            else:
                other = np.where(f == b, get(second), f)
                hit = other >= 0
            if hit.any():
                p = int(np.argmax(hit.reshape(-1)))
                raise self._race(op, kind, cat, what, arg, offset(p),
                                 int(np.asarray(other).reshape(-1)[p]))
        first = shadow.make(record, 0)
        f = get(first)
        if record == _W:  # no other writer survived the checks: every entry is -1 or b
            put(first, None)
            return
        fresh = f < 0
        if fresh.all():
            put(first, None)
            return
        others = ~fresh & (f != b)
        if others.any():
            second = shadow.make(record, 1)
            put(second, others & (get(second) < 0))
        put(first, fresh)

    # -- reports ---------------------------------------------------------------------------

    def _triple(self, lin: int) -> tuple[int, int, int]:
        gx, gy, _ = self.grid
        return (lin % gx, (lin // gx) % gy, lin // (gx * gy))

    def _race(self, op: Op, kind: int, cat: int, what: str, arg: _Arg, off: int,
              other: int) -> RaceError:
        cur, prev = self._triple(self.block), self._triple(other)
        element = arg.element(off)
        ref = arg.ref(element)
        loc = location(op)
        where = f" ({loc})" if loc else ""
        if kind == WRITE and cat == _W:
            text = f"{self.kernel}: blocks {prev} and {cur} both write {ref}{where}"
        else:
            text = (f"{self.kernel}: block {cur} {_VERB[kind]} {ref}, which block {prev} "
                    f"{_DID[cat]}{where}")
        return RaceError(text, kind=what, tensor=arg.name, element=element, blocks=(prev, cur),
                         location=loc, kernel=self.kernel, op=op.name, hint=_HINTS[what])

    def _lane_race(self, op: Op, arg: _Arg, off: int) -> RaceError:
        cur = self._triple(self.block)
        element = arg.element(off)
        loc = location(op)
        where = f" ({loc})" if loc else ""
        text = (f"{self.kernel}: two lanes of one store in block {cur} write "
                f"{arg.ref(element)}{where}")
        return RaceError(text, kind="write-write", tensor=arg.name, element=element,
                         blocks=(cur, cur), location=loc, kernel=self.kernel, op=op.name,
                         hint=_LANE_HINT)

    def _oob(self, op: Op, kind: int, arg: _Arg | None, off: int | None,
             address: int | None = None) -> RaceError:
        cur = self._triple(self.block)
        loc = location(op)
        where = f" ({loc})" if loc else ""
        if arg is None or off is None:
            what = f"address {address:#x}" if address is not None else "an address"
            text = (f"{self.kernel}: block {cur} {_VERB[kind]} {what}, which is inside no "
                    f"argument of the launch{where}")
            element = None
            name = None
        else:
            element = arg.element(off)
            name = arg.name
            text = (f"{self.kernel}: block {cur} {_VERB[kind]} {arg.ref(element)}, outside "
                    f"`{arg.name}` (shape {list(arg.shape)}){where}")
        return RaceError(text, kind="out-of-bounds", tensor=name, element=element,
                         blocks=(cur,), location=loc, kernel=self.kernel, op=op.name,
                         hint=_HINTS["out-of-bounds"])

    def _tile_oob(self, op: Op, kind: int, view: PartitionView, index: list[int]) -> RaceError:
        cur = self._triple(self.block)
        loc = location(op)
        where = f" ({loc})" if loc else ""
        arg = self.args.get(view.tensor.region.index)
        name = arg.name if arg is not None else None
        first = [0] * len(view.tile_shape)
        for i, (j, t) in enumerate(zip(index, view.tile_shape, strict=True)):
            first[view.dim_map[i]] = j * t
        element: tuple[int, ...] = tuple(first)
        if arg is not None:  # in the argument's coordinates, like every other report
            tv = view.tensor
            element = arg.element(tv.offset + tv.dtype.itemsize * sum(
                e * st for e, st in zip(first, tv.strides, strict=True)))
        of = f" of `{name}`" if name else ""
        text = (f"{self.kernel}: block {cur} {_VERB[kind]} tile {list(index)}{of}, outside "
                f"its index space {list(view.index_space)}{where}")
        return RaceError(text, kind="out-of-bounds", tensor=name, element=element,
                         blocks=(cur,), location=loc, kernel=self.kernel, op=op.name,
                         hint=_HINTS["out-of-bounds"])


def location(op: Op) -> str | None:
    """"path:line" of an op, the path relative to the working directory when inside it."""
    loc = op.loc
    if loc is None:
        return None
    path = loc.file
    if os.path.isabs(path):
        try:
            rel = os.path.relpath(path)
        except ValueError:  # another drive (Windows)
            rel = path
        if not rel.startswith(".."):
            path = rel
    return f"{path}:{loc.line}"


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _window_shape(slices: tuple[slice, ...], per_elem: int) -> tuple[int, ...]:
    shape = tuple(s.stop - s.start for s in slices)
    return shape + ((per_elem,) if per_elem > 1 else ())


def _window_offsets(tv: TensorView, slices: tuple[slice, ...]) -> Array:
    grids = np.ix_(*[np.arange(s.start, s.stop) for s in slices])
    total: Any = tv.offset
    for g, st in zip(grids, tv.strides, strict=True):
        total = total + g * (st * tv.dtype.itemsize)
    return np.asarray(np.broadcast_to(total, tuple(s.stop - s.start for s in slices)))


def _first_overlap(starts: Array, size: int) -> int | None:
    """The position of an access of `size` bytes at `starts` that shares a byte with
    another of them, or None when all are disjoint."""
    flat = np.asarray(starts, dtype=np.int64).reshape(-1)
    if flat.size < 2:
        return None
    order = np.argsort(flat, kind="stable")
    ranked = flat[order]
    meets = ranked[1:] < ranked[:-1] + size
    if not meets.any():
        return None
    return int(order[int(np.argmax(meets)) + 1])


def _put_view(target: Array, b: int, where: Array | None) -> None:
    if where is None:
        target[...] = b
    else:
        np.copyto(target, b, where=where)
