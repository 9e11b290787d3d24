//! The store-index prover: is `block id -> tile index` injective and inside the partition
//! grid? (docs/design.md §3, rule 5.)
//!
//! With grid == partition grid (host rule 6), blocks range over the box
//! `[0, grid(0)) x [0, grid(1)) x [0, grid(2))`. A map `index = A * b + c` is injective on
//! the box if `A` has full column rank (then it is injective on all of Z^n), and a
//! rank-deficient `A` has an integer kernel vector `v`, so the blocks `b` and `b + v` of
//! any grid large enough collide: that pair is the counterexample in the message. Bounds
//! of each component are decided on the ladder of `bounds.rs` (`0 <= min` and
//! `max <= tiles - 1` over the box). Symbolic coefficients (`block_id(0) * S`) need
//! `det(A) != 0`, a launch predicate unless it folds. Non-affine maps are accepted only in
//! the grouped-swizzle form recognized by `swizzle.rs`.

use crate::bounds::{worse, Ranges, Rung};
use crate::digits::Digits;
use crate::search::{search, Found, Goal, Launch};
use crate::sym::{Atom, Poly};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreMapProof {
    /// Injective and in bounds for every launch; or with a launch predicate; or with bounds
    /// left to a device assert (injectivity is never left to the device).
    Proved(Rung),
    /// Two blocks that store to the same tile (for any grid at least `min_grid`).
    Collision {
        a: Vec<i128>,
        b: Vec<i128>,
        tile: String,
        min_grid: Vec<i128>,
    },
    /// Two blocks that store to the same tile on one legal launch, found by evaluating
    /// the map on small launches (`search.rs`).
    CollisionAt {
        launch: Launch,
        a: Vec<i128>,
        b: Vec<i128>,
        tile: Vec<i128>,
    },
    /// Some block stores outside the partition grid on `axis`, for every launch.
    OutOfBounds {
        axis: usize,
        block: String,
        tile: String,
    },
    /// A block that stores outside the partition grid (axis `axis` has `count` tiles) on
    /// one legal launch, found by search.
    OutOfBoundsAt {
        launch: Launch,
        block: Vec<i128>,
        tile: Vec<i128>,
        axis: usize,
        count: i128,
    },
    /// The map is outside what the prover decides.
    Unprovable(String),
}

/// Split `p` as `coeff * a + rest`, with `a` absent from `coeff` and `rest`; `None` when
/// `p` is not affine in `a`.
pub fn affine_in(p: &Poly, a: &Atom) -> Option<(Poly, Poly)> {
    let mut coeff = Poly::zero();
    let mut rest = Poly::zero();
    for (m, c) in p.terms.iter() {
        let n = m.iter().filter(|x| *x == a).count();
        if m.iter().any(|x| x != a && crate::sym::atom_contains(x, a)) {
            return None;
        }
        let mut t = Poly::c(*c);
        for x in m.iter().filter(|x| *x != a) {
            t = t.mul(&Poly::atom(x.clone()));
        }
        match n {
            0 => rest = rest.add(&t),
            1 => coeff = coeff.add(&t),
            _ => return None,
        }
    }
    Some((coeff, rest))
}

/// Prove the store map `comps` (one component per partition axis) for a partition with
/// tile counts `tiles`, launched over a grid of rank `grid_rank`.
///
/// The ladder: affine maps (exact, by rank); the grouped swizzle (by template); maps built
/// with `//` and `%` (normalized, then affine or mixed-radix digits: `digits.rs`). When
/// none proves the map, a search of small launches (`search.rs`) looks for two blocks that
/// store the same tile: found, the map is rejected with that pair; not found, it stays
/// unprovable. Nothing is accepted without a proof.
pub fn prove_store_map(
    comps: &[Poly],
    tiles: &[Poly],
    ranges: &Ranges,
    grid_rank: usize,
) -> StoreMapProof {
    // With the rewrites that hold on every launch; failing that, with those decided at
    // launch too (`b * s // s` is `b` when `1 <= s`), which narrow the launches accepted.
    // A map proved by neither is judged as first written, so that a counterexample found
    // on small launches is one of the map itself.
    let plain = prove_simplified(comps, tiles, ranges, grid_rank, false).0;
    if matches!(plain, StoreMapProof::Unprovable(_)) {
        if let (p @ StoreMapProof::Proved(_), true) =
            prove_simplified(comps, tiles, ranges, grid_rank, true)
        {
            return p;
        }
    }
    plain
}

