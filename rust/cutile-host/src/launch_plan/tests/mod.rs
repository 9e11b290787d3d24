use super::*;
use crate::{validate_launch, PartitionArg};
use cutile_facts::{Atom as F, BinOp, CmpOp, Expr, KernelFacts, OutputFact, Pred};
use proptest::prelude::*;
use std::collections::HashSet;
use std::sync::Arc;

mod devices;
mod grid;
mod memo;
mod pointers;

/// Facts for these parameters: every `mut_tensor` an output (persistent if named in
/// `persistent`), with the given launch predicates.
fn facts(params: &[ParamSpec], persistent: &[&str], preds: Vec<Pred>) -> KernelFacts {
    use cutile_facts::{Discharge, NodeRef, Obligation, Span};
    let span = Span {
        file: 0,
        lo: 0,
        hi: 0,
        line: 7,
        col: 0,
        end_line: 7,
        end_col: 0,
    };
    KernelFacts {
        outputs: params
            .iter()
            .filter(|p| p.kind == "mut_tensor")
            .map(|p| OutputFact {
                param: p.name.clone(),
                kind: if persistent.contains(&p.name.as_str()) {
                    OutputKind::Persistent
                } else {
                    OutputKind::Partitioned
                },
            })
            .collect(),
        grid_rank: 3,
        index_width: 32,
        schedules: Vec::new(),
        obligations: preds
            .into_iter()
            .enumerate()
            .map(|(i, p)| Obligation {
                kind: "bounds".into(),
                description: format!("check {i}"),
                node: NodeRef {
                    path: vec![],
                    nid: i as u32,
                },
                span,
                discharge: Discharge::Launch(p),
            })
            .collect(),
        loop_counters: vec![],
        folded_branches: vec![],
    }
}

fn plan_of(
    params: &[ParamSpec],
    consts: &[(String, ConstType)],
    persistent: &[&str],
    preds: Vec<Pred>,
    sm_count: u64,
) -> LaunchPlan {
    LaunchPlan::new(params, consts, &facts(params, persistent, preds), sm_count)
        .expect("facts fit the parameters")
}

fn atom(a: F) -> Expr {
    Expr::Atom(a)
}

fn dim(p: &str, k: u8) -> Expr {
    atom(F::Dim {
        param: p.into(),
        axis: k,
    })
}

/// `grid(0) <= cdiv(dim(t, 0), B)`.
fn grid_fits(t: &str) -> Pred {
    Pred::clause(
        atom(F::Grid(0)),
        CmpOp::Le,
        Expr::bin(BinOp::Cdiv, dim(t, 0), atom(F::Const("B".into()))),
        format!("grid(0) <= cdiv(dim({t}, 0), B)"),
    )
}

fn view(handle: u64, shape: &[i64], tile: Option<&[i64]>, dtype: &str) -> TensorDesc {
    let mut strides = vec![1i64; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        strides[k] = strides[k + 1] * shape[k + 1].max(1);
    }
    TensorDesc::new(View {
        storage: handle,
        handle,
        address: 4096 * handle,
        offset: 0,
        shape: shape.to_vec(),
        strides,
        dtype: dtype.into(),
        itemsize: 4,
        tile: tile.map(|t| t.to_vec()),
        num_blocks: None,
        device: 0,
    })
    .unwrap()
}

fn param(name: &str, kind: &str, dtype: &str, dims: &[DimSpec]) -> ParamSpec {
    ParamSpec {
        name: name.into(),
        kind: kind.into(),
        dtype: Some(dtype.into()),
        dims: dims.to_vec(),
    }
}

fn n(s: &str) -> DimSpec {
    DimSpec::Name(s.into())
}

/// `add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B)`.
fn add_plan() -> LaunchPlan {
    plan_of(
        &[
            param("z", "mut_tensor", "f32", &[n("B")]),
            param("x", "tensor", "f32", &[DimSpec::Int(-1)]),
            param("y", "tensor", "f32", &[DimSpec::Int(-1)]),
        ],
        &[("B".into(), ConstType::Int)],
        &[],
        vec![grid_fits("x"), grid_fits("y")],
        132,
    )
}

