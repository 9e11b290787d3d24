//! Element-indexed memory operations: `Atomic` parameters, `gather` and `scatter`
//! (docs/dsl.md "Memory", docs/unsafe.md).
//!
//! An `Atomic[Tensor]` parameter is shared by every block and touched only through atomic
//! read-modify-writes (`atomic_add`, ..., `atomic_cas`), which do not race each other: two
//! blocks may update one element in either order, and each update is whole. So the checker
//! needs no disjointness proof for them, only that nothing else touches the tensor: no plain
//! load (CT1013) or store (CT1014), no partition or tile position (CT1015), no position where
//! its provenance is lost (CT1016), no plain-tensor parameter of a device function (CT1017),
//! and no block-scoped atomic, which is atomic only inside one block (CT1018). Out-of-range
//! indices need no proof either: the lowering masks every lane to the tensor's bounds.
//!
//! `gather` from a shared input is safe for the same two reasons (nothing writes a shared
//! input while a kernel runs, and the lanes are masked); from anything else it is unsafe
//! (CT4003). `scatter` may race and always needs `unsafe`; atomics on a tensor that is not
//! an `Atomic` parameter too (CT4002). Inside `unsafe`, a write through a shared input is
//! still CT1001: the launcher holds that tensor shared, so other work may be reading it.

use crate::check::Checker;
use crate::effects::Args;
use crate::errors;
use crate::state::Val;
use cutile_kast::{ConstValue, Expr, Span};

impl Checker<'_> {
    /// Name and declaration of `Atomic` parameter `i` (`at` if there is none).
    pub fn atomic_param(&self, i: usize, at: Span) -> (String, Span) {
        self.atomics
            .get(i)
            .map_or_else(|| (String::new(), at), |p| (p.name.clone(), p.span))
    }

    fn shared_decl(&self, i: usize, or: Span) -> Span {
        self.shared.get(i).map_or(or, |p| p.span)
    }
}

/// The operands other than the tensor are plain values (an output or an `Atomic` tensor
/// there escapes the analysis).
fn plain_operands(c: &mut Checker<'_>, a: &Args<'_>, names: &[&str]) {
    for name in names {
        if let (Some(v), Some(e)) = (a.val(name).cloned(), a.expr(name)) {
            c.no_mut(&v, e);
        }
    }
}

fn tensor_text(c: &Checker<'_>, a: &Args<'_>) -> String {
    a.expr("tensor").map(|e| c.describe(e)).unwrap_or_default()
}

/// `atomic_*(tensor, indices, value, memory_order, scope)` and `atomic_cas(tensor, indices,
/// expected, value, ...)`: safe on an `Atomic` parameter, `unsafe` on anything else.
pub fn atomic_op(c: &mut Checker<'_>, op: &str, a: &Args<'_>, span: Span) -> Val {
    plain_operands(c, a, &["indices", "expected", "value"]);
    let unsafe_here = c.in_unsafe();
    match a.val("tensor").cloned() {
        Some(Val::Atomic(i)) if !unsafe_here => {
            let (name, _) = c.atomic_param(i, span);
            // The frontend filled in the default ("device") where none was written.
            match a.expr("scope") {
                Some(Expr::Const {
                    value: ConstValue::Str(s),
                    ..
                }) if s != "block" => {}
                Some(e) => {
                    let literal = matches!(
                        e,
                        Expr::Const {
                            value: ConstValue::Str(_),
                            ..
                        }
                    );
                    c.report(errors::atomic_block_scope(op, &name, e.span(), literal));
                }
                None => {}
            }
        }
        Some(Val::Atomic(_)) => {}
        _ if !unsafe_here => {
            let name = tensor_text(c, a);
            c.report(errors::atomic_needs_atomic_param(op, &name, span));
        }
        Some(Val::Shared(i)) => {
            let name = tensor_text(c, a);
            let decl = c.shared_decl(i, span);
            c.report(errors::store_to_shared(&name, span, decl));
        }
        // Outputs and raw values inside `unsafe`: the author vouches for them.
        _ => {}
    }
    c.fresh_opaque()
}

