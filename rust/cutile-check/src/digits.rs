//! Store-index maps built with `//` and `%`: mixed-radix digits of the block ids.
//!
//! The argument, for a block id `x` in `[0, g)` and divisors `d >= 1`:
//!
//! 1. **Normalize** (`Poly::normalize_divisions`, every divisor assumed `>= 1` and that
//!    assumption discharged here, statically or as the launch predicate `1 <= d`):
//!    `x % d == x - d * (x // d)`, nested quotients merge, multiples split off. A map that
//!    only *looks* non-affine, such as `(x // H) * H + x % H == x`, is now affine and is
//!    proved by the affine prover.
//! 2. **Digits.** Otherwise the quotients `x // D1, ..., x // Dk` of each block id must form
//!    a divisibility chain `D1 | D2 | ... | Dk` (`D(i+1) = D(i) * e(i)`, symbolic monomials
//!    allowed: `H`, `A * B`). Then `x` has the mixed-radix digits
//!    `r0 = x - D1 * (x // D1)` in `[0, D1)`, `ri` in `[0, e(i))`, and the top digit
//!    `q = x // Dk` in `[0, cdiv(g, Dk))`, with `x = r0 + D1 * r1 + ... + Dk * q`. This
//!    representation is unique, so `x -> digits` is injective, and every quotient
//!    `x // Di` is an affine function of the digits. Substituted, the map is affine in the
//!    digits (and the other block ids) with launch-known coefficients.
//! 3. **Injectivity on the digit box.** Two blocks with the same tile give a digit
//!    difference `w != 0` with `A w = 0` and `|w_v| < n_v` for each bounded digit `v`. A
//!    row whose variables can be ordered so that each coefficient exceeds what all lower
//!    ones can sum to (`|c_i| >= 1 + sum_{l<i} |c_l| (n_l - 1)`, *superincreasing*; only
//!    the top one may be unbounded) forces all its variables' differences to 0: the top
//!    term cannot be cancelled by the lower ones, then induct. Rows are peeled until no
//!    more progress; the variables left must have a full-column-rank coefficient matrix
//!    (integer kernel vector test, or a nonzero determinant). The top digit and block ids
//!    without divisors count as unbounded: the proof holds for every grid.
//! 4. **Bounds on the digit box**, which contains every digit tuple of a real block, so an
//!    upper bound there is sound (a box bound that fails for every launch proves nothing:
//!    the search of `search.rs` then looks for a concrete block outside the partition).

use crate::bounds::launch_le;
use crate::bounds::{worse, Ranges, Rung};
use crate::launch_pred;
use crate::prover::{affine_in, affine_proof, degenerate, det_poly, kernel_vector, StoreMapProof};
use crate::sym::{Atom, Monomial, Poly};
use cutile_facts::{CmpOp, Pred};

/// The outcome of the digit prover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Digits {
    Done(StoreMapProof),
    /// No injectivity proof (the map may collide: search for a pair).
    NotInjective(String),
    /// Injective, but the bounds fail on the digit box for every launch (search for a
    /// block outside the partition).
    BoundsRefuted(String),
}

/// Loop-variable ids standing for digits: `DIGIT + 16 * axis + position`.
const DIGIT: u32 = 0xE000_0000;
/// Longest divisor chain per block id.
const MAX_CHAIN: usize = 8;

/// A variable of the digit map.
struct Var {
    atom: Atom,
    /// Extent for the injectivity argument; `None` when unbounded.
    extent: Option<Poly>,
    /// Largest value on a launch (for bounds).
    top: Poly,
}

