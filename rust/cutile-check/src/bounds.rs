//! Deciding `p >= 0` for a symbolic integer, and the rung of the ladder that decides it.
//!
//! The ladder (DESIGN.md §3, rule 5; cuTile Rust's `checks/mod.rs`), first rung that
//! decides a goal wins:
//! 1. **static**: the goal holds for every launch (block ids and loop variables replaced by
//!    their extremes, then the sign follows from facts: grid extents and tile counts are
//!    `>= 1`, tensor extents `>= 0`, shape `Const`s `>= 1`), or fails for every launch;
//! 2. **launch**: after the same replacement only launch-known atoms remain, so the goal
//!    becomes a predicate the host evaluates (fail-closed) before the launch;
//! 3. **device**: anything else (data-dependent values, `while` counters) is asserted in
//!    the kernel, or refused under `deny_in_kernel_checks`.

use crate::launch_pred;
use crate::sym::{Atom, Poly};
use cutile_facts::Pred;
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
            let k = q.linear_coeff(&v)?;
            let (lo, hi) = self.range_of(&v)?;
            let pick_hi = (k > 0) == maximize;
            q = q.substitute(&v, if pick_hi { &hi } else { &lo });
        }
        None
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
            Atom::Max(x, y) => Some(self.poly_lb(x)?.max(self.poly_lb(y)?)),
            _ => None,
        }
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

    /// Decide `lhs <= rhs` on the ladder.
    pub fn decide_le(&self, lhs: &Poly, rhs: &Poly) -> Rung {
        let d = rhs.sub(lhs);
        let Some(worst) = self.extreme(&d, false) else {
            return Rung::Device;
        };
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
}
