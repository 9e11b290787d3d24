//! The launch-predicate language, and its evaluator (fail-closed).
//!
//! ```text
//! pred  := cmp ('&&' cmp)*
//! cmp   := expr ('<=' | '<' | '==' | '!=' | '>=' | '>') expr
//! expr  := term (('+' | '-') term)*
//! term  := unary (('*' | '//' | '%') unary)*
//! unary := '-' unary | INT | '(' expr ')' | cdiv(e, e) | min(e, e) | max(e, e)
//!        | grid(K) | dim(x, K) | tiles(z, K) | NAME
//! ```
//!
//! `grid(k)` is the launch grid extent, `dim(x, k)` an extent of tensor parameter `x`,
//! `tiles(z, k)` the tile count of partition `z`, `NAME` a `Const` or scalar parameter.
//! `//` and `%` are Python's floor division and modulo; `cdiv(a, b)` is `-(-a // b)`.
//! Evaluation is fail-closed: an unknown atom, a division by zero or an overflow is an
//! error, which the host must treat as "predicate false".

use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i128),
    Name(String),
    Op(&'static str),
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    const OPS: [&str; 15] = [
        "&&", "<=", ">=", "==", "!=", "//", "<", ">", "+", "-", "*", "%", "(", ")", ",",
    ];
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let v = s[start..i]
                .parse::<i128>()
                .map_err(|e| format!("bad integer: {e}"))?;
            out.push(Tok::Int(v));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Name(s[start..i].to_string()));
        } else if let Some(op) = OPS.iter().find(|op| s[i..].starts_with(**op)) {
            out.push(Tok::Op(op));
            i += op.len();
        } else {
            return Err(format!("unexpected character `{}` in predicate", c as char));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    pos: usize,
    env: &'a mut dyn FnMut(&str) -> Option<i128>,
}

fn floor_div(a: i128, b: i128) -> Result<i128, String> {
    if b == 0 {
        return Err("division by zero".into());
    }
    let q = a.checked_div(b).ok_or("overflow")?;
    Ok(if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.eat(op) {
            Ok(())
        } else {
            Err(format!("expected `{op}`"))
        }
    }

    fn pred(&mut self) -> Result<bool, String> {
        let mut all = self.cmp()?;
        while self.eat("&&") {
            // Evaluate every clause (an error anywhere is an error).
            all &= self.cmp()?;
        }
        if self.pos != self.toks.len() {
            return Err("trailing input in predicate".into());
        }
        Ok(all)
    }

    fn cmp(&mut self) -> Result<bool, String> {
        let l = self.expr()?;
        let op = match self.peek() {
            Some(Tok::Op(o)) if ["<=", "<", "==", "!=", ">=", ">"].contains(o) => *o,
            _ => return Err("expected a comparison".into()),
        };
        self.pos += 1;
        let r = self.expr()?;
        Ok(match op {
            "<=" => l <= r,
            "<" => l < r,
            "==" => l == r,
            "!=" => l != r,
            ">=" => l >= r,
            _ => l > r,
        })
    }

    fn expr(&mut self) -> Result<i128, String> {
        let mut v = self.term()?;
        loop {
            if self.eat("+") {
                v = v.checked_add(self.term()?).ok_or("overflow")?;
            } else if self.eat("-") {
                v = v.checked_sub(self.term()?).ok_or("overflow")?;
            } else {
                return Ok(v);
            }
        }
    }

    fn term(&mut self) -> Result<i128, String> {
        let mut v = self.unary()?;
        loop {
            if self.eat("*") {
                v = v.checked_mul(self.unary()?).ok_or("overflow")?;
            } else if self.eat("//") {
                v = floor_div(v, self.unary()?)?;
            } else if self.eat("%") {
                let d = self.unary()?;
                v = v
                    .checked_sub(floor_div(v, d)?.checked_mul(d).ok_or("overflow")?)
                    .ok_or("overflow")?;
            } else {
                return Ok(v);
            }
        }
    }

    fn args(&mut self) -> Result<Vec<Tok>, String> {
        // Raw atom arguments: names and integers, for the lookup key.
        self.expect("(")?;
        let mut out = Vec::new();
        loop {
            match self.peek().cloned() {
                Some(t @ (Tok::Int(_) | Tok::Name(_))) => {
                    out.push(t);
                    self.pos += 1;
                }
                _ => return Err("expected an atom argument".into()),
            }
            if self.eat(")") {
                return Ok(out);
            }
            self.expect(",")?;
        }
    }

    fn lookup(&mut self, key: &str) -> Result<i128, String> {
        (self.env)(key).ok_or_else(|| format!("no value for `{key}`"))
    }

    fn unary(&mut self) -> Result<i128, String> {
        if self.eat("-") {
            return self.unary()?.checked_neg().ok_or_else(|| "overflow".into());
        }
        if self.eat("(") {
            let v = self.expr()?;
            self.expect(")")?;
            return Ok(v);
        }
        match self.peek().cloned() {
            Some(Tok::Int(v)) => {
                self.pos += 1;
                Ok(v)
            }
            Some(Tok::Name(n)) => {
                self.pos += 1;
                match n.as_str() {
                    "cdiv" | "min" | "max" => {
                        self.expect("(")?;
                        let a = self.expr()?;
                        self.expect(",")?;
                        let b = self.expr()?;
                        self.expect(")")?;
                        match n.as_str() {
                            "cdiv" => floor_div(a.checked_neg().ok_or("overflow")?, b)?
                                .checked_neg()
                                .ok_or_else(|| "overflow".into()),
                            "min" => Ok(a.min(b)),
                            _ => Ok(a.max(b)),
                        }
                    }
                    "grid" | "dim" | "tiles" | "block_id" => {
                        let args = self.args()?;
                        let text: Vec<String> = args
                            .iter()
                            .map(|t| match t {
                                Tok::Int(v) => v.to_string(),
                                Tok::Name(s) => s.clone(),
                                Tok::Op(o) => o.to_string(),
                            })
                            .collect();
                        self.lookup(&format!("{n}({})", text.join(", ")))
                    }
                    _ => self.lookup(&n),
                }
            }
            _ => Err("expected a value".into()),
        }
    }
}

