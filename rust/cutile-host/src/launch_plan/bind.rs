//! Matching a call to the kernel's parameters: positional and keyword arguments placed,
//! `Const` values given by keyword or inferred from partition tile shapes and tensor
//! shapes, every argument checked against its parameter (kind, element type, rank, static
//! extents, scalar range), and the key of the compiled kernel the call needs.
//!
//! This is the one binder: every error a call can get is made here. An argument the fast
//! path has no value for (a numpy scalar) is [`Refusal::Slow`] until the caller has
//! normalized the arguments; a call made with `last_word` never gets `Slow`.

use super::{Arg, Bound, ConstType, Dim, ElemClass, LaunchPlan, ParamKind, Refusal, Value};
use crate::HostError;

/// Where a parameter's argument is in the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgRef {
    Positional(usize),
    Keyword(usize),
}

/// A call's arguments in parameter order, and the `Const` keywords.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub order: Vec<ArgRef>,
    /// One per [`LaunchPlan::consts`]: the keyword that gives it.
    pub consts: Vec<Option<usize>>,
}

fn launch_err(code: &'static str, message: String, hint: Option<String>) -> Refusal {
    Refusal::Refused(HostError::launch(code, message, hint))
}

/// An argument of a bound call: of runtime parameter `i`, or the keyword of `Const` `c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Param(usize),
    Const(usize),
}

/// How an argument reads in a message (`a Tensor`, ``a `str` ``, `an int 123...`), given
/// by the caller, which knows the objects.
pub type Describe<'a> = dyn Fn(Which) -> String + 'a;

/// Where a `Const`'s value came from (for the message when two sources disagree).
#[derive(Debug, Clone, Copy)]
enum Origin {
    Keyword,
    Tile(usize, usize),
    Shape(usize, usize),
}

impl LaunchPlan {
    fn origin_text(&self, o: Origin, name: &str, v: &Value) -> String {
        match o {
            Origin::Keyword => format!("the keyword `{name}={}`", show(v)),
            Origin::Tile(p, k) => {
                format!("the tile shape of `{}` (axis {k})", self.params[p].name)
            }
            Origin::Shape(p, k) => format!("the shape of `{}` (axis {k})", self.params[p].name),
        }
    }

    /// Place a call's arguments: `positional` of them, then `keywords` (names, in call
    /// order). Keywords name runtime parameters or `Const`s.
    pub fn place(
        &self,
        kernel: &str,
        positional: usize,
        keywords: &[&str],
    ) -> Result<Placed, Refusal> {
        let n = self.params.len();
        if positional > n {
            let names: Vec<&str> = self.params.iter().map(|p| p.name.as_str()).collect();
            return Err(launch_err(
                "CT6104",
                format!(
                    "`{kernel}` takes {n} positional arguments ({}) but {positional} were given",
                    names.join(", ")
                ),
                Some("pass Const parameters by keyword, e.g. `BK=64`".into()),
            ));
        }
        let mut order: Vec<Option<ArgRef>> = (0..n)
            .map(|i| (i < positional).then_some(ArgRef::Positional(i)))
            .collect();
        let mut consts = vec![None; self.consts.len()];
        for (j, k) in keywords.iter().enumerate() {
            if let Some(c) = self.const_index(k) {
                consts[c] = Some(j);
            } else if let Some(i) = self.params.iter().position(|p| p.name == *k) {
                if order[i].is_some() {
                    return Err(launch_err(
                        "CT6104",
                        format!("`{kernel}` got argument `{k}` twice"),
                        None,
                    ));
                }
                order[i] = Some(ArgRef::Keyword(j));
            } else {
                return Err(launch_err(
                    "CT6104",
                    format!("`{kernel}` has no parameter `{k}`"),
                    None,
                ));
            }
        }
        let mut placed = Vec::with_capacity(n);
        for (p, o) in self.params.iter().zip(order) {
            match o {
                Some(r) => placed.push(r),
                None => {
                    return Err(launch_err(
                        "CT6104",
                        format!("`{kernel}` is missing argument `{}`", p.name),
                        None,
                    ))
                }
            }
        }
        Ok(Placed {
            order: placed,
            consts,
        })
    }

