//! Launch predicates: typed expression trees over what a launch knows, evaluated with
//! checked integer arithmetic, fail closed. Never text to re-parse: the checker builds the
//! tree, the launcher evaluates it; the text beside it is for people.

use std::fmt;

/// A quantity known when a kernel is launched.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Atom {
    /// Launch grid extent along axis `k`.
    Grid(u8),
    /// Extent of tensor parameter `param` along `axis`.
    Dim { param: String, axis: u8 },
    /// Tile count of the partition passed for `Mut` parameter `param` along `axis`.
    Tiles { param: String, axis: u8 },
    /// A `Const` parameter.
    Const(String),
    /// A runtime integer scalar parameter.
    Scalar(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Python's `//` (rounds toward negative infinity).
    FloorDiv,
    /// Python's `%` (takes the divisor's sign).
    Mod,
    /// `-(-a // b)`.
    Cdiv,
    Min,
    Max,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expr {
    Int(i128),
    Atom(Atom),
    Bin(BinOp, Box<Expr>, Box<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Le,
    Lt,
    Eq,
    Ne,
    Ge,
    Gt,
}

/// One comparison of a predicate, with the text the checker shows for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Clause {
    pub lhs: Expr,
    pub op: CmpOp,
    pub rhs: Expr,
    pub text: String,
}

/// A conjunction of clauses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pred {
    pub clauses: Vec<Clause>,
    /// The clauses' texts joined by ` && `.
    pub text: String,
}

/// Why a predicate could not be decided (the launcher treats it as false).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    /// An atom with no value at this launch.
    Unknown(Atom),
    Overflow,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::Unknown(a) => write!(f, "no value for `{a}`"),
            EvalError::Overflow => write!(f, "arithmetic overflow"),
        }
    }
}

/// Python's `a // b`; a zero divisor reads as 1, the kernel language's definition (the
/// lowering emits it, so the device never divides by zero).
fn floor_div(a: i128, b: i128) -> Result<i128, EvalError> {
    let b = if b == 0 { 1 } else { b };
    let q = a.checked_div(b).ok_or(EvalError::Overflow)?;
    Ok(if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

impl BinOp {
    pub fn apply(self, a: i128, b: i128) -> Result<i128, EvalError> {
        let of = || EvalError::Overflow;
        match self {
            BinOp::Add => a.checked_add(b).ok_or_else(of),
            BinOp::Sub => a.checked_sub(b).ok_or_else(of),
            BinOp::Mul => a.checked_mul(b).ok_or_else(of),
            BinOp::FloorDiv => floor_div(a, b),
            BinOp::Mod => {
                let b = if b == 0 { 1 } else { b };
                let q = floor_div(a, b)?;
                a.checked_sub(q.checked_mul(b).ok_or_else(of)?)
                    .ok_or_else(of)
            }
            BinOp::Cdiv => floor_div(a.checked_neg().ok_or_else(of)?, b)?
                .checked_neg()
                .ok_or_else(of),
            BinOp::Min => Ok(a.min(b)),
            BinOp::Max => Ok(a.max(b)),
        }
    }
}

impl Expr {
    pub fn int(v: i128) -> Expr {
        Expr::Int(v)
    }

    pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Bin(op, Box::new(a), Box::new(b))
    }

    /// The value, with `value_of` giving each atom's; every step checked.
    pub fn eval(&self, value_of: &dyn Fn(&Atom) -> Option<i128>) -> Result<i128, EvalError> {
        match self {
            Expr::Int(v) => Ok(*v),
            Expr::Atom(a) => value_of(a).ok_or_else(|| EvalError::Unknown(a.clone())),
            Expr::Bin(op, a, b) => op.apply(a.eval(value_of)?, b.eval(value_of)?),
        }
    }

    /// Every atom, in order of appearance.
    pub fn atoms<'a>(&'a self, out: &mut Vec<&'a Atom>) {
        match self {
            Expr::Int(_) => {}
            Expr::Atom(a) => out.push(a),
            Expr::Bin(_, a, b) => {
                a.atoms(out);
                b.atoms(out);
            }
        }
    }

    /// Nesting depth (the launcher's evaluator recurses this deep).
    pub fn depth(&self) -> usize {
        match self {
            Expr::Int(_) | Expr::Atom(_) => 1,
            Expr::Bin(_, a, b) => 1 + a.depth().max(b.depth()),
        }
    }
}

impl CmpOp {
    pub fn holds(self, a: i128, b: i128) -> bool {
        match self {
            CmpOp::Le => a <= b,
            CmpOp::Lt => a < b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Ge => a >= b,
            CmpOp::Gt => a > b,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            CmpOp::Le => "<=",
            CmpOp::Lt => "<",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Ge => ">=",
            CmpOp::Gt => ">",
        }
    }
}

impl Pred {
    /// One clause; `text` is how the checker prints it.
    pub fn clause(lhs: Expr, op: CmpOp, rhs: Expr, text: String) -> Pred {
        Pred {
            text: text.clone(),
            clauses: vec![Clause { lhs, op, rhs, text }],
        }
    }

    /// Both predicates (clauses appended; identical clauses kept once, and of two bounds
    /// `e <= k1`, `e <= k2` on one expression only the tighter).
    pub fn and(mut self, other: Pred) -> Pred {
        for c in other.clauses {
            if self.clauses.contains(&c) {
                continue;
            }
            let bound = |x: &Clause| match (x.op, &x.rhs) {
                (CmpOp::Le, Expr::Int(k)) => Some(*k),
                _ => None,
            };
            if let Some(k) = bound(&c) {
                let same = self
                    .clauses
                    .iter()
                    .position(|x| x.lhs == c.lhs && bound(x).is_some());
                if let Some(i) = same {
                    if bound(&self.clauses[i]).is_some_and(|j| k < j) {
                        self.clauses[i] = c;
                    }
                    continue;
                }
            }
            self.clauses.push(c);
        }
        self.text = self
            .clauses
            .iter()
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>()
            .join(" && ");
        self
    }

