"""Diagnostics as plain data: what a `KernelCheckError` reports, in values that pickle,
compare and turn into JSON (`to_dict()`), whichever layer made them (the Rust checker, the
frontend, the lowering). The attribute names are those of `cutile._native.Diagnostic` and
`Label`, so code reading one reads the other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LabelData:
    """A labelled source span: `line` 1-based, `col` the 0-based byte column (as in
    `_native.Label`), `lo`/`hi` UTF-8 byte offsets in `file`."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int
    lo: int
    hi: int
    message: str = ""

    @property
    def column(self) -> int:
        """1-based column, as `file:line:column` prints it."""
        return self.col + 1

    @property
    def end_column(self) -> int:
        return self.end_col + 1

    def to_dict(self, primary: bool) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column,
                "end_line": self.end_line, "end_column": self.end_column, "lo": self.lo,
                "hi": self.hi, "message": self.message, "primary": primary}

    @classmethod
    def of(cls, label: Any) -> LabelData:
        """From anything with a `Label`'s attributes (a native `Label`)."""
        if isinstance(label, LabelData):
            return label
        return cls(str(label.file), int(label.line), int(label.col), int(label.end_line),
                   int(label.end_col), int(label.lo), int(label.hi), str(label.message))


@dataclass(frozen=True)
class DiagnosticData:
    """One violation: `code`, `severity` ("error" | "warning"), `message`, the `primary`
    label (where: `file`, `line`, `column` read it) and `secondary` ones, `notes`, and the
    `help` line."""

    code: str
    severity: str
    message: str
    primary: LabelData
    secondary: tuple[LabelData, ...] = ()
    notes: tuple[str, ...] = ()
    help: str | None = None

    @property
    def file(self) -> str:
        return self.primary.file

    @property
    def line(self) -> int:
        return self.primary.line

    @property
    def column(self) -> int:
        return self.primary.column

    @property
    def labels(self) -> tuple[LabelData, ...]:
        """Every label, the primary one first."""
        return (self.primary, *self.secondary)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: code, severity, message, file, line, column, labels (each with its
        span and whether it is the primary one), notes, help."""
        return {"code": self.code, "severity": self.severity, "message": self.message,
                "file": self.file, "line": self.line, "column": self.column,
                "labels": [lb.to_dict(i == 0) for i, lb in enumerate(self.labels)],
                "notes": list(self.notes), "help": self.help}

    @classmethod
    def of(cls, d: Any) -> DiagnosticData:
        """From anything with a `Diagnostic`'s attributes (a native `Diagnostic`)."""
        if isinstance(d, DiagnosticData):
            return d
        return cls(str(d.code), str(d.severity), str(d.message), LabelData.of(d.primary),
                   tuple(LabelData.of(s) for s in d.secondary), tuple(d.notes), d.help)


__all__ = ["DiagnosticData", "LabelData"]
