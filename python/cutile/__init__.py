"""cutile: safe, data-race-free GPU tile kernels written in Python.

    import cutile
    from cutile import api
    from cutile.core import Tensor, Mut, Const, f32, load_tile_like

    @cutile.entry
    def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]],
            B: Const[int]):
        z.store(load_tile_like(x, z) + load_tile_like(y, z))

A kernel's source is checked by a Rust checker (no data races, no aliasing), lowered to CUDA
Tile IR, assembled by tileiras and launched; without a GPU it runs on a CPU interpreter.
"""

from . import api, core, distributed, log
from ._version import __version__ as __version__
from .errors import (
    AnnotationError,
    AutotuneError,
    BorrowError,
    CacheWarning,
    CompileError,
    ConfigError,
    CutileError,
    CutileWarning,
    DeviceError,
    DistributedError,
    InternalCompilerError,
    InteropError,
    KernelCheckError,
    LaunchError,
    OpNeverRunWarning,
    RaceError,
    TensorError,
    TensorIndexError,
)
from .hints import ByTarget
from .interpreter.race_mode import check_races
from .kernel import DeviceFunction, EntryKernel, KernelOp, device, entry, unsafe
from .runtime.device_op import DeviceOp, Submitted
from .runtime.device_op import zip_ops as zip
from .runtime.devices import count as device_count
from .runtime.devices import current as current_device
from .runtime.devices import set_default as set_device
from .runtime.graph import Graph, Replay, graph
from .runtime.streams import Stream, stream, synchronize
from .tuning import Autotuned, Config, autotune

from_dlpack = api.from_dlpack

log.configure()

__all__ = [
    "AnnotationError",
    "AutotuneError",
    "Autotuned",
    "BorrowError",
    "ByTarget",
    "CacheWarning",
    "CompileError",
    "Config",
    "ConfigError",
    "CutileError",
    "CutileWarning",
    "DeviceError",
    "DeviceFunction",
    "DeviceOp",
    "DistributedError",
    "EntryKernel",
    "Graph",
    "InternalCompilerError",
    "InteropError",
    "KernelCheckError",
    "KernelOp",
    "LaunchError",
    "OpNeverRunWarning",
    "RaceError",
    "Replay",
    "Stream",
    "Submitted",
    "TensorError",
    "TensorIndexError",
    "api",
    "autotune",
    "check_races",
    "core",
    "current_device",
    "device",
    "device_count",
    "distributed",
    "entry",
    "from_dlpack",
    "graph",
    "set_device",
    "stream",
    "synchronize",
    "unsafe",
    "zip",
]
