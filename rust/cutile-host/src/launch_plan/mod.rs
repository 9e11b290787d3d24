//! A kernel's launch plan, prepared once from its parameters and its checked facts, and
//! the per-launch work that needs no Python: argument matching, `Const` inference,
//! specialization facts and the compiled-kernel key, the grid (host rule 6, `grid.rs`), the
//! launch predicates (`predicates.rs`), the moves (rule 3) and ledger ranges (rule 4) of the
//! arguments, and parameter packing (`pack.rs`).
//!
//! The plan decides nothing about the kernel itself: which outputs are persistent and which
//! predicates guard a launch come from `cutile_facts::KernelFacts`, the checker's record.
//! A check answers "fast path", [`Refusal::Slow`] (the Python binder normalizes the
//! arguments, or raises the argument error, and calls again) or [`Refusal::Refused`] (the
//! launch is forbidden: the error to raise).

mod bind;
mod desc;
mod device;
mod grid;
mod memo;
mod pack;
mod predicates;

pub use bind::{ArgRef, Describe, Placed, Which};
pub use desc::*;
pub use device::mixed_devices;
pub use grid::MAX_GRID;
pub use memo::LaunchMemo;
pub use pack::*;
pub use predicates::{Atom, PredicateCache, PredicatePlan, WordHasher, WordMap};

use crate::ledger::Access;
use crate::HostError;
use cutile_facts::{KernelFacts, OutputKind};

/// One argument of a call.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    Handle(&'a TensorDesc),
    Int(i64),
    Float(f64),
    Bool(bool),
    /// Anything else (a numpy scalar, a big int, a string...): the Python binder decides.
    Other,
}

/// A `Const` or scalar value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Value {
    pub(crate) fn key_word(self) -> u64 {
        match self {
            Value::Int(v) => v as u64,
            Value::Float(f) => f.to_bits(),
            Value::Bool(b) => u64::from(b),
        }
    }

    /// Python's `int(v)` where it is exact and fits (`None`: let Python decide).
    pub(crate) fn as_atom(self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(v),
            Value::Bool(b) => Some(i64::from(b)),
            Value::Float(f) if f.is_finite() && f.abs() < 9.2e18 => Some(f.trunc() as i64),
            Value::Float(_) => None,
        }
    }
}

/// Not handled here: the Python binder produces the error or normalizes the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slow(pub &'static str);

/// Why a call was not launched on the fast path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The Python binder normalizes the arguments (or raises the argument error) and calls
    /// again.
    Slow(&'static str),
    /// The kernel's facts forbid this launch: raise this error.
    Refused(HostError),
}

impl Refusal {
    /// A refusal about parameter `name`'s argument names it ([`crate::About::tensor`]).
    pub fn about_param(self, name: &str) -> Refusal {
        match self {
            Refusal::Refused(e) => Refusal::Refused(e.with_tensor(name)),
            slow => slow,
        }
    }
}