pub fn prove(comps: &[Poly], tiles: &[Poly], ranges: &Ranges, nb: usize, fixed: &[bool]) -> Digits {
    let mut used: Vec<Poly> = Vec::new();
    let norm: Vec<Poly> = comps
        .iter()
        .map(|c| c.normalize_divisions(&mut used))
        .collect();
    if norm
        .iter()
        .any(|c| c.any_atom(&|a| matches!(a, Atom::Opaque(_))))
    {
        return Digits::NotInjective("the index map is too large to reason about".into());
    }
    let Some((facts, pre)) = assume_divisors(&used, ranges) else {
        return Digits::NotInjective(
            "cannot show that every divisor is at least 1 before the launch".into(),
        );
    };
    let with_pre = |p: StoreMapProof| match p {
        StoreMapProof::Proved(r) => StoreMapProof::Proved(worse(pre.clone(), r)),
        p => p,
    };
    if let Some(p) = affine_proof(&norm, tiles, &facts, nb, fixed) {
        return match p {
            StoreMapProof::Unprovable(why) => Digits::NotInjective(why),
            p => Digits::Done(with_pre(p)),
        };
    }
    let (vars, coef, rest) = match to_digits(&norm, &ranges.grid, nb, fixed) {
        Ok(d) => d,
        Err(why) => return Digits::NotInjective(why),
    };
    let injective = match injective(&coef, &vars, &facts) {
        Some(r) => r,
        None => {
            return Digits::NotInjective(
                "the index does not determine every digit of the block ids".into(),
            )
        }
    };
    // Bounds of each component over the digit box.
    let mut bounds = Rung::Static;
    for (i, row) in coef.iter().enumerate() {
        let Some(t) = tiles.get(i) else {
            return Digits::Done(StoreMapProof::Unprovable(
                "the index has more components than the partition".into(),
            ));
        };
        let mut lo = rest[i].clone();
        let mut hi = rest[i].clone();
        for (k, v) in row.iter().zip(&vars) {
            if k.terms.is_empty() {
                continue;
            }
            let span = k.mul(&v.top);
            match sign(k, &facts) {
                Some(true) => hi = hi.add(&span),
                Some(false) => lo = lo.add(&span),
                None => {
                    lo = lo.add(&Poly::zero().pmin(&span));
                    hi = hi.add(&Poly::zero().pmax(&span));
                }
            }
        }
        let last = t.sub(&Poly::c(1));
        let low = degenerate(facts.decide_le(&Poly::zero(), &lo), &lo);
        let high = degenerate(facts.decide_le(&hi, &last), &last.sub(&hi));
        if low == Rung::Refuted || high == Rung::Refuted {
            return Digits::BoundsRefuted(format!(
                "cannot prove that the index stays inside the partition on axis {i}"
            ));
        }
        let low = match low {
            Rung::Launch(_) => launch_le(&Poly::zero(), &lo),
            r => r,
        };
        let high = match high {
            Rung::Launch(_) => launch_le(&hi, &last),
            r => r,
        };
        bounds = worse(bounds, worse(low, high));
    }
    Digits::Done(StoreMapProof::Proved(worse(pre, worse(injective, bounds))))
}

/// Every divisor relied on is `>= 1`: statically, or by a launch predicate (joined in the
/// returned rung, and registered as a fact in the returned ranges). `None` when some
/// divisor is not known at launch or is never positive.
fn assume_divisors(used: &[Poly], ranges: &Ranges) -> Option<(Ranges, Rung)> {
    let mut facts = ranges.clone();
    let mut pre: Vec<Pred> = Vec::new();
    for d in used {
        if !positive(d, &mut facts, &mut pre) {
            return None;
        }
    }
    pre.sort_by(|a, b| a.text.cmp(&b.text));
    let rung = pre
        .into_iter()
        .fold(Rung::Static, |r, p| worse(r, Rung::Launch(p)));
    Some((facts, rung))
}

