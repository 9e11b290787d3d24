//! Memory effects of the DSL operations (`docs/kernel-ast.md`, "The DSL names the checker
//! must know") and the integer semantics of the pure ones the provers read.

use crate::bounds::{worse, Rung};
use crate::check::Checker;
use crate::errors;
use crate::prover::StoreMapProof;
use crate::state::{State, Val};
use crate::sym::{Atom, Poly};
use cutile_kast::{BinOp, Expr, Kwarg, Span, Target};

/// Integer arithmetic on abstract values.
pub fn arith(c: &mut Checker<'_>, op: BinOp, l: &Val, r: &Val) -> Val {
    let (Val::Int(a), Val::Int(b)) = (l, r) else {
        return c.fresh_opaque();
    };
    Val::Int(match op {
        BinOp::Add => a.add(b),
        BinOp::Sub => a.sub(b),
        BinOp::Mul => a.mul(b),
        BinOp::Floordiv => a.floordiv(b),
        BinOp::Mod => a.modulo(b),
        BinOp::Pow => match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) if (0..=62).contains(&y) => match x.checked_pow(y as u32) {
                Some(v) => Poly::c(v),
                None => return c.fresh_opaque(),
            },
            _ => return c.fresh_opaque(),
        },
        BinOp::Lshift => match b.as_const() {
            Some(s) if (0..=62).contains(&s) => a.mul(&Poly::c(1i128 << s)),
            _ => return c.fresh_opaque(),
        },
        _ => return c.fresh_opaque(),
    })
}

fn arg<'e>(args: &'e [Expr], kwargs: &'e [Kwarg], pos: usize, name: &str) -> Option<&'e Expr> {
    kwargs
        .iter()
        .find(|k| k.name == name)
        .map(|k| &k.value)
        .or_else(|| args.get(pos))
}