/// `prove_store_map` after simplifying the map (`simplify.rs`), with launch-decided
/// rewrites when `at_launch`; also says whether one was used.
fn prove_simplified(
    comps: &[Poly],
    tiles: &[Poly],
    ranges: &Ranges,
    grid_rank: usize,
    at_launch: bool,
) -> (StoreMapProof, bool) {
    let (proof, simplified) = prove_inner(comps, tiles, ranges, grid_rank, at_launch);
    let used = simplified != Rung::Static;
    let proof = match proof {
        StoreMapProof::Proved(r) => StoreMapProof::Proved(worse(simplified, r)),
        p => p,
    };
    (proof, used)
}

fn prove_inner(
    comps: &[Poly],
    tiles: &[Poly],
    ranges: &Ranges,
    grid_rank: usize,
    at_launch: bool,
) -> (StoreMapProof, Rung) {
    let nb = grid_rank.min(3);
    // Block ids past the grid rank are 0; spellings of the identity become block ids.
    let mut simplified = Rung::Static;
    let comps: Vec<Poly> = comps
        .iter()
        .map(|c| {
            let mut c = c.clone();
            for j in nb..3 {
                c = c.substitute(&Atom::BlockId(j as u8), &Poly::zero());
            }
            // A loop of one iteration binds one value.
            for (id, (lo, hi)) in &ranges.loops {
                if lo == hi && lo.launch_known() {
                    c = c.substitute(&Atom::Loop(*id), lo);
                }
            }
            if !at_launch {
                return crate::simplify::simplify(&c, ranges);
            }
            let (c, cond) = crate::simplify::simplify_at_launch(&c, ranges);
            simplified = worse(simplified.clone(), cond);
            c
        })
        .collect();
    if comps
        .iter()
        .any(|c| c.any_atom(&|a| matches!(a, Atom::Loop(_))))
    {
        return (
            StoreMapProof::Unprovable(
                "the index depends on a loop variable, so blocks could meet in different \
                 iterations"
                    .into(),
            ),
            simplified,
        );
    }
    if comps
        .iter()
        .any(|c| c.any_atom(&|a| matches!(a, Atom::Opaque(_))))
    {
        return (
            StoreMapProof::Unprovable(
                "the index depends on a value known only while the kernel runs".into(),
            ),
            simplified,
        );
    }
    if let Some(rung) = crate::axiswise::prove(&comps, tiles, ranges, nb) {
        return (StoreMapProof::Proved(rung), simplified);
    }
    // Collapsed axes: the index is the literal 0 on axis `k` and ignores `block_id(k)`, so
    // the partition must have one tile there (`grid(k) <= 1` at launch); the rest of the
    // proof holds on that axis's single block. A map that ignores every block axis is not
    // collapsed: it only works on a one-block launch, and is a collision.
    let fixed = collapsed_axes(&comps, nb);
    let mut pre = Rung::Static;
    let reduced;
    let (comps, tiles, ranges) = if fixed.iter().any(|f| *f) {
        let one = Poly::c(1);
        let pin = |p: &Poly| {
            let mut p = p.clone();
            for (k, _) in fixed.iter().enumerate().filter(|(_, f)| **f) {
                p = p.substitute(&Atom::Grid(k as u8), &one);
            }
            p
        };
        let mut r = ranges.clone();
        for (k, f) in fixed.iter().enumerate() {
            if *f {
                r.grid[k] = one.clone();
                pre = worse(
                    pre,
                    crate::bounds::launch_le(&Poly::atom(Atom::Grid(k as u8)), &Poly::c(1)),
                );
            }
        }
        reduced = (
            comps.iter().map(pin).collect::<Vec<_>>(),
            tiles.iter().map(pin).collect::<Vec<_>>(),
            r,
        );
        (&reduced.0[..], &reduced.1[..], &reduced.2)
    } else {
        (&comps[..], tiles, ranges)
    };
    let proof = match affine_proof(comps, tiles, ranges, nb, &fixed) {
        Some(p) => p,
        None => match crate::swizzle::recognize(comps, tiles, ranges, nb) {
            Some(p) => p,
            None => match crate::digits::prove(comps, tiles, ranges, nb, &fixed) {
                Digits::Done(p) => p,
                Digits::NotInjective(why) => StoreMapProof::Unprovable(why),
                Digits::BoundsRefuted(why) => {
                    let legal = ranges.launch_constraints();
                    let p = match search(comps, tiles, nb, &fixed, &legal, Goal::OutOfBounds) {
                        Some(f) => found(f),
                        None => StoreMapProof::Unprovable(why),
                    };
                    return (p, simplified);
                }
            },
        },
    };
    let proof = match proof {
        StoreMapProof::Proved(r) => StoreMapProof::Proved(worse(pre, r)),
        StoreMapProof::Unprovable(why) => match search(
            comps,
            tiles,
            nb,
            &fixed,
            &ranges.launch_constraints(),
            Goal::Collision,
        ) {
            Some(f) => found(f),
            None => StoreMapProof::Unprovable(why),
        },
        p => p,
    };
    (proof, simplified)
}

