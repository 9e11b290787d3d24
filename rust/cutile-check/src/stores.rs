//! Writes of outputs: which tile each store writes (own tile, a minted index, a computed
//! index with its injectivity proof), and sub-partitions of the own tile.

use crate::bounds::{worse, Rung};
use crate::check::Checker;
use crate::effects::{component_texts, components, tiles_of, tuple_text};
use crate::errors;
use crate::loads::refuted_detail;
use crate::prover::StoreMapProof;
use crate::state::Val;
use crate::sym::{Atom, Poly};
use cutile_kast::{Expr, Span};

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

/// An index as the map rules compare it, so that one map spelled two ways is one map:
/// results that reach it through `+ - *` put back (`Checker::unwrap_ring`: the device's
/// index is congruent to that modulo 2^32, hence equal where two maps are equal), then the
/// rewrites that hold on every launch (`min(b, num_blocks(0) - 1)` and the digits
/// `(lin // n1, lin % n1)` are the block ids). Results under `//`, `%`, `min`, `max` that
/// may have wrapped stay opaque, each its own value.
pub fn normalized(c: &Checker<'_>, comps: &[Poly]) -> Vec<Poly> {
    comps
        .iter()
        .map(|p| {
            let mut p = c.unwrap_ring(p);
            // A loop of one iteration binds one value.
            for (id, (lo, hi)) in &c.ranges.loops {
                if lo == hi && lo.launch_known() {
                    p = p.substitute(&Atom::Loop(*id), lo);
                }
            }
            crate::simplify::simplify(&p, &c.ranges)
        })
        .collect()
}

/// Is `comps` `block_id(k)` on each axis of root `r` (after `normalized`)?
pub fn own_index(c: &Checker<'_>, r: usize, comps: &[Poly]) -> bool {
    let rank = c.roots.get(r).map(|x| x.tile.len()).unwrap_or(0);
    let comps = normalized(c, comps);
    comps.len() == rank
        && comps.iter().enumerate().all(|(k, p)| {
            if k < c.grid_rank {
                p.as_atom() == Some(&Atom::BlockId(k as u8))
            } else {
                p.as_const() == Some(0)
            }
        })
}

/// Where a store is: its receiver's text, its span, and whether it runs only on some paths.
pub struct StoreSite<'a> {
    pub name: &'a str,
    pub span: Span,
    pub conditional: bool,
}