/// The digit form of normalized polynomials: the variables (digits of each block id with
/// a divisor, the block id itself otherwise; none for `fixed` axes), and each polynomial as
/// `coef . vars + rest` with launch-known coefficients and rest.
#[allow(clippy::type_complexity)]
fn to_digits(
    norm: &[Poly],
    grid: &[Poly; 3],
    nb: usize,
    fixed: &[bool],
) -> Result<(Vec<Var>, Vec<Vec<Poly>>, Vec<Poly>), String> {
    // The digit chain of each block id.
    let mut chains: Vec<Vec<Poly>> = vec![Vec::new(); nb];
    for c in norm {
        for m in c.terms.keys() {
            for a in m {
                match a {
                    Atom::BlockId(_) => {}
                    Atom::FloorDiv(x, d) => match x.as_atom() {
                        Some(Atom::BlockId(j))
                            if (*j as usize) < nb && d.launch_known() && !d.terms.is_empty() =>
                        {
                            let ch = &mut chains[*j as usize];
                            if !ch.contains(d) {
                                ch.push((**d).clone());
                            }
                        }
                        _ if !Poly::atom(a.clone()).launch_known() => {
                            return Err("a quotient in the index is not `block_id(k) // d`".into())
                        }
                        _ => {}
                    },
                    a if !Poly::atom(a.clone()).launch_known() => {
                        return Err(
                            "the index uses a block id inside an operation other than `//` and `%`"
                                .into(),
                        )
                    }
                    _ => {}
                }
            }
        }
    }
    // Variables and the substitution block id / quotient -> digits.
    let mut vars: Vec<Var> = Vec::new();
    let mut digit_polys = norm.to_vec();
    for (j, divs) in chains.iter().enumerate() {
        let x = Atom::BlockId(j as u8);
        let g = grid[j].clone();
        if fixed.get(j).copied().unwrap_or(false) {
            continue;
        }
        if divs.is_empty() {
            vars.push(Var {
                atom: x,
                extent: None,
                top: g.sub(&Poly::c(1)),
            });
            continue;
        }
        let chain =
            order_chain(divs).ok_or("the divisors of one block id do not divide one another")?;
        // Digit i has weight w[i] (w[0] = 1, w[i] = chain[i-1]); the last digit is q.
        let k = chain.len();
        let mut weights: Vec<Poly> = vec![Poly::c(1)];
        weights.extend(chain.iter().cloned());
        let atoms: Vec<Atom> = (0..=k)
            .map(|i| Atom::Loop(DIGIT + 16 * j as u32 + i as u32))
            .collect();
        for i in 0..=k {
            let (extent, top) = if i < k {
                // r_i ranges over [0, w[i+1] / w[i]).
                let e =
                    quotient(&weights[i + 1], &weights[i]).ok_or("a digit extent is not exact")?;
                (Some(e.clone()), e.sub(&Poly::c(1)))
            } else {
                (None, g.cdiv(&chain[k - 1]).sub(&Poly::c(1)))
            };
            vars.push(Var {
                atom: atoms[i].clone(),
                extent,
                top,
            });
        }
        // x // chain[i] = sum over digits l > i of (w[l] / chain[i]) * digit_l.
        for (i, d) in chain.iter().enumerate() {
            let mut by = Poly::zero();
            for l in (i + 1)..=k {
                let f = quotient(&weights[l], d).ok_or("a digit weight is not exact")?;
                by = by.add(&f.mul(&Poly::atom(atoms[l].clone())));
            }
            let q = Atom::FloorDiv(Box::new(Poly::atom(x.clone())), Box::new(d.clone()));
            digit_polys = digit_polys.iter().map(|c| c.substitute(&q, &by)).collect();
        }
        let mut xs = Poly::zero();
        for (w, a) in weights.iter().zip(&atoms) {
            xs = xs.add(&w.mul(&Poly::atom(a.clone())));
        }
        digit_polys = digit_polys.iter().map(|c| c.substitute(&x, &xs)).collect();
    }
    // Affine in the variables, with launch-known coefficients.
    let not_affine = || "the index is not affine in the digits of the block ids".to_string();
    let mut coef: Vec<Vec<Poly>> = Vec::new();
    let mut rest: Vec<Poly> = Vec::new();
    for c in &digit_polys {
        let mut row = Vec::new();
        let mut r = c.clone();
        for v in &vars {
            match affine_in(&r, &v.atom) {
                Some((k, rr)) if k.launch_known() => {
                    row.push(k);
                    r = rr;
                }
                _ => return Err(not_affine()),
            }
        }
        if !r.launch_known() {
            return Err(not_affine());
        }
        coef.push(row);
        rest.push(r);
    }
    Ok((vars, coef, rest))
}

