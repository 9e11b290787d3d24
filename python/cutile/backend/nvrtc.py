"""CUDA C++ to device code with NVRTC, and LTO-IR to a cubin with nvJitLink, through
`cuda.bindings.nvrtc` / `cuda.bindings.nvjitlink` (the libraries come from the
`nvidia-cuda-nvrtc` and `nvidia-nvjitlink` wheels; both compile without a GPU).

A program names its kernel by a *name expression* (`axpy`, `ns::k`, `scale<float>`):
NVRTC resolves it, refuses anything that is not a `__global__` function, and says what the
kernel's symbol in the cubin is (the mangled name of a C++ kernel). Every failure is a
`CompileError` that carries NVRTC's (or nvJitLink's) log.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import CompileError

INSTALL_HINT = ("install NVRTC and nvJitLink of the CUDA major of cuda-bindings: "
                "`python -m pip install 'cutile[tileiras]'` (or `nvidia-cuda-nvrtc` and "
                "`nvidia-nvjitlink`)")

# `file(line): error: ...`, NVRTC's error lines
_ERROR_AT = re.compile(r"^(\S+?)\(\d+\): (?:catastrophic )?error", re.MULTILINE)


@dataclass(frozen=True)
class DeviceCode:
    """What NVRTC made of one program: a cubin, or LTO-IR to link; `symbol` is the
    kernel's name in it (None for a program compiled for linking only); `log` NVRTC's
    warnings (empty when there were none)."""

    data: bytes
    symbol: str | None
    log: str


def _nvrtc() -> Any:
    from cuda.bindings import nvrtc

    return nvrtc


def _nvjitlink() -> Any:
    from cuda.bindings import nvjitlink

    return nvjitlink


def nvrtc_version() -> str:
    """`13.5`; CompileError CT7010 when libnvrtc cannot be loaded."""
    try:
        err, major, minor = _nvrtc().nvrtcVersion()
    except Exception as exc:  # DynamicLibNotFoundError (no libnvrtc), ImportError
        raise CompileError(f"NVRTC cannot be loaded: {_first_line(exc)}", code="CT7010",
                           hint=INSTALL_HINT) from None
    _check(err, "nvrtcVersion")
    return f"{major}.{minor}"


def nvjitlink_version() -> str:
    """`13.5`; CompileError CT7010 when libnvJitLink cannot be loaded."""
    try:
        major, minor = _nvjitlink().version()
    except Exception as exc:
        raise CompileError(f"nvJitLink cannot be loaded: {_first_line(exc)}", code="CT7010",
                           hint=INSTALL_HINT) from None
    return f"{major}.{minor}"


def supported_archs() -> list[str]:
    """The `sm_XY` targets this NVRTC compiles for."""
    nvrtc_version()
    err, archs = _nvrtc().nvrtcGetSupportedArchs()
    _check(err, "nvrtcGetSupportedArchs")
    return [f"sm_{a}" for a in archs]


def compile_program(source: str, name: str | None, options: Sequence[str], arch: str, *,
                    lto: bool, filename: str = "raw_kernel.cu") -> DeviceCode:
    """Compile `source` for `arch`: to a cubin, or with `lto` to LTO-IR. `name` is the
    kernel's name expression (None: a program of device functions to link only)."""
    nvrtc = _nvrtc()
    nvrtc_version()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), filename.encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        if name is not None:
            _check(nvrtc.nvrtcAddNameExpression(prog, name.encode())[0],
                   "nvrtcAddNameExpression")
        opts = [f"--gpu-architecture={arch}".encode()]
        if lto:
            opts += [b"-dlto", b"--relocatable-device-code=true"]
        opts += [o.encode() for o in options]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        log = _program_log(prog)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise _compile_error(result, log, name, arch, filename)
        symbol = None
        if name is not None:
            err, lowered = nvrtc.nvrtcGetLoweredName(prog, name.encode())
            _check(err, "nvrtcGetLoweredName")
            symbol = lowered.decode() if isinstance(lowered, bytes) else str(lowered)
        data = _output(prog, lto)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return DeviceCode(data, symbol, log)


