use super::*;

fn contiguous(n: u64, isz: u64) -> Region {
    Region::new(0, vec![n], vec![1], isz)
}

#[test]
fn move_in_and_give_back() {
    let mut r = HostRegistry::new();
    let s1 = r.new_storage(4096);
    let s2 = r.new_storage(4096);
    let z = r.new_handle(s1, contiguous(1024, 4)).unwrap();
    let x = r.new_handle(s2, contiguous(1024, 4)).unwrap();
    r.move_in(1, "add", &[(z, true), (x, false)]).unwrap();
    assert_eq!(r.holder(z).as_deref(), Some("add"));
    let e = r.check_live(z, "read it").unwrap_err();
    assert_eq!(e.code, "CT5001");
    assert!(e.message.contains("`add`"), "{}", e.message);
    // A second launch using the moved tensor is refused, and moves nothing.
    let y = r.new_handle(s2, contiguous(16, 4)).unwrap();
    let e = r.move_in(2, "scale", &[(y, false), (z, true)]).unwrap_err();
    assert_eq!(e.code, "CT5001");
    assert_eq!(r.state(y), Some(&HandleState::Live));
    assert_eq!(r.give_back(1), 2);
    r.check_live(z, "read it").unwrap();
    assert_eq!(r.holder(z), None);
    assert_eq!(r.give_back(1), 0);
}

#[test]
fn duplicates_and_overlaps() {
    let mut r = HostRegistry::new();
    let s = r.new_storage(4096);
    let a = r.new_handle(s, contiguous(1024, 4)).unwrap();
    // Same handle twice, read-only: fine.
    r.move_in(1, "k", &[(a, false), (a, false)]).unwrap();
    r.give_back(1);
    assert_eq!(
        r.move_in(2, "k", &[(a, true), (a, false)])
            .unwrap_err()
            .code,
        "CT5005"
    );
    // Two views of one storage: first half and second half are disjoint.
    let lo = r
        .new_handle(s, Region::new(0, vec![512], vec![1], 4))
        .unwrap();
    let hi = r
        .new_handle(s, Region::new(2048, vec![512], vec![1], 4))
        .unwrap();
    r.move_in(3, "k", &[(lo, true), (hi, false)]).unwrap();
    r.give_back(3);
    // The whole and a half overlap.
    assert_eq!(
        r.move_in(4, "k", &[(a, false), (hi, true)])
            .unwrap_err()
            .code,
        "CT5006"
    );
    // Interleaved even/odd elements are disjoint.
    let even = r
        .new_handle(s, Region::new(0, vec![512], vec![2], 4))
        .unwrap();
    let odd = r
        .new_handle(s, Region::new(4, vec![512], vec![2], 4))
        .unwrap();
    r.move_in(5, "k", &[(even, true), (odd, true)]).unwrap();
    assert_eq!(r.state(a), Some(&HandleState::Live));
}

#[test]
fn consume_requires_unique_storage() {
    let mut r = HostRegistry::new();
    let s = r.new_storage(1024);
    let t = r.new_handle(s, contiguous(256, 4)).unwrap();
    let view = r.new_handle(s, contiguous(16, 4)).unwrap();
    let e = r.consume(t, "partition", true).unwrap_err();
    assert_eq!(e.code, "CT5004");
    assert_eq!(r.state(t), Some(&HandleState::Live));
    r.release_handle(view).unwrap();
    let p = r.consume(t, "partition", true).unwrap();
    assert_eq!(r.check_live(t, "use it").unwrap_err().code, "CT5002");
    assert_eq!(r.storage_live_handles(s).unwrap(), 1);
    // A moved handle also blocks partitioning of its storage.
    let other = r.new_handle(s, contiguous(4, 4)).unwrap();
    r.move_in(9, "k", &[(other, false)]).unwrap();
    assert_eq!(
        r.consume(p, "unpartition", true).unwrap_err().code,
        "CT5004"
    );
    let q = r.consume(p, "unpartition", false).unwrap();
    r.check_live(q, "use it").unwrap();
}

