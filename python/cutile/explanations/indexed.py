"""CT3080-CT3083: element-indexed operations (`gather`, `scatter`, the atomics), raw
pointers and `assume` hints, found while lowering."""

TEXTS: dict[str, str] = {
    "CT3080": """
        An element-indexed operation got arguments that do not fit: its first argument is
        not a tensor parameter, the indices are not one integer tile per axis of the
        tensor (a tuple of tiles for a tensor of rank 2 or more), or the atomic is not
        defined on the tensor's element type. `atomic_add` takes i32, i64, f16, bf16, f32
        and f64 tensors; `atomic_xchg` and `atomic_cas` i32, i64, f32 and f64;
        `atomic_max`, `atomic_min`, `atomic_and`, `atomic_or` and `atomic_xor` i32 and
        i64 (as on the GPU).

        Example:

            @cutile.entry
            def k(a: Atomic[Tensor[f32, [-1]]]):
                atomic_max(a, arange(16, i32), 1.0)
                # error[CT3080]: `atomic_max` is not defined on `f32` elements (`a`)

        Fix: use an integer tensor (order-preserving keys of floats, for a max), or pass
        `(rows, cols)` for a 2-D tensor.
    """,
    "CT3081": """
        An atomic's `memory_order` or `scope` is not one the device knows. Orders are
        "relaxed", "acquire", "release" and "acq_rel" (the default); scopes "device" (the
        default), "system" and "block" (inside `unsafe` only, for an `Atomic` tensor:
        CT1018). Both are compile-time strings.

        Example:

            @cutile.entry
            def k(a: Atomic[Tensor[f32, [-1]]]):
                atomic_add(a, arange(16, i32), 1.0, memory_order="seq_cst")
                # error[CT3081]: memory_order must be one of relaxed, acquire, ...

        Fix: `memory_order="acq_rel"` orders like sequential consistency for one element.
    """,
    "CT3082": """
        A pointer operation got arguments that do not fit: `ptr_offset`, `load_ptr` and
        `store_ptr` take pointers (a `Ptr[...]` parameter, or a tile of pointers made by
        `ptr_offset` or `int_to_ptr`); offsets and addresses are integers (element
        offsets, not bytes); a mask is a bool tile that broadcasts to the pointers' shape;
        a padding needs a mask (it is what the masked-off lanes read). A pointer is not a
        number: arithmetic, comparisons and conversions of one are refused too.

        Example:

            @cutile.entry(unsafe=True)
            def k(p: Ptr[f32]):
                v = load_ptr(p + 1)
                # error[CT3082]: a pointer is not a number: it takes no arithmetic, ...

        Fix: `load_ptr(ptr_offset(p, 1))`; make masks with comparisons
        (`mask=offs < n`).
    """,
    "CT3083": """
        An `assume` hint that cannot apply: `assume_div_by(x, divisor)` takes an integer
        tile or scalar (or pointers) and a compile-time divisor that is a power of two
        (1, 2, 4, ...: what Tile IR's `assume div_by` takes);
        `assume_bounds(x, lo, hi)` an integer tile or scalar and compile-time bounds that
        fit its type, at least one of them, with lo <= hi. On a compile-time number the
        hint is checked at once, and a false one is this error.

        Example:

            @cutile.entry(unsafe=True)
            def k(z: Mut[Tensor[f32, [16]]], n: i32):
                m = assume_div_by(n, 0)
                # error[CT3083]: the divisor of `assume_div_by` must be a power of two, got 0

        Fix: pass a power-of-two literal or `Const[int]`; the GPU trusts the hint (a false one
        is undefined behaviour), the interpreter checks it.
    """,
}
