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
                pred.contains("grid(1) <= grid(0)") && pred.contains("grid(0) <= grid(1)"),
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
        StoreMapProof::Proved(Rung::Launch(pred)) => assert!(pred.contains("S != 0"), "{pred}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn kernel_vectors() {
    assert_eq!(kernel_vector(&[vec![1, 0], vec![0, 1]], 2), None);
    assert_eq!(kernel_vector(&[vec![1, 1]], 2), Some(vec![1, -1]));
    assert_eq!(
        kernel_vector(&[vec![2, 4], vec![1, 2]], 2),
        Some(vec![2, -1])
    );
    assert_eq!(kernel_vector(&[vec![0, 0]], 2), Some(vec![1, 0]));
    let v = kernel_vector(&[vec![1, 2, 3], vec![4, 5, 6], vec![7, 8, 9]], 3).unwrap();
    assert_eq!(v[0] + 2 * v[1] + 3 * v[2], 0);
    assert_eq!(4 * v[0] + 5 * v[1] + 6 * v[2], 0);
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
fn eval_pred(pred: &str, grid: &[i128]) -> bool {
    let env: std::collections::HashMap<String, i128> = grid
        .iter()
        .enumerate()
        .map(|(k, g)| (format!("grid({k})"), *g))
        .collect();
    crate::predicate::eval(pred, &env).unwrap_or_else(|e| panic!("`{pred}`: {e}"))
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
            StoreMapProof::Unprovable(_) => {}
        }
    }
}
