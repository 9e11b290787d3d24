//! Check one kernel AST file many times (for `perf record`):
//! `cargo run --release -p cutile-check --example profile_check -- FILE.json [N]`.

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: profile_check FILE.json [N]");
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(200);
    let json = std::fs::read_to_string(&path).expect("read");
    let t = std::time::Instant::now();
    for _ in 0..n {
        let r = cutile_check::check_json(&json).expect("valid kernel AST");
        std::hint::black_box(r);
    }
    println!(
        "{:.3} ms per parse + check",
        t.elapsed().as_secs_f64() * 1e3 / n as f64
    );
    let doc = cutile_kast::parse(&json).expect("valid");
    let t = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(cutile_kast::parse(&json).expect("valid"));
    }
    println!(
        "{:.3} ms per parse",
        t.elapsed().as_secs_f64() * 1e3 / n as f64
    );
    let t = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(cutile_check::check(&doc));
    }
    println!(
        "{:.3} ms per check",
        t.elapsed().as_secs_f64() * 1e3 / n as f64
    );
}
