"""CT5042-CT5047 and CT6112: tensors shared with other libraries (`cutile.from_dlpack`,
`cutile.unsafe.from_dlpack_exclusive`, `Tensor.__dlpack__`; `InteropError`, also a
`BufferError`, and `LaunchError`). docs/interop.md is the guide."""

TEXTS: dict[str, str] = {
    "CT5042": """
        `cutile.from_dlpack(obj)` (or `cutile.unsafe.from_dlpack_exclusive(obj)`, or a
        kernel call importing an argument) got something that is no tensor it can import:
        an object with no `__dlpack__`, `__cuda_array_interface__` or `__array_interface__`
        (a list, a scalar), a producer that refused to export (its `BufferError` is
        quoted), a capsule that breaks the DLPack protocol (already consumed, another
        major version), or a cutile `Partition` (an output being written).

        Example:

            cutile.from_dlpack([1.0, 2.0])
            # [CT5042] a `list` is no tensor cutile can import: it has no `__dlpack__`, ...

        Fix: pass an array of a library that speaks DLPack (numpy, torch, cupy, jax); make a
        cutile tensor from Python data with `api.from_numpy(np.asarray(data))` (a copy).
    """,
    "CT5043": """
        The tensor lives where cutile's kernels cannot read it: host memory (a numpy array,
        a CPU torch tensor) on the GPU backend, a CUDA tensor on another GPU than
        `CUTILE_DEVICE`, a CUDA tensor on the interpreter (which runs on the CPU), or
        another kind of device. Zero-copy import never moves data between devices.

        Example (GPU backend):

            cutile.from_dlpack(np.ones(4, np.float32))
            # [CT5043] the tensor is in host memory (CPU), which the GPU backend (CUDA device 0)
            #   cannot use

        Fix: copy it where kernels run: `api.from_numpy(a)` (a copy to the device),
        `x.cuda()` / `x.to('cuda:0')` in torch; on the interpreter, `x.cpu()`.
    """,
    "CT5044": """
        The tensor's layout is one cutile cannot use: negative strides (a reversed view),
        data not aligned to the element size, byte strides that are not multiples of the
        element size, a masked `__cuda_array_interface__`, or, for an exclusive import
        (an output), strides that put two elements at one address (a broadcast view with
        stride 0, overlapping strides): two blocks writing those elements would race.
        Positive strides in any order are fine: kernels take strided tensors.

        Example:

            cutile.from_dlpack(np.arange(8.0)[::-1])
            # [CT5044] the tensor has negative strides [-1] (a reversed view); ...
            cutile.unsafe.from_dlpack_exclusive(torch.zeros(4).expand(3, 4))
            # [CT5044] the tensor's strides [0, 1] (shape [3, 4]) put several elements at
            #   one address ...

        Fix: copy it on the producer's side (`np.ascontiguousarray(a)`,
        `x.contiguous()`); write outputs into a tensor with memory of its own.
    """,
    "CT5045": """
        `Tensor.__dlpack__` (or `__cuda_array_interface__`) was asked for something the
        protocol does not allow or cutile does not do: a `dl_device` other than the
        tensor's own or the CPU, a cross-device export with `copy=False`, a CUDA `stream`
        for a tensor in host memory (the interpreter), arguments of the wrong type, or a
        `__cuda_array_interface__` of bf16 / f8 (it has no type string for them). A
        consumer normally makes these requests itself (`np.from_dlpack(t, copy=False)`).

        Example (GPU backend):

            np.from_dlpack(t, copy=False)
            # [CT5045] the tensor is in a CUDA GPU (device 0); exporting it to the CPU needs
            #   a copy, and `copy=False` forbids one

        Fix: allow the copy (`np.from_dlpack(t)`, or `t.to_numpy()`); export bf16 and f8
        through DLPack (`torch.from_dlpack(t)`).
    """,
    "CT5046": """
        `cutile.unsafe.from_dlpack_exclusive(x)` of memory its producer marked read-only
        (DLPack 1.x's read-only flag, a numpy array with `writeable=False`, a read-only
        `__cuda_array_interface__`), or of a copy the producer made for the export (DLPack's
        is-copied flag): a kernel writing it would break the producer's rule, or write into
        a copy the program never sees.

        Example:

            a = np.zeros(8, np.float32); a.flags.writeable = False
            cutile.unsafe.from_dlpack_exclusive(a)
            # [CT5046] cannot import a `ndarray` exclusively: its producer marked it read-only

        Fix: import it shared to read it (`cutile.from_dlpack(a)`), and give kernels a
        writable tensor for their output.
    """,
    "CT5047": """
        An import would give cutile a second, unrelated view of bytes it already shares
        with another library: an exclusive import of memory that a live import (shared or
        exclusive) or a live export also views, or a shared import of memory a live
        exclusive import views. cutile's overlap rules see storages; two imports of one
        tensor would be two storages over the same bytes, so a kernel could write one while
        reading the other. (This is checked for what cutile can see: imports and exports
        still alive.)

        Example:

            z = cutile.unsafe.from_dlpack_exclusive(out).partition([128])
            add(z, out, y)
            # [CT5047] `x` of `add`: bytes ... of this shared import are also viewed by an
            #   exclusive import (`cutile.unsafe.from_dlpack_exclusive`) that is still alive

        Fix: import a tensor once, and pass that cutile tensor (or views of it) wherever a
        kernel uses the memory; drop the earlier import first to import it another way.
    """,
    "CT6112": """
        Another library's tensor was passed for a parameter the kernel writes (a `Mut`
        output, an `Atomic` tensor, a `Ptr`). Kernel calls import foreign tensors
        implicitly only for read-only `Tensor` parameters: reading is safe without any
        promise, writing is not (another library, stream or view may use the memory at
        the same time), so it takes the explicit, visible unsafe import.

        Example:

            add(torch_z, torch_x, torch_y)
            # [CT6112] `z` of `add` is a `Mut` output, which the kernel writes; a `Tensor`
            #   is imported implicitly only for read-only parameters

        Fix: `z = cutile.unsafe.from_dlpack_exclusive(torch_z).partition([128])`, then
        `add(z, torch_x, torch_y).sync()`: the results land in `torch_z`.
    """,
}
