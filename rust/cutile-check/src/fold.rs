//! Tests the compiler evaluates before the kernel runs, decided once, here: which `if`,
//! `while`, conditional expression and `for` the lowering folds, and the branch the checker
//! reads as live (`KernelFacts::folded_branches`).
//!
//! The checker runs once per kernel, before any `Const` has a value, so it sorts tests in
//! three kinds (`Test`):
//! - computed from literals (`if 0:`, `while False:`, `range(0)`, a name bound to `False`):
//!   the checker computes the value, with Python's semantics, for the operations whose
//!   result is exact (`+ - *`, comparisons, `not`, `and`/`or`), and reads that branch
//!   only; the other is dead;
//! - a value of the `Const`s (`if C == 2:`, a static extent, a device function computing
//!   one, and anything of literals not computed here): one branch per specialization, the
//!   one its `Const`s select; the checker reads each branch as the live one, in its own
//!   *world* (`check/paths.rs`), so a name bound to a different tensor on each branch is
//!   followed exactly in each;
//! - anything else is known only on the device: both branches may run, and where they
//!   meet the paths are joined.
//!
//! A value of the `Const`s is tracked by identity (`Ct::Key`), not by value: equal keys
//! are the same value in every specialization, which is what the compiler needs to keep a
//! value known where two paths meet (`state::join`) and what two tests with one key share.

use crate::check::Checker;
use crate::state::{State, Val};
use crate::sym::{Atom, Poly};
use cutile_kast::{BinOp, BoolOp, CmpOp, ConstValue, Expr, UnaryOp};
use std::rc::Rc;

/// A value the compiler knows before the kernel runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ct {
    /// A value computed from literals alone (through names too), exactly.
    Lit(Lit),
    /// A value of the `Const`s, by identity: its canonical expression over literals and
    /// `Const` names (equal keys, equal values in every specialization).
    Key(Rc<str>),
    /// A shape: some extents known at compile time, others (`-1`) not.
    Tuple(Vec<Option<Ct>>),
}

impl Ct {
    pub fn key(s: String) -> Ct {
        Ct::Key(s.into())
    }

    /// The value's identity as text, for a key it is part of (`None`: a tuple).
    pub fn as_key(&self) -> Option<String> {
        match self {
            Ct::Lit(v) => Some(v.text()),
            Ct::Key(k) => Some(k.to_string()),
            Ct::Tuple(_) => None,
        }
    }

    /// The whole value as text (`?` for an item known only at run time).
    pub fn text(&self) -> String {
        match self {
            Ct::Tuple(items) => {
                let ks: Vec<String> = items
                    .iter()
                    .map(|x| x.as_ref().map_or_else(|| "?".to_string(), Ct::text))
                    .collect();
                format!("({})", ks.join(", "))
            }
            other => other.as_key().unwrap_or_default(),
        }
    }
}

/// How the compiler reads a test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Test {
    /// Known only on the device.
    Runtime,
    /// A value computed from literals: this branch (the checker computed it exactly).
    Lit(bool),
    /// A value of the `Const`s, by its key: one branch per specialization (two tests with
    /// one key take the same branch).
    Consts(Rc<str>),
}

/// A literal's value, computed where Python's result is exact (a float by its bits, so
/// that values compare as the compiler keeps them apart: `1`, `True` and `1.0` differ).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lit {
    Int(i128),
    Float(u64),
    Bool(bool),
    None,
    Str(Rc<str>),
}

impl Lit {
    fn truthy(&self) -> bool {
        match self {
            Lit::Int(i) => *i != 0,
            Lit::Float(f) => f64::from_bits(*f) != 0.0,
            Lit::Bool(b) => *b,
            Lit::None => false,
            Lit::Str(s) => !s.is_empty(),
        }
    }

    fn text(&self) -> String {
        match self {
            Lit::Int(i) => format!("{i}"),
            Lit::Float(f) => format!("f{f:x}"),
            Lit::Bool(b) => format!("{b}"),
            Lit::None => "None".into(),
            Lit::Str(s) => format!("{s:?}"),
        }
    }

    fn float_of(f: f64) -> Lit {
        Lit::Float(f.to_bits())
    }

    /// An integer (a bool counts as 0 or 1, as in Python).
    fn int(&self) -> Option<i128> {
        match self {
            Lit::Int(i) => Some(*i),
            Lit::Bool(b) => Some(i128::from(*b)),
            _ => None,
        }
    }

