//! Expressions: names (moves, borrows still in use), device-function calls (inlined
//! per call site) and the evaluation of every expression kind.

use super::*;
use crate::fold::Ct;

impl<'d> Checker<'d> {
    /// Source text of an expression, for messages.
    pub fn describe(&self, e: &Expr) -> String {
        let s = e.span();
        self.doc
            .files
            .get(s.file as usize)
            .and_then(|f| f.source.get(s.lo as usize..s.hi as usize))
            .map(|t| t.to_string())
            .unwrap_or_else(|| "<expr>".into())
    }

    // ---- names -------------------------------------------------------------------------

    pub fn read_name(&mut self, id: &str, span: Span, st: &mut State) -> Val {
        let var = self.var(id);
        let Some(Binding { val, moved }) = st.get(var).cloned() else {
            return Val::Other;
        };
        if let (Some(m), true) = (moved, val.is_mut()) {
            self.report(errors::use_after_move(id, span, m.span, m.why));
            return val;
        }
        if let Val::Mut(root) = val {
            let conflicts: Vec<_> = st
                .borrows
                .iter()
                .filter(|b| b.root == root && b.holder != var && st.borrow_held(b))
                .cloned()
                .collect();
            for b in conflicts {
                if let Some(later) = self.used_later(&b.holder_name, span, b.created) {
                    self.report(errors::used_while_borrowed(
                        id,
                        &b.holder_name,
                        span,
                        b.created,
                        Some(later),
                    ));
                    break;
                }
            }
        }
        val
    }

    /// A read of `holder` after `at` in this function, or anywhere in an enclosing loop that
    /// does not contain the borrow's creation (the next iteration).
    fn used_later(&self, holder: &str, at: Span, created: Span) -> Option<Span> {
        let f = self.frames.last()?;
        let reads = f.uses.reads.get(holder)?;
        let after = at.hi.max(f.stmt_hi);
        if let Some((_, s)) = reads
            .iter()
            .find(|(lo, s)| *lo >= after && s.file == at.file)
        {
            return Some(*s);
        }
        for l in &f.loops {
            if created.within(&l.span) {
                continue;
            }
            if let Some((_, s)) = reads.iter().find(|(_, s)| s.within(&l.span)) {
                return Some(*s);
            }
        }
        None
    }

    // ---- device calls ------------------------------------------------------------------

    /// A device function call; the frontend bound its arguments to the callee's
    /// parameters, in order.
    pub fn call_device(
        &mut self,
        name: &str,
        args: &'d [Expr],
        span: Span,
        nid: u32,
        st: &mut State,
    ) -> Val {
        let placeholders = std::mem::take(&mut self.placeholder_args);
        let vals: Vec<(Val, &Expr)> = args.iter().map(|a| (self.eval(a, st), a)).collect();
        // (after the arguments: a device call among them is known once it ran)
        let cts: Vec<Option<Ct>> = if placeholders {
            vec![None; args.len()]
        } else {
            args.iter().map(|a| self.ct_of(a, st)).collect()
        };
        // Reborrow: the same root may be passed once.
        let mut seen: Vec<(usize, Span)> = Vec::new();
        for (v, e) in vals.iter().map(|(v, e)| (v, *e)) {
            if let Some(r) = v.mut_root() {
                if let Some((_, first)) = seen.iter().find(|(x, _)| *x == r) {
                    let root = self.root_name(r);
                    self.report(errors::passed_twice(&root, e.span(), *first, name));
                } else {
                    seen.push((r, e.span()));
                }
            }
        }
        let Some(callee) = self.doc.function(name) else {
            return Val::Other;
        };
        if self.frames.iter().any(|f| f.func.name == name) {
            self.report(errors::recursive_call(name, span));
            return Val::Other;
        }
        if self.frames.len() >= MAX_INLINE_DEPTH {
            // Not followed, so not accepted: the compiler would inline it all the same.
            self.report(errors::inlined_too_deep(name, span, self.frames.len()));
            return Val::Other;
        }
        let mut inner = State {
            conditional: st.conditional,
            ..State::default()
        };
        let mut bad_arg = false;
        for (i, p) in callee.params.iter().enumerate() {
            let arg = vals.get(i).map(|(v, e)| (v.clone(), e.span()));
            let v = match (p.kind, arg) {
                (kind, Some((v, at)))
                    if crate::atomics::device_arg_refused(self, kind, &v, p, name, at) =>
                {
                    bad_arg = true;
                    v
                }
                (ParamKind::MutTensor, Some((v, at))) => {
                    if !v.is_mut() {
                        self.report(errors::expected_mut_arg(&p.name, name, at, p.span));
                        bad_arg = true;
                    }
                    v
                }
                (_, Some((v, _))) => v,
                (_, None) => self.scalar_param(p),
            };
            self.bind_var(&mut inner, &p.name, v);
            if let Some(Some(ct)) = cts.get(i) {
                let var = self.var(&p.name);
                inner.ct.insert(var, ct.clone());
            }
        }
        if bad_arg {
            return Val::Other;
        }
        let site = if self.frames.len() == 1 {
            Some(span)
        } else {
            self.frames.get(1).and_then(|f| f.call_site)
        };
        self.call_path.push(nid);
        let world = self.world.clone();
        let args_key: Vec<String> = cts
            .iter()
            .map(|c| c.as_ref().map_or_else(|| "?".to_string(), Ct::text))
            .collect();
        let (ret, ct) = self.run_function(callee, site, inner, &args_key.join(", "));
        self.world = world;
        self.call_path.pop();
        let node = self.node_ref(nid);
        match ct {
            Some(ct) => self.call_ct.insert(node, ct),
            None => self.call_ct.remove(&node),
        };
        if ret.is_mut() {
            Val::Other
        } else {
            ret
        }
    }

