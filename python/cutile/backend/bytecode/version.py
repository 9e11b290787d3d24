"""Bytecode versions this writer emits, and how to pick one for an assembler.

13.3 is the default: it is the lowest version whose tileiras accepts sm_90, and every newer
tileiras reads it. 13.4 and 13.5 change the wire format in a few places (pointer and
tensor_view type flags, `inbounds` arrays on view loads/stores, the 13.5 entry header and
DISubprogram flags); the writer follows them when asked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import total_ordering


@total_ordering
@dataclass(frozen=True)
class BytecodeVersion:
    major: int
    minor: int
    tag: int = 0  # u16 in the header; bit 0 marks a preview build

    @staticmethod
    def parse(text: str | BytecodeVersion) -> BytecodeVersion:
        if isinstance(text, BytecodeVersion):
            return text
        parts = text.strip().split(".")
        if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
            raise ValueError(f"bad bytecode version `{text}` (expected e.g. `13.3`)")
        nums = [int(p) for p in parts]
        return BytecodeVersion(nums[0], nums[1], nums[2] if len(nums) == 3 else 0)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, BytecodeVersion):
            return NotImplemented
        return (self.major, self.minor, self.tag) < (other.major, other.minor, other.tag)

    def at_least(self, text: str) -> bool:
        return self >= BytecodeVersion.parse(text)

    def __str__(self) -> str:
        base = f"{self.major}.{self.minor}"
        return base if self.tag == 0 else f"{base}.{self.tag}"


V13_3 = BytecodeVersion(13, 3)
V13_4 = BytecodeVersion(13, 4)
V13_5 = BytecodeVersion(13, 5)

SUPPORTED_VERSIONS: tuple[BytecodeVersion, ...] = (V13_3, V13_4, V13_5)
DEFAULT_VERSION = V13_3


def check_supported(version: str | BytecodeVersion) -> BytecodeVersion:
    v = BytecodeVersion.parse(version)
    if v not in SUPPORTED_VERSIONS:
        known = ", ".join(str(s) for s in SUPPORTED_VERSIONS)
        raise ValueError(f"bytecode version {v} is not supported by this writer ({known})")
    return v


def newest_common(tool_versions: Iterable[str]) -> BytecodeVersion:
    """The newest version both an assembler (its `--list-versions` lines) and this writer
    know. Raises ValueError when there is none (a tileiras older than 13.3)."""
    offered: set[BytecodeVersion] = set()
    for line in tool_versions:
        try:
            offered.add(BytecodeVersion.parse(line))
        except ValueError:
            continue  # banners or blank lines around the list
    common = [v for v in SUPPORTED_VERSIONS if v in offered]
    if not common:
        listed = ", ".join(sorted(str(v) for v in offered)) or "none"
        raise ValueError(f"the assembler reads bytecode versions {listed}; cutile needs 13.3+")
    return max(common)


# The first bytes of every bytecode file (the writer emits them; the cache reads them
# without loading the writer).
MAGIC = b"\x7fTileIR\x00"