    /// A float or an integer that converts to one exactly.
    fn float(&self) -> Option<f64> {
        const EXACT: i128 = 1 << 53;
        match self {
            Lit::Float(f) => Some(f64::from_bits(*f)),
            _ => self
                .int()
                .filter(|i| (-EXACT..=EXACT).contains(i))
                .map(|i| i as f64),
        }
    }
}

fn literal(v: &ConstValue) -> Lit {
    match v {
        ConstValue::Bool(b) => Lit::Bool(*b),
        ConstValue::Int(i) => Lit::Int(i128::from(*i)),
        ConstValue::Float(f) => Lit::float_of(*f),
        ConstValue::Str(s) => Lit::Str(s.as_str().into()),
        ConstValue::None => Lit::None,
    }
}

// Python's result, where it is exact: integers as wide as Python's (an overflow of `i128`
// is no value), floats, bools, `None`, texts; arithmetic (`//` and `%` by zero read the
// divisor as 1, as the compiler folds them), `not`, `-`, comparisons, `and`/`or`. `None`
// for anything else (a float `//`, a negative power): such a test is one of `Const`s,
// whose branches are both read.

fn unary(op: UnaryOp, v: Lit) -> Option<Lit> {
    match op {
        UnaryOp::Not => Some(Lit::Bool(!v.truthy())),
        UnaryOp::Neg => match v {
            Lit::Float(f) => Some(Lit::float_of(-f64::from_bits(f))),
            v => v.int()?.checked_neg().map(Lit::Int),
        },
        UnaryOp::Pos => match v {
            Lit::Float(f) => Some(Lit::Float(f)),
            v => v.int().map(Lit::Int),
        },
        UnaryOp::Invert => None,
    }
}

fn binary(op: BinOp, a: &Lit, b: &Lit) -> Option<Lit> {
    if let (Lit::Bool(x), Lit::Bool(y)) = (a, b) {
        // bool & | ^ bool is a bool in Python
        match op {
            BinOp::Bitand => return Some(Lit::Bool(*x & *y)),
            BinOp::Bitor => return Some(Lit::Bool(*x | *y)),
            BinOp::Bitxor => return Some(Lit::Bool(*x ^ *y)),
            _ => {}
        }
    }
    if let (Some(x), Some(y)) = (a.int(), b.int()) {
        // `//` and `%` by zero read the divisor as 1, as the compiler folds them (and the
        // device computes them); a negative power or shift is no integer (an error).
        let d = if y == 0 { 1 } else { y };
        return match op {
            BinOp::Add => x.checked_add(y).map(Lit::Int),
            BinOp::Sub => x.checked_sub(y).map(Lit::Int),
            BinOp::Mul => x.checked_mul(y).map(Lit::Int),
            BinOp::Floordiv => floor_div(x, d).map(Lit::Int),
            BinOp::Mod => floor_div(x, d)
                .and_then(|q| x.checked_sub(q.checked_mul(d)?))
                .map(Lit::Int),
            BinOp::Pow => u32::try_from(y)
                .ok()
                .and_then(|e| x.checked_pow(e))
                .map(Lit::Int),
            BinOp::Lshift => u32::try_from(y)
                .ok()
                .filter(|s| *s < 126)
                .and_then(|s| x.checked_mul(1i128 << s))
                .map(Lit::Int),
            BinOp::Rshift => u32::try_from(y).ok().map(|s| Lit::Int(x >> s.min(127))),
            BinOp::Bitand => Some(Lit::Int(x & y)),
            BinOp::Bitor => Some(Lit::Int(x | y)),
            BinOp::Bitxor => Some(Lit::Int(x ^ y)),
            // true division of integers: correctly rounded where both are exact floats
            BinOp::Div if y != 0 => Some(Lit::float_of(a.float()? / b.float()?)),
            _ => None,
        };
    }
    if !matches!(a, Lit::Float(_)) && !matches!(b, Lit::Float(_)) {
        return None;
    }
    let (x, y) = (a.float()?, b.float()?);
    match op {
        BinOp::Add => Some(Lit::float_of(x + y)),
        BinOp::Sub => Some(Lit::float_of(x - y)),
        BinOp::Mul => Some(Lit::float_of(x * y)),
        BinOp::Div if y != 0.0 => Some(Lit::float_of(x / y)),
        _ => None,
    }
}

