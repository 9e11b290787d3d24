"""Autotuning: `cutile.autotune` runs a kernel with the fastest of several `cutile.Config`s,
chosen once per kernel, device and shape class and cached on disk (`tuner`, `store`,
`bench`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, overload

from ..kernel import EntryKernel
from .config import Config
from .tuner import Autotuned, Choice, KeySpec, TunedOp


@overload
def autotune(kernel: EntryKernel, /, *, configs: Sequence[Config], key: KeySpec = None,
             compile_timeout: float | None = None) -> Autotuned: ...
@overload
def autotune(*, configs: Sequence[Config], key: KeySpec = None,
             compile_timeout: float | None = None) -> Callable[[EntryKernel], Autotuned]: ...


def autotune(kernel: EntryKernel | None = None, /, *, configs: Sequence[Config],
             key: KeySpec = None, compile_timeout: float | None = None) -> Any:
    """Tune `kernel` over `configs`: `cutile.autotune(kernel, configs=[...], key=[...])`,
    or `@cutile.autotune(configs=[...], key=[...])` stacked above `@cutile.entry`.

    `key` names the parameters whose dtypes and extents (rounded up to powers of two) make
    a shape class: each class is tuned once per device, and the choice is cached on disk
    (default: every tensor parameter). It may also be a function of the arguments by name
    returning JSON-able values. An output whose tile size a config sets is passed whole (an
    unpartitioned `Tensor`) and comes back whole; the config's Consts cut it.

    `compile_timeout` (seconds) stops tileiras on a candidate that takes longer to
    assemble, and skips it (CT7005) instead of waiting up to `CUTILE_TILEIRAS_TIMEOUT`
    (300 s): some tile shapes keep tileiras busy for minutes. None: the usual limit."""
    if kernel is not None:
        return Autotuned(kernel, configs, key, compile_timeout)

    def wrap(k: EntryKernel) -> Autotuned:
        return Autotuned(k, configs, key, compile_timeout)

    return wrap


__all__ = ["Autotuned", "Choice", "Config", "TunedOp", "autotune"]