#[test]
fn released_and_unknown_handles() {
    let mut r = HostRegistry::new();
    let s = r.new_storage(64);
    let h = r.new_handle(s, contiguous(4, 4)).unwrap();
    assert_eq!(r.release_handle(h).unwrap(), 0);
    assert_eq!(r.check_live(h, "x").unwrap_err().code, "CT5003");
    assert_eq!(r.check_live(99, "x").unwrap_err().code, "CT5007");
    assert_eq!(
        r.new_handle(77, contiguous(1, 1)).unwrap_err().code,
        "CT5007"
    );
    assert_eq!(
        r.new_handle(s, contiguous(100, 4)).unwrap_err().code,
        "CT5007"
    );
    assert_eq!(r.move_in(1, "k", &[(h, true)]).unwrap_err().code, "CT5003");
}

#[test]
fn move_in_cost_is_under_a_microsecond() {
    // Debug builds are ~10x slower; the bench (`cargo bench -p cutile-host`) measures the
    // release number. Here only guard against an accidental quadratic blow-up.
    let mut r = HostRegistry::new();
    let mut args = Vec::new();
    for i in 0..8 {
        let s = r.new_storage(1 << 20);
        let h = r.new_handle(s, contiguous(1024, 4)).unwrap();
        args.push((h, i % 2 == 0));
    }
    let n = 2000u64;
    let t = std::time::Instant::now();
    for op in 0..n {
        r.move_in(op, "k", &args).unwrap();
        r.give_back(op);
    }
    let per = t.elapsed().as_nanos() as f64 / n as f64;
    let limit = if cfg!(debug_assertions) {
        50_000.0
    } else {
        2_000.0
    };
    assert!(per < limit, "move_in + give_back took {per} ns");
}

#[test]
fn releasing_a_moved_handle_keeps_its_storage_until_give_back() {
    let mut r = HostRegistry::new();
    let s = r.new_storage(1024);
    let h = r.new_handle(s, contiguous(256, 4)).unwrap();
    r.move_in(1, "k", &[(h, true)]).unwrap();
    // The Python object died while the kernel runs: the storage must not be freed yet.
    assert_eq!(r.release_handle(h).unwrap(), 1);
    assert_eq!(r.storage_live_handles(s).unwrap(), 1);
    assert_eq!(r.release_handle(h).unwrap_err().code, "CT5003");
    r.give_back(1);
    assert_eq!(r.storage_live_handles(s).unwrap(), 0);
    assert_eq!(r.check_live(h, "x").unwrap_err().code, "CT5003");
}

/// Every code the host crate reports has a registry entry of the right kind.
#[test]
fn host_codes_are_documented() {
    for src in [
        include_str!("lib.rs"),
        include_str!("launch.rs"),
        include_str!("ledger.rs"),
        include_str!("in_flight.rs"),
    ] {
        for (i, _) in src.match_indices("\"CT") {
            let code = &src[i + 1..i + 7];
            if code[2..].chars().all(|c| c.is_ascii_digit()) && code != "CT0000" {
                assert!(
                    code.starts_with("CT5") || code.starts_with("CT6"),
                    "{code} is not a host or launch code"
                );
            }
        }
    }
}

#[test]
fn launch_ops_are_named_when_shown() {
    let mut r = HostRegistry::new();
    let s = r.new_storage(4096);
    let z = r.new_handle(s, contiguous(1024, 4)).unwrap();
    let kernel: Arc<str> = Arc::from("add");
    r.move_in_launch(7, &kernel, &[(HandleAt::id(z), true)])
        .unwrap();
    assert_eq!(r.holder(z).as_deref(), Some("`add` (op #7)"));
    // A message names the op once, in its own backticks (never "``add` (op #7)`").
    let e = r.check_live(z, "read").unwrap_err();
    assert_eq!(
        e.message,
        "cannot read: the tensor was moved into `add` (op #7), which has not completed"
    );
    assert_eq!(
        e.hint.as_deref(),
        Some("run the op with `.sync()` (or `await` it) and use the tensors it returns")
    );
    assert_eq!(
        (e.about.op, e.about.kernel.as_deref()),
        (Some(7), Some("add"))
    );
    let e = r
        .move_in_launch(8, &kernel, &[(HandleAt::id(z), false)])
        .unwrap_err();
    assert!(
        e.message.starts_with("cannot pass it to `add` (op #8): "),
        "{}",
        e.message
    );
    let y = r.new_handle(s, contiguous(16, 4)).unwrap();
    r.give_back(7);
    let e = r
        .move_in_launch(
            9,
            &kernel,
            &[(HandleAt::id(z), true), (HandleAt::id(y), false)],
        )
        .unwrap_err();
    assert_eq!(e.code, "CT5006");
    assert_eq!(
        e.message,
        "arguments 0 and 1 of `add` (op #9) may overlap in memory, and one of them is mutable"
    );
    assert!(!e.message.contains("``"), "{}", e.message);
    assert_eq!(
        (e.about.op, e.about.kernel.as_deref()),
        (Some(9), Some("add"))
    );
    // ops given a name whole are shown the same way
    r.move_in(10, "scale", &[(z, true)]).unwrap();
    let e = r.check_live(z, "read").unwrap_err();
    assert!(
        e.message.contains("moved into `scale` (op #10), which"),
        "{}",
        e.message
    );
    r.give_back(10);
    assert_eq!(r.state(z), Some(&HandleState::Live));
}

