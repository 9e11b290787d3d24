"""The CUDA driver, through `cuda.bindings.driver`: detection, devices and their primary
contexts, errors.

Without libcuda (no GPU), `cuInit` raises `DynamicLibNotFoundError`: that, or
`CUTILE_BACKEND=interpreter`, selects the CPU interpreter. Everything else in the runtime
asks `backend()` which one is in use.

Devices: every visible GPU is usable (`device_count()`); what a device is (name, compute
capability, multiprocessors) is read without touching it, and its primary context is
retained the first time work goes there (`context(i)`), so a process that uses one GPU of
eight creates one context. The device work goes to when nothing else says is the thread's
(`cutile.device(i)`), else the process default (`CUTILE_DEVICE`, `cutile.set_device`);
both live in the native runtime (`_native.thread_device()`), which the launch path reads.
The interpreter models `CUTILE_INTERPRETER_DEVICES` devices (1 unless set): host memory
tagged with an ordinal, so that device bookkeeping runs without a GPU.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .. import environment
from ..errors import ConfigError, DeviceError

# Every spelling CUTILE_BACKEND accepts, and what it selects.
BACKENDS = {"gpu": "gpu", "interpreter": "interpreter", "cpu": "interpreter"}
# Devices the interpreter may model (CUTILE_INTERPRETER_DEVICES).
MAX_INTERPRETER_DEVICES = 16

_lock = threading.Lock()
_state: _DriverState | None = None
_announced = False


@dataclass(frozen=True)
class DeviceInfo:
    """What a device is: read from its attributes, without creating a context."""

    ordinal: int
    name: str = "interpreter"
    cc: tuple[int, int] = (0, 0)
    sm_count: int = 0


@dataclass
class _DriverState:
    """The backend and its devices. `device`, `context`, `stream`, `name`, `cc` and
    `sm_count` describe the current device (the thread's, else the default)."""

    backend: str  # "gpu" | "interpreter"
    reason: str
    count: int = 1  # devices visible (modeled on the interpreter)
    default: int = 0  # CUTILE_DEVICE, or `cutile.set_device`
    driver_version: int = 0
    infos: dict[int, DeviceInfo] = field(default_factory=dict)
    contexts: dict[int, Any] = field(default_factory=dict)

    @property
    def device(self) -> int:
        from .. import _native

        return int(_native.thread_device())

    @property
    def context(self) -> Any:
        return context(self.device) if self.backend == "gpu" else None

    @property
    def stream(self) -> Any:
        """The current device's home stream (its pool's first; None on the interpreter)."""
        if self.backend != "gpu":
            return None
        from . import streams

        return _driver().CUstream(streams.home_stream(self.device))

    @property
    def name(self) -> str:
        return device_info(self.device).name

    @property
    def cc(self) -> tuple[int, int]:
        return device_info(self.device).cc

    @property
    def sm_count(self) -> int:
        return device_info(self.device).sm_count


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


def _ordinal(name: str, raw: str | None, count: int, what: str) -> int:
    """A device ordinal from an environment variable: 0 when unset, ConfigError CT8002
    for anything but an ordinal of a visible device."""
    text = (raw or "0").strip() or "0"
    if not text.isdigit() or int(text) >= count:
        raise ConfigError(f"{name}={text!r} is not the ordinal of one of the {count} {what}",
                          code="CT8002",
                          hint=f"set {name} to an ordinal from 0 to {count - 1}, or unset it")
    return int(text)


def _interpreter_devices() -> int:
    """How many devices the interpreter models: CUTILE_INTERPRETER_DEVICES, 1 unless set
    (ConfigError CT8009 for anything but 1 to 16)."""
    raw = (environment.get("CUTILE_INTERPRETER_DEVICES") or "").strip()
    if not raw:
        return 1
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_INTERPRETER_DEVICES:
        raise ConfigError(f"CUTILE_INTERPRETER_DEVICES={raw!r} is not a device count from 1 "
                          f"to {MAX_INTERPRETER_DEVICES}", code="CT8009",
                          hint="e.g. CUTILE_INTERPRETER_DEVICES=2 models two devices")
    return int(raw)


def _interpreter(reason: str) -> _DriverState:
    count = _interpreter_devices()
    default = _ordinal("CUTILE_DEVICE", environment.get("CUTILE_DEVICE"), count,
                       "devices the interpreter models (CUTILE_INTERPRETER_DEVICES)")
    return _DriverState("interpreter", reason, count, default)


def _result_name(result: Any) -> str:
    """`CUDA_ERROR_NO_DEVICE` rather than the enum's repr."""
    return str(getattr(result, "name", result))


def _init() -> _DriverState:
    forced = forced_backend()
    if forced == "interpreter":
        return _interpreter("CUTILE_BACKEND=interpreter")
    try:
        d = _driver()
        res = d.cuInit(0)
    except Exception as exc:  # DynamicLibNotFoundError when there is no libcuda
        if forced == "gpu":
            raise DeviceError(f"CUTILE_BACKEND=gpu but the CUDA driver is unusable: {exc}",
                              code="CT6902") from None
        return _interpreter(f"no CUDA driver: {type(exc).__name__}")
    if res[0] != d.CUresult.CUDA_SUCCESS:
        if forced == "gpu":
            check(res, "cuInit")
        return _interpreter(f"cuInit failed ({_result_name(res[0])})")
    count = int(check(d.cuDeviceGetCount(), "cuDeviceGetCount"))
    if not count:
        return _interpreter("no CUDA device")
    default = _ordinal("CUTILE_DEVICE", environment.get("CUTILE_DEVICE"), count,
                       "visible GPUs")
    version = check(d.cuDriverGetVersion(), "cuDriverGetVersion")
    return _DriverState("gpu", "CUDA driver found", count, default, int(version))


def _read_info(ordinal: int) -> DeviceInfo:
    d = _driver()
    dev = check(d.cuDeviceGet(ordinal), "cuDeviceGet")
    name = check(d.cuDeviceGetName(256, dev), "cuDeviceGetName")
    attr = d.CUdevice_attribute

    def get(a: Any) -> int:
        return int(check(d.cuDeviceGetAttribute(a, dev), "cuDeviceGetAttribute"))

    raw = name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)
    return DeviceInfo(ordinal, raw, (get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                     get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
                      get(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT))


def device_count() -> int:
    """Devices this process can use (GPUs visible to it; modeled ones on the interpreter)."""
    return state().count


def device_info(ordinal: int) -> DeviceInfo:
    """What device `ordinal` is (no context is created). The caller checked the ordinal."""
    s = state()
    got = s.infos.get(ordinal)
    if got is None:
        got = _read_info(ordinal) if s.backend == "gpu" else DeviceInfo(ordinal)
        s.infos[ordinal] = got
    return got


def context(ordinal: int) -> Any:
    """The primary context of GPU `ordinal`, retained on first use (kept for the process:
    the runtime's streams, memory pools and loaded kernels live in it)."""
    s = state()
    got = s.contexts.get(ordinal)
    if got is None:
        with _lock:
            got = s.contexts.get(ordinal)
            if got is None:
                d = _driver()
                dev = check(d.cuDeviceGet(ordinal), "cuDeviceGet")
                got = check(d.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
                s.contexts[ordinal] = got
    return got


def state() -> _DriverState:
    global _state
    if _state is None:
        with _lock:
            if _state is None:
                from .. import _native

                got = _init()
                _native.set_default_device(got.default)
                _state = got
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


def ensure_current(device: int | None = None) -> None:
    """Make the primary context of `device` (default: the current device) current on this
    thread (contexts are per thread)."""
    s = state()
    if s.backend == "gpu":
        check(_driver().cuCtxSetCurrent(context(s.device if device is None else device)),
              "cuCtxSetCurrent")


@contextmanager
def on_device(device: int) -> Iterator[None]:
    """`device`'s primary context current on this thread for the block, and the context
    that was current before it again afterwards: the thread's context is the program's
    (torch reads its current device from it)."""
    if state().backend != "gpu":
        yield
        return
    d = _driver()
    previous = check(d.cuCtxGetCurrent(), "cuCtxGetCurrent")
    ctx = context(device)
    if int(previous or 0) == int(ctx):
        yield
        return
    check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    try:
        yield
    finally:
        d.cuCtxSetCurrent(previous)


def arch(device: int | None = None) -> str:
    """The `sm_XY` of `device` (default: the current device; sm_90 on the interpreter)."""
    s = state()
    if s.backend != "gpu":
        return "sm_90"
    cc = device_info(s.device if device is None else device).cc
    return f"sm_{cc[0]}{cc[1]}"


def reset_for_tests(backend_name: str | None = None) -> None:
    """Forget the detected backend (tests switch CUTILE_BACKEND)."""
    global _state, _announced
    from .. import _native
    from . import streams

    with _lock:
        if backend_name is None:
            _state = None
        elif backend_name == "interpreter":
            _state = _interpreter("test")
        else:
            _state = _DriverState(backend_name, "test")
        _announced = backend_name is not None
        _native.set_default_device(_state.default if _state is not None else 0)
    streams.reset()  # the runtime holds the old backend's streams and driver
    _native.invalidate_launchers()  # launchers hold the old backend's runtime
