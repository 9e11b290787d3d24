//! Worlds: the branches taken at tests of `Const`s (`fold.rs`). A specialization runs one
//! branch of `if C == 2:`, for every block, so the checker reads each branch as the live
//! one, and what follows once per branch where the two disagree on a tensor (a name bound
//! to `z` on one, to `v` on the other). A world is the value a path took for each such
//! test, by the test's key (two tests with one key, `if C == 2:` twice, take the same
//! branch); the paths of a block are a partition of the world it started in (a path that
//! returned or left a loop is there too, unreachable), so paths that meet are joined
//! world by world.

use super::*;
use crate::fold::Test;

/// The value of each test of `Const`s a path went through, by the test's key.
pub type World = Rc<BTreeMap<Rc<str>, bool>>;

/// Paths by world: the reachable state, or `None` where the path left the block.
pub type Paths = Vec<(World, Option<State>)>;

/// `w` with the test `key` taken as `taken`.
pub fn pinned(w: &World, key: &Rc<str>, taken: bool) -> World {
    let mut m = (**w).clone();
    m.insert(key.clone(), taken);
    Rc::new(m)
}

/// The world of both `a` and `b`, if they agree on every test both went through.
fn union(a: &World, b: &World) -> Option<World> {
    if b.iter().any(|(k, v)| a.get(k).is_some_and(|x| x != v)) {
        return None;
    }
    if b.keys().all(|k| a.contains_key(k)) {
        return Some(a.clone());
    }
    if a.keys().all(|k| b.contains_key(k)) {
        return Some(b.clone());
    }
    let mut m = (**a).clone();
    m.extend(b.iter().map(|(k, v)| (k.clone(), *v)));
    Some(Rc::new(m))
}

/// State `s` reached in world `w` (which refines `parent`), as a partition of `parent`:
/// the other choices at the tests `w` adds do not reach it.
pub fn embed(parent: &World, w: &World, s: State) -> Paths {
    let mut out = vec![(w.clone(), Some(s))];
    let mut prefix = (**parent).clone();
    for (k, v) in w.iter() {
        if parent.contains_key(k) {
            continue;
        }
        let mut other = prefix.clone();
        other.insert(k.clone(), !v);
        out.push((Rc::new(other), None));
        prefix.insert(k.clone(), *v);
    }
    out
}

/// The test at which `a` and `b` differ, if they differ at exactly one.
fn siblings(a: &World, b: &World) -> Option<Rc<str>> {
    if a.len() != b.len() || a.keys().ne(b.keys()) {
        return None;
    }
    let mut differ = a.iter().zip(b.iter()).filter(|((_, x), (_, y))| x != y);
    let ((k, _), _) = differ.next()?;
    differ.next().is_none().then(|| k.clone())
}

impl<'d> Checker<'d> {
    /// The node `nid` of the function being walked, in this inlined instance.
    pub fn node_ref(&self, nid: u32) -> NodeRef {
        NodeRef {
            path: self.call_path.clone(),
            nid,
        }
    }

    /// The test at `nid` is folded: `Some(b)`, its value was computed (from literals) and
    /// only branch `b` was read; `None`, a value of the `Const`s, each branch was read as
    /// the live one. A test computed to different values on different paths (a name bound
    /// in the two worlds of another test) is folded to the branch the compiler computes:
    /// each path read the branch its own value selects.
    pub fn note_fold(&mut self, nid: u32, taken: Option<bool>) {
        let node = self.node_ref(nid);
        match self.folded.get(&node) {
            None => {
                self.folded.insert(node, taken);
            }
            Some(seen) if *seen != taken => {
                self.folded.insert(node, None);
            }
            Some(_) => {}
        }
    }

    /// The test at `nid` was read as known only on the device on some path (a name that
    /// holds a compile-time value on one path and not on another): the compiler must not
    /// fold it, and the checker read both of its branches there.
    pub fn note_runtime(&mut self, nid: u32) {
        let node = self.node_ref(nid);
        self.runtime_tests.insert(node);
    }

    /// Note how the test at `nid` was read; the branch the checker follows, if one.
    pub fn fold_test(&mut self, nid: u32, kind: Test, w: &World) -> Option<bool> {
        match kind {
            Test::Lit(b) => {
                self.note_fold(nid, Some(b));
                Some(b)
            }
            Test::Consts(key) => {
                self.note_fold(nid, None);
                w.get(&key).copied()
            }
            Test::Runtime => {
                self.note_runtime(nid);
                None
            }
        }
    }

