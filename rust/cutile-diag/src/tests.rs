use super::*;
use cutile_kast::{SourceFile, Span};

fn span_of(src: &str, needle: &str, nth: usize) -> Span {
    let lo = src.match_indices(needle).nth(nth).expect("needle").0;
    let line = src[..lo].matches('\n').count() as u32 + 1;
    let col = (lo - src[..lo].rfind('\n').map(|i| i + 1).unwrap_or(0)) as u32;
    Span {
        file: 0,
        lo: lo as u32,
        hi: (lo + needle.len()) as u32,
        line,
        col,
        end_line: line,
        end_col: col + needle.len() as u32,
    }
}

const SRC: &str = "@cutile.entry\ndef k(z: Mut[Tensor[f32, [128]]]):\n    w = z\n    z.store(t)\n";

#[test]
fn renders_like_rustc() {
    let files = vec![SourceFile {
        path: "$DIR/k.py".into(),
        source: SRC.into(),
    }];
    let d = Diagnostic::error(
        "CT1002",
        "use of moved value `z`",
        Label::new(span_of(SRC, "z", 2), "value used here after move"),
    )
    .with_secondary(span_of(SRC, "z", 1), "value moved here")
    .with_note("a `Mut` tensor has one owner at a time")
    .with_help("store through `w`, which now owns the tile");
    let text = render(&files, &[d], false);
    let expected = "\
error[CT1002]: use of moved value `z`
 --> $DIR/k.py:4:5
  |
3 |     w = z
  |         - value moved here
4 |     z.store(t)
  |     ^ value used here after move
  |
  = note: a `Mut` tensor has one owner at a time
  = help: store through `w`, which now owns the tile

error: aborting due to 1 previous error
";
    assert_eq!(text, expected, "got:\n{text}");
}

#[test]
fn colour_output_has_escapes() {
    let files = vec![SourceFile {
        path: "k.py".into(),
        source: SRC.into(),
    }];
    let d = Diagnostic::error("CT1001", "m", Label::new(span_of(SRC, "w", 0), "here"));
    assert!(render_one(&files, &d, true).contains("\u{1b}["));
    assert!(!render_one(&files, &d, false).contains("\u{1b}["));
}

#[test]
fn bad_spans_do_not_panic() {
    let files = vec![SourceFile {
        path: "k.py".into(),
        source: "é\n".into(),
    }];
    let mut s = span_of(SRC, "w", 0);
    for (lo, hi, file) in [(1, 1, 0), (0, 99, 0), (50, 2, 0), (0, 1, 7)] {
        s.lo = lo;
        s.hi = hi;
        s.file = file;
        let d = Diagnostic::error("CT1001", "m", Label::new(s, "x")).with_secondary(s, "y");
        let _ = render_one(&files, &d, false);
    }
}

#[test]
fn registry_codes_are_unique_sorted_and_styled() {
    let mut prev = "";
    for c in CODES {
        assert!(c.code > prev, "{} not after {prev}", c.code);
        prev = c.code;
        assert!(c.code.len() == 6 && c.code.starts_with("CT"));
        let first = c.summary.chars().next().unwrap();
        assert!(
            !first.is_uppercase() && !c.summary.ends_with('.'),
            "{}",
            c.summary
        );
    }
    assert_eq!(lookup("CT1002").unwrap().kind, CodeKind::Kernel);
    assert!(lookup("CT0000").is_none());
}

#[test]
fn parses_python_side_document() {
    let json = format!(
        r#"{{"files":[{{"path":"a.py","source":{}}}],"diagnostics":[{{"code":"CT0001","severity":"error",
        "message":"unsupported syntax `lambda`","primary":{{"span":{},"message":"here"}},"secondary":[],"notes":[],"help":null}}]}}"#,
        serde_json::to_string(SRC).unwrap(),
        serde_json::to_string(&span_of(SRC, "w = z", 0)).unwrap()
    );
    let doc = parse_diagnostics(&json).unwrap();
    let text = render(&doc.files, &doc.diagnostics, false);
    assert!(
        text.contains("error[CT0001]: unsupported syntax `lambda`"),
        "{text}"
    );
    assert!(text.contains("a.py:3:5"), "{text}");
    assert!(parse_diagnostics("{}").is_err());
}

#[test]
fn labels_in_two_files_render_as_two_snippets() {
    let helper = "@cutile.device\ndef bump(c):\n    atomic_add(c, 0, 1)\n";
    let files = vec![
        SourceFile {
            path: "main.py".into(),
            source: SRC.into(),
        },
        SourceFile {
            path: "helpers.py".into(),
            source: helper.into(),
        },
    ];
    let mut primary = span_of(helper, "atomic_add(c, 0, 1)", 0);
    primary.file = 1;
    let d = Diagnostic::error(
        "CT4002",
        "call to unsafe atomic operation `atomic_add` outside `unsafe`",
        Label::new(primary, "atomic operation outside `unsafe`"),
    )
    .with_secondary(span_of(SRC, "w = z", 0), "in this call to `bump`");
    let text = render_one(&files, &d, false);
    assert!(text.contains("--> helpers.py:3:5"), "{text}");
    assert!(text.contains("::: main.py:3:5"), "{text}");
    assert!(text.find("helpers.py").unwrap() < text.find("main.py").unwrap());
}
