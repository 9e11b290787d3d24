//! Memory effects of the DSL operations (`docs/kernel-ast.md`, "The DSL names the checker
//! must know") and the integer semantics of the pure ones the provers read.

use crate::bounds::Rung;
use crate::check::Checker;
use crate::errors;
use crate::state::{State, Val};
use crate::sym::{Atom, Poly};
use crate::width::INDEX_BITS;
use cutile_kast::ops::{table, Signature};
use cutile_kast::{BinOp, Expr, Span};

/// `+ - * // %` with an operand that is a device value of 32 bits or more (`wide_device`)
/// is computed in that type or wider: a narrow operand is promoted (sign- or
/// zero-extended, numpy's rules), so its value (the exact polynomial of a narrow scalar,
/// or of a `min`/`max` of one; an opaque otherwise) enters unchanged, and only the
/// 32-bit-or-wider result may wrap, as `width.rs` models. Without such an operand (a
/// constant takes its partner's type: `s + 200` is an `i8` sum) the result is narrow.
fn promoted(c: &Checker<'_>, op: BinOp, a: &Poly, b: &Poly) -> bool {
    matches!(
        op,
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Floordiv | BinOp::Mod
    ) && (c.wide_device(a) || c.wide_device(b))
}

/// Integer arithmetic on abstract values. Between compile-time values it is exact (the
/// lowering folds it); otherwise it is a device operation in the operands' width, whose
/// result may wrap (`width.rs`).
pub fn arith(c: &mut Checker<'_>, op: BinOp, l: &Val, r: &Val, span: Span) -> Val {
    let (Val::Int(a), Val::Int(b)) = (l, r) else {
        return c.fresh_opaque();
    };
    if (c.narrow(l) || c.narrow(r)) && !promoted(c, op, a, b) {
        return c.fresh_opaque();
    }
    let bits = c.width_of(a).max(c.width_of(b));
    let exact = match exact_arith(op, a, b) {
        Some(p) => p,
        None => return c.fresh_opaque(),
    };
    if bits > 0 {
        // A compile-time operand becomes one constant of the other operand's type.
        for (k, partner) in [(a, b), (b, a)] {
            if c.width_of(k) == 0 && materializes_in_i32(c, partner) {
                if let Some((coef, atoms)) = k.as_monomial() {
                    if atoms.len() > 1 {
                        c.ranges.materialized.push((coef, atoms.clone()));
                    }
                }
            }
            if let Some(v) = k.as_const() {
                let (lo, hi) = crate::width::signed_range(bits);
                if !(lo..=hi).contains(&v) {
                    c.report(errors::constant_too_wide(v, bits, span));
                    return c.fresh_opaque();
                }
            }
        }
    }
    // `//` and `%` of representable operands are representable (a divisor the proofs rely
    // on is shown `>= 1`; the device's only overflow, `INT_MIN // -1`, needs -1); sums,
    // differences and products may wrap.
    let may_wrap = matches!(
        op,
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Lshift | BinOp::Pow
    ) || (op == BinOp::Floordiv && bits > 0 && min_over_minus_one(c, a, b, bits));
    let out = if may_wrap { c.wrap(exact, bits) } else { exact };
    // A device result is one even where its polynomial lost every device atom (`b - b`).
    Val::Int(c.device_valued(out, bits))
}

/// Does a compile-time operand meeting `partner` become an `i32` constant of a kernel that
/// is compiled in every specialization, so that the lowering refuses it past 32 bits
/// (CT3052) and a kernel that runs has it within them (`width::materialized`)? Only where
/// `partner` is certainly `i32` on the device (block ids, block counts, `i32` scalars):
/// an `i64` scalar takes an `i64` constant, and extents, tile counts, loop counters and
/// other device results may be 64-bit (a launch with 64-bit indices, a 64-bit counter).
/// And only outside a test of `Const`s: the branch another specialization takes is never
/// compiled there (the product `A * B` of a dead branch was taken as 32-bit in the live
/// one, and `((b + C) % A) * B` as fitting, while the device wrapped it and stored at
/// tile -65536). The same in an arm of a conditional expression on such a test, which
/// this world does not split (`w = b + A * B if D == 0 else 0`).
fn materializes_in_i32(c: &Checker<'_>, partner: &Poly) -> bool {
    if !c.world.is_empty() || c.const_arms > 0 {
        return false;
    }
    let mut ok = true;
    partner.visit_atoms(&mut |a| {
        ok &= match a {
            Atom::BlockId(_) | Atom::Grid(_) | Atom::Const(_) => true,
            Atom::FloorDiv(..) | Atom::Mod(..) | Atom::Cdiv(..) | Atom::Min(..) | Atom::Max(..) => {
                true
            }
            Atom::Scalar(n) => c.ranges.scalar_bits.get(n) == Some(&INDEX_BITS),
            _ => false,
        }
    });
    ok
}