fn found(f: Found) -> StoreMapProof {
    match f {
        Found::Collision { launch, a, b, tile } => {
            StoreMapProof::CollisionAt { launch, a, b, tile }
        }
        Found::OutOfBounds {
            launch,
            block,
            tile,
            axis,
            count,
        } => StoreMapProof::OutOfBoundsAt {
            launch,
            block,
            tile,
            axis,
            count,
        },
    }
}

/// Axes `k < nb` whose index component is the constant 0 while no component depends on
/// `block_id(k)`; none when that would be every axis.
pub fn collapsed_axes(comps: &[Poly], nb: usize) -> Vec<bool> {
    let mut fixed: Vec<bool> = (0..nb)
        .map(|k| {
            let b = Atom::BlockId(k as u8);
            comps.get(k).is_some_and(|c| c.terms.is_empty())
                && !comps.iter().any(|c| c.any_atom(&|a| *a == b))
        })
        .collect();
    if fixed.iter().all(|f| *f) {
        fixed.iter_mut().for_each(|f| *f = false);
    }
    fixed
}

/// The proof of an affine map `A * b + c` (`None` when the map is not affine in the block
/// ids). Columns of collapsed axes (`fixed`) are zero and left out of the rank test.
pub fn affine_proof(
    comps: &[Poly],
    tiles: &[Poly],
    ranges: &Ranges,
    nb: usize,
    fixed: &[bool],
) -> Option<StoreMapProof> {
    let mut a: Vec<Vec<Poly>> = Vec::new();
    let mut rest: Vec<Poly> = Vec::new();
    for c in comps {
        let mut row = Vec::new();
        let mut r = c.clone();
        for j in 0..nb {
            match affine_in(&r, &Atom::BlockId(j as u8)) {
                Some((k, rr)) if !k.any_atom(&|x| matches!(x, Atom::BlockId(_))) => {
                    row.push(k);
                    r = rr;
                }
                _ => return None,
            }
        }
        if r.any_atom(&|x| matches!(x, Atom::BlockId(_))) {
            return None;
        }
        a.push(row);
        rest.push(r);
    }
    if a.iter()
        .flatten()
        .any(|k| k.as_const().is_some_and(|v| v.abs() > 1 << 20))
    {
        return Some(StoreMapProof::Unprovable(
            "the index map has coefficients too large to reason about".into(),
        ));
    }
    let active: Vec<usize> = (0..nb)
        .filter(|j| !fixed.get(*j).copied().unwrap_or(false))
        .collect();
    let injective = if a.iter().flatten().all(|k| k.as_const().is_some()) {
        let m: Vec<Vec<i128>> = a
            .iter()
            .map(|row| {
                active
                    .iter()
                    .map(|j| row[*j].as_const().unwrap_or(0))
                    .collect()
            })
            .collect();
        let Ok(kernel) = kernel_vector(&m, active.len()) else {
            return Some(StoreMapProof::Unprovable(
                "the index map has coefficients too large to reason about".into(),
            ));
        };
        if let Some(va) = kernel {
            let mut v = vec![0i128; nb];
            for (x, j) in va.iter().zip(&active) {
                v[*j] = *x;
            }
            let b1: Vec<i128> = v.iter().map(|x| (-x).max(0)).collect();
            let b2: Vec<i128> = b1.iter().zip(&v).map(|(x, y)| x + y).collect();
            let min_grid: Vec<i128> = b1.iter().zip(&b2).map(|(x, y)| x.max(y) + 1).collect();
            let tile: Vec<String> = comps.iter().map(|c| eval_at(c, &b1).to_string()).collect();
            return Some(StoreMapProof::Collision {
                a: b1,
                b: b2,
                tile: tuple_text(&tile),
                min_grid,
            });
        }
        Rung::Static
    } else {
        // Square over the active axes: the rows of collapsed axes are the constant 0.
        let rows: Vec<Vec<Poly>> = a
            .iter()
            .enumerate()
            .filter(|(i, _)| !fixed.get(*i).copied().unwrap_or(false))
            .map(|(_, row)| active.iter().map(|j| row[*j].clone()).collect())
            .collect();
        if rows.len() != active.len() {
            return Some(StoreMapProof::Unprovable(
                "the index has symbolic coefficients and a different rank than the grid".into(),
            ));
        }
        let det = det_poly(&rows);
        match det.as_const() {
            Some(0) => {
                return Some(StoreMapProof::Unprovable(
                    "the index map has a zero determinant for every launch".into(),
                ))
            }
            Some(_) => Rung::Static,
            None if det.launch_known() => crate::launch_pred::compare(
                &det,
                cutile_facts::CmpOp::Ne,
                &Poly::zero(),
                format!("{det} != 0"),
            )
            .map_or(Rung::Device, Rung::Launch),
            None => {
                return Some(StoreMapProof::Unprovable(
                    "the determinant is not known at launch".into(),
                ))
            }
        }
    };
    // Bounds of each component over the box.
    let mut bounds = Rung::Static;
    for (i, row) in a.iter().enumerate() {
        let Some(t) = tiles.get(i) else {
            return Some(StoreMapProof::Unprovable(
                "the index has more components than the partition".into(),
            ));
        };
        let mut lo = rest[i].clone();
        let mut hi = rest[i].clone();
        for (j, k) in row.iter().enumerate() {
            let span = k.mul(&ranges.grid[j].sub(&Poly::c(1)));
            match k.as_const() {
                // grid(j) - 1 >= 0, so the sign of the coefficient decides the extreme.
                Some(kc) if kc >= 0 => hi = hi.add(&span),
                Some(_) => lo = lo.add(&span),
                None => {
                    lo = lo.add(&Poly::zero().pmin(&span));
                    hi = hi.add(&Poly::zero().pmax(&span));
                }
            }
        }
        let low = degenerate(ranges.decide_le(&Poly::zero(), &lo), &lo);
        let high = degenerate(
            ranges.decide_le(&hi, &t.sub(&Poly::c(1))),
            &t.sub(&Poly::c(1)).sub(&hi),
        );
        if low == Rung::Refuted || high == Rung::Refuted {
            let at_max = high == Rung::Refuted;
            let block: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(j, k)| {
                    let pos = k.as_const().unwrap_or(1) > 0;
                    if pos == at_max {
                        ranges.grid[j].sub(&Poly::c(1)).to_string()
                    } else {
                        "0".into()
                    }
                })
                .collect();
            return Some(StoreMapProof::OutOfBounds {
                axis: i,
                block: tuple_text(&block),
                tile: if at_max {
                    hi.to_string()
                } else {
                    lo.to_string()
                },
            });
        }
        let low = match low {
            Rung::Launch(_) => crate::bounds::launch_le(&Poly::zero(), &lo),
            r => r,
        };
        let high = match high {
            Rung::Launch(_) => crate::bounds::launch_le(&hi, &t.sub(&Poly::c(1))),
            r => r,
        };
        bounds = worse(bounds, worse(low, high));
    }
    Some(StoreMapProof::Proved(worse(injective, bounds)))
}

