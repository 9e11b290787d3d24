//! `Ptr` parameters (unsafe entries): bound to a Tensor of the pointee's element type, held
//! exclusively, packed as the tensor's device address, and no part of the grid or of the
//! compiled kernel's key.

use super::*;

fn refused<T: std::fmt::Debug>(r: Result<T, Refusal>, code: &str) -> String {
    match r {
        Err(Refusal::Refused(e)) => {
            assert_eq!(e.code, code, "{}", e.message);
            e.message
        }
        other => panic!("expected {code}, got {other:?}"),
    }
}

/// `k(z: Ptr[f32], x: Tensor[f32, [-1]], n: i32)`.
fn ptr_plan() -> LaunchPlan {
    plan_of(
        &[
            ParamSpec {
                name: "z".into(),
                kind: "ptr".into(),
                dtype: Some("f32".into()),
                dims: vec![],
            },
            param("x", "tensor", "f32", &[DimSpec::Int(-1)]),
            ParamSpec {
                name: "n".into(),
                kind: "scalar".into(),
                dtype: Some("i32".into()),
                dims: vec![],
            },
        ],
        &[],
        &[],
        vec![],
        132,
    )
}

#[test]
fn a_pointer_takes_a_tensor_and_holds_it_exclusively() {
    let plan = ptr_plan();
    assert_eq!(plan.params[0].kind, ParamKind::Ptr);
    assert!(ParamKind::Ptr.exclusive());
    let (z, x) = (view(1, &[10, 3], None, "f32"), view(2, &[100], None, "f32"));
    let args = [Arg::Handle(&z), Arg::Handle(&x), Arg::Int(7)];
    let bound = plan.bind(&args, &[]).unwrap();
    assert_eq!(bound.scalars[2], Some(Value::Int(7)));
    assert_eq!(plan.moves(&args), vec![(1, true), (2, false)]);
    let acc = plan.accesses(&args);
    assert!(acc[0].exclusive && !acc[1].exclusive);
    assert_eq!((acc[0].storage, acc[0].lo, acc[0].hi), (1, 0, 120));
    // the pointer's facts specialize nothing: another tensor shape, the same kernel
    let z2 = view(1, &[7], None, "f32");
    let other = plan
        .bind(&[Arg::Handle(&z2), Arg::Handle(&x), Arg::Int(7)], &[])
        .unwrap();
    assert_eq!(bound.key, other.key);
    // no `Mut` output: the grid is given at the call
    refused(plan.grid("k", &args, &[]), "CT6107");
    assert_eq!(
        plan.grid_with("k", &args, &[], Some([4, 1, 1])).unwrap(),
        [4, 1, 1]
    );
}

#[test]
fn a_pointer_refuses_what_is_not_a_tensor_of_its_type() {
    let plan = ptr_plan();
    let x = view(2, &[100], None, "f32");
    let part = view(1, &[16], Some(&[4]), "f32");
    let msg = refused(
        plan.bind(&[Arg::Handle(&part), Arg::Handle(&x), Arg::Int(1)], &[]),
        "CT6110",
    );
    assert!(msg.contains("not a Partition"), "{msg}");
    let ints = view(1, &[16], None, "i32");
    let msg = refused(
        plan.bind(&[Arg::Handle(&ints), Arg::Handle(&x), Arg::Int(1)], &[]),
        "CT6102",
    );
    assert!(msg.contains("`f32`") && msg.contains("`i32`"), "{msg}");
    let msg = refused(
        plan.bind(&[Arg::Int(4096), Arg::Handle(&x), Arg::Int(1)], &[]),
        "CT6110",
    );
    assert!(msg.contains("takes a Tensor"), "{msg}");
    // something the fast path cannot read: the Python binder normalizes it first
    let given: Vec<Option<Arg<'_>>> = vec![];
    let r = plan.bind_ordered(
        "k",
        &[Arg::Other, Arg::Handle(&x), Arg::Int(1)],
        &given,
        false,
        &|_| "a str".into(),
    );
    assert!(matches!(r, Err(Refusal::Slow(_))), "{r:?}");
    let r = plan.bind_ordered(
        "k",
        &[Arg::Other, Arg::Handle(&x), Arg::Int(1)],
        &given,
        true,
        &|_| "a `str` ('x')".into(),
    );
    let msg = refused(r, "CT6110");
    assert!(msg.contains("not a `str`"), "{msg}");
}

#[test]
fn a_pointer_packs_its_tensors_address() {
    let z = view(3, &[8], None, "f32");
    let slots = [
        SlotPlan {
            kind: SlotKind::Ptr,
            param: 0,
            axis: 0,
            fmt: b'Q',
            offset: 0,
        },
        SlotPlan {
            kind: SlotKind::Scalar,
            param: 1,
            axis: 0,
            fmt: b'i',
            offset: 8,
        },
    ];
    let mut buf = [0u8; 16];
    pack(
        &slots,
        &[Arg::Handle(&z), Arg::Int(5)],
        &[None, Some(Value::Int(5))],
        &mut buf,
    )
    .unwrap();
    assert_eq!(u64::from_ne_bytes(buf[..8].try_into().unwrap()), 3 * 4096);
    assert_eq!(i32::from_ne_bytes(buf[8..12].try_into().unwrap()), 5);
}