    // ---- expressions -------------------------------------------------------------------

    /// The value of `e`, with every integer too large to follow replaced by an opaque
    /// one (`MAX_TERM_ATOMS`).
    pub fn eval(&mut self, e: &'d Expr, st: &mut State) -> Val {
        let v = self.eval_node(e, st);
        if let Val::Tuple(_) = v {
            let cap = crate::limits::MAX_TUPLE_LEAVES;
            if !tuple_within(&v, &mut { cap }) {
                self.report(errors::tuple_too_large(e.span(), cap));
                return Val::Other;
            }
        }
        self.bounded(v)
    }

    /// `v` with each integer of more than `MAX_TERM_ATOMS` atoms (counting those nested
    /// in `//`, `%`, `cdiv`, `min`, `max`) replaced by a fresh opaque value: what the
    /// device computes is then unknown to the checker (sound: an unknown index is proved
    /// by a device check or refused), and no term grows past a size the provers walk
    /// quickly. Without the cap, `i = cdiv(i, 3)` written 12,000 times nested a term
    /// 12,000 deep, which overflowed the native stack (a segfault of the process), and
    /// `i = i // 2 + i // 3` doubled the term at each line (exponential time).
    fn bounded(&mut self, v: Val) -> Val {
        match v {
            Val::Int(p) if !p.size_at_most(MAX_TERM_ATOMS) => self.fresh_opaque(),
            Val::Tuple(vs) => Val::Tuple(vs.into_iter().map(|x| self.bounded(x)).collect()),
            v => v,
        }
    }

