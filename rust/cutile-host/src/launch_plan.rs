//! A kernel's launch plan, prepared once from its parameters, and the per-launch work that
//! needs no Python: argument matching, `Const` inference, specialization facts and the
//! compiled-kernel key, the grid (host rule 6), launch predicates (fail closed, with a
//! cache of value tuples that held), the moves (rule 3) and ledger ranges (rule 4) of the
//! arguments, and parameter packing.
//!
//! Every check answers "fast path" or [`Slow`]. `Slow` is not an error: the caller falls
//! back to the Python binder, which either produces the exact error (code, message, hint)
//! or normalizes the arguments and calls again. Nothing here formats a user-facing error,
//! so the messages live in one place.

use crate::ledger::Access;
use std::collections::{HashMap, HashSet};

/// The largest value of a signed 32-bit index (the i32 index type's limit).
pub const INT32_LIMIT: i128 = (1 << 31) - 1;

/// Divisibility facts are capped at this power of two (as `lowering.signature.MAX_DIV`).
pub const MAX_DIV: i64 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElemClass {
    Bool,
    Int,
    Float,
}

/// An element type, as `cutile.dtypes` defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DType {
    pub name: &'static str,
    pub bits: u32,
    pub class: ElemClass,
}

/// Every element type; a dtype's code is its index here.
pub const DTYPES: [DType; 10] = [
    DType {
        name: "i1",
        bits: 1,
        class: ElemClass::Bool,
    },
    DType {
        name: "i8",
        bits: 8,
        class: ElemClass::Int,
    },
    DType {
        name: "i16",
        bits: 16,
        class: ElemClass::Int,
    },
    DType {
        name: "i32",
        bits: 32,
        class: ElemClass::Int,
    },
    DType {
        name: "i64",
        bits: 64,
        class: ElemClass::Int,
    },
    DType {
        name: "f16",
        bits: 16,
        class: ElemClass::Float,
    },
    DType {
        name: "bf16",
        bits: 16,
        class: ElemClass::Float,
    },
    DType {
        name: "f32",
        bits: 32,
        class: ElemClass::Float,
    },
    DType {
        name: "f64",
        bits: 64,
        class: ElemClass::Float,
    },
    DType {
        name: "tf32",
        bits: 32,
        class: ElemClass::Float,
    },
];

/// The code of a canonical dtype name (`"f32"`), or `None`.
pub fn dtype_code(name: &str) -> Option<u8> {
    DTYPES.iter().position(|d| d.name == name).map(|i| i as u8)
}

/// Largest power of two <= [`MAX_DIV`] dividing `n` (0 counts as divisible by the cap).
pub fn pow2_divisor(n: i64) -> u8 {
    if n == 0 {
        return MAX_DIV as u8;
    }
    let mut d: i64 = 1;
    while d < MAX_DIV && n % (d * 2) == 0 {
        d *= 2;
    }
    d as u8
}

/// What a compiled kernel assumes about one tensor argument (`TensorFacts`, less the
/// dtype and rank, which the parameter fixes).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Facts {
    pub align16: bool,
    pub last_stride_one: bool,
    pub shape_div: Vec<u8>,
    pub stride_div: Vec<u8>,
}

/// A tensor or partition handle as its Python object describes it, given once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    pub storage: u64,
    pub handle: u64,
    /// Address of element `[0, ..., 0]` (device pointer on the GPU).
    pub address: u64,
    /// Byte offset of element `[0, ..., 0]` in the storage.
    pub offset: i64,
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
    pub dtype: String,
    pub itemsize: u64,
    /// `Some` for a partition.
    pub tile: Option<Vec<i64>>,
    pub num_blocks: Option<u64>,
}

/// A [`View`] and what every launch reads from it, computed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorDesc {
    pub view: View,
    /// Code of the dtype (`None`: a name no kernel parameter can have).
    pub dtype: Option<u8>,
    /// Bytes `[lo, hi)` touched, relative to the storage (the ledger's range).
    pub span: (u64, u64),
    pub facts: Facts,
    /// Needs 64-bit indices (an extent or a dimension past `i32`).
    pub wide: bool,
}

