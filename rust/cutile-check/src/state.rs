//! Abstract values and the per-program-point state of the borrow analysis.

use crate::errors::MoveWhy;
use crate::sym::Poly;
use cutile_kast::Span;
use std::collections::BTreeMap;

/// What the checker knows about a value: its provenance, not its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Val {
    /// A mutable partition, by root (an entry `Mut` parameter).
    Mut(usize),
    /// A mutable sub-partition of root `root`'s own tile: `grid` sub-tiles per axis.
    Sub {
        root: usize,
        shape: Vec<Poly>,
        grid: Vec<Poly>,
        created: Span,
    },
    /// A shared read-only tensor, by index into the entry's tensor parameters.
    Shared(usize),
    /// A tile index minted by `root.iter_indices()`.
    Minted(usize),
    Int(Poly),
    Tuple(Vec<Val>),
    /// Tiles, floats, booleans, dtypes, pointers: nothing the rules need.
    Other,
}

impl Val {
    /// The root of a mutable value.
    pub fn mut_root(&self) -> Option<usize> {
        match self {
            Val::Mut(r) | Val::Sub { root: r, .. } => Some(*r),
            _ => None,
        }
    }

    pub fn is_mut(&self) -> bool {
        self.mut_root().is_some()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    pub span: Span,
    pub why: MoveWhy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub val: Val,
    pub moved: Option<Move>,
}

/// A live mutable borrow of a root by a sub-partition bound to `holder`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Borrow {
    pub holder: String,
    pub root: usize,
    pub created: Span,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct State {
    pub vars: BTreeMap<String, Binding>,
    pub borrows: Vec<Borrow>,
}

impl State {
    pub fn bind(&mut self, name: &str, val: Val) {
        if let Val::Sub { root, created, .. } = &val {
            self.borrows.push(Borrow {
                holder: name.to_string(),
                root: *root,
                created: *created,
            });
        }
        self.vars.insert(name.to_string(), Binding { val, moved: None });
    }

    /// Is the borrow still held (its holder still names that sub-partition, unmoved)?
    pub fn borrow_held(&self, b: &Borrow) -> bool {
        matches!(self.vars.get(&b.holder), Some(Binding { val: Val::Sub { created, .. }, moved: None }) if *created == b.created)
    }
}

/// Join two states at a control-flow merge. `opaque` makes a fresh value for a name whose
/// integer values differ; `why` tags moves that only one side made.
pub fn join(
    a: &State,
    b: &State,
    why: MoveWhy,
    opaque: &mut dyn FnMut(&str) -> Val,
) -> State {
    let mut out = State::default();
    for (name, ba) in &a.vars {
        let merged = match b.vars.get(name) {
            None => ba.clone(),
            Some(bb) => {
                let val = if ba.val == bb.val {
                    ba.val.clone()
                } else if ba.val.is_mut() || bb.val.is_mut() {
                    // Keep the mutable provenance; different roots are reported as moves.
                    if ba.val.is_mut() { ba.val.clone() } else { bb.val.clone() }
                } else {
                    opaque(name)
                };
                let moved = match (ba.moved, bb.moved) {
                    (Some(m), Some(_)) => Some(m),
                    (Some(m), None) | (None, Some(m)) => Some(Move {
                        span: m.span,
                        why: if m.why == MoveWhy::Assign { why } else { m.why },
                    }),
                    (None, None) => None,
                };
                Binding { val, moved }
            }
        };
        out.vars.insert(name.clone(), merged);
    }
    for (name, bb) in &b.vars {
        out.vars.entry(name.clone()).or_insert_with(|| bb.clone());
    }
    for br in a.borrows.iter().chain(b.borrows.iter()) {
        if !out.borrows.contains(br) {
            out.borrows.push(br.clone());
        }
    }
    out
}

/// A join where either side may be unreachable.
pub fn join_opt(
    a: Option<State>,
    b: Option<State>,
    why: MoveWhy,
    opaque: &mut dyn FnMut(&str) -> Val,
) -> Option<State> {
    match (a, b) {
        (Some(x), Some(y)) => Some(join(&x, &y, why, opaque)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Per-function facts used by the borrow-liveness test.
#[derive(Debug, Default)]
pub struct UseMap {
    /// Byte offsets of every read of each name.
    pub reads: BTreeMap<String, Vec<(u32, Span)>>,
}
