//! Rewrites that hold on every launch, applied to a store map before it is proved:
//! `(y * q + r) // y == q` and `(y * q + r) % y == r` when `0 <= r < y`; `min(x, y) == x`
//! when `x <= y`; `max(x, y) == y` likewise. They turn the usual spellings of the identity
//! (`b % num_blocks(0)`, `min(b, num_blocks(0) - 1)`, the digits of a linearized block id
//! `(lin // n1, lin % n1)`) back into block ids the provers know.

use crate::bounds::{Ranges, Rung};
use crate::sym::{Atom, Poly};

/// `p` with every rewrite that holds for all launches applied, innermost first.
pub fn simplify(p: &Poly, r: &Ranges) -> Poly {
    simplify_depth(p, r, 0, &mut None)
}

/// `simplify`, also applying the quotient and remainder rewrites whose range condition
/// `0 <= rem < y` is decided at launch (`b * s // s` is `b` when `1 <= s`): the rewritten
/// polynomial holds on the launches where the returned rung's predicates hold.
pub fn simplify_at_launch(p: &Poly, r: &Ranges) -> (Poly, Rung) {
    let mut cond = Some(Rung::Static);
    let out = simplify_depth(p, r, 0, &mut cond);
    (out, cond.unwrap_or(Rung::Static))
}

const MAX_DEPTH: usize = 8;

/// `cond`: `None` for rewrites that hold on every launch only; `Some(rung)` to accept
/// launch-decided ones too, gathering their predicates into `rung`.
fn simplify_depth(p: &Poly, r: &Ranges, depth: usize, cond: &mut Option<Rung>) -> Poly {
    if depth > MAX_DEPTH {
        return p.clone();
    }
    let mut out = Poly::zero();
    for (m, c) in p.terms.iter() {
        let mut term = Poly::c(*c);
        for a in m {
            term = term.mul(&simplify_atom(a, r, depth, cond));
        }
        out = out.add(&term);
    }
    out
}

fn simplify_atom(a: &Atom, r: &Ranges, depth: usize, cond: &mut Option<Rung>) -> Poly {
    let mut s = |x: &Poly| simplify_depth(x, r, depth + 1, cond);
    match a {
        Atom::FloorDiv(x, y) | Atom::Mod(x, y) => {
            let (x, y) = (s(x), s(y));
            // Without multiples of `y` to split off, the whole of `x` is the remainder:
            // `x // y == 0` and `x % y == x` when `0 <= x < y`.
            let split = split_multiples(&x, &y).or_else(|| Some((Poly::zero(), x.clone())));
            if let Some((q, rem)) = split {
                let (keep, drop) = if matches!(a, Atom::FloorDiv(..)) {
                    (q, rem.clone())
                } else {
                    (rem.clone(), q)
                };
                if droppable(&drop, r) {
                    match (r.decide_index(&rem, &y), cond.as_mut()) {
                        (Rung::Static, _) => return keep,
                        (l @ Rung::Launch(_), Some(c)) => {
                            *c = crate::bounds::worse(c.clone(), l);
                            return keep;
                        }
                        _ => {}
                    }
                }
            }
            if matches!(a, Atom::FloorDiv(..)) {
                x.floordiv(&y)
            } else {
                x.modulo(&y)
            }
        }
        Atom::Min(x, y) | Atom::Max(x, y) => {
            let (x, y) = (s(x), s(y));
            let x_le_y = r.decide_le(&x, &y) == Rung::Static;
            let y_le_x = r.decide_le(&y, &x) == Rung::Static;
            match (matches!(a, Atom::Min(..)), x_le_y, y_le_x) {
                (true, true, _) | (false, _, true) if droppable(&y, r) => x,
                (true, _, true) | (false, true, _) if droppable(&x, r) => y,
                (true, ..) => x.pmin(&y),
                (false, ..) => x.pmax(&y),
            }
        }
        Atom::Cdiv(x, y) => {
            let x = s(x);
            x.cdiv(&s(y))
        }
        a => Poly::atom(a.clone()),
    }
}

/// May the rewrite drop `p`? Not when it divides by something that can be zero or
/// negative: the division by 0 or -1 is then the guarded one (the divisor reads as 1), a
/// value the rewrite would lose.
fn droppable(p: &Poly, r: &Ranges) -> bool {
    !p.any_atom(&|a| match a {
        Atom::FloorDiv(_, y) | Atom::Mod(_, y) | Atom::Cdiv(_, y) => {
            r.poly_lb_pub(y).is_none_or(|v| v < 1)
        }
        _ => false,
    })
}

/// `x == y * q + rem` with `q` the sum of the terms of `x` that are multiples of the
/// monomial `y`, and `rem` the rest.
fn split_multiples(x: &Poly, y: &Poly) -> Option<(Poly, Poly)> {
    let (cy, ym) = y.as_monomial()?;
    if cy == 0 {
        return None;
    }
    let mut q = Poly::zero();
    let mut rem = Poly::zero();
    for (m, c) in x.terms.iter() {
        let mut left = m.clone();
        let mut divides = c % cy == 0;
        for a in ym {
            match left.iter().position(|b| b == a) {
                Some(i) if divides => {
                    left.remove(i);
                }
                _ => divides = false,
            }
        }
        let mut term = Poly::c(if divides { c / cy } else { *c });
        let atoms = if divides { &left } else { m };
        for a in atoms {
            term = term.mul(&Poly::atom(a.clone()));
        }
        if divides {
            q = q.add(&term);
        } else {
            rem = rem.add(&term);
        }
    }
    Some((q, rem))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges() -> Ranges {
        Ranges {
            grid: [
                Poly::atom(Atom::Grid(0)),
                Poly::atom(Atom::Grid(1)),
                Poly::c(1),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn identity_spellings_become_block_ids() {
        let r = ranges();
        let (b0, b1) = (Poly::atom(Atom::BlockId(0)), Poly::atom(Atom::BlockId(1)));
        let (g0, g1) = (Poly::atom(Atom::Grid(0)), Poly::atom(Atom::Grid(1)));
        assert_eq!(simplify(&b0.modulo(&g0), &r), b0);
        assert_eq!(simplify(&b0.pmin(&g0.sub(&Poly::c(1))), &r), b0);
        let lin = b0.mul(&g1).add(&b1);
        assert_eq!(simplify(&lin.floordiv(&g1), &r), b0);
        assert_eq!(simplify(&lin.modulo(&g1), &r), b1);
        // not the identity: stays
        let shifted = b0.add(&Poly::c(1)).modulo(&g0);
        assert_eq!(simplify(&shifted, &r), shifted);
    }
}
