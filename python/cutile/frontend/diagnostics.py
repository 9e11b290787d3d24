"""Diagnostics made on the Python side (frontend, lowering), rendered by the same Rust
renderer as the checker's so that every error looks alike."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..diagnostic_data import DiagnosticData, LabelData
from ..errors import KernelCheckError
from .kast import SourceFile, Span


@dataclass
class SpanLabel:
    span: Span
    message: str = ""


@dataclass
class Diagnostic:
    """Same attribute names as `cutile._native.Diagnostic`, so users handle both alike."""

    code: str
    message: str
    primary: SpanLabel
    secondary: list[SpanLabel] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    help: str | None = None
    severity: str = "error"


class FrontendError(Exception):
    """Raised inside the frontend/lowering with a diagnostic; converted to KernelCheckError
    (with every source file attached) where the kernel is compiled."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def fail(
    code: str,
    message: str,
    span: Span,
    label: str = "",
    *,
    help: str | None = None,
    notes: list[str] | None = None,
    secondary: list[SpanLabel] | None = None,
) -> FrontendError:
    return FrontendError(
        Diagnostic(code, message, SpanLabel(span, label), secondary or [], notes or [], help)
    )


def _label_json(label: SpanLabel) -> dict[str, object]:
    s = label.span
    return {
        "span": {
            "file": s.file, "lo": s.lo, "hi": s.hi, "line": s.line, "col": s.col,
            "end_line": s.end_line, "end_col": s.end_col,
        },
        "message": label.message,
    }


def render(files: list[SourceFile], diagnostics: list[Diagnostic], color: bool = False) -> str:
    from .. import _native

    doc = {
        "files": [{"path": f.path, "source": f.source} for f in files],
        "diagnostics": [
            {
                "code": d.code,
                "severity": d.severity,
                "message": d.message,
                "primary": _label_json(d.primary),
                "secondary": [_label_json(s) for s in d.secondary],
                "notes": d.notes,
                "help": d.help,
            }
            for d in diagnostics
        ],
    }
    return _native.render_diagnostics(json.dumps(doc), color)


def _label_data(files: list[SourceFile], label: SpanLabel) -> LabelData:
    s = label.span
    path = files[s.file].path if 0 <= s.file < len(files) else "<kernel>"
    return LabelData(path, s.line, s.col, s.end_line, s.end_col, s.lo, s.hi, label.message)


def as_data(files: list[SourceFile], d: Diagnostic) -> DiagnosticData:
    """`d` as plain data, its spans naming files by path."""
    return DiagnosticData(d.code, d.severity, d.message, _label_data(files, d.primary),
                          tuple(_label_data(files, s) for s in d.secondary), tuple(d.notes),
                          d.help)


def to_check_error(files: list[SourceFile], err: FrontendError) -> KernelCheckError:
    rendered = render(files, [err.diagnostic])
    return KernelCheckError(rendered, [as_data(files, err.diagnostic)])
