//! The walker: the checker's state, the entry's roots, obligations and facts. Statements
//! are in `check/exec.rs`, expressions and device calls in `check/eval.rs`; memory effects
//! of DSL operations in `effects.rs`.

mod consts;
mod eval;
mod exec;
mod paths;
mod run;

use consts::{target_names, tile_shape_consts};

use crate::bounds::{Ranges, Rung};
use crate::errors::{self, MoveWhy};
use crate::state::{join_opt, Binding, Move, State, UseMap, Val};
use crate::sym::{Atom, Poly};
use cutile_diag::{Diagnostic, Label};
use cutile_facts::{Discharge, NodeRef, Obligation};
use cutile_kast::{
    stmt_exprs, walk_stmts, Dim, Document, Expr, Function, FunctionKind, ParamKind, Span, Stmt,
    Target,
};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::rc::Rc;

/// An entry `Mut` parameter.
pub struct Root {
    pub name: String,
    /// The partition's tile shape (the annotation).
    pub tile: Vec<Poly>,
    /// The full tensor's extents (`dim(z, k)`).
    pub dims: Vec<Poly>,
}

/// An entry shared tensor parameter.
pub struct SharedParam {
    pub name: String,
    pub span: Span,
    pub shape: Vec<Poly>,
}

pub struct LoopCtx {
    pub span: Span,
    /// The states at each `break` and `continue`, with the world each was reached in.
    pub breaks: Vec<(paths::World, State)>,
    pub continues: Vec<(paths::World, State)>,
}

pub struct Frame<'d> {
    pub func: &'d Function,
    pub call_site: Option<Span>,
    pub uses: UseMap,
    pub loops: Vec<LoopCtx>,
    pub unsafe_depth: u32,
    pub returns: Vec<Val>,
    /// The compile-time value of each `return`'s value (`fold.rs`), where it has one, and
    /// the world the `return` was reached in (the function's result is the value of the
    /// `return` whose world holds).
    pub returns_ct: Vec<(Option<crate::fold::Ct>, paths::World)>,
    /// A test known only on the device, or a loop, was met: values returned on different
    /// paths meet as device values.
    pub runtime_flow: bool,
    /// A `return` inside a loop of this function: the result is carried out of the loop
    /// as a device value, even a constant one (`Checker::device_val`).
    pub returns_in_loop: bool,
    /// End of the statement (or statement header) being evaluated: a borrow is live at a
    /// use when its holder is read after this point.
    pub stmt_hi: u32,
}

