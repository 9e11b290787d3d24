//! The handle slab: a launch names each tensor by id and slot ([`HandleAt`]); slots are
//! reused after a release, so a slot must never stand for a handle other than the one its
//! tensor was given (ids are never reused).

use super::*;
use std::collections::HashMap;

fn contiguous(n: u64, isz: u64) -> Region {
    Region::new(0, vec![n], vec![1], isz)
}

#[test]
fn a_reused_slot_never_stands_for_the_released_handle() {
    let mut r = HostRegistry::new();
    let k: Arc<str> = Arc::from("add");
    let s = r.new_storage(4096);
    let a = r.new_handle_at(s, contiguous(16, 4)).unwrap();
    r.release_handle(a.id).unwrap();
    let b = r.new_handle_at(s, contiguous(16, 4)).unwrap();
    assert_eq!(b.slot, a.slot, "the freed slot is reused");
    assert_ne!(b.id, a.id);
    // the released tensor's (id, slot) is refused as released; its slot's new handle stays
    // live and is not moved
    let e = r.move_in_launch(1, &k, &[(a, true)]).unwrap_err();
    assert_eq!(e.code, "CT5003");
    assert_eq!(r.state(b.id), Some(&HandleState::Live));
    assert_eq!(r.give_back(1), 0);
    // a stale slot in a launch with a live handle: all or nothing
    let e = r
        .move_in_launch(2, &k, &[(b, false), (a, false)])
        .unwrap_err();
    assert_eq!(e.code, "CT5003");
    assert_eq!(r.state(b.id), Some(&HandleState::Live));
    // a wrong slot hint for a live handle is found by id
    let c = r.new_handle_at(s, contiguous(16, 4)).unwrap();
    let wrong = HandleAt {
        id: c.id,
        slot: b.slot,
    };
    r.move_in_launch(3, &k, &[(wrong, true)]).unwrap();
    assert_eq!(r.state(c.id), Some(&HandleState::Moved { op: 3 }));
    assert_eq!(r.state(b.id), Some(&HandleState::Live));
    assert_eq!(r.give_back(3), 1);
    let far = HandleAt {
        id: c.id,
        slot: 1 << 20,
    };
    r.move_in_launch(4, &k, &[(far, true)]).unwrap();
    assert_eq!(r.give_back(4), 1);
}

#[test]
fn a_handle_released_in_flight_keeps_its_slot_until_given_back() {
    let mut r = HostRegistry::new();
    let k: Arc<str> = Arc::from("add");
    let s = r.new_storage(4096);
    let z = r.new_handle_at(s, contiguous(16, 4)).unwrap();
    r.move_in_launch(1, &k, &[(z, true)]).unwrap();
    r.release_handle(z.id).unwrap(); // its Python object died while the op runs
    assert_eq!(r.release_handle(z.id).unwrap_err().code, "CT5003");
    let y = r.new_handle_at(s, contiguous(16, 4)).unwrap();
    assert_ne!(y.slot, z.slot, "a zombie's slot is not free");
    assert_eq!(r.storage_live_handles(s).unwrap(), 2);
    assert_eq!(r.give_back(1), 0); // the zombie goes, not handed back
    assert_eq!(r.storage_live_handles(s).unwrap(), 1);
    let x = r.new_handle_at(s, contiguous(16, 4)).unwrap();
    assert_eq!(x.slot, z.slot);
    assert_eq!(
        r.move_in_launch(2, &k, &[(z, true)]).unwrap_err().code,
        "CT5003"
    );
    assert_eq!(r.state(x.id), Some(&HandleState::Live));
    assert_eq!(r.handle_count(), 2);
}

/// What a handle is in the model: live, moved into an op (released meanwhile or not), or
/// dropped with an op that never ran.
#[derive(Debug, Clone, Copy, PartialEq)]
enum M {
    Live,
    Moved(u64, bool),
    Dropped,
}

