//! Store maps that are a permutation of the block axes with a bijection on each: component
//! `k` reads one block axis `j` alone, each axis read by one component, as
//!
//! - `block_id(j)`, or its reversal `grid(j) - 1 - block_id(j)`;
//! - `(a * block_id(j) + c) % grid(j)` with `a` a nonzero constant and `c` known at
//!   launch: a permutation of the axis when `gcd(a, grid(j)) == 1` (no prime factor of `a`
//!   divides it, checked at launch);
//! - a constant (an axis of the partition no block axis reaches).
//!
//! Distinct blocks differ on some axis `j`, so the component reading `j` differs: the map is
//! injective; in bounds when each component's range fits its tile count.

use crate::bounds::{launch_le, worse, Ranges, Rung};
use crate::prover::affine_in;
use crate::sym::{Atom, Poly};

/// The proof's conditions, or `None` when the map does not have this form.
pub fn prove(comps: &[Poly], tiles: &[Poly], ranges: &Ranges, nb: usize) -> Option<Rung> {
    let mut rung = Rung::Static;
    let mut used = [false; 3];
    let mut interesting = false;
    for (c, t) in comps.iter().zip(tiles) {
        let axes: Vec<usize> = (0..nb)
            .filter(|j| c.any_atom(&|a| *a == Atom::BlockId(*j as u8)))
            .collect();
        let j = match axes.as_slice() {
            [] => {
                // A constant component: inside its axis on every launch.
                if !c.launch_known() {
                    return None;
                }
                rung = worse(rung, ranges.decide_index(c, t));
                continue;
            }
            [j] => *j,
            _ => return None,
        };
        if std::mem::replace(&mut used[j], true) {
            return None;
        }
        let g = ranges.grid.get(j)?.clone();
        let (cond, plain) = component(c, j, &g, t)?;
        interesting |= !plain;
        rung = worse(rung, cond);
    }
    // Every block axis must be read, or two blocks differing there store one tile.
    if (0..nb).any(|j| !used[j] && ranges.grid[j].as_const() != Some(1)) {
        return None;
    }
    if matches!(rung, Rung::Refuted | Rung::Device) {
        return None;
    }
    // Maps of block ids and reversals alone are the affine prover's (same verdict, and
    // it names counterexamples); this recognizer adds what it cannot see.
    interesting.then_some(rung)
}

/// One component reading block axis `j` (grid extent `g`) into an axis of `t` tiles: the
/// conditions for it to be a bijection into bounds, and whether it is a plain block id or
/// reversal.
fn component(c: &Poly, j: usize, g: &Poly, t: &Poly) -> Option<(Rung, bool)> {
    let b = Poly::atom(Atom::BlockId(j as u8));
    let fits = |n: &Poly| {
        if n == t {
            Rung::Static
        } else {
            launch_le(n, t)
        }
    };
    if *c == b {
        return Some((fits(g), true));
    }
    if *c == g.sub(&Poly::c(1)).sub(&b) {
        return Some((fits(g), true));
    }
    let Some(Atom::Mod(x, n)) = c.as_atom() else {
        return None;
    };
    if !n.launch_known() {
        return None;
    }
    let (a, rest) = affine_in(x, &Atom::BlockId(j as u8))?;
    let a = a.as_const().filter(|a| *a != 0)?;
    if !rest.launch_known() {
        return None;
    }
    // The blocks of the axis are exactly the residues (`n` is the axis's block count: a
    // modulus that only works when the launch makes it so is a race to report, not a
    // launch condition), and every residue is a tile.
    if g != &**n {
        return None;
    }
    let mut rung = fits(n);
    for p in prime_factors(a.unsigned_abs()) {
        let text = format!("{n} % {p} != 0");
        let pred = crate::launch_pred::compare(
            &n.modulo(&Poly::c(p as i128)),
            cutile_facts::CmpOp::Ne,
            &Poly::zero(),
            text,
        )?;
        rung = worse(rung, Rung::Launch(pred));
    }
    Some((rung, false))
}

