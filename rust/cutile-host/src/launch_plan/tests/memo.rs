//! The memo of launch decisions: a call whose arguments agree with a remembered call's on
//! their launch facts gets exactly the decisions binding it would make (bind, grid, launch
//! predicates), whatever memory the arguments are; anything else misses.

use super::*;

/// `k(z: Mut[Tensor[f32, ["B", "C"]]], x: Tensor[f32, [-1, -1]], s: f32, B, C)`, with the
/// launch predicates `grid(0) <= cdiv(dim(x, 0), B)` and `B <= s`.
fn memo_plan() -> LaunchPlan {
    let scalar_bound = Pred::clause(
        atom(F::Const("B".into())),
        CmpOp::Le,
        atom(F::Scalar("s".into())),
        "B <= s".into(),
    );
    plan_of(
        &[
            param("z", "mut_tensor", "f32", &[n("B"), n("C")]),
            param("x", "tensor", "f32", &[DimSpec::Int(-1), DimSpec::Int(-1)]),
            param("s", "scalar", "f32", &[]),
        ],
        &[("B".into(), ConstType::Int), ("C".into(), ConstType::Int)],
        &[],
        vec![grid_fits("x"), scalar_bound],
        132,
    )
}

/// A 2-D f32 view with these extents, strides, tile and placement.
fn placed(
    handle: u64,
    address: u64,
    offset: i64,
    shape: [i64; 2],
    strides: [i64; 2],
    tile: Option<[i64; 2]>,
) -> TensorDesc {
    TensorDesc::new(View {
        storage: handle,
        handle,
        address,
        offset,
        shape: shape.to_vec(),
        strides: strides.to_vec(),
        dtype: "f32".into(),
        itemsize: 4,
        tile: tile.map(|t| t.to_vec()),
        num_blocks: None,
        device: 0,
    })
    .unwrap()
}

type Decided = (Bound, [u64; 3]);
type Decisions = Result<Decided, Refusal>;