    /// `bind_ordered` with `Const` values and generic argument names (tests, benches).
    pub fn bind(&self, args: &[Arg<'_>], given: &[Option<Value>]) -> Result<Bound, Refusal> {
        let given: Vec<Option<Arg<'_>>> = given
            .iter()
            .map(|g| {
                g.map(|v| match v {
                    Value::Int(i) => Arg::Int(i),
                    Value::Float(f) => Arg::Float(f),
                    Value::Bool(b) => Arg::Bool(b),
                })
            })
            .collect();
        self.bind_ordered("kernel", args, &given, false, &|_| "an argument".into())
    }

    /// Match a call whose arguments are in parameter order (`args`) with `given` one slot
    /// per `Const`. `describe(i)` names argument `i` for a message. With `last_word`, an
    /// argument the fast path cannot read is an error rather than [`Refusal::Slow`].
    pub fn bind_ordered(
        &self,
        kernel: &str,
        args: &[Arg<'_>],
        given: &[Option<Arg<'_>>],
        last_word: bool,
        describe: &Describe<'_>,
    ) -> Result<Bound, Refusal> {
        if args.len() != self.params.len() || given.len() != self.consts.len() {
            return Err(Refusal::Slow("argument count"));
        }
        let other = |what: String, code: &'static str| {
            if last_word {
                launch_err(code, what, None)
            } else {
                Refusal::Slow("not a plain value")
            }
        };
        let mut consts: Vec<Value> = Vec::with_capacity(given.len());
        let mut origin: Vec<Option<Origin>> = vec![None; given.len()];
        for (i, (c, g)) in self.consts.iter().zip(given).enumerate() {
            let v = match (c.ty, g) {
                (_, None) => Value::Int(0),
                (ConstType::Int, Some(Arg::Int(v))) => Value::Int(*v),
                (ConstType::Float, Some(Arg::Float(v))) => Value::Float(*v),
                (ConstType::Float, Some(Arg::Int(v))) => Value::Float(*v as f64),
                (ConstType::Bool, Some(Arg::Bool(v))) => Value::Bool(*v),
                (_, Some(Arg::Other)) => {
                    let seen = describe(Which::Const(i));
                    // an int past 64 bits reaches here as "another value": its type is
                    // right, its size is not (CT6103, as for one past 32 bits below)
                    if let (ConstType::Int, Some(big)) = (c.ty, seen.strip_prefix("an int ")) {
                        if last_word {
                            return Err(launch_err(
                                "CT6103",
                                format!("`{}` = {big} does not fit in 32 bits", c.name),
                                Some(
                                    "int Consts are 32-bit integers; compute larger values \
                                     from them"
                                        .into(),
                                ),
                            ));
                        }
                    }
                    return Err(other(
                        format!("`{}` expects {}, got {seen}", c.name, ty_name(c.ty)),
                        "CT6102",
                    ));
                }
                (_, Some(a)) => {
                    return Err(launch_err(
                        "CT6102",
                        format!(
                            "`{}` expects {}, got {}",
                            c.name,
                            ty_name(c.ty),
                            arg_text(a)
                        ),
                        None,
                    ))
                }
            };
            if g.is_some() {
                origin[i] = Some(Origin::Keyword);
            }
            consts.push(v);
        }
        let mut scalars = vec![None; args.len()];
        let mut wide = false;
        for (i, (p, a)) in self.params.iter().zip(args).enumerate() {
            // Every refusal about one argument names its parameter (`About::tensor`).
            let bound = (|| -> Result<(), Refusal> {
                let me = Which::Param(i);
                match p.kind {
                    ParamKind::Partition | ParamKind::Tensor | ParamKind::Atomic => {
                        let d = match a {
                            Arg::Handle(d) => *d,
                            Arg::Other if !last_word => return Err(Refusal::Slow("not a handle")),
                            _ => {
                                let hint = if p.kind == ParamKind::Partition {
                                    None
                                } else {
                                    Some("build one with cutile.api.from_numpy".into())
                                };
                                let what = if p.kind == ParamKind::Partition {
                                    format!(
                                    "`{}` is a kernel output (`Mut`); it takes a Partition, not {}",
                                    p.name,
                                    describe(me)
                                )
                                } else {
                                    format!("`{}` takes a Tensor, not {}", p.name, describe(me))
                                };
                                return Err(launch_err("CT6101", what, hint));
                            }
                        };
                        let extents = match (p.kind, &d.view.tile) {
                        (ParamKind::Partition, Some(tile)) => tile,
                        (ParamKind::Tensor | ParamKind::Atomic, None) => &d.view.shape,
                        (ParamKind::Partition, None) => {
                            return Err(launch_err(
                                "CT6101",
                                format!(
                                    "`{}` is a kernel output (`Mut`); it takes a Partition, not a Tensor",
                                    p.name
                                ),
                                Some(format!("partition it: `{}.partition([...])`", p.name)),
                            ))
                        }
                        _ => {
                            let what = if p.kind == ParamKind::Atomic {
                                "an atomic tensor (`Atomic`)"
                            } else {
                                "a shared input"
                            };
                            return Err(launch_err(
                                "CT6101",
                                format!(
                                    "`{}` is {what}; it takes a Tensor, not a Partition",
                                    p.name
                                ),
                                Some(format!("pass `{}.unpartition()`", p.name)),
                            ))
                        }
                    };
                        // Extents travel as 32-bit values to the checker's proofs (strides and
                        // addresses may still need 64 bits).
                        if let Some((axis, n)) = d
                            .view
                            .shape
                            .iter()
                            .enumerate()
                            .find(|(_, n)| i32::try_from(**n).is_err())
                        {
                            return Err(launch_err(
                            "CT6111",
                            format!(
                                "`{}` has {n} elements on axis {axis}; tile kernels take extents below 2^31",
                                p.name
                            ),
                            Some("reshape the tensor so that every axis is below 2^31 elements".into()),
                        ));
                        }
                        if p.dtype.is_none() || d.dtype != p.dtype {
                            let want = p.dtype.map_or("?", |c| super::DTYPES[c as usize].name);
                            return Err(launch_err(
                                "CT6102",
                                format!(
                                    "`{}` of `{kernel}` expects `{want}` elements, got `{}`",
                                    p.name, d.view.dtype
                                ),
                                None,
                            ));
                        }
                        if extents.len() != p.dims.len() {
                            let (code, what) = if p.kind == ParamKind::Partition {
                                (
                                "CT6106",
                                format!(
                                    "`{}` is declared with {}-D tiles but the partition's tiles are {}",
                                    p.name,
                                    p.dims.len(),
                                    list(extents)
                                ),
                            )
                            } else {
                                (
                                    "CT6105",
                                    format!(
                                        "`{}` is declared {}-D but the tensor has shape {}",
                                        p.name,
                                        p.dims.len(),
                                        list(extents)
                                    ),
                                )
                            };
                            return Err(launch_err(code, what, None));
                        }
                        for (axis, (dim, actual)) in p.dims.iter().zip(extents).enumerate() {
                            match *dim {
                                Dim::Const(c) if self.consts[c].ty == ConstType::Int => {
                                    let here = if p.kind == ParamKind::Partition {
                                        Origin::Tile(i, axis)
                                    } else {
                                        Origin::Shape(i, axis)
                                    };
                                    match origin[c] {
                                        None => {
                                            consts[c] = Value::Int(*actual);
                                            origin[c] = Some(here);
                                        }
                                        Some(o) if consts[c] != Value::Int(*actual) => {
                                            let name = &self.consts[c].name;
                                            return Err(launch_err(
                                                "CT6103",
                                                format!(
                                                    "`{name}` is {} from {} but {actual} from {}",
                                                    show(&consts[c]),
                                                    self.origin_text(o, name, &consts[c]),
                                                    self.origin_text(here, name, &consts[c]),
                                                ),
                                                Some(
                                                    "make the shapes agree, or drop the keyword \
                                                 that contradicts them"
                                                        .into(),
                                                ),
                                            ));
                                        }
                                        Some(_) => {}
                                    }
                                }
                                // Partition tile shapes are checked against the declaration
                                // by the grid (CT6002), with the partition's own message.
                                _ if p.kind == ParamKind::Partition => {}
                                Dim::Any => {}
                                Dim::Fixed(n) if n == *actual => {}
                                Dim::Fixed(n) => {
                                    return Err(launch_err(
                                        "CT6105",
                                        format!(
                                        "`{}` must have size {n} on axis {axis}; it has {actual}",
                                        p.name
                                    ),
                                        None,
                                    ))
                                }
                                // A size named by a float or bool `Const` would never be
                                // matched against the tensor, while the checker reads it as
                                // the extent (the frontend refuses it, CT0005): refuse.
                                Dim::Const(c) => {
                                    return Err(launch_err(
                                        "CT6105",
                                        format!(
                                            "`{}` is sized on axis {axis} by `{}`, which is not \
                                             an int `Const`",
                                            p.name, self.consts[c].name
                                        ),
                                        None,
                                    ))
                                }
                                Dim::Unknown => {
                                    return Err(launch_err(
                                        "CT6105",
                                        format!(
                                            "`{}` is sized on axis {axis} by a name that is no \
                                             `Const` parameter",
                                            p.name
                                        ),
                                        None,
                                    ))
                                }
                            }
                        }
                        wide |= d.wide;
                    }
                    ParamKind::Scalar => {
                        scalars[i] = Some(self.scalar(p, a, last_word, &|| describe(me))?);
                    }
                    ParamKind::Ptr => self.pointer(p, a, last_word, &|| describe(me))?,
                    ParamKind::Unsupported => {
                        return Err(launch_err(
                            "CT6101",
                            format!("`{}` is a parameter the launcher cannot pass", p.name),
                            None,
                        ))
                    }
                }
                Ok(())
            })();
            bound.map_err(|r| r.about_param(&p.name))?;
        }
        for (i, (c, v)) in self.consts.iter().zip(&consts).enumerate() {
            if origin[i].is_none() {
                return Err(launch_err(
                    "CT6104",
                    format!(
                        "no value for `{}`: no partition or tensor shape determines it",
                        c.name
                    ),
                    Some(format!(
                        "pass it by keyword: `{kernel}(..., {}=...)`",
                        c.name
                    )),
                ));
            }
            if c.in_shape && matches!(v, Value::Int(x) if *x < 1) {
                return Err(launch_err(
                    "CT6103",
                    format!("`{}` must be >= 1, got {}", c.name, show(v)),
                    None,
                ));
            }
            // The checker's proofs take an int `Const` as a 32-bit value (the device
            // receives it as one).
            if matches!(v, Value::Int(x) if i32::try_from(*x).is_err()) {
                return Err(launch_err(
                    "CT6103",
                    format!("`{}` = {} does not fit in 32 bits", c.name, show(v)),
                    Some("int Consts are 32-bit integers; compute larger values from them".into()),
                ));
            }
        }
        let index_bits = if wide { 64 } else { 32 };
        // Tensor facts specialize the kernel; a pointer's do not (the lowering reads none).
        let tensor = |p: &super::ParamPlan, a: &Arg<'_>| match (p.kind, a) {
            (ParamKind::Ptr, _) => None,
            (_, Arg::Handle(d)) => Some(d.facts.shape_div.len()),
            _ => None,
        };
        let words: usize = self
            .params
            .iter()
            .zip(args)
            .filter_map(|(p, a)| tensor(p, a))
            .map(|n| 1 + n)
            .sum();
        let mut key = Vec::with_capacity(1 + consts.len() + words);
        key.push(u64::from(index_bits));
        key.extend(consts.iter().map(|v| v.key_word()));
        for (p, a) in self.params.iter().zip(args) {
            if tensor(p, a).is_none() {
                continue;
            }
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

    /// Check the argument of pointer parameter `p`: a Tensor (not a Partition) of the
    /// pointee's element type, whose device address the kernel receives.
    fn pointer(
        &self,
        p: &super::ParamPlan,
        a: &Arg<'_>,
        last_word: bool,
        describe: &dyn Fn() -> String,
    ) -> Result<(), Refusal> {
        let want = p.dtype.map_or("?", |c| super::DTYPES[c as usize].name);
        let d = match a {
            Arg::Handle(d) if d.view.tile.is_none() => *d,
            Arg::Other if !last_word => return Err(Refusal::Slow("not a handle")),
            Arg::Handle(_) => {
                return Err(launch_err(
                    "CT6110",
                    format!(
                        "`{}` is a pointer (`Ptr[{want}]`); it takes a Tensor, not a Partition",
                        p.name
                    ),
                    Some(format!("pass `{}.unpartition()`", p.name)),
                ))
            }
            _ => {
                return Err(launch_err(
                    "CT6110",
                    format!(
                        "`{}` is a pointer (`Ptr[{want}]`); it takes a Tensor (the kernel \
                         gets its device address), not {}",
                        p.name,
                        describe()
                    ),
                    Some("build one with cutile.api.from_numpy or cutile.api.zeros".into()),
                ))
            }
        };
        if p.dtype.is_none() || d.dtype != p.dtype {
            return Err(launch_err(
                "CT6102",
                format!(
                    "`{}` is a `Ptr[{want}]`; it takes a Tensor of `{want}` elements, not `{}`",
                    p.name, d.view.dtype
                ),
                None,
            ));
        }
        Ok(())
    }

    /// The value of scalar parameter `p` (an int given for a float parameter is a float).
    fn scalar(
        &self,
        p: &super::ParamPlan,
        a: &Arg<'_>,
        last_word: bool,
        describe: &dyn Fn() -> String,
    ) -> Result<Value, Refusal> {
        let d = p.dtype.map(|c| super::DTYPES[c as usize]);
        let dname = d.map_or("?", |d| d.name);
        let bad = |what: &str| {
            launch_err(
                "CT6102",
                format!("`{}` expects {what}, got {}", p.name, describe()),
                None,
            )
        };
        match (d.map(|d| d.class), *a) {
            (_, Arg::Handle(_)) => Err(launch_err(
                "CT6101",
                format!("`{}` is a scalar `{dname}`, not a tensor", p.name),
                None,
            )),
            (_, Arg::Other) if !last_word => Err(Refusal::Slow("scalar")),
            (Some(ElemClass::Float), Arg::Float(f)) => float_value(&p.name, dname, f),
            // an int too: `f16` 100000 would be infinite
            (Some(ElemClass::Float), Arg::Int(v)) => float_value(&p.name, dname, v as f64),
            (Some(ElemClass::Float), Arg::Other) => {
                // An int past 64 bits is still a number: say so, not "expects a number".
                let got = describe();
                match got.strip_prefix("an int ") {
                    Some(n) => Err(launch_err(
                        "CT6102",
                        format!(
                            "`{}` = {n} is an int past 64 bits, which {} `{dname}` parameter \
                             does not take",
                            p.name,
                            if dname.starts_with(['f', 'i']) {
                                "an"
                            } else {
                                "a"
                            }
                        ),
                        Some("pass it as a float (`float(...)`)".into()),
                    )),
                    None => Err(bad("a number")),
                }
            }
            (Some(ElemClass::Float), _) => Err(bad("a number")),
            (Some(ElemClass::Bool), Arg::Bool(b)) => Ok(Value::Bool(b)),
            (Some(ElemClass::Bool), _) => Err(bad("a bool")),
            (Some(ElemClass::Int), Arg::Int(v)) => {
                let bits = d.map_or(64, |d| d.bits);
                let half = 1i128 << (bits - 1);
                if !(-half..half).contains(&i128::from(v)) {
                    return Err(launch_err(
                        "CT6102",
                        format!("`{}` = {v} does not fit in `{dname}`", p.name),
                        None,
                    ));
                }
                Ok(Value::Int(v))
            }
            (Some(ElemClass::Int), Arg::Other) => {
                let got = describe();
                if got.starts_with("an int") {
                    Err(launch_err(
                        "CT6102",
                        format!("`{}` = {} does not fit in `{dname}`", p.name, &got[7..]),
                        None,
                    ))
                } else {
                    Err(bad("an integer"))
                }
            }
            (Some(ElemClass::Int), _) => Err(bad("an integer")),
            (Some(ElemClass::UInt), Arg::Int(v)) => {
                // A launch carries a u64 as the i64 of the same bits: 0 to 2^63 - 1 here.
                let bits = d.map_or(64, |d| d.bits);
                if v < 0 || (bits < 64 && i128::from(v) >= 1i128 << bits) {
                    return Err(launch_err(
                        "CT6102",
                        format!("`{}` = {v} does not fit in `{dname}`", p.name),
                        None,
                    ));
                }
                Ok(Value::Int(v))
            }
            (Some(ElemClass::UInt), Arg::Other) => {
                let got = describe();
                match got.strip_prefix("an int ") {
                    // a u64 past 2^63 - 1 fits the type, not the launch's i64
                    Some(n) if dname == "u64" && !n.starts_with('-') => Err(launch_err(
                        "CT6102",
                        format!(
                            "`{}` = {n} is above 2**63 - 1, the largest `u64` scalar a launch \
                             takes",
                            p.name
                        ),
                        Some(
                            "a `u64` scalar travels as the 64 bits of an i64, so its top \
                             bit must be 0; pass larger values in a tensor"
                                .into(),
                        ),
                    )),
                    Some(n) => Err(launch_err(
                        "CT6102",
                        format!("`{}` = {n} does not fit in `{dname}`", p.name),
                        None,
                    )),
                    None => Err(bad("an integer")),
                }
            }
            (Some(ElemClass::UInt), _) => Err(bad("an integer")),
            (None, _) => Err(bad("a value")),
        }
    }
}

fn ty_name(t: ConstType) -> &'static str {
    match t {
        ConstType::Int => "an int",
        ConstType::Float => "a float",
        ConstType::Bool => "a bool",
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format!("{f:?}"),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
    }
}

fn arg_text(a: &Arg<'_>) -> String {
    match a {
        Arg::Handle(d) if d.view.tile.is_some() => "a Partition".into(),
        Arg::Handle(_) => "a Tensor".into(),
        Arg::Int(v) => v.to_string(),
        Arg::Float(v) => format!("{v:?}"),
        Arg::Bool(b) => if *b { "True" } else { "False" }.into(),
        Arg::Other => "a value of another type".into(),
    }
}

fn list(s: &[i64]) -> String {
    format!(
        "[{}]",
        s.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A float scalar's value; a finite value that rounds to infinity in the parameter's type
/// is lost, so it is refused.
fn float_value(name: &str, dname: &str, f: f64) -> Result<Value, Refusal> {
    let overflows = f.is_finite()
        && match dname {
            "f16" => f.abs() >= 65520.0,
            "f32" | "tf32" | "bf16" => (f as f32).is_infinite(),
            _ => false,
        };
    if overflows {
        return Err(launch_err(
            "CT6102",
            format!("`{name}` = {f:?} overflows `{dname}` (it would be infinite)"),
            Some(format!(
                "pass a value within `{dname}`'s range, or declare the parameter with a wider \
                 float type"
            )),
        ));
    }
    Ok(Value::Float(f))
}
