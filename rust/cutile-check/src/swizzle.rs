//! Grouped swizzles: the one non-affine store-index map the prover accepts.
//!
//! The form (Triton's "grouped ordering"), with `pid` a linearization of the 2-D block id,
//! `m`, `n` the grid extents and `g` the group size:
//!
//! ```text
//! group  = pid // (g * n)
//! first  = group * g
//! size   = min(m - first, g)
//! pid_m  = first + (pid % (g * n)) % size
//! pid_n  = (pid % (g * n)) // size
//! ```
//!
//! It is a bijection of `[0, m*n)` onto `[0, m) x [0, n)` for every `g >= 1`: group `k`
//! covers rows `[k*g, k*g + size)` and takes the `size * n` consecutive pids starting at
//! `k*g*n`, enumerating its rows column by column. `tests` checks it exhaustively on many
//! grids; the prover recognizes the form by rebuilding it symbolically from the user's
//! expression and comparing normal forms, so any spelling that folds to the same
//! polynomials is accepted and anything else is not.

use crate::bounds::{Ranges, Rung};
use crate::prover::StoreMapProof;
use crate::sym::{Atom, Poly};

/// The concrete swizzle (the definition the tests enumerate and the schedule uses).
pub fn grouped(pid: u64, m: u64, n: u64, g: u64) -> (u64, u64) {
    let per_group = g * n;
    let group = pid / per_group;
    let first = group * g;
    let size = (m - first).min(g);
    let local = pid % per_group;
    (first + local % size, local / size)
}

/// The swizzle built from symbolic parts, with the same operations the checker applies to
/// user code.
pub fn template(pid: &Poly, m: &Poly, n: &Poly, g: &Poly) -> (Poly, Poly) {
    let per_group = g.mul(n);
    let group = pid.floordiv(&per_group);
    let first = group.mul(g);
    let size = m.sub(&first).pmin(g);
    let local = pid.modulo(&per_group);
    (first.add(&local.modulo(&size)), local.floordiv(&size))
}

/// Recognize `comps` as a grouped swizzle of a 2-D grid; the proof then rests on the
/// bijection above plus `g >= 1`.
pub fn recognize(
    comps: &[Poly],
    tiles: &[Poly],
    ranges: &Ranges,
    nb: usize,
) -> Option<StoreMapProof> {
    if comps.len() != 2 || nb != 2 || tiles.len() != 2 {
        return None;
    }
    let (b0, b1) = (Poly::atom(Atom::BlockId(0)), Poly::atom(Atom::BlockId(1)));
    let (g0, g1) = (ranges.grid[0].clone(), ranges.grid[1].clone());
    // The partition grid must be the launch grid for the bijection to cover the tiles.
    if tiles[0] != g0 || tiles[1] != g1 {
        return None;
    }
    let linearizations = [b0.mul(&g1).add(&b1), b1.mul(&g0).add(&b0)];
    // Candidate group sizes: divisors `x / n` of every floor-division by `g * n`.
    let mut candidates: Vec<(Poly, bool)> = Vec::new();
    for c in comps {
        c.visit_atoms(&mut |a| {
            if let Atom::FloorDiv(_, d) | Atom::Mod(_, d) = a {
                for (n, swapped) in [(&g1, false), (&g0, true)] {
                    if let Some(g) = divide_by(d, n) {
                        if !candidates.contains(&(g.clone(), swapped)) {
                            candidates.push((g, swapped));
                        }
                    }
                }
            }
        });
    }
    for (g, swapped) in candidates {
        // The group size must be one number for the whole launch (a group size that
        // varies with the block is no longer a bijection).
        if !g.launch_known() {
            continue;
        }
        for pid in &linearizations {
            let (m, n) = if swapped { (&g1, &g0) } else { (&g0, &g1) };
            let (pm, pn) = template(pid, m, n, &g);
            let matches = if swapped {
                comps[0] == pn && comps[1] == pm
            } else {
                comps[0] == pm && comps[1] == pn
            };
            if matches {
                let rung = match ranges.decide_le(&Poly::c(1), &g) {
                    Rung::Static => Rung::Static,
                    Rung::Launch(p) => Rung::Launch(p),
                    _ => match g.launch_known() {
                        true => crate::bounds::launch_le(&Poly::c(1), &g),
                        false => return None,
                    },
                };
                return Some(StoreMapProof::Proved(rung));
            }
        }
    }
    None
}

/// `p / atom-poly n` when every monomial of `p` holds `n`'s single atom once.
fn divide_by(p: &Poly, n: &Poly) -> Option<Poly> {
    let a = n.as_atom()?;
    let (k, rest) = crate::prover::affine_in(p, a)?;
    (rest.terms.is_empty() && !k.terms.is_empty()).then_some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_swizzle_is_a_bijection_on_many_grids() {
        for m in 1..=20u64 {
            for n in 1..=20u64 {
                for g in 1..=9u64 {
                    let mut seen = vec![false; (m * n) as usize];
                    for pid in 0..m * n {
                        let (i, j) = grouped(pid, m, n, g);
                        assert!(i < m && j < n, "m={m} n={n} g={g} pid={pid} -> ({i},{j})");
                        let k = (i * n + j) as usize;
                        assert!(!seen[k], "m={m} n={n} g={g}: tile ({i},{j}) twice");
                        seen[k] = true;
                    }
                }
            }
        }
    }

    #[test]
    fn template_agrees_with_concrete_swizzle() {
        let pid = Poly::atom(Atom::BlockId(0));
        let (pm, pn) = template(&pid, &Poly::c(7), &Poly::c(5), &Poly::c(3));
        // Substituting a concrete pid folds every atom.
        for p in 0..35u64 {
            let (i, j) = grouped(p, 7, 5, 3);
            assert_eq!(eval(&pm, p), Some(i as i128));
            assert_eq!(eval(&pn, p), Some(j as i128));
        }
    }

    /// Evaluate a polynomial in `block_id(0)` by rebuilding every compound atom.
    fn eval(p: &Poly, pid: u64) -> Option<i128> {
        let mut total = 0i128;
        for (m, c) in p.terms.iter() {
            let mut prod = *c;
            for a in m {
                let v = match a {
                    Atom::BlockId(0) => pid as i128,
                    Atom::FloorDiv(x, y) => crate::sym::py_divmod(eval(x, pid)?, eval(y, pid)?)?.0,
                    Atom::Mod(x, y) => crate::sym::py_divmod(eval(x, pid)?, eval(y, pid)?)?.1,
                    Atom::Min(x, y) => eval(x, pid)?.min(eval(y, pid)?),
                    _ => return None,
                };
                prod *= v;
            }
            total += prod;
        }
        Some(total)
    }
}
