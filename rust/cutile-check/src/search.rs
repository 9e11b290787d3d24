//! Counterexamples for store-index maps the provers cannot decide: evaluate the map on
//! small launches and look for two blocks that store the same tile (or one block that
//! stores outside the partition).
//!
//! A launch is *legal* when every `Const` (and scalar, tensor extent, tile count) the map
//! mentions is at least 1 and every grid extent is at least 1 (axes the prover collapsed,
//! whose launch predicate is `grid(k) <= 1`, stay at 1). The search never proves anything:
//! a map is accepted only by a symbolic proof (`prover.rs`, `digits.rs`); a search that
//! finds nothing leaves the map unprovable.
//!
//! Work is bounded: parameter values are tried in the order 2, 3, 1, 4 (the smallest value
//! that does not make `//` and `%` trivial comes first; fewer values with more parameters),
//! grids by increasing block count up to a per-axis cap (24 blocks on one axis, 8 x 8 on
//! two, 5 x 5 x 5 on three), and at most [`BUDGET`] block evaluations in all, shared
//! fairly between parameter assignments. The polynomials are compiled to slot-indexed
//! trees first, so one evaluation is a few dozen integer operations.

use crate::sym::{Atom, Poly};
use std::collections::HashMap;

/// Most block evaluations one search may spend (one evaluation computes every component
/// of the index for one block).
pub const BUDGET: usize = 8_000;

/// One concrete launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// Values of the launch-known parameters the map mentions.
    pub params: Vec<(Atom, i128)>,
    /// Extent of each grid axis (as many as the grid has).
    pub grid: Vec<i128>,
}

impl Launch {
    /// `H = 2 and grid (3, 3, 1)`.
    pub fn text(&self) -> String {
        let grid = format!("grid {}", tuple(&self.grid));
        if self.params.is_empty() {
            return grid;
        }
        let ps: Vec<String> = self
            .params
            .iter()
            .map(|(a, v)| format!("{} = {v}", param_name(a)))
            .collect();
        format!("{} and {grid}", ps.join(", "))
    }

    /// The value of an atom on this launch (grid extents, parameters).
    pub fn value(&self, a: &Atom) -> Option<i128> {
        match a {
            Atom::Grid(k) => Some(self.grid.get(*k as usize).copied().unwrap_or(1)),
            a => self.params.iter().find(|(p, _)| p == a).map(|(_, v)| *v),
        }
    }
}

/// How a parameter is written in a message.
fn param_name(a: &Atom) -> String {
    match a {
        Atom::Dim(x, k) => format!("{x}.shape[{k}]"),
        Atom::Tiles(z, k) => format!("num_tiles({z}, {k})"),
        a => a.to_string(),
    }
}

/// `(1, 2)` or `(1,)`.
pub fn tuple(v: &[i128]) -> String {
    let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    if s.len() == 1 {
        format!("({},)", s[0])
    } else {
        format!("({})", s.join(", "))
    }
}

/// What a search looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// Two blocks storing the same in-bounds tile.
    Collision,
    /// A block storing outside the partition grid.
    OutOfBounds,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Collision {
        launch: Launch,
        a: Vec<i128>,
        b: Vec<i128>,
        tile: Vec<i128>,
    },
    OutOfBounds {
        launch: Launch,
        block: Vec<i128>,
        tile: Vec<i128>,
        axis: usize,
        count: i128,
    },
}

/// A polynomial compiled to slots: `0..3` block ids, `3..6` grid extents, `6..` params.
#[derive(Debug)]
struct CPoly(Vec<(i64, Vec<CAtom>)>);

#[derive(Debug)]
enum CAtom {
    Slot(usize),
    Div(CPoly, CPoly),
    Mod(CPoly, CPoly),
    Cdiv(CPoly, CPoly),
    Min(CPoly, CPoly),
    Max(CPoly, CPoly),
}

const PARAM0: usize = 6;

fn compile(p: &Poly, params: &[Atom]) -> Option<CPoly> {
    let mut terms = Vec::with_capacity(p.terms.len());
    for (m, c) in p.terms.iter() {
        let atoms: Option<Vec<CAtom>> = m.iter().map(|a| compile_atom(a, params)).collect();
        terms.push((i64::try_from(*c).ok()?, atoms?));
    }
    Some(CPoly(terms))
}