#[test]
fn an_abandoned_op_leaves_its_tensors_unusable() {
    let mut r = HostRegistry::new();
    let s = r.new_storage(8192);
    let z = r.new_handle(s, contiguous(1024, 4)).unwrap();
    let x = r
        .new_handle(s, Region::new(4096, vec![1024], vec![1], 4))
        .unwrap();
    let kernel: Arc<str> = Arc::from("add");
    r.move_in_launch(
        1,
        &kernel,
        &[(HandleAt::id(z), true), (HandleAt::id(x), false)],
    )
    .unwrap();
    assert_eq!(r.abandon(1, &[(z, "z"), (x, "x")]), 2);
    assert!(matches!(
        r.state(z),
        Some(HandleState::Dropped(d)) if d.op == 1 && d.param.as_deref() == Some("z")
    ));
    // Every later use is refused, naming the tensor, the op, and what happened to it.
    let e = r.check_live(z, "read").unwrap_err();
    assert_eq!(e.code, "CT5009");
    assert_eq!(
        e.message,
        "cannot read: `z` was moved into `add` (op #1), which was dropped without running"
    );
    assert!(e.hint.as_deref().unwrap().contains(".sync()"));
    assert_eq!(
        *e.about,
        About {
            kernel: Some("add".into()),
            op: Some(1),
            tensor: Some("z".into())
        }
    );
    assert_eq!(
        r.move_in_launch(2, &kernel, &[(HandleAt::id(x), false)])
            .unwrap_err()
            .code,
        "CT5009"
    );
    assert_eq!(
        r.consume(z, "unpartition", false).unwrap_err().code,
        "CT5009"
    );
    // Nothing is left to give back, and a second abandon is a no-op.
    assert_eq!(r.give_back(1), 0);
    assert_eq!(r.abandon(1, &[]), 0);
    // The Python objects can still die: the storage loses its handles.
    r.release_handle(z).unwrap();
    assert_eq!(r.release_handle(x).unwrap(), 0);
}

#[test]
fn abandoning_releases_handles_whose_object_died_meanwhile() {
    let mut r = HostRegistry::new();
    let s = r.new_storage(4096);
    let z = r.new_handle(s, contiguous(1024, 4)).unwrap();
    r.move_in(3, "k", &[(z, true)]).unwrap();
    r.release_handle(z).unwrap();
    assert_eq!(r.abandon(3, &[(z, "z")]), 0);
    assert_eq!(r.state(z), None);
    assert_eq!(r.storage_live_handles(s).unwrap(), 0);
}

