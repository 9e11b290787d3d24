//! Diagnostics of cutile: the data model, the code registry, and a rustc-style renderer.
//!
//! A [`Diagnostic`] has a stable code (`CT1002`), a one-line message (lowercase, no final
//! period, identifiers in backticks), a primary [`Label`] that makes sense on its own,
//! secondary labels ("value moved here"), notes, and at most one `help` (the only place
//! that suggests a fix). Spans are UTF-8 byte offsets (`cutile_kast::Span`).
//!
//! Testing: `cargo test -p cutile-diag`.

mod codes;
mod render;

pub use codes::{lookup, CodeInfo, CodeKind, CODES};
pub use render::{render, render_one};

use cutile_kast::Span;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// A span with the text shown under it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Label {
    pub span: Span,
    #[serde(default)]
    pub message: String,
}

impl Label {
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        Label {
            span,
            message: message.into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Diagnostic {
    pub code: String,
    pub severity: Severity,
    pub message: String,
    pub primary: Label,
    #[serde(default)]
    pub secondary: Vec<Label>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error with code `code` whose primary label is `primary`.
    pub fn error(code: &str, message: impl Into<String>, primary: Label) -> Self {
        Diagnostic {
            code: code.to_string(),
            severity: Severity::Error,
            message: message.into(),
            primary,
            secondary: Vec::new(),
            notes: Vec::new(),
            help: None,
        }
    }

    pub fn warning(code: &str, message: impl Into<String>, primary: Label) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message, primary)
        }
    }

    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Self {
        self.secondary.push(Label::new(span, message));
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// The input of `render_diagnostics`: diagnostics made on the Python side.
#[derive(Debug, Clone, Deserialize)]
pub struct DiagnosticsDocument {
    pub files: Vec<cutile_kast::SourceFile>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Parse a `{"files": [...], "diagnostics": [...]}` document (see `_native.pyi`).
pub fn parse_diagnostics(json: &str) -> Result<DiagnosticsDocument, String> {
    serde_json::from_str(json).map_err(|e| format!("invalid diagnostics document: {e}"))
}

#[cfg(test)]
mod tests;