/// Python's `x // d` (toward negative infinity), `d` not 0.
fn floor_div(x: i128, d: i128) -> Option<i128> {
    let q = x.checked_div(d)?;
    Some(if x % d != 0 && ((x < 0) != (d < 0)) {
        q - 1
    } else {
        q
    })
}

fn compare(op: CmpOp, a: &Lit, b: &Lit) -> Option<Lit> {
    let ord = if let (Some(x), Some(y)) = (a.int(), b.int()) {
        Some(x.cmp(&y))
    } else if let (Some(x), Some(y)) = (a.float(), b.float()) {
        x.partial_cmp(&y)
    } else {
        // `None == None`, texts: equality only
        let same = match (a, b) {
            (Lit::None, Lit::None) => true,
            (Lit::Str(x), Lit::Str(y)) => x == y,
            _ => return None,
        };
        return match op {
            CmpOp::Eq => Some(Lit::Bool(same)),
            CmpOp::Ne => Some(Lit::Bool(!same)),
            _ => None,
        };
    };
    use std::cmp::Ordering::{Equal, Greater, Less};
    // A NaN compares unordered: only `!=` holds.
    Some(Lit::Bool(match (op, ord) {
        (CmpOp::Ne, None) => true,
        (_, None) => false,
        (CmpOp::Eq, Some(o)) => o == Equal,
        (CmpOp::Ne, Some(o)) => o != Equal,
        (CmpOp::Lt, Some(o)) => o == Less,
        (CmpOp::Le, Some(o)) => o != Greater,
        (CmpOp::Gt, Some(o)) => o == Greater,
        (CmpOp::Ge, Some(o)) => o != Less,
    }))
}

/// Python's `and`/`or` give an operand: the first that decides, else the last.
fn boolean(op: BoolOp, vals: Vec<Lit>) -> Option<Lit> {
    let last = vals.last()?.clone();
    let decides = |v: &Lit| v.truthy() == (op == BoolOp::Or);
    Some(vals.into_iter().find(decides).unwrap_or(last))
}

/// The value of an expression of literals alone (no name), where it is exact.
fn lit(e: &Expr) -> Option<Lit> {
    match e {
        Expr::Const { value, .. } => Some(literal(value)),
        Expr::Unary { op, operand, .. } => unary(*op, lit(operand)?),
        Expr::Binop {
            op, left, right, ..
        } => binary(*op, &lit(left)?, &lit(right)?),
        Expr::Compare {
            op, left, right, ..
        } => compare(*op, &lit(left)?, &lit(right)?),
        Expr::Boolop { op, values, .. } => {
            boolean(*op, values.iter().map(lit).collect::<Option<Vec<_>>>()?)
        }
        Expr::Ifexp {
            test, body, orelse, ..
        } => lit(if lit(test)?.truthy() { body } else { orelse }),
        _ => None,
    }
}

/// Operands all computed from literals: the result, or its key where it is not exact.
fn apply(keys: &[Ct], exact: impl FnOnce(&[Lit]) -> Option<Lit>, text: String) -> Ct {
    let lits: Option<Vec<Lit>> = keys
        .iter()
        .map(|k| match k {
            Ct::Lit(v) => Some(v.clone()),
            _ => None,
        })
        .collect();
    match lits.and_then(|l| exact(&l)) {
        Some(v) => Ct::Lit(v),
        None => Ct::key(text),
    }
}

/// An extent or a tile size as the compiler sees it: an integer literal, a `Const`'s name.
fn poly_ct(p: &Poly) -> Option<Ct> {
    if let Some(k) = p.as_const() {
        return Some(Ct::Lit(Lit::Int(k)));
    }
    match p.as_atom()? {
        Atom::Const(n) => Some(const_key(n)),
        _ => None,
    }
}

/// The key of `Const` parameter `name`.
pub fn const_key(name: &str) -> Ct {
    Ct::key(format!("${name}"))
}

fn shape_of(polys: &[Poly]) -> Ct {
    Ct::Tuple(polys.iter().map(poly_ct).collect())
}

impl<'d> Checker<'d> {
    /// How the compiler reads test `e` in state `st`.
    pub fn test_kind(&self, e: &Expr, st: &State) -> Test {
        match self.ct_of(e, st) {
            Some(Ct::Lit(v)) => Test::Lit(v.truthy()),
            Some(Ct::Key(k)) => Test::Consts(k),
            _ => Test::Runtime,
        }
    }

