//! Structural checks after deserialization: everything later stages index by must exist.

use crate::model::{
    stmt_exprs, target_spans, walk_stmts, Document, Expr, FunctionKind, Span, Stmt,
};
use crate::KastError;
use std::collections::HashSet;

pub(crate) fn validate(doc: &Document) -> Result<(), KastError> {
    if doc.files.is_empty() {
        return Err(KastError::new("`files` is empty"));
    }
    let mut names = HashSet::new();
    for f in &doc.functions {
        if !names.insert(f.name.as_str()) {
            return Err(KastError::new(format!(
                "function `{}` appears twice",
                f.name
            )));
        }
    }
    match doc.entry_function() {
        Some(f) if f.kind == FunctionKind::Entry => {}
        Some(_) => {
            return Err(KastError::new(format!(
                "entry `{}` is not of kind `entry`",
                doc.entry
            )))
        }
        None => {
            return Err(KastError::new(format!(
                "entry `{}` is not among `functions`",
                doc.entry
            )))
        }
    }
    let mut spans: Vec<Span> = Vec::new();
    let mut calls: Vec<(String, Span)> = Vec::new();
    // Later stages key facts by node id: two nodes with one id would share them.
    let mut nids: HashSet<u32> = HashSet::new();
    let mut dup_nid: Option<(u32, Span)> = None;
    for f in &doc.functions {
        spans.push(f.span);
        spans.push(f.name_span);
        let mut pnames = HashSet::new();
        for p in &f.params {
            spans.push(p.span);
            if !pnames.insert(p.name.as_str()) {
                return Err(KastError::new(format!(
                    "parameter `{}` of `{}` appears twice",
                    p.name, f.name
                )));
            }
        }
        walk_stmts(&f.body, &mut |s: &Stmt| {
            spans.push(s.span());
            if !nids.insert(s.nid()) {
                dup_nid.get_or_insert((s.nid(), s.span()));
            }
            match s {
                Stmt::Assign { targets, .. } => {
                    targets.iter().for_each(|t| target_spans(t, &mut spans))
                }
                Stmt::AugAssign { target, .. } | Stmt::For { target, .. } => {
                    target_spans(target, &mut spans)
                }
                _ => {}
            }
            for e in stmt_exprs(s) {
                e.walk(&mut |e: &Expr| {
                    spans.push(e.span());
                    if !nids.insert(e.nid()) {
                        dup_nid.get_or_insert((e.nid(), e.span()));
                    }
                    if let Expr::CallDevice { func, span, .. } = e {
                        calls.push((func.clone(), *span));
                    }
                });
            }
        });
    }
    if let Some((nid, span)) = dup_nid {
        return Err(KastError::new(format!(
            "node id {nid} at line {} is used by two nodes",
            span.line
        )));
    }
    for s in spans {
        check_span(doc, &s)?;
    }
    for (func, span) in calls {
        match doc.function(&func) {
            Some(f) if f.kind == FunctionKind::Device => {}
            Some(_) => {
                return Err(KastError::new(format!(
                    "call at line {} targets `{func}`, which is not a device function",
                    span.line
                )))
            }
            None => {
                return Err(KastError::new(format!(
                    "call at line {} targets `{func}`, which is not among `functions`",
                    span.line
                )))
            }
        }
    }
    Ok(())
}

fn check_span(doc: &Document, s: &Span) -> Result<(), KastError> {
    let Some(file) = doc.files.get(s.file as usize) else {
        return Err(KastError::new(format!(
            "span at line {} names file {}, but there are {} files",
            s.line,
            s.file,
            doc.files.len()
        )));
    };
    let src = &file.source;
    let (lo, hi) = (s.lo as usize, s.hi as usize);
    if lo > hi || hi > src.len() {
        return Err(KastError::new(format!(
            "span {lo}..{hi} at line {} is outside `{}` ({} bytes)",
            s.line,
            file.path,
            src.len()
        )));
    }
    if !src.is_char_boundary(lo) || !src.is_char_boundary(hi) {
        return Err(KastError::new(format!(
            "span {lo}..{hi} at line {} splits a UTF-8 character",
            s.line
        )));
    }
    if s.line == 0 || s.end_line < s.line {
        return Err(KastError::new(format!(
            "span {lo}..{hi} has lines {}..{} (lines are 1-based)",
            s.line, s.end_line
        )));
    }
    Ok(())
}