pub struct Checker<'d> {
    pub doc: &'d Document,
    pub roots: Vec<Root>,
    pub shared: Vec<SharedParam>,
    /// The entry's `Atomic` parameters (`atomics.rs`).
    pub atomics: Vec<SharedParam>,
    pub ranges: Ranges,
    pub mapped: bool,
    pub grid_rank: usize,
    pub deny: bool,
    pub frames: Vec<Frame<'d>>,
    pub diags: Vec<Diagnostic>,
    diag_keys: HashSet<(String, Span)>,
    pub obligations: Vec<Obligation>,
    obl_keys: HashMap<(String, NodeRef, String), usize>,
    /// Bits of each `for` loop instance's counter (`loops::loop_binder`): the widest
    /// any visit of the loop asked for.
    loop_counters: BTreeMap<NodeRef, u8>,
    /// Tests the compiler folds (`fold.rs`): `Some(b)` of literals, `None` of `Const`s.
    folded: BTreeMap<NodeRef, Option<bool>>,
    /// Tests read as known only on the device on some path: never folded.
    runtime_tests: BTreeSet<NodeRef>,
    /// The world of the path being walked (`check/paths.rs`).
    pub world: paths::World,
    /// Depth of arms of conditional expressions (`a if C == 1 else b`) on a test of `Const`s
    /// that the world does not decide: each arm is compiled in some specializations only.
    pub const_arms: u32,
    /// The device call being evaluated is an op's function argument (`reduce`'s combiner),
    /// whose arguments are placeholders: none of its parameters is known at compile time.
    pub placeholder_args: bool,
    /// Merge-point ids of the worlds of each test of `Const`s (`check/paths.rs`).
    fold_keys: HashMap<Rc<str>, u32>,
    /// The compile-time value of each device call's result, at its last visit.
    pub call_ct: HashMap<NodeRef, crate::fold::Ct>,
    /// Ids of the `call_device` nodes from the entry down to the function being walked:
    /// with a node id it names one inlined instance of a node.
    pub call_path: Vec<u32>,
    /// The node id of the DSL call being handled (its obligations are keyed by it).
    pub op_node: u32,
    /// Interned (call path, node id, part): loop variables, minted components.
    instances: HashMap<(Vec<u32>, u32, u32), u32>,
    /// Minted-component atom -> (loop instance, component, root).
    minted: HashMap<u32, (u32, u32, usize)>,
    /// Roots walked with `iter_indices()` (through any alias or device function).
    pub persistent: BTreeSet<usize>,
    /// The schedule of each `iter_indices()` loop instance (keyed by the `iter_indices`
    /// call) and each root it walks there (a loop may walk another root in another
    /// specialization of the `Const`s): the lowering emits exactly these.
    pub schedules: BTreeSet<(NodeRef, usize)>,
    /// Accesses of a root's own tile (the tile at the block id): none may touch a
    /// persistent root, whose blocks own the tiles the schedule mints.
    own_uses: Vec<(usize, Span, &'static str)>,
    opaque_ids: HashMap<(u32, u32), u32>,
    /// Opaque values whose device type the checker does not know (a value of a tile, a
    /// merge, a `u8`): possibly narrower than 32 bits or unsigned, so arithmetic on them
    /// is not the arithmetic of `i32`/`i64` (`Checker::narrow`).
    pub narrow_ids: HashSet<u32>,
    /// `i8`/`i16` scalar parameters: exact values, but arithmetic on them wraps narrow.
    pub narrow_scalars: HashSet<String>,
    /// Device results that may have wrapped: opaque id -> (the exact value, its width).
    wraps: HashMap<u32, (Poly, u8)>,
    next_opaque: u32,
    /// Statements walked so far (`exec_block`), and whether `limits::MAX_STEPS` was passed.
    steps: usize,
    out_of_steps: bool,
    var_ids: HashMap<String, u32>,
    pub var_names: Vec<Rc<str>>,
    /// `decide_index` results: loops re-evaluate their bodies and kernels repeat accesses.
    bounds_cache: HashMap<(Poly, Poly), Rung>,
    /// The first store map seen for each root, and where.
    store_maps: HashMap<usize, (crate::stores::StoreMap, Span)>,
    /// Loads of outputs by map (own tile or minted index), judged against the store map
    /// once every store was seen.
    load_maps: Vec<(usize, crate::stores::StoreMap, Span)>,
    /// Store-map proofs by (index components, tile counts): loops re-walk their bodies, and
    /// a failed proof may have searched for a counterexample.
    store_proofs: HashMap<(Vec<Poly>, Vec<Poly>), crate::prover::StoreMapProof>,
}

pub(crate) const MAX_INLINE_DEPTH: usize = 32;
/// Atoms an integer value may hold (nested ones counted) before the checker stops
/// following it (`Checker::bounded`): an index needs a handful; a term past this was
/// built by a chain of statements that nests or doubles it.
pub const MAX_TERM_ATOMS: usize = 256;
const MAX_LOOP_PASSES: usize = 4;
/// Tests of `Const`s a path may be split at (`check/paths.rs`): at most 2^6 worlds. Past
/// them a test is read as a run-time one (both branches, joined; a tensor chosen there is
/// CT1010), since the worlds, and the checker's time, double at each such test.
const MAX_WORLD_TESTS: usize = 6;