/// `0 <= p <= count - 1` for a load or sub-tile index built with `//` and `%` of block
/// ids (`bounds.rs` asks when the block ids are not linear): bounds over the digit box,
/// with the divisor predicates. `None` when the digit form does not apply or the box
/// bound fails (the box is larger than the real blocks, so a failing box bound refutes
/// nothing); the caller then falls back to a device check.
pub fn decide_index(ranges: &Ranges, p: &Poly, count: &Poly) -> Option<Rung> {
    if p.any_atom(&|a| matches!(a, Atom::Loop(_) | Atom::Opaque(_))) || !count.launch_known() {
        return None;
    }
    let mut used = Vec::new();
    let norm = p.normalize_divisions(&mut used);
    if norm.any_atom(&|a| matches!(a, Atom::Opaque(_))) {
        return None;
    }
    let (facts, pre) = assume_divisors(&used, ranges)?;
    let (vars, coef, rest) = to_digits(&[norm], &facts.grid, 3, &[]).ok()?;
    let (mut lo, mut hi) = (rest[0].clone(), rest[0].clone());
    for (k, v) in coef[0].iter().zip(&vars) {
        if k.terms.is_empty() {
            continue;
        }
        match sign(k, &facts)? {
            true => hi = hi.add(&k.mul(&v.top)),
            false => lo = lo.add(&k.mul(&v.top)),
        }
    }
    let last = count.sub(&Poly::c(1));
    let low = match facts.decide_le(&Poly::zero(), &lo) {
        Rung::Launch(_) => launch_le(&Poly::zero(), &lo),
        Rung::Static => Rung::Static,
        _ => return None,
    };
    let high = match facts.decide_le(&hi, &last) {
        Rung::Launch(_) => launch_le(&hi, &last),
        Rung::Static => Rung::Static,
        _ => return None,
    };
    Some(worse(pre, worse(low, high)))
}

