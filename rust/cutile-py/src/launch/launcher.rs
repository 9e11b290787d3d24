//! `KernelLauncher`'s methods: preparing a launch (binding, grid, launch predicates,
//! moving the handles in) and compiling or finding the kernel of a specialization.

use super::*;

#[pymethods]
impl KernelLauncher {
    /// `params`: `(name, kind, dtype, dims)` per non-`Const` parameter (dims: ints, `-1`,
    /// `Const` names); `consts`: `(name, "int" | "float" | "bool")`; `checked`: the
    /// kernel's `CheckResult`, whose facts decide the launch kind and the launch
    /// predicates; `sm_counts`: multiprocessors per device ordinal; `runtime`: the
    /// streams, ledger and driver launches go through (a GPU runtime launches with
    /// `cuLaunchKernel`; an interpreter runtime calls `interpret`).
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (kernel, params, consts, checked, unchecked, sm_counts, registry,
                        runtime, owner, compile, interpret, cuda_error))]
    fn new(
        py: Python<'_>,
        kernel: &str,
        params: Vec<ParamTuple<'_>>,
        consts: Vec<(String, String)>,
        checked: PyRef<'_, crate::CheckResult>,
        unchecked: bool,
        sm_counts: Vec<u64>,
        registry: Py<HostRegistry>,
        runtime: Py<Runtime>,
        owner: Py<PyAny>,
        compile: Py<PyAny>,
        interpret: Py<PyAny>,
        cuda_error: Py<PyAny>,
    ) -> PyResult<Self> {
        let mut specs = Vec::with_capacity(params.len());
        for (name, kind, dtype, dims) in params {
            let dims = dims
                .iter()
                .map(|d| {
                    if let Ok(s) = d.cast::<PyString>() {
                        Ok(DimSpec::Name(s.to_str()?.to_string()))
                    } else {
                        Ok(DimSpec::Int(d.extract::<i64>()?))
                    }
                })
                .collect::<PyResult<Vec<DimSpec>>>()?;
            specs.push(ParamSpec {
                name,
                kind,
                dtype,
                dims,
            });
        }
        let consts = consts
            .into_iter()
            .map(|(name, ty)| {
                let t = match ty.as_str() {
                    "int" => ConstType::Int,
                    "float" => ConstType::Float,
                    "bool" => ConstType::Bool,
                    other => {
                        return Err(PyValueError::new_err(format!("unknown Const type {other}")))
                    }
                };
                Ok((name, t))
            })
            .collect::<PyResult<Vec<_>>>()?;
        // `unchecked` launches a rejected kernel: tests that replay the checker's
        // counterexamples on the interpreter, never a user's path.
        if !checked.ok && !unchecked {
            return Err(PyValueError::new_err(
                "a launcher needs the facts of a kernel the checker accepted",
            ));
        }
        let sm_count = sm_counts.first().copied().unwrap_or(132);
        let plan = LaunchPlan::new(&specs, &consts, &checked.facts, sm_count).map_err(|e| {
            crate::errors::internal(
                py,
                &format!("`{kernel}`: the checker's facts do not fit the kernel: {e}"),
            )
        })?;
        let names = PyTuple::new(py, plan.params.iter().map(|p| p.name.as_str()))?.unbind();
        pending::warn_never_ran(py)?;
        Ok(KernelLauncher {
            kernel: Arc::from(kernel),
            plan,
            names,
            registry,
            runtime,
            owner,
            compile,
            interpret,
            cuda_error,
            kernels: Mutex::new(WordMap::default()),
            passed: Mutex::new(PredicateCache::default()),
            memo: Mutex::new(LaunchMemo::default()),
            sm_counts,
        })
    }

    /// The Python kernel object (`None` once it is gone).
    #[getter]
    fn kernel<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.owner.bind(py).call0()
    }

    /// `PendingLaunch(self, args, kwargs, last_word)`, or `None` where that raises
    /// `SlowPath`.
    #[pyo3(signature = (args, kwargs = None, last_word = false))]
    fn prepare(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
        last_word: bool,
    ) -> PyResult<Option<PendingLaunch>> {
        slf.get().prepare_launch(slf, args, kwargs, last_word)
    }

    /// Compiled kernels registered so far.
    fn __len__(&self) -> PyResult<usize> {
        Ok(self.kernels.lock().map_err(poisoned)?.len())
    }
}

