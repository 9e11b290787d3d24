//! The checker's launch predicates, evaluated before every launch, fail closed.
//!
//! Each predicate comes from the kernel's facts (`cutile_facts::KernelFacts`) as a typed
//! tree; its atoms are resolved once, here, to where a launch finds their values (a grid
//! axis, an argument's extent or tile count, a `Const`, a scalar). A predicate that is
//! false, or undecidable (a division by zero, an overflow, an atom with no value), refuses
//! the launch. Value tuples for which a predicate held are remembered, so a repeated launch
//! pays one hash lookup per predicate.

use super::{Arg, Bound, ConstPlan, LaunchPlan, ParamKind, ParamPlan, Refusal};
use crate::HostError;
use cutile_facts::{Atom as FactAtom, KernelFacts, Pred};
use std::collections::{HashMap, HashSet};

/// Where a predicate atom's value comes from at a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Atom {
    Grid(usize),
    Dim(usize, usize),
    Tiles(usize, usize),
    /// A scalar argument, by parameter index.
    Param(usize),
    Const(usize),
}

/// One launch predicate, its atoms resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct PredicatePlan {
    pub pred: Pred,
    /// The atoms of `pred` (each once) and where their values come from.
    pub atoms: Vec<(FactAtom, Atom)>,
    /// What it protects, for the error: the obligation's description and source line.
    pub what: String,
}

/// Resolve a fact atom against the kernel's parameters; `Err` names an atom the checker
/// and the launcher disagree about (the launcher is then not built: fail closed).
fn resolve(a: &FactAtom, params: &[ParamPlan], consts: &[ConstPlan]) -> Result<Atom, String> {
    let param = |n: &str, ok: &dyn Fn(ParamKind) -> bool| {
        params
            .iter()
            .position(|p| p.name == n && ok(p.kind))
            .ok_or_else(|| format!("launch predicate atom `{a}` names no such parameter"))
    };
    Ok(match a {
        FactAtom::Grid(k) if *k < 3 => Atom::Grid(usize::from(*k)),
        FactAtom::Grid(k) => return Err(format!("grid axis {k} in a launch predicate")),
        FactAtom::Dim { param: p, axis } => Atom::Dim(
            param(p, &|k| {
                matches!(
                    k,
                    ParamKind::Tensor | ParamKind::Partition | ParamKind::Atomic
                )
            })?,
            usize::from(*axis),
        ),
        FactAtom::Tiles { param: p, axis } => Atom::Tiles(
            param(p, &|k| k == ParamKind::Partition)?,
            usize::from(*axis),
        ),
        FactAtom::Scalar(n) => Atom::Param(param(n, &|k| k == ParamKind::Scalar)?),
        FactAtom::Const(n) => Atom::Const(
            consts
                .iter()
                .position(|c| &c.name == n)
                .ok_or_else(|| format!("launch predicate atom `{a}` is no Const parameter"))?,
        ),
    })
}

/// The launch predicates of `facts`, resolved; identical predicates (a device function
/// inlined at several call sites) are kept once.
pub fn plans(
    facts: &KernelFacts,
    params: &[ParamPlan],
    consts: &[ConstPlan],
) -> Result<Vec<PredicatePlan>, String> {
    let mut out: Vec<PredicatePlan> = Vec::new();
    for (o, p) in facts.launch_predicates() {
        if out.iter().any(|q| q.pred.clauses == p.clauses) {
            continue;
        }
        let atoms = p
            .atoms()
            .into_iter()
            .map(|a| Ok((a.clone(), resolve(a, params, consts)?)))
            .collect::<Result<Vec<_>, String>>()?;
        out.push(PredicatePlan {
            pred: p.clone(),
            atoms,
            what: format!("{} (line {})", o.description, o.span.line),
        });
    }
    Ok(out)
}