fn dim_poly(d: &Dim, param: &str, axis: usize) -> Poly {
    match d {
        Dim::Int(n) if *n >= 0 => Poly::c(i128::from(*n)),
        Dim::Int(_) => Poly::atom(Atom::Dim(param.to_string(), axis as u8)),
        Dim::Name(n) => Poly::atom(Atom::Const(n.clone())),
    }
}

fn is_int_dtype(d: Option<&str>) -> bool {
    int_bits(d).is_some()
}

/// The width of an integer parameter type (`int` for a `Const`: exact, 64 bits).
fn int_bits(d: Option<&str>) -> Option<u8> {
    match d? {
        "i8" => Some(8),
        "i16" => Some(16),
        "i32" => Some(32),
        "i64" | "int" => Some(64),
        _ => None,
    }
}

impl<'d> Checker<'d> {
    /// `only_reached`: `Some(false)` after a walk that reached no schedule loop (the
    /// kernel is then read as not mapped).
    pub fn new(doc: &'d Document, only_reached: Option<bool>) -> Option<Self> {
        let entry = doc.entry_function()?;
        let mut roots = Vec::new();
        let mut shared = Vec::new();
        let mut atomics = Vec::new();
        let mut shape_consts = HashSet::new();
        for p in &entry.params {
            let shape: Vec<Poly> = p
                .shape
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, d)| dim_poly(d, &p.name, i))
                .collect();
            for d in p.shape.iter().flatten() {
                if let Dim::Name(n) = d {
                    shape_consts.insert(n.clone());
                }
            }
            match p.kind {
                ParamKind::MutTensor => roots.push(Root {
                    name: p.name.clone(),
                    dims: (0..shape.len())
                        .map(|k| Poly::atom(Atom::Dim(p.name.clone(), k as u8)))
                        .collect(),
                    tile: shape,
                }),
                ParamKind::Tensor | ParamKind::AtomicTensor => {
                    let list = if p.kind == ParamKind::Tensor {
                        &mut shared
                    } else {
                        &mut atomics
                    };
                    list.push(SharedParam {
                        name: p.name.clone(),
                        span: p.span,
                        shape,
                    })
                }
                _ => {}
            }
        }
        shape_consts.extend(tile_shape_consts(entry));
        // Mapped: some `for` loop walks a persistent schedule. The loop binder marks a root
        // persistent only at such a loop (`loops::walks_schedule`, the same test), and
        // `iter_indices()` anywhere else is CT2013: so no root is persistent in a kernel
        // read as not mapped. A loop the walk never reaches (a function never called, a
        // folded branch) leaves no root persistent: `crate::check` then reads the kernel
        // again as not mapped (`only_reached`), so an accepted kernel is mapped exactly
        // where an output is persistent.
        let mut mapped = false;
        for f in &doc.functions {
            walk_stmts(&f.body, &mut |s| {
                if let Stmt::For { iter, .. } = s {
                    mapped |= crate::loops::walks_schedule(iter);
                }
            });
        }
        if let Some(reached) = only_reached {
            mapped &= reached;
        }
        // Grid == partition grid for every mutable partition, so axes past the smallest
        // partition rank have extent 1 (host rule 6, `validate_launch`).
        let grid_rank = if mapped || roots.is_empty() {
            3
        } else {
            roots.iter().map(|r| r.tile.len()).min().unwrap_or(3).min(3)
        };
        let grid = std::array::from_fn(|k| {
            if k < grid_rank {
                Poly::atom(Atom::Grid(k as u8))
            } else {
                Poly::c(1)
            }
        });
        let extent_floors = if mapped {
            Vec::new()
        } else {
            roots
                .iter()
                .flat_map(|r| {
                    r.tile.iter().enumerate().map(|(k, t)| {
                        let g = grid.get(k).cloned().unwrap_or_else(|| Poly::c(1));
                        let full = g.sub(&Poly::c(1)).mul(t).add(&Poly::c(1));
                        crate::bounds::ExtentFloor {
                            dim: Atom::Dim(r.name.clone(), k as u8),
                            ceiling: g.mul(t),
                            floors: [full, g],
                        }
                    })
                })
                .collect()
        };
        Some(Checker {
            doc,
            roots,
            shared,
            atomics,
            ranges: Ranges {
                loops: HashMap::new(),
                shape_consts: shape_consts.into_iter().collect(),
                grid,
                positive: HashSet::new(),
                bounded: HashMap::new(),
                exact: HashMap::new(),
                materialized: Vec::new(),
                extent_floors,
                scalar_bits: entry
                    .params
                    .iter()
                    .filter(|p| p.kind == ParamKind::Scalar)
                    .filter_map(|p| Some((p.name.clone(), int_bits(p.dtype.as_deref())?)))
                    .collect(),
            },
            mapped,
            grid_rank,
            deny: entry.options.deny_in_kernel_checks,
            frames: Vec::new(),
            diags: Vec::new(),
            diag_keys: HashSet::new(),
            obligations: Vec::new(),
            obl_keys: HashMap::new(),
            loop_counters: BTreeMap::new(),
            folded: BTreeMap::new(),
            runtime_tests: BTreeSet::new(),
            world: Rc::default(),
            const_arms: 0,
            call_ct: HashMap::new(),
            fold_keys: HashMap::new(),
            placeholder_args: false,
            call_path: Vec::new(),
            op_node: 0,
            instances: HashMap::new(),
            minted: HashMap::new(),
            persistent: BTreeSet::new(),
            schedules: BTreeSet::new(),
            own_uses: Vec::new(),
            wraps: HashMap::new(),
            opaque_ids: HashMap::new(),
            narrow_ids: HashSet::new(),
            narrow_scalars: entry
                .params
                .iter()
                .filter(|p| p.kind == ParamKind::Scalar)
                .filter(|p| int_bits(p.dtype.as_deref()).is_some_and(|b| b < 32))
                .map(|p| p.name.clone())
                .collect(),
            next_opaque: 0,
            steps: 0,
            out_of_steps: false,
            var_ids: HashMap::new(),
            var_names: Vec::new(),
            bounds_cache: HashMap::new(),
            store_maps: HashMap::new(),
            load_maps: Vec::new(),
            store_proofs: HashMap::new(),
        })
    }

    /// What the lowering and the launcher act on.
    pub fn facts(&self) -> cutile_facts::KernelFacts {
        use cutile_facts::{OutputFact, OutputKind};
        let mut obligations = self.obligations.clone();
        obligations.sort_by(|a, b| {
            (a.span.file, a.span.lo, a.span.hi, &a.node).cmp(&(
                b.span.file,
                b.span.lo,
                b.span.hi,
                &b.node,
            ))
        });
        cutile_facts::KernelFacts {
            outputs: self
                .roots
                .iter()
                .enumerate()
                .map(|(r, root)| OutputFact {
                    param: root.name.clone(),
                    kind: if self.persistent.contains(&r) {
                        OutputKind::Persistent
                    } else {
                        OutputKind::Partitioned
                    },
                })
                .collect(),
            grid_rank: self.grid_rank as u8,
            index_width: 32,
            obligations,
            schedules: self
                .schedules
                .iter()
                .filter_map(|(node, r)| {
                    let root = self.roots.get(*r)?;
                    let fact = crate::schedule::fact(&root.name, root.tile.len())?;
                    Some((node.clone(), fact))
                })
                .collect(),
            loop_counters: self
                .loop_counters
                .iter()
                .map(|(n, &b)| (n.clone(), b))
                .collect(),
            folded_branches: self
                .folded
                .iter()
                .filter(|(n, _)| !self.runtime_tests.contains(*n))
                .map(|(n, &b)| (n.clone(), b))
                .collect(),
        }
    }

    /// The `for` loop at node `nid` (in the current call path) steps its counter in
    /// `bits`; a loop reached on several paths gets the widest.
    pub fn set_loop_counter(&mut self, nid: u32, bits: u8) {
        let node = NodeRef {
            path: self.call_path.clone(),
            nid,
        };
        let e = self.loop_counters.entry(node).or_insert(bits);
        *e = (*e).max(bits);
    }

    /// Every store to one root must use the same map (CT2010).
    pub fn record_store_map(&mut self, root: usize, map: crate::stores::StoreMap, at: Span) {
        match self.store_maps.get(&root) {
            None => {
                self.store_maps.insert(root, (map, at));
            }
            Some((first, first_at)) if *first != map => {
                let first_at = *first_at;
                let name = self.root_name(root);
                self.report(errors::mixed_store_maps(&name, at, first_at));
            }
            Some(_) => {}
        }
    }

    /// A load of root `root`'s tile under `map`: a read of the tile another block writes
    /// is a race, so the store map must be the same (CT2012, judged at the end of the run).
    pub fn record_load_map(&mut self, root: usize, map: crate::stores::StoreMap, at: Span) {
        if !self
            .load_maps
            .iter()
            .any(|(r, m, _)| *r == root && *m == map)
        {
            self.load_maps.push((root, map, at));
        }
    }

    /// Record the range of a loop variable; a changed range invalidates memoized bounds.
    pub fn set_loop_range(&mut self, id: u32, range: (Poly, Poly)) {
        if self.ranges.loops.get(&id) != Some(&range) {
            if self.ranges.loops.contains_key(&id) {
                self.bounds_cache.clear();
            }
            self.ranges.loops.insert(id, range);
        }
    }

    /// `0 <= idx < count` on the ladder, memoized.
    pub fn decide_index(&mut self, idx: &Poly, count: &Poly) -> Rung {
        let key = (idx.clone(), count.clone());
        if let Some(r) = self.bounds_cache.get(&key) {
            return r.clone();
        }
        let r = self.ranges.decide_index(idx, count);
        self.bounds_cache.insert(key, r.clone());
        r
    }

    /// `prover::prove_store_map`, memoized.
    pub fn prove_store_map(
        &mut self,
        comps: &[Poly],
        tiles: &[Poly],
    ) -> crate::prover::StoreMapProof {
        let key = (comps.to_vec(), tiles.to_vec());
        if let Some(p) = self.store_proofs.get(&key) {
            return p.clone();
        }
        let p = crate::prover::prove_store_map(comps, tiles, &self.ranges, self.grid_rank);
        self.store_proofs.insert(key, p.clone());
        p
    }

    /// One id per inlined instance of node `nid` (and `part`, for several atoms of one
    /// node): the same node reached through two call sites is two instances.
    pub fn instance(&mut self, nid: u32, part: u32) -> u32 {
        let key = (self.call_path.clone(), nid, part);
        let next = self.instances.len() as u32;
        *self.instances.entry(key).or_insert(next)
    }

    /// The loop atom of component `k` of the index minted for root `r` by loop instance
    /// `lp` (ids past the loop variables', so the two never meet).
    pub fn minted_atom(&mut self, lp: u32, k: u32, r: usize) -> u32 {
        let id = self.instance(lp, 1 + k) | 0x8000_0000;
        self.minted.insert(id, (lp, k, r));
        id
    }

    /// The root whose minted index `comps` is, component by component, in one loop.
    pub fn minted_index(&self, comps: &[Poly]) -> Option<usize> {
        let mut found: Option<(u32, usize)> = None;
        for (k, p) in comps.iter().enumerate() {
            let Some(Atom::Loop(id)) = p.as_atom() else {
                return None;
            };
            let (lp, kk, r) = *self.minted.get(id)?;
            if kk as usize != k || found.is_some_and(|f| f != (lp, r)) {
                return None;
            }
            found = Some((lp, r));
        }
        let (_, r) = found?;
        let rank = self.roots.get(r).map_or(0, |x| x.tile.len());
        (comps.len() == rank).then_some(r)
    }

    /// The width of the device integer `p` is computed in (0: folded at compile time).
    pub fn width_of(&self, p: &Poly) -> u8 {
        crate::width::width(p, &|n| self.ranges.scalar_bits.get(n).copied())
    }

    /// The result `p` of a device operation of `bits` bits: itself if it provably fits for
    /// every launch, else an opaque value that remembers it (`width.rs`).
    pub fn wrap(&mut self, p: Poly, bits: u8) -> Poly {
        if bits == 0 || self.ranges.decide_fits(&p, bits) == Rung::Static {
            return p;
        }
        self.next_opaque += 1;
        self.wraps.insert(self.next_opaque, (p, bits));
        Poly::atom(Atom::Opaque(self.next_opaque))
    }

    /// A value the device holds in a `bits`-bit integer, whatever its polynomial says. A
    /// polynomial with no device atom reads as a compile-time value (width 0), which the
    /// lowering folds exactly; but `b - b`, `b * 0`, a block id past the grid's rank or an
    /// `if`'s result are device integers that wrap: `(y + 2**30 + 2**30) // 2**30` of
    /// `y = b - b` is -2 on the device, not 2. Such a value becomes a device result that
    /// remembers its polynomial (`wraps`), so the width model sees a device value and an
    /// index still gets the exact number back (`unwrap_index`, `unwrap_fitting`).
    pub fn device_valued(&mut self, p: Poly, bits: u8) -> Poly {
        if bits == 0 || self.width_of(&p) > 0 {
            return p;
        }
        self.next_opaque += 1;
        self.wraps
            .insert(self.next_opaque, (p, bits.max(crate::width::INDEX_BITS)));
        Poly::atom(Atom::Opaque(self.next_opaque))
    }

    /// `device_valued` for every integer of `v` (a tuple's items too).
    pub fn device_val(&mut self, v: Val, bits: u8) -> Val {
        match v {
            Val::Int(p) => Val::Int(self.device_valued(p, bits)),
            Val::Tuple(vs) => {
                Val::Tuple(vs.into_iter().map(|x| self.device_val(x, bits)).collect())
            }
            other => other,
        }
    }

    /// An index component as the device computes it: the remembered device results in
    /// `p` put back where they provably fit (the conditions gathered are the rung), the
    /// others left opaque. Results that reach the index through `+ - *` alone need no
    /// condition (`unwrap_ring`): every use of an index proves it in bounds (below a tile
    /// count, so within 32 bits) or asserts it, and the device's index agrees with the
    /// exact one modulo 2^32; results under `//`, `%`, `min`, `max` must fit.
    pub fn unwrap_index(&mut self, p: &Poly) -> (Poly, Rung) {
        let p = self.unwrap_ring(p);
        self.unwrap_fitting(&p)
    }

    /// `p` with the remembered device results put back only where each provably fits its
    /// type (the conditions gathered are the rung), the others left opaque: the value the
    /// device computes, with no congruence shortcut (for a loop bound, which is not an
    /// index taken modulo 2^32).
    pub fn unwrap_fitting(&mut self, p: &Poly) -> (Poly, Rung) {
        let mut ranges = self.ranges.clone();
        let mut memo: HashMap<u32, Option<(Poly, Rung)>> = HashMap::new();
        let p = p.clone();
        let rung = self.resolve_wraps(&p, &mut ranges, &mut memo, 0);
        let out = crate::width::substitute_deep(&p, &|a| match a {
            Atom::Opaque(id) => memo
                .get(id)
                .and_then(|m| m.as_ref().map(|(q, _)| q.clone())),
            _ => None,
        });
        (out, rung)
    }

    /// `p` with every remembered result that reaches the top through `+`, `-` and `*`
    /// alone put back, however it wrapped. Two's-complement `+ - *` agree with the exact
    /// ones modulo 2^bits, and the index is taken modulo 2^32 (an `i64` index is
    /// truncated): where the exact index is then proved in `[0, count)`, within 32 bits,
    /// the device's index is that same number. Results under `//`, `%`, `min`, `max` are
    /// not congruent and stay for `resolve_wraps`; so do results narrower than 32 bits.
    pub fn unwrap_ring(&self, p: &Poly) -> Poly {
        let mut cur = p.clone();
        for _ in 0..32 {
            let mut top: Vec<u32> = Vec::new();
            for m in cur.terms.keys() {
                for a in m {
                    if let Atom::Opaque(id) = a {
                        let wide = self.wraps.get(id).is_some_and(|(_, b)| *b >= 32);
                        if wide && !top.contains(id) {
                            top.push(*id);
                        }
                    }
                }
            }
            if top.is_empty() || !cur.size_at_most(256) {
                break;
            }
            for id in top {
                let q = self.wraps[&id].0.clone();
                cur = cur.substitute(&Atom::Opaque(id), &q);
            }
        }
        cur
    }

    /// Does `p` hold a device result that may have wrapped?
    pub fn has_wraps(&self, p: &Poly) -> bool {
        p.any_atom(&|a| matches!(a, Atom::Opaque(id) if self.wraps.contains_key(id)))
    }

    /// `p` with every remembered device result replaced by its exact value, whether it
    /// fits or not (for counterexamples on small launches only).
    pub fn unwrap_all(&self, p: &Poly) -> Poly {
        let mut cur = p.clone();
        for _ in 0..32 {
            if !self.has_wraps(&cur) {
                break;
            }
            let next = crate::width::substitute_deep(&cur, &|a| match a {
                Atom::Opaque(id) => self.wraps.get(id).map(|(q, _)| q.clone()),
                _ => None,
            });
            if !next.size_at_most(MAX_TERM_ATOMS) {
                break; // too large to evaluate quickly: left with device results in it
            }
            cur = next;
        }
        cur
    }

    /// Decide, innermost first, whether each remembered result in `p` fits its type: with
    /// its operands' results bounded by their types (`ranges.bounded`) once they are known
    /// to fit. Returns the conditions gathered; `memo` holds each result's exact value
    /// (operands put back) where it fits.
    fn resolve_wraps(
        &self,
        p: &Poly,
        ranges: &mut crate::bounds::Ranges,
        memo: &mut HashMap<u32, Option<(Poly, Rung)>>,
        depth: usize,
    ) -> Rung {
        let mut ids: Vec<u32> = Vec::new();
        p.visit_atoms(&mut |a| {
            if let Atom::Opaque(id) = a {
                if self.wraps.contains_key(id) && !ids.contains(id) {
                    ids.push(*id);
                }
            }
        });
        let mut rung = Rung::Static;
        for id in ids {
            if !memo.contains_key(&id) && depth <= 32 {
                let (q, bits) = self.wraps[&id].clone();
                let inner = self.resolve_wraps(&q, ranges, memo, depth + 1);
                let exact = crate::width::substitute_deep(&q, &|a| match a {
                    Atom::Opaque(i) => memo.get(i).and_then(|m| m.as_ref().map(|(x, _)| x.clone())),
                    _ => None,
                });
                // An exact value past the cap stays unknown (`i = i // 2 + i // 3 + i`
                // triples it at each line: every proof over it took exponential time).
                if !exact.size_at_most(MAX_TERM_ATOMS) {
                    memo.insert(id, None);
                    continue;
                }
                // With its operands as bounded values, or as their exact polynomials (both
                // hold under the operands' conditions).
                let (fits, assumed) = match ranges.fits_assuming(&q, bits) {
                    f @ (Rung::Static | Rung::Launch(_), _) => f,
                    _ => ranges.fits_assuming(&exact, bits),
                };
                let resolved = match fits {
                    f @ (Rung::Static | Rung::Launch(_)) => {
                        // Later results may rely on what this one's condition assumed.
                        ranges.positive.extend(assumed);
                        let (lo, hi) = crate::width::signed_range(bits);
                        let (a, b) = crate::width::interval(&q, ranges).unwrap_or((lo, hi));
                        ranges.bounded.insert(id, (a.max(lo), b.min(hi)));
                        ranges.exact.insert(id, exact.clone());
                        Some((exact, crate::bounds::worse(inner, f)))
                    }
                    _ => None,
                };
                memo.insert(id, resolved);
            }
            if let Some(Some((_, r))) = memo.get(&id) {
                rung = crate::bounds::worse(rung, r.clone());
            }
        }
        rung
    }

    /// An access of root `r`'s own tile.
    pub fn own_use(&mut self, r: usize, at: Span, op: &'static str) {
        self.own_uses.push((r, at, op));
    }

    /// The id of a variable name (one table for every frame; states are per frame).
    pub fn var(&mut self, name: &str) -> u32 {
        if let Some(id) = self.var_ids.get(name) {
            return *id;
        }
        let id = self.var_names.len() as u32;
        self.var_ids.insert(name.to_string(), id);
        self.var_names.push(Rc::from(name));
        id
    }

    /// The id of a variable already seen.
    pub fn var_id(&self, name: &str) -> Option<u32> {
        self.var_ids.get(name).copied()
    }

    pub fn bind_var(&mut self, st: &mut State, name: &str, v: Val) {
        let id = self.var(name);
        let n = self.var_names[id as usize].clone();
        st.bind(id, &n, v);
    }

    // ---- reporting -------------------------------------------------------------------

    pub fn report(&mut self, mut d: Diagnostic) {
        if !self.diag_keys.insert((d.code.clone(), d.primary.span)) {
            return;
        }
        // Inside an inlined device function: point at the outermost call too.
        if let Some(site) = self.frames.get(1).and_then(|f| f.call_site) {
            let callee = self
                .frames
                .get(1)
                .map(|f| f.func.name.clone())
                .unwrap_or_default();
            d.secondary
                .push(Label::new(site, format!("in this call to `{callee}`")));
        }
        self.diags.push(d);
    }

    /// Record an obligation of the DSL call being handled (`op_node` in this inlined
    /// instance). A node visited more than once (loop passes) must hold on every visit:
    /// the worst outcome wins. A device check under `deny_in_kernel_checks` is CT2008.
    pub fn oblige(
        &mut self,
        kind: &str,
        description: String,
        rung: Rung,
        device_pred: String,
        span: Span,
    ) {
        let discharge = match rung {
            Rung::Static => Discharge::Static,
            Rung::Launch(p) => Discharge::Launch(p),
            Rung::Device if self.deny => {
                self.report(errors::denied_device_check(
                    &description,
                    span,
                    &device_pred,
                ));
                Discharge::Failed
            }
            Rung::Device => Discharge::Device { text: device_pred },
            Rung::Refuted => Discharge::Failed,
        };
        let node = NodeRef {
            path: self.call_path.clone(),
            nid: self.op_node,
        };
        let key = (kind.to_string(), node.clone(), description.clone());
        match self.obl_keys.get(&key) {
            Some(&i) => {
                let old = std::mem::replace(&mut self.obligations[i].discharge, Discharge::Static);
                self.obligations[i].discharge = old.worst(discharge);
            }
            None => {
                self.obl_keys.insert(key, self.obligations.len());
                self.obligations.push(Obligation {
                    kind: kind.to_string(),
                    description,
                    node,
                    span,
                    discharge,
                });
            }
        }
    }
}