/// Components of an index value (a tuple of integers, or one integer).
fn components(v: &Val) -> Option<Vec<Poly>> {
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

/// Source text of each component of an index expression, for device predicates.
fn component_texts(c: &Checker<'_>, e: Option<&Expr>, n: usize) -> Vec<String> {
    match e {
        Some(Expr::Tuple { elts, .. }) => elts.iter().map(|x| c.describe(x)).collect(),
        Some(e) if n == 1 => vec![c.describe(e)],
        Some(e) => (0..n).map(|k| format!("{}[{k}]", c.describe(e))).collect(),
        None => (0..n).map(|k| format!("index[{k}]")).collect(),
    }
}

/// The loop-variable atoms standing for the components of an index minted by root `r`:
/// component `k` ranges over `[0, tiles(r, k))`.
pub fn minted_components(c: &mut Checker<'_>, r: usize) -> Vec<Poly> {
    let rank = c.roots.get(r).map(|x| x.tile.len()).unwrap_or(0);
    (0..rank)
        .map(|k| {
            let id = 0xF000_0000u32 + (r as u32) * 8 + k as u32;
            let hi = tiles_of(c, r, k).sub(&Poly::c(1));
            c.set_loop_range(id, (Poly::zero(), hi));
            Poly::atom(Atom::Loop(id))
        })
        .collect()
}

fn tuple_text(ps: &[Poly]) -> String {
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

/// The value a `for` loop binds each iteration; registers loop ranges.
pub fn loop_binder<'d>(
    c: &mut Checker<'d>,
    target: &'d Target,
    iter: &'d Expr,
    st: &mut State,
) -> Val {
    match iter {
        Expr::Call {
            func, args, kwargs, ..
        } if base_name(func) == "range"
            && kwargs.is_empty()
            && !args.is_empty()
            && args.len() <= 3 =>
        {
            let vs: Vec<Val> = args.iter().map(|a| c.eval(a, st)).collect();
            let ps: Option<Vec<Poly>> = vs
                .iter()
                .map(|v| match v {
                    Val::Int(p) => Some(p.clone()),
                    _ => None,
                })
                .collect();
            let id = target.span().lo;
            if let Some(ps) = ps {
                let (lo, hi, step) = match ps.as_slice() {
                    [h] => (Poly::zero(), h.clone(), Some(1)),
                    [l, h] => (l.clone(), h.clone(), Some(1)),
                    [l, h, s] => (l.clone(), h.clone(), s.as_const()),
                    _ => return c.fresh_opaque(),
                };
                match step {
                    Some(s) if s > 0 => {
                        c.set_loop_range(id, (lo, hi.sub(&Poly::c(1))));
                    }
                    Some(s) if s < 0 => {
                        c.set_loop_range(id, (hi.add(&Poly::c(1)), lo));
                    }
                    _ => {}
                }
            }
            Val::Int(Poly::atom(Atom::Loop(id)))
        }
        Expr::Method {
            receiver,
            method,
            args,
            ..
        } if method == "iter_indices" => {
            let v = c.eval(receiver, st);
            for a in args {
                c.eval(a, st);
            }
            match v {
                Val::Mut(r) => Val::Minted(r),
                _ => {
                    let what = c.describe(receiver);
                    c.report(errors::iter_indices_not_mut(&what, receiver.span()));
                    Val::Other
                }
            }
        }
        other => {
            let v = c.eval(other, st);
            c.no_mut(&v, other);
            c.fresh_opaque()
        }
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
        (Val::Mut(r), "shape") => Val::Tuple(
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

/// A free DSL function or Python builtin.
/// The DSL or builtin name of a call: `builtins.range` (as some frontends qualify Python
/// builtins) is `range`.
pub fn base_name(func: &str) -> &str {
    func.strip_prefix("builtins.").unwrap_or(func)
}

pub fn call<'d>(
    c: &mut Checker<'d>,
    func: &str,
    args: &'d [Expr],
    kwargs: &'d [Kwarg],
    span: Span,
    st: &mut State,
) -> Val {
    let func = base_name(func);
    unsafe_check(c, func, span);
    if func == "load_tile_like" {
        return load_tile_like(c, args, kwargs, span, st);
    }
    let vs: Vec<Val> = args.iter().map(|a| c.eval(a, st)).collect();
    for k in kwargs {
        c.eval(&k.value, st);
    }
    let int = |i: usize| match vs.get(i) {
        Some(Val::Int(p)) => Some(p.clone()),
        _ => None,
    };
    match func {
        "block_id" => match int(0).and_then(|p| p.as_const()) {
            Some(k) if (0..3).contains(&k) => {
                if (k as usize) < c.grid_rank {
                    Val::Int(Poly::atom(Atom::BlockId(k as u8)))
                } else {
                    Val::Int(Poly::zero())
                }
            }
            _ if args.is_empty() => Val::Tuple(
                (0..3u8)
                    .map(|k| {
                        Val::Int(if (k as usize) < c.grid_rank {
                            Poly::atom(Atom::BlockId(k))
                        } else {
                            Poly::zero()
                        })
                    })
                    .collect(),
            ),
            _ => c.fresh_opaque(),
        },
        "num_blocks" => match int(0).and_then(|p| p.as_const()) {
            Some(k) if (0..3).contains(&k) => Val::Int(c.ranges.grid[k as usize].clone()),
            _ if args.is_empty() => {
                Val::Tuple(c.ranges.grid.iter().cloned().map(Val::Int).collect())
            }
            _ => c.fresh_opaque(),
        },
        "num_tiles" => num_tiles(c, &vs),
        "cdiv" => match (int(0), int(1)) {
            (Some(a), Some(b)) => Val::Int(a.cdiv(&b)),
            _ => c.fresh_opaque(),
        },
        "min" | "max" if vs.len() == 2 => match (int(0), int(1)) {
            (Some(a), Some(b)) => Val::Int(if func == "min" {
                a.pmin(&b)
            } else {
                a.pmax(&b)
            }),
            _ => c.fresh_opaque(),
        },
        "int" if vs.len() == 1 => match int(0) {
            Some(p) => Val::Int(p),
            None => c.fresh_opaque(),
        },
        "len" => match vs.first() {
            Some(Val::Tuple(t)) => Val::Int(Poly::c(t.len() as i128)),
            _ => c.fresh_opaque(),
        },
        _ => c.fresh_opaque(),
    }
}

/// `num_tiles(x, axis, shape)`: `cdiv(x.shape[axis], shape[axis])`; for a `Mut` partition
/// its tile count.
fn num_tiles(c: &mut Checker<'_>, vs: &[Val]) -> Val {
    let axis = match vs.get(1) {
        Some(Val::Int(p)) => p.as_const(),
        _ => None,
    };
    let Some(axis) = axis.filter(|a| (0..8).contains(a)).map(|a| a as usize) else {
        return c.fresh_opaque();
    };
    match vs.first() {
        Some(Val::Mut(r)) => Val::Int(tiles_of(c, *r, axis)),
        Some(Val::Shared(i)) => {
            let dim = c.shared.get(*i).and_then(|s| s.shape.get(axis)).cloned();
            let tile = match vs.get(2) {
                Some(Val::Tuple(t)) => match t.get(axis) {
                    Some(Val::Int(p)) => Some(p.clone()),
                    _ => None,
                },
                _ => None,
            };
            match (dim, tile) {
                (Some(d), Some(t)) => Val::Int(d.cdiv(&t)),
                _ => c.fresh_opaque(),
            }
        }
        _ => c.fresh_opaque(),
    }
}

fn load_tile_like<'d>(
    c: &mut Checker<'d>,
    args: &'d [Expr],
    kwargs: &'d [Kwarg],
    span: Span,
    st: &mut State,
) -> Val {
    let src = arg(args, kwargs, 0, "x");
    let pos = arg(args, kwargs, 1, "like");
    let sv = src.map(|e| c.eval(e, st)).unwrap_or(Val::Other);
    let pv = pos.map(|e| c.eval(e, st)).unwrap_or(Val::Other);
    for a in args.iter().skip(2) {
        c.eval(a, st);
    }
    let (Some(src), Some(pos)) = (src, pos) else {
        return Val::Other;
    };
    let root = match pv {
        Val::Mut(r) => r,
        _ => {
            let what = c.describe(pos);
            c.report(errors::load_like_needs_mut(&what, pos.span()));
            return Val::Other;
        }
    };
    match sv {
        Val::Mut(r) if r == root && c.mapped => {
            // `load_tile_like(z, z)` is `z.load()`: in a persistent kernel not the own tile.
            let s = c.describe(src);
            c.report(errors::load_not_own(&s, span));
        }
        Val::Mut(r) if r == root => {}
        Val::Mut(_) | Val::Sub { .. } => {
            let (s, p) = (c.describe(src), c.describe(pos));
            c.report(errors::load_like_foreign_mut(&s, &p, span));
        }
        Val::Shared(i) => {
            let tile = c
                .roots
                .get(root)
                .map(|r| r.tile.clone())
                .unwrap_or_default();
            let name = c.shared.get(i).map(|s| s.name.clone()).unwrap_or_default();
            let shape = c.shared.get(i).map(|s| s.shape.clone()).unwrap_or_default();
            for (k, t) in tile.iter().enumerate() {
                let Some(d) = shape.get(k) else { break };
                let idx = if c.mapped {
                    // The own tile of a mapped partition is its current minted index.
                    Poly::atom(Atom::Tiles(c.root_name(root), k as u8)).sub(&Poly::c(1))
                } else if k < c.grid_rank {
                    Poly::atom(Atom::BlockId(k as u8))
                } else {
                    Poly::zero()
                };
                let count = d.cdiv(t);
                let text = if k < c.grid_rank && !c.mapped {
                    format!("block_id({k})")
                } else {
                    idx.to_string()
                };
                bounds_obligation(
                    c,
                    &Site {
                        name: &name,
                        op: "load_tile_like",
                        span,
                    },
                    k,
                    &idx,
                    &text,
                    &count,
                );
            }
        }
        _ => {}
    }
    Val::Other
}

/// The label of a refuted bounds goal: the extreme the index reaches.
fn refuted_detail(c: &Checker<'_>, idx: &Poly, text: &str, count: &Poly, what: &str) -> String {
    let min = c.ranges.extreme(idx, false);
    let max = c.ranges.extreme(idx, true);
    let below = min
        .as_ref()
        .is_some_and(|m| c.ranges.decide_le(&Poly::zero(), m) == Rung::Refuted);
    if let Some(k) = idx.as_const() {
        return format!("tile {k} does not exist: there are {count} {what}, numbered from 0");
    }
    match (below, min, max) {
        (true, Some(m), _) => format!("`{text}` can be {m}, below 0"),
        (false, _, Some(m)) => format!("`{text}` can be {m}, but there are {count} {what}"),
        _ => format!("`{text}` is outside the {count} {what}"),
    }
}

/// One axis of a tile access on the bounds ladder.
/// Where a tile access happens: the tensor's name, the operation and its span.
struct Site<'a> {
    name: &'a str,
    op: &'a str,
    span: Span,
}

fn bounds_obligation(
    c: &mut Checker<'_>,
    site: &Site<'_>,
    axis: usize,
    idx: &Poly,
    text: &str,
    count: &Poly,
) {
    let (name, op, span) = (site.name, site.op, site.span);
    let rung = c.decide_index(idx, count);
    let device = format!("0 <= {text} && {text} < {count}");
    if rung == Rung::Refuted {
        let detail = refuted_detail(c, idx, text, count, "tiles");
        c.report(errors::index_out_of_bounds(name, span, axis, &detail));
    }
    c.oblige(
        "bounds",
        format!("the tile index of `{name}` on axis {axis} in `{op}` is in bounds"),
        rung,
        device,
        span,
    );
}

pub fn method<'d>(
    c: &mut Checker<'d>,
    receiver: &'d Expr,
    method: &str,
    args: &'d [Expr],
    kwargs: &'d [Kwarg],
    span: Span,
    st: &mut State,
) -> Val {
    let recv = c.eval(receiver, st);
    unsafe_check(c, method, span);
    let name = c.describe(receiver);
    match method {
        "store" | "store_unchecked" => {
            let tile = arg(args, kwargs, 0, "tile").map(|e| c.eval(e, st));
            if let Some(t) = &tile {
                if let Some(e) = arg(args, kwargs, 0, "tile") {
                    c.no_mut(t, e);
                }
            }
            let idx_e = arg(args, kwargs, 1, "index");
            let idx = idx_e.map(|e| (c.eval(e, st), e.span()));
            if method == "store_unchecked" {
                if let Val::Shared(i) = recv {
                    let p = c.shared.get(i).map(|s| s.span).unwrap_or(span);
                    c.report(errors::store_to_shared(&name, span, p));
                }
                return Val::Other;
            }
            store(c, &recv, &name, idx, idx_e, span);
            Val::Other
        }
        "load" => {
            let idx_e = arg(args, kwargs, 0, "index");
            let idx = idx_e.map(|e| c.eval(e, st));
            match (&recv, idx) {
                (Val::Mut(_), None) if c.mapped => {
                    // In a persistent kernel the tile at the block id belongs to whichever
                    // block the schedule minted it for.
                    c.report(errors::load_not_own(&name, span));
                }
                (Val::Mut(_), None) => {}
                (Val::Mut(r), Some(v)) => {
                    let own = match &v {
                        Val::Minted(m) => m == r,
                        v => components(v).is_some_and(|cs| !c.mapped && own_index(c, *r, &cs)),
                    };
                    if !own {
                        c.report(errors::load_not_own(
                            &name,
                            idx_e.map(|e| e.span()).unwrap_or(span),
                        ));
                    }
                }
                (Val::Sub { grid, .. }, Some(v)) => {
                    let texts = component_texts(c, idx_e, grid.len());
                    subtile_bounds(c, &name, grid.clone(), &v, &texts, span, "load");
                }
                _ => {}
            }
            Val::Other
        }
        "load_tile" => {
            let shape = arg(args, kwargs, 0, "shape").map(|e| c.eval(e, st));
            let idx_e = arg(args, kwargs, 1, "index");
            let idx = idx_e.map(|e| c.eval(e, st));
            match &recv {
                Val::Mut(_) | Val::Sub { .. } => c.report(errors::load_tile_on_mut(&name, span)),
                Val::Shared(i) => {
                    let dims = c
                        .shared
                        .get(*i)
                        .map(|s| s.shape.clone())
                        .unwrap_or_default();
                    let shape = shape.as_ref().and_then(components);
                    let comps = match &idx {
                        Some(Val::Minted(r)) => Some(minted_components(c, *r)),
                        Some(v) => components(v),
                        None => None,
                    };
                    let pname = c.shared.get(*i).map(|s| s.name.clone()).unwrap_or_default();
                    match (shape, comps) {
                        (Some(shape), Some(comps)) => {
                            let texts = match &idx {
                                Some(Val::Minted(_)) => comps
                                    .iter()
                                    .enumerate()
                                    .map(|(k, _)| {
                                        format!(
                                            "{}[{k}]",
                                            idx_e.map(|e| c.describe(e)).unwrap_or_default()
                                        )
                                    })
                                    .collect(),
                                _ => component_texts(c, idx_e, comps.len()),
                            };
                            for (k, ((d, t), ix)) in dims.iter().zip(&shape).zip(&comps).enumerate()
                            {
                                let text = texts.get(k).cloned().unwrap_or_default();
                                let site = Site {
                                    name: &pname,
                                    op: "load_tile",
                                    span,
                                };
                                bounds_obligation(c, &site, k, ix, &text, &d.cdiv(t));
                            }
                        }
                        _ => {
                            let desc =
                                format!("the tile index of `{pname}` in `load_tile` is in bounds");
                            let text = idx_e.map(|e| c.describe(e)).unwrap_or_default();
                            c.oblige(
                                "bounds",
                                desc,
                                Rung::Device,
                                format!("{text} in bounds"),
                                span,
                            );
                        }
                    }
                }
                _ => {}
            }
            Val::Other
        }
        "partition_mut" => {
            let shape = arg(args, kwargs, 0, "shape").map(|e| c.eval(e, st));
            partition_mut(c, &recv, &name, shape.as_ref().and_then(components), span)
        }
        "iter_indices" => match recv {
            Val::Mut(_) => Val::Other,
            _ => {
                c.report(errors::iter_indices_not_mut(&name, receiver.span()));
                Val::Other
            }
        },
        _ => {
            for a in args {
                let v = c.eval(a, st);
                c.no_mut(&v, a);
            }
            for k in kwargs {
                c.eval(&k.value, st);
            }
            if recv.is_mut()
                && matches!(
                    method,
                    "astype" | "reshape" | "permute" | "transpose" | "sum" | "max" | "min"
                )
            {
                c.no_mut(&recv, receiver);
            }
            c.fresh_opaque()
        }
    }
}

