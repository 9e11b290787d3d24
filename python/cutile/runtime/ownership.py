"""The process-wide host registry (Rust, `cutile._native.HostRegistry`): storages, handles,
moves into pending operations. One instance per process."""

from __future__ import annotations

import threading
from typing import Any

_registry: Any = None
_ledger: Any = None
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
    (exclusive), released when the op completes (host rule 4)."""
    global _ledger
    if _ledger is None:
        with _lock:
            if _ledger is None:
                from .. import _native

                _ledger = _native.Ledger()
    return _ledger


def next_op_id() -> int:
    """A fresh operation id, also the op's ledger token (one counter, in Rust, shared with
    the native launcher)."""
    from .. import _native

    return _native.next_op_id()