impl From<Slow> for Refusal {
    fn from(s: Slow) -> Refusal {
        Refusal::Slow(s.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// `Mut[Tensor]`: takes a partition.
    Partition,
    /// A shared input tensor.
    Tensor,
    /// `Atomic[Tensor]`: takes a tensor that every block updates atomically; held
    /// exclusively, like an output, but not partitioned and no part of the grid.
    Atomic,
    /// A scalar of the parameter's dtype.
    Scalar,
    /// `Ptr[T]` (unsafe entries): takes a tensor and passes its device address. Held
    /// exclusively, like an output (the kernel may write through the pointer); no part of
    /// the grid, the specialization or the compiled kernel's key.
    Ptr,
    /// Anything the launcher does not know.
    Unsupported,
}

impl ParamKind {
    /// Does the launch hold the argument exclusively (written while the kernel runs)?
    pub fn exclusive(self) -> bool {
        matches!(
            self,
            ParamKind::Partition | ParamKind::Atomic | ParamKind::Ptr
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dim {
    /// `-1`: any extent.
    Any,
    Fixed(i64),
    /// A `Const` parameter (index into [`LaunchPlan::consts`]).
    Const(usize),
    /// A name that is no `Const` parameter.
    Unknown,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ParamPlan {
    pub name: String,
    pub kind: ParamKind,
    pub dtype: Option<u8>,
    pub dims: Vec<Dim>,
    /// The facts say the launch is persistent over this output (`iter_indices()`).
    pub persistent: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstType {
    Int,
    Float,
    Bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConstPlan {
    pub name: String,
    pub ty: ConstType,
    /// Named in some parameter's shape (then it must be >= 1).
    pub in_shape: bool,
}

/// A declared dimension as the kernel's parameter list gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DimSpec {
    Int(i64),
    Name(String),
}

/// A non-`Const` parameter as the kernel AST gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSpec {
    pub name: String,
    /// `"mut_tensor"`, `"tensor"`, `"scalar"`, `"ptr"`, ...
    pub kind: String,
    pub dtype: Option<String>,
    pub dims: Vec<DimSpec>,
}

/// Everything a launch needs to know about a kernel, prepared once.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchPlan {
    pub params: Vec<ParamPlan>,
    /// Sorted by name (the order of `Specialization.consts`).
    pub consts: Vec<ConstPlan>,
    pub predicates: Vec<PredicatePlan>,
    /// Blocks of a persistent launch with no `num_blocks` (one per multiprocessor).
    pub sm_count: u64,
}

/// The outcome of matching one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    /// One per [`LaunchPlan::consts`].
    pub consts: Vec<Value>,
    /// The normalized value of each scalar parameter (`None` for tensors).
    pub scalars: Vec<Option<Value>>,
    pub index_bits: u32,
    /// Identifies the compiled kernel: index type, `Const` values, tensor facts.
    pub key: Vec<u64>,
}

impl LaunchPlan {
    /// The plan of a kernel with these non-`Const` parameters and `consts` (`(name,
    /// type)`), launched as its checked `facts` say. `Err`: the facts name something the
    /// parameters do not have (the checker and the launcher disagree; never launch).
    pub fn new(
        params: &[ParamSpec],
        consts: &[(String, ConstType)],
        facts: &KernelFacts,
        sm_count: u64,
    ) -> Result<LaunchPlan, String> {
        let mut cs: Vec<ConstPlan> = consts
            .iter()
            .map(|(name, ty)| ConstPlan {
                name: name.clone(),
                ty: *ty,
                in_shape: params
                    .iter()
                    .any(|p| p.dims.iter().any(|d| *d == DimSpec::Name(name.clone()))),
            })
            .collect();
        cs.sort_by(|a, b| a.name.cmp(&b.name));
        for o in &facts.outputs {
            if !params
                .iter()
                .any(|p| p.name == o.param && p.kind == "mut_tensor")
            {
                return Err(format!(
                    "the facts name output `{}`, which is no `Mut` parameter",
                    o.param
                ));
            }
        }
        let persistent = |name: &str| {
            facts
                .outputs
                .iter()
                .any(|o| o.param == name && o.kind == OutputKind::Persistent)
        };
        let ps: Vec<ParamPlan> = params
            .iter()
            .map(|p| ParamPlan {
                name: p.name.clone(),
                kind: match p.kind.as_str() {
                    "mut_tensor" => ParamKind::Partition,
                    "tensor" => ParamKind::Tensor,
                    "atomic_tensor" => ParamKind::Atomic,
                    "scalar" => ParamKind::Scalar,
                    "ptr" => ParamKind::Ptr,
                    _ => ParamKind::Unsupported,
                },
                dtype: p.dtype.as_deref().and_then(dtype_code),
                dims: p
                    .dims
                    .iter()
                    .map(|d| match d {
                        DimSpec::Int(-1) => Dim::Any,
                        DimSpec::Int(n) => Dim::Fixed(*n),
                        DimSpec::Name(n) => cs
                            .iter()
                            .position(|c| &c.name == n)
                            .map_or(Dim::Unknown, Dim::Const),
                    })
                    .collect(),
                persistent: persistent(&p.name),
            })
            .collect();
        let predicates = predicates::plans(facts, &ps, &cs)?;
        Ok(LaunchPlan {
            params: ps,
            consts: cs,
            predicates,
            sm_count,
        })
    }

    /// Index of a `Const` parameter by name.
    pub fn const_index(&self, name: &str) -> Option<usize> {
        self.consts.iter().position(|c| c.name == name)
    }

    /// `(handle, mutable)` for `HostRegistry::move_in_launch`, in parameter order, into
    /// `out` (which must have room for one per parameter); returns how many.
    pub fn moves_into(&self, args: &[Arg<'_>], out: &mut [(crate::HandleAt, bool)]) -> usize {
        let mut n = 0;
        for (p, a) in self.params.iter().zip(args) {
            if let Arg::Handle(d) = a {
                let at = crate::HandleAt {
                    id: d.handle,
                    slot: d.slot,
                };
                out[n] = (at, p.kind.exclusive());
                n += 1;
            }
        }
        n
    }

    /// `(handle, mutable)` for `HostRegistry::move_in`, in parameter order.
    pub fn moves(&self, args: &[Arg<'_>]) -> Vec<(u64, bool)> {
        self.params
            .iter()
            .zip(args)
            .filter_map(|(p, a)| match a {
                Arg::Handle(d) => Some((d.handle, p.kind.exclusive())),
                _ => None,
            })
            .collect()
    }

    /// [`LaunchPlan::accesses`] into `out` (room for one per parameter); returns how many.
    pub fn accesses_into(&self, args: &[Arg<'_>], out: &mut [Access]) -> usize {
        let mut n = 0;
        for (p, a) in self.params.iter().zip(args) {
            if let Arg::Handle(d) = a {
                out[n] = Access {
                    storage: d.storage,
                    lo: d.span.0,
                    hi: d.span.1,
                    exclusive: p.kind.exclusive(),
                };
                n += 1;
            }
        }
        n
    }

    /// The byte ranges the launch reads (shared) and writes (exclusive), for the ledger.
    pub fn accesses(&self, args: &[Arg<'_>]) -> Vec<Access> {
        self.params
            .iter()
            .zip(args)
            .filter_map(|(p, a)| match a {
                Arg::Handle(d) => Some(Access {
                    storage: d.storage,
                    lo: d.span.0,
                    hi: d.span.1,
                    exclusive: p.kind.exclusive(),
                }),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