/// Which tile of its partition a store writes, as a function of the block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreMap {
    /// The block's own tile (`store(tile)`, sub-partitions, `index=block_id(...)`).
    Own,
    /// An index minted by `iter_indices()`.
    Minted,
    /// A computed index.
    Computed(Vec<Poly>),
}

/// Is `comps` exactly `block_id(k)` on each axis of root `r`?
fn own_index(c: &Checker<'_>, r: usize, comps: &[Poly]) -> bool {
    let rank = c.roots.get(r).map(|x| x.tile.len()).unwrap_or(0);
    comps.len() == rank
        && comps.iter().enumerate().all(|(k, p)| {
            if k < c.grid_rank {
                p.as_atom() == Some(&Atom::BlockId(k as u8))
            } else {
                p.as_const() == Some(0)
            }
        })
}

fn store(
    c: &mut Checker<'_>,
    recv: &Val,
    name: &str,
    idx: Option<(Val, Span)>,
    idx_e: Option<&Expr>,
    span: Span,
) {
    // One store map per tensor: the own tile under one map is another block's tile under
    // another (an own-tile store next to a transposed one races).
    let map = match (recv, &idx) {
        (Val::Mut(r), None) | (Val::Sub { root: r, .. }, _) => Some((*r, StoreMap::Own)),
        (Val::Mut(r), Some((Val::Minted(m), _))) if m == r => Some((*r, StoreMap::Minted)),
        (Val::Mut(r), Some((iv, _))) => components(iv).map(|cs| {
            if !c.mapped && own_index(c, *r, &cs) {
                (*r, StoreMap::Own)
            } else {
                (*r, StoreMap::Computed(cs))
            }
        }),
        _ => None,
    };
    if let Some((r, m)) = map {
        c.record_store_map(r, m, span);
    }
    match recv {
        Val::Mut(r) => {
            let Some((iv, ispan)) = idx else {
                c.oblige(
                    "store-own-tile",
                    format!("`{name}.store` writes the block's own tile"),
                    Rung::Static,
                    String::new(),
                    span,
                );
                return;
            };
            store_index(c, *r, name, &iv, ispan, span);
        }
        Val::Sub { grid, .. } => match idx {
            Some((iv, _)) => {
                let texts = component_texts(c, idx_e, grid.len());
                subtile_bounds(c, name, grid.clone(), &iv, &texts, span, "store")
            }
            None => c.report(errors::subtile_out_of_bounds(
                name,
                span,
                0,
                "a sub-partition store needs a sub-tile index",
            )),
        },
        Val::Shared(i) => {
            let p = c.shared.get(*i).map(|s| s.span).unwrap_or(span);
            c.report(errors::store_to_shared(name, span, p));
        }
        _ => c.report(errors::store_not_mut(name, span)),
    }
}