/// A launch predicate over grid extents alone that already fails on a grid of 2 blocks
/// per axis is refuted: such a kernel only works on degenerate one-block grids.
pub fn degenerate(r: Rung, d: &Poly) -> Rung {
    if !matches!(r, Rung::Launch(_)) || d.any_atom(&|a| !matches!(a, Atom::Grid(_))) {
        return r;
    }
    let mut q = d.clone();
    for k in 0..3u8 {
        q = q.substitute(&Atom::Grid(k), &Poly::c(2));
    }
    match q.as_const() {
        Some(v) if v < 0 => Rung::Refuted,
        _ => r,
    }
}

fn tuple_text(items: &[String]) -> String {
    if items.len() == 1 {
        format!("({},)", items[0])
    } else {
        format!("({})", items.join(", "))
    }
}

fn eval_at(p: &Poly, b: &[i128]) -> Poly {
    let mut q = p.clone();
    for (j, v) in b.iter().enumerate() {
        q = q.substitute(&Atom::BlockId(j as u8), &Poly::c(*v));
    }
    q
}

fn gcd(a: i128, b: i128) -> Result<i128, Overflow> {
    let (mut a, mut b) = (a, b);
    while b != 0 {
        (a, b) = (b, a.checked_rem(b).ok_or(Overflow)?);
    }
    a.checked_abs().ok_or(Overflow)
}