/// Can `a // b` be the one overflowing division, the most negative integer by -1? The
/// lowering defines it as the wrapped negation (no undefined behaviour), so its result is
/// one that may wrap. (`%` by -1 is 0, exact.)
fn min_over_minus_one(c: &Checker<'_>, a: &Poly, b: &Poly, bits: u8) -> bool {
    let (lo, _) = crate::width::signed_range(bits);
    let b_can_be_minus_one =
        crate::width::interval(b, &c.ranges).is_none_or(|(l, h)| l <= -1 && -1 <= h);
    // A remainder is strictly above its divisor's most negative value, so never the
    // most negative integer.
    let remainder = matches!(a.as_atom(), Some(Atom::Mod(..)));
    // A value that may have wrapped is its exact polynomial wherever a proof uses it (the
    // wrap must be shown not to happen first).
    let a = c.unwrap_all(a);
    let a_can_be_min =
        !remainder && crate::width::interval(&a, &c.ranges).is_none_or(|(l, _)| l <= lo);
    b_can_be_minus_one && a_can_be_min
}

fn exact_arith(op: BinOp, a: &Poly, b: &Poly) -> Option<Poly> {
    Some(match op {
        BinOp::Add => a.add(b),
        BinOp::Sub => a.sub(b),
        BinOp::Mul => a.mul(b),
        BinOp::Floordiv => a.floordiv(b),
        BinOp::Mod => a.modulo(b),
        BinOp::Pow => match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) if (0..=62).contains(&y) => Poly::c(x.checked_pow(y as u32)?),
            _ => return None,
        },
        BinOp::Lshift => match b.as_const() {
            Some(s) if (0..=62).contains(&s) => a.mul(&Poly::c(1i128 << s)),
            _ => return None,
        },
        _ => return None,
    })
}

/// A resolved call's arguments (the frontend wrote one per parameter of the op's signature,
/// in order), each evaluated once, looked up by parameter name through the op table.
pub struct Args<'d> {
    sig: Option<&'static Signature>,
    exprs: &'d [Expr],
    vals: Vec<Val>,
}

impl<'d> Args<'d> {
    pub fn eval(
        c: &mut Checker<'d>,
        sig: Option<&'static Signature>,
        exprs: &'d [Expr],
        st: &mut State,
    ) -> Self {
        let vals = exprs
            .iter()
            .enumerate()
            .map(|(i, a)| {
                // A device function the op calls with its own values (`reduce`'s
                // combiner): the frontend wrote placeholder arguments, which the compiler
                // never sees (`Checker::call_device`).
                c.placeholder_args = sig
                    .and_then(|s| s.params.get(i))
                    .is_some_and(|p| p.function > 0);
                let v = c.eval(a, st);
                c.placeholder_args = false;
                v
            })
            .collect();
        Args { sig, exprs, vals }
    }

    /// The argument expression of parameter `name` (`None`: absent, i.e. the literal None).
    pub fn expr(&self, name: &str) -> Option<&'d Expr> {
        self.sig?.arg(self.exprs, name)
    }

    /// The value of parameter `name` (`None`: absent).
    pub fn val(&self, name: &str) -> Option<&Val> {
        let sig = self.sig?;
        sig.arg(self.exprs, name)?;
        self.vals.get(sig.position(name)?)
    }

    pub fn int(&self, name: &str) -> Option<Poly> {
        match self.val(name) {
            Some(Val::Int(p)) => Some(p.clone()),
            _ => None,
        }
    }

    /// Every argument with its value, for the rules that look at all of them.
    pub fn all(&self) -> impl Iterator<Item = (&'d Expr, &Val)> {
        self.exprs.iter().zip(&self.vals)
    }
}