#[test]
fn descriptor_facts_and_span() {
    let d = view(1, &[1024], None, "f32");
    assert_eq!(d.span, (0, 4096));
    assert!(d.facts.align16 && d.facts.last_stride_one && !d.wide);
    assert_eq!(d.facts.shape_div, vec![16]);
    assert_eq!(d.facts.stride_div, vec![1]);
    assert_eq!(d.dtype, dtype_code("f32"));
    // a reversed, offset view: bytes 4..16 of its storage
    let r = TensorDesc::new(View {
        offset: 12,
        strides: vec![-1],
        shape: vec![3],
        address: 12,
        ..d.view.clone()
    })
    .unwrap();
    assert_eq!(r.span, (4, 16));
    assert!(!r.facts.align16 && !r.facts.last_stride_one);
    let empty = TensorDesc::new(View {
        shape: vec![0],
        offset: 8,
        ..d.view.clone()
    })
    .unwrap();
    assert_eq!(empty.span, (8, 8));
    let wide = TensorDesc::new(View {
        shape: vec![2, 2],
        strides: vec![1 << 31, 1],
        ..d.view.clone()
    })
    .unwrap();
    assert!(wide.wide);
    // a stride past i32 on an axis of extent 1 spans nothing but is still passed
    let one = TensorDesc::new(View {
        shape: vec![1, 2],
        strides: vec![1 << 31, 1],
        ..d.view.clone()
    })
    .unwrap();
    assert!(one.wide);
    assert!(TensorDesc::new(View {
        strides: vec![],
        ..d.view.clone()
    })
    .is_err());
    assert_eq!(pow2_divisor(0), 16);
    assert_eq!(pow2_divisor(-12), 4);
    assert_eq!(pow2_divisor(96), 16);
}

#[test]
fn binds_infers_and_keys() {
    let plan = add_plan();
    let (z, x, y) = (
        view(1, &[1000], Some(&[128]), "f32"),
        view(2, &[1000], None, "f32"),
        view(3, &[1000], None, "f32"),
    );
    let args = [Arg::Handle(&z), Arg::Handle(&x), Arg::Handle(&y)];
    let b = plan.bind(&args, &[None]).unwrap();
    assert_eq!(b.consts, vec![Value::Int(128)]);
    assert_eq!(b.index_bits, 32);
    assert_eq!(plan.grid("k", &args, &b.consts).unwrap(), [8, 1, 1]);
    // the same call keys the same kernel; a keyword that agrees changes nothing
    assert_eq!(plan.bind(&args, &[Some(Value::Int(128))]).unwrap(), b);
    // slow: a contradicting keyword, the wrong keyword type, a tensor for the output,
    // a partition for an input, a dtype, too few arguments
    assert!(plan.bind(&args, &[Some(Value::Int(64))]).is_err());
    assert!(plan.bind(&args, &[Some(Value::Float(128.0))]).is_err());
    assert!(plan
        .bind(
            &[Arg::Handle(&x), Arg::Handle(&x), Arg::Handle(&y)],
            &[None]
        )
        .is_err());
    assert!(plan
        .bind(
            &[Arg::Handle(&z), Arg::Handle(&z), Arg::Handle(&y)],
            &[None]
        )
        .is_err());
    let h = view(4, &[1000], None, "f16");
    match plan.bind(
        &[Arg::Handle(&z), Arg::Handle(&h), Arg::Handle(&y)],
        &[None],
    ) {
        // an argument's refusal names its parameter, as data too
        Err(Refusal::Refused(e)) => {
            assert_eq!((e.code, e.about.tensor.as_deref()), ("CT6102", Some("x")))
        }
        other => panic!("{other:?}"),
    }
    assert!(plan.bind(&args[..2], &[None]).is_err());
    // a different alignment is a different kernel
    let x2 = TensorDesc::new(View {
        address: 8196,
        ..x.view.clone()
    })
    .unwrap();
    let b2 = plan
        .bind(
            &[Arg::Handle(&z), Arg::Handle(&x2), Arg::Handle(&y)],
            &[None],
        )
        .unwrap();
    assert_ne!(b2.key, b.key);
}

