//! Integer width: the device computes in fixed-width integers, the prover in exact ones.
//!
//! The lowering folds arithmetic on compile-time values (literals, `Const`s) exactly, and
//! emits every other integer operation in the type of its operands: `i32` for block ids,
//! grid and tensor extents, tile counts and loop counters, a scalar parameter's own type
//! (`i8`..`i64`); a constant takes its partner's type. Such an operation wraps on overflow.
//! So a device result the prover cannot show to fit its type is not the polynomial it
//! would be over the integers: the checker replaces it by an opaque value and remembers
//! what it would be (`Checker::wrap`). Where an index is used (a store, a load, a
//! sub-tile), the opaque values are replaced back by their polynomials together with the
//! condition that each fits (`Checker::unwrap`): a condition decided at launch becomes
//! part of the access's launch predicate; one that cannot be decided leaves the value
//! opaque (a store is then unprovable; a load keeps its device assert, which checks the
//! value the device really computed). Every index finally converts to `i32`, so each
//! component must fit 32 bits as well.

use crate::bounds::Ranges;
use crate::sym::{Atom, Monomial, Poly};

/// Bits of the integers the lowering emits for tile indices (`KernelFacts::index_width`).
pub const INDEX_BITS: u8 = 32;

/// CUDA's grid limits: x up to 2^31 - 1, y and z up to 65,535 (the launcher refuses
/// larger grids, CT6109).
pub const GRID_MAX: [i128; 3] = [(1 << 31) - 1, 65_535, 65_535];

/// Tensor extents are at most 2^31 - 1 (the launcher refuses larger ones, CT6111).
pub const DIM_MAX: i128 = (1 << 31) - 1;

/// The smallest and largest value of a signed `bits`-bit integer.
pub fn signed_range(bits: u8) -> (i128, i128) {
    let half = 1i128 << (bits.clamp(1, 64) - 1);
    (-half, half - 1)
}

/// The width of the device integer a value is computed in: 0 for a compile-time value
/// (folded exactly by the lowering), else the widest of its device atoms.
pub fn width(p: &Poly, scalar_bits: &dyn Fn(&str) -> Option<u8>) -> u8 {
    let mut w = 0u8;
    p.visit_atoms(&mut |a| {
        let b = match a {
            Atom::Const(_) => 0,
            Atom::Scalar(n) => scalar_bits(n).unwrap_or(64),
            Atom::FloorDiv(..) | Atom::Mod(..) | Atom::Cdiv(..) | Atom::Min(..) | Atom::Max(..) => {
                0
            }
            // Block ids, grid extents, tile counts, tensor extents, loop counters, and
            // opaque device values.
            _ => INDEX_BITS,
        };
        w = w.max(b);
    });
    w
}

/// `p` with every atom `f` maps replaced (inside compound atoms too), re-normalized.
pub fn substitute_deep(p: &Poly, f: &dyn Fn(&Atom) -> Option<Poly>) -> Poly {
    let mut out = Poly::zero();
    for (m, c) in p.terms.iter() {
        let mut term = Poly::c(*c);
        for a in m {
            term = term.mul(&substitute_atom(a, f));
        }
        out = out.add(&term);
    }
    out
}

fn substitute_atom(a: &Atom, f: &dyn Fn(&Atom) -> Option<Poly>) -> Poly {
    if let Some(p) = f(a) {
        return p;
    }
    let sub = |x: &Poly| substitute_deep(x, f);
    match a {
        Atom::FloorDiv(x, y) => sub(x).floordiv(&sub(y)),
        Atom::Mod(x, y) => sub(x).modulo(&sub(y)),
        Atom::Cdiv(x, y) => sub(x).cdiv(&sub(y)),
        Atom::Min(x, y) => sub(x).pmin(&sub(y)),
        Atom::Max(x, y) => sub(x).pmax(&sub(y)),
        a => Poly::atom(a.clone()),
    }
}