    fn eval_node(&mut self, e: &'d Expr, st: &mut State) -> Val {
        match e {
            Expr::Name { id, span, .. } => self.read_name(id, *span, st),
            Expr::Const { value, .. } => match value {
                cutile_kast::ConstValue::Int(n) => Val::Int(Poly::c(i128::from(*n))),
                cutile_kast::ConstValue::Bool(b) => Val::Int(Poly::c(i128::from(*b))),
                cutile_kast::ConstValue::Float(_)
                | cutile_kast::ConstValue::Str(_)
                | cutile_kast::ConstValue::None => Val::Other,
            },
            Expr::Dtype { .. } => Val::Other,
            // A hint value per architecture: compile-time values, no effect on safety.
            Expr::ByTarget { values, .. } => {
                for x in values {
                    let v = self.eval(x, st);
                    self.no_mut(&v, x);
                }
                Val::Other
            }
            Expr::Tuple { elts, .. } => {
                let vs: Vec<Val> = elts.iter().map(|x| self.eval(x, st)).collect();
                for (v, x) in vs.iter().zip(elts) {
                    if v.is_mut() {
                        let name = self.describe(x);
                        self.report(errors::untracked_mut(&name, x.span(), "put in a tuple"));
                    }
                    crate::atomics::escapes(self, v, x.span(), "put in a tuple");
                }
                Val::Tuple(vs)
            }
            Expr::Binop {
                op,
                left,
                right,
                span,
                ..
            } => {
                let l = self.eval(left, st);
                let r = self.eval(right, st);
                self.no_mut(&l, left);
                self.no_mut(&r, right);
                crate::effects::arith(self, *op, &l, &r, *span)
            }
            Expr::Unary { op, operand, .. } => {
                let v = self.eval(operand, st);
                self.no_mut(&v, operand);
                match (op, v) {
                    (_, v) if self.narrow(&v) => self.fresh_opaque(),
                    (cutile_kast::UnaryOp::Neg, Val::Int(p)) => {
                        let w = self.width_of(&p);
                        Val::Int(self.wrap(p.scale(-1), w))
                    }
                    (cutile_kast::UnaryOp::Pos, Val::Int(p)) => Val::Int(p),
                    _ => self.fresh_opaque(),
                }
            }
            Expr::Compare { left, right, .. } => {
                let l = self.eval(left, st);
                let r = self.eval(right, st);
                self.no_mut(&l, left);
                self.no_mut(&r, right);
                self.fresh_opaque()
            }
            Expr::Boolop { values, .. } => {
                for v in values {
                    let x = self.eval(v, st);
                    self.no_mut(&x, v);
                }
                self.fresh_opaque()
            }
            Expr::Ifexp {
                test,
                body,
                orelse,
                nid,
                ..
            } => {
                let t = self.eval(test, st);
                self.no_mut(&t, test);
                // A test the compiler folds: one side is evaluated, in every specialization
                // (literals), or in this world (`Const`s, split by the statement:
                // `Checker::tensor_choice`).
                let kind = self.test_kind(test, st);
                let world = self.world.clone();
                // (an arm the test of `Const`s picks is compiled in some specializations
                // only: what it computes holds in no other, `effects::materializes_in_i32`)
                let consts_arm = matches!(kind, crate::fold::Test::Consts(_));
                if let Some(taken) = self.fold_test(*nid, kind, &world) {
                    return self.eval(if taken { body } else { orelse }, st);
                }
                self.const_arms += u32::from(consts_arm);
                let a = self.eval(body, st);
                let b = self.eval(orelse, st);
                self.const_arms -= u32::from(consts_arm);
                for (v, x) in [(&a, body), (&b, orelse)] {
                    crate::atomics::escapes(
                        self,
                        v,
                        x.span(),
                        "chosen by a conditional expression",
                    );
                }
                // Carry on with the atomic tensor (one mistake, one error).
                if let Some(v) = [&a, &b].into_iter().find(|v| matches!(v, Val::Atomic(_))) {
                    return v.clone();
                }
                if a.is_mut() || b.is_mut() {
                    let which = if a.is_mut() { body } else { orelse };
                    let name = self.describe(which);
                    self.report(errors::untracked_mut(
                        &name,
                        which.span(),
                        "chosen by a conditional expression",
                    ));
                    return if a.is_mut() { a } else { b };
                }
                if a == b {
                    a
                } else {
                    if [&a, &b]
                        .iter()
                        .any(|v| matches!(v, Val::Shared(_) | Val::Sub { .. }))
                    {
                        // Neither side can be followed (an input or a partition has one
                        // owner); a choice by a test of `Const`s between names is split.
                        let name = self.describe(body);
                        self.report(errors::branch_tensors_differ(&name, test.span(), false));
                    }
                    self.fresh_opaque()
                }
            }
            Expr::Call {
                func,
                args,
                span,
                nid,
            } => crate::effects::call(self, func, args, *span, *nid, st),
            Expr::CallDevice {
                func,
                args,
                span,
                nid,
            } => self.call_device(func, args, *span, *nid, st),
            Expr::Method {
                receiver,
                method,
                args,
                span,
                nid,
            } => crate::effects::method(self, receiver, method, args, *span, *nid, st),
            Expr::Attribute { value, attr, .. } => {
                let v = self.eval(value, st);
                crate::effects::attribute(self, &v, attr)
            }
            Expr::Subscript { value, index, .. } => {
                let v = self.eval(value, st);
                let i = self.eval(index, st);
                self.no_mut(&v, value);
                match (v, i) {
                    (Val::Tuple(vs), Val::Int(p)) => match p.as_const() {
                        Some(k) if k >= 0 && (k as usize) < vs.len() => vs[k as usize].clone(),
                        Some(k) if k < 0 && ((-k) as usize) <= vs.len() => {
                            vs[vs.len() - (-k) as usize].clone()
                        }
                        _ => self.fresh_opaque(),
                    },
                    // `idx[k]` of an index minted by `iter_indices()`: the same component
                    // atom (and range) as unpacking `for i, j in z.iter_indices()` binds.
                    (Val::Minted { root, lp }, Val::Int(p)) => {
                        let comps = crate::effects::minted_components(self, root, lp);
                        let n = comps.len() as i128;
                        match p.as_const() {
                            Some(k) if (-n..n).contains(&k) => {
                                Val::Int(comps[k.rem_euclid(n) as usize].clone())
                            }
                            _ => self.fresh_opaque(),
                        }
                    }
                    _ => self.fresh_opaque(),
                }
            }
        }
    }
}

/// Does `v` hold at most `left` values, counting every element of nested tuples (and the
/// tuples, so `((), ())` nested in itself grows too)? Stops counting past it, so the walk
/// is short whatever the size.
fn tuple_within(v: &Val, left: &mut usize) -> bool {
    if *left == 0 {
        return false;
    }
    *left -= 1;
    match v {
        Val::Tuple(vs) => vs.iter().all(|x| tuple_within(x, left)),
        _ => true,
    }
}