fn compile_atom(a: &Atom, params: &[Atom]) -> Option<CAtom> {
    let two = |x: &Poly, y: &Poly| Some((compile(x, params)?, compile(y, params)?));
    Some(match a {
        Atom::BlockId(k) if *k < 3 => CAtom::Slot(*k as usize),
        Atom::Grid(k) if *k < 3 => CAtom::Slot(3 + *k as usize),
        Atom::FloorDiv(x, y) => two(x, y).map(|(x, y)| CAtom::Div(x, y))?,
        Atom::Mod(x, y) => two(x, y).map(|(x, y)| CAtom::Mod(x, y))?,
        Atom::Cdiv(x, y) => two(x, y).map(|(x, y)| CAtom::Cdiv(x, y))?,
        Atom::Min(x, y) => two(x, y).map(|(x, y)| CAtom::Min(x, y))?,
        Atom::Max(x, y) => two(x, y).map(|(x, y)| CAtom::Max(x, y))?,
        leaf => CAtom::Slot(PARAM0 + params.iter().position(|p| p == leaf)?),
    })
}

impl CPoly {
    /// Evaluated in 64 bits (as the device computes; an overflow is `None`).
    fn eval(&self, v: &[i64]) -> Option<i64> {
        let mut total: i64 = 0;
        for (c, atoms) in &self.0 {
            let mut prod = *c;
            for a in atoms {
                prod = prod.checked_mul(a.eval(v)?)?;
            }
            total = total.checked_add(prod)?;
        }
        Some(total)
    }
}

/// Python's `a // b` and `a % b` in 64 bits (a zero divisor reads as 1, as in
/// `sym::py_divmod`); `None` for an overflow.
fn divmod64(a: i64, b: i64) -> Option<(i64, i64)> {
    let b = if b == 0 { 1 } else { b };
    let q = a.checked_div(b)?;
    let r = a.checked_rem(b)?;
    if r != 0 && ((r < 0) != (b < 0)) {
        Some((q - 1, r + b))
    } else {
        Some((q, r))
    }
}

impl CAtom {
    fn eval(&self, v: &[i64]) -> Option<i64> {
        Some(match self {
            CAtom::Slot(i) => *v.get(*i)?,
            CAtom::Div(x, y) => divmod64(x.eval(v)?, y.eval(v)?)?.0,
            CAtom::Mod(x, y) => divmod64(x.eval(v)?, y.eval(v)?)?.1,
            CAtom::Cdiv(x, y) => {
                let (q, r) = divmod64(x.eval(v)?, y.eval(v)?)?;
                q + i64::from(r != 0)
            }
            CAtom::Min(x, y) => x.eval(v)?.min(y.eval(v)?),
            CAtom::Max(x, y) => x.eval(v)?.max(y.eval(v)?),
        })
    }
}

/// The launch-known leaf atoms (other than grid extents) of `ps`, in a stable order;
/// `None` when some atom has no value before the kernel runs.
fn parameters(ps: &[Poly]) -> Option<Vec<Atom>> {
    let mut out: Vec<Atom> = Vec::new();
    let mut ok = true;
    for p in ps {
        p.visit_atoms(&mut |a| match a {
            Atom::Const(_) | Atom::Scalar(_) | Atom::Dim(..) | Atom::Tiles(..)
                if !out.contains(a) =>
            {
                out.push(a.clone());
            }
            Atom::Loop(_) | Atom::Opaque(_) => ok = false,
            _ => {}
        });
    }
    out.sort();
    ok.then_some(out)
}

