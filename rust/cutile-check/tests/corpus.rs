//! Replays the corpus in `tests/corpus/`: each `NAME.json` (kernel AST, generated from
//! `NAME.py` by `gen_kast.py` or the frontend) is checked and compared with
//!
//! - the `# expect:` line of `NAME.py` (`ok`, or the error codes in source order),
//! - `NAME.stderr`: the rendered diagnostics (only for rejected kernels),
//! - `NAME.obligations`: every obligation and how it was discharged (a ratchet).
//!
//! `CUTILE_BLESS=1 cargo test -p cutile-check --test corpus` rewrites the expected files.
//! File paths are normalized to `$DIR/NAME.py`.

use cutile_check::{check, CheckOutput};

use cutile_kast::Document;
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn kernels() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(corpus_dir())
        .expect("corpus dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

fn expected_codes(py: &Path) -> Vec<String> {
    let text = fs::read_to_string(py).unwrap_or_else(|_| panic!("missing {}", py.display()));
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("# expect:"))
        .unwrap_or_else(|| panic!("{}: no `# expect:` line", py.display()));
    line.split_whitespace()
        .filter(|c| *c != "ok")
        .map(String::from)
        .collect()
}

fn load(path: &Path) -> Document {
    let json = fs::read_to_string(path).expect("read json");
    let mut doc = cutile_kast::parse(&json).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for f in &mut doc.files {
        let base = Path::new(&f.path)
            .file_name()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        f.path = format!("$DIR/{base}");
    }
    doc
}

fn render_obligations(doc: &Document, out: &CheckOutput) -> String {
    let mut s = String::new();
    for o in &out.facts.obligations {
        let _ = &doc;
        s.push_str(&format!(
            "{}:{} {} {}{} -- {}\n",
            o.span.line,
            o.span.col + 1,
            o.kind,
            o.discharge.name(),
            o.discharge
                .text()
                .map(|p| format!(" [{p}]"))
                .unwrap_or_default(),
            o.description
        ));
    }
    s
}

fn compare(path: &Path, actual: &str, bless: bool, failures: &mut Vec<String>) {
    let expected = fs::read_to_string(path).ok();
    if bless {
        if actual.is_empty() {
            let _ = fs::remove_file(path);
        } else {
            fs::write(path, actual).expect("bless");
        }
        return;
    }
    let expected = expected.unwrap_or_default();
    if expected != actual {
        failures.push(format!(
            "{} differs\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        ));
    }
}

#[test]
fn corpus() {
    let bless = std::env::var("CUTILE_BLESS").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    let all = kernels();
    assert!(all.len() >= 60, "corpus has only {} kernels", all.len());
    for json in &all {
        let doc = load(json);
        let out = check(&doc);
        let want = expected_codes(&json.with_extension("py"));
        let got = out.codes();
        if want != got {
            failures.push(format!(
                "{}: expected codes {want:?}, got {got:?}\n{}",
                json.display(),
                cutile_diag::render(&doc.files, &out.diagnostics, false)
            ));
        }
        let stderr = if out.diagnostics.is_empty() {
            String::new()
        } else {
            cutile_diag::render(&doc.files, &out.diagnostics, false)
        };
        compare(
            &json.with_extension("stderr"),
            &stderr,
            bless,
            &mut failures,
        );
        compare(
            &json.with_extension("obligations"),
            &render_obligations(&doc, &out),
            bless,
            &mut failures,
        );
    }
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Each `NAME.json` was generated from the current `NAME.py` (regenerate with
/// `python gen_kast.py NAME.py` after editing a kernel).
#[test]
fn json_is_in_sync_with_its_source() {
    for json in kernels() {
        let doc = load(&json);
        let py = fs::read_to_string(json.with_extension("py")).expect("read py");
        assert_eq!(doc.files[0].source, py, "{} is stale", json.display());
    }
}

/// Every kernel-rule code of the registry is exercised by some rejected corpus kernel.
#[test]
fn corpus_covers_every_kernel_code() {
    let mut seen = BTreeSet::new();
    for json in kernels() {
        seen.extend(expected_codes(&json.with_extension("py")));
    }
    let missing: Vec<&str> = cutile_diag::CODES
        .iter()
        .filter(|c| c.kind == cutile_diag::CodeKind::Kernel && !seen.contains(c.code))
        .map(|c| c.code)
        .collect();
    assert!(missing.is_empty(), "no corpus kernel for {missing:?}");
}

/// Every atom of every launch predicate names something the launcher has a value for: a
/// grid axis, or a parameter of the entry of the right kind.
#[test]
fn launch_predicates_name_launch_known_parameters() {
    use cutile_facts::Atom;
    use cutile_kast::ParamKind;
    for json in kernels() {
        let doc = load(&json);
        let entry = doc.entry_function().expect("entry");
        let kind_of = |n: &str| entry.params.iter().find(|p| p.name == n).map(|p| p.kind);
        let out = check(&doc);
        for (o, p) in out.facts.launch_predicates() {
            for a in p.atoms() {
                let ok = match a {
                    Atom::Grid(k) => *k < 3,
                    Atom::Dim { param, .. } => matches!(
                        kind_of(param),
                        Some(ParamKind::Tensor | ParamKind::MutTensor | ParamKind::AtomicTensor)
                    ),
                    Atom::Tiles { param, .. } => kind_of(param) == Some(ParamKind::MutTensor),
                    Atom::Const(n) => kind_of(n) == Some(ParamKind::Const),
                    Atom::Scalar(n) => kind_of(n) == Some(ParamKind::Scalar),
                };
                assert!(
                    ok,
                    "{}: `{}` of {:?} needs `{a}`",
                    json.display(),
                    p.text,
                    o.kind
                );
            }
        }
    }
}

/// Rendered messages never leak internal names of the checker.
#[test]
fn messages_do_not_leak_internals() {
    // (`Atom` as a word: the user's `Atomic` annotation is no internal name.)
    const FORBIDDEN: &[&str] = &[
        "Val::", "Poly", "Atom::", "Atom(", "Atom ", "Opaque", "Some(", "None",
    ];
    for json in kernels() {
        let doc = load(&json);
        let text = cutile_diag::render(&doc.files, &check(&doc).diagnostics, false);
        for f in FORBIDDEN {
            assert!(!text.contains(f), "{}: `{f}` in\n{text}", json.display());
        }
        // Internal variable names (`loop185`, `value3`) must never be shown.
        for w in ["loop", "value"] {
            for (i, _) in text.match_indices(w) {
                let next = text[i + w.len()..].chars().next();
                assert!(
                    !next.is_some_and(|c| c.is_ascii_digit()),
                    "{}: internal name in\n{text}",
                    json.display()
                );
            }
        }
    }
}