#[test]
fn a_holder_keeps_live_handles_until_it_gives_them_back() {
    let mut r = HostRegistry::new();
    let s = r.new_storage(4096);
    let a = r.new_handle(s, contiguous(1024, 4)).unwrap();
    let view = r
        .new_handle(s, Region::new(0, vec![16], vec![1], 4))
        .unwrap();
    let gone = r.new_handle(s, contiguous(8, 4)).unwrap();
    let p = r.consume(gone, "partition", false).unwrap();
    // overlapping views are held together (nothing writes through a holder's handles);
    // a consumed one is skipped, the same handle twice counts once
    assert_eq!(r.hold(9, "cutile.graph(step)", &[a, view, gone, p, a]), 3);
    let e = r.check_live(view, "read it").unwrap_err();
    assert_eq!(e.code, "CT5001");
    assert!(
        e.message.contains("held by `cutile.graph(step)` (op #9)")
            && e.message.contains("into_inner()"),
        "{}",
        e.message
    );
    assert_eq!(r.give_back(9), 3);
    r.check_live(a, "read it").unwrap();
    r.check_live(view, "read it").unwrap();
}

#[test]
fn shared_foreign_storage_is_read_never_written() {
    let mut r = HostRegistry::new();
    let s = r.new_shared_storage(4096);
    let own = r.new_storage(4096);
    let x = r.new_handle(s, contiguous(1024, 4)).unwrap();
    let z = r.new_handle(own, contiguous(1024, 4)).unwrap();
    // Read by a launch: fine, and handed back.
    r.move_in(1, "add", &[(z, true), (x, false)]).unwrap();
    assert_eq!(r.give_back(1), 2);
    // Written by a launch (an `Atomic` or `Ptr` argument takes a tensor): refused, and
    // nothing moves.
    let e = r
        .move_in_launch(2, &Arc::from("hist"), &[(HandleAt::id(x), true)])
        .unwrap_err();
    assert_eq!(e.code, "CT5040");
    assert!(
        e.message.contains("`hist` (op #2) as argument 0"),
        "{}",
        e.message
    );
    assert_eq!(
        (e.about.kernel.as_deref(), e.about.op),
        (Some("hist"), Some(2))
    );
    assert_eq!(r.state(x), Some(&HandleState::Live));
    // Partitioned (to become an output): refused, and the tensor stays live.
    let e = r.consume(x, "partition", true).unwrap_err();
    assert_eq!(e.code, "CT5040");
    assert!(e.hint.unwrap().contains("from_dlpack_exclusive"));
    r.check_live(x, "read it").unwrap();
    // `unpartition` and `persistent` write nothing: not refused.
    assert!(r.consume(x, "unpartition", false).is_ok());
    assert_eq!(r.storage_sharing(s).unwrap(), (true, 0));
}

#[test]
fn exported_storage_is_not_written_until_every_export_ends() {
    let mut r = HostRegistry::new();
    let s = r.new_storage(4096);
    let t = r.new_handle(s, contiguous(1024, 4)).unwrap();
    assert_eq!(r.pin_export(s).unwrap(), 1);
    assert_eq!(r.pin_export(s).unwrap(), 2);
    let e = r.consume(t, "partition", true).unwrap_err();
    assert_eq!(e.code, "CT5041");
    assert!(e.message.contains("2 live exports"), "{}", e.message);
    assert_eq!(r.move_in(1, "k", &[(t, true)]).unwrap_err().code, "CT5041");
    r.move_in(2, "k", &[(t, false)]).unwrap(); // reads are fine
    r.give_back(2);
    assert_eq!(r.unpin_export(s).unwrap(), 1);
    assert_eq!(r.consume(t, "partition", true).unwrap_err().code, "CT5041");
    assert_eq!(r.unpin_export(s).unwrap(), 0);
    let p = r.consume(t, "partition", true).unwrap();
    r.move_in(3, "k", &[(p, true)]).unwrap();
    assert_eq!(r.pin_export(999).unwrap_err().code, "CT5007");
}