    /// `range(start, stop, step)` of literals with a positive step that runs no
    /// iteration (the frontend writes `range(n)` as `range(0, n, 1)`).
    pub fn empty_literal_range(&self, iter: &Expr) -> bool {
        let Expr::Call { func, args, .. } = iter else {
            return false;
        };
        let [a, b, c] = args.as_slice() else {
            return false;
        };
        if func != "builtins.range" {
            return false;
        }
        let int = |e: &Expr| lit(e).and_then(|v| v.int());
        matches!((int(a), int(b), int(c)), (Some(a), Some(b), Some(c)) if c > 0 && a >= b)
    }

    /// The compile-time value of `e` in `st`, or `None` where the compiler knows it only
    /// on the device (or the checker cannot tell: the compiler then emits the test for the
    /// device, as it reads it: `lowering/control_flow.py`).
    pub fn ct_of(&self, e: &Expr, st: &State) -> Option<Ct> {
        let ct = self.ct_of_node(e, st)?;
        // Past the cap the compiler's value is not followed (read as a run-time one):
        // `c = c * 2 + c // 3` doubled its key at each line, `t = (t, t)` its tuple.
        ct_within(&ct, &mut { crate::limits::MAX_CT_SIZE }).then_some(ct)
    }

    fn ct_of_node(&self, e: &Expr, st: &State) -> Option<Ct> {
        match e {
            Expr::Const { value, .. } => Some(Ct::Lit(literal(value))),
            Expr::Name { id, .. } => {
                let var = self.var_id(id)?;
                st.ct.get(&var).cloned()
            }
            Expr::Tuple { elts, .. } => {
                Some(Ct::Tuple(elts.iter().map(|x| self.ct_of(x, st)).collect()))
            }
            Expr::Binop {
                op, left, right, ..
            } if *op != BinOp::Matmul => {
                let (a, b) = (self.ct_of(left, st)?, self.ct_of(right, st)?);
                let text = format!("({} {op:?} {})", a.as_key()?, b.as_key()?);
                Some(apply(&[a, b], |l| binary(*op, &l[0], &l[1]), text))
            }
            Expr::Unary { op, operand, .. } => {
                let a = self.ct_of(operand, st)?;
                let text = format!("({op:?} {})", a.as_key()?);
                Some(apply(&[a], |l| unary(*op, l[0].clone()), text))
            }
            Expr::Compare {
                op, left, right, ..
            } => {
                let (a, b) = (self.ct_of(left, st)?, self.ct_of(right, st)?);
                let text = format!("({} {op:?} {})", a.as_key()?, b.as_key()?);
                Some(apply(&[a, b], |l| compare(*op, &l[0], &l[1]), text))
            }
            Expr::Boolop { op, values, .. } => {
                let vals = values
                    .iter()
                    .map(|v| self.ct_of(v, st))
                    .collect::<Option<Vec<_>>>()?;
                let keys = vals.iter().map(Ct::as_key).collect::<Option<Vec<_>>>()?;
                let text = format!("({})", keys.join(&format!(" {op:?} ")));
                Some(apply(&vals, |l| boolean(*op, l.to_vec()), text))
            }
            Expr::Ifexp {
                test, body, orelse, ..
            } => {
                let t = self.ct_of(test, st)?;
                if let Ct::Lit(v) = &t {
                    return self.ct_of(if v.truthy() { body } else { orelse }, st);
                }
                let (a, b) = (self.ct_of(body, st)?, self.ct_of(orelse, st)?);
                Some(Ct::key(format!(
                    "({} if {} else {})",
                    a.as_key()?,
                    t.as_key()?,
                    b.as_key()?
                )))
            }
            Expr::Attribute { value, attr, .. } => {
                let Expr::Name { id, .. } = value.as_ref() else {
                    return None;
                };
                let v = st.get(self.var_id(id)?).map(|b| &b.val)?;
                self.attribute_ct(v, attr)
            }
            Expr::Subscript { value, index, .. } => {
                let Some(Ct::Tuple(items)) = self.ct_of(value, st) else {
                    return None;
                };
                let Some(Ct::Lit(k)) = self.ct_of(index, st) else {
                    return None;
                };
                let (k, n) = (k.int()?, items.len() as i128);
                if !(-n..n).contains(&k) {
                    return None;
                }
                items.get(k.rem_euclid(n) as usize).cloned().flatten()
            }
            Expr::Call { func, args, .. } => {
                let name = func.strip_prefix("builtins.").unwrap_or("");
                match (name, func.as_str(), args.as_slice()) {
                    ("len", _, [x]) => match self.ct_of(x, st)? {
                        Ct::Tuple(items) => Some(Ct::Lit(Lit::Int(items.len() as i128))),
                        _ => None,
                    },
                    ("min" | "max" | "abs" | "int" | "float", _, _) | ("", "cdiv", _) => {
                        let keys = args
                            .iter()
                            .map(|a| self.ct_key_deep(a, st))
                            .collect::<Option<Vec<_>>>()?;
                        Some(Ct::key(format!("{func}({})", keys.join(", "))))
                    }
                    // `num_tiles(x, k, shape)` of an input whose extent `k` is static
                    ("", "num_tiles", [Expr::Name { id, .. }, axis, shape]) => {
                        let v = st.get(self.var_id(id)?).map(|b| &b.val)?;
                        let dims = match v {
                            Val::Shared(i) => &self.shared.get(*i)?.shape,
                            Val::Atomic(i) => &self.atomics.get(*i)?.shape,
                            _ => return None,
                        };
                        let k = usize::try_from(lit(axis)?.int()?).ok()?;
                        let extent = poly_ct(dims.get(k)?)?;
                        let tile = self.ct_key_deep(shape, st)?;
                        Some(Ct::key(format!(
                            "num_tiles({}, {k}, {tile})",
                            extent.as_key()?
                        )))
                    }
                    _ => None,
                }
            }
            // A device function's result, as its last call here gave it (`call_device`).
            Expr::CallDevice { nid, .. } => self.call_ct.get(&self.node_ref(*nid)).cloned(),
            _ => None,
        }
    }

