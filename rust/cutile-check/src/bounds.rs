//! Deciding `p >= 0` for a symbolic integer, and the rung of the ladder that decides it.
//!
//! The ladder (docs/design.md §3, rule 5; cuTile Rust's `checks/mod.rs`), first rung that
//! decides a goal wins:
//! 1. **static**: the goal holds for every launch (block ids and loop variables replaced by
//!    their extremes, then the sign follows from facts: grid extents and tile counts are
//!    `>= 1`, tensor extents `>= 0`, shape `Const`s `>= 1`), or fails for every launch;
//! 2. **launch**: after the same replacement only launch-known atoms remain, so the goal
//!    becomes a predicate the host evaluates (fail-closed) before the launch;
//! 3. **device**: anything else (data-dependent values, `while` counters) is asserted in
//!    the kernel, or refused under `deny_in_kernel_checks`.

use crate::launch_pred;
use crate::sym::{Atom, Monomial, Poly};
use cutile_facts::{CmpOp, Pred};
use std::collections::{HashMap, HashSet};

/// The ranges of the variables a goal may mention.
#[derive(Debug, Default, Clone)]
pub struct Ranges {
    /// Loop variable id -> (first value, last value), inclusive.
    pub loops: HashMap<u32, (Poly, Poly)>,
    /// `Const` parameters that name a shape item (hence `>= 1`).
    pub shape_consts: HashSet<String>,
    /// Grid extent along each axis (`grid(k)`, or `1` past the partition rank).
    pub grid: [Poly; 3],
    /// Launch-known atoms taken as `>= 1` because a launch predicate says so (divisors of
    /// `//` and `%` in a store index; `prover.rs`).
    pub positive: HashSet<Atom>,
    /// The bit width of each integer scalar parameter (its range).
    pub scalar_bits: HashMap<String, u8>,
    /// Device results known to fit their type (under launch conditions gathered with
    /// them), by opaque id: their range (`Checker::unwrap_index`).
    pub bounded: HashMap<u32, (i128, i128)>,
    /// The polynomial each of those results was computed from.
    pub exact: HashMap<u32, Poly>,
    /// Products of `Const`s that met a device value (`k * [A, B]` for `(k*A*B) * x`): the
    /// device received them as one 32-bit constant (`width::materialized`).
    pub materialized: Vec<(i128, Monomial)>,
    /// Lower bounds of output extents from the launch rule `grid(k) == cdiv(dim(z, k),
    /// T_k)` (regular launches; a launch with an empty output runs nothing): `dim(z, k) >=
    /// (grid(k) - 1) * T_k + 1`, and the weaker `dim(z, k) >= grid(k)` that needs no
    /// factoring. Empty for kernels with `iter_indices()`, whose grid is a block count.
    pub extent_floors: Vec<ExtentFloor>,
}

/// What the launch rule says of one output extent `dim(z, k)` with tile `T_k`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtentFloor {
    pub dim: Atom,
    /// `(grid(k) - 1) * T_k + 1` and the weaker `grid(k)`.
    pub floors: [Poly; 2],
    /// `grid(k) * T_k`.
    pub ceiling: Poly,
}

impl Ranges {
    /// Polynomials that are `>= 0` on every launch that runs (the launch rule for output
    /// extents): a counterexample search keeps to launches that can happen.
    pub fn launch_constraints(&self) -> Vec<Poly> {
        self.extent_floors
            .iter()
            .flat_map(|f| {
                let d = Poly::atom(f.dim.clone());
                [d.sub(&f.floors[0]), f.ceiling.sub(&d)]
            })
            .collect()
    }
}

/// The outcome of a goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rung {
    Static,
    /// Fails for every launch.
    Refuted,
    /// Decided at launch by this predicate.
    Launch(Pred),
    Device,
}

impl Ranges {
    /// The inclusive range of a block id or loop variable.
    fn range_of(&self, a: &Atom) -> Option<(Poly, Poly)> {
        match a {
            Atom::BlockId(k) => {
                let g = self.grid.get(*k as usize)?.clone();
                Some((Poly::zero(), g.sub(&Poly::c(1))))
            }
            Atom::Loop(id) => self.loops.get(id).cloned(),
            _ => None,
        }
    }