/// Search small legal launches for a counterexample to `goal` for the store map `comps`
/// into a partition with tile counts `tiles`, over a grid of rank `nb`; `fixed[k]` pins
/// grid axis `k` to 1. A launch is tried only where every polynomial of `legal` that
/// speaks of the map's parameters is `>= 0` (the launch rule, `Ranges::launch_constraints`).
pub fn search(
    comps: &[Poly],
    tiles: &[Poly],
    nb: usize,
    fixed: &[bool],
    legal: &[Poly],
    goal: Goal,
) -> Option<Found> {
    let nb = nb.min(3);
    let mut all: Vec<Poly> = comps.to_vec();
    all.extend(tiles.iter().cloned());
    let mentioned = parameters(&all)?;
    // The constraints on the map's parameters, and the parameters they bring (a tile `Const`).
    let legal: Vec<&Poly> = legal
        .iter()
        .filter(|c| c.any_atom(&|a| mentioned.contains(a)))
        .collect();
    all.extend(legal.iter().map(|c| (*c).clone()));
    let params = parameters(&all)?;
    let legal_c: Vec<CPoly> = legal
        .iter()
        .map(|p| compile(p, &params))
        .collect::<Option<_>>()?;
    let comps_c: Vec<CPoly> = comps
        .iter()
        .map(|p| compile(p, &params))
        .collect::<Option<_>>()?;
    let tiles_c: Vec<CPoly> = tiles
        .iter()
        .map(|p| compile(p, &params))
        .collect::<Option<_>>()?;
    let values: &[i128] = match params.len() {
        0 => &[],
        1 | 2 => &[2, 3, 1, 4],
        3 => &[2, 3, 1],
        4..=6 => &[2, 1],
        _ => &[2],
    };
    let free: Vec<usize> = (0..nb)
        .filter(|k| !fixed.get(*k).copied().unwrap_or(false))
        .collect();
    let cap: i128 = match free.len() {
        0 => 1,
        1 => 24,
        2 => 8,
        _ => 5,
    };
    // Every grid over the free axes, by block count then lexicographically.
    let mut grids: Vec<Vec<i128>> = vec![vec![1; nb]];
    for &k in &free {
        grids = grids
            .into_iter()
            .flat_map(|g| {
                (1..=cap).map(move |e| {
                    let mut g = g.clone();
                    g[k] = e;
                    g
                })
            })
            .collect();
    }
    grids.sort_by_key(|g| (g.iter().product::<i128>(), g.clone()));
    let assignments = values.len().max(1).pow(params.len() as u32);
    let share = (BUDGET / assignments).max(64);
    if comps.len() > 3 || tiles.len() != comps.len() {
        return None;
    }
    let rank = comps.len();
    let mut spent = 0usize;
    let mut vals = vec![0i64; PARAM0 + params.len()];
    let mut seen: HashMap<[i128; 3], [i128; 3]> = HashMap::new();
    let mut seen_at: Vec<(u32, [i128; 3])> = Vec::new();
    let mut stamp = 0u32;
    for n in 0..assignments {
        let mut rest = n;
        let mut launch_params = Vec::with_capacity(params.len());
        for (i, p) in params.iter().enumerate() {
            let v = values[rest % values.len()];
            rest /= values.len();
            vals[PARAM0 + i] = v as i64;
            launch_params.push((p.clone(), v));
        }
        let mut here = 0usize;
        'grids: for g in &grids {
            let volume = g.iter().product::<i128>() as usize;
            if here + volume > share || spent + volume > BUDGET {
                break;
            }
            here += volume;
            spent += volume;
            for k in 0..3 {
                vals[3 + k] = g.get(k).copied().unwrap_or(1) as i64;
            }
            if legal_c.iter().any(|c| c.eval(&vals).is_none_or(|v| v < 0)) {
                continue;
            }
            let Some(counts) = tiles_c
                .iter()
                .map(|t| t.eval(&vals).map(i128::from))
                .collect::<Option<Vec<i128>>>()
            else {
                break 'grids;
            };
            if counts.iter().any(|c| *c < 1) {
                continue;
            }
            // Tiles seen on this launch: a stamp per tile when the partition is small, a
            // map otherwise.
            let ntiles = counts
                .iter()
                .try_fold(1i128, |a, c| a.checked_mul(*c))
                .filter(|t| *t <= 1 << 16);
            stamp += 1;
            if let Some(t) = ntiles {
                if seen_at.len() < t as usize {
                    seen_at.resize(t as usize, (0, [0; 3]));
                }
            }
            seen.clear();
            let mut block = [0i128; 3];
            let mut tile = [0i128; 3];
            for _ in 0..volume {
                for (v, b) in vals.iter_mut().zip(&block) {
                    *v = *b as i64;
                }
                // A divisor of 0 (or an overflow) on this launch: not a legal launch.
                for (t, c) in tile.iter_mut().zip(&comps_c) {
                    match c.eval(&vals) {
                        Some(v) => *t = i128::from(v),
                        None => break 'grids,
                    }
                }
                let outside = tile.iter().zip(&counts).position(|(t, c)| *t < 0 || t >= c);
                let launch = || Launch {
                    params: launch_params.clone(),
                    grid: g.clone(),
                };
                match (goal, outside) {
                    (Goal::OutOfBounds, Some(axis)) => {
                        return Some(Found::OutOfBounds {
                            launch: launch(),
                            block: block[..nb].to_vec(),
                            tile: tile[..rank].to_vec(),
                            axis,
                            count: counts[axis],
                        })
                    }
                    (Goal::Collision, None) => {
                        let first = match ntiles {
                            Some(_) => {
                                let mut flat = 0usize;
                                for (t, c) in tile.iter().zip(&counts) {
                                    flat = flat * (*c as usize) + *t as usize;
                                }
                                let slot = &mut seen_at[flat];
                                let prev = (slot.0 == stamp).then_some(slot.1);
                                *slot = (stamp, block);
                                prev
                            }
                            None => seen.insert(tile, block),
                        };
                        if let Some(first) = first {
                            return Some(Found::Collision {
                                launch: launch(),
                                a: first[..nb].to_vec(),
                                b: block[..nb].to_vec(),
                                tile: tile[..rank].to_vec(),
                            });
                        }
                    }
                    _ => {}
                }
                // Next block, last axis fastest (lexicographic order).
                for k in (0..nb).rev() {
                    block[k] += 1;
                    if block[k] < g[k] {
                        break;
                    }
                    block[k] = 0;
                }
            }
        }
    }
    None
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

    #[test]
    fn finds_the_head_swap_race() {
        // (b * H + m, h, 0) with b = bh // H, h = bh % H: H = 2, grid (3, 3, 1).
        let h = Poly::atom(Atom::Const("H".into()));
        let bh = b(0);
        let comps = [
            bh.floordiv(&h).mul(&h).add(&b(1)),
            bh.modulo(&h),
            Poly::zero(),
        ];
        let tiles = [g(0), g(1), Poly::c(1)];
        let found = search(
            &comps,
            &tiles,
            3,
            &[false, false, true],
            &[],
            Goal::Collision,
        );
        match found {
            Some(Found::Collision { launch, a, b, tile }) => {
                assert_eq!(launch.text(), "H = 2 and grid (3, 3, 1)");
                assert_eq!((a, b, tile), (vec![0, 2, 0], vec![2, 0, 0], vec![2, 0, 0]));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn injective_maps_have_no_counterexample() {
        let h = Poly::atom(Atom::Const("H".into()));
        let comps = [b(0).floordiv(&h).mul(&h).add(&b(0).modulo(&h)), b(1)];
        let tiles = [g(0), g(1)];
        assert_eq!(
            search(&comps, &tiles, 2, &[false, false], &[], Goal::Collision),
            None
        );
    }

    #[test]
    fn out_of_bounds_witness() {
        let comps = [b(0).modulo(&Poly::c(4)).add(&Poly::c(5))];
        match search(&comps, &[g(0)], 1, &[false], &[], Goal::OutOfBounds) {
            Some(Found::OutOfBounds {
                launch,
                block,
                tile,
                axis,
                count,
            }) => {
                assert_eq!(launch.text(), "grid (1,)");
                assert_eq!((block, tile, axis, count), (vec![0], vec![5], 0, 1));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn division_by_zero_is_not_a_launch() {
        let s = Poly::atom(Atom::Scalar("s".into()));
        // b // (s - 1): s = 1 divides by zero and is skipped; s = 2 gives b // 1, s = 3 gives
        // b // 2, which collides.
        let comps = [b(0).floordiv(&s.sub(&Poly::c(1)))];
        match search(&comps, &[g(0)], 1, &[false], &[], Goal::Collision) {
            Some(Found::Collision { launch, .. }) => {
                assert_eq!(launch.params, vec![(Atom::Scalar("s".into()), 3)])
            }
            other => panic!("{other:?}"),
        }
    }
}