#[derive(Debug, Clone)]
enum Step {
    New,
    Release(usize),
    Launch(Vec<(usize, bool)>),
    GiveBack(usize),
    Abandon(usize),
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        3 => Just(Step::New),
        2 => (0usize..64).prop_map(Step::Release),
        4 => proptest::collection::vec((0usize..64, any::<bool>()), 1..4).prop_map(Step::Launch),
        2 => (0usize..64).prop_map(Step::GiveBack),
        1 => (0usize..64).prop_map(Step::Abandon),
    ]
}

proptest::proptest! {
    /// Any sequence of tensors made and released, launches (naming tensors by id and
    /// slot, released ones included, whose slots may hold new handles), hand-backs and
    /// abandons leaves every handle in the state a map by id says: a reused slot never
    /// lets a launch move, hand back or drop a handle it was not given.
    #[test]
    fn slots_agree_with_a_map_by_id(steps in proptest::collection::vec(step(), 1..80)) {
        let mut r = HostRegistry::new();
        let k: Arc<str> = Arc::from("k");
        let mut made: Vec<HandleAt> = Vec::new();
        let mut model: HashMap<u64, M> = HashMap::new();
        let mut pending: Vec<u64> = Vec::new();
        let mut next_op = 0u64;
        for st in steps {
            match st {
                Step::New => {
                    // (each on its own storage: no overlap refusals to model)
                    let s = r.new_storage(64);
                    let h = r.new_handle_at(s, contiguous(16, 4)).unwrap();
                    made.push(h);
                    model.insert(h.id, M::Live);
                }
                Step::Release(i) if !made.is_empty() => {
                    let h = made[i % made.len()];
                    let ok = r.release_handle(h.id).is_ok();
                    match model.get(&h.id).copied() {
                        None | Some(M::Moved(_, true)) => proptest::prop_assert!(!ok),
                        Some(M::Moved(op, false)) => {
                            proptest::prop_assert!(ok);
                            model.insert(h.id, M::Moved(op, true));
                        }
                        Some(_) => {
                            proptest::prop_assert!(ok);
                            model.remove(&h.id);
                        }
                    }
                }
                Step::Launch(args) if !made.is_empty() => {
                    next_op += 1;
                    let args: Vec<(HandleAt, bool)> =
                        args.iter().map(|&(i, m)| (made[i % made.len()], m)).collect();
                    let live = args.iter().all(|(h, _)| model.get(&h.id) == Some(&M::Live));
                    let dup = args.iter().enumerate().any(|(i, (a, ma))| {
                        args[i + 1..].iter().any(|(b, mb)| a.id == b.id && (*ma || *mb))
                    });
                    let ok = r.move_in_launch(next_op, &k, &args).is_ok();
                    proptest::prop_assert_eq!(ok, live && !dup);
                    if ok {
                        for (h, _) in &args {
                            model.insert(h.id, M::Moved(next_op, false));
                        }
                        pending.push(next_op);
                    }
                }
                Step::GiveBack(i) | Step::Abandon(i) if !pending.is_empty() => {
                    let op = pending.remove(i % pending.len());
                    let abandon = matches!(st, Step::Abandon(_));
                    let n = if abandon { r.abandon(op, &[]) } else { r.give_back(op) };
                    let mut want = 0;
                    for (id, m) in model.clone() {
                        match m {
                            M::Moved(o, true) if o == op => {
                                model.remove(&id);
                            }
                            M::Moved(o, false) if o == op => {
                                want += 1;
                                model.insert(id, if abandon { M::Dropped } else { M::Live });
                            }
                            _ => {}
                        }
                    }
                    proptest::prop_assert_eq!(n, want);
                }
                _ => {}
            }
            proptest::prop_assert_eq!(r.handle_count(), model.len());
            for h in &made {
                let got = r.state(h.id).map(|s| match s {
                    HandleState::Live => M::Live,
                    HandleState::Moved { op } => M::Moved(*op, false),
                    HandleState::Dropped(_) => M::Dropped,
                    HandleState::Consumed { .. } => unreachable!(),
                });
                let want = model.get(&h.id).map(|m| match m {
                    M::Moved(op, _) => M::Moved(*op, false),
                    m => *m,
                });
                proptest::prop_assert_eq!(got, want, "handle {}", h.id);
            }
        }
    }
}