#[test]
fn writes_are_refused_for_every_foreign_storage_however_many_come_and_go() {
    // Launches skip the storage lookup while no storage is foreign: the count that decides
    // it must follow every import, export, unpin and drop.
    let mut r = HostRegistry::new();
    let own = r.new_storage(4096);
    let other = r.new_storage(4096);
    let t = r.new_handle(own, contiguous(1024, 4)).unwrap();
    let u = r.new_handle(other, contiguous(1024, 4)).unwrap();
    let shared = r.new_shared_storage(4096);
    let x = r.new_handle(shared, contiguous(1024, 4)).unwrap();
    r.pin_export(other).unwrap();
    // an unpin that goes below zero, and a pin of a storage that is shared already, change
    // nothing about which storages are foreign
    assert_eq!(r.unpin_export(own).unwrap(), 0);
    r.pin_export(shared).unwrap();
    r.unpin_export(shared).unwrap();
    assert_eq!(r.move_in(1, "k", &[(u, true)]).unwrap_err().code, "CT5041");
    assert_eq!(r.move_in(2, "k", &[(x, true)]).unwrap_err().code, "CT5040");
    r.move_in(3, "k", &[(t, true)]).unwrap();
    r.give_back(3);
    // the shared storage goes: the export still refuses
    r.release_handle(x).unwrap();
    assert!(r.drop_storage(shared));
    assert_eq!(r.move_in(4, "k", &[(u, true)]).unwrap_err().code, "CT5041");
    // the export ends: nothing is foreign, writes go through; a new export refuses again
    r.unpin_export(other).unwrap();
    r.move_in(5, "k", &[(u, true)]).unwrap();
    r.give_back(5);
    r.pin_export(other).unwrap();
    assert_eq!(r.move_in(6, "k", &[(u, true)]).unwrap_err().code, "CT5041");
    assert_eq!(r.state(u), Some(&HandleState::Live));
}

#[test]
fn a_holder_guards_its_memory_against_writes_through_any_handle() {
    // An adversarial review (2026-12-07): a view of a graph's output kept from the capture
    // (not held: made during it) could be partitioned and written by the caller, and the
    // next replay overwrote what the caller wrote.
    let mut r = HostRegistry::new();
    let s = r.new_storage(4096);
    let other = r.new_storage(4096);
    let held = r.new_handle(s, contiguous(1024, 4)).unwrap();
    r.hold(9, "cutile.graph(step)", &[held]);
    let kept = r
        .new_handle(s, Region::new(0, vec![16], vec![1], 4))
        .unwrap();
    let mine = r.new_handle(other, contiguous(1024, 4)).unwrap();
    assert_eq!(r.guard(9, &[s, s]), 1);
    let e = r.consume(kept, "partition", true).unwrap_err();
    assert_eq!(e.code, "CT5001");
    assert!(
        e.message.contains("held by `cutile.graph(step)` (op #9)"),
        "{}",
        e.message
    );
    let e = r.move_in(1, "k", &[(kept, true)]).unwrap_err();
    assert_eq!(e.code, "CT5001");
    assert_eq!(e.about.op, Some(1));
    // reading it, and writing other memory, are fine
    r.move_in(2, "k", &[(mine, true), (kept, false)]).unwrap();
    r.give_back(2);
    r.give_back(9); // the guard ends with the loan
    r.move_in(3, "k", &[(kept, true)]).unwrap();
    r.give_back(3);
    r.release_handle(held).unwrap();
    r.consume(kept, "partition", true).unwrap();
    assert_eq!(r.guard(10, &[s, 12345]), 1); // an unknown storage is skipped
    assert!(r.drop_storage(s));
    assert_eq!(r.guarded, 0);
    r.give_back(10);
}

#[test]
fn a_consume_undone_makes_the_original_live_again() {
    let mut r = HostRegistry::new();
    let s = r.new_storage(4096);
    let t = r.new_handle(s, contiguous(1024, 4)).unwrap();
    let p = r.consume(t, "partition", true).unwrap();
    r.restore(t, p, "a failed launch").unwrap();
    r.check_live(t, "read it").unwrap();
    assert_eq!(r.check_live(p, "read it").unwrap_err().code, "CT5002");
    assert_eq!(r.storage_live_handles(s).unwrap(), 1);
    // only a consumed handle, from a live one of the same region
    assert_eq!(r.restore(t, p, "again").unwrap_err().code, "CT5002");
    let q = r.consume(t, "partition", true).unwrap();
    let view = r
        .new_handle(s, Region::new(0, vec![16], vec![1], 4))
        .unwrap();
    assert_eq!(r.restore(t, view, "x").unwrap_err().code, "CT5007");
    let live = r.new_handle(s, contiguous(1024, 4)).unwrap();
    assert_eq!(r.restore(live, q, "x").unwrap_err().code, "CT5007");
    r.check_live(q, "read it").unwrap();
}