/// `gather(tensor, indices, padding)`: safe from a shared input.
pub fn gather(c: &mut Checker<'_>, a: &Args<'_>, span: Span) -> Val {
    plain_operands(c, a, &["indices", "padding"]);
    match a.val("tensor").cloned() {
        Some(Val::Shared(_)) => {}
        Some(Val::Atomic(i)) => {
            let (name, decl) = c.atomic_param(i, span);
            c.report(errors::atomic_plain_read(&name, "gather", span, decl));
        }
        _ if c.in_unsafe() => {}
        _ => {
            let name = tensor_text(c, a);
            c.report(errors::gather_not_shared(&name, span));
        }
    }
    c.fresh_opaque()
}

/// `scatter(tensor, indices, value)`: always unsafe; never into a shared input.
pub fn scatter(c: &mut Checker<'_>, a: &Args<'_>, span: Span) -> Val {
    plain_operands(c, a, &["indices", "value"]);
    match a.val("tensor").cloned() {
        Some(Val::Atomic(i)) => {
            let (name, decl) = c.atomic_param(i, span);
            c.report(errors::atomic_plain_write(&name, "scatter", span, decl));
        }
        _ if !c.in_unsafe() => {
            if let Some(d) = errors::unsafe_op("scatter", span) {
                c.report(d);
            }
        }
        Some(Val::Shared(i)) => {
            let name = tensor_text(c, a);
            let decl = c.shared_decl(i, span);
            c.report(errors::store_to_shared(&name, span, decl));
        }
        _ => {}
    }
    Val::Other
}

/// `load_tile_like(src, like)` with an `Atomic` tensor in either place (reported: true).
pub fn load_like_guard(c: &mut Checker<'_>, a: &Args<'_>, span: Span) -> bool {
    if let Some(Val::Atomic(i)) = a.val("src") {
        let (name, decl) = c.atomic_param(*i, span);
        c.report(errors::atomic_plain_read(
            &name,
            "load_tile_like",
            span,
            decl,
        ));
        return true;
    }
    if let Some(Val::Atomic(i)) = a.val("like") {
        let (name, decl) = c.atomic_param(*i, span);
        c.report(errors::atomic_partitioned(
            &name,
            "used as a tile position",
            span,
            decl,
        ));
        return true;
    }
    false
}

/// A method called on `Atomic` parameter `i`: every tensor method is a plain access.
pub fn method_on_atomic(c: &mut Checker<'_>, i: usize, method: &str, span: Span) -> Val {
    let (name, decl) = c.atomic_param(i, span);
    let d = match method {
        "load" | "load_tile" => errors::atomic_plain_read(&name, method, span, decl),
        "store" | "store_unchecked" => errors::atomic_plain_write(&name, method, span, decl),
        "partition_mut" => errors::atomic_partitioned(&name, "partitioned", span, decl),
        "iter_indices" => {
            errors::atomic_partitioned(&name, "walked with `iter_indices()`", span, decl)
        }
        _ => errors::no_such_method("atomic", method, span),
    };
    c.report(d);
    Val::Other
}

/// The kinds of a device call's argument and parameter must agree: an `Atomic` tensor
/// goes only to an `Atomic` (or unannotated) parameter, and an `Atomic` parameter takes
/// only an `Atomic` tensor. `true`: the argument was refused.
pub fn device_arg_refused(
    c: &mut Checker<'_>,
    kind: cutile_kast::ParamKind,
    v: &Val,
    p: &cutile_kast::Param,
    callee: &str,
    at: Span,
) -> bool {
    use cutile_kast::ParamKind as K;
    let is_atomic = matches!(v, Val::Atomic(_));
    let wrong = match kind {
        K::AtomicTensor => !is_atomic,
        K::Tensor | K::MutTensor => is_atomic,
        _ => false,
    };
    if wrong {
        c.report(errors::atomic_arg_mismatch(
            &p.name, callee, at, p.span, is_atomic,
        ));
    }
    wrong
}

/// Where an `Atomic` tensor escapes the analysis (`what`: "put in a tuple", ...).
pub fn escapes(c: &mut Checker<'_>, v: &Val, at: Span, what: &str) {
    if let Val::Atomic(i) = v {
        let (name, _) = c.atomic_param(*i, at);
        c.report(errors::atomic_escapes(&name, at, what));
    }
}
