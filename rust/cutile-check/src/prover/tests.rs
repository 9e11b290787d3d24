use super::*;
use proptest::prelude::*;

fn ranges(rank: usize) -> Ranges {
    Ranges {
        grid: std::array::from_fn(|k| {
            if k < rank {
                Poly::atom(Atom::Grid(k as u8))
            } else {
                Poly::c(1)
            }
        }),
        ..Default::default()
    }
}

fn b(k: u8) -> Poly {
    Poly::atom(Atom::BlockId(k))
}

fn g(k: u8) -> Poly {
    Poly::atom(Atom::Grid(k))
}

#[test]
fn identity_and_reversal_are_static() {
    let r = ranges(2);
    let tiles = [g(0), g(1)];
    assert_eq!(
        prove_store_map(&[b(0), b(1)], &tiles, &r, 2),
        StoreMapProof::Proved(Rung::Static)
    );
    let rev = g(0).sub(&Poly::c(1)).sub(&b(0));
    assert_eq!(
        prove_store_map(&[rev, b(1)], &tiles, &r, 2),
        StoreMapProof::Proved(Rung::Static)
    );
}

#[test]
fn axis_permutation_needs_square_grid_at_launch() {
    let r = ranges(2);
    let p = prove_store_map(&[b(1), b(0)], &[g(0), g(1)], &r, 2);
    match p {
        StoreMapProof::Proved(Rung::Launch(pred)) => {
            assert!(
                pred.text.contains("grid(1) <= grid(0)")
                    && pred.text.contains("grid(0) <= grid(1)"),
                "{pred}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn collision_gives_a_counterexample() {
    let r = ranges(2);
    let p = prove_store_map(&[b(0).add(&b(1)), Poly::zero()], &[g(0), g(1)], &r, 2);
    match p {
        StoreMapProof::Collision { a, b, .. } => {
            assert_ne!(a, b);
            assert_eq!(a[0] + a[1], b[0] + b[1]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn off_by_one_is_out_of_bounds() {
    let r = ranges(1);
    let p = prove_store_map(&[b(0).add(&Poly::c(1))], &[g(0)], &r, 1);
    assert!(
        matches!(p, StoreMapProof::OutOfBounds { axis: 0, .. }),
        "{p:?}"
    );
}

#[test]
fn symbolic_coefficient_needs_determinant_at_launch() {
    let r = ranges(1);
    let s = Poly::atom(Atom::Const("S".into()));
    let p = prove_store_map(&[b(0).mul(&s)], &[g(0)], &r, 1);
    match p {
        StoreMapProof::Proved(Rung::Launch(pred)) => {
            assert!(pred.text.contains("S != 0"), "{pred}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn kernel_vectors() {
    let kv = |m: &[Vec<i128>], n| kernel_vector(m, n).expect("small entries");
    assert_eq!(kv(&[vec![1, 0], vec![0, 1]], 2), None);
    assert_eq!(kv(&[vec![1, 1]], 2), Some(vec![1, -1]));
    assert_eq!(kv(&[vec![2, 4], vec![1, 2]], 2), Some(vec![2, -1]));
    assert_eq!(kv(&[vec![0, 0]], 2), Some(vec![1, 0]));
    let v = kv(&[vec![1, 2, 3], vec![4, 5, 6], vec![7, 8, 9]], 3).unwrap();
    assert_eq!(v[0] + 2 * v[1] + 3 * v[2], 0);
    assert_eq!(4 * v[0] + 5 * v[1] + 6 * v[2], 0);
    // Entries near the limit of the affine prover overflow the elimination: reported,
    // never a wrong answer or a panic.
    let big = (1i128 << 20) - 3;
    let m = [
        vec![big, big - 1, big - 2, big - 5],
        vec![big - 7, big, big - 11, big - 13],
        vec![big - 17, big - 19, big, big - 23],
        vec![big - 29, big - 31, big - 37, big],
    ];
    if let Ok(Some(v)) = kernel_vector(&m, 4) {
        for row in &m {
            assert_eq!(row.iter().zip(&v).map(|(a, b)| a * b).sum::<i128>(), 0);
        }
    }
    let huge = [vec![i128::MAX, 3], vec![5, i128::MAX]];
    assert_eq!(kernel_vector(&huge, 2), Err(Overflow));
}

/// Brute force: is `index = A b + c` injective and inside `[0, grid)` on a concrete grid?
fn brute(a: &[Vec<i128>], c: &[i128], grid: &[i128]) -> (bool, bool) {
    let n = grid.len();
    let mut seen = std::collections::HashSet::new();
    let mut injective = true;
    let mut inside = true;
    let total: i128 = grid.iter().product();
    for flat in 0..total {
        let mut bb = vec![0i128; n];
        let mut f = flat;
        for j in (0..n).rev() {
            bb[j] = f % grid[j];
            f /= grid[j];
        }
        let idx: Vec<i128> = (0..a.len())
            .map(|i| c[i] + (0..n).map(|j| a[i][j] * bb[j]).sum::<i128>())
            .collect();
        if idx.iter().zip(grid).any(|(x, gg)| *x < 0 || x >= gg) {
            inside = false;
        }
        if !seen.insert(idx) {
            injective = false;
        }
    }
    (injective, inside)
}

/// Evaluate a launch predicate produced by the prover on a concrete grid, with the
/// evaluator the host uses.
fn eval_pred(pred: &cutile_facts::Pred, grid: &[i128]) -> bool {
    let env = |a: &cutile_facts::Atom| match a {
        cutile_facts::Atom::Grid(k) => grid.get(usize::from(*k)).copied(),
        _ => None,
    };
    pred.eval(&env).unwrap_or_else(|e| panic!("`{pred}`: {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The prover never accepts a map that collides or leaves the grid on some small grid.
    #[test]
    fn prover_agrees_with_brute_force(
        n in 1usize..=3,
        coeffs in proptest::collection::vec(-2i128..=2, 9),
        offs in proptest::collection::vec(-2i128..=2, 3),
        use_grid_offset in proptest::collection::vec(proptest::bool::ANY, 3),
        grid in proptest::collection::vec(1i128..=4, 3),
    ) {
        let a: Vec<Vec<i128>> = (0..n).map(|i| (0..n).map(|j| coeffs[i * 3 + j]).collect()).collect();
        let r = ranges(n);
        // Components, with an optional `grid(i) - 1` offset (reversals).
        let comps: Vec<Poly> = (0..n).map(|i| {
            let mut p = Poly::c(offs[i]);
            if use_grid_offset[i] { p = p.add(&g(i as u8)).sub(&Poly::c(1)); }
            for (j, aij) in a[i].iter().enumerate() { p = p.add(&b(j as u8).scale(*aij)); }
            p
        }).collect();
        let tiles: Vec<Poly> = (0..n).map(|k| g(k as u8)).collect();
        let grid = &grid[..n];
        let c: Vec<i128> = (0..n).map(|i| offs[i] + if use_grid_offset[i] { grid[i] - 1 } else { 0 }).collect();
        let (inj, inside) = brute(&a, &c, grid);
        match prove_store_map(&comps, &tiles, &r, n) {
            StoreMapProof::Proved(Rung::Static) => prop_assert!(inj && inside, "accepted {a:?} {c:?} on {grid:?}"),
            StoreMapProof::Proved(Rung::Launch(pred)) => {
                if eval_pred(&pred, grid) {
                    prop_assert!(inj && inside, "launch predicate `{pred}` holds but {a:?} {c:?} fails on {grid:?}");
                }
            }
            StoreMapProof::Proved(rung) => prop_assert!(false, "unexpected {rung:?}"),
            StoreMapProof::Collision { a: x, b: y, .. } => {
                // The counterexample really collides whenever the grid holds both blocks.
                if x.iter().zip(&y).zip(grid).all(|((p, q), gg)| p < gg && q < gg) {
                    prop_assert!(!inj);
                }
            }
            StoreMapProof::OutOfBounds { .. } => {
                // Out of bounds on this grid, or on the grid of 2 blocks per axis (the
                // degenerate-grid refutation).
                let twos = vec![2i128; n];
                let c2: Vec<i128> = (0..n).map(|i| offs[i] + if use_grid_offset[i] { 1 } else { 0 }).collect();
                prop_assert!(!inside || !brute(&a, &c2, &twos).1);
            }
            StoreMapProof::CollisionAt { launch, a: x, b: y, tile } => {
                prop_assert!(x != y && x.iter().zip(&launch.grid).all(|(p, gg)| *p < *gg));
                let env = |b: &[i128]| Env { blocks: b.to_vec(), grid: launch.grid.clone(), h: 1 };
                prop_assert_eq!(eval_map(&comps, &env(&x)), Some(tile.clone()));
                prop_assert_eq!(eval_map(&comps, &env(&y)), Some(tile));
            }
            StoreMapProof::OutOfBoundsAt { .. } => prop_assert!(false, "affine maps are decided symbolically"),
            StoreMapProof::Unprovable(_) => {}
        }
    }
}

/// Values for evaluating a map: block ids, grid extents, and the `Const` `H`.
struct Env {
    blocks: Vec<i128>,
    grid: Vec<i128>,
    h: i128,
}

fn eval_map(comps: &[Poly], env: &Env) -> Option<Vec<i128>> {
    let f = |a: &Atom| match a {
        Atom::BlockId(k) => Some(env.blocks.get(*k as usize).copied().unwrap_or(0)),
        Atom::Grid(k) => Some(env.grid.get(*k as usize).copied().unwrap_or(1)),
        Atom::Const(n) if n == "H" => Some(env.h),
        _ => None,
    };
    comps.iter().map(|c| c.eval(&f)).collect()
}

/// Brute force over every block of `grid`: (injective among in-bounds tiles, every tile in
/// bounds).
fn brute_map(comps: &[Poly], grid: &[i128], h: i128) -> (bool, bool) {
    let total: i128 = grid.iter().product();
    let mut seen = std::collections::HashSet::new();
    let (mut injective, mut inside) = (true, true);
    for flat in 0..total {
        let mut bb = vec![0i128; grid.len()];
        let mut f = flat;
        for j in (0..grid.len()).rev() {
            bb[j] = f % grid[j];
            f /= grid[j];
        }
        let env = Env {
            blocks: bb,
            grid: grid.to_vec(),
            h,
        };
        let Some(t) = eval_map(comps, &env) else {
            return (false, false);
        };
        if t.iter().zip(grid).any(|(x, g)| *x < 0 || x >= g) {
            inside = false;
        } else if !seen.insert(t) {
            injective = false;
        }
    }
    (injective, inside)
}

fn eval_pred_h(pred: &cutile_facts::Pred, grid: &[i128], h: i128) -> bool {
    let env = |a: &cutile_facts::Atom| match a {
        cutile_facts::Atom::Grid(k) => grid.get(usize::from(*k)).copied(),
        cutile_facts::Atom::Const(n) if n == "H" => Some(h),
        _ => None,
    };
    match pred.eval(&env) {
        Ok(v) => v,
        // Undecidable (a division by zero): the host refuses the launch.
        Err(cutile_facts::EvalError::Unknown(a)) => panic!("`{pred}`: no value for {a}"),
        Err(_) => false,
    }
}

/// One term of a generated component: `coeff * f(block_id(axis))`.
#[derive(Debug, Clone)]
struct Term {
    axis: usize,
    /// 0: `b`, 1: `b // d`, 2: `b % d`, 3: `b // d // 2`, 4: `(b // d) % 2`.
    form: u8,
    /// -2..=2, or 3 for the axis's divisor `d` (so `d * (b // d)` appears often).
    coeff: i8,
}

fn term_strategy() -> impl Strategy<Value = Term> {
    (0usize..3, 0u8..5, -2i8..=3).prop_map(|(axis, form, coeff)| Term { axis, form, coeff })
}

fn build_map(n: usize, divisors: &[Poly], comps: &[Vec<Term>], offs: &[i128]) -> Vec<Poly> {
    (0..n)
        .map(|i| {
            let mut p = Poly::c(offs[i]);
            for t in comps[i].iter().filter(|t| t.axis < n) {
                let x = b(t.axis as u8);
                let d = &divisors[t.axis];
                let f = match t.form {
                    0 => x,
                    1 => x.floordiv(d),
                    2 => x.modulo(d),
                    // Nested digits: a chain d | 2d.
                    3 => x.floordiv(d).floordiv(&Poly::c(2)),
                    _ => x.floordiv(d).modulo(&Poly::c(2)),
                };
                let k = if t.coeff == 3 {
                    d.clone()
                } else {
                    Poly::c(i128::from(t.coeff))
                };
                p = p.add(&f.mul(&k));
            }
            p
        })
        .collect()
}

#[test]
fn digits_of_the_head_permutation() {
    // (b * H + h, m, 0) is the identity on its first two axes once normalized; axis 2 is
    // collapsed.
    let h = Poly::atom(Atom::Const("H".into()));
    let comps = [
        b(0).floordiv(&h).mul(&h).add(&b(0).modulo(&h)),
        b(1),
        Poly::zero(),
    ];
    let r = ranges(3);
    let p = prove_store_map(&comps, &[g(0), g(1), g(2)], &r, 3);
    match p {
        StoreMapProof::Proved(Rung::Launch(q)) => assert_eq!(q.text, "grid(2) <= 1 && 1 <= H"),
        other => panic!("{other:?}"),
    }
    // The racy variant (b * H + m, h, 0) collides on a small launch.
    let racy = [
        b(0).floordiv(&h).mul(&h).add(&b(1)),
        b(0).modulo(&h),
        Poly::zero(),
    ];
    match prove_store_map(&racy, &[g(0), g(1), g(2)], &r, 3) {
        StoreMapProof::CollisionAt { launch, a, b, tile } => {
            assert_eq!(launch.text(), "H = 2 and grid (3, 3, 1)");
            assert_eq!((a, b, tile), (vec![0, 2, 0], vec![2, 0, 0], vec![2, 0, 0]));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn three_level_digit_swap_is_injective() {
    // a = x % A, b = (x // A) % B, c = x // A // B; index c * (A * B) + a * B + b.
    let ca = Poly::atom(Atom::Const("A".into()));
    let cb = Poly::atom(Atom::Const("B".into()));
    let x = b(0);
    let a = x.modulo(&ca);
    let bb = x.floordiv(&ca).modulo(&cb);
    let c = x.floordiv(&ca).floordiv(&cb);
    let idx = c.mul(&ca.mul(&cb)).add(&a.mul(&cb)).add(&bb);
    let p = prove_store_map(&[idx], &[g(0)], &ranges(1), 1);
    match p {
        StoreMapProof::Proved(Rung::Launch(q)) => assert_eq!(
            q.text,
            "1 <= A && 1 <= B && A * B * cdiv(grid(0), A * B) <= grid(0)"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn quotient_alone_collides() {
    let p = prove_store_map(&[b(0).floordiv(&Poly::c(2))], &[g(0)], &ranges(1), 1);
    match p {
        StoreMapProof::CollisionAt { launch, a, b, tile } => {
            assert_eq!(launch.text(), "grid (2,)");
            assert_eq!((a, b, tile), (vec![0], vec![1], vec![0]));
        }
        other => panic!("{other:?}"),
    }
}

/// The prover's verdict on `map` against brute force on one launch (`grid`, `H = h`):
/// an accepted map (static, or its launch predicate holds) is injective and inside, and
/// every counterexample is real.
fn verify(map: &[Poly], n: usize, grid: &[i128], h: i128) -> Result<(), TestCaseError> {
    let tiles: Vec<Poly> = (0..n).map(|k| g(k as u8)).collect();
    let (inj, inside) = brute_map(map, grid, h);
    match prove_store_map(map, &tiles, &ranges(n), n) {
        StoreMapProof::Proved(Rung::Static) => {
            prop_assert!(
                inj && inside,
                "accepted {map:?} but fails on {grid:?}, H = {h}"
            )
        }
        StoreMapProof::Proved(Rung::Launch(pred)) => {
            if eval_pred_h(&pred, grid, h) {
                prop_assert!(
                    inj && inside,
                    "`{pred}` holds but {map:?} fails on {grid:?}, H = {h}"
                );
            }
        }
        StoreMapProof::Proved(rung) => prop_assert!(false, "unexpected {rung:?}"),
        StoreMapProof::Collision {
            a: x, b: y, tile, ..
        } => {
            if x.iter()
                .zip(&y)
                .zip(grid)
                .all(|((p, q), gg)| p < gg && q < gg)
            {
                let env = |b: &[i128]| Env {
                    blocks: b.to_vec(),
                    grid: grid.to_vec(),
                    h,
                };
                // (undefined where the map divides by zero: see below)
                let (tx, ty) = (eval_map(map, &env(&x)), eval_map(map, &env(&y)));
                if tx.is_some() && ty.is_some() {
                    prop_assert_eq!(&tx, &ty, "{} {:?}", tile, map);
                }
            }
        }
        StoreMapProof::CollisionAt {
            launch,
            a: x,
            b: y,
            tile,
        } => {
            let hv = launch.value(&Atom::Const("H".into())).unwrap_or(1);
            prop_assert!(x != y);
            prop_assert!(x
                .iter()
                .chain(&y)
                .zip(launch.grid.iter().chain(&launch.grid))
                .all(|(p, gg)| *p < *gg));
            prop_assert!(tile
                .iter()
                .zip(&launch.grid)
                .all(|(t, gg)| *t >= 0 && t < gg));
            let env = |b: &[i128]| Env {
                blocks: b.to_vec(),
                grid: launch.grid.clone(),
                h: hv,
            };
            // A map that divides by zero at a block is undefined there (the device gives
            // any value, or traps): the prover may have simplified such a term away, and
            // rejecting the kernel is right either way.
            let (ex, ey) = (eval_map(map, &env(&x)), eval_map(map, &env(&y)));
            if ex.is_some() && ey.is_some() {
                prop_assert_eq!(ex, Some(tile.clone()));
                prop_assert_eq!(ey, Some(tile));
            }
        }
        StoreMapProof::OutOfBounds { .. } => {
            let twos = vec![2i128; n];
            prop_assert!(!inside || !brute_map(map, &twos, h).1, "{map:?}");
        }
        StoreMapProof::OutOfBoundsAt {
            launch,
            block,
            tile,
            axis,
            count,
        } => {
            let hv = launch.value(&Atom::Const("H".into())).unwrap_or(1);
            let env = Env {
                blocks: block,
                grid: launch.grid.clone(),
                h: hv,
            };
            prop_assert_eq!(eval_map(map, &env), Some(tile.clone()));
            prop_assert!(tile[axis] < 0 || tile[axis] >= count);
            prop_assert_eq!(count, launch.grid[axis]);
        }
        StoreMapProof::Unprovable(_) => {}
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// Maps built from block ids, `b // d` and `b % d` (constant or `Const` divisors): the
    /// prover never accepts one that collides or leaves the grid on a small launch, and
    /// every counterexample it reports is real.
    #[test]
    fn digit_maps_agree_with_brute_force(
        n in 1usize..=3,
        divs in proptest::collection::vec(0i128..=3, 3),
        comps in proptest::collection::vec(proptest::collection::vec(term_strategy(), 0..=3), 3),
        offs in proptest::collection::vec(-1i128..=1, 3),
        grid in proptest::collection::vec(1i128..=5, 3),
        h in 1i128..=3,
    ) {
        let map = build_map(n, &divisors(&divs), &comps, &offs);
        verify(&map, n, &grid[..n], h)?;
    }

    /// Recombined digits: each block id split into `b % d` and `b // d`, the digits dealt
    /// to the components in a random order with mixed-radix weights (the radix after a
    /// quotient is 3, after a remainder its divisor), some digits dropped: a mix of
    /// bijections, maps that need launch predicates, and races.
    #[test]
    fn recombined_digits_agree_with_brute_force(
        n in 1usize..=3,
        divs in proptest::collection::vec(0i128..=3, 3),
        deal in proptest::collection::vec((0usize..3, 0u8..8, proptest::bool::weighted(0.1)), 6),
        grid in proptest::collection::vec(1i128..=6, 3),
        h in 1i128..=3,
    ) {
        let ds = divisors(&divs);
        // Digit 2j is b_j % d_j, digit 2j + 1 is b_j // d_j.
        let mut parts: Vec<Vec<(u8, usize)>> = vec![Vec::new(); n];
        for (i, (comp, order, drop)) in deal.iter().enumerate().take(2 * n) {
            if !drop {
                parts[comp % n].push((*order, i));
            }
        }
        let map: Vec<Poly> = parts
            .iter_mut()
            .map(|p| {
                p.sort();
                let mut weight = Poly::c(1);
                let mut c = Poly::zero();
                for (_, i) in p.iter() {
                    let (x, d) = (b((i / 2) as u8), &ds[i / 2]);
                    let (digit, radix) = if i % 2 == 0 {
                        (x.modulo(d), d.clone())
                    } else {
                        (x.floordiv(d), Poly::c(3))
                    };
                    c = c.add(&digit.mul(&weight));
                    weight = weight.mul(&radix);
                }
                c
            })
            .collect();
        verify(&map, n, &grid[..n], h)?;
    }
}

/// Divisor choices: 0 is the symbolic `H`, others are literals.
fn divisors(divs: &[i128]) -> Vec<Poly> {
    divs.iter()
        .map(|d| {
            if *d == 0 {
                Poly::atom(Atom::Const("H".into()))
            } else {
                Poly::c(*d)
            }
        })
        .collect()
}

/// A random integer expression over block ids, `grid(k)`, `H` and small literals.
/// Past the grid rank `n`, block ids are 0 and grid extents 1, as the checker has them.
fn expr_strategy(n: usize) -> impl Strategy<Value = Poly> {
    let n = n as u8;
    let leaf = prop_oneof![
        (0u8..3).prop_map(move |k| if k < n { b(k) } else { Poly::zero() }),
        (0u8..3).prop_map(move |k| if k < n { g(k) } else { Poly::c(1) }),
        Just(Poly::atom(Atom::Const("H".into()))),
        (-3i128..=4).prop_map(Poly::c),
    ];
    leaf.prop_recursive(3, 24, 2, |inner| {
        (inner.clone(), inner, 0u8..8).prop_map(|(x, y, op)| match op {
            0 => x.add(&y),
            1 => x.sub(&y),
            2 => x.mul(&y),
            3 => x.floordiv(&y),
            4 => x.modulo(&y),
            5 => x.cdiv(&y),
            6 => x.pmin(&y),
            _ => x.pmax(&y),
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// Arbitrary expressions (zero and negative divisors, `cdiv`, `min`, `max`): no panic,
    /// no accepted map that fails on a small launch, no false counterexample.
    #[test]
    fn arbitrary_maps_agree_with_brute_force(
        (n, map) in (1usize..=3).prop_flat_map(|n| {
            (Just(n), proptest::collection::vec(expr_strategy(n), n))
        }),
        grid in proptest::collection::vec(1i128..=4, 3),
        h in 1i128..=3,
    ) {
        verify(&map, n, &grid[..n], h)?;
        // The bounds ladder on the same expressions (a load index against 4 tiles).
        let r = ranges(n);
        for p in &map {
            let rung = r.decide_index(p, &Poly::c(4));
            let all_inside = |gr: &[i128]| {
                (0..gr.iter().product::<i128>()).all(|flat| {
                    let mut bb = vec![0i128; gr.len()];
                    let mut f = flat;
                    for j in (0..gr.len()).rev() {
                        bb[j] = f % gr[j];
                        f /= gr[j];
                    }
                    let env = Env { blocks: bb, grid: gr.to_vec(), h };
                    eval_map(std::slice::from_ref(p), &env).is_some_and(|v| (0..4).contains(&v[0]))
                })
            };
            match rung {
                Rung::Static => prop_assert!(all_inside(&grid[..n]), "{p} static"),
                // An undecidable predicate (division by zero) refuses the launch.
                Rung::Launch(pred) if eval_pred_h(&pred, &grid[..n], h) => {
                    prop_assert!(all_inside(&grid[..n]), "{p}: `{pred}` holds");
                }
                _ => {}
            }
        }
    }
}
