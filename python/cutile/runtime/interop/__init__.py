"""Interop with other array libraries (numpy, torch, cupy, jax): DLPack and the CUDA and
numpy array interfaces, zero-copy and stream-ordered, under cutile's ownership rules.

- `importing`: `cutile.from_dlpack` (a shared, read-only tensor) and
  `cutile.unsafe.from_dlpack_exclusive` (a writable one, on the caller's promise).
- `exporting`: `Tensor.__dlpack__` and `Tensor.__cuda_array_interface__`.
- `kernel_args`: kernel calls that take another library's tensors as inputs.
- `sources` reads the protocols, `memory` wraps the memory they point at, `aliases`
  refuses imports that overlap another live import or export, `streams` orders cutile's
  runtime stream against another library's, `codes` maps DLPack's type and device codes.

The user's guide is docs/interop.md.
"""
