//! Statements: blocks, assignments and their moves, branches and loops (joined to a
//! fixed point), and the opaque values that merges make.

use super::*;

impl<'d> Checker<'d> {
    /// A device value the checker does not follow. Its type is not known (a tile's value,
    /// a `u8`, an `i16` sum), so it counts as narrow: arithmetic on it is not followed
    /// either (`Checker::narrow`).
    pub fn fresh_opaque(&mut self) -> Val {
        self.next_opaque += 1;
        self.narrow_ids.insert(self.next_opaque);
        Val::Int(Poly::atom(Atom::Opaque(self.next_opaque)))
    }

    /// Does `v` hold an integer of a type narrower than 32 bits or unsigned, or of a type
    /// the checker does not know? Such a value wraps (or compares, or widens) unlike the
    /// polynomial over the integers modulo 2^32 that the provers reason in: `u8` 100 + 200
    /// is 44 on the device, and `(w + 200) - w` is not 200. So every operation with such an
    /// operand gives a fresh opaque value, which keeps the narrowness (the operation's
    /// type is at most as wide as its widest operand's, and may be unsigned).
    pub fn narrow(&self, v: &Val) -> bool {
        match v {
            Val::Int(p) => p.any_atom(&|a| match a {
                Atom::Opaque(id) => self.narrow_ids.contains(id),
                Atom::Scalar(n) => self.narrow_scalars.contains(n),
                _ => false,
            }),
            Val::Tuple(vs) => vs.iter().any(|x| self.narrow(x)),
            _ => false,
        }
    }

    /// Does `p` hold a value the device surely computes in 32 bits or more: a block id,
    /// a loop variable or an `i32`/`i64` scalar takes part (the types of device integers
    /// only widen). Not a grid or tensor extent or a tile count (the compiler folds them
    /// where the shape is static or a `Const`'s, and a compile-time value takes its
    /// partner's type), nor an opaque (it may stand for such a value).
    pub fn wide_device(&self, p: &Poly) -> bool {
        p.any_atom(&|a| match a {
            Atom::BlockId(_) | Atom::Loop(_) => true,
            Atom::Scalar(n) => {
                !self.narrow_scalars.contains(n) && self.ranges.scalar_bits.contains_key(n)
            }
            _ => false,
        })
    }

    /// A deterministic opaque value for variable `var` merged at node `at` (so loop joins
    /// converge); one per inlined instance of the merge point.
    fn merged_opaque(&mut self, var: u32, at: u32) -> Val {
        let key = (var, self.instance(at, 0));
        let id = match self.opaque_ids.get(&key) {
            Some(id) => *id,
            None => {
                self.next_opaque += 1;
                self.opaque_ids.insert(key, self.next_opaque);
                // A merge of a name's values: the checker does not track the name's type
                // (an `i8` carried round a loop stays `i8`), so the merge counts as narrow.
                self.narrow_ids.insert(self.next_opaque);
                self.next_opaque
            }
        };
        Val::Int(Poly::atom(Atom::Opaque(id)))
    }

    fn join_at(
        &mut self,
        a: Option<State>,
        b: Option<State>,
        why: MoveWhy,
        at: u32,
    ) -> Option<State> {
        let mut names: Vec<u32> = Vec::new();
        let mut opaque = |n: u32| {
            names.push(n);
            Val::Int(Poly::atom(Atom::Opaque(u32::MAX)))
        };
        let joined = join_opt(a, b, why, &mut opaque);
        // Replace the placeholder by a stable opaque per (name, merge point).
        joined.map(|mut st| {
            for n in names {
                let v = self.merged_opaque(n, at);
                if let Some(b) = st.get_mut(n) {
                    if b.val == Val::Int(Poly::atom(Atom::Opaque(u32::MAX))) {
                        b.val = v;
                    }
                }
            }
            st
        })
    }

