//! Symbolic integers: polynomials over atoms (block ids, grid extents, tensor extents,
//! `Const` parameters, loop variables, and opaque sub-terms such as `a // b`).
//!
//! The provers (`prover.rs`, `bounds.rs`) need three things from a value: is it affine in
//! the block ids (and with which coefficients), what are its extremes over the ranges of
//! the block ids and loop variables, and can its sign be decided from what is known at
//! launch. A [`Poly`] answers all three; everything it cannot express becomes an
//! [`Atom::Opaque`] and the proof falls to a lower rung of the ladder.

use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

/// An indivisible integer quantity.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    /// `block_id(k)`: in `[0, grid(k))`.
    BlockId(u8),
    /// Launch grid extent along axis `k` (== the partition grid, host rule 6). `>= 1`.
    Grid(u8),
    /// Tile count of a mutable partition along an axis, where it can differ from the grid
    /// (kernels with `iter_indices()`). `>= 1`.
    Tiles(String, u8),
    /// Extent of a tensor parameter along an axis (a dynamic `-1` dimension). `>= 0`.
    Dim(String, u8),
    /// A `Const[int]` parameter; `>= 1` when it names a shape item.
    Const(String),
    /// A runtime integer scalar parameter (known at launch).
    Scalar(String),
    /// A loop variable, by loop id; its range is in the checker's loop table.
    Loop(u32),
    FloorDiv(Box<Poly>, Box<Poly>),
    Mod(Box<Poly>, Box<Poly>),
    Cdiv(Box<Poly>, Box<Poly>),
    Min(Box<Poly>, Box<Poly>),
    Max(Box<Poly>, Box<Poly>),
    /// Known only on the device (loaded data, a `while` counter, ...), by a unique id.
    Opaque(u32),
}

/// A product of atoms (sorted, with repetition).
pub type Monomial = Vec<Atom>;

/// A polynomial with integer coefficients: `terms[m]` is the coefficient of monomial `m`;
/// the empty monomial is the constant term. Zero coefficients are never stored.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Poly {
    /// Shared: cloning a value is a reference-count increment (the checker copies states
    /// at every branch and loop).
    pub terms: Rc<BTreeMap<Monomial, i128>>,
}

/// The value of an arithmetic result that overflowed 128 bits: unknown, decided (if at
/// all) on the device. Never a wrong constant.
pub const OVERFLOW: u32 = u32::MAX - 1;

fn overflow() -> Poly {
    Poly::atom(Atom::Opaque(OVERFLOW))
}

/// Coefficients past this are treated as overflow (keeps every product in range).
const LIMIT: i128 = 1 << 62;

impl Poly {
    pub fn zero() -> Poly {
        Poly::default()
    }

    pub fn c(v: i128) -> Poly {
        let mut p = Poly::zero();
        if v != 0 {
            Rc::make_mut(&mut p.terms).insert(Vec::new(), v);
        }
        p
    }

    pub fn atom(a: Atom) -> Poly {
        let mut p = Poly::zero();
        Rc::make_mut(&mut p.terms).insert(vec![a], 1);
        p
    }

    /// The constant value, if the polynomial has no atoms.
    pub fn as_const(&self) -> Option<i128> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    /// The single atom, if the polynomial is exactly `1 * atom`.
    pub fn as_atom(&self) -> Option<&Atom> {
        if self.terms.len() == 1 {
            let (m, c) = self.terms.iter().next()?;
            if *c == 1 && m.len() == 1 {
                return m.first();
            }
        }
        None
    }

    pub fn constant_term(&self) -> i128 {
        self.terms.get(&Vec::new()).copied().unwrap_or(0)
    }

    fn add_term(&mut self, m: Monomial, c: i128) {
        let terms = Rc::make_mut(&mut self.terms);
        let e = terms.entry(m).or_insert(0);
        *e = e.saturating_add(c);
        if *e == 0 {
            let zero: Vec<Monomial> = terms
                .iter()
                .filter(|(_, v)| **v == 0)
                .map(|(k, _)| k.clone())
                .collect();
            for k in zero {
                terms.remove(&k);
            }
        }
    }

    fn in_range(&self) -> bool {
        self.terms.values().all(|c| c.abs() < LIMIT)
    }

