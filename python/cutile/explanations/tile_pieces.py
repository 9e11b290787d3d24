"""CT3070-CT3074: ranges, slices and pieces of tiles (`arange`, `t[a:b]`, `cat`,
`extract`) and `reduce` with a device-function combiner, found while lowering (the
combiner's shape also by `kernel.check()`)."""

TEXTS: dict[str, str] = {
    "CT3070": """
        `arange(start, stop, step)` makes a tile, and a tile has a power-of-two number of
        elements: its length `ceil((stop - start) / step)` must be 1, 2, 4, 8, ... The step
        cannot be 0, float bounds make float tiles (not an integer `dtype`), and every value
        must fit the dtype.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[i32, [16]]]):
                z.store(arange(0, 12))      # error[CT3070]: `arange` makes 12 elements; a
                                            # tile has a power-of-two size

        Fix: choose bounds with a power-of-two length (`arange(0, 16)`), and mask or
        pad the elements you do not need.
    """,
    "CT3071": """
        A tile slice `t[a:b]`, `t[:, a:b:s]` or index `t[i]` is cut out at compile time, so
        its bounds are compile-time integers, and the piece is a tile: a power-of-two
        number of elements on each sliced axis. The step is positive (and a power of two
        when it matters), an index lies in its axis, and a slice whose start is not a
        multiple of its length may need at most 16 aligned pieces. Out-of-range bounds are
        clipped as numpy does.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [8]]], x: Tensor[f32, [-1]]):
                t = x.load_tile((16,), (block_id(0),))
                z.store(t[1:7])             # error[CT3071]: this slice has 6 elements on
                                            # axis 0; a tile has a power-of-two size

        Fix: slice a power-of-two length (`t[0:8]`, `t[8:]`); for a sub-tile at a runtime
        position use `extract(t, (i,), (8,))`.
    """,
    "CT3072": """
        `cat(tiles, axis)` joins a tuple of tiles along `axis`. The tiles have one rank and
        the same extent on every other axis, and since Tile IR joins two tiles at a time
        into a power-of-two tile, neighbours are joined pairwise: equal sizes (8, 8), or
        runs that pair up (4, 4, 8). Sizes such as (4, 8, 4) cannot be joined.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16, 8]]]):
                a = zeros((8, 8), f32)
                b = zeros((8, 4), f32)
                z.store(cat((a, b), 0))     # error[CT3072]: tiles of shapes [[8, 8], [8, 4]]
                                            # do not line up along axis 0

        Fix: make the other axes equal (reshape or broadcast first) and join tiles whose
        sizes pair into powers of two.
    """,
    "CT3073": """
        `extract(t, index, shape)` returns sub-tile `index` of `t` cut into tiles of
        `shape`. The shape has one extent per axis, each dividing `t`'s; a compile-time
        index names an existing sub-tile (negative ones count from the end); a runtime
        index is an integer scalar and is taken modulo the number of sub-tiles.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1]]):
                t = x.load_tile((16,), (block_id(0),))
                z.store(extract(t, (4,), (4,)))     # error[CT3073]: sub-tile 4 does not
                                                    # exist on axis 0 (there are 4)

        Fix: index sub-tiles 0 to count - 1 (here 0..3), with a shape that divides the
        tile.
    """,
    "CT3074": """
        `reduce(x, axis, combiner, identity)` inlines `combiner`, a `@cutile.device`
        function of two parameters, into the body of Tile IR's `reduce`. That body is
        straight-line pure code on two scalars: the combiner (and any device function it
        calls) has no `if` statement, loop, `assert` or `unsafe` block, and returns one
        scalar of `x`'s element type. The combiner is passed itself (not called, not a
        lambda), and `identity` is a compile-time number of the element type.

        Example:

            @cutile.device
            def larger(a, b):
                m = b
                if a > b:                   # error[CT3074]: `larger` is used as a combiner,
                    m = a                   # so its body must be straight-line code
                return m

            @cutile.entry
            def k(z: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1, -1]]):
                z.store(reduce(x.load_tile((4, 16), (block_id(0), 0)), 1, larger, -1e30))

        Fix: choose with `where(a > b, a, b)` or `a if a > b else b`, and return the
        element type (`.astype(...)`).
    """,
}