    pub fn frame(&mut self) -> Option<&mut Frame<'d>> {
        self.frames.last_mut()
    }

    pub fn in_unsafe(&self) -> bool {
        self.frames
            .last()
            .is_some_and(|f| f.unsafe_depth > 0 || f.func.is_unsafe)
    }

    pub fn root_name(&self, r: usize) -> String {
        self.roots
            .get(r)
            .map(|x| x.name.clone())
            .unwrap_or_default()
    }

    // ---- statements ------------------------------------------------------------------

    pub fn exec_block(&mut self, body: &'d [Stmt], mut st: State) -> Option<State> {
        for s in body {
            st = self.exec_stmt(s, st)?;
        }
        Some(st)
    }

    fn exec_stmt(&mut self, s: &'d Stmt, mut st: State) -> Option<State> {
        let header_hi = match s {
            Stmt::If { test, .. } | Stmt::While { test, .. } => test.span().hi,
            Stmt::For { iter, .. } => iter.span().hi,
            Stmt::Unsafe { span, .. } => span.lo,
            other => other.span().hi,
        };
        if let Some(f) = self.frame() {
            f.stmt_hi = header_hi;
        }
        match s {
            Stmt::Assign {
                targets,
                value,
                span,
                ..
            } => {
                if let ([Target::Tuple { elts, .. }], Expr::Tuple { elts: vals, .. }) =
                    (targets.as_slice(), value)
                {
                    if elts.len() == vals.len() {
                        // Pairwise: evaluate every value first (Python semantics), then bind.
                        let vs: Vec<Val> = vals.iter().map(|v| self.eval(v, &mut st)).collect();
                        // `a, b = z, z` would leave two live names for one output.
                        let mut roots: Vec<usize> = Vec::new();
                        for (v, e) in vs.iter().zip(vals) {
                            if let Some(r) = v.mut_root() {
                                if roots.contains(&r) {
                                    let name = self.describe(e);
                                    self.report(errors::untracked_mut(
                                        &name,
                                        e.span(),
                                        "bound to two names at once",
                                    ));
                                }
                                roots.push(r);
                            }
                        }
                        for (v, e) in vs.iter().zip(vals) {
                            self.move_out(e, v, &mut st);
                        }
                        for (t, v) in elts.iter().zip(vs) {
                            self.bind_target(t, v, &mut st);
                        }
                        return Some(st);
                    }
                }
                let v = self.eval(value, &mut st);
                if v.is_mut() && targets.len() > 1 {
                    let name = self.describe(value);
                    self.report(errors::untracked_mut(
                        &name,
                        *span,
                        "bound to two names at once",
                    ));
                }
                self.move_out(value, &v, &mut st);
                for t in targets {
                    self.bind_target(t, v.clone(), &mut st);
                }
                Some(st)
            }
            Stmt::AugAssign {
                target,
                op,
                value,
                span,
                ..
            } => {
                let cur = match target {
                    Target::Name { id, span } => self.read_name(id, *span, &mut st),
                    Target::Tuple { .. } => Val::Other,
                };
                crate::atomics::escapes(self, &cur, target.span(), "updated in place");
                if cur.is_mut() {
                    let name = match target {
                        Target::Name { id, .. } => id.clone(),
                        Target::Tuple { .. } => String::new(),
                    };
                    self.report(errors::untracked_mut(
                        &name,
                        target.span(),
                        "updated in place",
                    ));
                }
                let rhs = self.eval(value, &mut st);
                let v = crate::effects::arith(self, *op, &cur, &rhs, *span);
                self.bind_target(target, v, &mut st);
                Some(st)
            }
            Stmt::Expr { value, .. } => {
                let v = self.eval(value, &mut st);
                let _ = v;
                Some(st)
            }
            Stmt::Assert { test, .. } => {
                let v = self.eval(test, &mut st);
                self.no_mut(&v, test);
                Some(st)
            }
            Stmt::Pass { .. } => Some(st),
            Stmt::If {
                test, body, orelse, ..
            } => {
                let v = self.eval(test, &mut st);
                self.no_mut(&v, test);
                // `if True:` / `if False:` (a literal, or a module-level flag the frontend
                // folded): only that branch runs, as the lowering emits only that branch;
                // the other is not checked either, so it cannot reject a kernel.
                if let Expr::Const {
                    value: cutile_kast::ConstValue::Bool(taken),
                    ..
                } = test
                {
                    return self.exec_block(if *taken { body } else { orelse }, st);
                }
                let pre = st.conditional;
                st.conditional = true;
                let a = self.exec_block(body, st.clone());
                let b = self.exec_block(orelse, st);
                self.refuse_diverging_tensors(a.as_ref(), b.as_ref(), test.span(), false);
                // After the `if`, code runs on every path unless a branch left.
                let left = a.is_none() || b.is_none();
                let mut out = self.join_at(a, b, MoveWhy::Branch, s.nid());
                if let Some(o) = out.as_mut() {
                    o.conditional = pre || left;
                }
                out
            }
            Stmt::Unsafe { body, .. } => {
                if let Some(f) = self.frame() {
                    f.unsafe_depth += 1;
                }
                let out = self.exec_block(body, st);
                if let Some(f) = self.frame() {
                    f.unsafe_depth = f.unsafe_depth.saturating_sub(1);
                }
                out
            }
            Stmt::Return { value, .. } => {
                let v = match value {
                    Some(e) => {
                        let v = self.eval(e, &mut st);
                        if v.is_mut() {
                            let name = self.describe(e);
                            self.report(errors::untracked_mut(&name, e.span(), "returned"));
                        }
                        crate::atomics::escapes(self, &v, e.span(), "returned");
                        v
                    }
                    None => Val::Other,
                };
                if let Some(f) = self.frame() {
                    f.returns.push(v);
                }
                None
            }
            Stmt::Break { .. } | Stmt::Continue { .. } => {
                let is_break = matches!(s, Stmt::Break { .. });
                if let Some(l) = self.frame().and_then(|f| f.loops.last_mut()) {
                    if is_break {
                        l.breaks.push(st);
                    } else {
                        l.continues.push(st);
                    }
                }
                None
            }
            Stmt::For {
                target,
                iter,
                body,
                span,
                ..
            } => {
                let binder = crate::loops::loop_binder(self, target, iter, &mut st);
                let once = runs_once(iter);
                Some(self.exec_loop(*span, s.nid(), st, body, Some((target, binder)), None, once))
            }
            Stmt::While {
                test, body, span, ..
            } => Some(self.exec_loop(*span, s.nid(), st, body, None, Some(test), false)),
        }
    }

    /// A loop: iterate the body until the head state is stable (moves made in one
    /// iteration are seen by the next), then join the exits. `once`: the body surely runs
    /// (a range of constants that is not empty).
    #[allow(clippy::too_many_arguments)]
    fn exec_loop(
        &mut self,
        span: Span,
        nid: u32,
        st: State,
        body: &'d [Stmt],
        target: Option<(&'d Target, Val)>,
        test: Option<&'d Expr>,
        once: bool,
    ) -> State {
        let pre = st.conditional;
        let returns = self.frames.last().map_or(0, |f| f.returns.len());
        let mut assigned = BTreeSet::new();
        walk_stmts(body, &mut |s| match s {
            Stmt::Assign { targets, .. } => {
                targets.iter().for_each(|t| target_names(t, &mut assigned))
            }
            Stmt::AugAssign { target, .. } | Stmt::For { target, .. } => {
                target_names(target, &mut assigned)
            }
            _ => {}
        });
        // Widen integers assigned in the body: their value at the head is unknown.
        let mut head = st;
        for n in &assigned {
            let id = self.var(n);
            if let Some(b) = head.get(id) {
                if matches!(b.val, Val::Int(_) | Val::Tuple(_) | Val::Minted { .. }) {
                    let v = self.merged_opaque(id, nid);
                    if let Some(b) = head.get_mut(id) {
                        b.val = v;
                    }
                }
            }
        }
        let before = head.clone();
        let mut breaks = Vec::new();
        let mut after_test = head.clone();
        let mut last_back: Vec<State> = Vec::new();
        for _ in 0..MAX_LOOP_PASSES {
            let mut s = head.clone();
            s.conditional = pre || !once;
            if let Some(t) = test {
                let v = self.eval(t, &mut s);
                self.no_mut(&v, t);
            }
            after_test = s.clone();
            if let Some((t, v)) = &target {
                self.bind_target(t, v.clone(), &mut s);
            }
            if let Some(f) = self.frame() {
                f.loops.push(LoopCtx {
                    span,
                    breaks: Vec::new(),
                    continues: Vec::new(),
                });
            }
            let out = self.exec_block(body, s);
            let ctx = self.frame().and_then(|f| f.loops.pop());
            let (brk, cont) = ctx.map(|c| (c.breaks, c.continues)).unwrap_or_default();
            breaks = brk;
            // Every state that goes round again, one by one (a join would hide the ones
            // that differ from `before`).
            last_back = out.iter().chain(&cont).cloned().collect();
            let mut back = out;
            for c in cont {
                back = self.join_at(back, Some(c), MoveWhy::Assign, nid);
            }
            let mut new_head = match back {
                Some(b) => self
                    .join_at(Some(head.clone()), Some(b), MoveWhy::Loop, nid)
                    .unwrap_or_else(|| head.clone()),
                None => head.clone(),
            };
            new_head.conditional = head.conditional;
            if new_head == head {
                break;
            }
            head = new_head;
        }
        // A name may not hold one tensor before the loop and another after an iteration:
        // the compiler runs no iteration of `while False:` (a test folded on `Const`s),
        // which this checker does not fold, so the owner it follows could be the other one.
        let at = test.map_or(span, |t| t.span());
        for out in last_back.iter().chain(&breaks) {
            self.refuse_diverging_tensors(Some(&before), Some(out), at, true);
        }
        let mut exit = Some(after_test);
        for b in breaks {
            exit = self.join_at(exit, Some(b), MoveWhy::Assign, nid);
        }
        let mut out = exit.unwrap_or(head);
        // After the loop, code runs on every path, unless the body may have returned.
        let returned = self.frames.last().map_or(0, |f| f.returns.len()) > returns;
        out.conditional = pre || returned;
        out
    }

    /// After an `if`, a name may not hold different tensors (outputs, sub-partitions,
    /// inputs) on the two paths: the compiler folds a constant test (`if 0:`, `if C == 2:`)
    /// to one branch, which this checker does not, so the owner it would follow could be
    /// the other branch's.
    /// `in_loop`: `a` is the state before a loop, `b` one after an iteration of it.
    fn refuse_diverging_tensors(
        &mut self,
        a: Option<&State>,
        b: Option<&State>,
        at: Span,
        in_loop: bool,
    ) {
        let (Some(a), Some(b)) = (a, b) else {
            return;
        };
        let tensor = |v: &Val| {
            matches!(
                v,
                Val::Mut(_) | Val::Sub { .. } | Val::Shared(_) | Val::Atomic(_)
            )
        };
        for (i, (x, y)) in a.vars.iter().zip(&b.vars).enumerate() {
            let (Some(x), Some(y)) = (x.as_ref(), y.as_ref()) else {
                continue;
            };
            if x.val != y.val && (tensor(&x.val) || tensor(&y.val)) {
                let name = self
                    .var_names
                    .get(i)
                    .map_or_else(String::new, |n| n.to_string());
                self.report(errors::branch_tensors_differ(&name, at, in_loop));
            }
        }
    }

    pub fn bind_target(&mut self, t: &Target, v: Val, st: &mut State) {
        match t {
            Target::Name { id, .. } => self.bind_var(st, id, v),
            Target::Tuple { elts, span } => match v {
                Val::Tuple(vs) if vs.len() == elts.len() => {
                    for (t, v) in elts.iter().zip(vs) {
                        self.bind_target(t, v, st);
                    }
                }
                // `for i, j in z.iter_indices()`: the components of the minted index.
                Val::Minted { root, lp }
                    if self
                        .roots
                        .get(root)
                        .is_some_and(|r| r.tile.len() == elts.len()) =>
                {
                    let comps = crate::effects::minted_components(self, root, lp);
                    for (t, p) in elts.iter().zip(comps) {
                        self.bind_target(t, Val::Int(p), st);
                    }
                }
                v => {
                    if v.is_mut() {
                        self.report(errors::untracked_mut("", *span, "unpacked"));
                    }
                    crate::atomics::escapes(self, &v, *span, "unpacked");
                    for t in elts {
                        let o = self.fresh_opaque();
                        self.bind_target(t, o, st);
                    }
                }
            },
        }
    }

    /// `w = z`: the name `z` no longer owns its tensor.
    pub fn move_out(&mut self, e: &Expr, v: &Val, st: &mut State) {
        if let (Expr::Name { id, span, .. }, true) = (e, v.is_mut()) {
            let var = self.var(id);
            if let Some(b) = st.get_mut(var) {
                b.moved = Some(Move {
                    span: *span,
                    why: MoveWhy::Assign,
                });
            }
        }
    }

    /// A `Mut` value in a position the analysis cannot follow.
    pub fn no_mut(&mut self, v: &Val, e: &Expr) {
        if v.is_mut() {
            let name = self.describe(e);
            self.report(errors::untracked_mut(
                &name,
                e.span(),
                "used as a plain value",
            ));
        }
        crate::atomics::escapes(self, v, e.span(), "used as a plain value");
    }
}

/// `range(a, b, c)` of integer literals that runs at least once.
fn runs_once(iter: &Expr) -> bool {
    let Expr::Call { func, args, .. } = iter else {
        return false;
    };
    let lit = |e: &Expr| match e {
        Expr::Const {
            value: cutile_kast::ConstValue::Int(n),
            ..
        } => Some(*n),
        _ => None,
    };
    match (func.as_str(), args.as_slice()) {
        ("builtins.range", [a, b, c]) => match (lit(a), lit(b), lit(c)) {
            (Some(a), Some(b), Some(c)) => (c > 0 && a < b) || (c < 0 && a > b),
            _ => false,
        },
        _ => false,
    }
}