impl TensorDesc {
    pub fn new(view: View) -> Result<TensorDesc, String> {
        let rank = view.shape.len();
        if view.strides.len() != rank {
            return Err(format!(
                "shape has {rank} axes but strides {}",
                view.strides.len()
            ));
        }
        if let Some(t) = &view.tile {
            if t.len() != rank {
                return Err(format!("tile shape has {} axes, tensor {rank}", t.len()));
            }
        }
        if view.shape.iter().any(|d| *d < 0) {
            return Err("negative extent".into());
        }
        let item = i128::from(view.itemsize);
        let off = i128::from(view.offset);
        let pairs = view.strides.iter().zip(&view.shape);
        let (lo, hi) = if view.shape.contains(&0) {
            (off, off)
        } else {
            let (mut neg, mut pos) = (0i128, 0i128);
            for (s, d) in pairs.clone() {
                let x = i128::from(*s) * i128::from(d - 1);
                neg += x.min(0);
                pos += x.max(0);
            }
            (off + neg * item, off + (pos + 1) * item)
        };
        let span = match (u64::try_from(lo), u64::try_from(hi)) {
            (Ok(a), Ok(b)) => (a, b),
            _ => return Err(format!("view spans bytes {lo}..{hi}")),
        };
        let extent: i128 = pairs
            .map(|(s, d)| i128::from(*s).abs() * i128::from((d - 1).max(0)))
            .sum();
        let wide = extent > INT32_LIMIT || view.shape.iter().any(|d| i128::from(*d) > INT32_LIMIT);
        let facts = Facts {
            align16: view.address.is_multiple_of(16),
            last_stride_one: rank > 0 && (view.strides[rank - 1] == 1 || view.shape[rank - 1] == 1),
            shape_div: view.shape.iter().map(|d| pow2_divisor(*d)).collect(),
            stride_div: view.strides.iter().map(|s| pow2_divisor(*s)).collect(),
        };
        Ok(TensorDesc {
            dtype: dtype_code(&view.dtype),
            view,
            span,
            facts,
            wide,
        })
    }

    pub fn is_partition(&self) -> bool {
        self.view.tile.is_some()
    }
}

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
    fn key_word(self) -> u64 {
        match self {
            Value::Int(v) => v as u64,
            Value::Float(f) => f.to_bits(),
            Value::Bool(b) => u64::from(b),
        }
    }

    /// Python's `int(v)` where it is exact and fits (`None`: let Python decide).
    fn as_atom(self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(v),
            Value::Bool(b) => Some(i64::from(b)),
            Value::Float(f) if f.is_finite() && f.abs() < 9.2e18 => Some(f.trunc() as i64),
            Value::Float(_) => None,
        }
    }
}

/// Evaluates a predicate with its atoms' values (`cutile_check::predicate::eval`); `Err`
/// means undecidable.
pub type PredicateEval<'a> = dyn Fn(&str, &HashMap<String, i128>) -> Result<bool, String> + 'a;

/// Not handled here: the Python binder produces the error or normalizes the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slow(pub &'static str);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// `Mut[Tensor]`: takes a partition.
    Partition,
    /// A shared input tensor.
    Tensor,
    /// A scalar of the parameter's dtype.
    Scalar,
    /// Pointers and anything the fast path does not launch.
    Unsupported,
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
    /// Walked with `iter_indices()`: a persistent kernel's partition.
    pub mapped: bool,
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

