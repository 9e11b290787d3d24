//! Abstract values and the per-program-point state of the borrow analysis.

use crate::errors::MoveWhy;
use crate::fold::Ct;
use crate::sym::Poly;
use cutile_kast::Span;
use std::collections::BTreeMap;
use std::rc::Rc;

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
    /// A tensor every block updates through atomic operations only, by index into the
    /// entry's `Atomic` parameters.
    Atomic(usize),
    /// A tile index minted by `root.iter_indices()` in the loop instance `lp` (its
    /// components are that loop's own atoms: two loops' indices are unrelated).
    Minted {
        root: usize,
        lp: u32,
    },
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

/// A live mutable borrow of a root by a sub-partition bound to variable `holder`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Borrow {
    pub holder: u32,
    pub holder_name: Rc<str>,
    pub root: usize,
    pub created: Span,
}

/// Variables are interned to ids by the checker; a state is a vector indexed by id, so
/// copying it at a branch costs a memcpy and a few reference counts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct State {
    pub vars: Vec<Option<Binding>>,
    pub borrows: Vec<Borrow>,
    /// Reached only on some paths (inside a branch or a loop that may not run, or after a
    /// `break`, `continue` or `return` that may have run): a collision found here is one
    /// only if both blocks get here.
    pub conditional: bool,
    /// Variables that hold a value the compiler knows before the kernel runs (a literal,
    /// a `Const`, a static extent, arithmetic of them), by variable id (`fold.rs`).
    pub ct: BTreeMap<u32, Ct>,
}

impl State {
    pub fn get(&self, id: u32) -> Option<&Binding> {
        self.vars.get(id as usize).and_then(|b| b.as_ref())
    }

    pub fn get_mut(&mut self, id: u32) -> Option<&mut Binding> {
        self.vars.get_mut(id as usize).and_then(|b| b.as_mut())
    }

    pub fn bind(&mut self, id: u32, name: &Rc<str>, val: Val) {
        if let Val::Sub { root, created, .. } = &val {
            self.borrows.push(Borrow {
                holder: id,
                holder_name: name.clone(),
                root: *root,
                created: *created,
            });
        }
        self.ct.remove(&id);
        let i = id as usize;
        if self.vars.len() <= i {
            self.vars.resize(i + 1, None);
        }
        self.vars[i] = Some(Binding { val, moved: None });
    }

    /// Is the borrow still held (its holder still names that sub-partition, unmoved)?
    pub fn borrow_held(&self, b: &Borrow) -> bool {
        matches!(self.get(b.holder), Some(Binding { val: Val::Sub { created, .. }, moved: None }) if *created == b.created)
    }
}

/// Join two states at a control-flow merge. `opaque` makes a fresh value for a variable
/// whose integer values differ; `why` tags moves that only one side made.
pub fn join(a: &State, b: &State, why: MoveWhy, opaque: &mut dyn FnMut(u32) -> Val) -> State {
    if a == b {
        return a.clone();
    }
    let n = a.vars.len().max(b.vars.len());
    let mut out = State {
        vars: Vec::with_capacity(n),
        borrows: Vec::new(),
        conditional: a.conditional || b.conditional,
        // Where paths meet at a test known only at run time, the compiler keeps a
        // compile-time value only where both paths give the same one.
        // (A name bound on one path only keeps its value, as its binding is kept.)
        ct: a
            .ct
            .iter()
            .filter(|(k, v)| b.ct.get(k) == Some(*v) || b.get(**k).is_none())
            .chain(b.ct.iter().filter(|(k, _)| a.get(**k).is_none()))
            .map(|(k, v)| (*k, v.clone()))
            .collect(),
    };
    for i in 0..n {
        let (ba, bb) = (
            a.vars.get(i).and_then(|x| x.as_ref()),
            b.vars.get(i).and_then(|x| x.as_ref()),
        );
        let merged = match (ba, bb) {
            (None, None) => None,
            (Some(x), None) | (None, Some(x)) => Some(x.clone()),
            (Some(ba), Some(bb)) if ba == bb => Some(ba.clone()),
            (Some(ba), Some(bb)) => {
                let val = if ba.val == bb.val {
                    ba.val.clone()
                } else if ba.val.is_mut() || bb.val.is_mut() {
                    // Keep the mutable provenance; different roots are reported as moves.
                    if ba.val.is_mut() {
                        ba.val.clone()
                    } else {
                        bb.val.clone()
                    }
                } else {
                    opaque(i as u32)
                };
                let moved = match (ba.moved, bb.moved) {
                    (Some(m), Some(_)) => Some(m),
                    (Some(m), None) | (None, Some(m)) => Some(Move {
                        span: m.span,
                        why: if m.why == MoveWhy::Assign { why } else { m.why },
                    }),
                    (None, None) => None,
                };
                Some(Binding { val, moved })
            }
        };
        out.vars.push(merged);
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
    opaque: &mut dyn FnMut(u32) -> Val,
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