fn store_index(c: &mut Checker<'_>, r: usize, name: &str, iv: &Val, ispan: Span, span: Span) {
    let root = c.root_name(r);
    if let Val::Minted(m) = iv {
        if *m == r {
            c.oblige(
                "store-mapped-index",
                format!("`{name}.store` index is minted by `{root}.iter_indices()`"),
                Rung::Static,
                String::new(),
                span,
            );
        } else {
            let other = c.root_name(*m);
            c.report(errors::minted_by_other(&root, &other, ispan));
            c.oblige(
                "store-mapped-index",
                format!("`{name}.store` index is minted by `{root}.iter_indices()`"),
                Rung::Refuted,
                String::new(),
                span,
            );
        }
        return;
    }
    let desc = format!("`{name}.store` index is injective in the block id and in bounds");
    let Some(comps) = components(iv) else {
        c.report(errors::store_unprovable(
            &root,
            ispan,
            "the index is not a tuple of integers the checker can follow",
        ));
        c.oblige(
            "store-index-injective",
            desc,
            Rung::Refuted,
            String::new(),
            span,
        );
        return;
    };
    let rank = c.roots.get(r).map(|x| x.tile.len()).unwrap_or(0);
    if comps.len() != rank {
        c.report(errors::store_rank_mismatch(&root, ispan, comps.len(), rank));
        c.oblige(
            "store-index-injective",
            desc,
            Rung::Refuted,
            String::new(),
            span,
        );
        return;
    }
    let tiles: Vec<Poly> = (0..rank).map(|k| tiles_of(c, r, k)).collect();
    let proof = c.prove_store_map(&comps, &tiles);
    let device = comps
        .iter()
        .enumerate()
        .map(|(k, p)| format!("0 <= {p} && {p} < {}", tiles_of(c, r, k)))
        .collect::<Vec<_>>()
        .join(" && ");
    match proof {
        StoreMapProof::Proved(rung) => c.oblige("store-index-injective", desc, rung, device, span),
        StoreMapProof::Collision {
            a,
            b,
            tile,
            min_grid,
        } => {
            let t = |v: &[i128]| {
                let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                if s.len() == 1 {
                    format!("({},)", s[0])
                } else {
                    format!("({})", s.join(", "))
                }
            };
            c.report(errors::store_collision(
                &root,
                ispan,
                &t(&a),
                &t(&b),
                &tile,
                &t(&min_grid),
            ));
            c.oblige(
                "store-index-injective",
                desc,
                Rung::Refuted,
                String::new(),
                span,
            );
        }
        StoreMapProof::CollisionAt { launch, a, b, tile } => {
            use crate::search::tuple;
            c.report(errors::store_collision_at(
                &root,
                ispan,
                &launch.text(),
                &tuple(&a),
                &tuple(&b),
                &tuple(&tile),
            ));
            c.oblige(
                "store-index-injective",
                desc,
                Rung::Refuted,
                String::new(),
                span,
            );
        }
        StoreMapProof::OutOfBoundsAt {
            launch,
            block,
            tile,
            axis,
            count,
        } => {
            use crate::search::tuple;
            c.report(errors::store_out_of_grid_at(
                &root,
                ispan,
                &launch.text(),
                &tuple(&block),
                &tuple(&tile),
                axis,
                count,
            ));
            c.oblige(
                "store-index-injective",
                desc,
                Rung::Refuted,
                String::new(),
                span,
            );
        }
        StoreMapProof::OutOfBounds { axis, block, tile } => {
            c.report(errors::store_out_of_grid(&root, ispan, axis, &block, &tile));
            c.oblige(
                "store-index-injective",
                desc,
                Rung::Refuted,
                String::new(),
                span,
            );
        }
        StoreMapProof::Unprovable(reason) => {
            c.report(errors::store_unprovable(&root, ispan, &reason));
            c.oblige(
                "store-index-injective",
                desc,
                Rung::Refuted,
                String::new(),
                span,
            );
        }
    }
}

