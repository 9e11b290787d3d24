"""`cutile.unsafe.raw_kernel`: a CUDA C++ kernel compiled by NVRTC, launched as an op.

cutile cannot read C++, so nothing about what such a kernel does is checked: it is an
opt-out, named under `cutile.unsafe`. What cutile does check is everything on the host:
each parameter is declared (`read`, `write`, `atomic` tensor or a `scalar` of a C type);
the declarations are checked against the C++ signature in the cubin (count and size of
every parameter); a call's arguments against the declarations; and the op holds the
tensors as the declarations say, under the same ownership rules, ledger and stream as a
tile kernel's op. That a kernel declared to `read` a tensor never writes it, or that an
`atomic` one is only updated atomically, is the caller's promise.

    axpy = cutile.unsafe.raw_kernel(SOURCE, "axpy", params=[
        unsafe.scalar("a", "float"), unsafe.read("x", f32), unsafe.write("y", f32),
        unsafe.scalar("n", "int")], block=256)
    a, x, y, n = axpy(2.0, x, y, n, grid=(n + 255) // 256).sync()

`options` are NVRTC's (`-std=c++17`, `--use_fast_math`, `-I...`); the target comes from
the device (or `compile(arch=...)`). With `link=[...]` (CUDA C++ text, or LTO-IR bytes)
or `lto=True`, the program is compiled to LTO-IR and linked by nvJitLink.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import log
from .backend.raw_build import Program, RawBinary
from .errors import CompileError, LaunchError
from .runtime import driver, raw_args
from .runtime.raw_args import Layout, RawParam, declaration_error
from .runtime.raw_op import SHARED_DEFAULT_LIMIT, RawOp, interpreter_error, launch_dims
from .runtime.unrun_ops import call_site

# Options that would change what `compile` builds for: the target comes from the device
# (or `compile(arch=...)`), LTO from `lto` / `link`.
_OWN_OPTIONS = ("-arch", "--gpu-architecture", "-dlto", "--dlto", "-rdc",
                "--relocatable-device-code", "--gpu-name", "-gencode")


@dataclass(frozen=True)
class LoadedRaw:
    """A raw kernel loaded into one device's context."""

    module: Any
    function: Any
    layout: Layout
    state: Any  # the driver state it was loaded under
    shared_opt_in: list[int]  # dynamic shared memory the function opted in to (one cell)


class RawKernel:
    """A CUDA C++ kernel, compiled by NVRTC on first use and launched as a `DeviceOp`
    (see the module docstring). Make one with `cutile.unsafe.raw_kernel`."""

    def __init__(self, source: str, name: str, params: Sequence[RawParam], *,
                 options: Sequence[str] = (), link: Sequence[str | bytes] | None = None,
                 lto: bool = False, block: Any = None) -> None:
        if not isinstance(name, str) or not name.strip():
            raise declaration_error(f"a raw kernel's name is the C++ name of its `__global__` "
                                    f"function, not {name!r}", "e.g. `\"axpy\"`")
        self.name = name.strip()
        if not isinstance(source, str) or not source.strip():
            raise declaration_error(f"the source of raw kernel `{self.name}` is CUDA C++ text, "
                                    f"not {type(source).__name__}",
                                    "pass the program as a str", self.name)
        self.params = raw_args.check_params(self.name, params)
        self.options = _check_options(self.name, options)
        linked = _check_link(self.name, link, lto)
        self.program = Program(source, self.name, self.options, linked)
        self.block = block
        if block is not None:
            launch_dims(self.name, 1, block, 0)  # a bad default is an error here, not later
        self.__name__ = self.name
        self._site = call_site()  # where the program made it: compile errors name the line
        self._lock = threading.Lock()
        self._built: dict[str, tuple[RawBinary, Layout]] = {}
        self._loads: dict[int, LoadedRaw] = {}  # by device ordinal

    def __repr__(self) -> str:
        params = ", ".join(p.describe() for p in self.params)
        return f"<cutile.unsafe.raw_kernel {self.name}({params})>"

    # -- compiling ---------------------------------------------------------------------

    def compile(self, arch: str = "sm_90") -> RawBinary:
        """The cubin for `arch` (no GPU needed: NVRTC compiles on the host), from the cache
        when it was built before; its parameter table is checked against the declarations
        (CT6123). CompileError (CT7010-CT7013) when NVRTC or nvJitLink cannot."""
        return self._binary(arch)[0]

    def _binary(self, arch: str) -> tuple[RawBinary, Layout]:
        got = self._built.get(arch)
        if got is None:
            from .backend.cubin_abi import kernel_params
            from .backend.raw_build import build

            try:
                binary = build(self.program, arch)
            except CompileError as err:
                if err.location is None and self._site is not None:
                    err.location = f"{self._site[0]}:{self._site[1]}"  # the Python line
                raise
            slots = kernel_params(binary.cubin, binary.symbol)
            if slots is None:
                log.get("launch").debug("no parameter table for %s in its cubin; packing "
                                        "parameters at their C alignment", self.name)
                layout = raw_args.natural_layout(self.params)
            else:
                layout = raw_args.abi_layout(self.name, self.params, slots)
            got = (binary, layout)
            self._built[arch] = got
        return got

    def _loaded(self, shared_mem: int, device: int = 0) -> LoadedRaw:
        """The kernel loaded into `device`'s context (compiled for its arch first on a
        miss; a CUfunction belongs to one context), opted in to `shared_mem` bytes of
        dynamic shared memory."""
        state = driver.state()
        with self._lock:
            loaded = self._loads.get(device)
            if loaded is None or loaded.state is not state:
                binary, layout = self._binary(driver.arch(device))
                d = driver._driver()
                with driver.on_device(device):
                    module = driver.check(d.cuModuleLoadData(binary.cubin),
                                          "cuModuleLoadData")
                    fn = driver.check(d.cuModuleGetFunction(module, binary.symbol.encode()),
                                      "cuModuleGetFunction")
                loaded = self._loads[device] = LoadedRaw(module, fn, layout, state, [0])
            if shared_mem > max(loaded.shared_opt_in[0], SHARED_DEFAULT_LIMIT):
                d = driver._driver()
                attr = d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                driver.check(d.cuFuncSetAttribute(loaded.function, attr, shared_mem),
                             f"cuFuncSetAttribute({self.name}, {shared_mem} bytes of shared "
                             "memory)")
                loaded.shared_opt_in[0] = shared_mem
        return loaded

    # -- launching ---------------------------------------------------------------------

    def __call__(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: Any = 0,
                 **kwargs: Any) -> RawOp:
        """A lazy op launching the kernel on `grid` blocks of `block` threads (each an int
        or 1-3 ints) with `shared_mem` bytes of dynamic shared memory; `.sync()` runs it and
        returns the arguments in parameter order."""
        site = call_site()
        values = raw_args.bind(self.name, self.params, args, kwargs)
        if grid is None:
            raise LaunchError(f"raw kernel `{self.name}` needs `grid=` (blocks per axis)",
                              code="CT6121", hint="e.g. `grid=(n + 255) // 256`",
                              kernel=self.name)
        dims = launch_dims(self.name, grid, self.block if block is None else block,
                           shared_mem)
        op = RawOp(self, values, dims, site)  # moves the tensors in: ownership errors here
        if driver.backend() != "gpu":
            op._give_back()
            raise interpreter_error(self.name)
        return op


