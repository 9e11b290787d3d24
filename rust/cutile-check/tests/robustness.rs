//! The parser and checker never panic, whatever the input: arbitrary edits of corpus
//! documents, and structural mutations that splice subtrees and rename operations.

use proptest::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn corpus() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json") && !p.ends_with("ok_long_kernel.json")
        })
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("read"))
        .collect()
}

/// Paths (as index lists into objects/arrays) of every object with a `kind`.
fn nodes(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) => {
            if m.contains_key("kind") && m.contains_key("span") {
                out.push(path.clone());
            }
            for (k, x) in m {
                path.push(k.clone());
                nodes(x, path, out);
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(i.to_string());
                nodes(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn at<'a>(v: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut cur = v;
    for p in path {
        cur = match cur {
            Value::Object(m) => m.get_mut(p)?,
            Value::Array(a) => a.get_mut(p.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

const NAMES: &[&str] = &[
    "store",
    "load",
    "load_tile",
    "partition_mut",
    "iter_indices",
    "block_id",
    "num_blocks",
    "atomic_add",
    "load_tile_like",
    "z",
    "x",
    "w",
    "p",
    "range",
    "num_tiles",
    "cdiv",
    "min",
    "store_unchecked",
    "int_to_ptr",
    "idx",
    "i",
];

fn run(json: &str) {
    if let Ok((doc, out)) = cutile_check::check_json(json) {
        let _ = cutile_diag::render(&doc.files, &out.diagnostics, false);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn byte_edits_never_panic(file in 0usize..1000, pos in 0usize..100_000, len in 0usize..12, repl in "[\\[\\]{}:,\"0-9a-z_ -]{0,8}") {
        let docs = corpus();
        let base = &docs[file % docs.len()];
        let lo = pos % (base.len() + 1);
        let hi = (lo + len).min(base.len());
        if base.is_char_boundary(lo) && base.is_char_boundary(hi) {
            run(&format!("{}{}{}", &base[..lo], repl, &base[hi..]));
        }
    }

    #[test]
    fn structural_mutations_never_panic(file in 0usize..1000, picks in proptest::collection::vec((0usize..10_000, 0usize..10_000, 0usize..3, 0usize..100), 1..6)) {
        let docs = corpus();
        let mut v: Value = serde_json::from_str(&docs[file % docs.len()]).expect("json");
        for (a, b, op, name) in picks {
            let mut all = Vec::new();
            nodes(&v, &mut Vec::new(), &mut all);
            if all.is_empty() { break; }
            let pa = all[a % all.len()].clone();
            let pb = all[b % all.len()].clone();
            match op {
                0 => {
                    // Splice a copy of node b over node a.
                    let copy = at(&mut v, &pb).cloned();
                    if let (Some(c), Some(slot)) = (copy, at(&mut v, &pa)) { *slot = c; }
                }
                1 => {
                    // Rename an operation, a callee or a name.
                    if let Some(Value::Object(m)) = at(&mut v, &pa) {
                        for key in ["method", "func", "id"] {
                            if m.contains_key(key) {
                                m.insert(key.into(), Value::String(NAMES[name % NAMES.len()].into()));
                            }
                        }
                    }
                }
                _ => {
                    // Replace an integer constant (indices, shapes, steps).
                    if let Some(Value::Object(m)) = at(&mut v, &pa) {
                        if m.get("kind").and_then(|k| k.as_str()) == Some("const") {
                            let val = [-3i64, -1, 0, 1, 2, 7, 1 << 40, i64::MAX, i64::MIN][name % 9];
                            m.insert("value".into(), Value::from(val));
                        }
                    }
                }
            }
        }
        run(&v.to_string());
    }
}
