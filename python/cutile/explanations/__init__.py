"""The long explanation of every Python-side error code (`python -m cutile explain CODE`):
what went wrong, an example that raises it, and the fix. One module per range of codes;
the Rust checker's codes are explained by their generated pages in `docs/errors/`."""

from __future__ import annotations

from . import (
    config,
    devices,
    frontend,
    graphs,
    host,
    indexed,
    interop,
    launch,
    operations,
    raw_kernels,
    tile_pieces,
    toolchain,
    values,
)

EXPLANATIONS: dict[str, str] = {
    **frontend.TEXTS,
    **values.TEXTS,
    **operations.TEXTS,
    **indexed.TEXTS,
    **tile_pieces.TEXTS,
    **host.TEXTS,
    **graphs.TEXTS,
    **devices.TEXTS,
    **interop.TEXTS,
    **launch.TEXTS,
    **raw_kernels.TEXTS,
    **toolchain.TEXTS,
    **config.TEXTS,
}


def long_text(code: str) -> str | None:
    """The explanation of `code` (dedented, without surrounding blank lines), or None."""
    import textwrap

    text = EXPLANATIONS.get(code)
    return None if text is None else textwrap.dedent(text).strip("\n")