    /// A key for a value or a tuple of values all known at compile time (`min((a, b))`).
    fn ct_key_deep(&self, e: &Expr, st: &State) -> Option<String> {
        fn flat(c: &Ct) -> Option<String> {
            match c {
                Ct::Tuple(items) => {
                    let ks = items
                        .iter()
                        .map(|x| flat(x.as_ref()?))
                        .collect::<Option<Vec<_>>>()?;
                    Some(format!("({})", ks.join(", ")))
                }
                other => other.as_key(),
            }
        }
        flat(&self.ct_of(e, st)?)
    }

    /// `x.shape`, `x.ndim`, `z.tile_shape` where the compiler knows them: a shared or
    /// atomic input's declared extents (an int, a `Const`'s name; not `-1`), an output's
    /// tile. An output's full extents are known only at launch.
    fn attribute_ct(&self, v: &Val, attr: &str) -> Option<Ct> {
        let dims = |p: &[Poly]| Ct::Lit(Lit::Int(p.len() as i128));
        match (v, attr) {
            (Val::Shared(i), "shape") => Some(shape_of(&self.shared.get(*i)?.shape)),
            (Val::Atomic(i), "shape") => Some(shape_of(&self.atomics.get(*i)?.shape)),
            (Val::Shared(i), "ndim") => Some(dims(&self.shared.get(*i)?.shape)),
            (Val::Atomic(i), "ndim") => Some(dims(&self.atomics.get(*i)?.shape)),
            (Val::Mut(r), "tile_shape") => Some(shape_of(&self.roots.get(*r)?.tile)),
            (Val::Mut(r), "ndim") => Some(dims(&self.roots.get(*r)?.tile)),
            _ => None,
        }
    }

    /// `op` applied to two compile-time values (`n += 1`).
    pub fn ct_binop(op: BinOp, a: Option<Ct>, b: Option<Ct>) -> Option<Ct> {
        if op == BinOp::Matmul {
            return None;
        }
        let (a, b) = (a?, b?);
        let text = format!("({} {op:?} {})", a.as_key()?, b.as_key()?);
        Some(apply(&[a, b], |l| binary(op, &l[0], &l[1]), text))
    }
}