    /// Replace block ids and loop variables by the extreme that minimizes `p` (or
    /// maximizes it, with `maximize`). `None` when a variable is not linear with a constant
    /// coefficient or has no known range.
    pub fn extreme(&self, p: &Poly, maximize: bool) -> Option<Poly> {
        let mut q = p.clone();
        for _ in 0..16 {
            let mut var = None;
            q.visit_atoms(&mut |a| {
                if var.is_none() && matches!(a, Atom::BlockId(_) | Atom::Loop(_)) {
                    var = Some(a.clone());
                }
            });
            let Some(v) = var else {
                return Some(q);
            };
            // A constant coefficient, or a launch-known one of known sign (`b * grid(1)`).
            let positive = match q.linear_coeff(&v) {
                Some(k) => k > 0,
                None => {
                    let k = q.coeff_of(&v)?;
                    if !k.launch_known() {
                        return None;
                    }
                    if self.poly_lb(&k).is_some_and(|lb| lb >= 0) {
                        true
                    } else if self.poly_lb(&k.scale(-1)).is_some_and(|lb| lb >= 0) {
                        false
                    } else {
                        // A coefficient of unknown sign (a runtime scalar): `k * v` is
                        // extreme at one end of v's range, whichever the launch says.
                        let (lo, hi) = self.range_of(&v)?;
                        let rest = q.substitute(&v, &Poly::zero());
                        let (at_lo, at_hi) = (k.mul(&lo), k.mul(&hi));
                        let end = if maximize {
                            at_lo.pmax(&at_hi)
                        } else {
                            at_lo.pmin(&at_hi)
                        };
                        q = rest.add(&end);
                        continue;
                    }
                }
            };
            let (lo, hi) = self.range_of(&v)?;
            let pick_hi = positive == maximize;
            q = q.substitute(&v, if pick_hi { &hi } else { &lo });
        }
        None
    }

    /// Like `extreme`, but a `min(a, b)` (or `max`) of values with block ids or loop
    /// variables may be replaced by one operand where that bounds it in the direction
    /// asked (`min(a, b) <= a` when maximizing, `max(a, b) >= a` when minimizing): the
    /// result bounds `p` (an upper bound when maximizing) without being its extreme, so a
    /// goal it fails is not refuted (the callers fall back to a device check).
    pub fn extreme_bound(&self, p: &Poly, maximize: bool) -> Option<Poly> {
        let has_var = |x: &Poly| x.any_atom(&|a| matches!(a, Atom::BlockId(_) | Atom::Loop(_)));
        let mut q = p.clone();
        for _ in 0..16 {
            if let Some(r) = self.extreme(&q, maximize) {
                // An extreme that still holds a device value inside a `min`/`max` (a
                // product that may wrap) is bounded through that `min`/`max` below.
                let device_minmax = r.any_atom(&|a| {
                    matches!(a, Atom::Min(x, y) | Atom::Max(x, y)
                        if !x.launch_known() || !y.launch_known())
                });
                if !device_minmax {
                    return Some(r);
                }
                // Block ids and loop variables are gone (or were never there), but a
                // device value's `min`/`max` is left: bound through it below.
                q = r;
            }
            let mut found = None;
            q.visit_atoms(&mut |a| {
                if found.is_none() {
                    if let Atom::Min(x, y) | Atom::Max(x, y) = a {
                        if !x.launch_known() || !y.launch_known() {
                            found = Some(a.clone());
                        }
                    }
                }
            });
            if let Some(a) = found {
                let k = q.linear_coeff(&a)?;
                let upper = (k > 0) == maximize;
                let by = match (&a, upper) {
                    // min(x, y) <= x (upper bound), max(x, y) >= x (lower bound)
                    (Atom::Min(x, y), true) | (Atom::Max(x, y), false) => {
                        // the operand known at launch (no block id, loop variable or
                        // device-only value, e.g. a product that may wrap), if one is
                        if (!x.launch_known() && y.launch_known()) || (has_var(x) && !has_var(y)) {
                            (**y).clone()
                        } else {
                            (**x).clone()
                        }
                    }
                    // min(x, y) >= min(lb x, lb y), max(x, y) <= max(ub x, ub y)
                    (Atom::Min(x, y), false) | (Atom::Max(x, y), true) => {
                        let bx = self.extreme_bound(x, upper)?;
                        let by = self.extreme_bound(y, upper)?;
                        if upper {
                            bx.pmax(&by)
                        } else {
                            bx.pmin(&by)
                        }
                    }
                    _ => return None,
                };
                q = q.substitute(&a, &by);
                continue;
            }
            if let Some(r) = self.bound_quotients(&q, maximize) {
                q = r;
                continue;
            }
            // A block id or loop variable with a constant coefficient: its end of the range
            // (whose bound may hold the next `min`).
            let mut var = None;
            q.visit_atoms(&mut |a| {
                if var.is_none() && matches!(a, Atom::BlockId(_) | Atom::Loop(_)) {
                    var = Some(a.clone());
                }
            });
            let v = var?;
            let k = q.linear_coeff(&v)?;
            let (lo, hi) = self.range_of(&v)?;
            q = q.substitute(&v, if (k > 0) == maximize { &hi } else { &lo });
        }
        None
    }

