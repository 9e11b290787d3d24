"""CT5010-CT5035: host tensors and ops, raised in Python (`BorrowError`, `TensorError`)."""

TEXTS: dict[str, str] = {
    "CT5010": """
        `t.partition(tile_shape)` got a tile shape with a different number of axes than
        the tensor, or a tile size below 1. (Raised as `BorrowError`; the tensor is not
        consumed.)

        Example:

            t = api.zeros([1024, 512], f32)
            t.partition([128])
            # [CT5010] tile shape [128] has rank 1; the tensor has rank 2

        Fix: give one tile size per tensor axis: `t.partition([128, 64])`.
    """,
    "CT5011": """
        A tensor of more than 3 axes is partitioned. A partition's tiles map to the launch
        grid's three axes (block (i, j, k) owns tile (i, j, k)), so it has at most three.

        Example:

            t = api.zeros([2, 4, 8, 16], f32)
            t.partition([1, 1, 8, 16])
            # [CT5011] a partition has at most 3 dimensions (one per grid axis)

        Fix: reshape first (`t.reshape([8, 8, 16]).partition([1, 8, 16])`).
    """,
    "CT5012": """
        `p.persistent(num_blocks)` got a block count below 1. A persistent launch runs
        `num_blocks` blocks that share the tiles by the checked schedule; the default is
        one per multiprocessor, at most one per tile.

        Example:

            z = api.zeros([1024, 1024], f32).partition([128, 128])
            z.persistent(0)             # [CT5012] num_blocks must be >= 1, got 0

        Fix: `z.persistent()` (the default) or a positive count.
    """,
    "CT5013": """
        A tensor whose strides put several elements at one address (a stride of 0, or
        strides that overlap) is partitioned. A partition is an output: its blocks, and the
        lanes of one store, write their elements at the same time, so two elements at one
        address would be written by two of them (a data race). cutile's own views never
        have such a layout; a copy of a broadcast import to another device keeps one.
        (Raised as `BorrowError`; the tensor is not consumed.)

        Example:

            b = cutile.from_dlpack(np.broadcast_to(row, (4, 8)))  # strides (0, 1), shared
            t = b.to(1)                 # a copy on device 1, with the same strides
            t.partition([1, 8])
            # [CT5013] cannot partition a tensor whose strides [0, 1] (shape [4, 8]) put
            # several elements at one address

        Fix: write into a tensor of its own memory (`api.empty([4, 8], f32)`), or copy the
        values into one first (`api.from_numpy(t.to_numpy())`).
    """,
    "CT5020": """
        An op ran a second time. An op owns the tensors moved into it, runs once, and
        hands them back once; what `.sync()` returned is what the program holds next.

        Example:

            op = add(z, x, y)
            z, x, y = op.sync()
            op.sync()                   # [CT5020] `add` (op #1) already ran; an operation runs once

        Fix: call the kernel again for another launch: `z, x, y = add(z, x, y).sync()`.
    """,
    "CT5030": """
        A tensor builder (`api.zeros`, `ones`, `full`, `empty`) got a shape that is not an
        int or a sequence of non-negative ints: a negative extent, a float, a string, a
        nested list, a bool. (Raised as `cutile.TensorError`, also a `ValueError`.)

        Example:

            api.zeros(-5)               # [CT5030] tensor extents are >= 0, but shape [-5] has -5
            api.zeros([2.5])
            # [CT5030] tensor extents are ints, but shape [2.5] has a `float` (2.5)

        Fix: pass ints (`int(n)` where a size is computed as a float); an empty tensor has
        extent 0 on some axis.
    """,
    "CT5031": """
        An element type cutile does not have: an unknown name, or a numpy dtype with no
        cutile counterpart (complex, object, strings). The element types are `bool_`,
        `i8`, `i16`, `i32`, `i64`, `f16`, `bf16`, `f32`, `f64`, `tf32`, by object, name
        or numpy dtype. (Raised as `cutile.TensorError`, also a `TypeError`.)

        Example:

            api.zeros(4, "f33")                          # [CT5031] there is no element type `f33`
            api.from_numpy(np.zeros(4, np.complex64))
            # [CT5031] numpy's `complex64` has no cutile element type

        Fix: use one of the element types (split complex data into real and imaginary
        tensors).
    """,
    "CT5032": """
        A value the element type cannot hold: `api.full` with something that is not a
        number, an int outside the integer type's range, a non-integral float for an
        integer tensor, a finite float that would be infinite in the float type, or
        `api.arange` bounds that are not numbers (or a zero step).

        Example:

            api.full(4, 300, i8)        # [CT5032] 300 does not fit in `i8` (-128 to 127)
            api.full(4, 1e300, f16)     # [CT5032] 1e+300 overflows `f16` (it would be infinite)

        Fix: use a wider type, or a value in range (`float("inf")` itself is accepted).
    """,
    "CT5033": """
        A tensor larger than memory: its byte count does not fit in 63 bits, or the
        allocation failed.

        Example:

            api.zeros([2**62, 4], f32)
            # [CT5033] an `f32` tensor of shape [...] needs ... bytes, more than any memory holds

        Fix: check the shape's extents; free other tensors (drop the last reference) or
        use a smaller tensor.
    """,
    "CT5034": """
        `Tensor.reshape` to a shape with another number of elements, or of a tensor whose
        elements are not contiguous (a strided view): a reshape is a view of the same
        bytes, so it needs both to hold.

        Example:

            api.zeros([4, 6], f32).reshape([5, 5])
            # [CT5034] cannot reshape [4, 6] (24 elements) to [5, 5] (25 elements)

        Fix: give a shape with the same element count; reshape before slicing.
    """,
    "CT5035": """
        `Tensor.permute(*axes)` names each axis of the tensor exactly once, as numpy's
        `transpose(axes)`: axis `k` of the view is axis `axes[k]` of the tensor. A missing,
        repeated or out-of-range axis (or one that is not an int) has no view.

        Example:

            api.zeros([4, 6, 8], f32).permute(1, 0)
            # [CT5035] permute(1, 0) is not an order of the 3 axes of a tensor of shape [4, 6, 8]

        Fix: list every axis once, e.g. `permute(1, 0, 2)` swaps the first two.
    """,
    "CT5037": """
        `t[...]` makes a view of the same bytes from ints (an axis dropped) and slices with
        a step of 1 or more, at most one per axis. More indices than axes, an int outside
        its axis, a slice with a step below 1 (a reversed view would need negative
        strides) or an index of another kind names no view. `TensorIndexError` is also an
        `IndexError`, so iterating over a tensor's first axis stops at its end.

        Example:

            t = api.zeros([4, 6], f32)
            t[::-1]             # [CT5037] a view needs a slice step of 1 or more
            t[4]                # [CT5037] index 4 out of range for axis 0 of size 4

        Fix: index within the extents with steps of 1 or more; for a reversed copy, reverse
        it on the host (`api.from_numpy(t.to_numpy()[::-1].copy())`).
    """,
}