impl KernelLauncher {
    /// Match, check and move in one call's arguments. `None` (only without `last_word`):
    /// an argument needs normalizing first (a numpy scalar); every other refusal raises
    /// the launch's typed error.
    pub(super) fn prepare_launch(
        &self,
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
        last_word: bool,
    ) -> PyResult<Option<PendingLaunch>> {
        let py = slf.py();
        let plan = &self.plan;
        let n = plan.params.len();
        // Keyword names and values, in call order.
        let mut kw_names: Vec<String> = Vec::new();
        let mut kw_values: Vec<Bound<'_, PyAny>> = Vec::new();
        // `grid=` (unless the kernel has a parameter of that name): the launch grid of a
        // kernel without `Mut` outputs (`LaunchPlan::grid_with`).
        let mut explicit_grid: Option<[u64; 3]> = None;
        if let Some(kw) = kwargs {
            let grid_is_param =
                plan.params.iter().any(|p| p.name == "grid") || plan.const_index("grid").is_some();
            for (k, v) in kw.iter() {
                let Ok(k) = k.cast::<PyString>() else {
                    return Err(PyTypeError::new_err("keywords must be strings"));
                };
                let k = k.to_str()?;
                if k == "grid" && !grid_is_param {
                    explicit_grid =
                        Some(grid_arg(&v).map_err(|e| host_err(py, e.with_kernel(&self.kernel)))?);
                    continue;
                }
                kw_names.push(k.to_string());
                kw_values.push(v);
            }
        }
        let placed = if kw_names.is_empty() && args.len() == n {
            None // the common call: every argument positional, in order
        } else {
            let names: Vec<&str> = kw_names.iter().map(String::as_str).collect();
            match plan.place(&self.kernel, args.len(), &names) {
                Ok(p) => Some(p),
                Err(Refusal::Refused(e)) => return Err(host_err(py, e.with_kernel(&self.kernel))),
                Err(Refusal::Slow(_)) => return Ok(None),
            }
        };
        // Small calls use stack buffers: a launch allocates only what it keeps.
        const INLINE: usize = 16;
        // The argument objects in parameter order, borrowed from the call's tuple and
        // keyword values (which outlive this call): no reference count per argument.
        let object = |r: ArgRef| -> PyResult<Borrowed<'_, '_, PyAny>> {
            match r {
                ArgRef::Positional(i) => args.get_borrowed_item(i),
                ArgRef::Keyword(j) => Ok(kw_values[j].as_borrowed()),
            }
        };
        let filler = args.as_any().as_borrowed();
        let mut objs_buf = [filler; INLINE];
        let mut objs_vec = Vec::new();
        let objs: &mut [Borrowed<'_, '_, PyAny>] = if n <= INLINE {
            &mut objs_buf[..n]
        } else {
            objs_vec.resize(n, filler);
            &mut objs_vec
        };
        for (i, o) in objs.iter_mut().enumerate() {
            *o = match &placed {
                Some(p) => object(p.order[i])?,
                None => args.get_borrowed_item(i)?,
            };
        }
        let objs: &[Borrowed<'_, '_, PyAny>] = objs;
        let mut given_buf = [None; INLINE];
        let mut given_vec = Vec::new();
        let given: &mut [Option<Arg<'_>>] = if plan.consts.len() <= INLINE {
            &mut given_buf[..plan.consts.len()]
        } else {
            given_vec.resize(plan.consts.len(), None);
            &mut given_vec
        };
        if let Some(p) = &placed {
            for (g, j) in given.iter_mut().zip(&p.consts) {
                if let Some(j) = j {
                    *g = Some(value_arg(&kw_values[*j]));
                }
            }
        }
        let mut handles = Handles::new(n);
        let mut raw_buf = [Arg::Other; INLINE];
        let mut raw_vec = Vec::new();
        let raw: &mut [Arg<'static>] = if n <= INLINE {
            &mut raw_buf[..n]
        } else {
            raw_vec.resize(n, Arg::Other);
            &mut raw_vec
        };
        for ((o, r), h) in objs.iter().zip(raw.iter_mut()).zip(handles.iter_mut()) {
            match o.cast::<HandleMeta>() {
                // SAFETY: the op keeps `o` in `values` (the call's own objects, in
                // parameter order) for as long as it holds `handles`.
                Ok(m) => *h = m.get().desc().map(|d| unsafe { DescRef::new(d) }),
                Err(_) => *r = value_arg(o),
            }
        }
        let mut argv_buf = [Arg::Other; INLINE];
        let mut argv_vec = Vec::new();
        let argv: &mut [Arg<'_>] = if n <= INLINE {
            &mut argv_buf[..n]
        } else {
            argv_vec.resize(n, Arg::Other);
            &mut argv_vec
        };
        for ((a, h), r) in argv.iter_mut().zip(handles.iter()).zip(raw.iter()) {
            *a = match h {
                Some(d) => Arg::Handle(d.get()),
                None => *r,
            };
        }
        let argv: &[Arg<'_>] = argv;
        let none = (cutile_host::HandleAt::id(0), false);
        let mut moves_buf = [none; INLINE];
        let mut moves_vec = Vec::new();
        let moves: &mut [(cutile_host::HandleAt, bool)] = if n <= INLINE {
            &mut moves_buf[..n]
        } else {
            moves_vec.resize(n, none);
            &mut moves_vec
        };
        let describe = |w: Which| -> String {
            let o = match (w, &placed) {
                (Which::Param(i), _) => objs.get(i).map(|o| Bound::clone(o)),
                (Which::Const(c), Some(p)) => p.consts[c].map(|j| kw_values[j].clone()),
                (Which::Const(_), None) => None,
            };
            o.map_or_else(|| "no value".to_string(), |o| describe_object(&o))
        };
        // One device runs the launch: its tensors' (the current device without one). A
        // call whose tensors are on two devices never reaches the memo: `decide` refuses
        // it (CT6113), after binding's own refusals, as every call is refused.
        let device = plan.device_of(&self.kernel, argv, current_device()).ok();
        // A plain positional call on one device whose arguments have the launch facts of
        // an earlier accepted call there reuses its decisions (`LaunchMemo`; the compiled
        // kernel, and so its PDL launch, come with them); anything else binds.
        let memo_ok = placed.is_none() && explicit_grid.is_none();
        let hit = match device {
            Some(d) if memo_ok => self.memo.lock().map_err(poisoned)?.get(d, argv).cloned(),
            _ => None,
        };
        let decided = match hit {
            Some(d) => d,
            None => match self.decide(py, argv, given, last_word, explicit_grid, &describe)? {
                Some(d) => {
                    if memo_ok {
                        // (the memo keeps the arguments' launch facts, not the tensors)
                        self.memo
                            .lock()
                            .map_err(poisoned)?
                            .insert(d.device, argv, d.clone());
                    }
                    d
                }
                None => return Ok(None),
            },
        };
        let moved = plan.moves_into(argv, moves);
        let moves = &moves[..moved];
        // Values come back in parameter order, scalars normalized (an int given for a
        // float parameter is a float).
        let scalars = &decided.bound.scalars;
        let converted = argv
            .iter()
            .zip(scalars)
            .any(|(a, s)| matches!((a, s), (Arg::Int(_), Some(Value::Float(_)))));
        let values = if converted || placed.is_some() {
            let mut out = Vec::with_capacity(n);
            for (o, (a, s)) in objs.iter().zip(argv.iter().zip(scalars)) {
                out.push(match (a, s) {
                    (Arg::Int(_), Some(v @ Value::Float(_))) => value_py(py, *v)?,
                    _ => Bound::clone(o),
                });
            }
            PyTuple::new(py, out)?.unbind()
        } else {
            args.clone().unbind()
        };
        let op = next_op_id();
        let moved = {
            let mut reg = self.registry.bind(py).try_borrow_mut()?;
            reg.inner.move_in_launch(op, &self.kernel, moves)
        };
        moved.map_err(|e| host_err(py, e.with_kernel(&self.kernel)))?;
        Ok(Some(PendingLaunch {
            launcher: slf.clone().unbind(),
            op,
            values,
            handles,
            decided,
            state: OpState::new(),
            call_site: CallSite::here(py),
        }))
    }

    /// Bind a call, infer its grid and check its launch predicates: what a launch with
    /// these arguments is, or `None` (only without `last_word`) where an argument needs
    /// normalizing first; a refusal raises the launch's typed error.
    fn decide(
        &self,
        py: Python<'_>,
        argv: &[Arg<'_>],
        given: &[Option<Arg<'_>>],
        last_word: bool,
        explicit_grid: Option<[u64; 3]>,
        describe: &cutile_host::launch_plan::Describe<'_>,
    ) -> PyResult<Option<Arc<Decided>>> {
        let plan = &self.plan;
        let checked = guard(|| {
            let bound = match plan.bind_ordered(&self.kernel, argv, given, last_word, describe) {
                Ok(b) => b,
                Err(r) => return Ok(Err(r)),
            };
            // One device runs the launch: its tensors' (CT6113 for two).
            let device = match plan.device_of(&self.kernel, argv, current_device()) {
                Ok(d) => d,
                Err(e) => return Ok(Err(Refusal::Refused(e))),
            };
            let sms = self
                .sm_counts
                .get(device as usize)
                .copied()
                .unwrap_or(plan.sm_count);
            let grid = match plan.grid_on(&self.kernel, argv, &bound.consts, explicit_grid, sms) {
                Ok(g) => g,
                Err(r) => return Ok(Err(r)),
            };
            let mut cache = self.passed.lock().map_err(poisoned)?;
            if let Err(r) = plan.check_predicates(&self.kernel, argv, &bound, grid, &mut cache) {
                return Ok(Err(r));
            }
            Ok(Ok((bound, grid, device)))
        })?;
        match checked {
            Ok((mut bound, grid, device)) => {
                // a CUfunction belongs to one device's context: one entry per device
                let mut key = std::mem::take(&mut bound.key);
                key.push(u64::from(device));
                Ok(Some(Arc::new(Decided {
                    key: key.into_boxed_slice(),
                    bound,
                    device,
                    grid,
                    entry: OnceLock::new(),
                })))
            }
            Err(Refusal::Slow(_)) if !last_word => Ok(None),
            Err(Refusal::Slow(why)) => Err(errors::internal(
                py,
                &format!(
                    "`{}`: the launcher could not read normalized arguments ({why})",
                    self.kernel
                ),
            )),
            Err(Refusal::Refused(e)) => Err(host_err(py, e.with_kernel(&self.kernel))),
        }
    }

    /// `p`'s specialization as the compile callback takes it: `(name, value)` per `Const`
    /// and `(name, dtype, rank, align16, last_stride_one, shape_div, stride_div)` per
    /// tensor argument.
    pub(super) fn specialization<'py>(
        &self,
        py: Python<'py>,
        p: &PendingLaunch,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        let consts = PyList::empty(py);
        for (c, v) in self.plan.consts.iter().zip(&p.decided.bound.consts) {
            consts.append((c.name.as_str(), value_py(py, *v)?))?;
        }
        let facts = PyList::empty(py);
        for (param, h) in self.plan.params.iter().zip(p.handles.iter()) {
            if param.kind == ParamKind::Ptr {
                continue; // a pointer specializes nothing (`LaunchPlan::bind_ordered`)
            }
            if let Some(d) = h.as_ref().map(DescRef::get) {
                let f = &d.facts;
                let dtype = d.dtype.map_or("?", |c| DTYPES[c as usize].name);
                facts.append((
                    param.name.as_str(),
                    dtype,
                    d.view.shape.len(),
                    f.align16,
                    f.last_stride_one,
                    PyTuple::new(py, &f.shape_div)?,
                    PyTuple::new(py, &f.stride_div)?,
                ))?;
            }
        }
        Ok((consts, facts))
    }

    /// The compiled kernel for `p`'s specialization, compiling it (in Python) on a miss.
    pub(super) fn kernel_for(
        &self,
        py: Python<'_>,
        p: &PendingLaunch,
    ) -> PyResult<Arc<KernelEntry>> {
        if let Some(e) = self
            .kernels
            .lock()
            .map_err(poisoned)?
            .get(&p.decided.key[..])
        {
            return Ok(e.clone());
        }
        let (consts, facts) = self.specialization(py, p)?;
        let method = self.compile.bind(py).call0()?;
        if method.is_none() {
            return Err(PyRuntimeError::new_err(format!(
                "kernel `{}` is gone",
                self.kernel
            )));
        }
        let out = method.call1((consts, facts, p.decided.bound.index_bits, p.decided.device))?;
        let (runnable, function, slots, size, pdl, early): Compiled = out.extract()?;
        if early.iter().any(|&i| i >= self.plan.params.len()) {
            return Err(PyValueError::new_err("an early load names no parameter"));
        }
        let mut plan_slots = Vec::with_capacity(slots.len());
        for (kind, param, axis, fmt, offset) in slots {
            let kind = match kind.as_str() {
                "ptr" => SlotKind::Ptr,
                "shape" => SlotKind::Shape,
                "stride" => SlotKind::Stride,
                "scalar" => SlotKind::Scalar,
                other => return Err(PyValueError::new_err(format!("unknown slot kind {other}"))),
            };
            let fmt = match fmt.as_bytes() {
                [c] if fmt_size(*c).is_some_and(|n| offset + n <= size) => *c,
                _ => return Err(PyValueError::new_err(format!("bad slot format {fmt:?}"))),
            };
            if param >= self.plan.params.len() {
                return Err(PyValueError::new_err("slot names no parameter"));
            }
            plan_slots.push(SlotPlan {
                kind,
                param,
                axis,
                fmt,
                offset,
            });
        }
        let entry = Arc::new(KernelEntry {
            runnable,
            function,
            slots: plan_slots,
            size,
            pdl,
            early: early.into_boxed_slice(),
        });
        let mut kernels = self.kernels.lock().map_err(poisoned)?;
        Ok(kernels
            .entry(p.decided.key.clone())
            .or_insert(entry)
            .clone())
    }

    pub(super) fn cuda_error(&self, py: Python<'_>, code: c_int, what: &str) -> PyErr {
        match self.cuda_error.bind(py).call1((code, what)) {
            Err(e) => e,
            Ok(_) => PyRuntimeError::new_err(format!("{what} failed with CUresult {code}")),
        }
    }
}

/// `grid=`: an int (one axis) or a tuple/list of one to three ints, each `>= 0` (numpy
/// integers too: anything with `__index__`, but not a bool).
fn grid_arg(v: &Bound<'_, PyAny>) -> Result<[u64; 3], cutile_host::HostError> {
    let bad = || {
        cutile_host::HostError::launch(
            "CT6104",
            format!(
                "`grid=` takes an int or a tuple of one to three ints >= 0, not {}",
                describe_object(v)
            ),
            Some("e.g. `grid=(num_blocks,)` or `grid=(gx, gy)`".into()),
        )
    };
    let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = v.cast::<PyTuple>() {
        t.iter().collect()
    } else if let Ok(l) = v.cast::<PyList>() {
        l.iter().collect()
    } else {
        vec![v.clone()]
    };
    if items.is_empty() || items.len() > 3 {
        return Err(bad());
    }
    let mut g = [1u64; 3];
    for (k, it) in items.iter().enumerate() {
        if it.is_instance_of::<PyBool>() {
            return Err(bad());
        }
        g[k] = it.extract::<u64>().map_err(|_| bad())?;
    }
    Ok(g)
}
