"""CT3001-CT3024, CT3090-CT3091: types, shapes and control flow, found while lowering
(once `Const` values are known)."""

TEXTS: dict[str, str] = {
    "CT3001": """
        An operator or operation got a value that is neither a tile nor a number: a
        tensor parameter, a tuple, a dtype or a range where arithmetic needs a value.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):
                z.store(x + 1.0)    # error[CT3001]: expected a tile or a number

        Fix: load a tile first (`load_tile_like(x, z) + 1.0`, `x.load_tile(shape, idx)`).
    """,
    "CT3002": """
        Two tiles in one expression (or the condition and values of `where`) have shapes
        that do not broadcast. Tiles broadcast like numpy arrays: trailing dimensions must
        be equal or 1, and missing leading dimensions count as 1.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16, 8]]]):
                z.store(zeros((16, 8), f32) + ones((8, 16), f32))
                # error[CT3002]: shapes [16, 8] and [8, 16] do not broadcast

        Fix: reshape, transpose or `broadcast_to` one operand so the shapes line up.
    """,
    "CT3003": """
        An expression of constants (literals, `Const` values, module-level numbers) that
        the compiler folds at compile time cannot be evaluated, such as `int` or `float`
        of a string.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                z.store(full((16,), int("x"), f32))    # error[CT3003]: int('x') is not a number

        Fix: compute the constant on the host and pass it as a `Const` or a scalar.
    """,
    "CT3004": """
        `a @ b` (or `matmul(a, b)`) got operands it cannot multiply: a number instead of
        a tile, a tile of rank 0 or above 3, inner extents that differ (`[M, K] @ [K, N]`),
        batch axes that do not broadcast, or an element type the tensor cores do not take
        (they take f16, bf16, tf32, f32, f64, f8e4m3fn, f8e5m2, i8 and u8; not i16, i32, i64
        or bool).

        Example:

            @cutile.entry
            def k(c: Mut[Tensor[f32, [64, 64]]], a: Tensor[f32, [-1, -1]],
                  b: Tensor[f32, [-1, -1]]):
                c.store(a.load_tile((64, 32), (0, 0)) @ b.load_tile((64, 64), (0, 0)))
                # error[CT3004]: shapes do not multiply: [64, 32] @ [64, 64]

        Fix: make the inner extents equal (`b.load_tile((32, 64), ...)`), and convert
        integer tiles with `.astype(f32)` (or to `i8` when the values fit).
    """,
    "CT3005": """
        An operator is not defined for the tiles' element type: bitwise or shift operators
        on floats, or arithmetic that booleans do not have (`+`, `*`, `**`, `<<`).

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                t = z.load()
                z.store(t << 1)
                # error[CT3005]: operator `lshift` is not defined for `f32` tiles

        Fix: shift and mask integers (convert with `.astype(i32)`), or multiply floats
        (`t * 2.0`); convert booleans to numbers first.
    """,
    "CT3006": """
        An `if`, `elif`, `assert` or `and`/`or` condition is not a scalar: it is a tile
        of several elements (a condition chooses one path for the whole block) or a value
        that has no truth value.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                t = z.load()
                if t > 0:
                # error[CT3006]: a condition must be a scalar, not a tile of shape [16]
                    z.store(t)

        Fix: choose elementwise with `where(t > 0, t, 0.0)`, or reduce first
        (`if t.max() > 0:`).
    """,
    "CT3010": """
        An entry parameter cannot be passed to a compiled kernel: a scalar of an element
        type the launch ABI has no slot for (such as `tf32`), or a parameter kind the
        compiler does not launch.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]], s: tf32):
            # error[CT3010]: `tf32` scalars cannot be kernel arguments
                z.store(z.load() * s)

        Fix: pass the scalar as `f32` (convert inside the kernel if needed).
    """,
    "CT3011": """
        A `Const` parameter has no value when the kernel is lowered. The code cannot be
        raised in this release, by a launch or a build: a launch infers a `Const` from a
        tensor shape or takes it by keyword and refuses a missing one first (CT6104), as do
        `kernel.compile(...)` (CT6104) and `python -m cutile compile -D` (CT8013). It
        stays reserved, so that its number keeps its meaning, for a lowering asked for
        without those checks (a `Specialization` built by hand).

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]], S: Const[float]):
                z.store(z.load() * S)

            k.compile()   # CT6104 (compile() needs a value for `S`), before any CT3011

        Fix: pass it at the call (`k(z, S=2.0)`) or to `compile(S=2.0)`, or name it in a
        tensor shape so the launch infers it.
    """,
    "CT3012": """
        A `@cutile.entry` function returns a value. An entry writes its results into its
        `Mut` outputs; the launch returns the arguments, not a value.
        (`@cutile.device` helpers may return values, with one `return` at the end.)

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                return z.load() * 2     # error[CT3012]: a kernel entry cannot return a value

        Fix: `z.store(z.load() * 2)`.
    """,
    "CT3013": """
        Tuple unpacking has the wrong number of targets, or unpacks something that is not
        a tuple (a tile cannot be unpacked).

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16, 8]]]):
                m, n, p = z.shape       # error[CT3013]: cannot unpack 2 values into 3

        Fix: use as many targets as the tuple has items.
    """,
    "CT3014": """
        An `assert` whose condition is a constant false: it would fail in every block, so
        the kernel cannot do anything useful.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, ["B"]]], B: Const[int]):
                assert B % 2 == 1
                z.store(z.load())

            k.compile(B=16)     # error[CT3014]: this assertion is always false

        Fix: correct the condition, or launch with `Const` values that satisfy it.
    """,
    "CT3015": """
        A variable assigned in a loop or a branch has different types on different paths
        (f16 on one and f32 on the other, tiles of different shapes), or is a value that
        cannot be carried through control flow (a tensor, a tuple of them); or a device
        function returns a value on some paths and ends without `return` on others (a loop
        may run to its end, so a `return` inside one does not end the function).

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                acc = zeros((16,), f16)
                for i in range(4):
                    acc = acc + z.load()
                    # error[CT3015]: `acc` is a tile<16xf16> on one path and a tile<16xf32> on
                    #   another
                z.store(acc)

        Fix: give the variable its final type before the loop (`acc = zeros((16,), f32)`),
        or convert on every path with `.astype`.
    """,
    "CT3016": """
        `range(...)` got bounds that are not integers (a float, a tile of several
        elements).

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]], n: f32):
                for i in range(n):      # error[CT3016]: loop bounds must be integers
                    z.store(z.load())

        Fix: make the bound an integer (`n: i32`, a `Const[int]`, or `int(...)` of a
        constant).
    """,
    "CT3017": """
        A name is used where it has no value: assigned only inside a loop or one branch
        of an `if`, and read after it; or the variable of a `for` loop, read after its
        loop.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]], n: i32):
                if n > 0:
                    t = z.load()
                z.store(t)              # error[CT3017]: `t` is not defined here

        Fix: assign the name on every path before the use (`t = zeros((16,), f32)` first).
    """,
    "CT3018": """
        Indexing (`v[i]`) applies to tuples, such as `z.shape` or `z.tile_shape`, and to
        tiles (a piece of a tile: CT3071); a constant index into a tuple must be in range.
        A tensor parameter is not indexed: load a tile of it first.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                n = z.shape[1]       # error[CT3018]: index 1 out of range
                z.store(z.load())

        Fix: index within the tuple (`z.shape[0]` for a rank-1 tensor), or load a tile
        (`x.load_tile(...)[i]`) instead of indexing a tensor.
    """,
    "CT3019": """
        `@cutile.device` functions call each other more than 32 levels deep. Every call is
        inlined, so the chain of calls is bounded. The code cannot be raised in this
        release: the checker follows calls 31 deep and refuses a deeper chain first
        (CT1012; it once stopped following them silently, and the compiler inlined what it
        had not checked). It stays reserved as the compiler's own limit.

        Example:

            @cutile.device
            def step0(x):
                return step1(x)      # ... step1 calls step2, ..., step32 calls step33

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                z.store(step0(z.load()))
            # error[CT1012]: device function `step31` would be inlined 32 calls deep
            #   (the checker's refusal, before any CT3019)

        Fix: flatten the chain of helpers; loops with `range` express repetition.
    """,
    "CT3020": """
        A `@cutile.device` function is called with arguments that do not match its
        parameters: too many, too few, an unknown keyword, or one given twice.

        Example:

            @cutile.device
            def scale(t, s):
                return t * s

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                z.store(scale(z.load()))    # error[CT3020]: `scale` is missing argument `s`

        Fix: pass exactly the function's parameters.
    """,
    "CT3021": """
        A partitioned output (or an `iter_indices()` walk) has more than 3 dimensions. The
        launch grid has three axes and block (i, j, k) owns tile (i, j, k), so an output
        is partitioned along at most three.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [1, 1, 1, 16]]]):
                z.store(z.load())
                # error[CT3021]: `z` has rank 4; a partitioned output has at most 3 dimensions

        Fix: reshape the tensor on the host to 3 or fewer dimensions
        (`t.reshape([a * b, c, d])`).
    """,
    "CT3022": """
        A tile's rank differs from the tensor it indexes: `load_tile` with a shape of
        another length, or `load_tile_like(x, z)` where `x` and `z` have different ranks.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1, -1]]):
                z.store(load_tile_like(x, z))   # error[CT3022]: `x` has rank 2 but `z` has rank 1

        Fix: give one tile extent per tensor axis (reshape the tensor on the host).
    """,
    "CT3023": """
        A tile dimension is not a power of two. Tile IR tiles have power-of-two extents on
        every axis (1, 2, 4, ..., 2^24); the tensor itself may have any extent, and the last
        tile of a ragged axis is masked.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, ["B"]]], B: Const[int]):
                z.store(z.load())

            k.compile(B=48)     # error[CT3023]: tile dimension 48 is not a power of two

        Fix: use a power-of-two tile (`B=32` or `B=64`); a tensor of 1000 elements is
        partitioned into 16 tiles of 64.
    """,
    "CT3024": """
        A tile has more than 2^24 = 16,777,216 elements, Tile IR's limit on one tile
        (`maxTileNumElements`; tileiras refuses larger tiles). It is reported at the
        expression that makes the tile: a load of a large partition, a broadcast, an
        `mma` result. Such a tile would not fit a block's registers anyway.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [1, 1]]], M: Const[int], N: Const[int]):
                t = zeros((M, 1), f32) + zeros((1, N), f32)
                z.store(t.sum(axis=0, keepdims=True).sum(axis=1, keepdims=True))

            k.compile(M=4096, N=8192)
            # error[CT3024]: a tile of 33554432 elements (4096x8192) is larger than Tile IR allows

        Fix: use smaller tiles, or split the work over several tiles per block
        (`partition_mut`, a loop over `load_tile` indices).
    """,
    "CT3090": """
        Two element types meet in one expression (`+`, a comparison, `where`, `cat`, `@`)
        and have no implicit common type. Tiles promote as numpy does (u8 + i8 -> i16,
        u32 + i32 -> i64, i32 + f16 -> f16), but not where that would lose values
        silently: an f8 tile with any other type (f8 is a storage format), and `u64` with
        a signed integer (no signed type holds every u64; numpy would give f64).

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[i64, [16]]], x: Tensor[u64, [-1]], y: Tensor[i64, [-1]]):
                z.store(load_tile_like(x, z) + load_tile_like(y, z))
                # error[CT3090]: `u64` and `i64` have no implicit common type

        Fix: convert one operand with `.astype(...)` to the type you mean (for f8,
        `.astype(f32)`).
    """,
    "CT3091": """
        `bitcast(x, dtype)` reads the same bits as another type, so both types must have
        the same width (f32 and i32 or u32; f16, bf16, i16 and u16; f8 and i8 or u8) and
        neither may be a bool. `pack_i4` packs pairs of integers along the last axis (it
        needs integers and a last axis of 2 or more), and `unpack_i4` unpacks bytes (u8 or
        i8 tiles).

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[i16, [16]]], x: Tensor[f32, [-1]]):
                z.store(bitcast(load_tile_like(x, z), i16))
                # error[CT3091]: `bitcast` keeps the bits, so the widths must match

        Fix: bitcast to a type of the same width (`bitcast(t, i32)`), or convert values
        with `.astype(...)`.
    """,
}