fn decide(plan: &LaunchPlan, args: &[Arg<'_>]) -> Decisions {
    let bound = plan.bind(args, &[None, None])?;
    let grid = plan.grid("k", args, &bound.consts)?;
    plan.check_predicates("k", args, &bound, grid, &mut PredicateCache::default())?;
    Ok((bound, grid))
}

fn layout() -> impl Strategy<Value = ([i64; 2], [i64; 2], [i64; 2])> {
    (
        [1i64..40, 1i64..40],
        [
            prop_oneof![Just(1i64), 1i64..50],
            prop_oneof![Just(1i64), 1i64..4],
        ],
        [1i64..9, 1i64..9],
    )
}

proptest! {
    /// Two calls whose arguments have the same launch facts decide the same, wherever
    /// their memory is; and the memo gives back what the first call decided.
    #[test]
    fn same_launch_facts_decide_the_same(
        (zs, zst, zt) in layout(),
        (xs, xst, _) in layout(),
        s in prop_oneof![Just(4.0f64), 0.0f64..40.0],
        moved in (1u64..1000, 0u64..64, 0i64..64, 1u64..1000, 0u64..64, 0i64..64),
    ) {
        let plan = memo_plan();
        let z = placed(1, 4096, 0, zs, zst, Some(zt));
        let x = placed(2, 8192, 0, xs, xst, None);
        let (zh, za, zo, xh, xa, xo) = moved;
        // the same layouts elsewhere in memory (storage, handle, address, offset)
        let z2 = placed(zh + 10, za * 16 + 4096 * zh, zo * 4, zs, zst, Some(zt));
        let x2 = placed(xh + 2000, 8192 + xa * 4, xo * 4, xs, xst, None);
        let first = [Arg::Handle(&z), Arg::Handle(&x), Arg::Float(s)];
        let second = [Arg::Handle(&z2), Arg::Handle(&x2), Arg::Float(s)];
        let same = z.same_launch_facts(&z2) && x.same_launch_facts(&x2);
        // placement alone never changes the facts, except a pointer's 16-byte alignment
        prop_assert_eq!(same, x2.facts.align16 == x.facts.align16);
        let decided = decide(&plan, &first);
        if same {
            prop_assert_eq!(&decide(&plan, &second), &decided);
        }
        let mut memo = LaunchMemo::default();
        if let Ok(d) = &decided {
            memo.insert(0, &first, Arc::new(d.clone()));
        }
        let hit = memo.get(0, &second).map(|d| Ok((**d).clone()));
        match hit {
            Some(h) => {
                prop_assert!(same);
                prop_assert_eq!(h, decide(&plan, &second));
            }
            None => prop_assert!(!same || decided.is_err()),
        }
    }
}

/// Layouts from a small set, so that unequal ones often share their divisibility facts.
fn near_layout() -> impl Strategy<Value = ([i64; 2], [i64; 2], [i64; 2])> {
    let extent = prop_oneof![Just(16i64), Just(32), Just(48)];
    (
        [extent.clone(), extent.clone()],
        (prop_oneof![Just(16i64), Just(48), Just(64)], Just(1i64)).prop_map(|(a, b)| [a, b]),
        [
            prop_oneof![Just(8i64), Just(16)],
            prop_oneof![Just(8i64), Just(16)],
        ],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Any two calls: where the memo would take one for the other (every argument has the
    /// same launch facts and scalar), binding decides the same for both.
    #[test]
    fn calls_the_memo_confuses_decide_the_same(
        a in (near_layout(), near_layout()),
        b in (near_layout(), near_layout()),
        s in prop_oneof![Just(16.0f64), Just(8.0)],
        t in prop_oneof![Just(16.0f64), Just(16.0), Just(8.0)],
    ) {
        let plan = memo_plan();
        let ((zs, zst, zt), (xs, xst, _)) = a;
        let ((zs2, zst2, zt2), (xs2, xst2, _)) = b;
        let z = placed(1, 4096, 0, zs, zst, Some(zt));
        let x = placed(2, 8192, 0, xs, xst, None);
        let z2 = placed(3, 4096 * 3, 0, zs2, zst2, Some(zt2));
        let x2 = placed(4, 4096 * 4, 0, xs2, xst2, None);
        let first = [Arg::Handle(&z), Arg::Handle(&x), Arg::Float(s)];
        let second = [Arg::Handle(&z2), Arg::Handle(&x2), Arg::Float(t)];
        let mut memo = LaunchMemo::default();
        memo.insert(0, &first, Arc::new(()));
        if memo.get(0, &second).is_some() {
            prop_assert_eq!(decide(&plan, &first), decide(&plan, &second));
        }
    }
}

/// A partitioned `z` and a shared `x` on device 0, and a memo holding the decision of
/// the launch (z, x, 8.0) on device 0 (returned too).
fn one_remembered_launch() -> (TensorDesc, TensorDesc, LaunchMemo<Decided>, Decided) {
    let z = placed(1, 4096, 0, [16, 8], [8, 1], Some([4, 8]));
    let x = placed(2, 8192, 0, [16, 8], [8, 1], None);
    let args = [Arg::Handle(&z), Arg::Handle(&x), Arg::Float(8.0)];
    let d = decide(&memo_plan(), &args).unwrap();
    let mut memo = LaunchMemo::default();
    memo.insert(0, &args, Arc::new(d.clone()));
    (z, x, memo, d)
}

#[test]
fn the_memo_misses_on_any_other_fact_or_value() {
    let (z, x, memo, d) = one_remembered_launch();
    let args = [Arg::Handle(&z), Arg::Handle(&x), Arg::Float(8.0)];
    assert_eq!(memo.get(0, &args).map(|d| (**d).clone()), Some(d));
    // another shape, stride, tile, alignment, scalar value or scalar kind: decided anew
    let taller = placed(3, 4096, 0, [32, 8], [8, 1], Some([4, 8]));
    let strided = placed(4, 8192, 0, [16, 8], [16, 1], None);
    let retiled = placed(5, 4096, 0, [16, 8], [8, 1], Some([8, 8]));
    let unaligned = placed(6, 8196, 0, [16, 8], [8, 1], None);
    for other in [
        [Arg::Handle(&taller), Arg::Handle(&x), Arg::Float(8.0)],
        [Arg::Handle(&z), Arg::Handle(&strided), Arg::Float(8.0)],
        [Arg::Handle(&retiled), Arg::Handle(&x), Arg::Float(8.0)],
        [Arg::Handle(&z), Arg::Handle(&unaligned), Arg::Float(8.0)],
        [Arg::Handle(&z), Arg::Handle(&x), Arg::Float(9.0)],
        [Arg::Handle(&z), Arg::Handle(&x), Arg::Int(8)],
        [Arg::Handle(&z), Arg::Handle(&x), Arg::Other],
    ] {
        assert!(memo.get(0, &other).is_none(), "{other:?}");
    }
    // a call with an argument the launcher cannot read is never remembered
    let mut empty: LaunchMemo<u8> = LaunchMemo::default();
    empty.insert(0, &[Arg::Other], Arc::new(0));
    assert!(empty.is_empty());
    // a full memo replaces its oldest entry
    for v in 0..=LaunchMemo::<u8>::CAPACITY {
        empty.insert(0, &[Arg::Int(v as i64)], Arc::new(v as u8));
    }
    assert_eq!(empty.len(), LaunchMemo::<u8>::CAPACITY);
    assert!(empty.get(0, &[Arg::Int(0)]).is_none());
    assert_eq!(empty.get(0, &[Arg::Int(1)]).map(|v| **v), Some(1));
}

#[test]
fn the_memo_misses_on_another_device() {
    let (z, x, memo, _) = one_remembered_launch();
    // the same layouts on device 1: another device's multiprocessors and kernel
    let on1 = |t: &TensorDesc| {
        TensorDesc::new(View {
            device: 1,
            ..t.view.clone()
        })
        .unwrap()
    };
    let (z1, x1) = (on1(&z), on1(&x));
    assert!(!z.same_launch_facts(&z1));
    assert!(memo
        .get(1, &[Arg::Handle(&z1), Arg::Handle(&x1), Arg::Float(8.0)])
        .is_none());
    // one tensor moved to device 1 (a call the launcher refuses, CT6113, before any
    // look-up): no entry of device 0 matches it either
    assert!(memo
        .get(0, &[Arg::Handle(&z), Arg::Handle(&x1), Arg::Float(8.0)])
        .is_none());
    // a launch without tensors runs on the current device: remembered per device
    let mut scalars: LaunchMemo<u8> = LaunchMemo::default();
    scalars.insert(0, &[Arg::Int(3)], Arc::new(0));
    assert_eq!(scalars.get(0, &[Arg::Int(3)]).map(|v| **v), Some(0));
    assert!(scalars.get(1, &[Arg::Int(3)]).is_none());
}

#[test]
fn views_of_one_layout_share_it_and_compare_by_content_when_they_do_not() {
    let a = placed(1, 4096, 0, [64, 32], [32, 1], Some([16, 32]));
    // one layout, wherever the views are: shared, and the same launch facts (other tests
    // describe views meanwhile, which may push it out of the table between two views:
    // a few tries)
    let b = (0..50)
        .map(|_| placed(2, 8192, 64, [64, 32], [32, 1], Some([16, 32])))
        .find(|b| std::sync::Arc::ptr_eq(&a.layout, &b.layout))
        .expect("views of one layout share it");
    assert!(a.same_launch_facts(&b));
    // many other layouts described meanwhile push it out of the interning table: a new
    // view of it gets its own copy, and still has the same launch facts
    for k in 1..=1000 {
        placed(3, 4096, 0, [k, 32], [32, 1], None);
    }
    let c = placed(4, 4096, 0, [64, 32], [32, 1], Some([16, 32]));
    assert!(a.same_launch_facts(&c) && c.same_launch_facts(&a));
    // anything else of the layout, the alignment or the device differs, shared or not
    assert!(!a.same_launch_facts(&placed(5, 4096, 0, [64, 32], [32, 1], Some([32, 32]))));
    assert!(!a.same_launch_facts(&placed(5, 4096, 0, [64, 32], [32, 1], None)));
    assert!(!a.same_launch_facts(&placed(5, 4096, 0, [64, 32], [64, 1], Some([16, 32]))));
    assert!(!a.same_launch_facts(&placed(5, 4100, 0, [64, 32], [32, 1], Some([16, 32]))));
    let elsewhere = TensorDesc::new(View {
        device: 1,
        ..a.view.clone()
    })
    .unwrap();
    assert!(!a.same_launch_facts(&elsewhere));
    // the descriptor's own copies are its view's
    assert_eq!(
        (b.storage, b.handle, b.address, b.device, b.align16),
        (2, 2, 8192, 0, true)
    );
}