/// Every value `p` takes on any launch, as a numeric interval (`None`: unbounded), from the
/// launch rules' limits on grids and extents, the parameters' types, and the loop ranges.
/// Products `(x // y) * y` count as `x - x % y`, so recombined digits stay bounded.
pub fn interval(p: &Poly, r: &Ranges) -> Option<(i128, i128)> {
    interval_depth(&recombine_digits(p), r, 0)
}

const MAX_DEPTH: usize = 12;

fn interval_depth(p: &Poly, r: &Ranges, depth: usize) -> Option<(i128, i128)> {
    if depth > MAX_DEPTH {
        return None;
    }
    let (mut lo, mut hi) = (0i128, 0i128);
    for (m, c) in p.terms.iter() {
        if let Some(t) = own_tile_offset(m, *c, r) {
            lo = lo.checked_add(t.0)?;
            hi = hi.checked_add(t.1)?;
            continue;
        }
        let t = match quotient_product(m, r, depth)
            .or_else(|| remainder_product(m, r))
            .or_else(|| materialized(m, r))
        {
            Some(q) => mul((*c, *c), q)?,
            None => {
                let mut t = (*c, *c);
                for a in m {
                    t = mul(t, atom_interval(a, r, depth)?)?;
                }
                t
            }
        };
        lo = lo.checked_add(t.0)?;
        hi = hi.checked_add(t.1)?;
    }
    Some((lo, hi))
}

/// `s * block_id(k) * T_k` where `T_k` is an output's tile size on axis `k` of a regular
/// launch (grid == partition grid): the first element of the block's own tile along `k`,
/// times `s`. The launch rule `grid(k) == cdiv(dim(z, k), T_k)` (`extent_floors`) gives
/// `block_id(k) * T_k <= (grid(k) - 1) * T_k <= dim(z, k) - 1 < 2^31 - 1`, however large
/// the grid limit times the tile may be (`(m * BM) // BN` in causal attention's loop
/// bounds). Launches with an empty output run nothing.
fn own_tile_offset(m: &Monomial, c: i128, r: &Ranges) -> Option<(i128, i128)> {
    let k = m.iter().find_map(|a| match a {
        Atom::BlockId(k) => Some(*k),
        _ => None,
    })?;
    let mut on_grid: Monomial = m
        .iter()
        .map(|a| match a {
            Atom::BlockId(j) if *j == k => Atom::Grid(k),
            a => a.clone(),
        })
        .collect();
    on_grid.sort();
    let scale = r.extent_floors.iter().find_map(|f| {
        let (ct, gm) = f.ceiling.as_monomial()?;
        (ct >= 1 && c % ct == 0 && gm.contains(&Atom::Grid(k)) && key(gm) == on_grid)
            .then_some(c / ct)
    })?;
    mul((scale, scale), (0, DIM_MAX - 1))
}

/// A divisor as a product: its coefficient and atoms, looking through a device result
/// to the polynomial it was computed from.
fn divisor_monomial(y: &Poly, r: &Ranges) -> Option<(i128, Monomial)> {
    let y = match y.as_atom() {
        Some(Atom::Opaque(id)) => r.exact.get(id)?,
        _ => y,
    };
    let (c, m) = y.as_monomial()?;
    Some((c, m.clone()))
}

/// Sorted atoms of a monomial (a multiset key).
fn key(m: &[Atom]) -> Monomial {
    let mut k = m.to_vec();
    k.sort();
    k
}

/// A product of `Const`s the device received as one constant (`k * (A * B)`): the
/// compiler refuses a constant that does not fit 32 bits (CT3052), so a kernel that runs
/// has it within them. Returns the product's range without the coefficient `k`.
fn materialized(m: &Monomial, r: &Ranges) -> Option<(i128, i128)> {
    if m.len() < 2 || m.iter().any(|a| !matches!(a, Atom::Const(_))) {
        return None;
    }
    let want = key(m);
    let k = r
        .materialized
        .iter()
        .filter(|(_, atoms)| key(atoms) == want)
        .map(|(k, _)| k.abs())
        .min()?;
    let (lo, hi) = signed_range(INDEX_BITS);
    Some((lo / k, hi / k))
}