/// Record that `d >= 1`: statically true, or a launch predicate (`1 <= H` for each
/// symbolic factor of a monomial divisor, registered as a fact). `false` when `d` is not
/// known at launch or is never positive.
fn positive(d: &Poly, facts: &mut Ranges, pre: &mut Vec<Pred>) -> bool {
    if !d.launch_known() {
        return false;
    }
    if let Some((k, m)) = d.as_monomial() {
        if k >= 1 {
            for a in m {
                if facts.atom_lb(a).is_some_and(|lb| lb >= 1) {
                    continue;
                }
                let p = Poly::atom(a.clone());
                match facts.decide_le(&Poly::c(1), &p) {
                    Rung::Static => {}
                    Rung::Launch(_) => match launch_pred::le(&Poly::c(1), &p) {
                        Some(q) if !pre.contains(&q) => pre.push(q),
                        Some(_) => {}
                        None => return false,
                    },
                    _ => return false,
                }
                facts.positive.insert(a.clone());
            }
            return true;
        }
    }
    match facts.decide_le(&Poly::c(1), d) {
        Rung::Static => true,
        Rung::Launch(_) => match launch_pred::le(&Poly::c(1), d) {
            Some(q) => {
                if !pre.contains(&q) {
                    pre.push(q);
                }
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// `a / b` for monomials (`k1 * m1` by `k2 * m2`), when exact.
fn quotient(a: &Poly, b: &Poly) -> Option<Poly> {
    if b.as_const() == Some(1) {
        return Some(a.clone());
    }
    let (ka, ma) = a.as_monomial()?;
    let (kb, mb) = b.as_monomial()?;
    if kb == 0 || ka % kb != 0 {
        return None;
    }
    let mut left: Monomial = ma.clone();
    for x in mb {
        let i = left.iter().position(|y| y == x)?;
        left.remove(i);
    }
    let mut q = Poly::c(ka / kb);
    for x in left {
        q = q.mul(&Poly::atom(x));
    }
    Some(q)
}

/// The divisors in an order where each divides the next.
fn order_chain(divs: &[Poly]) -> Option<Vec<Poly>> {
    if divs.len() > MAX_CHAIN {
        return None;
    }
    if divs.len() == 1 {
        return Some(divs.to_vec());
    }
    let mut left = divs.to_vec();
    let mut out = Vec::new();
    while !left.is_empty() {
        let i = (0..left.len()).find(|&i| left.iter().all(|d| quotient(d, &left[i]).is_some()))?;
        out.push(left.remove(i));
    }
    Some(out)
}

/// `Some(true)` for `k >= 0`, `Some(false)` for `k <= 0`, on every launch.
fn sign(k: &Poly, facts: &Ranges) -> Option<bool> {
    if facts.decide_le(&Poly::zero(), k) == Rung::Static {
        Some(true)
    } else if facts.decide_le(k, &Poly::zero()) == Rung::Static {
        Some(false)
    } else {
        None
    }
}

/// `|k|` when its sign is known.
fn magnitude(k: &Poly, facts: &Ranges) -> Option<Poly> {
    match sign(k, facts)? {
        true => Some(k.clone()),
        false => Some(k.scale(-1)),
    }
}

/// Is `coef * w == 0` with `|w_v| < extent_v` only for `w == 0`? `Some(rung)` when proved
/// (a launch rung when it rests on a determinant), `None` otherwise.
fn injective(coef: &[Vec<Poly>], vars: &[Var], facts: &Ranges) -> Option<Rung> {
    let n = vars.len();
    let mut alive = vec![true; n];
    loop {
        let mut progress = false;
        for row in coef {
            let vs: Vec<usize> = (0..n)
                .filter(|&v| alive[v] && !row[v].terms.is_empty())
                .collect();
            if !vs.is_empty() && superincreasing(row, &vs, vars, facts) {
                for v in vs {
                    alive[v] = false;
                }
                progress = true;
            }
        }
        if !progress {
            break;
        }
    }
    let left: Vec<usize> = (0..n).filter(|&v| alive[v]).collect();
    if left.is_empty() {
        return Some(Rung::Static);
    }
    let rows: Vec<Vec<Poly>> = coef
        .iter()
        .map(|row| left.iter().map(|&v| row[v].clone()).collect::<Vec<_>>())
        .filter(|r: &Vec<Poly>| r.iter().any(|k| !k.terms.is_empty()))
        .collect();
    if rows
        .iter()
        .flatten()
        .any(|k| k.as_const().is_some_and(|v| v.abs() > 1 << 20))
    {
        // Elimination on such entries could overflow; nothing proved.
        return None;
    }
    if rows.iter().flatten().all(|k| k.as_const().is_some()) {
        let m: Vec<Vec<i128>> = rows
            .iter()
            .map(|r| r.iter().map(|k| k.as_const().unwrap_or(0)).collect())
            .collect();
        return matches!(kernel_vector(&m, left.len()), Ok(None)).then_some(Rung::Static);
    }
    if rows.len() != left.len() || rows.len() > 3 {
        return None;
    }
    let det = det_poly(&rows);
    match det.as_const() {
        Some(0) => None,
        Some(_) => Some(Rung::Static),
        None => launch_pred::compare(&det, CmpOp::Ne, &Poly::zero(), format!("{det} != 0"))
            .map(Rung::Launch),
    }
}

/// Can the variables `vs` of `row` be ordered superincreasingly (each `|coefficient|` at
/// least 1 plus the most all lower ones can sum to; only the top one unbounded)?
fn superincreasing(row: &[Poly], vs: &[usize], vars: &[Var], facts: &Ranges) -> bool {
    let mut mags = Vec::with_capacity(vs.len());
    for &v in vs {
        match magnitude(&row[v], facts) {
            Some(m) => mags.push((v, m)),
            None => return false,
        }
    }
    let mut sum = Poly::zero();
    while !mags.is_empty() {
        let placeable: Vec<usize> = (0..mags.len())
            .filter(|&i| {
                let (v, m) = &mags[i];
                (vars[*v].extent.is_some() || mags.len() == 1)
                    && facts.decide_le(&sum.add(&Poly::c(1)), m) == Rung::Static
            })
            .collect();
        // The smallest placeable coefficient keeps the sum low for the ones above it.
        let Some(&pick) = placeable
            .iter()
            .find(|&&i| {
                placeable
                    .iter()
                    .all(|&o| facts.decide_le(&mags[i].1, &mags[o].1) == Rung::Static)
            })
            .or(placeable.first())
        else {
            return false;
        };
        let (v, m) = mags.remove(pick);
        if let Some(e) = &vars[v].extent {
            sum = sum.add(&m.mul(&e.sub(&Poly::c(1))));
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn b(k: u8) -> Poly {
        Poly::atom(Atom::BlockId(k))
    }

    fn h() -> Poly {
        Poly::atom(Atom::Const("H".into()))
    }

    fn ranges(n: usize) -> Ranges {
        Ranges {
            grid: std::array::from_fn(|k| {
                if k < n {
                    Poly::atom(Atom::Grid(k as u8))
                } else {
                    Poly::c(1)
                }
            }),
            ..Default::default()
        }
    }

    #[test]
    fn chains_order_by_divisibility() {
        let a = Poly::atom(Atom::Const("A".into()));
        let ab = a.mul(&Poly::atom(Atom::Const("B".into())));
        assert_eq!(
            order_chain(&[ab.clone(), a.clone()]),
            Some(vec![a.clone(), ab.clone()])
        );
        assert_eq!(
            order_chain(&[Poly::c(6), Poly::c(2)]),
            Some(vec![Poly::c(2), Poly::c(6)])
        );
        assert_eq!(order_chain(&[Poly::c(2), Poly::c(3)]), None);
        assert_eq!(quotient(&ab, &a), Some(Poly::atom(Atom::Const("B".into()))));
        assert_eq!(quotient(&Poly::c(6), &Poly::c(4)), None);
    }

    #[test]
    fn reversed_head_load_is_bounded_at_launch() {
        // b * H + (H - 1 - h) with b = x // H, h = x % H, against dim(src, 0) tiles.
        let x = b(0);
        let idx = x
            .floordiv(&h())
            .mul(&h())
            .add(&h().sub(&Poly::c(1)).sub(&x.modulo(&h())));
        let count = Poly::atom(Atom::Dim("src".into(), 0));
        match ranges(2).decide_index(&idx, &count) {
            Rung::Launch(p) => assert_eq!(p.text, "1 <= H && H * cdiv(grid(0), H) <= dim(src, 0)"),
            other => panic!("{other:?}"),
        }
    }

    /// One generated term: `coeff * f(block_id(axis))`.
    fn term(p: &(usize, u8, i8), d: &Poly) -> Poly {
        let x = b(p.0 as u8);
        let f = match p.1 {
            0 => x,
            1 => x.floordiv(d),
            2 => x.modulo(d),
            3 => x.floordiv(d).floordiv(&Poly::c(2)),
            _ => x.floordiv(d).modulo(&Poly::c(2)),
        };
        let k = if p.2 == 3 {
            d.clone()
        } else {
            Poly::c(i128::from(p.2))
        };
        f.mul(&k)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// A load index bounded on the digit box: whenever the rung says static, or its
        /// launch predicate holds, every block's index is inside `[0, count)`.
        #[test]
        fn digit_bounds_agree_with_brute_force(
            terms in proptest::collection::vec((0usize..2, 0u8..5, -2i8..=3), 1..=3),
            symbolic in proptest::bool::ANY,
            dval in 1i128..=3,
            off in -1i128..=2,
            count in 1i128..=12,
            grid in proptest::collection::vec(1i128..=6, 2),
            hv in 1i128..=3,
        ) {
            let d = if symbolic { h() } else { Poly::c(dval) };
            let mut p = Poly::c(off);
            for t in &terms {
                p = p.add(&term(t, &d));
            }
            let r = ranges(2);
            let rung = r.decide_index(&p, &Poly::c(count));
            let env_grid = |a: &Atom| match a {
                Atom::Grid(k) => grid.get(*k as usize).copied(),
                Atom::Const(n) if n == "H" => Some(hv),
                _ => None,
            };
            let inside = (0..grid[0]).all(|x| (0..grid[1]).all(|y| {
                let v = p.eval(&|a: &Atom| match a {
                    Atom::BlockId(0) => Some(x),
                    Atom::BlockId(1) => Some(y),
                    a => env_grid(a),
                });
                v.is_some_and(|v| (0..count).contains(&v))
            }));
            match rung {
                Rung::Static => prop_assert!(inside, "{p} static but fails on {grid:?}, H = {hv}"),
                Rung::Launch(pred) => {
                    let env = |a: &cutile_facts::Atom| match a {
                        cutile_facts::Atom::Grid(k) => grid.get(usize::from(*k)).copied(),
                        cutile_facts::Atom::Const(n) if n == "H" => Some(hv),
                        _ => None,
                    };
                    if pred.eval(&env).unwrap_or(false) {
                        prop_assert!(inside, "{p}: `{pred}` holds but fails on {grid:?}, H = {hv}");
                    }
                }
                Rung::Refuted => prop_assert!(!inside || p.as_const().is_none(), "{p}"),
                Rung::Device => {}
            }
        }
    }
}
