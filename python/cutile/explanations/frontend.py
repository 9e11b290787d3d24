"""CT0xxx: kernel source the compiler does not accept (the frontend)."""

TEXTS: dict[str, str] = {
    "CT0001": """
        The kernel uses Python syntax the compiler does not translate. A kernel body is
        compiled, not run: it may use assignments, arithmetic, comparisons, `if`/`elif`/
        `else`, `for ... in range(...)`, `for idx in z.iter_indices()`, `while`, `break`,
        `continue`, `return`, tuples, `assert`, `print` (f-strings too) and
        `with cutile.unsafe():`. Refused: `for ... else` and `while ... else`, `try`,
        other `with` blocks, comprehensions, lambdas, `*args`/`**kwargs`
        parameters, calling a dtype to convert, assert messages that are not string
        literals, conversions in f-strings (`{x!r}`), and code that never runs because it
        follows a `return`, `break` or `continue` in the same block.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                for i in range(3):
                    break
                    z.store(zeros((16,), f32))   # error[CT0001]: this code never runs
                z.store(zeros((16,), f32))

        Fix: remove the code that never runs (or move it before the `break`), convert with
        `x.astype(f32)`, and move anything else to the host or into a `@cutile.device`
        helper written with the supported syntax.
    """,
    "CT0002": """
        A name in the kernel is not defined where the kernel is: not a parameter, not a
        local assigned earlier, not a global or closure variable of the kernel's module,
        or an attribute that does not exist on a module the kernel uses.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                z.store(ful((16,), 1.0, f32))   # error[CT0002]: cannot find `ful` in this scope

        Fix: correct the spelling, or import or define the name in the kernel's module
        before the kernel (`from cutile.core import full`).
    """,
    "CT0003": """
        A kernel parameter's annotation is missing, cannot be evaluated, is not a kernel
        type, or the parameter has a default value. Every entry parameter says what the
        caller passes: `Mut[Tensor[dtype, tile]]` (an output partition),
        `Tensor[dtype, shape]` (a read-only input), an element type such as `f32` or `i32`
        (a runtime scalar; `float` also means `f32`), or `Const[int]` / `Const[float]` /
        `Const[bool]` (a compile-time constant). A plain `int` or `bool` is refused as
        ambiguous: it could be either a constant or a runtime scalar.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [128]]], n: int):
            # error[CT0003]: `n: int` is ambiguous in a kernel
                ...

        Fix: write `n: Const[int]` for a compile-time constant (such as a tile size), or
        `n: i32` for a runtime scalar; remove default values and pass every argument.
    """,
    "CT0004": """
        cutile compiles a kernel from its source text, and that text cannot be read:
        the function was defined in an interactive session without a file, with `exec`,
        as a lambda, or as an `async def`.

        Example:

            >>> exec("@cutile.entry\\ndef k(z: Mut[Tensor[f32, [16]]]): ...")
            >>> k.check()       # [CT0004] cannot read the source of `k`

        Fix: define kernels with `def` in a `.py` file (a notebook cell works too, since
        its source is kept).
    """,
    "CT0005": """
        A tensor annotation names a dimension (`Tensor[f32, ["B"]]`) that is not a
        `Const[int]` parameter of the kernel. Names in shapes bind `Const` values: the
        launch infers them from the arguments' shapes (or checks them against the shapes),
        and they must be declared as ints; a `Const[float]` or `Const[bool]` is refused.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, ["B"]]]):
            # error[CT0005]: shape of `z` names `B`, which is not a `Const` parameter
                z.store(z.load())

        Fix: add the parameter (`B: Const[int]`), or write the size as an int
        (`Tensor[f32, [128]]`).
    """,
    "CT0006": """
        The kernel uses a global (or closure) value of a type kernels cannot hold, such as
        a list, a numpy array, a tensor or an arbitrary object, or it uses a cutile
        operation as a value instead of calling it. Kernels may read ints, floats, bools,
        dtypes, `cutile.core` functions and `@cutile.device` functions from their scope;
        the values are folded in at compile time.

        Example:

            WEIGHTS = [1.0, 2.0]

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                z.store(z.load() * WEIGHTS)
                # error[CT0006]: `WEIGHTS` is a `list`, which a kernel cannot use

        Fix: pass data as a tensor argument (`w: Tensor[f32, [-1]]`), or numbers as
        scalar or `Const` parameters.
    """,
    "CT0007": """
        The kernel calls something that is not kernel code: a plain Python function,
        a Python builtin kernels do not have, a numpy / `math` / torch function, or
        another `@cutile.entry` kernel. A kernel can call the operations of
        `cutile.core`, the builtins `range`, `min`, `max`, `abs`, `int`, `float`, `len`,
        `print` (a device print; f-strings too), and `@cutile.device` functions
        (inlined where they are called).

        Example:

            import numpy as np

            @cutile.entry
            def k(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
                z.store(np.exp(load_tile_like(x, z)))
                # error[CT0007]: `numpy.exp` is a host function, not kernel code
                #   = help: use `cutile.core.exp` (`from cutile.core import exp`)

        Fix: use the `cutile.core` operation of the same math (`exp`, `sqrt`, `sum`, ...);
        mark a helper of your own `@cutile.device`; compute the rest on the host and
        pass it in as an argument.
    """,
    "CT0010": """
        A `cutile.core` operation, a `@cutile.device` function or `cutile.unsafe()` was
        called by ordinary Python code. They only mean something inside a kernel body,
        which cutile compiles; Python never runs them.

        Example:

            from cutile.core import exp
            exp(1.0)
            # [CT0010] `cutile.core.exp` can only be used inside a `@cutile.entry` or
            #   `@cutile.device` function

        Fix: use numpy or `math` on the host, and call the operation inside a kernel.
    """,
    "CT0011": """
        The kernel nests statements more than 24 blocks deep or an expression more than
        32 levels deep. The kernel AST travels to the checker as JSON with a nesting
        limit, so very deep code is refused before it is checked.

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[f32, [16]]]):
                t = z.load()
                z.store(((((((((((((((((((((((((((((((((t + 1) + 1) ... ))))  # 33 levels
                # error[CT0011]: expression nested more than 32 levels deep

        Fix: split the expression into several assignments, or move inner blocks into a
        `@cutile.device` function.
    """,
    "CT0012": """
        An integer literal in the kernel does not fit in 64 bits. Kernel integers are at
        most 64-bit (indices and extents are 32-bit).

        Example:

            @cutile.entry
            def k(z: Mut[Tensor[i64, [16]]]):
                z.store(full((16,), 18446744073709551616, i64))
                # error[CT0012]: the integer 18446744073709551616 does not fit in 64 bits

        Fix: use a value that fits the element type; compute large values on the host.
    """,
}
