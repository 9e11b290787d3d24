"""CT3080-CT3081: element-indexed operations (`gather`, `scatter`, the atomics), found
while lowering."""

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
}