    /// Every clause holds. An error anywhere is an error (fail closed), even when an
    /// earlier clause is already false.
    pub fn eval(&self, value_of: &dyn Fn(&Atom) -> Option<i128>) -> Result<bool, EvalError> {
        let mut all = true;
        for c in &self.clauses {
            let a = c.lhs.eval(value_of)?;
            let b = c.rhs.eval(value_of)?;
            all &= c.op.holds(a, b);
        }
        Ok(all)
    }

    /// Every atom of every clause, each once, in order of appearance.
    pub fn atoms(&self) -> Vec<&Atom> {
        let mut all = Vec::new();
        for c in &self.clauses {
            c.lhs.atoms(&mut all);
            c.rhs.atoms(&mut all);
        }
        let mut out: Vec<&Atom> = Vec::new();
        for a in all {
            if !out.contains(&a) {
                out.push(a);
            }
        }
        out
    }
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Atom::Grid(k) => write!(f, "grid({k})"),
            Atom::Dim { param, axis } => write!(f, "dim({param}, {axis})"),
            Atom::Tiles { param, axis } => write!(f, "tiles({param}, {axis})"),
            Atom::Const(n) | Atom::Scalar(n) => write!(f, "{n}"),
        }
    }
}

impl fmt::Display for Expr {
    /// Fully parenthesized (for debugging; people read `Pred::text`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Int(v) => write!(f, "{v}"),
            Expr::Atom(a) => write!(f, "{a}"),
            Expr::Bin(op, a, b) => match op {
                BinOp::Cdiv => write!(f, "cdiv({a}, {b})"),
                BinOp::Min => write!(f, "min({a}, {b})"),
                BinOp::Max => write!(f, "max({a}, {b})"),
                BinOp::Add => write!(f, "({a} + {b})"),
                BinOp::Sub => write!(f, "({a} - {b})"),
                BinOp::Mul => write!(f, "({a} * {b})"),
                BinOp::FloorDiv => write!(f, "({a} // {b})"),
                BinOp::Mod => write!(f, "({a} % {b})"),
            },
        }
    }
}

impl fmt::Display for Clause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.lhs, self.op.symbol(), self.rhs)
    }
}

impl fmt::Display for Pred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn c(n: &str) -> Expr {
        Expr::Atom(Atom::Const(n.into()))
    }

    #[test]
    fn python_division_zero_divisor_and_fail_closed() {
        let env = |a: &Atom| match a {
            Atom::Const(n) if n == "a" => Some(-7),
            Atom::Const(n) if n == "b" => Some(2),
            Atom::Const(n) if n == "z" => Some(0),
            _ => None,
        };
        let e = |op| Expr::bin(op, c("a"), c("b")).eval(&env);
        assert_eq!(e(BinOp::FloorDiv), Ok(-4));
        assert_eq!(e(BinOp::Mod), Ok(1));
        assert_eq!(e(BinOp::Cdiv), Ok(-3));
        assert_eq!(
            Expr::bin(BinOp::FloorDiv, c("a"), c("z")).eval(&env),
            Ok(-7)
        );
        assert_eq!(Expr::bin(BinOp::Mod, c("a"), c("z")).eval(&env), Ok(0));
        assert_eq!(Expr::bin(BinOp::Cdiv, c("a"), c("z")).eval(&env), Ok(-7));
        assert_eq!(
            c("nope").eval(&env),
            Err(EvalError::Unknown(Atom::Const("nope".into())))
        );
        let big = Expr::bin(BinOp::Mul, Expr::Int(i128::MAX), Expr::Int(2));
        assert_eq!(big.eval(&env), Err(EvalError::Overflow));
        // A false clause does not hide an error in a later one.
        let p = Pred::clause(Expr::Int(1), CmpOp::Le, Expr::Int(0), "1 <= 0".into()).and(
            Pred::clause(c("nope"), CmpOp::Le, Expr::Int(0), "nope <= 0".into()),
        );
        assert!(p.eval(&env).is_err());
        assert_eq!(p.text, "1 <= 0 && nope <= 0");
    }

    #[test]
    fn names_that_look_like_functions_are_plain_atoms() {
        // A scalar called `dim` or `grid` is an atom, never a call to parse.
        let p = Pred::clause(
            Expr::Atom(Atom::Scalar("dim".into())),
            CmpOp::Lt,
            Expr::Atom(Atom::Const("grid".into())),
            "dim < grid".into(),
        );
        let env = |a: &Atom| match a {
            Atom::Scalar(n) if n == "dim" => Some(1),
            Atom::Const(n) if n == "grid" => Some(2),
            _ => None,
        };
        assert_eq!(p.eval(&env), Ok(true));
        assert_eq!(p.atoms().len(), 2);
    }

    proptest! {
        #[test]
        fn ops_agree_with_python_semantics(a in -1000i128..1000, b in -50i128..50) {
            prop_assume!(b != 0);
            let q = BinOp::FloorDiv.apply(a, b).unwrap();
            let r = BinOp::Mod.apply(a, b).unwrap();
            prop_assert_eq!(q * b + r, a);
            prop_assert!(r == 0 || (r < 0) == (b < 0));
            prop_assert!(r.abs() < b.abs());
            if b > 0 {
                let cd = BinOp::Cdiv.apply(a, b).unwrap();
                prop_assert!(cd * b >= a && (cd - 1) * b < a);
            }
        }
    }
}
