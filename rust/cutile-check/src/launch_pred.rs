//! Launch predicates from symbolic integers: the typed trees of `cutile-facts` that the
//! launcher evaluates, with the readable text people see.

use crate::sym::{Atom, Poly};
use cutile_facts::{Atom as FAtom, BinOp, CmpOp, Expr, Pred};
use std::rc::Rc;

/// The launch-time expression of a polynomial; `None` when it mentions something the host
/// does not know (a block id, a loop variable, a device value).
pub fn to_expr(p: &Poly) -> Option<Expr> {
    let mut sum: Option<Expr> = None;
    for (m, c) in p.terms.iter() {
        let mut term = Expr::Int(*c);
        for a in m {
            term = Expr::bin(BinOp::Mul, term, atom_expr(a)?);
        }
        sum = Some(match sum {
            None => term,
            Some(s) => Expr::bin(BinOp::Add, s, term),
        });
    }
    Some(sum.unwrap_or(Expr::Int(0)))
}

fn atom_expr(a: &Atom) -> Option<Expr> {
    let bin = |op, x: &Poly, y: &Poly| Some(Expr::bin(op, to_expr(x)?, to_expr(y)?));
    match a {
        Atom::Grid(k) => Some(Expr::Atom(FAtom::Grid(*k))),
        Atom::Tiles(p, k) => Some(Expr::Atom(FAtom::Tiles {
            param: p.clone(),
            axis: *k,
        })),
        Atom::Dim(p, k) => Some(Expr::Atom(FAtom::Dim {
            param: p.clone(),
            axis: *k,
        })),
        Atom::Const(n) => Some(Expr::Atom(FAtom::Const(n.clone()))),
        Atom::Scalar(n) => Some(Expr::Atom(FAtom::Scalar(n.clone()))),
        Atom::FloorDiv(x, y) => bin(BinOp::FloorDiv, x, y),
        Atom::Mod(x, y) => bin(BinOp::Mod, x, y),
        Atom::Cdiv(x, y) => bin(BinOp::Cdiv, x, y),
        Atom::Min(x, y) => bin(BinOp::Min, x, y),
        Atom::Max(x, y) => bin(BinOp::Max, x, y),
        Atom::BlockId(_) | Atom::Loop(_) | Atom::Opaque(_) => None,
    }
}

/// `lhs op rhs`, printed as `text`; `None` when a side is not launch-known.
pub fn compare(lhs: &Poly, op: CmpOp, rhs: &Poly, text: String) -> Option<Pred> {
    Some(Pred::clause(to_expr(lhs)?, op, to_expr(rhs)?, text))
}

/// `lhs <= rhs`, printed with positive coefficients on both sides.
pub fn le(lhs: &Poly, rhs: &Poly) -> Option<Pred> {
    let (l, r) = le_sides(lhs, rhs);
    compare(&l, CmpOp::Le, &r, format!("{l} <= {r}"))
}

/// `lhs <= rhs` as a readable predicate: terms moved so both sides have positive
/// coefficients (`grid(0) <= cdiv(dim(x, 0), 128)` rather than `... - grid(0) >= 0`).
pub fn le_text(lhs: &Poly, rhs: &Poly) -> String {
    let (l, r) = le_sides(lhs, rhs);
    format!("{l} <= {r}")
}

/// The two sides of `lhs <= rhs` with every coefficient positive.
fn le_sides(lhs: &Poly, rhs: &Poly) -> (Poly, Poly) {
    let d = rhs.sub(lhs); // d >= 0
    let mut pos = Poly::zero();
    let mut neg = Poly::zero();
    for (m, c) in d.terms.iter() {
        if m.is_empty() {
            continue;
        }
        if *c > 0 {
            Rc::make_mut(&mut pos.terms).insert(m.clone(), *c);
        } else {
            Rc::make_mut(&mut neg.terms).insert(m.clone(), -*c);
        }
    }
    let k = d.constant_term();
    // neg <= pos + k, with the constant on the side where it is positive.
    let (left, right) = if k >= 0 {
        (neg, pos.add(&Poly::c(k)))
    } else {
        (neg.add(&Poly::c(-k)), pos)
    };
    (left, right)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(n: &str) -> Poly {
        Poly::atom(Atom::Const(n.into()))
    }

    /// A launch predicate's tree computes what the polynomial means (Python's `//` and
    /// `%`, `cdiv`, `min`, `max`), for every value tried.
    #[test]
    fn trees_evaluate_like_the_polynomials() {
        let g = Poly::atom(Atom::Grid(0));
        let h = a("H");
        let exprs = [
            g.add(&Poly::c(1)).floordiv(&g.modulo(&h)),
            g.floordiv(&h).scale(2),
            g.floordiv(&h).scale(-1).add(&g),
            g.floordiv(&h.scale(2)),
            g.floordiv(&h).floordiv(&Poly::c(3)),
            g.modulo(&h).mul(&g),
            g.scale(-1).floordiv(&Poly::c(2)),
            g.floordiv(&g.sub(&h)),
            g.floordiv(&Poly::c(-2)),
            g.cdiv(&h).pmin(&h).pmax(&Poly::c(2)),
        ];
        for e in &exprs {
            let tree = to_expr(e).expect("launch-known");
            for gv in 1..9 {
                for hv in 1..4 {
                    let want = e.eval(&|x| match x {
                        Atom::Grid(0) => Some(gv),
                        Atom::Const(n) if n == "H" => Some(hv),
                        _ => None,
                    });
                    let got = tree
                        .eval(&|x| match x {
                            FAtom::Grid(0) => Some(gv),
                            FAtom::Const(n) if n == "H" => Some(hv),
                            _ => None,
                        })
                        .ok();
                    assert_eq!(got, want, "`{e}` at g={gv} H={hv}");
                }
            }
        }
        assert!(to_expr(&Poly::atom(Atom::BlockId(0))).is_none());
    }

    #[test]
    fn le_prints_positive_sides() {
        let g = Poly::atom(Atom::Grid(0));
        let p = le(&g, &a("N").sub(&Poly::c(1))).expect("launch-known");
        assert_eq!(p.text, "grid(0) + 1 <= N");
    }
}
