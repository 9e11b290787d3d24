//! The grid a launch gets: persistent schedules, CUDA's grid limits, outputs without tiles.

use super::*;

#[test]
fn persistent_grids() {
    let plan = plan_of(
        &[
            param(
                "z",
                "mut_tensor",
                "f32",
                &[DimSpec::Int(32), DimSpec::Int(64)],
            ),
            param(
                "w",
                "mut_tensor",
                "f32",
                &[DimSpec::Int(32), DimSpec::Int(64)],
            ),
        ],
        &[],
        &["z", "w"],
        vec![],
        4,
    );
    let mk = |h: u64, nb: Option<u64>| {
        let d = view(h, &[150, 300], Some(&[32, 64]), "f32");
        // (a descriptor is made from its view, never changed after)
        TensorDesc::new(View {
            num_blocks: nb,
            ..d.view
        })
        .unwrap()
    };
    let (a, b) = (mk(1, None), mk(2, None));
    assert_eq!(
        plan.grid("k", &[Arg::Handle(&a), Arg::Handle(&b)], &[])
            .unwrap(),
        [4, 1, 1]
    );
    let (a, b) = (mk(1, Some(7)), mk(2, None));
    assert_eq!(
        plan.grid("k", &[Arg::Handle(&a), Arg::Handle(&b)], &[])
            .unwrap(),
        [7, 1, 1]
    );
    let (a, b) = (mk(1, Some(7)), mk(2, Some(3)));
    assert!(plan
        .grid("k", &[Arg::Handle(&a), Arg::Handle(&b)], &[])
        .is_err());
    // a regular partition beside a mapped one must have the block grid
    let mixed = plan_of(
        &[
            param(
                "z",
                "mut_tensor",
                "f32",
                &[DimSpec::Int(32), DimSpec::Int(64)],
            ),
            param("w", "mut_tensor", "f32", &[DimSpec::Int(4)]),
        ],
        &[],
        &["z"],
        vec![],
        132,
    );
    let z = mk(1, Some(5));
    let w5 = view(2, &[20], Some(&[4]), "f32");
    let w6 = view(3, &[24], Some(&[4]), "f32");
    assert_eq!(
        mixed
            .grid("k", &[Arg::Handle(&z), Arg::Handle(&w5)], &[])
            .unwrap(),
        [5, 1, 1]
    );
    assert!(mixed
        .grid("k", &[Arg::Handle(&z), Arg::Handle(&w6)], &[])
        .is_err());
    // no partition at all: no grid
    let none = plan_of(
        &[param("x", "tensor", "f32", &[DimSpec::Int(-1)])],
        &[],
        &[],
        vec![],
        132,
    );
    let x = view(1, &[8], None, "f32");
    assert!(none.grid("k", &[Arg::Handle(&x)], &[]).is_err());
}

#[test]
fn persistent_tile_ids_fit_32_bits() {
    // the schedule counts flat tile ids in i32: tiles + blocks must stay below 2^31
    let plan = plan_of(
        &[param(
            "z",
            "mut_tensor",
            "f32",
            &[DimSpec::Int(1), DimSpec::Int(1)],
        )],
        &[],
        &["z"],
        vec![],
        132,
    );
    let mk = |rows: i64, nb: Option<u64>| {
        let d = view(1, &[rows, 65_536], Some(&[1, 1]), "f32");
        // (a descriptor is made from its view, never changed after)
        TensorDesc::new(View {
            num_blocks: nb,
            ..d.view
        })
        .unwrap()
    };
    let fits = mk(32_767, None);
    assert_eq!(
        plan.grid("k", &[Arg::Handle(&fits)], &[]).unwrap(),
        [132, 1, 1]
    );
    for (rows, nb) in [(32_768, None), (32_767, Some(65_536))] {
        let big = mk(rows, nb);
        match plan.grid("k", &[Arg::Handle(&big)], &[]) {
            Err(Refusal::Refused(e)) => {
                assert_eq!(e.code, "CT6109");
                assert!(e.message.contains("2^31 - 1 tile ids"), "{}", e.message);
            }
            other => panic!("{other:?}"),
        }
    }
}