fn subtile_bounds(
    c: &mut Checker<'_>,
    name: &str,
    grid: Vec<Poly>,
    iv: &Val,
    texts: &[String],
    span: Span,
    op: &str,
) {
    let desc = format!("`{name}.{op}` sub-tile index is inside the own tile");
    let Some(comps) = components(iv) else {
        c.oblige(
            "subtile-bounds",
            desc,
            Rung::Device,
            "sub-tile index in bounds".into(),
            span,
        );
        return;
    };
    if comps.len() != grid.len() {
        let d = format!(
            "{} components for a rank-{} sub-partition",
            comps.len(),
            grid.len()
        );
        c.report(errors::subtile_out_of_bounds(name, span, 0, &d));
        c.oblige("subtile-bounds", desc, Rung::Refuted, String::new(), span);
        return;
    }
    let mut rung = Rung::Static;
    let mut device = Vec::new();
    for (k, (ix, g)) in comps.iter().zip(&grid).enumerate() {
        let r = c.decide_index(ix, g);
        let t = texts.get(k).cloned().unwrap_or_else(|| ix.to_string());
        device.push(format!("0 <= {t} && {t} < {g}"));
        if r == Rung::Refuted {
            let d = refuted_detail(c, ix, &t, g, "sub-tiles");
            c.report(errors::subtile_out_of_bounds(name, span, k, &d));
        }
        rung = worse(rung, r);
    }
    c.oblige("subtile-bounds", desc, rung, device.join(" && "), span);
}