    pub fn add(&self, o: &Poly) -> Poly {
        let mut r = self.clone();
        for (m, c) in o.terms.iter() {
            r.add_term(m.clone(), *c);
        }
        if r.in_range() {
            r
        } else {
            overflow()
        }
    }

    pub fn scale(&self, k: i128) -> Poly {
        let mut r = Poly::zero();
        if k != 0 {
            for (m, c) in self.terms.iter() {
                Rc::make_mut(&mut r.terms).insert(m.clone(), c.saturating_mul(k));
            }
        }
        if r.in_range() {
            r
        } else {
            overflow()
        }
    }

    pub fn sub(&self, o: &Poly) -> Poly {
        self.add(&o.scale(-1))
    }

    pub fn mul(&self, o: &Poly) -> Poly {
        let mut r = Poly::zero();
        for (m1, c1) in self.terms.iter() {
            for (m2, c2) in o.terms.iter() {
                let mut m = m1.clone();
                m.extend(m2.iter().cloned());
                m.sort();
                r.add_term(m, c1.saturating_mul(*c2));
            }
        }
        if r.in_range() {
            r
        } else {
            overflow()
        }
    }

    /// Python floor division, folded when both sides are constants or the divisor is a
    /// constant dividing every coefficient.
    pub fn floordiv(&self, o: &Poly) -> Poly {
        if let Some(d) = o.as_const() {
            if d == 1 {
                return self.clone();
            }
            if d != 0 {
                if let Some(n) = self.as_const() {
                    return Poly::c(n.div_euclid(d) - i128::from(d < 0 && n.rem_euclid(d) != 0));
                }
                if d > 0 && self.terms.values().all(|c| c % d == 0) {
                    let mut r = Poly::zero();
                    for (m, c) in self.terms.iter() {
                        Rc::make_mut(&mut r.terms).insert(m.clone(), c / d);
                    }
                    return r;
                }
            }
        }
        if self == o && !self.terms.is_empty() {
            // x // x == 1 only for x != 0; leave it symbolic.
        }
        Poly::atom(Atom::FloorDiv(Box::new(self.clone()), Box::new(o.clone())))
    }

    pub fn modulo(&self, o: &Poly) -> Poly {
        if let (Some(n), Some(d)) = (self.as_const(), o.as_const()) {
            if d != 0 {
                let r = n.rem_euclid(d.abs());
                return Poly::c(if d < 0 && r != 0 { r - d.abs() } else { r });
            }
        }
        Poly::atom(Atom::Mod(Box::new(self.clone()), Box::new(o.clone())))
    }

    pub fn cdiv(&self, o: &Poly) -> Poly {
        if let (Some(n), Some(d)) = (self.as_const(), o.as_const()) {
            if d > 0 {
                return Poly::c((n + d - 1).div_euclid(d));
            }
        }
        if o.as_const() == Some(1) {
            return self.clone();
        }
        Poly::atom(Atom::Cdiv(Box::new(self.clone()), Box::new(o.clone())))
    }

    pub fn pmin(&self, o: &Poly) -> Poly {
        if let Some(d) = self.sub(o).as_const() {
            return if d <= 0 { self.clone() } else { o.clone() };
        }
        let (a, b) = if self <= o { (self, o) } else { (o, self) };
        Poly::atom(Atom::Min(Box::new(a.clone()), Box::new(b.clone())))
    }

    pub fn pmax(&self, o: &Poly) -> Poly {
        if let Some(d) = self.sub(o).as_const() {
            return if d >= 0 { self.clone() } else { o.clone() };
        }
        let (a, b) = if self <= o { (self, o) } else { (o, self) };
        Poly::atom(Atom::Max(Box::new(a.clone()), Box::new(b.clone())))
    }

    /// Every atom, including those nested in compound atoms.
    pub fn visit_atoms(&self, f: &mut dyn FnMut(&Atom)) {
        for m in self.terms.keys() {
            for a in m {
                visit_atom(a, f);
            }
        }
    }

    pub fn any_atom(&self, pred: &dyn Fn(&Atom) -> bool) -> bool {
        let mut found = false;
        self.visit_atoms(&mut |a| found |= pred(a));
        found
    }

