//! The signatures of the kernel language's operations (`ops.json`, embedded).
//!
//! The frontend binds every DSL call against this table and writes the arguments in
//! parameter order, with defaults filled in (`docs/kernel-ast.md`), so a call node carries
//! one argument per parameter and no keywords. The checker reads arguments through
//! [`Signature::arg`], by parameter name, so it cannot disagree with the frontend about
//! which argument is which.

use crate::model::{ConstValue, Expr};
use serde::Deserialize;
use std::sync::OnceLock;

/// The table's text, as the frontend reads it (`cutile._native.op_table_json()`).
pub const OPS_JSON: &str = include_str!("../ops.json");

#[derive(Debug, Clone, Deserialize)]
pub struct ParamSig {
    pub name: String,
    /// A literal, `null`, or `{"dtype": name}`; absent for a required parameter.
    #[serde(default, deserialize_with = "present")]
    pub default: Option<serde_json::Value>,
    #[serde(default)]
    pub variadic: bool,
    /// A `@cutile.device` function of this many parameters, which the op calls with its
    /// own values (`reduce`'s combiner); 0 for a value.
    #[serde(default)]
    pub function: u32,
}

/// `"default": null` is a default of None, not a missing default.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(d).map(Some)
}

#[derive(Debug, Clone, Deserialize)]
pub struct Signature {
    pub name: String,
    pub params: Vec<ParamSig>,
    /// Method receivers: `mut`, `sub`, `tensor`, `tile`.
    #[serde(default)]
    pub receivers: Vec<String>,
    #[serde(default, rename = "unsafe")]
    pub is_unsafe: bool,
    /// An atomic read-modify-write: safe on an `Atomic` parameter, `unsafe` on any other
    /// tensor (the checker decides, CT4002).
    #[serde(default)]
    pub atomic: bool,
    #[serde(default = "yes")]
    pub lowered: bool,
    #[serde(default)]
    pub positional_only: bool,
}

fn yes() -> bool {
    true
}

impl Signature {
    /// The integer literal bound to parameter `name`, if it is one.
    pub fn int_arg(&self, args: &[Expr], name: &str) -> Option<i64> {
        match self.arg(args, name)? {
            Expr::Const {
                value: ConstValue::Int(v),
                ..
            } => Some(*v),
            _ => None,
        }
    }

    /// Position of parameter `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }

    /// The argument bound to parameter `name` in a resolved call, `None` when the
    /// parameter is absent (its slot holds the literal `None`) or unknown.
    pub fn arg<'e>(&self, args: &'e [Expr], name: &str) -> Option<&'e Expr> {
        let e = args.get(self.position(name)?)?;
        match e {
            Expr::Const {
                value: ConstValue::None,
                ..
            } => None,
            e => Some(e),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct OpTable {
    pub functions: Vec<Signature>,
    pub methods: Vec<Signature>,
    pub builtins: Vec<Signature>,
}

impl OpTable {
    pub fn function(&self, name: &str) -> Option<&Signature> {
        self.functions.iter().find(|s| s.name == name)
    }
    pub fn method(&self, name: &str) -> Option<&Signature> {
        self.methods.iter().find(|s| s.name == name)
    }
    pub fn builtin(&self, name: &str) -> Option<&Signature> {
        self.builtins.iter().find(|s| s.name == name)
    }
}

/// The parsed table. `ops.json` is part of the source (a test parses it), so failing to
/// parse it is a build defect, not a user error.
pub fn table() -> &'static OpTable {
    static TABLE: OnceLock<OpTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str(OPS_JSON).unwrap_or(OpTable {
            functions: Vec::new(),
            methods: Vec::new(),
            builtins: Vec::new(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_parses_and_names_are_unique() {
        let t: OpTable = serde_json::from_str(OPS_JSON).expect("ops.json parses");
        for list in [&t.functions, &t.methods, &t.builtins] {
            let mut names: Vec<&str> = list.iter().map(|s| s.name.as_str()).collect();
            let n = names.len();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), n, "duplicate op names");
            for s in list {
                let mut seen_default = false;
                for p in &s.params {
                    if p.variadic {
                        continue;
                    }
                    // Required parameters never follow defaulted ones.
                    assert!(
                        p.default.is_some() || !seen_default,
                        "{}: `{}` is required after a defaulted parameter",
                        s.name,
                        p.name
                    );
                    seen_default |= p.default.is_some();
                }
            }
        }
        assert!(!table().functions.is_empty());
        assert_eq!(
            table().function("load_tile_like").unwrap().position("like"),
            Some(1)
        );
    }
}
