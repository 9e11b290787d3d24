//! Statements: blocks, assignments and their moves, branches and loops (joined to a
//! fixed point), and the opaque values that merges make. A block runs on paths, one per
//! world (`paths.rs`): a test of `Const`s reads each branch as the live one.

use super::paths::{embed, pinned, Paths, World};
use super::*;
use crate::fold::{Ct, Test};

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

    pub fn join_state(
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

    pub fn exec_block(&mut self, body: &'d [Stmt], world: World, st: State) -> Paths {
        let mut paths = vec![(world, Some(st))];
        for s in body {
            // Past the budget nothing more is walked: the kernel is refused (CT1019).
            if !self.take_step(s.span(), paths.len()) {
                return paths;
            }
            let mut next = Vec::with_capacity(paths.len());
            for (w, st) in paths {
                match st {
                    Some(st) => next.extend(self.exec_stmt(s, &w, st)),
                    None => next.push((w, None)),
                }
            }
            paths = if next.len() > 1 {
                self.collapse(next)
            } else {
                next
            };
        }
        paths
    }

    /// Count a statement walked on `paths` paths against `limits::MAX_STEPS`; false (once
    /// reported) past it. Loops walk their bodies to a fixed point and device functions are
    /// walked per call site, so nested loops, calls and `Const` tests multiply: 20 nested
    /// loops asked for millions of walks of the innermost body.
    fn take_step(&mut self, at: Span, paths: usize) -> bool {
        self.steps = self.steps.saturating_add(paths);
        if self.steps <= crate::limits::MAX_STEPS {
            return true;
        }
        if !self.out_of_steps {
            self.out_of_steps = true;
            self.report(errors::too_many_steps(at, crate::limits::MAX_STEPS));
        }
        false
    }

    /// A conditional expression of statement `s` that chooses a tensor by a test of
    /// `Const`s not yet taken in world `w` (its node and key): `s` then runs once per
    /// branch.
    fn tensor_choice(&self, s: &Stmt, w: &World, st: &State) -> Option<(u32, Rc<str>)> {
        let tensor_arm = |e: &Expr| match e {
            Expr::Name { id, .. } => self.var_id(id).and_then(|v| st.get(v)).is_some_and(|b| {
                matches!(
                    b.val,
                    Val::Mut(_) | Val::Sub { .. } | Val::Shared(_) | Val::Atomic(_)
                )
            }),
            Expr::Method { method, .. } => method == "partition_mut",
            _ => false,
        };
        let mut found = None;
        for e in stmt_exprs(s) {
            e.walk(&mut |x| {
                if let Expr::Ifexp {
                    test,
                    body,
                    orelse,
                    nid,
                    ..
                } = x
                {
                    if found.is_none() && (tensor_arm(body) || tensor_arm(orelse)) {
                        if let Test::Consts(key) = self.test_kind(test, st) {
                            if !w.contains_key(&key) && w.len() < MAX_WORLD_TESTS {
                                found = Some((*nid, key));
                            }
                        }
                    }
                }
            });
        }
        found
    }

    /// Bind the compile-time value of an assignment's target(s).
    fn bind_ct(&mut self, t: &Target, ct: Option<Ct>, st: &mut State) {
        match (t, ct) {
            (Target::Name { id, .. }, Some(ct)) => {
                let var = self.var(id);
                st.ct.insert(var, ct);
            }
            (Target::Tuple { elts, .. }, Some(Ct::Tuple(items))) if items.len() == elts.len() => {
                for (t, c) in elts.iter().zip(items) {
                    self.bind_ct(t, c, st);
                }
            }
            _ => {}
        }
    }

    fn exec_stmt(&mut self, s: &'d Stmt, w: &World, mut st: State) -> Paths {
        self.world = w.clone();
        if let Some((nid, key)) = self.tensor_choice(s, w, &st) {
            self.note_fold(nid, None);
            let mut out = self.exec_stmt(s, &pinned(w, &key, true), st.clone());
            out.extend(self.exec_stmt(s, &pinned(w, &key, false), st));
            return out;
        }
        let reach = |st: State| vec![(w.clone(), Some(st))];
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
                        let cts: Vec<Option<Ct>> =
                            vals.iter().map(|v| self.ct_of(v, &st)).collect();
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
                        for ((t, v), ct) in elts.iter().zip(vs).zip(cts) {
                            self.bind_target(t, v, &mut st);
                            self.bind_ct(t, ct, &mut st);
                        }
                        return reach(st);
                    }
                }
                let v = self.eval(value, &mut st);
                // (after the value: a device call's result is known once it ran)
                let ct = self.ct_of(value, &st);
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
                    self.bind_ct(t, ct.clone(), &mut st);
                }
                reach(st)
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
                let ct = match target {
                    Target::Name { id, .. } => {
                        let var = self.var(id);
                        Self::ct_binop(*op, st.ct.get(&var).cloned(), self.ct_of(value, &st))
                    }
                    Target::Tuple { .. } => None,
                };
                let v = crate::effects::arith(self, *op, &cur, &rhs, *span);
                self.bind_target(target, v, &mut st);
                self.bind_ct(target, ct, &mut st);
                reach(st)
            }
            Stmt::Expr { value, .. } => {
                let v = self.eval(value, &mut st);
                let _ = v;
                reach(st)
            }
            Stmt::Assert { test, .. } => {
                let v = self.eval(test, &mut st);
                self.no_mut(&v, test);
                reach(st)
            }
            Stmt::Pass { .. } => reach(st),
            Stmt::If {
                test,
                body,
                orelse,
                nid,
                ..
            } => {
                let v = self.eval(test, &mut st);
                self.no_mut(&v, test);
                let kind = self.test_kind(test, &st);
                match (kind.clone(), self.fold_test(*nid, kind, w)) {
                    // Literals (`if 0:`, a module-level flag the frontend folded): only that
                    // branch runs, in every specialization, as the lowering emits only
                    // that branch; the other is dead, not checked, so it cannot reject a
                    // kernel. A test of `Const`s taken already in this world: the same.
                    (_, Some(taken)) => {
                        return self.exec_block(if taken { body } else { orelse }, w.clone(), st)
                    }
                    // A test of `Const`s: each specialization runs one branch, for every
                    // block, so each is read as the live one, in its own world.
                    (Test::Consts(key), None) if w.len() < MAX_WORLD_TESTS => {
                        let mut out = self.exec_block(body, pinned(w, &key, true), st.clone());
                        out.extend(self.exec_block(orelse, pinned(w, &key, false), st));
                        return self.collapse(out);
                    }
                    // Past MAX_WORLD_TESTS, the device decides (the lowering emits both).
                    (Test::Consts(_), None) => self.note_runtime(*nid),
                    _ => {}
                }
                if let Some(f) = self.frame() {
                    f.runtime_flow = true;
                }
                let pre = st.conditional;
                st.conditional = true;
                let a = self.exec_block(body, w.clone(), st.clone());
                let b = self.exec_block(orelse, w.clone(), st);
                let mut out = Vec::new();
                for (w, a, b) in Self::pair_up(a, &b) {
                    self.refuse_diverging_tensors(a.as_ref(), b.as_ref(), test.span(), false);
                    // After the `if`, code runs on every path unless a branch left.
                    let left = a.is_none() || b.is_none();
                    let mut o = self.join_state(a, b, MoveWhy::Branch, s.nid());
                    if let Some(o) = o.as_mut() {
                        o.conditional = pre || left;
                    }
                    out.push((w, o));
                }
                out
            }
            Stmt::Unsafe { body, .. } => {
                if let Some(f) = self.frame() {
                    f.unsafe_depth += 1;
                }
                let out = self.exec_block(body, w.clone(), st);
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
                // Returned from inside a loop, the value is carried out of it as a device
                // value (`lowering/control_flow.py`), a constant too.
                if let Some(f) = self.frame() {
                    f.returns_in_loop |= !f.loops.is_empty();
                }
                let ct = value.as_ref().and_then(|e| self.ct_of(e, &st));
                // A tensor returned on one path and something else on another: the caller
                // would get a value that is neither (the compiler refuses the merge).
                let tensor = |v: &Val| {
                    matches!(
                        v,
                        Val::Mut(_) | Val::Sub { .. } | Val::Shared(_) | Val::Atomic(_)
                    )
                };
                let differs = self.frames.last().is_some_and(|f| {
                    f.returns
                        .iter()
                        .any(|r| r != &v && (tensor(r) || tensor(&v)) && !r.is_mut())
                });
                if differs && !v.is_mut() {
                    let func = self.frames.last().map_or("", |f| f.func.name.as_str());
                    let d = errors::returned_tensors_differ(func, s.span());
                    self.report(d);
                }
                if let Some(f) = self.frame() {
                    f.returns.push(v);
                    f.returns_ct.push((ct, w.clone()));
                }
                vec![(w.clone(), None)]
            }
            Stmt::Break { .. } | Stmt::Continue { .. } => {
                let is_break = matches!(s, Stmt::Break { .. });
                if let Some(l) = self.frame().and_then(|f| f.loops.last_mut()) {
                    if is_break {
                        l.breaks.push((w.clone(), st));
                    } else {
                        l.continues.push((w.clone(), st));
                    }
                }
                vec![(w.clone(), None)]
            }
            Stmt::For {
                target,
                iter,
                body,
                span,
                nid,
            } => {
                // `for _ in range(0):` runs no iteration in any specialization: the lowering
                // emits nothing for it, and its body is dead.
                if self.empty_literal_range(iter) {
                    self.note_fold(*nid, Some(false));
                    return reach(st);
                }
                let binder = crate::loops::loop_binder(self, target, iter, &mut st);
                let once = runs_once(iter);
                let l = (target, binder);
                self.exec_loop(*span, *nid, w, st, body, Some(l), None, once)
            }
            Stmt::While {
                test,
                body,
                span,
                nid,
            } => {
                // `while False:`: nothing runs, in any specialization. (The test is read
                // first: a device call in it is known once it ran.)
                let mut probe = st.clone();
                let _ = self.eval(test, &mut probe);
                if self.test_kind(test, &probe) == Test::Lit(false) {
                    self.note_fold(*nid, Some(false));
                    return reach(st);
                }
                self.exec_loop(*span, *nid, w, st, body, None, Some((*nid, test)), false)
            }
        }
    }

    /// A loop: iterate the body until the head state is stable (moves made in one
    /// iteration are seen by the next), then join the exits. `once`: the body surely runs
    /// (a range of constants that is not empty). `test`: a `while`'s, with its node.
    #[allow(clippy::too_many_arguments)]
    fn exec_loop(
        &mut self,
        span: Span,
        nid: u32,
        world: &World,
        st: State,
        body: &'d [Stmt],
        target: Option<(&'d Target, Val)>,
        test: Option<(u32, &'d Expr)>,
        once: bool,
    ) -> Paths {
        if let Some(f) = self.frame() {
            f.runtime_flow = true;
        }
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
        // Widen integers assigned in the body: their value at the head is unknown (and
        // not known at compile time: the compiler carries them through the loop).
        let mut first = st;
        for n in &assigned {
            let id = self.var(n);
            first.ct.remove(&id);
            if let Some(b) = first.get(id) {
                if matches!(b.val, Val::Int(_) | Val::Tuple(_) | Val::Minted { .. }) {
                    let v = self.merged_opaque(id, nid);
                    if let Some(b) = first.get_mut(id) {
                        b.val = v;
                    }
                }
            }
        }
        let before = first.clone();
        let mut head: Paths = vec![(world.clone(), Some(first))];
        let mut exits: Paths = Vec::new();
        // Every state that leaves an iteration of the last pass (fall-through, `continue`,
        // `break`), one by one: a meet would hide the ones that differ from `before`.
        let mut leaving: Vec<State> = Vec::new();
        let mut settled = false;
        for _ in 0..MAX_LOOP_PASSES {
            let mut back_all: Paths = Vec::new();
            exits.clear();
            leaving.clear();
            for (wh, sh) in &head {
                let Some(sh) = sh else {
                    back_all.push((wh.clone(), None));
                    exits.push((wh.clone(), None));
                    continue;
                };
                let mut s = sh.clone();
                s.conditional = pre || !once;
                self.world = wh.clone();
                if let Some((tid, t)) = test {
                    let v = self.eval(t, &mut s);
                    self.no_mut(&v, t);
                    let kind = self.test_kind(t, &s);
                    let _ = self.fold_test(tid, kind, wh);
                }
                let after_test = s.clone();
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
                let out = self.exec_block(body, wh.clone(), s);
                let ctx = self.frame().and_then(|f| f.loops.pop());
                let (brk, cont) = ctx.map(|c| (c.breaks, c.continues)).unwrap_or_default();
                leaving.extend(out.iter().filter_map(|(_, o)| o.clone()));
                leaving.extend(cont.iter().chain(&brk).map(|(_, c)| c.clone()));
                let mut back = out;
                for (wc, c) in cont {
                    back = self.meet(back, &embed(wh, &wc, c), MoveWhy::Assign, nid);
                }
                back_all.extend(back);
                let mut exit = vec![(wh.clone(), Some(after_test))];
                for (wb, b) in brk {
                    exit = self.meet(exit, &embed(wh, &wb, b), MoveWhy::Assign, nid);
                }
                exits.extend(exit);
            }
            let mut new_head = self.meet(head.clone(), &back_all, MoveWhy::Loop, nid);
            for (_, h) in &mut new_head {
                if let Some(h) = h {
                    h.conditional = pre;
                }
            }
            let new_head = self.collapse(new_head);
            if new_head == head {
                settled = true;
                break;
            }
            head = new_head;
        }
        // The body was read from the last head only: a head still changing means an
        // iteration the checker never read (integers are widened, so no case is known).
        if !settled {
            self.report(errors::loop_state_unsettled(span, MAX_LOOP_PASSES));
        }
        // A name may not hold one tensor before the loop and another after an iteration:
        // the compiler runs no iteration of a `while` whose test folds to false on the
        // `Const`s (no world of this loop pins it), and a run-time test may stop before
        // any, so the owner the meet follows could be the other one.
        let at = test.map_or(span, |(_, t)| t.span());
        for out in &leaving {
            self.refuse_diverging_tensors(Some(&before), Some(out), at, true);
        }
        // After the loop, code runs on every path, unless the body may have returned.
        let returned = self.frames.last().map_or(0, |f| f.returns.len()) > returns;
        for (_, x) in &mut exits {
            if let Some(x) = x {
                x.conditional = pre || returned;
            }
        }
        self.collapse(exits)
    }

    /// After an `if` on a test known only on the device, a name may not hold different
    /// tensors (outputs, sub-partitions, inputs) on the two paths: no single owner can be
    /// followed (and the compiler refuses the merge). A test the compiler folds is read
    /// branch by branch instead (`Stmt::If`).
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
        let mut b = b.clone();
        // Report every such name, not only the first.
        while let Some(i) = Self::tensors_diverge(a, &b) {
            let name = self
                .var_names
                .get(i)
                .map_or_else(String::new, |n| n.to_string());
            self.report(errors::branch_tensors_differ(&name, at, in_loop));
            if let (Some(x), Some(y)) = (a.vars.get(i), b.vars.get_mut(i)) {
                y.clone_from(x);
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
