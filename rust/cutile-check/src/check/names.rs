//! Names the walker collects from a function's text: the `Const` parameters that size a
//! tile, and the names a target binds.

use cutile_kast::{stmt_exprs, walk_stmts, Expr, Function, ParamKind, Stmt, Target};
use std::collections::{BTreeSet, HashSet};

/// `Const` parameters of the entry written directly in a tile shape (`load_tile((BM, BK),
/// ...)`, `zeros((B,), f32)`, `partition_mut((S,))`, `reshape`, `arange(n)`): the compiler
/// builds no tile with an extent below 1 (CT3023, CT3045), so a kernel that runs has
/// them `>= 1`, like the `Const`s of the parameters' shapes.
pub(super) fn tile_shape_consts(entry: &Function) -> HashSet<String> {
    use cutile_kast::ops::table;
    let consts: HashSet<&str> = entry
        .params
        .iter()
        .filter(|p| p.kind == ParamKind::Const)
        .map(|p| p.name.as_str())
        .collect();
    let mut assigned = BTreeSet::new();
    walk_stmts(&entry.body, &mut |s| match s {
        Stmt::Assign { targets, .. } => targets.iter().for_each(|t| target_names(t, &mut assigned)),
        Stmt::AugAssign { target, .. } | Stmt::For { target, .. } => {
            target_names(target, &mut assigned)
        }
        _ => {}
    });
    let mut out = HashSet::new();
    let mut note = |e: &Expr| {
        let items: Vec<&Expr> = match e {
            Expr::Tuple { elts, .. } => elts.iter().collect(),
            e => vec![e],
        };
        for it in items {
            if let Expr::Name { id, .. } = it {
                if consts.contains(id.as_str()) && !assigned.contains(id) {
                    out.insert(id.clone());
                }
            }
        }
    };
    walk_stmts(&entry.body, &mut |s| {
        for e in stmt_exprs(s) {
            e.walk(&mut |e| {
                let (sig, args) = match e {
                    Expr::Call { func, args, .. } => (table().function(func), args),
                    Expr::Method { method, args, .. } => (table().method(method), args),
                    _ => return,
                };
                let Some(sig) = sig else { return };
                if !matches!(
                    sig.name.as_str(),
                    "full"
                        | "zeros"
                        | "ones"
                        | "reshape"
                        | "arange"
                        | "load_tile"
                        | "partition_mut"
                ) {
                    return;
                }
                for name in ["shape", "n"] {
                    if let Some(a) = sig.arg(args, name) {
                        note(a);
                    }
                }
            })
        }
    });
    out
}

pub(super) fn target_names(t: &Target, out: &mut BTreeSet<String>) {
    match t {
        Target::Name { id, .. } => {
            out.insert(id.clone());
        }
        Target::Tuple { elts, .. } => elts.iter().for_each(|e| target_names(e, out)),
    }
}