def _check_options(kernel: str, options: Any) -> tuple[str, ...]:
    if isinstance(options, (str, bytes)) or not isinstance(options, Sequence) or not all(
            isinstance(o, str) for o in options):
        raise declaration_error(f"`options` of raw kernel `{kernel}` is a list of NVRTC "
                                f"options (str), not {options!r:.60}",
                                "e.g. `options=[\"-std=c++17\", \"--use_fast_math\"]`", kernel)
    for o in options:
        flag = o.split("=", 1)[0]
        if flag in _OWN_OPTIONS:
            raise declaration_error(
                f"raw kernel `{kernel}` cannot take the NVRTC option `{o}`: cutile picks the "
                "target (the device's, or `compile(arch=...)`) and the LTO mode",
                "drop it; use `lto=True` or `link=[...]` for LTO-IR", kernel)
    return tuple(options)


def _check_link(kernel: str, link: Any, lto: Any) -> tuple[str | bytes, ...] | None:
    if not isinstance(lto, bool):
        raise declaration_error(f"`lto` of raw kernel `{kernel}` is True or False, not "
                                f"{lto!r}", "`lto=True` links through nvJitLink", kernel)
    if link is None:
        return () if lto else None
    if isinstance(link, (str, bytes)) or not isinstance(link, Sequence):
        raise declaration_error(f"`link` of raw kernel `{kernel}` is a list, not "
                                f"{type(link).__name__}", "e.g. `link=[HELPERS_CU]`", kernel)
    out: list[str | bytes] = []
    for i, item in enumerate(link):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, (bytes, bytearray, memoryview)):
            out.append(bytes(item))
        else:
            raise declaration_error(
                f"link[{i}] of raw kernel `{kernel}` is {type(item).__name__}, not CUDA C++ "
                "text (str) or LTO-IR (bytes)",
                "pass the source of the device functions the kernel calls, or LTO-IR built "
                "with `-dlto`", kernel)
    return tuple(out)


def raw_kernel(source: str, name: str, params: Sequence[RawParam], *,
               options: Sequence[str] = (), link: Sequence[str | bytes] | None = None,
               lto: bool = False, block: Any = None) -> RawKernel:
    """A CUDA C++ kernel: `source` is the program, `name` its `__global__` function as C++
    names it (`axpy`, `ns::axpy`, `scale<float>`), `params` one declaration per C++
    parameter in order (`cutile.unsafe.read` / `write` / `atomic` / `scalar`), `options`
    NVRTC's, `link` device code it calls (CUDA C++ text or LTO-IR, linked by nvJitLink;
    `lto=True` links the program alone), `block` the default block size. Unsafe: what the
    C++ does is the caller's promise (see `cutile.raw_kernel`)."""
    return RawKernel(source, name, params, options=options, link=link, lto=lto, block=block)