    /// `p` with each quotient term `k * (x // y)` or `k * cdiv(x, y)` whose `x` holds a
    /// block id or loop variable, and whose divisor `y` is launch-known and `>= 1`,
    /// replaced by the quotient of `x`'s bound: a quotient by a positive divisor is
    /// nondecreasing in `x`, so it is bounded in the direction the sign of `k` asks
    /// (`(b * BM) // BN >= 0 // BN` when minimizing). `None` when there is no such term.
    fn bound_quotients(&self, p: &Poly, maximize: bool) -> Option<Poly> {
        let has_var = |x: &Poly| x.any_atom(&|a| matches!(a, Atom::BlockId(_) | Atom::Loop(_)));
        let mut out = Poly::zero();
        let mut changed = false;
        for (m, c) in p.terms.iter() {
            if let [a @ (Atom::FloorDiv(x, y) | Atom::Cdiv(x, y))] = m.as_slice() {
                if has_var(x) && y.launch_known() && self.poly_lb(y).is_some_and(|v| v >= 1) {
                    let xb = self.extreme_bound(x, (*c > 0) == maximize)?;
                    let quot = if matches!(a, Atom::FloorDiv(..)) {
                        xb.floordiv(y)
                    } else {
                        xb.cdiv(y)
                    };
                    out = out.add(&quot.scale(*c));
                    changed = true;
                    continue;
                }
            }
            let mut term = Poly::c(*c);
            for a in m {
                term = term.mul(&Poly::atom(a.clone()));
            }
            out = out.add(&term);
        }
        changed.then_some(out)
    }

    /// A lower bound of an atom known from facts, if any.
    pub fn atom_lb(&self, a: &Atom) -> Option<i128> {
        match a {
            Atom::Grid(_) | Atom::Tiles(..) => Some(1),
            Atom::Dim(..) => Some(0),
            Atom::Const(n) if self.shape_consts.contains(n) => Some(1),
            a if self.positive.contains(a) => Some(1),
            // cdiv(x, y) >= 1 for x >= 1, y >= 1.
            Atom::Cdiv(x, y) if self.poly_lb(x)? >= 1 && self.poly_lb(y)? >= 1 => Some(1),
            Atom::Cdiv(x, y) | Atom::FloorDiv(x, y) | Atom::Mod(x, y) => {
                (self.poly_lb(x)? >= 0 && self.poly_lb(y)? >= 1).then_some(0)
            }
            Atom::Min(x, y) => Some(self.poly_lb(x)?.min(self.poly_lb(y)?)),
            // max(x, y) >= y whatever x is (a value loaded on the device, say): one known
            // lower bound is enough, as one known upper bound is for a `min` (`atom_ub`).
            Atom::Max(x, y) => match (self.poly_lb(x), self.poly_lb(y)) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
            _ => None,
        }
    }