/// Components of an index value (a tuple of integers, or one integer).
pub fn components(v: &Val) -> Option<Vec<Poly>> {
    match v {
        Val::Int(p) => Some(vec![p.clone()]),
        Val::Tuple(vs) => vs
            .iter()
            .map(|x| match x {
                Val::Int(p) => Some(p.clone()),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// An index value as the device computes it: device results that may have wrapped put
/// back (`Checker::unwrap_index`), with the rung on which each component fits 32 bits. A
/// value its rung cannot vouch for stays opaque.
pub fn index_value(c: &mut Checker<'_>, v: &Val) -> (Val, Vec<Rung>) {
    match v {
        Val::Int(p) => {
            let (q, r) = c.unwrap_index(p);
            (Val::Int(q), vec![r])
        }
        Val::Tuple(items) => {
            let mut rungs = Vec::with_capacity(items.len());
            let mut out = Vec::with_capacity(items.len());
            for x in items {
                let (y, r) = index_value(c, x);
                rungs.push(r.into_iter().fold(Rung::Static, crate::bounds::worse));
                out.push(y);
            }
            (Val::Tuple(out), rungs)
        }
        other => (other.clone(), Vec::new()),
    }
}

/// All components' rungs as one.
pub fn joint(rungs: &[Rung]) -> Rung {
    rungs
        .iter()
        .cloned()
        .fold(Rung::Static, crate::bounds::worse)
}

/// Source text of each component of an index expression, for device predicates.
pub fn component_texts(c: &Checker<'_>, e: Option<&Expr>, n: usize) -> Vec<String> {
    match e {
        Some(Expr::Tuple { elts, .. }) => elts.iter().map(|x| c.describe(x)).collect(),
        Some(e) if n == 1 => vec![c.describe(e)],
        Some(e) => (0..n).map(|k| format!("{}[{k}]", c.describe(e))).collect(),
        None => (0..n).map(|k| format!("index[{k}]")).collect(),
    }
}

/// The loop-variable atoms standing for the components of an index minted by root `r` in
/// loop instance `lp`: component `k` ranges over `[0, tiles(r, k))`.
pub fn minted_components(c: &mut Checker<'_>, r: usize, lp: u32) -> Vec<Poly> {
    let rank = c.roots.get(r).map(|x| x.tile.len()).unwrap_or(0);
    (0..rank)
        .map(|k| {
            let id = c.minted_atom(lp, k as u32, r);
            let hi = tiles_of(c, r, k).sub(&Poly::c(1));
            c.set_loop_range(id, (Poly::zero(), hi));
            Poly::atom(Atom::Loop(id))
        })
        .collect()
}

pub fn tuple_text(ps: &[Poly]) -> String {
    let items: Vec<String> = ps.iter().map(|p| p.to_string()).collect();
    if items.len() == 1 {
        format!("({},)", items[0])
    } else {
        format!("({})", items.join(", "))
    }
}

/// Tile count of root `r` along `axis` (== the grid extent unless the kernel is mapped).
pub fn tiles_of(c: &Checker<'_>, r: usize, axis: usize) -> Poly {
    let rank = c.roots.get(r).map(|x| x.tile.len()).unwrap_or(0);
    if axis >= rank {
        return Poly::c(1);
    }
    if c.mapped {
        Poly::atom(Atom::Tiles(c.root_name(r), axis as u8))
    } else {
        c.ranges.grid[axis.min(2)].clone()
    }
}

/// `x.attr`: shapes are read as tuples of extents.
pub fn attribute(c: &mut Checker<'_>, v: &Val, attr: &str) -> Val {
    match (v, attr) {
        (Val::Shared(i), "shape") => Val::Tuple(
            c.shared
                .get(*i)
                .map(|s| s.shape.iter().cloned().map(Val::Int).collect())
                .unwrap_or_default(),
        ),
        // An output's `shape` is its full extent, as for an input; `tile_shape` its tile.
        (Val::Mut(r), "shape") => Val::Tuple(
            c.roots
                .get(*r)
                .map(|x| x.dims.iter().cloned().map(Val::Int).collect())
                .unwrap_or_default(),
        ),
        (Val::Mut(r), "tile_shape") => Val::Tuple(
            c.roots
                .get(*r)
                .map(|x| x.tile.iter().cloned().map(Val::Int).collect())
                .unwrap_or_default(),
        ),
        (Val::Sub { shape, .. }, "shape") => {
            Val::Tuple(shape.iter().cloned().map(Val::Int).collect())
        }
        (Val::Shared(i), "ndim") => Val::Int(Poly::c(
            c.shared.get(*i).map(|s| s.shape.len()).unwrap_or(0) as i128,
        )),
        (Val::Atomic(i), "shape") => Val::Tuple(
            c.atomics
                .get(*i)
                .map(|s| s.shape.iter().cloned().map(Val::Int).collect())
                .unwrap_or_default(),
        ),
        (Val::Atomic(i), "ndim") => Val::Int(Poly::c(
            c.atomics.get(*i).map(|s| s.shape.len()).unwrap_or(0) as i128,
        )),
        (Val::Mut(r), "ndim") => Val::Int(Poly::c(
            c.roots.get(*r).map(|s| s.tile.len()).unwrap_or(0) as i128,
        )),
        _ => c.fresh_opaque(),
    }
}

fn unsafe_check(c: &mut Checker<'_>, op: &str, span: Span) {
    if !c.in_unsafe() {
        if let Some(d) = errors::unsafe_op(op, span) {
            c.report(d);
        }
    }
}

/// A free DSL function (`func` as in the op table) or a Python builtin (`builtins.NAME`).
pub fn call<'d>(
    c: &mut Checker<'d>,
    func: &str,
    args: &'d [Expr],
    span: Span,
    nid: u32,
    st: &mut State,
) -> Val {
    let builtin = func.strip_prefix("builtins.");
    let sig = match builtin {
        Some(b) => table().builtin(b),
        None => table().function(func),
    };
    // `gather`, `scatter` and the atomics decide by their tensor (`atomics.rs`).
    let by_tensor = matches!(func, "gather" | "scatter") || sig.is_some_and(|s| s.atomic);
    if builtin.is_none() && !by_tensor {
        unsafe_check(c, func, span);
    }
    let a = Args::eval(c, sig, args, st);
    c.op_node = nid;
    match (builtin, func) {
        (None, "load_tile_like") if crate::atomics::load_like_guard(c, &a, span) => Val::Other,
        (None, "load_tile_like") => crate::loads::load_tile_like(c, &a, span),
        (None, "gather") => crate::atomics::gather(c, &a, span),
        (None, "scatter") => crate::atomics::scatter(c, &a, span),
        (None, _) if by_tensor => crate::atomics::atomic_op(c, func, &a, span),
        (None, "block_id") => grid_query(c, &a, |k| Poly::atom(Atom::BlockId(k)), Poly::zero()),
        (None, "num_blocks") => grid_query(c, &a, |k| Poly::atom(Atom::Grid(k)), Poly::c(1)),
        (None, "num_tiles") => num_tiles(c, &a),
        // An operation on a narrow value is computed in its type (`Checker::narrow`).
        (_, _) if narrow_operands(c, builtin, func, &a) => c.fresh_opaque(),
        (None, "cdiv") => match (a.int("a"), a.int("b")) {
            (Some(x), Some(y)) => {
                let bits = c.width_of(&x).max(c.width_of(&y));
                Val::Int(c.device_valued(x.cdiv(&y), bits))
            }
            _ => c.fresh_opaque(),
        },
        (None, which @ ("minimum" | "maximum")) => match (a.int("a"), a.int("b")) {
            (Some(x), Some(y)) => {
                let bits = c.width_of(&x).max(c.width_of(&y));
                let v = if which == "minimum" {
                    x.pmin(&y)
                } else {
                    x.pmax(&y)
                };
                Val::Int(c.device_valued(v, bits))
            }
            _ => c.fresh_opaque(),
        },
        (None, "sum" | "max" | "min" | "prod")
            if a.expr("axis").is_some() && a.int("x").is_some_and(|p| is_integer(&p)) =>
        {
            // `min(a, b)` under `from cutile.core import *` is the reduction `min(x, axis)`.
            c.report(errors::scalar_reduction(func, span));
            c.fresh_opaque()
        }
        (Some(which @ ("min" | "max")), _) => {
            let values = match a.val("values") {
                Some(Val::Tuple(vs)) => vs.clone(),
                _ => Vec::new(),
            };
            let mut acc: Option<Poly> = None;
            let mut bits = 0;
            for v in &values {
                let Val::Int(p) = v else {
                    return c.fresh_opaque();
                };
                bits = bits.max(c.width_of(p));
                acc = Some(match acc {
                    None => p.clone(),
                    Some(x) if which == "min" => x.pmin(p),
                    Some(x) => x.pmax(p),
                });
            }
            match acc {
                Some(p) if values.len() >= 2 => Val::Int(c.device_valued(p, bits)),
                _ => c.fresh_opaque(),
            }
        }
        // `int(x)` is the value in `i32`: an `i64` is truncated.
        (Some("int"), _) => match a.int("x") {
            Some(p) => Val::Int(c.wrap(p, INDEX_BITS)),
            None => c.fresh_opaque(),
        },
        // `print(...)` and the `format(value, spec)` pieces of an f-string read their
        // operands and touch no memory: a pure read (a tensor cannot be printed).
        (Some("print" | "format"), _) => {
            for (e, v) in a.all() {
                c.no_mut(v, e);
            }
            Val::Other
        }
        (Some("len"), _) => match a.val("x") {
            Some(Val::Tuple(t)) => Val::Int(Poly::c(t.len() as i128)),
            _ => c.fresh_opaque(),
        },
        // Unsafe operations take raw tensors (outputs included); the checker vouches for
        // nothing inside `unsafe`.
        _ if sig.is_some_and(|s| s.is_unsafe) => c.fresh_opaque(),
        _ => {
            for (e, v) in a.all() {
                c.no_mut(v, e);
            }
            c.fresh_opaque()
        }
    }
}

/// `cdiv` or `int` with a narrow operand (`Checker::narrow`): `cdiv` adds in the operand's
/// type, which may wrap, and `int` of a `u32` past 2^31 - 1 is negative. (`min`/`max`
/// compare values and never wrap: a Python int operand must fit the type (CT3052), and a
/// wider operand promotes both. Their result stays narrow through the atom inside.)
fn narrow_operands(c: &Checker<'_>, builtin: Option<&str>, func: &str, a: &Args<'_>) -> bool {
    let follows = matches!((builtin, func), (None, "cdiv") | (Some("int"), _));
    follows && a.all().any(|(_, v)| c.narrow(v))
}

/// Certainly an integer (not a tile): built only from integer atoms. Opaque values stand for
/// anything the checker does not follow, tiles included.
fn is_integer(p: &Poly) -> bool {
    !p.any_atom(&|a| matches!(a, Atom::Opaque(_)))
}

/// `block_id(axis)` / `num_blocks(axis)`: one axis, or all three without one. Axes past the
/// grid's rank have block id 0 and extent 1, which the device reads as `i32`s.
fn grid_query(c: &mut Checker<'_>, a: &Args<'_>, atom: impl Fn(u8) -> Poly, past: Poly) -> Val {
    let at = |k: u8, c: &mut Checker<'_>| {
        if usize::from(k) < c.grid_rank {
            atom(k)
        } else {
            c.device_valued(past.clone(), INDEX_BITS)
        }
    };
    if a.expr("axis").is_none() {
        return Val::Tuple((0..3u8).map(|k| Val::Int(at(k, c))).collect());
    }
    match a.int("axis").and_then(|p| p.as_const()) {
        Some(k) if (0..3).contains(&k) => Val::Int(at(k as u8, c)),
        _ => c.fresh_opaque(),
    }
}

/// `num_tiles(x, axis, shape)`: `cdiv(x.shape[axis], shape[axis])` over the full extent of
/// `x` (a shared input or an output); without `shape`, an output's own partition's count.
fn num_tiles(c: &mut Checker<'_>, a: &Args<'_>) -> Val {
    let Some(axis) = a
        .int("axis")
        .and_then(|p| p.as_const())
        .filter(|k| (0..8).contains(k))
        .map(|k| k as usize)
    else {
        return c.fresh_opaque();
    };
    let tile = match a.val("shape") {
        Some(Val::Tuple(t)) => match t.get(axis) {
            Some(Val::Int(p)) => Some(p.clone()),
            _ => return c.fresh_opaque(),
        },
        Some(Val::Int(p)) if axis == 0 => Some(p.clone()),
        Some(_) => return c.fresh_opaque(),
        None => None,
    };
    let extent = match a.val("tensor") {
        Some(Val::Mut(r)) => {
            let r = *r;
            if tile.is_none() {
                // (past the grid's rank, the count 1: a device value all the same)
                let n = tiles_of(c, r, axis);
                return Val::Int(c.device_valued(n, INDEX_BITS));
            }
            c.roots.get(r).and_then(|x| x.dims.get(axis).cloned())
        }
        Some(Val::Shared(i)) => c.shared.get(*i).and_then(|s| s.shape.get(axis)).cloned(),
        Some(Val::Atomic(i)) => c.atomics.get(*i).and_then(|s| s.shape.get(axis)).cloned(),
        _ => None,
    };
    match (extent, tile) {
        (Some(d), Some(t)) => Val::Int(d.cdiv(&t)),
        _ => c.fresh_opaque(),
    }
}

/// A method call on a DSL value (the op table's `methods`).
pub fn method<'d>(
    c: &mut Checker<'d>,
    receiver: &'d Expr,
    method: &str,
    args: &'d [Expr],
    span: Span,
    nid: u32,
    st: &mut State,
) -> Val {
    let recv = c.eval(receiver, st);
    let sig = table().method(method);
    if let Val::Atomic(i) = recv {
        let _ = Args::eval(c, sig, args, st);
        return crate::atomics::method_on_atomic(c, i, method, span);
    }
    unsafe_check(c, method, span);
    let a = Args::eval(c, sig, args, st);
    c.op_node = nid;
    let name = c.describe(receiver);
    // The op table says which kinds of value have the method; the few mistakes with a
    // rule of their own (a store through an input, a read of another block's tile, a
    // schedule of a non-output) keep their own code.
    let kind = match &recv {
        Val::Mut(_) => Some("mut"),
        Val::Sub { .. } => Some("sub"),
        Val::Shared(_) => Some("tensor"),
        _ => None,
    };
    let own_rule = matches!(
        (method, kind),
        (
            "store" | "store_unchecked" | "partition_mut",
            Some("tensor")
        ) | ("load_tile", Some("sub"))
            | ("iter_indices", _)
    );
    if let (Some(sig), Some(kind)) = (sig, kind) {
        if !own_rule && !sig.receivers.iter().any(|r| r == kind) {
            c.report(errors::no_such_method(kind, method, span));
            // Carry on with the receiver (one mistake, one error).
            return if kind == "sub" {
                recv
            } else {
                c.fresh_opaque()
            };
        }
    }
    match method {
        "store" | "store_unchecked" => {
            if let (Some(t), Some(e)) = (a.val("tile"), a.expr("tile")) {
                c.no_mut(t, e);
            }
            let idx_e = a.expr("index");
            let raw = idx_e
                .zip(a.val("index"))
                .map(|(e, v)| (v.clone(), e.span()));
            let mut fits = Rung::Static;
            let idx = raw.map(|(v, at)| {
                let (v, r) = index_value(c, &v);
                fits = joint(&r);
                (v, at)
            });
            if method == "store_unchecked" {
                if let Val::Shared(i) = recv {
                    let p = c.shared.get(i).map(|s| s.span).unwrap_or(span);
                    c.report(errors::store_to_shared(&name, span, p));
                }
                return Val::Other;
            }
            let site = crate::stores::StoreSite {
                name: &name,
                span,
                // in a world, only where the `Const`s select its branches (`check/paths.rs`)
                conditional: st.conditional || !c.world.is_empty(),
            };
            crate::stores::store(c, &recv, &site, idx, idx_e, fits);
            Val::Other
        }
        "load" => {
            let idx_e = a.expr("index");
            let (index, fits) = match a.val("index").cloned() {
                Some(v) => {
                    let (v, r) = index_value(c, &v);
                    (Some(v), r)
                }
                None => (None, Vec::new()),
            };
            use crate::stores::StoreMap;
            match (&recv, index.as_ref()) {
                (Val::Mut(r), None) => {
                    c.own_use(*r, span, "load");
                    c.record_load_map(*r, StoreMap::Own, span);
                    // The lowering reads the own tile only where this fact says so.
                    c.oblige(
                        "load-own-tile",
                        format!("`{name}.load` reads the block's own tile"),
                        Rung::Static,
                        String::new(),
                        span,
                    );
                }
                (Val::Mut(r), Some(v)) => {
                    let own_block =
                        components(v).is_some_and(|cs| crate::stores::own_index(c, *r, &cs));
                    if own_block {
                        c.own_use(*r, span, "load");
                        c.record_load_map(*r, StoreMap::Own, span);
                    }
                    let minted = !own_block
                        && match v {
                            Val::Minted { root, .. } => root == r,
                            v => components(v).and_then(|cs| c.minted_index(&cs)) == Some(*r),
                        };
                    if minted {
                        c.record_load_map(*r, StoreMap::Minted, span);
                    }
                    if own_block || minted {
                        let what = if own_block {
                            "the block's own tile"
                        } else {
                            "a tile minted by `iter_indices()`"
                        };
                        c.oblige(
                            "load-own-tile",
                            format!("`{name}.load` reads {what}"),
                            crate::bounds::worse(Rung::Static, joint(&fits)),
                            String::new(),
                            span,
                        );
                    }
                    let at = idx_e.map(|e| e.span()).unwrap_or(span);
                    match components(v) {
                        _ if own_block || minted => {}
                        Some(cs) => {
                            // Judged against the store map at the end of the run; in
                            // bounds like any tile index.
                            let map = StoreMap::Computed(crate::stores::normalized(c, &cs));
                            c.record_load_map(*r, map, at);
                            let texts = component_texts(c, idx_e, cs.len());
                            let site = crate::loads::Site {
                                name: &name,
                                op: "load",
                                span,
                            };
                            for (k, ix) in cs.iter().enumerate() {
                                let count = tiles_of(c, *r, k);
                                let text = texts.get(k).cloned().unwrap_or_default();
                                let fit = fits.get(k).cloned().unwrap_or(Rung::Static);
                                crate::loads::bounds_obligation(
                                    c, &site, k, ix, &text, &count, fit,
                                );
                            }
                        }
                        None => c.report(errors::load_not_own(&name, at)),
                    }
                }
                (Val::Sub { grid, root, .. }, Some(v)) => {
                    c.record_load_map(*root, StoreMap::Own, span);
                    let (grid, v) = (grid.clone(), v.clone());
                    let texts = component_texts(c, idx_e, grid.len());
                    let site = crate::loads::Site {
                        name: &name,
                        op: "load",
                        span,
                    };
                    crate::stores::subtile_bounds(c, &site, grid, &v, &texts, &fits);
                }
                (Val::Sub { .. }, None) => c.report(errors::subtile_out_of_bounds(
                    &name,
                    span,
                    0,
                    "a sub-partition load needs a sub-tile index",
                )),
                _ => {}
            }
            Val::Other
        }
        "load_tile" => {
            crate::loads::load_tile(c, &recv, &name, &a, span);
            Val::Other
        }
        "partition_mut" => {
            let shape = a.val("shape").and_then(components);
            crate::stores::partition_mut(c, &recv, &name, shape, span)
        }
        // `for idx in z.iter_indices():` is read by `loops::loop_binder`; the call
        // anywhere else (bound to a name, passed, returned) is a schedule no loop header
        // names (see there).
        "iter_indices" => match recv {
            Val::Mut(_) => {
                c.report(errors::loop_iterable_not_in_header(
                    &format!("{name}.iter_indices()"),
                    span,
                    true,
                ));
                Val::Other
            }
            _ => {
                c.report(errors::iter_indices_not_mut(&name, receiver.span()));
                Val::Other
            }
        },
        _ => {
            for (e, v) in a.all() {
                c.no_mut(v, e);
            }
            c.no_mut(&recv, receiver);
            c.fresh_opaque()
        }
    }
}