/// One `Mut` output of rank 3 whose tile is one element: the grid is the tensor's shape.
fn one_element_tiles() -> LaunchPlan {
    plan_of(
        &[param(
            "z",
            "mut_tensor",
            "i8",
            &[DimSpec::Int(1), DimSpec::Int(1), DimSpec::Int(1)],
        )],
        &[],
        &[],
        vec![],
        132,
    )
}

#[test]
fn grids_past_cudas_limits_are_refused() {
    let plan = one_element_tiles();
    let grid = |shape: [i64; 3]| {
        let d = view(1, &shape, Some(&[1, 1, 1]), "i8");
        plan.grid("k", &[Arg::Handle(&d)], &[])
    };
    // x up to 2^31 - 1, y and z up to 65,535: the limits themselves launch
    for ok in [[(1 << 31) - 1, 1, 1], [1, 65_535, 1], [1, 1, 65_535]] {
        let want = ok.map(|g| g as u64);
        assert_eq!(grid(ok).unwrap(), want);
    }
    for (axis, past) in [[1 << 31, 1, 1], [1, 65_536, 1], [1, 1, 65_536]]
        .into_iter()
        .enumerate()
    {
        match grid(past) {
            Err(Refusal::Refused(e)) => {
                assert_eq!(e.code, "CT6109");
                assert_eq!(e.kind, crate::ErrorKind::Launch);
                let max = MAX_GRID[axis];
                assert_eq!(
                    e.message,
                    format!(
                        "`k`: the grid needs {} blocks on axis {axis}; CUDA allows at most {max}",
                        max + 1
                    )
                );
            }
            other => panic!("{past:?}: {other:?}"),
        }
    }
}

#[test]
fn outputs_without_tiles_launch_no_block() {
    let plan = one_element_tiles();
    for shape in [[0, 1, 1], [4, 0, 1], [1, 1, 0], [0, 0, 0]] {
        let d = view(1, &shape, Some(&[1, 1, 1]), "i8");
        assert_eq!(plan.grid("k", &[Arg::Handle(&d)], &[]).unwrap(), [0; 3]);
    }
    // an empty axis wins over one past the limits: nothing is launched at all
    let d = view(1, &[0, 70_000, 1], Some(&[1, 1, 1]), "i8");
    assert_eq!(plan.grid("k", &[Arg::Handle(&d)], &[]).unwrap(), [0; 3]);
}

/// A persistent output without tiles beside outputs with tiles: the launch still runs the
/// others' blocks (a `[0, 0, 0]` grid would leave their tiles unwritten), and a regular
/// output beside only empty persistent ones must itself be empty or match the grid.
#[test]
fn an_empty_persistent_output_does_not_empty_the_launch() {
    let two = |persistent: &[&str]| {
        plan_of(
            &[
                param("z", "mut_tensor", "f32", &[DimSpec::Int(4)]),
                param("w", "mut_tensor", "f32", &[DimSpec::Int(4)]),
            ],
            &[],
            persistent,
            vec![],
            132,
        )
    };
    let mk = |h: u64, n: i64, nb: Option<u64>| {
        let d = view(h, &[n], Some(&[4]), "f32");
        TensorDesc::new(View {
            num_blocks: nb,
            ..d.view
        })
        .unwrap()
    };
    let both = two(&["z", "w"]);
    let grid = |plan: &LaunchPlan, a: &TensorDesc, b: &TensorDesc| {
        plan.grid("k", &[Arg::Handle(a), Arg::Handle(b)], &[])
    };
    assert_eq!(
        grid(&both, &mk(1, 32, None), &mk(2, 0, None)).unwrap(),
        [8, 1, 1]
    );
    assert_eq!(
        grid(&both, &mk(1, 0, Some(3)), &mk(2, 32, None)).unwrap(),
        [3, 1, 1]
    );
    assert_eq!(
        grid(&both, &mk(1, 0, None), &mk(2, 0, Some(3))).unwrap(),
        [0; 3]
    );
    let mixed = two(&["z"]);
    assert_eq!(
        grid(&mixed, &mk(1, 0, None), &mk(2, 0, None)).unwrap(),
        [0; 3]
    );
    assert_eq!(
        grid(&mixed, &mk(1, 0, None), &mk(2, 4, None)).unwrap(),
        [1, 1, 1]
    );
    for nb in [None, Some(2)] {
        match grid(&mixed, &mk(1, 0, nb), &mk(2, 32, None)) {
            Err(Refusal::Refused(e)) => assert_eq!(e.code, "CT6001"),
            other => panic!("{nb:?}: {other:?}"),
        }
    }
}