/// `(x % y) * r1 * ... * rn`, all factors `>= 1`, where `y * r1 * ... * rn` is a
/// materialized constant: below that constant, so within 32 bits. (Recombined digits
/// `a * B` with `a = x % A` next to `c * (A * B)`.)
fn remainder_product(m: &Monomial, r: &Ranges) -> Option<(i128, i128)> {
    let (i, y) = m.iter().enumerate().find_map(|(i, a)| match a {
        Atom::Mod(_, y) => Some((i, y)),
        _ => None,
    })?;
    let (cy, mut all) = divisor_monomial(y, r)?;
    if cy < 1 || m.len() < 2 {
        return None;
    }
    for (j, a) in m.iter().enumerate() {
        if j != i {
            all.push(a.clone());
        }
    }
    if !all.iter().all(|a| r.atom_lb(a).is_some_and(|v| v >= 1)) {
        return None;
    }
    let want = key(&all);
    r.materialized
        .iter()
        .any(|(k, atoms)| key(atoms) == want && k.abs() >= cy)
        .then_some((0, signed_range(INDEX_BITS).1))
}

/// `(x // y) * r1 * ... * rn` with every `ri` a factor of `y` (all of them `>= 1`) and
/// `x >= 0`: at most `x`, since `y / (r1 ... rn) >= 1`. (A grouped swizzle's
/// `(pid // (n * G)) * G`.)
fn quotient_product(m: &Monomial, r: &Ranges, depth: usize) -> Option<(i128, i128)> {
    let (i, x, y) = m.iter().enumerate().find_map(|(i, a)| match a {
        Atom::FloorDiv(x, y) => Some((i, x, y)),
        _ => None,
    })?;
    if m.len() < 2 {
        return None;
    }
    let (cy, mut ys) = divisor_monomial(y, r)?;
    if cy < 1 || ys.iter().any(|a| r.atom_lb(a).is_none_or(|v| v < 1)) {
        return None;
    }
    for (j, a) in m.iter().enumerate() {
        if j == i {
            continue;
        }
        let k = ys.iter().position(|b| b == a)?;
        ys.remove(k);
    }
    let (xl, xh) = interval_depth(x, r, depth + 1)?;
    (xl >= 0).then_some((0, xh))
}

fn mul(a: (i128, i128), b: (i128, i128)) -> Option<(i128, i128)> {
    let c = [
        a.0.checked_mul(b.0)?,
        a.0.checked_mul(b.1)?,
        a.1.checked_mul(b.0)?,
        a.1.checked_mul(b.1)?,
    ];
    Some((*c.iter().min()?, *c.iter().max()?))
}