#[test]
fn scalars_and_consts() {
    let plan = plan_of(
        &[
            param("z", "mut_tensor", "f32", &[DimSpec::Int(16)]),
            param("a", "scalar", "f32", &[]),
            param("k", "scalar", "i8", &[]),
            param("m", "scalar", "i1", &[]),
        ],
        &[("S".into(), ConstType::Float), ("K".into(), ConstType::Int)],
        &[],
        vec![],
        132,
    );
    assert_eq!(plan.consts[0].name, "K"); // sorted
    let z = view(1, &[64], Some(&[16]), "f32");
    let given = [Some(Value::Int(3)), Some(Value::Float(0.5))];
    let b = plan
        .bind(
            &[
                Arg::Handle(&z),
                Arg::Int(2),
                Arg::Int(-128),
                Arg::Bool(true),
            ],
            &given,
        )
        .unwrap();
    assert_eq!(
        b.scalars,
        vec![
            None,
            Some(Value::Float(2.0)),
            Some(Value::Int(-128)),
            Some(Value::Bool(true))
        ]
    );
    for bad in [
        [
            Arg::Handle(&z),
            Arg::Bool(true),
            Arg::Int(1),
            Arg::Bool(true),
        ],
        [
            Arg::Handle(&z),
            Arg::Float(1.0),
            Arg::Int(128),
            Arg::Bool(true),
        ],
        [
            Arg::Handle(&z),
            Arg::Float(1.0),
            Arg::Float(1.0),
            Arg::Bool(true),
        ],
        [Arg::Handle(&z), Arg::Float(1.0), Arg::Int(1), Arg::Int(1)],
        [Arg::Handle(&z), Arg::Other, Arg::Int(1), Arg::Bool(false)],
    ] {
        assert!(plan.bind(&bad, &given).is_err(), "{bad:?}");
    }
    // a missing Const is slow (Python says which)
    assert!(plan
        .bind(
            &[Arg::Handle(&z), Arg::Int(2), Arg::Int(1), Arg::Bool(true)],
            &[None, Some(Value::Float(0.5))]
        )
        .is_err());
}

#[test]
fn unsigned_scalars_bind_in_range_and_pack() {
    let plan = plan_of(
        &[
            param("z", "mut_tensor", "u32", &[DimSpec::Int(16)]),
            param("a", "scalar", "u32", &[]),
            param("b", "scalar", "u8", &[]),
            param("c", "scalar", "u64", &[]),
        ],
        &[],
        &[],
        vec![],
        132,
    );
    let z = view(1, &[64], Some(&[16]), "u32");
    assert_eq!(z.dtype, dtype_code("u32"));
    let top = (1i64 << 32) - 1;
    let b = plan
        .bind(
            &[
                Arg::Handle(&z),
                Arg::Int(top),
                Arg::Int(255),
                Arg::Int(i64::MAX),
            ],
            &[],
        )
        .unwrap();
    assert_eq!(
        b.scalars[1..],
        [
            Some(Value::Int(top)),
            Some(Value::Int(255)),
            Some(Value::Int(i64::MAX))
        ]
    );
    for bad in [
        [Arg::Handle(&z), Arg::Int(-1), Arg::Int(0), Arg::Int(0)],
        [Arg::Handle(&z), Arg::Int(top + 1), Arg::Int(0), Arg::Int(0)],
        [Arg::Handle(&z), Arg::Int(0), Arg::Int(256), Arg::Int(0)],
        [Arg::Handle(&z), Arg::Int(0), Arg::Int(0), Arg::Int(-1)],
        [Arg::Handle(&z), Arg::Float(1.0), Arg::Int(0), Arg::Int(0)],
    ] {
        assert!(plan.bind(&bad, &[]).is_err(), "{bad:?}");
    }
    let slot = |fmt: u8, offset: usize, param: usize| SlotPlan {
        kind: SlotKind::Scalar,
        param,
        axis: 0,
        fmt,
        offset,
    };
    let slots = [slot(b'I', 0, 1), slot(b'B', 4, 2), slot(b'H', 6, 3)];
    let args = [
        Arg::Handle(&z),
        Arg::Int(top),
        Arg::Int(255),
        Arg::Int(65535),
    ];
    let scalars = [
        None,
        Some(Value::Int(top)),
        Some(Value::Int(255)),
        Some(Value::Int(65535)),
    ];
    let mut buf = [0u8; 8];
    pack(&slots, &args, &scalars, &mut buf).unwrap();
    assert_eq!(u32::from_ne_bytes(buf[0..4].try_into().unwrap()), u32::MAX);
    assert_eq!(buf[4], 255);
    assert_eq!(u16::from_ne_bytes(buf[6..8].try_into().unwrap()), u16::MAX);
    let negative = [None, Some(Value::Int(-1)), None, None];
    assert!(pack(&slots[..1], &args, &negative, &mut buf).is_err());
}