/// The elimination of [`kernel_vector`] left 128 bits: nothing is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow;

/// A nonzero primitive integer vector `v` with `m * v == 0` (columns `n`), if `m` has
/// rank `< n` (`Ok(None)`: full column rank). Fraction-free elimination on small integer
/// matrices, with checked arithmetic.
pub fn kernel_vector(m: &[Vec<i128>], n: usize) -> Result<Option<Vec<i128>>, Overflow> {
    let mut rows: Vec<Vec<i128>> = m
        .iter()
        .map(|r| r.iter().take(n).copied().collect())
        .collect();
    for r in rows.iter_mut() {
        r.resize(n, 0);
    }
    let mut pivots: Vec<(usize, usize)> = Vec::new(); // (row, col)
    let mut row = 0;
    for col in 0..n {
        let Some(p) = (row..rows.len()).find(|&r| rows[r][col] != 0) else {
            continue;
        };
        rows.swap(row, p);
        let pivot = rows[row].clone();
        for (r, cur) in rows.iter_mut().enumerate() {
            if r != row && cur[col] != 0 {
                let (x, y) = (pivot[col], cur[col]);
                for (v, p) in cur.iter_mut().zip(&pivot) {
                    *v = v
                        .checked_mul(x)
                        .zip(p.checked_mul(y))
                        .and_then(|(a, b)| a.checked_sub(b))
                        .ok_or(Overflow)?;
                }
                let g = cur.iter().try_fold(0, |g, v| gcd(g, *v))?;
                if g > 1 {
                    cur.iter_mut().for_each(|v| *v /= g);
                }
            }
        }
        pivots.push((row, col));
        row += 1;
    }
    if pivots.len() == n {
        return Ok(None);
    }
    // Free column f: v[f] = L (lcm of pivots), v[pivot col] = -row[f] * L / pivot.
    let Some(free) = (0..n).find(|c| !pivots.iter().any(|(_, pc)| pc == c)) else {
        return Ok(None);
    };
    let mut l = 1i128;
    for (r, c) in &pivots {
        let p = rows[*r][*c].checked_abs().ok_or(Overflow)?;
        l = (l / gcd(l, p)?).checked_mul(p).ok_or(Overflow)?;
    }
    let mut v = vec![0i128; n];
    v[free] = l;
    for (r, c) in &pivots {
        v[*c] = rows[*r][free]
            .checked_mul(l)
            .and_then(|x| x.checked_div(rows[*r][*c]))
            .and_then(|x| x.checked_neg())
            .ok_or(Overflow)?;
    }
    let g = v.iter().try_fold(0, |g, x| gcd(g, *x))?;
    if g > 1 {
        v.iter_mut().for_each(|x| *x /= g);
    }
    // Canonical sign: first nonzero entry positive.
    if v.iter().find(|x| **x != 0).is_some_and(|x| *x < 0) {
        v.iter_mut().for_each(|x| *x = -*x);
    }
    Ok(Some(v))
}

/// Determinant of a square matrix of polynomials (n <= 3), by cofactor expansion.
pub fn det_poly(a: &[Vec<Poly>]) -> Poly {
    match a.len() {
        0 => Poly::c(1),
        1 => a[0][0].clone(),
        n => {
            let mut total = Poly::zero();
            for j in 0..n {
                let minor: Vec<Vec<Poly>> = a[1..]
                    .iter()
                    .map(|r| {
                        r.iter()
                            .enumerate()
                            .filter(|(c, _)| *c != j)
                            .map(|(_, x)| x.clone())
                            .collect()
                    })
                    .collect();
                let term = a[0][j].mul(&det_poly(&minor));
                total = if j % 2 == 0 {
                    total.add(&term)
                } else {
                    total.sub(&term)
                };
            }
            total
        }
    }
}

#[cfg(test)]
mod tests;