fn atom_interval(a: &Atom, r: &Ranges, depth: usize) -> Option<(i128, i128)> {
    let sub = |p: &Poly| interval_depth(p, r, depth + 1);
    Some(match a {
        Atom::BlockId(k) => (0, GRID_MAX.get(usize::from(*k))? - 1),
        Atom::Grid(k) => (1, *GRID_MAX.get(usize::from(*k))?),
        Atom::Dim(..) => (0, DIM_MAX),
        Atom::Tiles(..) => (1, DIM_MAX),
        // `Const[int]` values are 32-bit (the launcher refuses others, CT6103).
        Atom::Const(n) if r.shape_consts.contains(n) || r.positive.contains(a) => {
            (1, signed_range(INDEX_BITS).1)
        }
        Atom::Const(_) => signed_range(INDEX_BITS),
        Atom::Scalar(n) => signed_range(*r.scalar_bits.get(n)?),
        Atom::Loop(id) => {
            let (lo, hi) = r.loops.get(id)?;
            (sub(lo)?.0, sub(hi)?.1)
        }
        // A zero divisor is undefined on the device, and no proof uses a quotient or a
        // remainder without showing its divisor `>= 1`; for the width of a result, any
        // other divisor bounds them: |x // y| <= |x|, |x % y| < |y|.
        Atom::FloorDiv(x, y) | Atom::Cdiv(x, y) => {
            let (xl, xh) = sub(x)?;
            let (yl, yh) = sub(y)?;
            if yl < 1 {
                let m = xl.abs().max(xh.abs());
                return Some((-m, m));
            }
            let up = matches!(a, Atom::Cdiv(..));
            let div = |n: i128, d: i128| {
                let q = n.div_euclid(d);
                if up && n.rem_euclid(d) != 0 {
                    q + 1
                } else {
                    q
                }
            };
            let cands = [div(xl, yl), div(xl, yh), div(xh, yl), div(xh, yh)];
            (*cands.iter().min()?, *cands.iter().max()?)
        }
        Atom::Mod(_, y) => {
            let (yl, yh) = sub(y)?;
            if yl >= 1 {
                (0, yh - 1)
            } else {
                let m = yl.abs().max(yh.abs());
                (-(m - 1).max(0), (m - 1).max(0))
            }
        }
        Atom::Min(x, y) => {
            let (a, b) = (sub(x)?, sub(y)?);
            (a.0.min(b.0), a.1.min(b.1))
        }
        Atom::Max(x, y) => {
            let (a, b) = (sub(x)?, sub(y)?);
            (a.0.max(b.0), a.1.max(b.1))
        }
        Atom::Opaque(id) => *r.bounded.get(id)?,
    })
}

