//! The serialized kernel AST of cutile: schema `cutile.kast`, version 1.
//!
//! `docs/kernel-ast.md` is the one place the schema is written down; this crate is its Rust
//! reader. [`parse`] turns JSON text into a [`Document`] and then validates it (spans inside
//! their files and on UTF-8 boundaries, the entry present, device calls resolved, names
//! unique). Malformed input is an [`KastError`] value, never a panic.
//!
//! Testing: `cargo test -p cutile-kast`.

mod model;
mod validate;

pub use model::*;

use std::fmt;

/// The value of the document's `schema` field.
pub const SCHEMA: &str = "cutile.kast";
/// The schema version this reader understands.
pub const VERSION: u32 = 1;

/// Why a kernel AST document was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KastError {
    pub message: String,
}

impl KastError {
    pub fn new(message: impl Into<String>) -> Self {
        KastError {
            message: message.into(),
        }
    }
}

impl fmt::Display for KastError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid kernel AST: {}", self.message)
    }
}

impl std::error::Error for KastError {}

#[derive(serde::Deserialize)]
struct Header {
    schema: Option<serde_json::Value>,
    version: Option<serde_json::Value>,
}

/// Parse and validate a kernel AST document.
pub fn parse(json: &str) -> Result<Document, KastError> {
    let header: Header = serde_json::from_str(json)
        .map_err(|e| KastError::new(format!("not a JSON object: {e}")))?;
    match header.schema.as_ref().and_then(|v| v.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(KastError::new(format!(
                "schema is `{other}`, expected `{SCHEMA}`"
            )))
        }
        None => return Err(KastError::new(format!("missing `schema` (`{SCHEMA}`)"))),
    }
    match header.version.as_ref().and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(v) => {
            return Err(KastError::new(format!(
                "schema version {v} is not supported (this reader knows version {VERSION})"
            )))
        }
        None => return Err(KastError::new("missing or non-integer `version`")),
    }
    let doc: Document = serde_json::from_str(json).map_err(|e| KastError::new(e.to_string()))?;
    validate::validate(&doc)?;
    Ok(doc)
}

#[cfg(test)]
mod tests;
