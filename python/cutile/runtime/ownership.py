"""The process-wide host registry (Rust, `cutile._native.HostRegistry`): storages, handles,
moves into pending operations. One instance per process. The in-flight ledger lives in the
runtime (`streams.runtime()`), with the streams it orders."""

from __future__ import annotations

import threading
from typing import Any

_registry: Any = None
_lock = threading.Lock()


def registry() -> Any:
    global _registry
    if _registry is None:
        with _lock:
            if _registry is None:
                from .. import _native

                _registry = _native.HostRegistry()
    return _registry


def ledger() -> Any:
    """The in-flight ledger: byte ranges each pending op reads (shared) or writes
    (exclusive), with its stream position, dropped when the work completes (host rule 4).
    It is the runtime's (`acquire`, `release`, `conflicts`, `host_access`, `len()`)."""
    from .streams import runtime

    return runtime()


def next_op_id() -> int:
    """A fresh operation id, also the op's ledger token (one counter, in Rust, shared with
    the native launcher)."""
    from .. import _native

    return _native.next_op_id()
