"""Per-op encoders, one small function per op, grouped by family. Importing this package
registers them all with `opwriter.ENCODERS`."""

from . import arith, control, convert, core, math, memory, shape

__all__ = ["arith", "control", "convert", "core", "math", "memory", "shape"]