    /// Known before the kernel runs: no block id, loop variable or device-only value.
    pub fn launch_known(&self) -> bool {
        !self.any_atom(&|a| matches!(a, Atom::BlockId(_) | Atom::Loop(_) | Atom::Opaque(_)))
    }

    /// Replace every top-level occurrence of atom `a` by `by`.
    pub fn substitute(&self, a: &Atom, by: &Poly) -> Poly {
        let mut r = Poly::zero();
        for (m, c) in self.terms.iter() {
            let mut term = Poly::c(*c);
            for x in m {
                if x == a {
                    term = term.mul(by);
                } else {
                    term = term.mul(&Poly::atom(x.clone()));
                }
            }
            r = r.add(&term);
        }
        r
    }

    /// Does atom `a` occur at the top level in a monomial of degree one (`k * a`) and
    /// nowhere else (no `a*a`, no `a*b`, not inside compound atoms)? Then returns `k`.
    pub fn linear_coeff(&self, a: &Atom) -> Option<i128> {
        let mut k = 0;
        for (m, c) in self.terms.iter() {
            if m.iter().any(|x| x == a) {
                if m.len() != 1 {
                    return None;
                }
                k = *c;
            } else if m.iter().any(|x| atom_contains(x, a)) {
                return None;
            }
        }
        Some(k)
    }
}

fn visit_atom(a: &Atom, f: &mut dyn FnMut(&Atom)) {
    f(a);
    match a {
        Atom::FloorDiv(x, y)
        | Atom::Mod(x, y)
        | Atom::Cdiv(x, y)
        | Atom::Min(x, y)
        | Atom::Max(x, y) => {
            x.visit_atoms(f);
            y.visit_atoms(f);
        }
        _ => {}
    }
}

/// Does compound atom `outer` mention `a` inside it?
pub fn atom_contains(outer: &Atom, a: &Atom) -> bool {
    match outer {
        Atom::FloorDiv(x, y)
        | Atom::Mod(x, y)
        | Atom::Cdiv(x, y)
        | Atom::Min(x, y)
        | Atom::Max(x, y) => x.any_atom(&|b| b == a) || y.any_atom(&|b| b == a),
        _ => false,
    }
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Atom::BlockId(k) => write!(f, "block_id({k})"),
            Atom::Grid(k) => write!(f, "grid({k})"),
            Atom::Tiles(p, k) => write!(f, "tiles({p}, {k})"),
            Atom::Dim(p, k) => write!(f, "dim({p}, {k})"),
            Atom::Const(n) | Atom::Scalar(n) => write!(f, "{n}"),
            Atom::Loop(id) => write!(f, "loop{id}"),
            Atom::FloorDiv(a, b) => write!(f, "{} // {}", paren(a), paren(b)),
            Atom::Mod(a, b) => write!(f, "{} % {}", paren(a), paren(b)),
            Atom::Cdiv(a, b) => write!(f, "cdiv({a}, {b})"),
            Atom::Min(a, b) => write!(f, "min({a}, {b})"),
            Atom::Max(a, b) => write!(f, "max({a}, {b})"),
            Atom::Opaque(id) => write!(f, "value{id}"),
        }
    }
}

fn paren(p: &Poly) -> String {
    if p.terms.len() <= 1 && p.terms.keys().all(|m| m.len() <= 1) && p.constant_term() >= 0 {
        p.to_string()
    } else {
        format!("({p})")
    }
}

fn monomial_text(m: &Monomial) -> String {
    m.iter()
        .map(|a| match a {
            Atom::FloorDiv(..) | Atom::Mod(..) if m.len() > 1 => format!("({a})"),
            _ => a.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" * ")
}

impl fmt::Display for Poly {
    /// Atoms first (in a stable order), constant last: `grid(0) - 1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return write!(f, "0");
        }
        let mut first = true;
        let mut items: Vec<(&Monomial, &i128)> =
            self.terms.iter().filter(|(m, _)| !m.is_empty()).collect();
        let constant = self.constant_term();
        items.sort_by_key(|(_, c)| **c < 0);
        for (m, c) in items {
            let (neg, mag) = (*c < 0, c.unsigned_abs());
            let body = if mag == 1 {
                monomial_text(m)
            } else {
                format!("{mag} * {}", monomial_text(m))
            };
            match (first, neg) {
                (true, false) => write!(f, "{body}")?,
                (true, true) => write!(f, "-{body}")?,
                (false, false) => write!(f, " + {body}")?,
                (false, true) => write!(f, " - {body}")?,
            }
            first = false;
        }
        if constant != 0 {
            match (first, constant < 0) {
                (true, _) => write!(f, "{constant}")?,
                (false, false) => write!(f, " + {constant}")?,
                (false, true) => write!(f, " - {}", constant.unsigned_abs())?,
            }
        }
        Ok(())
    }
}

