"""The CUDA driver, through `cuda.bindings.driver`: detection, context, the home stream
(the stream pool's first, `streams.py`), errors.

Without libcuda (no GPU), `cuInit` raises `DynamicLibNotFoundError`: that, or
`CUTILE_BACKEND=interpreter`, selects the CPU interpreter. Everything else in the runtime
asks `backend()` which one is in use.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any

from .. import environment
from ..errors import ConfigError, DeviceError

# Every spelling CUTILE_BACKEND accepts, and what it selects.
BACKENDS = {"gpu": "gpu", "interpreter": "interpreter", "cpu": "interpreter"}

_lock = threading.Lock()
_state: _DriverState | None = None
_announced = False


@dataclass
class _DriverState:
    backend: str  # "gpu" | "interpreter"
    reason: str
    device: int = 0
    context: Any = None
    stream: Any = None
    name: str = ""
    cc: tuple[int, int] = (0, 0)
    driver_version: int = 0
    sm_count: int = 0


def _driver() -> Any:
    from cuda.bindings import driver

    return driver


def check(result: Any, what: str) -> Any:
    """Unwrap a cuda.bindings result tuple; raise DeviceError on failure."""
    err = result[0] if isinstance(result, tuple) else result
    d = _driver()
    if err != d.CUresult.CUDA_SUCCESS:
        name = d.cuGetErrorName(err)[1]
        text = d.cuGetErrorString(err)[1]
        name_s = name.decode() if isinstance(name, bytes) else str(name)
        text_s = text.decode() if isinstance(text, bytes) else str(text)
        raise DeviceError(f"{what} failed: {name_s} ({text_s})", code="CT6901")
    if isinstance(result, tuple):
        if len(result) == 1:
            return None
        if len(result) == 2:
            return result[1]
        return result[1:]
    return None


def raise_cuda_error(code: int, what: str) -> None:
    """Raise the DeviceError for a CUresult returned to native code."""
    try:
        result = _driver().CUresult(code)
    except ValueError:
        result = None
    if result is not None:
        check((result,), what)
    raise DeviceError(f"{what} failed with CUresult {code}", code="CT6901")


def proc_address(symbol: str) -> int:
    """The address of a driver entry point (`cuGetProcAddress`), for native callers."""
    d = _driver()
    version = state().driver_version or 12000
    flags = d.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_DEFAULT
    err, pfn, found = d.cuGetProcAddress(symbol.encode(), version, flags)
    check((err,), f"cuGetProcAddress({symbol})")
    if not pfn or found != d.CUdriverProcAddressQueryResult.CU_GET_PROC_ADDRESS_SUCCESS:
        raise DeviceError(f"the CUDA driver has no `{symbol}` ({found})", code="CT6901")
    return int(pfn)


def forced_backend() -> str | None:
    """The backend CUTILE_BACKEND asks for (None: pick by what is there); an unknown value
    is a ConfigError (CT8001), never a silent fallback."""
    return environment.choice("CUTILE_BACKEND", BACKENDS, "CT8001")


def _device_ordinal() -> int:
    raw = (environment.get("CUTILE_DEVICE") or "0").strip() or "0"
    if not raw.isdigit():
        raise ConfigError(f"CUTILE_DEVICE={raw!r} is not a GPU ordinal", code="CT8002",
                          hint="set CUTILE_DEVICE to 0, 1, ... (the GPU's index), or unset it")
    return int(raw)


def _result_name(result: Any) -> str:
    """`CUDA_ERROR_NO_DEVICE` rather than the enum's repr."""
    return str(getattr(result, "name", result))


def _init() -> _DriverState:
    forced = forced_backend()
    if forced == "interpreter":
        return _DriverState("interpreter", "CUTILE_BACKEND=interpreter")
    try:
        d = _driver()
        res = d.cuInit(0)
    except Exception as exc:  # DynamicLibNotFoundError when there is no libcuda
        if forced == "gpu":
            raise DeviceError(f"CUTILE_BACKEND=gpu but the CUDA driver is unusable: {exc}",
                              code="CT6902") from None
        return _DriverState("interpreter", f"no CUDA driver: {type(exc).__name__}")
    if res[0] != d.CUresult.CUDA_SUCCESS:
        if forced == "gpu":
            check(res, "cuInit")
        return _DriverState("interpreter", f"cuInit failed ({_result_name(res[0])})")
    count = check(d.cuDeviceGetCount(), "cuDeviceGetCount")
    if not count:
        return _DriverState("interpreter", "no CUDA device")
    ordinal = _device_ordinal()
    dev = check(d.cuDeviceGet(ordinal), "cuDeviceGet")
    ctx = check(d.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    name = check(d.cuDeviceGetName(256, dev), "cuDeviceGetName")
    attr = d.CUdevice_attribute
    major = check(d.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
                  "cuDeviceGetAttribute")
    minor = check(d.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
                  "cuDeviceGetAttribute")
    sms = check(d.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                "cuDeviceGetAttribute")
    version = check(d.cuDriverGetVersion(), "cuDriverGetVersion")
    stream = check(d.cuStreamCreate(d.CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate")
    raw = name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)
    return _DriverState("gpu", "CUDA driver found", ordinal, ctx, stream, raw, (major, minor),
                        int(version), int(sms))


def state() -> _DriverState:
    global _state
    if _state is None:
        with _lock:
            if _state is None:
                _state = _init()
    return _state


def backend() -> str:
    """"gpu" or "interpreter"; the first call that picks the interpreter says so once."""
    global _announced
    s = state()
    if s.backend == "interpreter" and not _announced:
        _announced = True
        if not environment.quiet():
            print(f"cutile: {s.reason}; running kernels on the CPU interpreter",
                  file=sys.stderr)
    return s.backend


def ensure_current() -> None:
    """Make the primary context current on this thread (contexts are per thread)."""
    s = state()
    if s.backend == "gpu":
        check(_driver().cuCtxSetCurrent(s.context), "cuCtxSetCurrent")


def arch() -> str:
    s = state()
    if s.backend != "gpu":
        return "sm_90"
    return f"sm_{s.cc[0]}{s.cc[1]}"


def reset_for_tests(backend_name: str | None = None) -> None:
    """Forget the detected backend (tests switch CUTILE_BACKEND)."""
    global _state, _announced
    from .. import _native
    from . import streams

    with _lock:
        _state = None if backend_name is None else _DriverState(backend_name, "test")
        _announced = backend_name is not None
    streams.reset()  # the runtime holds the old backend's streams and driver
    _native.invalidate_launchers()  # launchers hold the old backend's runtime
