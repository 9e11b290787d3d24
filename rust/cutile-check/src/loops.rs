//! `for` loops: the value a loop binds (a `range` counter with its range, or the index
//! `iter_indices()` mints), the width of its counter, and the checker's obligations on a
//! `range`: its bounds fit the counter, its step is positive.

use crate::bounds::Rung;
use crate::check::Checker;
use crate::effects::Args;
use crate::errors;
use crate::state::{State, Val};
use crate::sym::{Atom, Poly};
use crate::width::INDEX_BITS;
use cutile_kast::ops::table;
use cutile_kast::{Expr, Target};

/// Is `iter`, a `for` loop's iterable, a persistent schedule (`z.iter_indices()`)? The one
/// test of it: the loop binder below walks such a loop by the schedule, and the checker
/// reads a kernel with one as mapped (`Checker::new`), so no root is persistent in a
/// kernel the checker did not read as mapped.
pub fn walks_schedule(iter: &Expr) -> bool {
    matches!(iter, Expr::Method { method, .. } if method == "iter_indices")
}

/// The value a `for` loop binds each iteration; registers loop ranges.
pub fn loop_binder<'d>(
    c: &mut Checker<'d>,
    _target: &'d Target,
    iter: &'d Expr,
    st: &mut State,
) -> Val {
    match iter {
        Expr::Call { func, args, .. } if func == "builtins.range" => {
            // The frontend wrote `range(n)` as `range(0, n, 1)`.
            let a = Args::eval(c, table().builtin("range"), args, st);
            let id = c.instance(iter.nid(), 0);
            let step = a.int("step");
            if step.as_ref().and_then(Poly::as_const).is_none() {
                let text = a
                    .expr("step")
                    .map_or_else(|| "step".to_string(), |e| c.describe(e));
                step_positive(c, iter, step.as_ref(), text);
            }
            let mut bits = 64;
            if let (Some(lo), Some(hi), Some(step)) = (a.int("start"), a.int("stop"), step) {
                let (lo, hi) = loop_bounds(c, iter, lo, hi);
                bits = counter_bits(c, &hi, &step);
                match step.as_const() {
                    Some(s) if s > 0 => c.set_loop_range(id, (lo, hi.sub(&Poly::c(1)))),
                    Some(s) if s < 0 => c.set_loop_range(id, (hi.add(&Poly::c(1)), lo)),
                    Some(_) => {}
                    // Positive by the obligation above, checked before the loop runs.
                    None => c.set_loop_range(id, (lo, hi.sub(&Poly::c(1)))),
                }
            }
            c.set_loop_counter(iter.nid(), bits);
            Val::Int(Poly::atom(Atom::Loop(id)))
        }
        Expr::Method { receiver, args, .. } if walks_schedule(iter) => {
            let v = c.eval(receiver, st);
            let _ = Args::eval(c, table().method("iter_indices"), args, st);
            // The schedule's counter steps by the grid's size from a block id: 64 bits.
            c.set_loop_counter(iter.nid(), 64);
            match v {
                Val::Mut(r) => {
                    note_schedule(c, iter.nid(), r);
                    Val::Minted {
                        root: r,
                        lp: c.instance(iter.nid(), 0),
                    }
                }
                Val::Atomic(i) => {
                    crate::atomics::method_on_atomic(c, i, "iter_indices", iter.span())
                }
                _ => {
                    let what = c.describe(receiver);
                    c.report(errors::iter_indices_not_mut(&what, receiver.span()));
                    Val::Other
                }
            }
        }
        // A range or a schedule bound to a name first, returned by a device function, or
        // chosen by a conditional expression: the checker would read an unknown loop
        // variable where the lowering compiles the range or the schedule, two readings
        // of one loop. Refused: the iterable is written in the `for` header.
        other => {
            c.set_loop_counter(iter.nid(), 64);
            let v = c.eval(other, st);
            c.no_mut(&v, other);
            let what = c.describe(other);
            c.report(errors::loop_iterable_not_in_header(
                &what,
                other.span(),
                false,
            ));
            c.fresh_opaque()
        }
    }
}

/// The loop whose iterable is the `iter_indices` call `nid` (in the current call path)
/// walks root `r` by the persistent schedule (`schedule::fact`, which the lowering emits).
fn note_schedule(c: &mut Checker<'_>, nid: u32, r: usize) {
    let node = cutile_facts::NodeRef {
        path: c.call_path.clone(),
        nid,
    };
    c.persistent.insert(r);
    c.schedules.insert((node, r));
}

