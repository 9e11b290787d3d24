"""CT3030-CT3054: the arguments of kernel operations (loads, stores, partitions, reductions,
`mma`, reshapes, new axes, integer powers, `.item()`), found while lowering."""

TEXTS: dict[str, str] = {
    "CT3030": """
        The operation is in the kernel language's op table (`ops.json`) and the checker
        accepts it, but the compiler does not generate code for it yet (its entry says
        `lowered: false`). Every operation of this release lowers, so the code cannot be
        raised in this release; it stays reserved, keeping its number, for a table entry
        added ahead of its lowering. `kernel.check()` would report it, so the CI linter
        finds it before a launch.

        Example:

            @cutile.entry(unsafe=True)
            def k(z: Mut[Tensor[f32, [16]]]):
                frobnicate(z)      # an op listed with `lowered: false`
                # error[CT3030]: `frobnicate` is not supported by the compiler yet

        Fix: express the computation with the operations that lower (docs/dsl.md); for
        raw memory access inside `unsafe`, `load_ptr`, `store_ptr` and `ptr_offset`.
    """,
    "CT3031": """
        A method is called on a value that does not have it: a method no kernel value has
        (a typo), or one that exists for another kind of value (`z.sum()` on an output
        tensor, `partition_mut` on a sub-partition).

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                z.store(z.sum())        # error[CT3031]: an output tensor has no method `sum`

        Fix: load a tile first (`z.load().sum()`); the message lists the methods there are.
    """,
    "CT3032": """
        An attribute that the value does not have. Tensors have `shape`, `ndim`, `dtype`
        and (outputs) `tile_shape`; tiles have `shape`, `dtype` and `T`.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                n = z.size              # error[CT3032]: no attribute `size` here
                z.store(z.load())

        Fix: use `z.shape[0]` (or `num_tiles`) for sizes.
    """,
    "CT3034": """
        A value that must be known at compile time is not: a tile shape, an axis, a
        `keepdims` flag or an index extent computed from runtime values. Shapes are part
        of a tile's type, so they are literals, `Const`s, module-level ints, or
        arithmetic on those.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]], n: i32):
                z.store(zeros((n,), f32))   # error[CT3034]: a shape must be a compile-time integer

        Fix: make the size a `Const[int]` parameter (it compiles one variant per value).
    """,
    "CT3035": """
        An operation that takes an element type (`full`, `zeros`, `arange`, `astype`) got
        something else.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                z.store(zeros((16,), "f32"))    # error[CT3035]: expected a dtype such as `f32`

        Fix: pass the dtype object (`from cutile.core import f32`).
    """,
    "CT3036": """
        A tile index (of `load_tile`, `store(..., index=...)`, a sub-partition) has a
        different number of entries than the partition has axes, or an entry that is
        not an integer.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1, -1]]):
                z.store(x.load_tile((16, 1), (0,)).reshape((16,)))
                # error[CT3036]: index has 1 entries; the partition has rank 2

        Fix: give one integer index per axis: `(i, 0)`.
    """,
    "CT3037": """
        A constant tile index is negative. Tile indices count tiles from 0 along each axis
        (negative indices do not count from the end, as they would in Python). Safe code
        meets the checker's bounds proof first (CT2007); this is the compiler's own check,
        which `store_unchecked` inside `unsafe` reaches.

        Example:

            @cutile.entry(unsafe=True)
            def k(z: Mut[Tensor[f32, [16]]]):
                z.store_unchecked(zeros((16,), f32), (-1,))
                # error[CT3037]: tile index -1 is negative

        Fix: index from the front: `num_tiles(z, 0) - 1` is the last tile.
    """,
    "CT3038": """
        `padding=` names a mode that does not exist. Loads past a tensor's end read the
        padding value: `zero`, `neg_zero`, `nan`, `pos_inf` or `neg_inf`.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):
                z.store(load_tile_like(x, z, padding="inf"))
                # error[CT3038]: padding must be one of zero, neg_zero, nan, pos_inf, neg_inf

        Fix: `padding="neg_inf"` (for a max reduction), `"zero"` (for a sum).
    """,
    "CT3039": """
        A kernel operation or builtin got arguments that do not match its signature:
        missing or extra arguments, an unknown keyword, a `range` step that is not a
        positive integer, or `min`/`max` with a single value. The message shows the
        signature: `store(tile, index=None, latency=None, allow_tma=None)` for a store.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                z.store(zeros())                # error[CT3039]: `zeros` is missing argument `shape`
                z.store(z.load(), tma=False)    # error[CT3039]: `.store()` has no parameter `tma`
                for i in range(0, 4, 0):
                # error[CT3039]: range step must be a positive integer
                    ...

        Fix: call it as its signature says (`help(cutile.core.zeros)`; a method's
        signature is in the message); a `range` step is a positive integer. Loads and
        stores take the hints `latency=` and `allow_tma=`.
    """,
    "CT3040": """
        `block_id(axis)` or `num_blocks(axis)` names a grid axis other than 0, 1 or 2.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                b = block_id(3)         # error[CT3040]: grid axis 3 does not exist (0, 1 or 2)
                z.store(z.load())

        Fix: the grid has axes 0 (x), 1 (y) and 2 (z).
    """,
    "CT3041": """
        `num_tiles(x, axis, shape)` got arguments that do not fit: `x` is not a tensor
        parameter, an input without a `shape`, or an axis or shape that does not match
        the tensor's rank.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):
                n = num_tiles(x, 0)     # error[CT3041]: `num_tiles(x, ...)` needs the tile shape
                z.store(z.load())

        Fix: `num_tiles(x, 0, (16,))`; for a `Mut` output the shape defaults to its tile.
    """,
    "CT3042": """
        `load_tile_like(src, like)` needs a tensor parameter to read and a `Mut` output
        whose tile position and shape it copies. (A `like` that is not an output is the
        checker's CT1009.)

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                z.store(load_tile_like(z.load(), z))
                # error[CT3042]: `load_tile_like` reads a tensor parameter

        Fix: `load_tile_like(x, z)` with `x` a tensor parameter (the tile of `x` where this
        block writes `z`), or `x.load_tile(shape, index)` for an explicit position.
    """,
    "CT3044": """
        A store writes a tile whose shape differs from the tiles of the output (or
        sub-partition) it stores into and does not broadcast to it.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                z.store(zeros((32,), f32))
                # error[CT3044]: storing a tile of shape [32] into tiles of shape [16]

        Fix: store a tile of the output's tile shape (`z.tile_shape`).
    """,
    "CT3045": """
        `z.partition_mut(shape)` asks for sub-tiles that do not divide the output's tile
        evenly once the `Const` values are known, so the sub-tiles would not cover the
        block's own tile exactly. (With literal shapes the checker reports it: CT2005.)

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, ["B"]]], S: Const[int], B: Const[int]):
                p = z.partition_mut((S,))
                p.store(zeros((S,), f32), (0,))

            k.compile(B=64, S=48)
            # error[CT3045]: sub-tiles [48] do not divide the tile [64] of `z`

        Fix: use a divisor of the tile on every axis (`S=16`, `S=32`).
    """,
    "CT3046": """
        A reduction (`sum`, `max`, `min`, `prod`) names an axis the tile does not have,
        or `expand_dims(t, axis)` puts the new axis past the ends of the result (a rank-r
        tile takes axes -(r + 1) to r).

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                t = z.load()
                z.store(full((16,), t.sum(axis=1), f32))
                # error[CT3046]: axis 1 out of range for a rank-1 tile

        Fix: use an axis between `-rank` and `rank - 1`, or omit it to reduce every axis
        (for `expand_dims`, between `-rank - 1` and `rank`).
    """,
    "CT3047": """
        `mma(a, b, acc)` got operands that do not line up: it computes `a @ b + acc` with
        `a` of shape [M, K], `b` [K, N] and `acc` [M, N] (optionally with a leading batch
        axis), `a` and `b` of one element type (an i8 and a u8 operand may mix), and an
        accumulator the tensor cores take for it: f16 or f32 for f16 and the f8 types, f32
        for bf16, tf32 and f32, f64 for f64, i32 for i8 and u8.

        Example:

            @cutile.entry
            def k(c: Mut[Tensor[f32, [64, 64]]], a: Tensor[f16, [-1, -1]],
                  b: Tensor[f16, [-1, -1]]):
                ta = a.load_tile((64, 32), (0, 0))
                tb = b.load_tile((64, 64), (0, 0))
                c.store(mma(ta, tb, zeros((64, 64), f32)))
                # error[CT3047]: mma shapes do not line up: [64, 32] x [64, 64] + [64, 64]

        Fix: make the inner extents equal (`b.load_tile((32, 64), ...)`), and convert one
        operand with `.astype` if their element types differ.
    """,
    "CT3048": """
        `t.reshape(shape)` changes the number of elements.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [4, 4]]]):
                z.store(z.load().reshape((4, 8)))  # error[CT3048]: cannot reshape [4, 4] to [4, 8]

        Fix: keep the product of the extents (`(2, 8)`, `(16, 1)`).
    """,
    "CT3049": """
        `t.permute(axes)` got axes that are not a permutation of the tile's axes, or
        `transpose` / `.T` was used on a tile that is not 2-D.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [4, 4]]]):
                z.store(z.load().permute((0, 0)))
                # error[CT3049]: [0, 0] is not a permutation of the tile's axes

        Fix: name every axis once (`(1, 0)`); use `permute` for tiles of rank 3.
    """,
    "CT3050": """
        `z.iter_indices(group=G)` got a group size below 1. The group is how many tile
        rows of the last two axes a block walks together (a grouped swizzle for cache
        reuse); 1 is row-major.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [4, 8]]]):
                for idx in z.iter_indices(group=0):
                # error[CT3050]: group size must be >= 1, got 0
                    z.store(zeros((4, 8), f32), index=idx)

        Fix: a group of 1 or more (8 is a common choice for GEMM).
    """,
    "CT3060": """
        A load or store hint is out of range. `latency=` (an integer from 1 to 10) tells
        tileiras how long to expect the access to take, so it can schedule around it;
        `allow_tma=` (True or False) lets it use, or keeps it off, the TMA unit. Both are
        compile-time values and change speed, never the values read or written. Either
        may be a `cutile.ByTarget(sm_90=..., sm_100=..., default=...)` with one value per GPU
        architecture; each of its values must be in range too, and it must name
        architectures (`sm_90`, `sm_100`, `sm_120a`, ...) and give at least one value.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [64]]], x: Tensor[f32, [-1]]):
                z.store(x.load_tile((64,), (block_id(0),), latency=20))
                # error[CT3060]: `latency` must be a compile-time integer from 1 to 10
                z.store(x.load_tile((64,), (block_id(0),)), allow_tma=1)
                # error[CT3060]: `allow_tma` must be True or False

        Fix: `latency=3`, `allow_tma=False`, or `latency=ByTarget(sm_90=3, sm_100=5,
        default=2)` (or leave them out and let tileiras decide).
    """,
    "CT3061": """
        A math mode is unknown, or fast on a type that has no fast mode. `rounding=` of
        `truediv` is one of nearest_even, zero, negative_inf, positive_inf, approx, full
        (`sqrt`: the same but full); `approx`, `full` and `flush_to_zero=True` exist for
        f32 only, as on the GPU (PTX `div.approx.f32`, `ex2.approx.ftz.f32`).

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f16, [16]]], x: Tensor[f16, [-1]]):
                h = load_tile_like(x, z)                    # an f16 tile
                z.store(truediv(h, 3.0, rounding="approx"))
                # error[CT3061]: rounding `approx` exists for f32 only, not f16

        Fix: `truediv(h.astype(f32), 3.0, rounding="approx")`, or the default rounding.
    """,
    "CT3053": """
        An integer raised to a negative constant power: `t ** -2` or `pow(t, -1)` with
        an integer tile and an integer exponent. Integer powers stay integers (a
        constant exponent unrolls into multiplications), and integers have no negative
        powers.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[i32, [16]]]):
                z.store(z.load() ** -1)
                # error[CT3053]: an integer raised to the negative power -1

        Fix: convert the base to float for a float result (`z.load().astype(f32) ** -1`),
        or use a non-negative exponent.
    """,
    "CT3054": """
        `t.item()` on a tile of more than one element. `.item()` turns a one-element
        tile (of any rank, e.g. shape [1] or [1, 1]) into a scalar (a rank-0 tile).

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                s = z.load().item()
                # error[CT3054]: `.item()` needs a tile of one element, not one of shape [16]
                z.store(full((16,), s, f32))

        Fix: reduce the tile first (`z.load().sum()` is already a scalar), or load a
        one-element tile.
    """,
}
