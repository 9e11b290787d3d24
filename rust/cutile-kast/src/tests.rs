use super::*;
use proptest::prelude::*;

const SRC: &str = "def add(z, x):\n    z.store(x)\n";

fn span(lo: u32, hi: u32) -> String {
    format!(r#"{{"file":0,"lo":{lo},"hi":{hi},"line":1,"col":{lo},"end_line":1,"end_col":{hi}}}"#)
}

pub(crate) fn minimal() -> String {
    format!(
        r#"{{"schema":"cutile.kast","version":3,
        "files":[{{"path":"add.py","source":{src}}}],
        "entry":"add",
        "functions":[{{"name":"add","kind":"entry","unsafe":false,"options":{{"deny_in_kernel_checks":false}},
          "span":{s},"name_span":{s},
          "params":[{{"name":"z","span":{s},"kind":"mut_tensor","dtype":"f32","shape":["B", 4, -1]}}],
          "body":[{{"kind":"expr","nid":1,"span":{s},"value":{{"kind":"method","nid":2,"span":{s},"method":"store",
             "receiver":{{"kind":"name","nid":3,"id":"z","span":{s}}},
             "args":[{{"kind":"const","nid":4,"value":1.5,"type":"float","span":{s}}}]}}}}]}}]}}"#,
        src = serde_json::to_string(SRC).unwrap(),
        s = span(4, 7)
    )
}

