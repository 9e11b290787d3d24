//! Time budget: checking a 200-line kernel (parse + all rules) takes at most 5 ms.
//! `corpus/ok_long_kernel.py` is that kernel (202 lines, loops, device calls, sub-partitions).
//! Debug builds get 10x the budget; `cargo test --release -p cutile-check --test perf`
//! checks the real number and prints it.

use std::time::Instant;

#[test]
fn checking_a_200_line_kernel_takes_under_5_ms() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/ok_long_kernel.json");
    let json = std::fs::read_to_string(&path).expect("read");
    let src = std::fs::read_to_string(path.with_extension("py")).expect("read py");
    assert!(src.lines().count() >= 200);
    // Warm up, then take the best of several runs (the machine is shared).
    let (_, out) = cutile_check::check_json(&json).expect("valid");
    assert!(out.ok(), "{:?}", out.codes());
    let mut best = f64::MAX;
    for _ in 0..20 {
        let t = Instant::now();
        let (_, out) = cutile_check::check_json(&json).expect("valid");
        std::hint::black_box(out);
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
    }
    let budget = if cfg!(debug_assertions) { 50.0 } else { 5.0 };
    println!(
        "check of a {}-line kernel: {best:.3} ms (budget {budget} ms)",
        src.lines().count()
    );
    assert!(best <= budget, "took {best:.3} ms");
}

#[test]
fn parse_and_check_split() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/ok_long_kernel.json");
    let json = std::fs::read_to_string(&path).expect("read");
    let mut parse = f64::MAX;
    let mut check = f64::MAX;
    for _ in 0..10 {
        let t = Instant::now();
        let doc = cutile_kast::parse(&json).expect("valid");
        parse = parse.min(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        std::hint::black_box(cutile_check::check(&doc));
        check = check.min(t.elapsed().as_secs_f64() * 1e3);
    }
    println!("parse {parse:.3} ms, check {check:.3} ms");
}

/// The counterexample search of a store map that neither proves nor collides spends its
/// whole budget (`search::BUDGET` block evaluations): at most 2 ms (debug builds 40 ms).
#[test]
fn an_exhausted_counterexample_search_takes_under_2_ms() {
    use cutile_check::search::{search, Goal};
    use cutile_check::sym::{Atom, Poly};
    let h = Poly::atom(Atom::Const("H".into()));
    let w = Poly::atom(Atom::Const("W".into()));
    let b = |k| Poly::atom(Atom::BlockId(k));
    let g = |k| Poly::atom(Atom::Grid(k));
    // Injective on every small launch, but `min` is outside what the provers decide.
    let comps = [
        b(0).modulo(&h)
            .add(&b(0).floordiv(&h).mul(&h))
            .pmin(&Poly::c(1000)),
        b(1).modulo(&w).add(&b(1).floordiv(&w).mul(&w)),
        b(2),
    ];
    let tiles = [g(0), g(1), g(2)];
    let mut best = f64::MAX;
    for _ in 0..10 {
        let t = Instant::now();
        let found = search(&comps, &tiles, 3, &[false; 3], &[], Goal::Collision);
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
        assert!(found.is_none());
    }
    let budget = if cfg!(debug_assertions) { 40.0 } else { 2.0 };
    println!("exhausted counterexample search: {best:.3} ms (budget {budget} ms)");
    assert!(best <= budget, "took {best:.3} ms");
}