    /// The first variable that names a different tensor (an output, a sub-partition, an
    /// input) in `a` and in `b`.
    pub fn tensors_diverge(a: &State, b: &State) -> Option<usize> {
        let tensor = |v: &Val| {
            matches!(
                v,
                Val::Mut(_) | Val::Sub { .. } | Val::Shared(_) | Val::Atomic(_)
            )
        };
        a.vars.iter().zip(&b.vars).position(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => x.val != y.val && (tensor(&x.val) || tensor(&y.val)),
            _ => false,
        })
    }

    /// Paths `a` and `b` (partitions of one world) side by side, world by world.
    pub fn pair_up(a: Paths, b: &Paths) -> Vec<(World, Option<State>, Option<State>)> {
        let mut out = Vec::with_capacity(a.len().max(b.len()));
        for (wa, sa) in a {
            for (wb, sb) in b {
                if let Some(w) = union(&wa, wb) {
                    out.push((w, sa.clone(), sb.clone()));
                }
            }
        }
        out.sort_by(|x, y| x.0.cmp(&y.0));
        out
    }

    /// Paths `a` and `b` (partitions of one world) met: joined world by world.
    pub fn meet(&mut self, a: Paths, b: &Paths, why: MoveWhy, at: u32) -> Paths {
        Self::pair_up(a, b)
            .into_iter()
            .map(|(w, x, y)| (w, self.join_state(x, y, why, at)))
            .collect()
    }

    /// Join again the two worlds of a folded test where no name holds a different tensor
    /// in each (what follows is then read once, as before worlds; the values that differ
    /// stay known at compile time, as the compiler keeps the live branch's). Paths that
    /// both left the block join too.
    pub fn collapse(&mut self, mut paths: Paths) -> Paths {
        'again: loop {
            for i in 0..paths.len() {
                for j in i + 1..paths.len() {
                    let Some(key) = siblings(&paths[i].0, &paths[j].0) else {
                        continue;
                    };
                    let ok = match (&paths[i].1, &paths[j].1) {
                        (None, None) => true,
                        (Some(a), Some(b)) => Self::tensors_diverge(a, b).is_none(),
                        _ => false,
                    };
                    if !ok {
                        continue;
                    }
                    let (_, sj) = paths.remove(j);
                    let (wi, si) = paths.remove(i);
                    let mut parent = (*wi).clone();
                    let first_taken = parent.remove(&key).unwrap_or(true);
                    let s = match (si, sj) {
                        (Some(a), Some(b)) if first_taken => Some(self.join_folded(a, b, &key)),
                        (Some(a), Some(b)) => Some(self.join_folded(b, a, &key)),
                        _ => None,
                    };
                    paths.push((Rc::new(parent), s));
                    continue 'again;
                }
            }
            break;
        }
        paths.sort_by(|x, y| x.0.cmp(&y.0));
        paths
    }

    /// The two worlds of test `key` meet (`yes` where it holds, `no` where it does not):
    /// each specialization has one. A value known at compile time in both stays known
    /// (`yes`'s value if the test holds, else `no`'s).
    fn join_folded(&mut self, yes: State, no: State, key: &str) -> State {
        let mut ct = BTreeMap::new();
        for (k, v) in &yes.ct {
            match no.ct.get(k) {
                Some(w) if w == v => {
                    ct.insert(*k, v.clone());
                }
                Some(w) => {
                    if let (Some(a), Some(b)) = (v.as_key(), w.as_key()) {
                        let phi = format!("({a} if {key} else {b})");
                        ct.insert(*k, crate::fold::Ct::key(phi));
                    }
                }
                None if no.get(*k).is_none() => {
                    ct.insert(*k, v.clone());
                }
                None => {}
            }
        }
        for (k, v) in &no.ct {
            if yes.get(*k).is_none() {
                ct.insert(*k, v.clone());
            }
        }
        let at = self.instance_of_key(key);
        let mut s = self
            .join_state(Some(yes), Some(no), MoveWhy::Branch, at)
            .unwrap_or_default();
        s.ct = ct;
        s
    }

    /// A merge point's id for the values the worlds of test `key` join (their opaque
    /// values are stable across loop passes, as `join_state`'s are per node).
    fn instance_of_key(&mut self, key: &str) -> u32 {
        let n = self.fold_keys.len() as u32;
        *self.fold_keys.entry(key.into()).or_insert(u32::MAX - 1 - n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(pins: &[(&str, bool)]) -> World {
        Rc::new(pins.iter().map(|(k, v)| (Rc::from(*k), *v)).collect())
    }

    #[test]
    fn a_state_reached_in_a_refined_world_partitions_its_parent() {
        let parent = world(&[("a", true)]);
        let w = world(&[("a", true), ("b", false), ("c", true)]);
        let paths = embed(&parent, &w, State::default());
        let worlds: Vec<World> = paths.iter().map(|(w, _)| w.clone()).collect();
        // reached in {b: false, c: true}; not in {b: true}, nor in {b: false, c: false}
        assert_eq!(
            worlds,
            vec![
                w.clone(),
                world(&[("a", true), ("b", true)]),
                world(&[("a", true), ("b", false), ("c", false)]),
            ]
        );
        assert!(paths[0].1.is_some() && paths[1].1.is_none() && paths[2].1.is_none());
    }

    #[test]
    fn worlds_meet_where_they_agree() {
        let (t, f) = (world(&[("k", true)]), world(&[("k", false)]));
        assert_eq!(union(&t, &world(&[])), Some(t.clone()));
        assert_eq!(union(&t, &f), None);
        let both = union(&t, &world(&[("j", false)])).map(|w| (*w).clone());
        assert_eq!(both.map(|w| w.len()), Some(2));
        assert_eq!(siblings(&t, &f).as_deref(), Some("k"));
        let tj = world(&[("k", true), ("j", true)]);
        let fj = world(&[("k", false), ("j", false)]);
        assert_eq!(siblings(&tj, &fj), None); // two tests differ
        assert_eq!(siblings(&t, &tj), None);
    }
}