fn partition_mut(
    c: &mut Checker<'_>,
    recv: &Val,
    name: &str,
    shape: Option<Vec<Poly>>,
    span: Span,
) -> Val {
    let (root, parent) = match recv {
        Val::Mut(r) => (
            *r,
            c.roots.get(*r).map(|x| x.tile.clone()).unwrap_or_default(),
        ),
        Val::Sub { root, shape, .. } => (*root, shape.clone()),
        Val::Shared(i) => {
            let p = c.shared.get(*i).map(|s| s.span).unwrap_or(span);
            c.report(errors::store_to_shared(name, span, p));
            return Val::Other;
        }
        _ => {
            c.report(errors::store_not_mut(name, span));
            return Val::Other;
        }
    };
    let Some(shape) = shape else {
        c.oblige(
            "subpartition-shape",
            format!("`{name}.partition_mut` shape divides the tile"),
            Rung::Refuted,
            String::new(),
            span,
        );
        c.report(errors::subpartition_rank(span, 0, parent.len()));
        return Val::Other;
    };
    if shape.len() != parent.len() {
        c.report(errors::subpartition_rank(span, shape.len(), parent.len()));
        return Val::Other;
    }
    let mut rung = Rung::Static;
    let mut grid = Vec::new();
    for (k, (p, s)) in parent.iter().zip(&shape).enumerate() {
        let r = match (p.as_const(), s.as_const()) {
            (Some(a), Some(b)) if b >= 1 && a % b == 0 => Rung::Static,
            (Some(_), Some(_)) => {
                c.report(errors::subpartition_shape(
                    span,
                    k,
                    &p.to_string(),
                    &s.to_string(),
                ));
                Rung::Refuted
            }
            _ => {
                let m = p.modulo(s);
                if m.as_const() == Some(0) {
                    Rung::Static
                } else if p.launch_known() && s.launch_known() {
                    // Printed as written (`modulo` may have normalized `p % s` away).
                    let text = Poly::atom(Atom::Mod(Box::new(p.clone()), Box::new(s.clone())));
                    Rung::Launch(format!("{text} == 0"))
                } else {
                    Rung::Device
                }
            }
        };
        rung = worse(rung, r);
        grid.push(p.floordiv(s));
    }
    c.oblige(
        "subpartition-shape",
        format!(
            "`{name}.partition_mut` shape {} divides the tile",
            tuple_text(&shape)
        ),
        rung,
        String::new(),
        span,
    );
    Val::Sub {
        root,
        shape,
        grid,
        created: span,
    }
}
