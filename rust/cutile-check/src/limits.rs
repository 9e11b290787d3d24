//! Caps on the work a kernel may ask of the checker. Device functions are inlined per call
//! site, so `f1` calling `f0` twice, `f2` calling `f1` twice, ... asks for 2^n inlined
//! bodies from n short functions: the checker walked each (exponential time: 16 such
//! functions did not finish in a minute) and the compiler would emit each. Past
//! [`MAX_INLINED_CALLS`] the kernel is refused (CT1019) before it is walked. Loops are
//! walked to a fixed point, so nested loops multiply the walks of the innermost body too:
//! past [`MAX_STEPS`] statement walks the kernel is refused (CT1019) where the walk
//! stopped.

use cutile_kast::{stmt_exprs, walk_stmts, Document, Expr, Function, Span};
use std::collections::HashMap;

/// Device-function calls one kernel may inline, counting every call site of every inlined
/// body (the examples inline at most a few dozen).
pub const MAX_INLINED_CALLS: usize = 512;

/// Statement walks one check may take (every path, pass and inlined instance counted).
/// The largest example takes 200; 20,000 take the checker about 0.2 s and the lowering,
/// which walks loops to a fixed point too, a few seconds.
pub const MAX_STEPS: usize = 20_000;

/// Size of a compile-time value the checker follows (`fold::Ct`): a key's text length,
/// one per tuple item. Larger ones are read as run-time values.
pub const MAX_CT_SIZE: usize = 4096;

/// Leaves a tuple value may hold (`t = (t, t)` doubles it at each line).
pub const MAX_TUPLE_LEAVES: usize = 1024;

/// The first call site of the entry at which the calls inlined so far pass
/// [`MAX_INLINED_CALLS`]: its span, its callee and how many calls the kernel inlines up to
/// and including it (saturating).
pub fn too_many_inlined_calls(doc: &Document, entry: &Function) -> Option<(Span, String, usize)> {
    let mut memo: HashMap<&str, usize> = HashMap::new();
    let mut total = 0usize;
    for (callee, span) in call_sites(entry) {
        total = total.saturating_add(1 + inlined(doc, callee, &mut memo, 0));
        if total > MAX_INLINED_CALLS {
            return Some((span, callee.to_string(), total));
        }
    }
    None
}

fn call_sites(f: &Function) -> Vec<(&str, Span)> {
    let mut out = Vec::new();
    walk_stmts(&f.body, &mut |s| {
        for e in stmt_exprs(s) {
            e.walk(&mut |e: &Expr| {
                if let Expr::CallDevice { func, span, .. } = e {
                    out.push((func.as_str(), *span));
                }
            });
        }
    });
    out
}

/// Calls inlined by one call of `name` (saturating). A function being counted counts 0
/// where it recurs (recursion is CT1012 when walked), and the depth the walk follows
/// bounds the recursion here too.
fn inlined<'d>(
    doc: &'d Document,
    name: &'d str,
    memo: &mut HashMap<&'d str, usize>,
    depth: usize,
) -> usize {
    if let Some(n) = memo.get(name) {
        return *n;
    }
    let Some(f) = doc.function(name) else {
        return 0;
    };
    if depth > crate::check::MAX_INLINE_DEPTH {
        return 0;
    }
    memo.insert(name, 0); // in progress: a recursive call counts 0
    let mut n = 0usize;
    for (callee, _) in call_sites(f) {
        n = n.saturating_add(1 + inlined(doc, callee, memo, depth + 1));
    }
    memo.insert(name, n);
    n
}
