//! A kernel walked from its entry: the entry's parameters bound, each function's body run
//! in a frame of its own (device functions inlined per call site), and the checks that
//! need every access seen first.

use super::paths::World;
use super::*;
use crate::fold::Ct;

impl<'d> Checker<'d> {
    pub fn run(&mut self) {
        let Some(entry) = self.doc.entry_function() else {
            return;
        };
        if let Some((at, callee, total)) = crate::limits::too_many_inlined_calls(self.doc, entry) {
            let cap = crate::limits::MAX_INLINED_CALLS;
            self.report(errors::too_many_inlined_calls(&callee, at, total, cap));
            return;
        }
        let mut st = State::default();
        let (mut ri, mut si, mut ai) = (0, 0, 0);
        for p in &entry.params {
            let v = match p.kind {
                ParamKind::MutTensor => {
                    ri += 1;
                    Val::Mut(ri - 1)
                }
                ParamKind::Tensor => {
                    si += 1;
                    Val::Shared(si - 1)
                }
                ParamKind::AtomicTensor => {
                    ai += 1;
                    Val::Atomic(ai - 1)
                }
                _ => self.scalar_param(p),
            };
            self.bind_var(&mut st, &p.name, v);
            if p.kind == ParamKind::Const {
                let var = self.var(&p.name);
                st.ct.insert(var, crate::fold::const_key(&p.name));
            }
        }
        self.world = Rc::default();
        let _ = self.run_function(entry, None, st, "");
        // Persistence is known once every `iter_indices()` was seen (it may come after an
        // own-tile access, or in a device function).
        let uses = std::mem::take(&mut self.own_uses);
        for (r, at, op) in uses {
            if self.persistent.contains(&r) {
                let name = self.root_name(r);
                self.report(errors::no_own_tile(&name, op, at));
            }
        }
        let loads = std::mem::take(&mut self.load_maps);
        for (r, map, at) in loads {
            // An own-tile load of a persistent output is CT2011 already.
            if map == crate::stores::StoreMap::Own && self.persistent.contains(&r) {
                continue;
            }
            let stored = self.store_maps.get(&r).cloned();
            let name = self.root_name(r);
            match (stored, &map) {
                (Some((s, _)), _) if s == map => {}
                // A load at a computed index is race-free only as the store map itself
                // (proved injective: the tile is this block's alone).
                (_, crate::stores::StoreMap::Computed(_)) => {
                    self.report(errors::load_not_own(&name, at));
                }
                (Some((_, store_at)), _) => {
                    self.report(errors::read_write_maps_differ(&name, at, store_at));
                }
                (None, _) => {}
            }
        }
    }

    /// The compile-time value of a function's result: the value of every `return` where
    /// they agree; else a key that names each value with the tests of `Const`s that select
    /// it (those the function's worlds pinned, past `base`, the caller's), so that two calls
    /// share a key only where they compute the same value in every specialization. (The
    /// arguments' keys alone do not say it: an input's extent is `?` there, and `g(x, C)`
    /// and `g(y, C)` test `x.shape[0]` and `y.shape[0]`.)
    fn result_ct(name: &str, args: &str, base: &World, rets: &[(Option<Ct>, World)]) -> Option<Ct> {
        let first = rets.first()?.0.clone()?;
        if rets.iter().all(|(c, _)| c.as_ref() == Some(&first)) {
            return Some(first);
        }
        let mut arms = rets
            .iter()
            .map(|(c, w)| {
                let pins: Vec<String> = w
                    .iter()
                    .filter(|(k, _)| !base.contains_key(*k))
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                Some(format!("{{{}}}: {}", pins.join(", "), c.as_ref()?.text()))
            })
            .collect::<Option<Vec<String>>>()?;
        arms.sort();
        arms.dedup();
        Some(Ct::key(format!("{name}({args})[{}]", arms.join(", "))))
    }

    pub(super) fn scalar_param(&self, p: &cutile_kast::Param) -> Val {
        match p.kind {
            ParamKind::Const if is_int_dtype(p.dtype.as_deref()) => {
                Val::Int(Poly::atom(Atom::Const(p.name.clone())))
            }
            ParamKind::Scalar if is_int_dtype(p.dtype.as_deref()) => {
                Val::Int(Poly::atom(Atom::Scalar(p.name.clone())))
            }
            _ => Val::Other,
        }
    }

    /// Run a function body in a fresh frame; returns the joined return value.
    /// The result of a function, and its compile-time value where it has one (`args`: the
    /// compile-time values of its arguments, which such a result is a function of).
    pub(super) fn run_function(
        &mut self,
        func: &'d Function,
        call_site: Option<Span>,
        st: State,
        args: &str,
    ) -> (Val, Option<Ct>) {
        let mut uses = UseMap::default();
        walk_stmts(&func.body, &mut |s| {
            for e in stmt_exprs(s) {
                e.walk(&mut |e| {
                    if let Expr::Name { id, span, .. } = e {
                        uses.reads
                            .entry(id.clone())
                            .or_default()
                            .push((span.lo, *span));
                    }
                });
            }
        });
        self.frames.push(Frame {
            func,
            call_site,
            uses,
            loops: Vec::new(),
            unsafe_depth: 0,
            returns: Vec::new(),
            returns_ct: Vec::new(),
            runtime_flow: false,
            returns_in_loop: false,
            stmt_hi: 0,
        });
        for p in &func.params {
            if p.kind == ParamKind::Ptr && !func.is_unsafe {
                let d = errors::ptr_param(
                    &p.name,
                    p.span,
                    &func.name,
                    func.kind == FunctionKind::Entry,
                );
                self.report(d);
            }
        }
        let base = self.world.clone();
        let end = self.exec_block(&func.body, base.clone(), st);
        let frame = self.frames.pop();
        let (mut rets, rets_ct, runtime_flow, in_loop) = frame
            .map(|f| (f.returns, f.returns_ct, f.runtime_flow, f.returns_in_loop))
            .unwrap_or_default();
        // A path that falls off the end returns None: with a value on another path the
        // result is unknown (the compiler refuses such a function, CT3015).
        let falls_off = end.iter().any(|(_, s)| s.is_some());
        if falls_off && !rets.is_empty() {
            rets.push(Val::Other);
        }
        // Known at compile time where every `return` gives such a value and no test known
        // only on the device (nor a loop) is on the way: each specialization runs one
        // `return`, whose value the compiler keeps (after a run-time test it merges the
        // paths' values as device values, even equal ones).
        let ct = if falls_off || runtime_flow || rets_ct.iter().any(|(c, _)| c.is_none()) {
            None
        } else {
            Self::result_ct(&func.name, args, &base, &rets_ct)
        };
        let v = match rets.as_slice() {
            [] => Val::Other,
            [v] => v.clone(),
            [first, rest @ ..] if rest.iter().all(|v| v == first) => first.clone(),
            _ => self.fresh_opaque(),
        };
        let v = if in_loop {
            self.device_val(v, crate::width::INDEX_BITS)
        } else {
            v
        };
        (v, ct)
    }
}