/// Does `ct` take at most `left` units (a key's or literal's text length, one per tuple
/// item)? Stops counting past it.
fn ct_within(ct: &Ct, left: &mut usize) -> bool {
    let here = match ct {
        Ct::Key(k) => k.len(),
        Ct::Lit(_) | Ct::Tuple(_) => 1,
    };
    if here > *left {
        return false;
    }
    *left -= here;
    match ct {
        Ct::Tuple(items) => items.iter().flatten().all(|x| ct_within(x, left)),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cutile_kast::Span;

    const SP: Span = Span {
        file: 0,
        lo: 0,
        hi: 0,
        line: 1,
        col: 0,
        end_line: 1,
        end_col: 0,
    };

    fn c(v: ConstValue) -> Expr {
        Expr::Const {
            value: v,
            ty: None,
            span: SP,
            nid: 0,
        }
    }

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binop {
            op,
            left: Box::new(a),
            right: Box::new(b),
            span: SP,
            nid: 0,
        }
    }

    fn cmp(op: CmpOp, a: Expr, b: Expr) -> Expr {
        Expr::Compare {
            op,
            left: Box::new(a),
            right: Box::new(b),
            span: SP,
            nid: 0,
        }
    }

    #[test]
    fn literals_fold_with_pythons_values() {
        let i = |n| c(ConstValue::Int(n));
        let t = |e: &Expr| lit(e).map(|v| v.truthy());
        assert_eq!(t(&i(0)), Some(false));
        assert_eq!(
            t(&cmp(CmpOp::Eq, bin(BinOp::Add, i(1), i(1)), i(2))),
            Some(true)
        );
        // True == 1 and 1 == 1.0, as in Python
        assert_eq!(
            t(&cmp(CmpOp::Eq, c(ConstValue::Bool(true)), i(1))),
            Some(true)
        );
        assert_eq!(
            t(&cmp(CmpOp::Eq, i(1), c(ConstValue::Float(1.0)))),
            Some(true)
        );
        // NaN: unordered, only != holds
        let nan = c(ConstValue::Float(f64::NAN));
        assert_eq!(t(&cmp(CmpOp::Eq, nan.clone(), nan.clone())), Some(false));
        assert_eq!(t(&cmp(CmpOp::Ne, nan.clone(), nan.clone())), Some(true));
        assert_eq!(t(&nan), Some(true));
        // `2 and 0` is 0; `0 or 3` is 3
        let and = Expr::Boolop {
            op: BoolOp::And,
            values: vec![i(2), i(0)],
            span: SP,
            nid: 0,
        };
        assert_eq!(lit(&and), Some(Lit::Int(0)));
        // what is not exact here is not a literal test (both branches are read)
        // `//` and `%` by zero read the divisor as 1 (the compiler's fold); Python's signs
        let v = |e: &Expr| lit(e);
        assert_eq!(v(&bin(BinOp::Floordiv, i(7), i(0))), Some(Lit::Int(7)));
        assert_eq!(v(&bin(BinOp::Floordiv, i(-7), i(2))), Some(Lit::Int(-4)));
        assert_eq!(v(&bin(BinOp::Mod, i(-7), i(2))), Some(Lit::Int(1)));
        assert_eq!(v(&bin(BinOp::Mod, i(7), i(-2))), Some(Lit::Int(-1)));
        assert_eq!(v(&bin(BinOp::Pow, i(2), i(10))), Some(Lit::Int(1024)));
        assert_eq!(v(&bin(BinOp::Pow, i(2), i(-1))), None);
        assert_eq!(v(&bin(BinOp::Div, i(7), i(2))), Some(Lit::float_of(3.5)));
        assert_eq!(v(&bin(BinOp::Div, i(7), i(0))), None);
        let (yes, no) = (c(ConstValue::Bool(true)), c(ConstValue::Bool(false)));
        assert_eq!(
            v(&bin(BinOp::Bitand, yes.clone(), no)),
            Some(Lit::Bool(false))
        );
        assert_eq!(v(&bin(BinOp::Bitand, yes, i(3))), Some(Lit::Int(1)));
        assert_eq!(t(&bin(BinOp::Mul, i(i64::MAX), i(i64::MAX))), Some(true));
        let big = bin(BinOp::Mul, i(i64::MAX), i(i64::MAX));
        assert_eq!(t(&bin(BinOp::Mul, big.clone(), big)), None);
        assert_eq!(
            t(&cmp(CmpOp::Lt, c(ConstValue::Str("a".into())), i(1))),
            None
        );
    }
}