pub fn store(
    c: &mut Checker<'_>,
    recv: &Val,
    site: &StoreSite<'_>,
    idx: Option<(Val, Span)>,
    idx_e: Option<&Expr>,
    fits: Rung,
) {
    let (name, span) = (site.name, site.span);
    // One store map per tensor: the own tile under one map is another block's tile under
    // another (an own-tile store next to a transposed one races).
    let map = match (recv, &idx) {
        (Val::Mut(r), None) | (Val::Sub { root: r, .. }, _) => Some((*r, StoreMap::Own)),
        (Val::Mut(r), Some((Val::Minted { root: m, .. }, _))) if m == r => {
            Some((*r, StoreMap::Minted))
        }
        (Val::Mut(r), Some((iv, _))) => components(iv).map(|cs| {
            if c.minted_index(&cs) == Some(*r) {
                (*r, StoreMap::Minted)
            } else if own_index(c, *r, &cs) {
                (*r, StoreMap::Own)
            } else {
                (*r, StoreMap::Computed(normalized(c, &cs)))
            }
        }),
        _ => None,
    };
    if let Some((r, m)) = map {
        if m == StoreMap::Own {
            c.own_use(r, span, "store");
        }
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
            store_index(c, *r, site, &iv, ispan, fits);
        }
        Val::Sub { grid, .. } => match idx {
            Some((iv, _)) => {
                let texts = component_texts(c, idx_e, grid.len());
                subtile_bounds(
                    c,
                    &crate::loads::Site {
                        name,
                        op: "store",
                        span,
                    },
                    grid.clone(),
                    &iv,
                    &texts,
                    &[fits],
                )
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

fn store_index(
    c: &mut Checker<'_>,
    r: usize,
    site: &StoreSite<'_>,
    iv: &Val,
    ispan: Span,
    fits: Rung,
) {
    let (name, span) = (site.name, site.span);
    let reached = |d| errors::if_reached(d, site.conditional);
    let root = c.root_name(r);
    // `for i, j in z.iter_indices(): z.store(t, index=(i, j))` stores the minted index too.
    let minted = match iv {
        Val::Minted { root: m, .. } => Some(*m),
        v => components(v).and_then(|cs| c.minted_index(&cs)),
    };
    if let Some(m) = minted {
        if m == r {
            c.oblige(
                "store-mapped-index",
                format!("`{name}.store` index is minted by `{root}.iter_indices()`"),
                Rung::Static,
                String::new(),
                span,
            );
        } else {
            let other = c.root_name(m);
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
    let mut proof = c.prove_store_map(&comps, &tiles);
    if matches!(proof, StoreMapProof::Unprovable(_)) && comps.iter().any(|p| c.has_wraps(p)) {
        // Some arithmetic may wrap. The map over the integers still decides the message:
        // its counterexamples use small launches, where nothing wraps, so they are real.
        let full: Vec<Poly> = comps.iter().map(|p| c.unwrap_all(p)).collect();
        proof = match c.prove_store_map(&full, &tiles) {
            StoreMapProof::Proved(_) | StoreMapProof::Unprovable(_) => StoreMapProof::Unprovable(
                "its arithmetic can wrap around 32 bits for some launch the checker cannot \
                 rule out (a product of block ids and extents, or a large constant)"
                    .into(),
            ),
            found => found,
        };
    }
    let device = comps
        .iter()
        .enumerate()
        .map(|(k, p)| format!("0 <= {p} && {p} < {}", tiles_of(c, r, k)))
        .collect::<Vec<_>>()
        .join(" && ");
    match proof {
        // The index holds the values the proof is about only if its arithmetic did not
        // wrap: that condition joins the proof's (a device-only one leaves the index
        // opaque, which no proof accepts).
        StoreMapProof::Proved(rung) => c.oblige(
            "store-index-injective",
            desc,
            worse(rung, fits),
            device,
            span,
        ),
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
            c.report(reached(errors::store_collision(
                &root,
                ispan,
                &t(&a),
                &t(&b),
                &tile,
                &t(&min_grid),
            )));
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
            c.report(reached(errors::store_collision_at(
                &root,
                ispan,
                &launch.text(),
                &tuple(&a),
                &tuple(&b),
                &tuple(&tile),
            )));
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
            c.report(reached(errors::store_out_of_grid_at(
                &root,
                ispan,
                &launch.text(),
                &tuple(&block),
                &tuple(&tile),
                axis,
                count,
            )));
            c.oblige(
                "store-index-injective",
                desc,
                Rung::Refuted,
                String::new(),
                span,
            );
        }
        StoreMapProof::OutOfBounds { axis, block, tile } => {
            c.report(reached(errors::store_out_of_grid(
                &root, ispan, axis, &block, &tile,
            )));
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

pub fn subtile_bounds(
    c: &mut Checker<'_>,
    site: &crate::loads::Site<'_>,
    grid: Vec<Poly>,
    iv: &Val,
    texts: &[String],
    fits: &[Rung],
) {
    let (name, span, op) = (site.name, site.span, site.op);
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
    c.oblige(
        "subtile-bounds",
        desc,
        worse(rung, crate::effects::joint(fits)),
        device.join(" && "),
        span,
    );
}

pub fn partition_mut(
    c: &mut Checker<'_>,
    recv: &Val,
    name: &str,
    shape: Option<Vec<Poly>>,
    span: Span,
) -> Val {
    let (root, parent) = match recv {
        Val::Mut(r) => {
            c.own_use(*r, span, "partition_mut");
            (
                *r,
                c.roots.get(*r).map(|x| x.tile.clone()).unwrap_or_default(),
            )
        }
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
                    crate::launch_pred::compare(
                        &text,
                        cutile_facts::CmpOp::Eq,
                        &Poly::zero(),
                        format!("{text} == 0"),
                    )
                    .map_or(Rung::Device, Rung::Launch)
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