/// The bits of a `range` loop's counter. Tile IR steps a `for` counter in its own width,
/// and a 32-bit counter that passes 2^31 - 1 wraps below the bound on the GPU, so the loop
/// goes on with its variable outside the range assumed above (measured on the H200:
/// tests/kernels/test_loop_step.py). 32 bits where the last value plus the step provably
/// stays at most 2^31 - 1 (a step of 1 always: the last value is below a 32-bit stop),
/// else 64, in which `iv + step` < 2^32 cannot wrap.
fn counter_bits(c: &Checker<'_>, hi: &Poly, step: &Poly) -> u8 {
    match step.as_const() {
        Some(1) => 32,
        Some(s) if s > 0 => {
            let top = Poly::c(crate::width::signed_range(INDEX_BITS).1);
            match c
                .ranges
                .decide_le(&hi.sub(&Poly::c(1)).add(&Poly::c(s)), &top)
            {
                Rung::Static => 32,
                _ => 64,
            }
        }
        _ => 64,
    }
}

/// A `range` step known only at run time must be positive: Tile IR's `for` with a step of
/// 0 or less is undefined behaviour, and a counting `loop` would not end. The loop runs
/// with the step truncated to its 32-bit counter (an `i64` step of 2^32 runs as 0), so the
/// goal is `1 <= step` on that value, with the fit's own condition where the step may not
/// fit (as for the bounds). Decided at launch where the step is launch-known (a scalar, an
/// extent), else a device check before the loop (CT2008 under `deny_in_kernel_checks`). A
/// step that is non-positive on every launch is left to the launch predicate, which then
/// refuses every launch with its text. A compile-time step is the lowering's (CT3039).
fn step_positive(c: &mut Checker<'_>, iter: &Expr, step: Option<&Poly>, text: String) {
    let rung = match step {
        Some(step) => {
            let wrapped = c.wrap(step.clone(), INDEX_BITS);
            let (exact, fits) = c.unwrap_fitting(&wrapped);
            let one = Poly::c(1);
            let positive = match c.ranges.decide_le(&one, &exact) {
                Rung::Refuted => {
                    crate::launch_pred::le(&one, &exact).map_or(Rung::Device, Rung::Launch)
                }
                r => r,
            };
            crate::bounds::worse(fits, positive)
        }
        None => Rung::Device,
    };
    c.op_node = iter.nid();
    c.oblige(
        "loop-step-positive",
        format!("the step of `{}` is positive", c.describe(iter)),
        rung,
        format!("{text} > 0"),
        iter.span(),
    );
}

/// The bounds of `range(lo, hi, step)` as the loop counter runs over them. The counter is
/// an `i32`: the lowering converts each bound to it (an `i64` bound is truncated), and a
/// bound computed in `i32` may have wrapped (a product `a * b` of scalars). So a bound is
/// its exact polynomial only where it fits 32 bits. Unlike an index, which is taken modulo
/// 2^32 and then proved within `[0, count)` (`Checker::unwrap_ring`), a bound that wrapped
/// moves where the loop starts or ends, so it gets no congruence shortcut: a fit decided
/// at launch becomes the loop's own launch predicate (`loop-bounds-fit`); one that cannot
/// be decided leaves the bound opaque, so every index built from the counter keeps its
/// device check.
fn loop_bounds(c: &mut Checker<'_>, iter: &Expr, lo: Poly, hi: Poly) -> (Poly, Poly) {
    let mut conditions = Rung::Static;
    let mut exact = |c: &mut Checker<'_>, p: Poly| match c.unwrap_fitting(&p) {
        (q, Rung::Static) => q,
        (q, r @ Rung::Launch(_)) => {
            conditions = crate::bounds::worse(conditions.clone(), r);
            q
        }
        _ => p,
    };
    // The counter's type: a bound that may not fit 32 bits is the device's truncated value.
    let (lo, hi) = (c.wrap(lo, INDEX_BITS), c.wrap(hi, INDEX_BITS));
    let (lo, hi) = (exact(c, lo), exact(c, hi));
    if let Rung::Launch(pred) = conditions {
        c.op_node = iter.nid();
        let text = pred.text.clone();
        c.oblige(
            "loop-bounds-fit",
            format!(
                "the bounds of `{}` fit the 32-bit loop counter",
                c.describe(iter)
            ),
            Rung::Launch(pred),
            text,
            iter.span(),
        );
    }
    (lo, hi)
}
