//! `move_in` with 8 arguments (the host hot path; target <= 1 µs). Plain `std::time`:
//! `cargo bench -p cutile-host` prints ns per call.

use cutile_host::{HostRegistry, Region};
use std::hint::black_box;
use std::time::Instant;

fn bench(label: &str, same_storage: bool) {
    let mut r = HostRegistry::new();
    let shared = r.new_storage(1 << 24);
    let mut args = Vec::new();
    for i in 0..8u64 {
        let s = if same_storage {
            shared
        } else {
            r.new_storage(1 << 20)
        };
        let off = if same_storage { (i * 4096) as i64 } else { 0 };
        let h = r
            .new_handle(s, Region::new(off, vec![32, 32], vec![32, 1], 4))
            .expect("handle");
        args.push((h, i < 2));
    }
    let n: u64 = 200_000;
    // Warm up.
    for op in 0..1000 {
        r.move_in(op, "kernel", &args).expect("move_in");
        r.give_back(op);
    }
    let t = Instant::now();
    for op in 0..n {
        r.move_in(black_box(op), "kernel", black_box(&args))
            .expect("move_in");
        r.give_back(op);
    }
    // An upper bound for move_in alone: give_back is part of the timed loop.
    let both = t.elapsed().as_nanos() as f64 / n as f64;
    println!("{label}: move_in + give_back, 8 args: {both:.0} ns per pair");
}

fn main() {
    bench("8 args on 8 storages", false);
    bench("8 args on one storage (28 overlap tests)", true);
}