pub fn prime_factors(mut n: u128) -> Vec<u128> {
    let mut out = Vec::new();
    let mut p = 2;
    while p * p <= n && p < 1 << 20 {
        if n.is_multiple_of(p) {
            out.push(p);
            while n.is_multiple_of(p) {
                n /= p;
            }
        }
        p += 1;
    }
    if n > 1 {
        out.push(n);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(k: u8) -> Poly {
        Poly::atom(Atom::BlockId(k))
    }
    fn g(k: u8) -> Poly {
        Poly::atom(Atom::Grid(k))
    }
    fn ranges() -> Ranges {
        Ranges {
            grid: [g(0), g(1), g(2)],
            ..Default::default()
        }
    }

    #[test]
    fn rotations_reversals_and_axis_swaps() {
        let r = ranges();
        let tiles = [g(0), g(1), g(2)];
        // (n0 - 1 - b0, (-b1 + 5) % n1, (b2 + 4) % n2): static
        let comps = [
            g(0).sub(&Poly::c(1)).sub(&b(0)),
            b(1).scale(-1).add(&Poly::c(5)).modulo(&g(1)),
            b(2).add(&Poly::c(4)).modulo(&g(2)),
        ];
        assert_eq!(prove(&comps, &tiles, &r, 3), Some(Rung::Static));
        // (b1, b0, (b2 + 4) % n2): the swap needs grid(0) == grid(1), at launch
        let swapped = [b(1), b(0), b(2).add(&Poly::c(4)).modulo(&g(2))];
        assert!(matches!(
            prove(&swapped, &tiles, &r, 3),
            Some(Rung::Launch(_))
        ));
        // 2 * b0 % n0 needs n0 odd
        let doubled = [b(0).scale(2).modulo(&g(0)), b(1), b(2)];
        match prove(&doubled, &tiles, &r, 3) {
            Some(Rung::Launch(p)) => assert_eq!(p.text, "grid(0) % 2 != 0"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_unread_axis_or_a_shared_one_is_not_this_form() {
        let r = ranges();
        let tiles = [g(0), g(1), g(2)];
        let unread = [b(0).add(&Poly::c(1)).modulo(&g(0)), b(1), Poly::zero()];
        assert_eq!(prove(&unread, &tiles, &r, 3), None);
        let shared = [b(0).add(&b(1)).modulo(&g(0)), b(1), b(2)];
        assert_eq!(prove(&shared, &tiles, &r, 3), None);
        let twice = [b(0).add(&Poly::c(1)).modulo(&g(0)), b(0), b(2)];
        assert_eq!(prove(&twice, &tiles, &r, 3), None);
    }

    /// Brute force: every map the recognizer proves is injective and in bounds on every
    /// small grid where its conditions hold.
    #[test]
    fn proved_maps_are_bijections_on_small_grids() {
        let r = ranges();
        let tiles = [g(0), g(1)];
        let shapes: Vec<[Poly; 2]> = vec![
            [
                b(0).scale(3).add(&Poly::c(2)).modulo(&g(0)),
                g(1).sub(&Poly::c(1)).sub(&b(1)),
            ],
            [b(0).scale(-5).add(&g(1)).modulo(&g(0)), b(1)],
            [
                b(0).add(&Poly::c(7)).modulo(&g(0)),
                b(1).scale(4).modulo(&g(1)),
            ],
        ];
        for comps in shapes {
            let Some(rung) = prove(&comps, &tiles, &r, 2) else {
                panic!("not proved: {comps:?}");
            };
            for g0 in 1..9i128 {
                for g1 in 1..9i128 {
                    let env = |a: &Atom| match a {
                        Atom::Grid(0) => Some(g0),
                        Atom::Grid(1) => Some(g1),
                        _ => None,
                    };
                    let holds = match &rung {
                        Rung::Static => true,
                        Rung::Launch(p) => p
                            .eval(&|a| match a {
                                cutile_facts::Atom::Grid(k) => env(&Atom::Grid(*k)),
                                _ => None,
                            })
                            .unwrap_or(false),
                        _ => false,
                    };
                    if !holds {
                        continue;
                    }
                    let mut seen = std::collections::HashSet::new();
                    for x in 0..g0 {
                        for y in 0..g1 {
                            let v = |p: &Poly| {
                                p.eval(&|a| match a {
                                    Atom::BlockId(0) => Some(x),
                                    Atom::BlockId(1) => Some(y),
                                    a => env(a),
                                })
                                .unwrap()
                            };
                            let t = (v(&comps[0]), v(&comps[1]));
                            assert!(t.0 >= 0 && t.0 < g0 && t.1 >= 0 && t.1 < g1, "{comps:?}");
                            assert!(seen.insert(t), "{comps:?} at grid ({g0}, {g1})");
                        }
                    }
                }
            }
        }
    }
}