/// `Atomic` parameters: bound like a tensor, held exclusively, no part of the grid; a
/// kernel whose only outputs are `Atomic` runs the grid given at the call.
#[test]
fn atomic_parameters_and_explicit_grids() {
    let plan = plan_of(
        &[
            param("a", "atomic_tensor", "i32", &[DimSpec::Int(-1)]),
            param("x", "tensor", "i32", &[DimSpec::Int(-1)]),
        ],
        &[],
        &[],
        vec![],
        132,
    );
    assert_eq!(plan.params[0].kind, ParamKind::Atomic);
    let (a, x) = (view(1, &[10], None, "i32"), view(2, &[100], None, "i32"));
    let args = [Arg::Handle(&a), Arg::Handle(&x)];
    plan.bind(&args, &[]).unwrap();
    assert_eq!(plan.moves(&args), vec![(1, true), (2, false)]);
    assert!(plan.accesses(&args)[0].exclusive && !plan.accesses(&args)[1].exclusive);
    // no `Mut` output: the grid must be given, and is taken as given
    let refused = |r: Result<[u64; 3], Refusal>, code: &str| match r {
        Err(Refusal::Refused(e)) => assert_eq!(e.code, code),
        other => panic!("expected {code}, got {other:?}"),
    };
    refused(plan.grid("k", &args, &[]), "CT6107");
    assert_eq!(
        plan.grid_with("k", &args, &[], Some([7, 2, 1])).unwrap(),
        [7, 2, 1]
    );
    assert_eq!(
        plan.grid_with("k", &args, &[], Some([0, 1, 1])).unwrap(),
        [0; 3]
    );
    refused(
        plan.grid_with("k", &args, &[], Some([1, 1 << 20, 1])),
        "CT6109",
    );
    // an atomic argument takes a Tensor, not a Partition
    let p = view(3, &[10], Some(&[5]), "i32");
    assert!(plan.bind(&[Arg::Handle(&p), Arg::Handle(&x)], &[]).is_err());
    // with a `Mut` output the grid is the output's; `grid=` may only repeat it
    let with_out = plan_of(
        &[
            param("z", "mut_tensor", "f32", &[DimSpec::Int(4)]),
            param("a", "atomic_tensor", "i32", &[DimSpec::Int(-1)]),
        ],
        &[],
        &[],
        vec![],
        132,
    );
    let z = view(4, &[16], Some(&[4]), "f32");
    let args = [Arg::Handle(&z), Arg::Handle(&a)];
    assert_eq!(with_out.grid("k", &args, &[]).unwrap(), [4, 1, 1]);
    assert_eq!(
        with_out
            .grid_with("k", &args, &[], Some([4, 1, 1]))
            .unwrap(),
        [4, 1, 1]
    );
    refused(
        with_out.grid_with("k", &args, &[], Some([8, 1, 1])),
        "CT6001",
    );
}