/// `p` with each monomial `k * (x // y) * y * rest` (y one atom) rewritten as
/// `k * (x - x % y) * rest`: the floor property keeps recombined digits within `x`.
fn recombine_digits(p: &Poly) -> Poly {
    let mut out = Poly::zero();
    for (m, c) in p.terms.iter() {
        let mut term = Poly::c(*c);
        let mut rest: Monomial = m.clone();
        let mut found: Option<(Poly, Poly)> = None;
        for (i, a) in m.iter().enumerate() {
            if let Atom::FloorDiv(x, y) = a {
                if let Some(ya) = y.as_atom() {
                    if let Some(j) = m.iter().position(|b| b == ya).filter(|j| *j != i) {
                        found = Some(((**x).clone(), (**y).clone()));
                        let (hi, lo) = (i.max(j), i.min(j));
                        rest.remove(hi);
                        rest.remove(lo);
                        break;
                    }
                }
            }
        }
        if let Some((x, y)) = found {
            term = term.mul(&x.sub(&Poly::atom(Atom::Mod(Box::new(x.clone()), Box::new(y)))));
        } else {
            rest = m.clone();
        }
        for a in rest {
            term = term.mul(&Poly::atom(a));
        }
        out = out.add(&term);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_follow_the_lowering() {
        let bits = |n: &str| match n {
            "k" => Some(8),
            _ => None,
        };
        let c = Poly::atom(Atom::Const("C".into()));
        let b = Poly::atom(Atom::BlockId(0));
        let k = Poly::atom(Atom::Scalar("k".into()));
        assert_eq!(width(&c.mul(&Poly::c(3)), &bits), 0);
        assert_eq!(width(&b.add(&c), &bits), 32);
        assert_eq!(width(&k.add(&Poly::c(1)), &bits), 8);
        assert_eq!(width(&k.add(&b), &bits), 32);
        assert_eq!(signed_range(8), (-128, 127));
    }

    /// Ranges of a launch on a two-axis grid of any size.
    fn two_axis_grid() -> Ranges {
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
    fn recombined_digits_stay_within_the_block_id() {
        let mut r = two_axis_grid();
        r.shape_consts.insert("H".into());
        let b0 = Poly::atom(Atom::BlockId(0));
        let h = Poly::atom(Atom::Const("H".into()));
        // (b0 // H) * H + b0 % H
        let idx = b0.floordiv(&h).mul(&h).add(&b0.modulo(&h));
        let (lo, hi) = interval(&idx, &r).expect("bounded");
        assert!(lo >= 0 && hi < 2 * (1i128 << 31), "{lo}..{hi}");
        assert_eq!(
            r.decide_fits(&b0.floordiv(&h).mul(&h), 32),
            crate::bounds::Rung::Static
        );
        // b0 * 2^30 does not fit for every grid
        let big = b0.mul(&Poly::c(1 << 30));
        assert_ne!(r.decide_fits(&big, 32), crate::bounds::Rung::Static);
    }

    #[test]
    fn deep_substitution_renormalizes() {
        // (v // 2^30) with v := b * 2^30 is b again.
        let v = Poly::atom(Atom::Opaque(7));
        let q = v.floordiv(&Poly::c(1 << 30));
        let b = Poly::atom(Atom::BlockId(0));
        let back = substitute_deep(&q, &|a| {
            (a == &Atom::Opaque(7)).then(|| b.mul(&Poly::c(1 << 30)))
        });
        assert_eq!(back, b);
    }

    #[test]
    fn a_block_id_times_its_own_tile_fits_on_regular_launches() {
        // `block_id(1) * BM` with BM the output's tile on axis 1: at most dim - 1
        let mut r = two_axis_grid();
        r.shape_consts.insert("BM".into());
        let bm = Poly::atom(Atom::Const("BM".into()));
        let b1 = Poly::atom(Atom::BlockId(1));
        let row0 = b1.mul(&bm);
        // without the launch rule (a persistent kernel): grid limit x 2^31 does not fit
        assert_ne!(r.decide_fits(&row0, 32), crate::bounds::Rung::Static);
        let g1 = Poly::atom(Atom::Grid(1));
        r.extent_floors.push(crate::bounds::ExtentFloor {
            dim: Atom::Dim("o".into(), 1),
            ceiling: g1.mul(&bm),
            floors: [g1.sub(&Poly::c(1)).mul(&bm).add(&Poly::c(1)), g1.clone()],
        });
        assert_eq!(r.decide_fits(&row0, 32), crate::bounds::Rung::Static);
        assert_eq!(interval(&row0, &r), Some((0, DIM_MAX - 1)));
        // another axis's block id, or the tile squared, is not the own tile's offset
        let b0 = Poly::atom(Atom::BlockId(0));
        assert_ne!(r.decide_fits(&b0.mul(&bm), 32), crate::bounds::Rung::Static);
        assert_ne!(
            r.decide_fits(&row0.mul(&bm), 32),
            crate::bounds::Rung::Static
        );
        // one tile further (`(b + 1) * BM`) may pass 2^31 - 1: not static
        assert_ne!(
            r.decide_fits(&row0.add(&bm), 32),
            crate::bounds::Rung::Static
        );
        // a literal tile: `b * 64` with ceiling `64 * grid(1)`, and `2 * (b * 64)`
        let mut lit = r.clone();
        lit.extent_floors = vec![crate::bounds::ExtentFloor {
            dim: Atom::Dim("o".into(), 1),
            ceiling: g1.mul(&Poly::c(64)),
            floors: [
                g1.sub(&Poly::c(1)).mul(&Poly::c(64)).add(&Poly::c(1)),
                g1.clone(),
            ],
        }];
        let b64 = b1.mul(&Poly::c(64));
        assert_eq!(interval(&b64, &lit), Some((0, DIM_MAX - 1)));
        assert_eq!(interval(&b64.scale(2), &lit), Some((0, 2 * (DIM_MAX - 1))));
        assert_eq!(
            interval(&b1.mul(&Poly::c(32)), &lit).map(|i| i.1 > DIM_MAX),
            Some(false)
        );
    }
}