#[test]
fn parses_minimal_document() {
    let doc = parse(&minimal()).expect("valid");
    assert_eq!(doc.entry, "add");
    let f = doc.entry_function().unwrap();
    assert_eq!(f.params[0].kind, ParamKind::MutTensor);
    assert_eq!(
        f.params[0].shape.as_ref().unwrap(),
        &vec![Dim::Name("B".into()), Dim::Int(4), Dim::Int(-1)]
    );
    match &f.body[0] {
        Stmt::Expr {
            value: Expr::Method { method, args, .. },
            ..
        } => {
            assert_eq!(method, "store");
            assert!(matches!(args[0], Expr::Const { value: ConstValue::Float(v), .. } if v == 1.5));
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn rejects_wrong_schema_and_version() {
    let bad_schema = minimal().replace("cutile.kast", "other.ast");
    assert!(parse(&bad_schema)
        .unwrap_err()
        .message
        .contains("schema is `other.ast`"));
    let bad_version = minimal().replace(r#""version":3"#, r#""version":2"#);
    assert!(parse(&bad_version)
        .unwrap_err()
        .message
        .contains("version 2"));
    assert!(parse("[]").is_err());
    assert!(parse("{}")
        .unwrap_err()
        .message
        .contains("missing `schema`"));
}

#[test]
fn rejects_spans_outside_the_file() {
    let doc = minimal().replace(&span(4, 7), &span(4, 700));
    assert!(parse(&doc).unwrap_err().message.contains("outside"));
    let doc = minimal().replacen(r#""file":0"#, r#""file":3"#, 1);
    assert!(parse(&doc).unwrap_err().message.contains("names file 3"));
}

#[test]
fn rejects_missing_entry_and_unknown_device_call() {
    let doc = minimal().replace(r#""entry":"add""#, r#""entry":"nope""#);
    assert!(parse(&doc).unwrap_err().message.contains("`nope`"));
    let doc = minimal().replace(
        r#""kind":"method","#,
        r#""kind":"call_device","func":"helper","#,
    );
    assert!(parse(&doc).unwrap_err().message.contains("`helper`"));
}

#[test]
fn rejects_unknown_node_kind() {
    let doc = minimal().replace(r#""kind":"expr""#, r#""kind":"lambda""#);
    assert!(parse(&doc).is_err());
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let mut e = String::from(r#"{"kind":"name","nid":5,"id":"a","span":SPAN}"#);
    for i in 0..5000 {
        e = format!(
            r#"{{"kind":"unary","nid":{},"op":"neg","operand":{e},"span":SPAN}}"#,
            i + 6
        );
    }
    let doc = minimal().replace(
        r#"{"kind":"const","nid":4,"value":1.5,"type":"float","span":SPAN}"#
            .replace("SPAN", &span(4, 7))
            .as_str(),
        &e.replace("SPAN", &span(4, 7)),
    );
    assert!(parse(&doc).is_err());
}

#[test]
fn node_ids_must_be_unique() {
    let doc = minimal().replace(r#""nid":3"#, r#""nid":2"#);
    assert!(parse(&doc).unwrap_err().message.contains("node id 2"));
}

#[test]
fn strings_none_and_non_finite_floats_are_literals() {
    let lit = r#"{"kind":"const","nid":4,"value":1.5,"type":"float","span":SPAN}"#
        .replace("SPAN", &span(4, 7));
    for (value, ty, want) in [
        (r#""zero""#, "str", ConstValue::Str("zero".into())),
        ("null", "none", ConstValue::None),
        (r#""-inf""#, "float", ConstValue::Float(f64::NEG_INFINITY)),
        (r#""inf""#, "float", ConstValue::Float(f64::INFINITY)),
    ] {
        let this = lit
            .replace("1.5", value)
            .replace(r#""type":"float""#, &format!(r#""type":"{ty}""#));
        let doc = parse(&minimal().replace(&lit, &this)).expect("valid");
        let Stmt::Expr {
            value: Expr::Method { args, .. },
            ..
        } = &doc.functions[0].body[0]
        else {
            panic!("shape")
        };
        match &args[0] {
            Expr::Const { value, .. } => assert_eq!(value, &want),
            other => panic!("{other:?}"),
        }
    }
    let nan = lit.replace("1.5", r#""nan""#);
    assert!(parse(&minimal().replace(&lit, &nan)).is_ok());
    let wrong = lit.replace("1.5", r#""many""#);
    assert!(parse(&minimal().replace(&lit, &wrong)).is_err());
}

#[test]
fn by_target_holds_one_value_per_arch() {
    let lit = r#"{"kind":"const","nid":4,"value":1.5,"type":"float","span":SPAN}"#
        .replace("SPAN", &span(4, 7));
    let by = r#"{"kind":"by_target","nid":4,"span":SPAN,"archs":["default","sm_90"],
        "values":[{"kind":"const","nid":5,"value":2,"type":"int","span":SPAN},
                  {"kind":"const","nid":6,"value":3,"type":"int","span":SPAN}]}"#
        .replace("SPAN", &span(4, 7));
    let doc = parse(&minimal().replace(&lit, &by)).expect("valid");
    let Stmt::Expr {
        value: Expr::Method { args, .. },
        ..
    } = &doc.functions[0].body[0]
    else {
        panic!("shape")
    };
    match &args[0] {
        Expr::ByTarget { archs, values, .. } => {
            assert_eq!(archs, &["default", "sm_90"]);
            let nids: Vec<u32> = values.iter().map(Expr::nid).collect();
            assert_eq!(nids, [5, 6]);
        }
        other => panic!("{other:?}"),
    }
    let short = by.replace(r#","sm_90"]"#, "]");
    assert!(parse(&minimal().replace(&lit, &short))
        .unwrap_err()
        .message
        .contains("one value per arch"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_text_never_panics(s in ".{0,200}") {
        let _ = parse(&s);
    }

    #[test]
    fn mutated_documents_never_panic(pos in 0usize..2000, len in 0usize..8, repl in "[\\[\\]{}:,\"0-9a-z -]{0,6}") {
        let base = minimal();
        let lo = pos.min(base.len());
        let hi = (lo + len).min(base.len());
        if base.is_char_boundary(lo) && base.is_char_boundary(hi) {
            let mutated = format!("{}{}{}", &base[..lo], repl, &base[hi..]);
            let _ = parse(&mutated);
        }
    }
}