#[test]
fn const_in_a_shape_must_be_positive() {
    let plan = plan_of(
        &[
            param("z", "mut_tensor", "f32", &[DimSpec::Int(4)]),
            param("x", "tensor", "f32", &[n("K")]),
        ],
        &[("K".into(), ConstType::Int)],
        &[],
        vec![],
        132,
    );
    let z = view(1, &[4], Some(&[4]), "f32");
    let x0 = view(2, &[0], None, "f32");
    let x3 = view(3, &[3], None, "f32");
    assert!(plan
        .bind(&[Arg::Handle(&z), Arg::Handle(&x0)], &[None])
        .is_err());
    assert!(plan
        .bind(&[Arg::Handle(&z), Arg::Handle(&x3)], &[None])
        .is_ok());
}

#[test]
fn predicates_fail_closed_and_cache() {
    let plan = add_plan();
    let (z, x, y) = (
        view(1, &[1024], Some(&[128]), "f32"),
        view(2, &[1024], None, "f32"),
        view(3, &[512], None, "f32"),
    );
    let args = [Arg::Handle(&z), Arg::Handle(&x), Arg::Handle(&y)];
    let b = plan.bind(&args, &[None]).unwrap();
    let g = plan.grid("k", &args, &b.consts).unwrap();
    let mut cache = PredicateCache::default();
    // y is too short for the grid: refused with the predicate, its values and its source
    match plan.check_predicates("add", &args, &b, g, &mut cache) {
        Err(Refusal::Refused(e)) => {
            assert_eq!(e.code, "CT6200");
            assert!(
                e.message.contains("`grid(0) <= cdiv(dim(y, 0), B)` failed"),
                "{}",
                e.message
            );
            assert!(e.message.contains("dim(y, 0) = 512") && e.message.contains("line 7"));
        }
        other => panic!("{other:?}"),
    }
    assert!(cache.holds(0, &[8, 1024, 128]) && !cache.holds(1, &[8, 512, 128]));
    let ok = view(3, &[1024], None, "f32");
    let args = [Arg::Handle(&z), Arg::Handle(&x), Arg::Handle(&ok)];
    let b = plan.bind(&args, &[None]).unwrap();
    plan.check_predicates("add", &args, &b, g, &mut cache)
        .unwrap();
    assert!(cache.holds(1, &[8, 1024, 128]));
    // an undecidable predicate (an overflow) refuses the launch: CT6201
    let specs = [param("z", "mut_tensor", "f32", &[DimSpec::Int(4)])];
    let consts = [("D".into(), ConstType::Int)];
    let overflows = Pred::clause(
        Expr::bin(BinOp::Mul, Expr::Int(i128::MAX), atom(F::Const("D".into()))),
        CmpOp::Le,
        Expr::Int(1),
        "BIG * D <= 1".into(),
    );
    let plan = plan_of(&specs, &consts, &[], vec![overflows], 132);
    let z = view(1, &[8], Some(&[4]), "f32");
    let args = [Arg::Handle(&z)];
    let b = plan.bind(&args, &[Some(Value::Int(2))]).unwrap();
    match plan.check_predicates("k", &args, &b, [2, 1, 1], &mut PredicateCache::default()) {
        Err(Refusal::Refused(e)) => assert_eq!(e.code, "CT6201"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn predicate_atoms_resolve_to_arguments() {
    let specs = [
        param("z", "mut_tensor", "f32", &[DimSpec::Int(4)]),
        param("x", "tensor", "f32", &[DimSpec::Int(-1)]),
        param("s", "scalar", "i32", &[]),
    ];
    let consts = [("B".into(), ConstType::Int)];
    let all = [
        atom(F::Tiles {
            param: "z".into(),
            axis: 0,
        }),
        dim("x", 0),
        atom(F::Scalar("s".into())),
        atom(F::Const("B".into())),
        atom(F::Grid(0)),
    ];
    let sum = all
        .iter()
        .cloned()
        .reduce(|a, b| Expr::bin(BinOp::Add, a, b))
        .unwrap();
    let pred = Pred::clause(sum, CmpOp::Ge, Expr::Int(0), "sum >= 0".into());
    let plan = plan_of(&specs, &consts, &[], vec![pred], 132);
    assert_eq!(
        plan.predicates[0]
            .atoms
            .iter()
            .map(|(_, a)| *a)
            .collect::<Vec<_>>(),
        vec![
            Atom::Tiles(0, 0),
            Atom::Dim(1, 0),
            Atom::Param(2),
            Atom::Const(0),
            Atom::Grid(0)
        ]
    );
    let z = view(1, &[10], Some(&[4]), "f32");
    let x = view(2, &[10], None, "f32");
    let args = [Arg::Handle(&z), Arg::Handle(&x), Arg::Int(7)];
    let b = plan.bind(&args, &[Some(Value::Int(5))]).unwrap();
    let mut out = Vec::new();
    plan.atom_values(&plan.predicates[0], &args, &b, [3, 1, 1], &mut out)
        .unwrap();
    assert_eq!(out, vec![3, 10, 7, 5, 3]);
    // Atoms the parameters cannot give refuse to build the plan (fail closed): the
    // checker and the launcher would disagree.
    for bad in [
        dim("q", 0),
        atom(F::Tiles {
            param: "x".into(),
            axis: 0,
        }),
        atom(F::Scalar("x".into())),
        atom(F::Const("C".into())),
        atom(F::Grid(3)),
        dim("s", 0),
    ] {
        let p = Pred::clause(bad.clone(), CmpOp::Ge, Expr::Int(0), "bad".into());
        assert!(
            LaunchPlan::new(&specs, &consts, &facts(&specs, &[], vec![p]), 132).is_err(),
            "{bad}"
        );
    }
    // identical predicates (a device function inlined twice) are evaluated once
    let twice = plan_of(
        &specs,
        &consts,
        &[],
        vec![grid_fits("x"), grid_fits("x")],
        132,
    );
    assert_eq!(twice.predicates.len(), 1);
}

#[test]
fn moves_and_accesses() {
    let plan = add_plan();
    let (z, x) = (
        view(1, &[1024], Some(&[128]), "f32"),
        view(2, &[1024], None, "f32"),
    );
    let args = [Arg::Handle(&z), Arg::Handle(&x), Arg::Handle(&x)];
    assert_eq!(plan.moves(&args), vec![(1, true), (2, false), (2, false)]);
    let acc = plan.accesses(&args);
    assert_eq!(acc.len(), 3);
    assert!(acc[0].exclusive && !acc[1].exclusive);
    assert_eq!((acc[1].storage, acc[1].lo, acc[1].hi), (2, 0, 4096));
}

#[test]
fn packs_like_struct() {
    let x = view(2, &[3, 5], None, "f32");
    let slots = [
        SlotPlan {
            kind: SlotKind::Ptr,
            param: 0,
            axis: 0,
            fmt: b'Q',
            offset: 0,
        },
        SlotPlan {
            kind: SlotKind::Shape,
            param: 0,
            axis: 1,
            fmt: b'i',
            offset: 8,
        },
        SlotPlan {
            kind: SlotKind::Stride,
            param: 0,
            axis: 0,
            fmt: b'q',
            offset: 16,
        },
        SlotPlan {
            kind: SlotKind::Scalar,
            param: 1,
            axis: 0,
            fmt: b'e',
            offset: 24,
        },
        SlotPlan {
            kind: SlotKind::Scalar,
            param: 2,
            axis: 0,
            fmt: b'?',
            offset: 26,
        },
        SlotPlan {
            kind: SlotKind::Scalar,
            param: 3,
            axis: 0,
            fmt: b'f',
            offset: 28,
        },
    ];
    let args = [
        Arg::Handle(&x),
        Arg::Float(1.0),
        Arg::Bool(true),
        Arg::Int(3),
    ];
    let scalars = [
        None,
        Some(Value::Float(1.0)),
        Some(Value::Bool(true)),
        Some(Value::Float(3.0)),
    ];
    let mut buf = [0u8; 32];
    pack(&slots, &args, &scalars, &mut buf).unwrap();
    assert_eq!(u64::from_ne_bytes(buf[0..8].try_into().unwrap()), 8192);
    assert_eq!(i32::from_ne_bytes(buf[8..12].try_into().unwrap()), 5);
    assert_eq!(i64::from_ne_bytes(buf[16..24].try_into().unwrap()), 5);
    assert_eq!(u16::from_ne_bytes(buf[24..26].try_into().unwrap()), 0x3c00);
    assert_eq!(buf[26], 1);
    assert_eq!(f32::from_ne_bytes(buf[28..32].try_into().unwrap()), 3.0);
    // the driver's view: one pointer per slot, at the slot's offset in the same bytes
    let mut pb = ParamBuffer::new(32);
    pb.pack(&slots, &args, &scalars).unwrap();
    let read = pb.with_params(&slots, |ptrs| {
        // SAFETY: `ptrs` holds `slots.len()` pointers into the live buffer.
        unsafe {
            (
                (*ptrs).cast::<u64>().read_unaligned(),
                (*ptrs.add(1)).cast::<i32>().read_unaligned(),
            )
        }
    });
    assert_eq!(read, (8192, 5));
    assert!(pb.with_params(&[], |p| p.is_null()));
    // past 64 words the buffer is on the heap, and packs the same
    let mut wide = ParamBuffer::new(1024);
    wide.pack(&slots, &args, &scalars).unwrap();
    assert_eq!(&wide.bytes_mut()[..32], &buf[..]);
    // struct refuses: an i32 past its range, an f32 or f16 overflow
    let big = TensorDesc::new(View {
        shape: vec![1],
        strides: vec![1 << 40],
        ..x.view.clone()
    })
    .unwrap();
    let e = pack(
        &slots[2..3]
            .iter()
            .map(|s| SlotPlan { fmt: b'i', ..*s })
            .collect::<Vec<_>>(),
        &[Arg::Handle(&big)],
        &[None],
        &mut buf,
    )
    .unwrap_err();
    assert_eq!(e.fmt, b'i');
    let huge = [None, None, None, Some(Value::Float(1e300))];
    assert!(pack(&slots[5..], &args, &huge, &mut buf).is_err());
    let over = [None, Some(Value::Float(70000.0))];
    assert!(pack(&slots[3..4], &args, &over, &mut buf).is_err());
}

#[test]
fn half_precision_rounding() {
    let cases: [(f64, u16); 12] = [
        (1.0, 0x3c00),
        (-2.0, 0xc000),
        (0.1, 0x2e66),
        (65504.0, 0x7bff),
        (65519.0, 0x7bff),
        (2f64.powi(-14), 0x0400),
        (2f64.powi(-24), 0x0001),
        (2f64.powi(-25), 0x0000),
        (1.5 * 2f64.powi(-25), 0x0001),
        (1023.5 * 2f64.powi(-24), 0x0400),
        (-0.0, 0x8000),
        (f64::INFINITY, 0x7c00),
    ];
    for (x, want) in cases {
        assert_eq!(f16_bits(x), Some(want), "{x}");
    }
    assert_eq!(f16_bits(65520.0), None);
    assert_eq!(f16_bits(f64::NAN).map(|b| b & 0x7c00), Some(0x7c00));
    // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: to even
    assert_eq!(f16_bits(1.0 + 2f64.powi(-11)), Some(0x3c00));
    assert_eq!(f16_bits(1.0 + 3.0 * 2f64.powi(-11)), Some(0x3c02));
}

fn part_arg(shape: Vec<i64>, tile: Vec<i64>, decl: Vec<i64>, name: &str) -> PartitionArg {
    PartitionArg {
        name: name.into(),
        tensor_shape: shape,
        tile_shape: tile,
        declared: decl,
    }
}

proptest! {
    /// The plan's grid agrees with `validate_launch` (the error messages' source) on
    /// every mix of ranks, shapes, tiles and declarations.
    #[test]
    fn grid_agrees_with_validate_launch(
        parts in proptest::collection::vec(
            (1usize..=3).prop_flat_map(|r| (
                proptest::collection::vec(0i64..300, r),
                proptest::collection::vec(1i64..70, r),
                proptest::collection::vec(prop_oneof![Just(0i64), 1i64..70], r),
            )),
            1..4,
        )
    ) {
        let specs: Vec<ParamSpec> = parts.iter().enumerate().map(|(i, (_, t, d))| {
            let dims = t.iter().zip(d).map(|(t, d)| DimSpec::Int(if *d == 0 { *t } else { *d }))
                .collect::<Vec<_>>();
            param(&format!("p{i}"), "mut_tensor", "f32", &dims)
        }).collect();
        let plan = plan_of(&specs, &[], &[], vec![], 132);
        let descs: Vec<TensorDesc> = parts.iter().enumerate()
            .map(|(i, (s, t, _))| view(i as u64 + 1, s, Some(t), "f32")).collect();
        let args: Vec<Arg<'_>> = descs.iter().map(Arg::Handle).collect();
        let pa: Vec<PartitionArg> = parts.iter().enumerate().map(|(i, (s, t, d))| {
            let decl = t.iter().zip(d).map(|(t, d)| if *d == 0 { *t } else { *d }).collect();
            part_arg(s.clone(), t.clone(), decl, &format!("p{i}"))
        }).collect();
        let ours = plan.grid("k", &args, &[]);
        match validate_launch("k", [0, 0, 0], &pa) {
            // a launch with an empty output runs no block
            Ok(g) if g.contains(&0) => prop_assert_eq!(ours, Ok([0, 0, 0])),
            Ok(g) => prop_assert_eq!(ours, Ok(g)),
            Err(e) => prop_assert_eq!(ours, Err(Refusal::Refused(e))),
        }
    }

    #[test]
    fn half_matches_a_float_round_trip(bits in 0u16..0x7c00) {
        // every finite half converts back to itself
        let sign = bits & 0x8000;
        let e = i32::from((bits >> 10) & 0x1f);
        let m = f64::from(bits & 0x3ff);
        let v = if e == 0 { m * 2f64.powi(-24) } else { (1.0 + m / 1024.0) * 2f64.powi(e - 15) };
        let v = if sign != 0 { -v } else { v };
        prop_assert_eq!(f16_bits(v), Some(bits));
    }
}

#[test]
fn word_hasher_separates_keys() {
    use std::hash::{BuildHasher, BuildHasherDefault};
    let b = BuildHasherDefault::<WordHasher>::default();
    let keys: Vec<Vec<u64>> = vec![vec![32, 128, 3], vec![32, 128, 1], vec![32, 64, 3], vec![]];
    let hashes: HashSet<u64> = keys.iter().map(|k| b.hash_one(&k[..])).collect();
    assert_eq!(hashes.len(), keys.len());
    assert_eq!(b.hash_one(&[1i64, 2][..]), b.hash_one(&[1i64, 2][..]));
    assert_ne!(b.hash_one(&[1i64, 2][..]), b.hash_one(&[2i64, 1][..]));
}

#[test]
fn a_shape_named_by_a_float_const_is_refused() {
    // The checker reads `S` as the extent of `x`; a float `Const` is never matched against
    // the tensor, so the launch must not go on (the frontend refuses such a kernel too).
    let specs = [
        param("z", "mut_tensor", "i32", &[DimSpec::Int(4)]),
        param("x", "tensor", "i32", &[n("S")]),
    ];
    let plan = plan_of(&specs, &[("S".into(), ConstType::Float)], &[], vec![], 132);
    let z = view(1, &[16], Some(&[4]), "i32");
    let x = view(2, &[4], None, "i32");
    let args = [Arg::Handle(&z), Arg::Handle(&x)];
    match plan.bind(&args, &[Some(Value::Float(16.0))]) {
        Err(Refusal::Refused(e)) => {
            assert_eq!(e.code, "CT6105");
            assert!(e.message.contains("not an int `Const`"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }
}
