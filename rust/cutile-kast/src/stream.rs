//! Streaming deserialization of targets, statements and expressions.
//!
//! serde's derived internally tagged enums (`"kind": ...`) buffer every node and then
//! re-buffer each child; even going through `serde_json::Value` costs a map per node.
//! These visitors read each node's fields straight from the parser into typed slots (the
//! `kind` may come in any position) and build the node at the end: one pass, no buffers.

use crate::model::*;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use std::fmt;

#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Key {
    Kind,
    Span,
    Id,
    Nid,
    Name,
    Value,
    Type,
    Elts,
    Op,
    Left,
    Right,
    Operand,
    Values,
    Test,
    Body,
    Orelse,
    Func,
    Args,
    Receiver,
    Method,
    Attr,
    Index,
    Archs,
    Targets,
    Target,
    Iter,
    Msg,
    #[serde(other)]
    Other,
}

/// `value` is a literal in `const` nodes and an expression elsewhere.
enum ValueField {
    Lit(ConstValue),
    Node(Expr),
    Null,
}

struct ValueFieldVisitor;

impl<'de> Visitor<'de> for ValueFieldVisitor {
    type Value = ValueField;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a literal, an expression or null")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ValueField, E> {
        Ok(ValueField::Lit(ConstValue::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ValueField, E> {
        Ok(ValueField::Lit(ConstValue::Int(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ValueField, E> {
        i64::try_from(v)
            .map(|v| ValueField::Lit(ConstValue::Int(v)))
            .map_err(|_| E::custom(format!("integer constant {v} does not fit in 64 bits")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ValueField, E> {
        Ok(ValueField::Lit(ConstValue::Float(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<ValueField, E> {
        Ok(ValueField::Lit(ConstValue::Str(v.to_string())))
    }
    fn visit_unit<E: de::Error>(self) -> Result<ValueField, E> {
        Ok(ValueField::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<ValueField, E> {
        Ok(ValueField::Null)
    }
    fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<ValueField, A::Error> {
        ExprVisitor.visit_map(m).map(ValueField::Node)
    }
}

impl<'de> Deserialize<'de> for ValueField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueFieldVisitor)
    }
}

fn need<T, E: de::Error>(v: Option<T>, field: &'static str) -> Result<T, E> {
    v.ok_or_else(|| E::missing_field(field))
}

fn op<T: for<'a> Deserialize<'a>, E: de::Error>(s: Option<String>) -> Result<T, E> {
    let s = need::<String, E>(s, "op")?;
    T::deserialize(de::value::StrDeserializer::<E>::new(&s))
}

/// A `const` node's value, read by its `type` (JSON has no infinities: a non-finite float
/// is written as the string `"inf"`, `"-inf"` or `"nan"`).
fn const_value<E: de::Error>(value: Option<ValueField>, ty: Option<&str>) -> Result<ConstValue, E> {
    let bad = |what: &str| E::custom(format!("const: {what}"));
    match (ty, value) {
        (Some("none"), Some(ValueField::Null) | None) => Ok(ConstValue::None),
        (Some("str"), Some(ValueField::Lit(ConstValue::Str(s)))) => Ok(ConstValue::Str(s)),
        (Some("float"), Some(ValueField::Lit(ConstValue::Str(s)))) => match s.as_str() {
            "inf" => Ok(ConstValue::Float(f64::INFINITY)),
            "-inf" => Ok(ConstValue::Float(f64::NEG_INFINITY)),
            "nan" => Ok(ConstValue::Float(f64::NAN)),
            _ => Err(bad("a float is a number, \"inf\", \"-inf\" or \"nan\"")),
        },
        (Some("float"), Some(ValueField::Lit(ConstValue::Int(v)))) => {
            Ok(ConstValue::Float(v as f64))
        }
        (Some("float") | None, Some(ValueField::Lit(v @ ConstValue::Float(_)))) => Ok(v),
        (Some("int") | None, Some(ValueField::Lit(v @ ConstValue::Int(_)))) => Ok(v),
        (Some("bool") | None, Some(ValueField::Lit(v @ ConstValue::Bool(_)))) => Ok(v),
        (Some(t), _) => Err(bad(&format!("`value` does not fit `type` {t:?}"))),
        (None, _) => Err(bad(
            "`value` must be an int, float or bool (or give `type`)",
        )),
    }
}

fn expr_of<E: de::Error>(v: Option<ValueField>) -> Result<Expr, E> {
    match v {
        Some(ValueField::Node(e)) => Ok(e),
        Some(_) => Err(E::custom("`value` must be an expression here")),
        None => Err(E::missing_field("value")),
    }
}

struct ExprVisitor;

impl<'de> Visitor<'de> for ExprVisitor {
    type Value = Expr;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an expression object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Expr, A::Error> {
        let mut kind: Option<String> = None;
        let mut span: Option<Span> = None;
        let mut id: Option<String> = None;
        let mut name: Option<String> = None;
        let mut value: Option<ValueField> = None;
        let mut ty: Option<String> = None;
        let (mut elts, mut op_s, mut left, mut right, mut operand, mut values) =
            (None, None, None, None, None, None);
        let (mut test, mut body, mut orelse, mut func, mut args) = (None, None, None, None, None);
        let mut nid: Option<u32> = None;
        let (mut receiver, mut method, mut attr, mut index) = (None, None, None, None);
        let mut archs: Option<Vec<String>> = None;
        while let Some(k) = m.next_key::<Key>()? {
            match k {
                Key::Kind => kind = Some(m.next_value()?),
                Key::Span => span = Some(m.next_value()?),
                Key::Nid => nid = Some(m.next_value()?),
                Key::Id => id = Some(m.next_value()?),
                Key::Name => name = Some(m.next_value()?),
                Key::Value => value = Some(m.next_value()?),
                Key::Type => ty = m.next_value()?,
                Key::Elts => elts = Some(m.next_value::<Vec<Expr>>()?),
                Key::Op => op_s = Some(m.next_value()?),
                Key::Left => left = Some(Box::new(m.next_value::<Expr>()?)),
                Key::Right => right = Some(Box::new(m.next_value::<Expr>()?)),
                Key::Operand => operand = Some(Box::new(m.next_value::<Expr>()?)),
                Key::Values => values = Some(m.next_value::<Vec<Expr>>()?),
                Key::Test => test = Some(Box::new(m.next_value::<Expr>()?)),
                Key::Body => body = Some(Box::new(m.next_value::<Expr>()?)),
                Key::Orelse => orelse = Some(Box::new(m.next_value::<Expr>()?)),
                Key::Func => func = Some(m.next_value::<String>()?),
                Key::Args => args = m.next_value::<Option<Vec<Expr>>>()?,
                Key::Receiver => receiver = Some(Box::new(m.next_value::<Expr>()?)),
                Key::Method => method = Some(m.next_value::<String>()?),
                Key::Attr => attr = Some(m.next_value::<String>()?),
                Key::Index => index = Some(Box::new(m.next_value::<Expr>()?)),
                Key::Archs => archs = Some(m.next_value::<Vec<String>>()?),
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        let kind = need::<String, A::Error>(kind, "kind")?;
        let span = need::<Span, A::Error>(span, "span")?;
        let nid = need::<u32, A::Error>(nid, "nid")?;
        Ok(match kind.as_str() {
            "name" => Expr::Name {
                id: need(id, "id")?,
                span,
                nid,
            },
            "const" => Expr::Const {
                value: const_value(value, ty.as_deref())?,
                ty,
                span,
                nid,
            },
            "dtype" => Expr::Dtype {
                name: need(name, "name")?,
                span,
                nid,
            },
            "tuple" => Expr::Tuple {
                elts: elts.unwrap_or_default(),
                span,
                nid,
            },
            "binop" => Expr::Binop {
                op: op(op_s)?,
                left: need(left, "left")?,
                right: need(right, "right")?,
                span,
                nid,
            },
            "unary" => Expr::Unary {
                op: op(op_s)?,
                operand: need(operand, "operand")?,
                span,
                nid,
            },
            "compare" => Expr::Compare {
                op: op(op_s)?,
                left: need(left, "left")?,
                right: need(right, "right")?,
                span,
                nid,
            },
            "boolop" => Expr::Boolop {
                op: op(op_s)?,
                values: values.unwrap_or_default(),
                span,
                nid,
            },
            "ifexp" => Expr::Ifexp {
                test: need(test, "test")?,
                body: need(body, "body")?,
                orelse: need(orelse, "orelse")?,
                span,
                nid,
            },
            "call" => Expr::Call {
                func: need(func, "func")?,
                args: args.unwrap_or_default(),
                span,
                nid,
            },
            "call_device" => Expr::CallDevice {
                func: need(func, "func")?,
                args: args.unwrap_or_default(),
                span,
                nid,
            },
            "method" => Expr::Method {
                receiver: need(receiver, "receiver")?,
                method: need(method, "method")?,
                args: args.unwrap_or_default(),
                span,
                nid,
            },
            "attribute" => Expr::Attribute {
                value: Box::new(expr_of(value)?),
                attr: need(attr, "attr")?,
                span,
                nid,
            },
            "subscript" => Expr::Subscript {
                value: Box::new(expr_of(value)?),
                index: need(index, "index")?,
                span,
                nid,
            },
            "by_target" => {
                let archs = need::<Vec<String>, A::Error>(archs, "archs")?;
                let values = values.unwrap_or_default();
                if archs.len() != values.len() {
                    return Err(de::Error::custom("`by_target` needs one value per arch"));
                }
                Expr::ByTarget {
                    archs,
                    values,
                    span,
                    nid,
                }
            }
            k => return Err(de::Error::custom(format!("unknown expression kind `{k}`"))),
        })
    }
}

impl<'de> Deserialize<'de> for Expr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ExprVisitor)
    }
}

struct StmtVisitor;

impl<'de> Visitor<'de> for StmtVisitor {
    type Value = Stmt;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a statement object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Stmt, A::Error> {
        let mut kind: Option<String> = None;
        let mut span: Option<Span> = None;
        let mut nid: Option<u32> = None;
        let mut targets: Option<Vec<Target>> = None;
        let mut target: Option<Target> = None;
        let mut value: Option<Option<Expr>> = None;
        let (mut op_s, mut test, mut body, mut orelse, mut iter, mut msg) =
            (None, None, None, None, None, None);
        while let Some(k) = m.next_key::<Key>()? {
            match k {
                Key::Kind => kind = Some(m.next_value::<String>()?),
                Key::Span => span = Some(m.next_value()?),
                Key::Nid => nid = Some(m.next_value()?),
                Key::Targets => targets = Some(m.next_value()?),
                Key::Target => target = Some(m.next_value()?),
                Key::Value => value = Some(m.next_value::<Option<Expr>>()?),
                Key::Op => op_s = Some(m.next_value::<String>()?),
                Key::Test => test = Some(m.next_value::<Expr>()?),
                Key::Body => body = Some(m.next_value::<Vec<Stmt>>()?),
                Key::Orelse => orelse = m.next_value::<Option<Vec<Stmt>>>()?,
                Key::Iter => iter = Some(m.next_value::<Expr>()?),
                Key::Msg => msg = m.next_value::<Option<String>>()?,
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        let kind = need::<String, A::Error>(kind, "kind")?;
        let span = need::<Span, A::Error>(span, "span")?;
        let nid = need::<u32, A::Error>(nid, "nid")?;
        let value_expr = |v: Option<Option<Expr>>| -> Result<Expr, A::Error> {
            match v {
                Some(Some(e)) => Ok(e),
                _ => Err(de::Error::missing_field("value")),
            }
        };
        Ok(match kind.as_str() {
            "assign" => Stmt::Assign {
                targets: need(targets, "targets")?,
                value: value_expr(value)?,
                span,
                nid,
            },
            "augassign" => Stmt::AugAssign {
                target: need(target, "target")?,
                op: op(op_s)?,
                value: value_expr(value)?,
                span,
                nid,
            },
            "expr" => Stmt::Expr {
                value: value_expr(value)?,
                span,
                nid,
            },
            "if" => Stmt::If {
                test: need(test, "test")?,
                body: need(body, "body")?,
                orelse: orelse.unwrap_or_default(),
                span,
                nid,
            },
            "for" => Stmt::For {
                target: need(target, "target")?,
                iter: need(iter, "iter")?,
                body: need(body, "body")?,
                span,
                nid,
            },
            "while" => Stmt::While {
                test: need(test, "test")?,
                body: need(body, "body")?,
                span,
                nid,
            },
            "break" => Stmt::Break { span, nid },
            "continue" => Stmt::Continue { span, nid },
            "pass" => Stmt::Pass { span, nid },
            "return" => Stmt::Return {
                value: value.flatten(),
                span,
                nid,
            },
            "unsafe" => Stmt::Unsafe {
                body: need(body, "body")?,
                span,
                nid,
            },
            "assert" => Stmt::Assert {
                test: need(test, "test")?,
                msg,
                span,
                nid,
            },
            k => return Err(de::Error::custom(format!("unknown statement kind `{k}`"))),
        })
    }
}

impl<'de> Deserialize<'de> for Stmt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(StmtVisitor)
    }
}

struct TargetVisitor;

impl<'de> Visitor<'de> for TargetVisitor {
    type Value = Target;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an assignment target object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Target, A::Error> {
        let mut kind: Option<String> = None;
        let mut span: Option<Span> = None;
        let mut id: Option<String> = None;
        let mut elts: Option<Vec<Target>> = None;
        while let Some(k) = m.next_key::<Key>()? {
            match k {
                Key::Kind => kind = Some(m.next_value()?),
                Key::Span => span = Some(m.next_value()?),
                Key::Id => id = Some(m.next_value()?),
                Key::Elts => elts = Some(m.next_value()?),
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        let span = need::<Span, A::Error>(span, "span")?;
        match need::<String, A::Error>(kind, "kind")?.as_str() {
            "name" => Ok(Target::Name {
                id: need(id, "id")?,
                span,
            }),
            "tuple" => Ok(Target::Tuple {
                elts: need(elts, "elts")?,
                span,
            }),
            k => Err(de::Error::custom(format!("unknown target kind `{k}`"))),
        }
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TargetVisitor)
    }
}