def link(inputs: Sequence[tuple[str, bytes]], arch: str, options: Sequence[str] = ()) -> bytes:
    """Link LTO-IR modules (`(name, data)`, named in nvJitLink's log) into one cubin for
    `arch` (link-time optimized); CompileError CT7013 with nvJitLink's log when it fails
    (an undefined or twice-defined symbol, a module for another target)."""
    nvjitlink = _nvjitlink()
    nvjitlink_version()
    opts = [f"-arch={arch}", "-lto", *options]
    handle = nvjitlink.create(len(opts), opts)
    try:
        try:
            for label, data in inputs:
                nvjitlink.add_data(handle, nvjitlink.InputType.LTOIR, data, len(data), label)
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            log = _link_log(nvjitlink, handle)
            raise CompileError(
                f"nvJitLink could not link {', '.join(n for n, _ in inputs)} for {arch}: "
                f"{exc}", code="CT7013",
                hint="every function a kernel calls must be defined in exactly one of the "
                "linked programs, each compiled for the same target",
                log=log) from None
        size = nvjitlink.get_linked_cubin_size(handle)
        out = bytearray(size)
        nvjitlink.get_linked_cubin(handle, out)
    finally:
        nvjitlink.destroy(handle)
    return bytes(out)


# -- details -------------------------------------------------------------------------------


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _check(err: Any, what: str) -> None:
    nvrtc = _nvrtc()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        from ..errors import InternalCompilerError

        raise InternalCompilerError(f"{what} failed: {_result_name(err)}")


def _result_name(err: Any) -> str:
    return str(getattr(err, "name", err))


def _program_log(prog: Any) -> str:
    nvrtc = _nvrtc()
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    _check(err, "nvrtcGetProgramLogSize")
    buf = b" " * size
    _check(nvrtc.nvrtcGetProgramLog(prog, buf)[0], "nvrtcGetProgramLog")
    return str(buf.rstrip(b"\0").decode(errors="replace").strip())


def _output(prog: Any, lto: bool) -> bytes:
    nvrtc = _nvrtc()
    size_fn, get_fn = ((nvrtc.nvrtcGetLTOIRSize, nvrtc.nvrtcGetLTOIR) if lto
                       else (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN))
    err, size = size_fn(prog)
    _check(err, size_fn.__name__)
    buf = b" " * size  # NVRTC writes into it
    _check(get_fn(prog, buf)[0], get_fn.__name__)
    return bytes(buf)


def _compile_error(result: Any, log: str, name: str | None, arch: str, filename: str
                   ) -> CompileError:
    files = {m.group(1) for m in _ERROR_AT.finditer(log)}
    if files == {"__nv_name_map"}:
        # Only the name expression failed (not a `__global__` function of the program):
        # NVRTC reports it against a generated file of its own, not the program's text.
        return CompileError(
            f"there is no kernel `{name}` in {filename}: NVRTC finds no `__global__` "
            "function of that name", code="CT7012",
            hint="name a `__global__` function as C++ spells it (`axpy`, `ns::axpy`, "
            "`scale<float>` for a template instance); a `__device__` function is not a "
            "kernel", log=log)
    nvrtc = _nvrtc()
    if result == nvrtc.nvrtcResult.NVRTC_ERROR_INVALID_OPTION:
        return CompileError(f"NVRTC rejected the options for {arch}", code="CT7011",
                            hint="check `options` (NVRTC's, e.g. `-std=c++17`) and the "
                            "target", log=log)
    return CompileError(f"NVRTC could not compile {filename} for {arch} "
                        f"({_result_name(result)})", code="CT7011",
                        hint="fix the CUDA C++ at the line NVRTC's log names", log=log)


def _link_log(nvjitlink: Any, handle: Any) -> str:
    try:
        size = nvjitlink.get_error_log_size(handle)
        buf = bytearray(size)
        nvjitlink.get_error_log(handle, buf)
        return bytes(buf).rstrip(b"\0").decode(errors="replace").strip()
    except Exception:  # no log: the message says what failed
        return ""
