//! The serialized kernel AST of cutile: schema `cutile.kast`, version 3.
//!
//! `docs/kernel-ast.md` is the one place the schema is written down; this crate is its Rust
//! reader. [`parse`] turns JSON text into a [`Document`] and then validates it (spans inside
//! their files and on UTF-8 boundaries, the entry present, device calls resolved, names
//! unique). Malformed input is an [`KastError`] value, never a panic.
//!
//! Testing: `cargo test -p cutile-kast`.

mod model;
pub mod ops;
mod stream;
mod validate;

pub use model::*;

use std::fmt;

/// The value of the document's `schema` field.
pub const SCHEMA: &str = "cutile.kast";
/// The schema version this reader understands.
pub const VERSION: u32 = 3;

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

/// Only the two header fields; everything else is skipped without building values.
#[derive(serde::Deserialize)]
struct Header {
    schema: Option<serde_json::Value>,
    version: Option<serde_json::Value>,
}

/// Parse and validate a kernel AST document.
pub fn parse(json: &str) -> Result<Document, KastError> {
    // One full pass; the header is looked at on its own only to explain a failure (a
    // document of another schema or version need not parse as this one).
    match serde_json::from_str::<Document>(json) {
        Ok(doc) => {
            check_header(
                Some(&serde_json::Value::from(doc.schema.as_str())),
                Some(&serde_json::Value::from(doc.version)),
            )?;
            validate::validate(&doc)?;
            Ok(doc)
        }
        Err(e) => {
            let header: Header = serde_json::from_str(json)
                .map_err(|e| KastError::new(format!("not a JSON object: {e}")))?;
            check_header(header.schema.as_ref(), header.version.as_ref())?;
            Err(KastError::new(e.to_string()))
        }
    }
}

fn check_header(
    schema: Option<&serde_json::Value>,
    version: Option<&serde_json::Value>,
) -> Result<(), KastError> {
    match schema.and_then(|v| v.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(KastError::new(format!(
                "schema is `{other}`, expected `{SCHEMA}`"
            )))
        }
        None => return Err(KastError::new(format!("missing `schema` (`{SCHEMA}`)"))),
    }
    match version.and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(VERSION) => Ok(()),
        Some(v) => Err(KastError::new(format!(
            "schema version {v} is not supported (this reader knows version {VERSION})"
        ))),
        None => Err(KastError::new("missing or non-integer `version`")),
    }
}

#[cfg(test)]
mod tests;
