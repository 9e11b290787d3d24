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

/// `x % d` is rewritten to `x - d * (x // d)` only for numerators of at most this many
/// atoms: the rewrite names `x` twice, so nested remainders by different divisors would
/// otherwise double in size at each level.
const MOD_INLINE: usize = 32;

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

    /// Python floor division, folded when both sides are constants. A positive constant
    /// divisor is normalized at once (always sound): multiples of it are split off the
    /// numerator (`(4 * x + 3) // 4 == x`), and `(x // a) // b == x // (a * b)` for
    /// positive constants `a`, `b`. Symbolic divisors stay opaque here; see
    /// [`Poly::normalize_divisions`], which needs every divisor to be `>= 1`.
    pub fn floordiv(&self, o: &Poly) -> Poly {
        if let Some(d) = o.as_const() {
            // A zero divisor reads as 1 (see `py_divmod`).
            if d == 1 || d == 0 {
                return self.clone();
            }
            if d != 0 {
                if let Some(n) = self.as_const() {
                    return Poly::c(n.div_euclid(d) - i128::from(d < 0 && n.rem_euclid(d) != 0));
                }
                if d > 0 {
                    return floordiv_pos(self, o, false);
                }
                // Floor division by a negative constant: `x // d == (-x) // (-d)`.
                return self.scale(-1).floordiv(&Poly::c(-d));
            }
        }
        Poly::atom(Atom::FloorDiv(Box::new(self.clone()), Box::new(o.clone())))
    }

    /// Python `%`. With a positive constant divisor it is eliminated at once:
    /// `x % d == x - d * (x // d)` (floor semantics), so `(x // d) * d + x % d` folds to `x`.
    pub fn modulo(&self, o: &Poly) -> Poly {
        if o.as_const() == Some(0) {
            return Poly::c(0);
        }
        if let (Some(n), Some(d)) = (self.as_const(), o.as_const()) {
            if d != 0 {
                let r = n.rem_euclid(d.abs());
                return Poly::c(if d < 0 && r != 0 { r - d.abs() } else { r });
            }
        }
        if o.as_const().is_some_and(|d| d > 0) && self.size_at_most(MOD_INLINE) {
            return self.sub(&o.mul(&self.floordiv(o)));
        }
        Poly::atom(Atom::Mod(Box::new(self.clone()), Box::new(o.clone())))
    }

    pub fn cdiv(&self, o: &Poly) -> Poly {
        if let (Some(n), Some(d)) = (self.as_const(), o.as_const()) {
            if d > 0 {
                return Poly::c((n + d - 1).div_euclid(d));
            }
        }
        if matches!(o.as_const(), Some(0 | 1)) {
            return self.clone(); // a zero divisor reads as 1 (see `py_divmod`)
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

    /// The coefficient of atom `a` when `p` is linear in it: every monomial holding `a`
    /// holds it once, and `a` occurs nowhere else (not inside compound atoms). The
    /// coefficient may itself be a polynomial (`b * grid(1)` has coefficient `grid(1)`).
    pub fn coeff_of(&self, a: &Atom) -> Option<Poly> {
        let mut k = Poly::zero();
        for (m, c) in self.terms.iter() {
            let here = m.iter().filter(|x| *x == a).count();
            if m.iter().any(|x| x != a && atom_contains(x, a)) || here > 1 {
                return None;
            }
            if here == 1 {
                let mut rest = Poly::c(*c);
                for x in m.iter().filter(|x| *x != a) {
                    rest = rest.mul(&Poly::atom(x.clone()));
                }
                k = k.add(&rest);
            }
        }
        Some(k)
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

impl Poly {
    /// `k * m` when the polynomial is one term (a constant is `k * []`).
    pub fn as_monomial(&self) -> Option<(i128, &Monomial)> {
        if self.terms.len() == 1 {
            let (m, c) = self.terms.iter().next()?;
            return Some((*c, m));
        }
        None
    }

    /// Does the polynomial hold at most `cap` atoms, counting those nested in compound
    /// atoms? (Stops counting past `cap`.)
    pub fn size_at_most(&self, cap: usize) -> bool {
        fn count(p: &Poly, left: &mut usize) -> bool {
            for m in p.terms.keys() {
                for a in m {
                    if *left == 0 {
                        return false;
                    }
                    *left -= 1;
                    if let Atom::FloorDiv(x, y)
                    | Atom::Mod(x, y)
                    | Atom::Cdiv(x, y)
                    | Atom::Min(x, y)
                    | Atom::Max(x, y) = a
                    {
                        if !count(x, left) || !count(y, left) {
                            return false;
                        }
                    }
                }
            }
            true
        }
        let mut left = cap;
        count(self, &mut left)
    }

    /// The same value with every `//`, `%` and `cdiv` that is not known at launch (it
    /// depends on a block id, a loop variable or a device value) in normal form, **assuming
    /// every divisor is `>= 1`**; the divisors relied on are pushed to `used` (the caller
    /// must discharge `1 <= d` for each, statically or at launch). The rules (floor
    /// semantics, `d >= 1`, `y` any integer polynomial):
    ///
    /// - `x % d == x - d * (x // d)`, so `(x // d) * d + x % d == x`;
    /// - `(d * y + z) // d == y + z // d` (multiples of a monomial divisor split off);
    /// - `(x // a) // b == x // (a * b)` (nested quotients merge), hence
    ///   `(x // a) % b == x // a - b * (x // (a * b))` and
    ///   `(x % (a * b)) // a == x // a - b * (x // (a * b))` reach one normal form;
    /// - `cdiv(x, d) == (x + d - 1) // d`.
    pub fn normalize_divisions(&self, used: &mut Vec<Poly>) -> Poly {
        if self.launch_known() {
            return self.clone();
        }
        let mut r = Poly::zero();
        for (m, c) in self.terms.iter() {
            let mut t = Poly::c(*c);
            for a in m {
                t = t.mul(&normalize_atom(a, used));
            }
            r = r.add(&t);
        }
        r
    }

    /// The value under `env` (Python semantics: floor division, the remainder takes the
    /// divisor's sign). `None` when an atom has no value, a divisor is 0, or an
    /// intermediate leaves 64 bits.
    pub fn eval(&self, env: &dyn Fn(&Atom) -> Option<i128>) -> Option<i128> {
        let mut total: i128 = 0;
        for (m, c) in self.terms.iter() {
            let mut prod = *c;
            for a in m {
                prod = prod.checked_mul(eval_atom(a, env)?)?;
            }
            total = total.checked_add(prod)?;
        }
        (total.abs() < LIMIT).then_some(total)
    }
}

/// Python's `a // b` and `a % b`, with the kernel language's definition for a zero
/// divisor: it reads as 1 (`a // 0 == a`, `a % 0 == 0`), as the lowering emits it, so that
/// no accepted kernel reaches Tile IR's undefined division by zero.
pub fn py_divmod(a: i128, b: i128) -> Option<(i128, i128)> {
    let b = if b == 0 { 1 } else { b };
    let q = a.checked_div(b)?;
    let r = a.checked_rem(b)?;
    if r != 0 && ((r < 0) != (b < 0)) {
        Some((q - 1, r + b))
    } else {
        Some((q, r))
    }
}

fn eval_atom(a: &Atom, env: &dyn Fn(&Atom) -> Option<i128>) -> Option<i128> {
    Some(match a {
        Atom::FloorDiv(x, y) => py_divmod(x.eval(env)?, y.eval(env)?)?.0,
        Atom::Mod(x, y) => py_divmod(x.eval(env)?, y.eval(env)?)?.1,
        Atom::Cdiv(x, y) => {
            let (q, r) = py_divmod(x.eval(env)?, y.eval(env)?)?;
            q + i128::from(r != 0)
        }
        Atom::Min(x, y) => x.eval(env)?.min(y.eval(env)?),
        Atom::Max(x, y) => x.eval(env)?.max(y.eval(env)?),
        leaf => env(leaf)?,
    })
}

fn normalize_atom(a: &Atom, used: &mut Vec<Poly>) -> Poly {
    let atom = Poly::atom(a.clone());
    if atom.launch_known() {
        return atom;
    }
    let divisor = |d: &Poly, used: &mut Vec<Poly>| {
        let d = d.normalize_divisions(used);
        if d.as_const().is_none_or(|v| v < 1) && !used.contains(&d) {
            used.push(d.clone());
        }
        d
    };
    match a {
        Atom::FloorDiv(x, d) => {
            let d = divisor(d, used);
            floordiv_pos(&x.normalize_divisions(used), &d, true)
        }
        Atom::Mod(x, d) => {
            let d = divisor(d, used);
            let x = x.normalize_divisions(used);
            if !x.size_at_most(MOD_INLINE) {
                return Poly::atom(Atom::Mod(Box::new(x), Box::new(d)));
            }
            x.sub(&d.mul(&floordiv_pos(&x, &d, true)))
        }
        Atom::Cdiv(x, d) => {
            let d = divisor(d, used);
            let x = x.normalize_divisions(used);
            floordiv_pos(&x.add(&d).sub(&Poly::c(1)), &d, true)
        }
        Atom::Min(x, y) => x
            .normalize_divisions(used)
            .pmin(&y.normalize_divisions(used)),
        Atom::Max(x, y) => x
            .normalize_divisions(used)
            .pmax(&y.normalize_divisions(used)),
        _ => atom,
    }
}

/// `m / by` for monomials (multisets of atoms): `None` unless `by` is contained in `m`.
fn monomial_div(m: &Monomial, by: &Monomial) -> Option<Monomial> {
    let mut rest = m.clone();
    for a in by {
        let i = rest.iter().position(|x| x == a)?;
        rest.remove(i);
    }
    Some(rest)
}

/// `x // d` for `d = k * m` with `k >= 1`: multiples of `d` in `x` are split off
/// (`(d * y + z) // d == y + z // d`), and a remainder that is exactly `y // a` merges
/// into `y // (a * d)`. Without `assume` only positive constant divisors are rewritten
/// (sound for every value); with it, symbolic monomial divisors too (the caller has
/// `d >= 1` and every nested divisor `>= 1`).
fn floordiv_pos(x: &Poly, d: &Poly, assume: bool) -> Poly {
    let opaque = || Poly::atom(Atom::FloorDiv(Box::new(x.clone()), Box::new(d.clone())));
    let Some((k, m)) = d.as_monomial() else {
        return opaque();
    };
    if k < 1 || (!assume && !m.is_empty()) {
        return opaque();
    }
    if k == 1 && m.is_empty() {
        return x.clone();
    }
    let mut q = Poly::zero();
    let mut rest = Poly::zero();
    for (mono, c) in x.terms.iter() {
        match monomial_div(mono, m) {
            Some(left) => {
                let mut t = Poly::c(c.div_euclid(k));
                for a in &left {
                    t = t.mul(&Poly::atom(a.clone()));
                }
                q = q.add(&t);
                if c.rem_euclid(k) != 0 {
                    rest.add_term(mono.clone(), c.rem_euclid(k));
                }
            }
            None => rest.add_term(mono.clone(), *c),
        }
    }
    if !rest.in_range() || !q.in_range() {
        return overflow();
    }
    if m.is_empty() {
        if let Some(r) = rest.as_const() {
            return q.add(&Poly::c(r.div_euclid(k)));
        }
    }
    if rest.terms.is_empty() {
        return q;
    }
    if let Some(Atom::FloorDiv(y, a)) = rest.as_atom() {
        if assume || a.as_const().is_some_and(|v| v >= 1) {
            // `a * d >= 1` follows from `a >= 1` and `d >= 1`: no new assumption.
            return q.add(&floordiv_pos(y, &a.mul(d), assume));
        }
    }
    q.add(&Poly::atom(Atom::FloorDiv(
        Box::new(rest),
        Box::new(d.clone()),
    )))
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
            Atom::FloorDiv(a, b) => write!(f, "{} // {}", paren(a), paren_rhs(b)),
            Atom::Mod(a, b) => write!(f, "{} % {}", paren(a), paren_rhs(b)),
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

/// The right operand of `//` or `%` (left-associative, like `*`): anything but a
/// non-negative constant or a plain atom needs parentheses (`x // (2 * y)`,
/// `x // (y % H)`).
fn paren_rhs(p: &Poly) -> String {
    let plain = p.as_const().is_some_and(|c| c >= 0)
        || p.as_atom()
            .is_some_and(|a| !matches!(a, Atom::FloorDiv(..) | Atom::Mod(..)));
    if plain {
        p.to_string()
    } else {
        format!("({p})")
    }
}

/// A product of atoms; `alone`: printed with no coefficient and no sign in front, so a
/// single `x // d` needs no parentheses (`2 * (x // d)`, `-(x // d)` do).
fn monomial_text(m: &Monomial, alone: bool) -> String {
    m.iter()
        .map(|a| match a {
            Atom::FloorDiv(..) | Atom::Mod(..) if m.len() > 1 || !alone => format!("({a})"),
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
                monomial_text(m, !(first && neg))
            } else {
                format!("{mag} * {}", monomial_text(m, false))
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

    /// Evaluate with block id 0 = `x` and `Const` H = `h`.
    fn at(p: &Poly, x: i128, h: i128) -> Option<i128> {
        p.eval(&|a| match a {
            Atom::BlockId(0) => Some(x),
            Atom::Const(n) if n == "H" => Some(h),
            _ => None,
        })
    }

    #[test]
    fn division_normal_forms() {
        let x = Poly::atom(Atom::BlockId(0));
        let h = a("H");
        // Positive constant divisors fold at once.
        let four = Poly::c(4);
        assert_eq!(x.floordiv(&four).mul(&four).add(&x.modulo(&four)), x);
        assert_eq!(x.scale(4).add(&Poly::c(3)).floordiv(&four), x);
        assert_eq!(
            x.floordiv(&Poly::c(2)).floordiv(&Poly::c(3)),
            x.floordiv(&Poly::c(6))
        );
        assert_eq!(x.modulo(&four).floordiv(&four), Poly::zero());
        // Symbolic divisors fold under `normalize_divisions`, which names what it assumed.
        let mut used = Vec::new();
        let folded = x
            .floordiv(&h)
            .mul(&h)
            .add(&x.modulo(&h))
            .normalize_divisions(&mut used);
        assert_eq!((folded, used), (x.clone(), vec![h.clone()]));
        let b = a("B");
        let mut used = Vec::new();
        let nested = x.floordiv(&h).floordiv(&b).normalize_divisions(&mut used);
        assert_eq!(
            nested,
            x.floordiv(&h.mul(&b)).normalize_divisions(&mut Vec::new())
        );
        // (x // H) % B and (x % (H * B)) // H reach one normal form.
        let mut used = Vec::new();
        let p = x.floordiv(&h).modulo(&b).normalize_divisions(&mut used);
        let q = x
            .modulo(&h.mul(&b))
            .floordiv(&h)
            .normalize_divisions(&mut used);
        assert_eq!(p, q);
        // Nested remainders by different divisors stay small.
        let mut deep = x.clone();
        for d in 2..60 {
            deep = deep.modulo(&Poly::c(d));
        }
        assert!(deep.size_at_most(200));
        assert_eq!(at(&deep, 1000, 1), Some((2..60).fold(1000, |v, d| v % d)));
    }

    #[test]
    fn normalization_preserves_values() {
        // Every expression below equals its normal form for x in 0..40 and H in 1..5.
        let x = Poly::atom(Atom::BlockId(0));
        let h = a("H");
        let exprs = [
            x.modulo(&h),
            x.floordiv(&h).floordiv(&Poly::c(2)),
            x.floordiv(&h).modulo(&Poly::c(3)),
            x.modulo(&h.scale(2)).floordiv(&h),
            x.cdiv(&h),
            x.add(&h).floordiv(&h),
            x.modulo(&h).scale(3).add(&x).floordiv(&h.scale(2)),
            x.floordiv(&h).pmin(&x.modulo(&Poly::c(5))),
        ];
        for e in &exprs {
            let n = e.normalize_divisions(&mut Vec::new());
            for xv in 0..40 {
                for hv in 1..5 {
                    assert_eq!(at(e, xv, hv), at(&n, xv, hv), "{e} vs {n} at x={xv} H={hv}");
                }
            }
        }
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
            crate::launch_pred::le_text(&g.sub(&Poly::c(1)), &x.sub(&Poly::c(1))),
            "grid(0) <= cdiv(dim(x, 0), BM)"
        );
        assert_eq!(crate::launch_pred::le_text(&g, &Poly::c(8)), "grid(0) <= 8");
        assert_eq!(
            crate::launch_pred::le_text(&Poly::c(0), &g.sub(&Poly::c(1))),
            "1 <= grid(0)"
        );
    }
}