/// Evaluate `predicate` with the values of its atoms (`"grid(0)"`, `"dim(x, 1)"`,
/// `"tiles(z, 0)"`, `"BM"`). `Err` means the predicate cannot be decided: fail closed.
pub fn eval(predicate: &str, env: &HashMap<String, i128>) -> Result<bool, String> {
    let mut lookup = |k: &str| env.get(k).copied();
    let mut p = Parser {
        toks: lex(predicate)?,
        pos: 0,
        env: &mut lookup,
    };
    p.pred()
}

/// The atoms whose values `eval` needs (in order of appearance, unique); `Err` when the
/// predicate does not parse.
pub fn atoms(predicate: &str) -> Result<Vec<String>, String> {
    let mut seen: Vec<String> = Vec::new();
    let mut record = |k: &str| {
        if !seen.iter().any(|s| s == k) {
            seen.push(k.to_string());
        }
        // A value that keeps divisions defined.
        Some(1)
    };
    let mut p = Parser {
        toks: lex(predicate)?,
        pos: 0,
        env: &mut record,
    };
    p.pred()?;
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, i128)]) -> HashMap<String, i128> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn evaluates_checker_predicates() {
        let e = env(&[
            ("grid(0)", 8),
            ("grid(1)", 8),
            ("dim(x, 0)", 1000),
            ("BM", 128),
            ("S", 2),
            ("B", 64),
        ]);
        assert_eq!(eval("grid(0) <= cdiv(dim(x, 0), BM)", &e), Ok(true));
        assert_eq!(eval("grid(0) <= cdiv(dim(x, 0), 256)", &e), Ok(false));
        assert_eq!(
            eval("grid(1) <= grid(0) && grid(0) <= grid(1)", &e),
            Ok(true)
        );
        assert_eq!(eval("B % S == 0", &e), Ok(true));
        assert_eq!(eval("1 <= S", &e), Ok(true));
        assert_eq!(
            eval(
                "S != 0 && 0 <= min(0, grid(0) * S - S) && max(0, grid(0) * S - S) + 1 <= grid(0)",
                &e
            ),
            Ok(false)
        );
        assert_eq!(
            eval("-7 // 2 == -4 && -7 % 2 == 1 && 7 // -2 == -4", &e),
            Ok(true)
        );
    }

    #[test]
    fn lists_atoms() {
        assert_eq!(
            atoms("grid(0) <= cdiv(dim(x, 0), BM) && B % S == 0").unwrap(),
            vec!["grid(0)", "dim(x, 0)", "BM", "B", "S"]
        );
        assert!(atoms("grid(0) <=").is_err());
    }

    #[test]
    fn fails_closed() {
        let e = env(&[("grid(0)", 8)]);
        assert!(eval("grid(1) <= 3", &e).is_err());
        assert!(eval("grid(0) // 0 == 1", &e).is_err());
        assert!(eval("grid(0) <=", &e).is_err());
        assert!(eval("grid(0) <= 3 junk", &e).is_err());
        assert!(eval("170141183460469231731687303715884105727 + 1 > 0", &e).is_err());
    }
}