impl LaunchPlan {
    /// The values of a predicate's atoms at this launch (`Slow` where an argument has no
    /// fast value: the Python binder normalizes it).
    pub fn atom_values(
        &self,
        pred: &PredicatePlan,
        args: &[Arg<'_>],
        bound: &Bound,
        grid: [u64; 3],
        out: &mut Vec<i64>,
    ) -> Result<(), Refusal> {
        let fail = Refusal::Slow("predicate atom");
        out.clear();
        for (_, atom) in &pred.atoms {
            let handle = |i: usize| match args.get(i) {
                Some(Arg::Handle(d)) => Ok(*d),
                _ => Err(fail.clone()),
            };
            let v = match *atom {
                Atom::Grid(k) => {
                    i64::try_from(*grid.get(k).ok_or(fail.clone())?).map_err(|_| fail.clone())?
                }
                Atom::Dim(i, k) => *handle(i)?.view.shape.get(k).ok_or(fail.clone())?,
                Atom::Tiles(i, k) => {
                    let d = handle(i)?;
                    let t = *d
                        .view
                        .tile
                        .as_ref()
                        .ok_or(fail.clone())?
                        .get(k)
                        .ok_or(fail.clone())?;
                    let n = *d.view.shape.get(k).ok_or(fail.clone())?;
                    (n as u64).div_ceil(t.max(1) as u64) as i64
                }
                Atom::Param(i) => bound
                    .scalars
                    .get(i)
                    .copied()
                    .flatten()
                    .and_then(|v| v.as_atom())
                    .ok_or(fail.clone())?,
                Atom::Const(c) => bound.consts[c].as_atom().ok_or(fail.clone())?,
            };
            out.push(v);
        }
        Ok(())
    }

    /// Every launch predicate, fail closed: a false or undecidable one refuses the launch
    /// with CT6200 / CT6201. Value tuples that held are cached.
    pub fn check_predicates(
        &self,
        kernel: &str,
        args: &[Arg<'_>],
        bound: &Bound,
        grid: [u64; 3],
        cache: &mut PredicateCache,
    ) -> Result<(), Refusal> {
        let mut vals = std::mem::take(&mut cache.scratch);
        let r = self.check_with(kernel, args, bound, grid, cache, &mut vals);
        cache.scratch = vals;
        r
    }

    fn check_with(
        &self,
        kernel: &str,
        args: &[Arg<'_>],
        bound: &Bound,
        grid: [u64; 3],
        cache: &mut PredicateCache,
        vals: &mut Vec<i64>,
    ) -> Result<(), Refusal> {
        for (n, plan) in self.predicates.iter().enumerate() {
            self.atom_values(plan, args, bound, grid, vals)?;
            if cache.holds(n, vals) {
                continue;
            }
            let value_of = |a: &FactAtom| {
                plan.atoms
                    .iter()
                    .position(|(x, _)| x == a)
                    .and_then(|i| vals.get(i))
                    .map(|v| i128::from(*v))
            };
            match plan.pred.eval(&value_of) {
                Ok(true) => cache.insert(n, vals),
                outcome => {
                    let shown = plan
                        .atoms
                        .iter()
                        .zip(vals.iter())
                        .map(|((a, _), v)| format!("{a} = {v}"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let (code, why) = match outcome {
                        Err(e) => ("CT6201", format!(" cannot be decided ({e})")),
                        _ => ("CT6200", " failed".to_string()),
                    };
                    return Err(Refusal::Refused(HostError::launch(
                        code,
                        format!(
                            "`{kernel}`: launch check `{}`{why} with {shown}: {}",
                            plan.pred.text, plan.what
                        ),
                        Some(
                            "the arguments' shapes do not fit the kernel's index arithmetic; \
                             `kernel.check_report()` lists every check"
                                .into(),
                        ),
                    )));
                }
            }
        }
        Ok(())
    }
}

/// FxHash-style hasher for short integer keys (kernel keys, predicate values).
#[derive(Default, Clone, Copy)]
pub struct WordHasher(u64);

impl std::hash::Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // integer slices arrive here as their bytes: take them a word at a time
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_ne_bytes(w));
        }
        for b in chunks.remainder() {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A hash map keyed by short integer slices.
pub type WordMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<WordHasher>>;
type WordSet<K> = HashSet<K, std::hash::BuildHasherDefault<WordHasher>>;

/// Value tuples for which each predicate held (bounded: a set is emptied past a limit).
#[derive(Debug, Default)]
pub struct PredicateCache {
    passed: Vec<WordSet<Box<[i64]>>>,
    /// Reused for each launch's atom values.
    scratch: Vec<i64>,
}

impl PredicateCache {
    pub const LIMIT: usize = 4096;

    pub fn holds(&self, n: usize, vals: &[i64]) -> bool {
        self.passed.get(n).is_some_and(|s| s.contains(vals))
    }

    pub fn insert(&mut self, n: usize, vals: &[i64]) {
        if self.passed.len() <= n {
            self.passed.resize_with(n + 1, WordSet::default);
        }
        let set = &mut self.passed[n];
        if set.len() >= Self::LIMIT {
            set.clear();
        }
        set.insert(vals.into());
    }
}

// -- parameter packing -----------------------------------------------------------------------
