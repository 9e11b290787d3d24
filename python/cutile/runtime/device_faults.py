"""The report of a kernel fault on the GPU. (The grid, persistent launches and the launch
predicates are decided in Rust, `cutile-host`, from the checker's facts.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import DeviceError
from . import driver

# Kernel faults: an illegal address, a failed device assert (a bounds check the checker left
# to the device), a trap. The context is unusable afterwards (a sticky CUDA error).
KERNEL_FAULTS = {700, 710, 714, 715, 716, 717, 718, 719}


def device_error_reporter(kernel_ref: Any) -> Callable[[int, str], None]:
    def report(code: int, what: str) -> None:
        try:
            driver.raise_cuda_error(code, what)
        except DeviceError as err:
            kernel = kernel_ref()
            if code not in KERNEL_FAULTS or kernel is None:
                raise
            checks = [f"{o.span.file}:{o.span.line}" for o in kernel.check_report()
                      if o.discharged == "device"]
            where = (f"; its device-side checks are at {', '.join(checks)} (a failed one prints "
                     "its message above)") if checks else ""
            raise DeviceError(
                f"`{kernel.name}` failed on the GPU: {err.message}{where}",
                code="CT6903",
                hint="the CUDA context cannot be used after a kernel fault; fix the input or "
                "the index arithmetic and restart the process",
            ) from None

    return report