    /// An upper bound of an atom known from the launch rules (grid and extent limits) and
    /// the parameters' types, if any.
    pub fn atom_ub(&self, a: &Atom) -> Option<i128> {
        use crate::width::{signed_range, DIM_MAX, GRID_MAX};
        let nonneg = |x: &Poly| self.poly_lb(x).is_some_and(|lb| lb >= 0);
        let pos = |y: &Poly| self.poly_lb(y).is_some_and(|lb| lb >= 1);
        match a {
            Atom::Grid(k) => GRID_MAX.get(usize::from(*k)).copied(),
            Atom::Dim(..) | Atom::Tiles(..) => Some(DIM_MAX),
            Atom::Scalar(n) => self.scalar_bits.get(n).map(|b| signed_range(*b).1),
            // int `Const`s are 32-bit (the launcher refuses others, CT6103)
            Atom::Const(_) => Some(signed_range(crate::width::INDEX_BITS).1),
            Atom::Opaque(id) => self.bounded.get(id).map(|r| r.1),
            // x // y, cdiv(x, y) <= x for x >= 0, y >= 1.
            Atom::FloorDiv(x, y) | Atom::Cdiv(x, y) if nonneg(x) && pos(y) => self.poly_ub(x),
            Atom::Mod(x, y) if pos(y) => Some(self.poly_ub(y)? - 1),
            Atom::Min(x, y) => match (self.poly_ub(x), self.poly_ub(y)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            Atom::Max(x, y) => Some(self.poly_ub(x)?.max(self.poly_ub(y)?)),
            _ => None,
        }
    }

    /// A lower bound of an atom from its range alone (scalars by their type).
    fn atom_lb_any(&self, a: &Atom) -> Option<i128> {
        match a {
            Atom::Scalar(n) => self
                .scalar_bits
                .get(n)
                .map(|b| crate::width::signed_range(*b).0),
            Atom::Opaque(id) => self.bounded.get(id).map(|r| r.0),
            Atom::Const(_) => Some(
                self.atom_lb(a)
                    .unwrap_or(crate::width::signed_range(crate::width::INDEX_BITS).0),
            ),
            a => self.atom_lb(a),
        }
    }

    /// An upper bound of a launch-known polynomial: each term bounded by its atoms'
    /// bounds (products of non-negative atoms; a single atom may be signed).
    pub fn poly_ub(&self, p: &Poly) -> Option<i128> {
        let mut total: i128 = 0;
        for (m, c) in p.terms.iter() {
            let term = match m.as_slice() {
                [] => *c,
                [a] if *c > 0 => c.checked_mul(self.atom_ub(a)?)?,
                [a] => c.checked_mul(self.atom_lb_any(a)?)?,
                atoms => {
                    // A product: every factor non-negative with an upper bound.
                    let mut hi: i128 = 1;
                    let mut lo: i128 = 1;
                    for a in atoms {
                        if self.atom_lb(a)? < 0 {
                            return None;
                        }
                        hi = hi.checked_mul(self.atom_ub(a)?)?;
                        lo = lo.checked_mul(self.atom_lb(a)?)?;
                    }
                    if *c > 0 {
                        c.checked_mul(hi)?
                    } else {
                        c.checked_mul(lo)?
                    }
                }
            };
            total = total.checked_add(term)?;
        }
        Some(total)
    }

    /// Does `q` (over block ids and loop variables) fit a signed `bits`-bit integer for
    /// every block of every launch? By intervals first (with divisors assumed `>= 1` at
    /// launch where they must be), then by launch-known extremes.
    pub fn decide_fits(&self, q: &Poly, bits: u8) -> Rung {
        self.fits_assuming(q, bits).0
    }

    /// `decide_fits`, and the atoms it assumed `>= 1` (by launch predicates in the rung).
    pub fn fits_assuming(&self, q: &Poly, bits: u8) -> (Rung, Vec<Atom>) {
        let (lo, hi) = crate::width::signed_range(bits);
        if let Some(v) = q.as_const() {
            let r = if (lo..=hi).contains(&v) {
                Rung::Static
            } else {
                Rung::Refuted
            };
            return (r, Vec::new());
        }
        let fits =
            |r: &Ranges| crate::width::interval(q, r).is_some_and(|(a, b)| lo <= a && b <= hi);
        if fits(self) {
            return (Rung::Static, Vec::new());
        }
        // Divisors (`x // H`, `x % H`) that are launch-known atoms: the device divides by
        // them, so they must be `>= 1` anyway; assume it, decided at launch.
        let mut assumed = self.clone();
        let mut pre = Rung::Static;
        let mut taken: Vec<Atom> = Vec::new();
        let mut divisors: Vec<Atom> = Vec::new();
        q.visit_atoms(&mut |a| {
            if let Atom::FloorDiv(_, y) | Atom::Mod(_, y) | Atom::Cdiv(_, y) = a {
                let y = match y.as_atom() {
                    Some(Atom::Opaque(id)) => self.exact.get(id).unwrap_or(y),
                    _ => y,
                };
                // A product divisor (`n * G`): each factor must be `>= 1`.
                if let Some((c, m)) = y.as_monomial() {
                    if c >= 1 {
                        for d in m {
                            if !divisors.contains(d) {
                                divisors.push(d.clone());
                            }
                        }
                    }
                }
            }
        });
        for d in divisors {
            if self.atom_lb(&d).is_some_and(|v| v >= 1) {
                continue;
            }
            let p = Poly::atom(d.clone());
            if !p.launch_known() {
                continue;
            }
            pre = worse(pre, launch_le(&Poly::c(1), &p));
            assumed.positive.insert(d.clone());
            taken.push(d);
        }
        if pre != Rung::Static && fits(&assumed) {
            return (pre, taken);
        }
        let (Some(min), Some(max)) = (self.extreme(q, false), self.extreme(q, true)) else {
            // Digits of block ids: bounded on the digit box (`digits.rs`), as an index
            // into the type's range.
            let r = self.decide_index(&q.sub(&Poly::c(lo)), &Poly::c(hi - lo + 1));
            return (r, Vec::new());
        };
        // The type's limits compared as they are: moving them across (`launch_le`) would
        // take polynomial coefficients past their range for 64-bit types.
        let against = |l: &Poly, r: &Poly| {
            launch_pred::compare(l, CmpOp::Le, r, format!("{l} <= {r}"))
                .map_or(Rung::Device, Rung::Launch)
        };
        let low = if self.poly_lb(&min).is_some_and(|v| v >= lo)
            || self.poly_lb_any(&min).is_some_and(|v| v >= lo)
        {
            Rung::Static
        } else if bits > 32 {
            against(&Poly::c(lo), &min)
        } else {
            launch_le(&Poly::c(lo), &min)
        };
        let high = if self.poly_ub(&max).is_some_and(|v| v <= hi) {
            Rung::Static
        } else if bits > 32 {
            against(&max, &Poly::c(hi))
        } else {
            launch_le(&max, &Poly::c(hi))
        };
        (worse(low, high), Vec::new())
    }

    /// A lower bound of a launch-known polynomial, signed atoms (scalars) included.
    fn poly_lb_any(&self, p: &Poly) -> Option<i128> {
        let mut total: i128 = 0;
        for (m, c) in p.terms.iter() {
            let term = match m.as_slice() {
                [] => *c,
                [a] if *c > 0 => c.checked_mul(self.atom_lb_any(a)?)?,
                [a] => c.checked_mul(self.atom_ub(a)?)?,
                _ => return None,
            };
            total = total.checked_add(term)?;
        }
        Some(total)
    }

    /// `poly_lb` for other modules.
    pub fn poly_lb_pub(&self, p: &Poly) -> Option<i128> {
        self.poly_lb(p)
    }

    /// A lower bound of a launch-known polynomial whose non-constant terms all have
    /// positive coefficients over atoms with non-negative lower bounds.
    fn poly_lb(&self, p: &Poly) -> Option<i128> {
        let mut total: i128 = 0;
        for (m, c) in p.terms.iter() {
            if m.is_empty() {
                total = total.checked_add(*c)?;
                continue;
            }
            if *c < 0 {
                return None;
            }
            let mut prod: i128 = 1;
            for a in m {
                let lb = self.atom_lb(a)?;
                if lb < 0 {
                    return None;
                }
                prod = prod.checked_mul(lb)?;
            }
            total = total.checked_add(c.checked_mul(prod)?)?;
        }
        Some(total)
    }

    /// `p >= 0` after replacing each output extent that `p` increases with (a positive
    /// linear coefficient) by a lower bound from the launch rule (`extent_floors`).
    fn holds_by_extent_floors(&self, p: &Poly) -> bool {
        for pick in 0..2 {
            let mut q = p.clone();
            for f in &self.extent_floors {
                if q.linear_coeff(&f.dim).is_some_and(|c| c > 0) {
                    q = q.substitute(&f.dim, &f.floors[pick]);
                }
            }
            if &q != p && self.poly_lb(&q).is_some_and(|lb| lb >= 0) {
                return true;
            }
        }
        false
    }

    /// Decide `lhs <= rhs` on the ladder.
    pub fn decide_le(&self, lhs: &Poly, rhs: &Poly) -> Rung {
        let d = rhs.sub(lhs);
        let Some(worst) = self.extreme(&d, false) else {
            // A bound of the worst case through a `min`/`max` of block-dependent values
            // can prove the goal (static or at launch) but never refute it.
            return match self.extreme_bound(&d, false) {
                Some(bound) => match self.decide_worst(&bound) {
                    Rung::Refuted => Rung::Device,
                    r => r,
                },
                None => Rung::Device,
            };
        };
        self.decide_worst(&worst)
    }

    /// Decide `worst >= 0` for the worst case of a goal (block ids and loop variables
    /// already replaced).
    fn decide_worst(&self, worst: &Poly) -> Rung {
        let worst = worst.clone();
        if let Some(c) = worst.as_const() {
            // Negative at an extreme of the block ids / loop ranges: an access out of
            // bounds that some block makes on every launch.
            return if c >= 0 { Rung::Static } else { Rung::Refuted };
        }
        if self.poly_lb(&worst).is_some_and(|lb| lb >= 0) {
            return Rung::Static;
        }
        if self.poly_lb(&worst.scale(-1)).is_some_and(|lb| lb > 0) {
            // -worst >= lb > 0: negative for every launch.
            return Rung::Refuted;
        }
        if self.holds_by_extent_floors(&worst) {
            return Rung::Static;
        }
        if worst.any_atom(&|a| matches!(a, Atom::Opaque(_))) {
            return Rung::Device;
        }
        // Split the worst case back into "lhs <= rhs" form for the predicate text.
        launch_le(&Poly::zero(), &worst)
    }

    /// Decide `0 <= p <= bound - 1` (one tile index against a tile count): the worse of
    /// the two goals, with both predicates joined by `&&` when both go to launch.
    pub fn decide_index(&self, p: &Poly, count: &Poly) -> Rung {
        // Digits of block ids (`b // H`, `b % H`) are not linear: bound them on the digit
        // box (`digits.rs`) before giving up to a device check.
        let divides = |a: &Atom| matches!(a, Atom::FloorDiv(..) | Atom::Mod(..) | Atom::Cdiv(..));
        if p.any_atom(&divides)
            && (self.extreme(p, false).is_none() || self.extreme(p, true).is_none())
        {
            if let Some(r) = crate::digits::decide_index(self, p, count) {
                return r;
            }
        }
        let lo = self.decide_le(&Poly::zero(), p);
        let hi = match self.extreme(p, true) {
            Some(max) => self.decide_le(&max, &count.sub(&Poly::c(1))),
            None => Rung::Device,
        };
        let hi = match hi {
            // Re-express the upper predicate from the maximum for a readable text.
            Rung::Launch(_) => match self.extreme(p, true) {
                Some(max) => launch_le(&max, &count.sub(&Poly::c(1))),
                None => Rung::Device,
            },
            // `j < min(a, f(block))`: bounded through the `min` (proves, never refutes).
            Rung::Device => match self.extreme_bound(p, true) {
                Some(max) => match self.decide_le(&max, &count.sub(&Poly::c(1))) {
                    Rung::Launch(_) => launch_le(&max, &count.sub(&Poly::c(1))),
                    Rung::Refuted => Rung::Device,
                    r => r,
                },
                None => Rung::Device,
            },
            r => r,
        };
        let lo = match lo {
            Rung::Launch(_) => match self.extreme(p, false) {
                Some(min) => launch_le(&Poly::zero(), &min),
                None => Rung::Device,
            },
            r => r,
        };
        worse(lo, hi)
    }
}

/// `lhs <= rhs` decided at launch; on the device when a side is not launch-known.
pub fn launch_le(lhs: &Poly, rhs: &Poly) -> Rung {
    launch_pred::le(lhs, rhs).map_or(Rung::Device, Rung::Launch)
}

/// The weaker of two outcomes (refuted < device < launch < static), joining predicates.
pub fn worse(a: Rung, b: Rung) -> Rung {
    use Rung::*;
    match (a, b) {
        (Refuted, _) | (_, Refuted) => Refuted,
        (Device, _) | (_, Device) => Device,
        (Launch(x), Launch(y)) => Launch(x.and(y)),
        (Launch(x), Static) | (Static, Launch(x)) => Launch(x),
        (Static, Static) => Static,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges() -> Ranges {
        let mut r = Ranges {
            grid: [
                Poly::atom(Atom::Grid(0)),
                Poly::atom(Atom::Grid(1)),
                Poly::c(1),
            ],
            ..Default::default()
        };
        r.shape_consts.insert("BM".into());
        r
    }

    #[test]
    fn block_id_against_own_grid_is_static() {
        let r = ranges();
        let b0 = Poly::atom(Atom::BlockId(0));
        assert_eq!(
            r.decide_index(&b0, &Poly::atom(Atom::Grid(0))),
            Rung::Static
        );
        let plus1 = b0.add(&Poly::c(1));
        assert_eq!(
            r.decide_index(&plus1, &Poly::atom(Atom::Grid(0))),
            Rung::Refuted
        );
    }

    #[test]
    fn cross_tensor_tie_goes_to_launch() {
        let r = ranges();
        let b0 = Poly::atom(Atom::BlockId(0));
        let count =
            Poly::atom(Atom::Dim("x".into(), 0)).cdiv(&Poly::atom(Atom::Const("BM".into())));
        match r.decide_index(&b0, &count) {
            Rung::Launch(p) => assert_eq!(p.text, "grid(0) <= cdiv(dim(x, 0), BM)"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn loop_over_the_same_count_is_static() {
        let mut r = ranges();
        let count =
            Poly::atom(Atom::Dim("x".into(), 1)).cdiv(&Poly::atom(Atom::Const("BM".into())));
        r.loops.insert(7, (Poly::zero(), count.sub(&Poly::c(1))));
        assert_eq!(
            r.decide_index(&Poly::atom(Atom::Loop(7)), &count),
            Rung::Static
        );
        assert_eq!(
            r.decide_index(&Poly::atom(Atom::Opaque(1)), &count),
            Rung::Device
        );
    }

    #[test]
    fn loop_to_a_min_with_the_block_id_is_bounded_through_the_min() {
        // `for j in range(min(cdiv(n, BN), cdiv((b + 1) * BM, BN)))` (causal attention)
        let mut r = ranges();
        r.shape_consts.insert("BN".into());
        let cd = |x: Poly, y: &str| x.cdiv(&Poly::atom(Atom::Const(y.into())));
        let count = cd(Poly::atom(Atom::Dim("k".into(), 1)), "BN");
        let causal = cd(
            Poly::atom(Atom::BlockId(1))
                .add(&Poly::c(1))
                .mul(&Poly::atom(Atom::Const("BM".into()))),
            "BN",
        );
        r.loops
            .insert(7, (Poly::zero(), count.pmin(&causal).sub(&Poly::c(1))));
        let j = Poly::atom(Atom::Loop(7));
        assert_eq!(r.decide_index(&j, &count), Rung::Static);
        // one past the end is not refuted through a bound: it goes to the device
        assert_eq!(r.decide_index(&j.add(&Poly::c(1)), &count), Rung::Device);
        // `for j in range(min(n // BN, b), ...)`: min(x, y) >= min(lb x, lb y) >= 0
        let floor =
            Poly::atom(Atom::Dim("k".into(), 1)).floordiv(&Poly::atom(Atom::Const("BN".into())));
        let start = floor.pmin(&Poly::atom(Atom::BlockId(1)));
        r.loops.insert(8, (start, count.sub(&Poly::c(1))));
        assert_eq!(
            r.decide_index(&Poly::atom(Atom::Loop(8)), &count),
            Rung::Static
        );
    }
    #[test]
    fn loop_from_a_min_with_a_block_quotient_is_bounded_through_the_quotient() {
        // `for j in range(min(n // BN, (b * BM) // BN), ...)` (causal attention, BM != BN):
        // the quotient is nondecreasing in `b * BM`, so it is >= 0 // BN = 0
        let mut r = ranges();
        r.shape_consts.insert("BN".into());
        r.shape_consts.insert("BM".into());
        let bn = Poly::atom(Atom::Const("BN".into()));
        let count = Poly::atom(Atom::Dim("k".into(), 1)).cdiv(&bn);
        let floor = Poly::atom(Atom::Dim("k".into(), 1)).floordiv(&bn);
        let first_row = Poly::atom(Atom::BlockId(1)).mul(&Poly::atom(Atom::Const("BM".into())));
        let start = floor.pmin(&first_row.floordiv(&bn));
        r.loops.insert(9, (start.clone(), count.sub(&Poly::c(1))));
        assert_eq!(
            r.decide_index(&Poly::atom(Atom::Loop(9)), &count),
            Rung::Static
        );
        // the unmasked loop `range(start)`: below `n // BN` through the `min`
        r.loops.insert(10, (Poly::zero(), start.sub(&Poly::c(1))));
        assert!(matches!(
            r.decide_index(&Poly::atom(Atom::Loop(10)), &count),
            Rung::Launch(_) | Rung::Static
        ));
        // a quotient subtracted (`- (b * BM) // BN`) is bounded the other way: not >= 0
        r.loops.insert(
            11,
            (floor.sub(&first_row.floordiv(&bn)), count.sub(&Poly::c(1))),
        );
        assert_eq!(
            r.decide_index(&Poly::atom(Atom::Loop(11)), &count),
            Rung::Device
        );
    }

    #[test]
    fn a_device_value_inside_a_min_is_bounded_through_the_other_operand() {
        // `stop = min(cdiv(n, BN), cdiv(v, BN))` with `v = (b + 1) * BM` a product that
        // may wrap (opaque): `min(x, v') <= x` whatever the device computed for `v'`
        let mut r = ranges();
        r.shape_consts.insert("BN".into());
        let bn = Poly::atom(Atom::Const("BN".into()));
        let count = Poly::atom(Atom::Dim("k".into(), 1)).cdiv(&bn);
        let wrapped = Poly::atom(Atom::Opaque(3)).cdiv(&bn);
        r.loops
            .insert(12, (Poly::zero(), count.pmin(&wrapped).sub(&Poly::c(1))));
        assert_eq!(
            r.decide_index(&Poly::atom(Atom::Loop(12)), &count),
            Rung::Static
        );
        // but a loop that starts at the device value is not bounded below
        r.loops.insert(13, (wrapped, count.sub(&Poly::c(1))));
        assert_eq!(
            r.decide_index(&Poly::atom(Atom::Loop(13)), &count),
            Rung::Device
        );
    }

    #[test]
    fn a_loaded_index_clamped_by_min_and_max_needs_no_device_check() {
        // `r = max(min(t - b * BM, BM - 1), 0)` with `t` loaded on the device: inside
        // `[0, BM)` whatever `t` is; without the `max` it may be negative (device check)
        let r = ranges();
        let bm = Poly::atom(Atom::Const("BM".into()));
        let t = Poly::atom(Atom::Opaque(5));
        let off = t.sub(&Poly::atom(Atom::BlockId(1)).mul(&bm));
        let upper = off.pmin(&bm.sub(&Poly::c(1)));
        // (static, or at launch where the facts cannot fold `max(0, BM - 1) + 1 <= BM`)
        let clamped = r.decide_index(&upper.pmax(&Poly::zero()), &bm);
        assert!(
            matches!(clamped, Rung::Static | Rung::Launch(_)),
            "{clamped:?}"
        );
        assert_eq!(r.decide_index(&upper, &bm), Rung::Device);
        // clamped below only: the upper end stays a device check
        assert_eq!(r.decide_index(&t.pmax(&Poly::zero()), &bm), Rung::Device);
        // a clamp to the wrong end is not proved (its launch predicate fails)
        let past = t.pmin(&bm).pmax(&Poly::zero());
        assert_ne!(r.decide_index(&past, &bm), Rung::Static);
    }
}