/// Where a predicate atom's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Atom {
    Grid(usize),
    Dim(usize, usize),
    Tiles(usize, usize),
    Param(usize),
    Const(usize),
    /// No value on the fast path (the Python checks report it).
    Unknown,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PredicatePlan {
    pub text: String,
    pub names: Vec<String>,
    pub atoms: Vec<Atom>,
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

fn parse_atom(atom: &str, params: &[ParamPlan], consts: &[ConstPlan]) -> Atom {
    let param = |n: &str| params.iter().position(|p| p.name == n);
    let call = atom
        .strip_suffix(')')
        .and_then(|s| s.split_once('('))
        .filter(|(f, _)| matches!(*f, "grid" | "dim" | "tiles"));
    if let Some((f, inner)) = call {
        let (a, axis) = match inner.split_once(',') {
            Some((a, b)) => (a, Some(b.trim_start())),
            None => (inner, None),
        };
        let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
        let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
        if !word(a) || !axis.is_none_or(digits) {
            return Atom::Unknown;
        }
        let axis = axis.and_then(|s| s.parse::<usize>().ok());
        return match (f, axis) {
            // `kernel.LaunchChecks` reads grid(k) and ignores a second argument
            ("grid", _) => a.parse::<usize>().map_or(Atom::Unknown, Atom::Grid),
            ("dim", Some(k)) => param(a).map_or(Atom::Unknown, |i| Atom::Dim(i, k)),
            ("tiles", Some(k)) => param(a).map_or(Atom::Unknown, |i| Atom::Tiles(i, k)),
            _ => Atom::Unknown,
        };
    }
    if let Some(i) = param(atom) {
        return Atom::Param(i);
    }
    consts
        .iter()
        .position(|c| c.name == atom)
        .map_or(Atom::Unknown, Atom::Const)
}

impl LaunchPlan {
    /// `consts` are `(name, type)`; `predicates` are `(text, atoms)` as
    /// `cutile_check::predicate::atoms` lists them.
    pub fn new(
        params: &[ParamSpec],
        consts: &[(String, ConstType)],
        mapped: &[String],
        predicates: &[(String, Vec<String>)],
        sm_count: u64,
    ) -> LaunchPlan {
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
        let ps: Vec<ParamPlan> = params
            .iter()
            .map(|p| ParamPlan {
                name: p.name.clone(),
                kind: match p.kind.as_str() {
                    "mut_tensor" => ParamKind::Partition,
                    "tensor" => ParamKind::Tensor,
                    "scalar" => ParamKind::Scalar,
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
                mapped: mapped.contains(&p.name),
            })
            .collect();
        let preds = predicates
            .iter()
            .map(|(text, names)| PredicatePlan {
                text: text.clone(),
                names: names.clone(),
                atoms: names.iter().map(|a| parse_atom(a, &ps, &cs)).collect(),
            })
            .collect();
        LaunchPlan {
            params: ps,
            consts: cs,
            predicates: preds,
            sm_count,
        }
    }

    /// Index of a `Const` parameter by name.
    pub fn const_index(&self, name: &str) -> Option<usize> {
        self.consts.iter().position(|c| c.name == name)
    }

    /// Match a call: `args` in parameter order, `given` one slot per `Const` (keywords).
    pub fn bind(&self, args: &[Arg<'_>], given: &[Option<Value>]) -> Result<Bound, Slow> {
        if args.len() != self.params.len() || given.len() != self.consts.len() {
            return Err(Slow("argument count"));
        }
        if given.len() > 64 {
            return Err(Slow("too many Consts"));
        }
        // `consts[c]` is meaningful where bit `c` of `known` is set.
        let mut consts: Vec<Value> = Vec::with_capacity(given.len());
        let mut known = 0u64;
        for (i, (c, g)) in self.consts.iter().zip(given).enumerate() {
            let ok = matches!(
                (c.ty, g),
                (_, None)
                    | (ConstType::Int, Some(Value::Int(_)))
                    | (ConstType::Float, Some(Value::Float(_)))
                    | (ConstType::Bool, Some(Value::Bool(_)))
            );
            if !ok {
                return Err(Slow("const keyword type"));
            }
            consts.push(g.unwrap_or(Value::Int(0)));
            known |= u64::from(g.is_some()) << i;
        }
        let mut scalars = vec![None; args.len()];
        let mut wide = false;
        for (i, (p, a)) in self.params.iter().zip(args).enumerate() {
            match p.kind {
                ParamKind::Partition | ParamKind::Tensor => {
                    let Arg::Handle(d) = a else {
                        return Err(Slow("not a handle"));
                    };
                    let extents = match (p.kind, &d.view.tile) {
                        (ParamKind::Partition, Some(tile)) => tile,
                        (ParamKind::Tensor, None) => &d.view.shape,
                        _ => return Err(Slow("partition or tensor")),
                    };
                    if p.dtype.is_none() || d.dtype != p.dtype || extents.len() != p.dims.len() {
                        return Err(Slow("dtype or rank"));
                    }
                    for (dim, actual) in p.dims.iter().zip(extents) {
                        match *dim {
                            Dim::Any => {}
                            Dim::Fixed(n) if n == *actual => {}
                            Dim::Const(c) if self.consts[c].ty == ConstType::Int => {
                                if known >> c & 1 == 0 {
                                    consts[c] = Value::Int(*actual);
                                    known |= 1 << c;
                                } else if consts[c] != Value::Int(*actual) {
                                    return Err(Slow("const disagrees"));
                                }
                            }
                            _ => return Err(Slow("declared shape")),
                        }
                    }
                    wide |= d.wide;
                }
                ParamKind::Scalar => {
                    let d = p.dtype.map(|c| DTYPES[c as usize]);
                    scalars[i] = Some(match (d.map(|d| d.class), *a) {
                        (Some(ElemClass::Float), Arg::Float(f)) => Value::Float(f),
                        (Some(ElemClass::Float), Arg::Int(v)) => Value::Float(v as f64),
                        (Some(ElemClass::Bool), Arg::Bool(b)) => Value::Bool(b),
                        (Some(ElemClass::Int), Arg::Int(v)) => {
                            let bits = d.map_or(64, |d| d.bits);
                            let half = 1i128 << (bits - 1);
                            if !(-half..half).contains(&i128::from(v)) {
                                return Err(Slow("scalar range"));
                            }
                            Value::Int(v)
                        }
                        _ => return Err(Slow("scalar type")),
                    });
                }
                ParamKind::Unsupported => return Err(Slow("parameter kind")),
            }
        }
        for (i, (c, v)) in self.consts.iter().zip(&consts).enumerate() {
            if known >> i & 1 == 0 {
                return Err(Slow("const missing"));
            }
            if c.in_shape && matches!(v, Value::Int(x) if *x < 1) {
                return Err(Slow("const < 1"));
            }
        }
        let index_bits = if wide { 64 } else { 32 };
        let words: usize = args
            .iter()
            .map(|a| match a {
                Arg::Handle(d) => 1 + d.facts.shape_div.len(),
                _ => 0,
            })
            .sum();
        let mut key = Vec::with_capacity(1 + consts.len() + words);
        key.push(u64::from(index_bits));
        key.extend(consts.iter().map(|v| v.key_word()));
        for a in args {
            if let Arg::Handle(d) = a {
                let f = &d.facts;
                key.push(u64::from(f.align16) | u64::from(f.last_stride_one) << 1);
                key.extend(
                    f.shape_div
                        .iter()
                        .zip(&f.stride_div)
                        .map(|(a, b)| u64::from(*a) | u64::from(*b) << 8),
                );
            }
        }
        Ok(Bound {
            consts,
            scalars,
            index_bits,
            key,
        })
    }

    /// Whether partition parameter `p` is declared with exactly `tile` (a `-1` or a
    /// non-int `Const` never matches, as `validate_launch` finds).
    fn declares(&self, p: &ParamPlan, tile: &[i64], consts: &[Value]) -> bool {
        p.dims.len() == tile.len()
            && p.dims.iter().zip(tile).all(|(d, t)| match *d {
                Dim::Fixed(n) => n == *t,
                Dim::Const(c) => consts[c] == Value::Int(*t),
                Dim::Any | Dim::Unknown => false,
            })
    }

    /// Host rule 6, as `kernel.launch_grid` and `cutile_host::validate_launch` decide it:
    /// the partitions' common tile grid, or `num_blocks` blocks for a persistent kernel.
    pub fn grid(&self, args: &[Arg<'_>], consts: &[Value]) -> Result<[u64; 3], Slow> {
        let fail = Slow("grid");
        let mut regular: Option<[u64; 3]> = None;
        let mut persistent = false;
        let mut asked: Option<u64> = None;
        let mut fewest = u64::MAX;
        for (p, a) in self.params.iter().zip(args) {
            let (ParamKind::Partition, Arg::Handle(d)) = (p.kind, a) else {
                continue;
            };
            let tile = d.view.tile.as_deref().ok_or(fail)?;
            let rank = tile.len();
            if rank == 0 || rank > 3 || d.view.shape.len() != rank || tile.iter().any(|t| *t < 1) {
                return Err(fail);
            }
            if !self.declares(p, tile, consts) {
                return Err(fail);
            }
            let mut g = [1u64; 3];
            for (k, (n, t)) in d.view.shape.iter().zip(tile).enumerate() {
                g[k] = (*n as u64).div_ceil(*t as u64);
            }
            if p.mapped {
                persistent = true;
                if let Some(nb) = d.view.num_blocks {
                    if asked.is_some_and(|a| a != nb) {
                        return Err(fail);
                    }
                    asked = Some(nb);
                }
                let tiles = g.iter().try_fold(1u64, |acc, x| acc.checked_mul(*x));
                fewest = fewest.min(tiles.ok_or(fail)?);
            } else {
                match regular {
                    None => regular = Some(g),
                    Some(r) if r != g => return Err(fail),
                    Some(_) => {}
                }
            }
        }
        if !persistent {
            return regular.ok_or(fail);
        }
        let nb = asked.unwrap_or_else(|| fewest.min(self.sm_count).max(1));
        let grid = [nb, 1, 1];
        match regular {
            Some(r) if r != grid => Err(fail),
            _ => Ok(grid),
        }
    }

    /// The values of a predicate's atoms (`Slow` where one has no fast value).
    pub fn atom_values(
        &self,
        pred: &PredicatePlan,
        args: &[Arg<'_>],
        bound: &Bound,
        grid: [u64; 3],
        out: &mut Vec<i64>,
    ) -> Result<(), Slow> {
        let fail = Slow("predicate atom");
        out.clear();
        for atom in &pred.atoms {
            let handle = |i: usize| match args.get(i) {
                Some(Arg::Handle(d)) => Ok(*d),
                _ => Err(fail),
            };
            let v = match *atom {
                Atom::Grid(k) => i64::try_from(*grid.get(k).ok_or(fail)?).map_err(|_| fail)?,
                Atom::Dim(i, k) => *handle(i)?.view.shape.get(k).ok_or(fail)?,
                Atom::Tiles(i, k) => {
                    let d = handle(i)?;
                    let t = *d.view.tile.as_ref().ok_or(fail)?.get(k).ok_or(fail)?;
                    let n = *d.view.shape.get(k).ok_or(fail)?;
                    (n as u64).div_ceil(t.max(1) as u64) as i64
                }
                Atom::Param(i) => bound
                    .scalars
                    .get(i)
                    .copied()
                    .flatten()
                    .and_then(Value::as_atom)
                    .ok_or(fail)?,
                Atom::Const(c) => bound.consts[c].as_atom().ok_or(fail)?,
                Atom::Unknown => return Err(fail),
            };
            out.push(v);
        }
        Ok(())
    }

    /// Every launch predicate, fail closed: a false or undecidable one is `Slow` (the
    /// Python checks then raise CT6200 / CT6201). Value tuples that held are cached.
    pub fn check_predicates(
        &self,
        args: &[Arg<'_>],
        bound: &Bound,
        grid: [u64; 3],
        cache: &mut PredicateCache,
        eval: &PredicateEval<'_>,
    ) -> Result<(), Slow> {
        let mut vals = std::mem::take(&mut cache.scratch);
        let r = self.check_with(args, bound, grid, cache, eval, &mut vals);
        cache.scratch = vals;
        r
    }

    fn check_with(
        &self,
        args: &[Arg<'_>],
        bound: &Bound,
        grid: [u64; 3],
        cache: &mut PredicateCache,
        eval: &PredicateEval<'_>,
        vals: &mut Vec<i64>,
    ) -> Result<(), Slow> {
        for (n, pred) in self.predicates.iter().enumerate() {
            self.atom_values(pred, args, bound, grid, vals)?;
            if cache.holds(n, vals) {
                continue;
            }
            let env: HashMap<String, i128> = pred
                .names
                .iter()
                .cloned()
                .zip(vals.iter().map(|v| i128::from(*v)))
                .collect();
            match eval(&pred.text, &env) {
                Ok(true) => cache.insert(n, vals),
                _ => return Err(Slow("predicate")),
            }
        }
        Ok(())
    }

    /// `(handle, mutable)` for `HostRegistry::move_in`, in parameter order, into `out`
    /// (which must have room for one per parameter); returns how many.
    pub fn moves_into(&self, args: &[Arg<'_>], out: &mut [(u64, bool)]) -> usize {
        let mut n = 0;
        for (p, a) in self.params.iter().zip(args) {
            if let Arg::Handle(d) = a {
                out[n] = (d.view.handle, p.kind == ParamKind::Partition);
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
                Arg::Handle(d) => Some((d.view.handle, p.kind == ParamKind::Partition)),
                _ => None,
            })
            .collect()
    }

    /// The byte ranges the launch reads (shared) and writes (exclusive), for the ledger.
    pub fn accesses(&self, args: &[Arg<'_>]) -> Vec<Access> {
        self.params
            .iter()
            .zip(args)
            .filter_map(|(p, a)| match a {
                Arg::Handle(d) => Some(Access {
                    storage: d.view.storage,
                    lo: d.span.0,
                    hi: d.span.1,
                    exclusive: p.kind == ParamKind::Partition,
                }),
                _ => None,
            })
            .collect()
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotKind {
    Ptr,
    Shape,
    Stride,
    Scalar,
}

/// One kernel parameter as the driver sees it (`lowering.signature.Slot` with its offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotPlan {
    pub kind: SlotKind,
    /// Index into [`LaunchPlan::params`].
    pub param: usize,
    pub axis: usize,
    /// The `struct` format character.
    pub fmt: u8,
    /// Byte offset in the naturally aligned parameter buffer.
    pub offset: usize,
}

/// Bytes a `struct` format character packs (`None`: not a parameter format).
pub fn fmt_size(fmt: u8) -> Option<usize> {
    Some(match fmt {
        b'?' | b'b' => 1,
        b'h' | b'e' => 2,
        b'i' | b'f' => 4,
        b'q' | b'Q' | b'd' => 8,
        _ => return None,
    })
}

/// A value `struct.pack` would refuse for `fmt` (the caller lets Python raise it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PackError {
    pub fmt: u8,
    pub value: Value,
}

/// `f64` to IEEE half, rounding to nearest even (`None` when finite but too large, as
/// `struct.pack("e", x)` refuses it).
pub fn f16_bits(x: f64) -> Option<u16> {
    let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
    if x.is_nan() {
        return Some(sign | 0x7e00);
    }
    if x.is_infinite() {
        return Some(sign | 0x7c00);
    }
    let a = x.abs();
    if a == 0.0 {
        return Some(sign);
    }
    let e = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let bits = if e < -14 {
        // subnormal half: units of 2^-24 (a carry into 1024 is the smallest normal)
        (a * 2f64.powi(24)).round_ties_even() as u32
    } else {
        let q = (a * 2f64.powi(10 - e)).round_ties_even() as u32; // in [1024, 2048]
        (((e + 15) as u32) << 10) + (q - 1024)
    };
    if bits >= 0x7c00 {
        return None;
    }
    Some(sign | bits as u16)
}

fn put(buf: &mut [u8], offset: usize, bytes: &[u8]) {
    buf[offset..offset + bytes.len()].copy_from_slice(bytes);
}

/// Pack one launch's parameters into `buf` (native byte order, `struct` semantics).
/// Panics if a slot lies outside `buf` (the caller sized it from the same slots).
pub fn pack(
    slots: &[SlotPlan],
    args: &[Arg<'_>],
    scalars: &[Option<Value>],
    buf: &mut [u8],
) -> Result<(), PackError> {
    for s in slots {
        let handle = match args.get(s.param) {
            Some(Arg::Handle(d)) => Some(*d),
            _ => None,
        };
        let value = match (s.kind, handle) {
            (SlotKind::Ptr, Some(d)) => {
                if s.fmt != b'Q' {
                    return Err(PackError {
                        fmt: s.fmt,
                        value: Value::Int(0),
                    });
                }
                put(buf, s.offset, &d.view.address.to_ne_bytes());
                continue;
            }
            (SlotKind::Shape, Some(d)) => d.view.shape.get(s.axis).copied().map(Value::Int),
            (SlotKind::Stride, Some(d)) => d.view.strides.get(s.axis).copied().map(Value::Int),
            (SlotKind::Scalar, None) => scalars.get(s.param).copied().flatten(),
            _ => None,
        };
        let err = PackError {
            fmt: s.fmt,
            value: value.unwrap_or(Value::Int(0)),
        };
        let Some(value) = value else {
            return Err(err);
        };
        let int = |lo: i128, hi: i128| match value {
            Value::Int(v) if (lo..=hi).contains(&i128::from(v)) => Ok(v),
            Value::Bool(b) => Ok(i64::from(b)),
            _ => Err(err),
        };
        let float = match value {
            Value::Int(v) => v as f64,
            Value::Float(f) => f,
            Value::Bool(b) => f64::from(u8::from(b)),
        };
        let o = s.offset;
        match s.fmt {
            b'q' => put(
                buf,
                o,
                &int(i64::MIN.into(), i64::MAX.into())?.to_ne_bytes(),
            ),
            b'i' => put(
                buf,
                o,
                &(int(i32::MIN.into(), i32::MAX.into())? as i32).to_ne_bytes(),
            ),
            b'h' => put(
                buf,
                o,
                &(int(i16::MIN.into(), i16::MAX.into())? as i16).to_ne_bytes(),
            ),
            b'b' => put(
                buf,
                o,
                &(int(i8::MIN.into(), i8::MAX.into())? as i8).to_ne_bytes(),
            ),
            b'?' => put(buf, o, &[u8::from(float != 0.0 || float.is_nan())]),
            b'd' => put(buf, o, &float.to_ne_bytes()),
            b'f' => {
                let y = float as f32;
                if y.is_infinite() && float.is_finite() {
                    return Err(err);
                }
                put(buf, o, &y.to_ne_bytes());
            }
            b'e' => put(buf, o, &f16_bits(float).ok_or(err)?.to_ne_bytes()),
            _ => return Err(err),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