/// `lhs <= rhs` as a readable predicate: terms moved so both sides have positive
/// coefficients (`grid(0) <= cdiv(dim(x, 0), 128)` rather than `... - grid(0) >= 0`).
pub fn le_text(lhs: &Poly, rhs: &Poly) -> String {
    let d = rhs.sub(lhs); // d >= 0
    let mut pos = Poly::zero();
    let mut neg = Poly::zero();
    for (m, c) in d.terms.iter() {
        if m.is_empty() {
            continue;
        }
        if *c > 0 {
            Rc::make_mut(&mut pos.terms).insert(m.clone(), *c);
        } else {
            Rc::make_mut(&mut neg.terms).insert(m.clone(), -*c);
        }
    }
    let k = d.constant_term();
    // neg <= pos + k, with the constant on the side where it is positive.
    let (left, right) = if k >= 0 {
        (neg, pos.add(&Poly::c(k)))
    } else {
        (neg.add(&Poly::c(-k)), pos)
    };
    format!("{left} <= {right}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(n: &str) -> Poly {
        Poly::atom(Atom::Const(n.into()))
    }

    #[test]
    fn arithmetic_folds_and_cancels() {
        let b = Poly::atom(Atom::BlockId(0));
        let p = b.scale(2).add(&Poly::c(3)).sub(&b.scale(2));
        assert_eq!(p.as_const(), Some(3));
        assert_eq!(Poly::c(-7).floordiv(&Poly::c(2)).as_const(), Some(-4));
        assert_eq!(Poly::c(-7).modulo(&Poly::c(2)).as_const(), Some(1));
        assert_eq!(Poly::c(7).modulo(&Poly::c(-2)).as_const(), Some(-1));
        assert_eq!(Poly::c(7).cdiv(&Poly::c(2)).as_const(), Some(4));
        assert_eq!(b.scale(4).floordiv(&Poly::c(2)), b.scale(2));
        assert!(matches!(
            b.floordiv(&Poly::c(2)).as_atom(),
            Some(Atom::FloorDiv(..))
        ));
        assert_eq!(a("B").mul(&a("S")), a("S").mul(&a("B")));
    }

    #[test]
    fn linear_coefficients() {
        let b0 = Atom::BlockId(0);
        let p = Poly::atom(b0.clone()).scale(3).add(&a("B"));
        assert_eq!(p.linear_coeff(&b0), Some(3));
        assert_eq!(p.linear_coeff(&Atom::BlockId(1)), Some(0));
        let sq = Poly::atom(b0.clone()).mul(&Poly::atom(b0.clone()));
        assert_eq!(sq.linear_coeff(&b0), None);
        let div = Poly::atom(b0.clone()).floordiv(&Poly::c(2));
        assert_eq!(div.linear_coeff(&b0), None);
    }

    #[test]
    fn printing() {
        let g = Poly::atom(Atom::Grid(0));
        assert_eq!(g.sub(&Poly::c(1)).to_string(), "grid(0) - 1");
        let x = Poly::atom(Atom::Dim("x".into(), 0)).cdiv(&a("BM"));
        assert_eq!(
            le_text(&g.sub(&Poly::c(1)), &x.sub(&Poly::c(1))),
            "grid(0) <= cdiv(dim(x, 0), BM)"
        );
        assert_eq!(le_text(&g, &Poly::c(8)), "grid(0) <= 8");
        assert_eq!(le_text(&Poly::c(0), &g.sub(&Poly::c(1))), "1 <= grid(0)");
    }
}
