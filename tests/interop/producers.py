"""Stand-in producers for what numpy cannot show on a machine without a GPU: a DLPack
producer that says its tensor is on a CUDA device, one that only speaks the protocol
before DLPack 1.0, one whose `__dlpack__` returns a given capsule, and an object that
speaks only `__cuda_array_interface__`. Each carries real memory (a numpy array) and
real capsules: only the claims they make differ."""

from __future__ import annotations

from typing import Any

import numpy as np


class OnDevice:
    """Says its (host) tensor is on `device`: the device check must refuse it before any
    capsule is made (`made` stays 0)."""

    def __init__(self, arr: np.ndarray, device: tuple[int, int]) -> None:
        self.arr, self.device, self.made = arr, device, 0

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, **kwargs: Any) -> Any:
        self.made += 1
        return self.arr.__dlpack__(max_version=(1, 0))


class Legacy:
    """A producer from before DLPack 1.0: `__dlpack__(stream=None)` only, a `dltensor`
    capsule (no flags: read-only cannot be said)."""

    def __init__(self, arr: np.ndarray) -> None:
        self.arr = arr
        self.calls: list[dict[str, Any]] = []

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)

    def __dlpack__(self, stream: Any = None) -> Any:
        self.calls.append({"stream": stream})
        return self.arr.__dlpack__()


class Capsule:
    """Hands out a capsule made elsewhere (e.g. by a cutile tensor's `__dlpack__`)."""

    def __init__(self, capsule: Any, device: tuple[int, int] = (1, 0)) -> None:
        self.capsule, self.device = capsule, device

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule


class CudaArray:
    """Speaks only `__cuda_array_interface__` (as numba's device arrays do)."""

    def __init__(self, arr: np.ndarray) -> None:
        self.arr = arr

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self.arr.shape, "typestr": self.arr.dtype.str,
                "data": (self.arr.ctypes.data, False), "version": 3, "strides": None,
                "stream": None}


class HostArray:
    """Speaks only numpy's `__array_interface__` (no `__dlpack__`)."""

    def __init__(self, arr: np.ndarray) -> None:
        self.arr = arr

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return self.arr.__array_interface__
