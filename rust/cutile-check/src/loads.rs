//! Reads of tensors: which tiles a block may read, and the bounds of every tile index.

use crate::bounds::Rung;
use crate::check::Checker;
use crate::effects::{component_texts, components, minted_components, Args};
use crate::errors;
use crate::state::Val;
use crate::sym::{Atom, Poly};
use cutile_kast::Span;

/// `load_tile_like(src, like, padding)`: `src` at `like`'s own tile position and shape.
pub fn load_tile_like(c: &mut Checker<'_>, a: &Args<'_>, span: Span) -> Val {
    let (Some(src), Some(pos)) = (a.expr("src"), a.expr("like")) else {
        return Val::Other;
    };
    let sv = a.val("src").cloned().unwrap_or(Val::Other);
    let pv = a.val("like").cloned().unwrap_or(Val::Other);
    let root = match pv {
        Val::Mut(r) => r,
        _ => {
            let what = c.describe(pos);
            c.report(errors::load_like_needs_mut(&what, pos.span()));
            return Val::Other;
        }
    };
    c.own_use(root, span, "load_tile_like");
    match sv {
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
                let idx = if k < c.grid_rank {
                    Poly::atom(Atom::BlockId(k as u8))
                } else {
                    Poly::zero()
                };
                let count = d.cdiv(t);
                let text = if k < c.grid_rank {
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
                    Rung::Static,
                );
            }
        }
        _ => {}
    }
    Val::Other
}

/// The label of a refuted bounds goal: the extreme the index reaches.
pub fn refuted_detail(c: &Checker<'_>, idx: &Poly, text: &str, count: &Poly, what: &str) -> String {
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

/// Where a tile access happens: the tensor's name, the operation and its span.
pub struct Site<'a> {
    pub name: &'a str,
    pub op: &'a str,
    pub span: Span,
}

pub fn bounds_obligation(
    c: &mut Checker<'_>,
    site: &Site<'_>,
    axis: usize,
    idx: &Poly,
    text: &str,
    count: &Poly,
    fits: Rung,
) {
    let (name, op, span) = (site.name, site.op, site.span);
    // In bounds for the values it denotes, and computed without wrapping (a device assert
    // checks the value the device computed, so a device-only fit is enough there).
    let rung = crate::bounds::worse(c.decide_index(idx, count), fits);
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

/// `x.load_tile(shape, index, padding)`: a tile of a shared input at a computed index.
pub fn load_tile(c: &mut Checker<'_>, recv: &Val, name: &str, a: &Args<'_>, span: Span) {
    let i = match recv {
        Val::Mut(_) | Val::Sub { .. } => {
            c.report(errors::load_tile_on_mut(name, span));
            return;
        }
        Val::Shared(i) => *i,
        _ => return,
    };
    let idx_e = a.expr("index");
    let (idx, fits) = match a.val("index").cloned() {
        Some(v) => {
            let (v, r) = crate::effects::index_value(c, &v);
            (Some(v), r)
        }
        None => (None, Vec::new()),
    };
    let dims = c.shared.get(i).map(|s| s.shape.clone()).unwrap_or_default();
    let shape = a.val("shape").and_then(components);
    let comps = match &idx {
        Some(Val::Minted { root, lp }) => Some(minted_components(c, *root, *lp)),
        Some(v) => components(v),
        None => None,
    };
    let pname = c.shared.get(i).map(|s| s.name.clone()).unwrap_or_default();
    match (shape, comps) {
        (Some(shape), Some(comps)) => {
            let texts = match &idx {
                Some(Val::Minted { .. }) => comps
                    .iter()
                    .enumerate()
                    .map(|(k, _)| {
                        format!("{}[{k}]", idx_e.map(|e| c.describe(e)).unwrap_or_default())
                    })
                    .collect(),
                _ => component_texts(c, idx_e, comps.len()),
            };
            for (k, ((d, t), ix)) in dims.iter().zip(&shape).zip(&comps).enumerate() {
                let text = texts.get(k).cloned().unwrap_or_default();
                let site = Site {
                    name: &pname,
                    op: "load_tile",
                    span,
                };
                let fit = fits.get(k).cloned().unwrap_or(Rung::Static);
                bounds_obligation(c, &site, k, ix, &text, &d.cdiv(t), fit);
            }
        }
        _ => {
            let desc = format!("the tile index of `{pname}` in `load_tile` is in bounds");
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
