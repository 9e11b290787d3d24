//! rustc-style plain text (or ANSI colour) rendering through `annotate-snippets`.

use crate::{Diagnostic, Label, Severity};
use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
use cutile_kast::SourceFile;
use std::ops::Range;

/// Render every diagnostic, separated by blank lines, plus a summary line when there are
/// errors (`error: aborting due to 2 previous errors`).
pub fn render(files: &[SourceFile], diagnostics: &[Diagnostic], color: bool) -> String {
    let mut out = String::new();
    for d in diagnostics {
        out.push_str(&render_one(files, d, color));
        out.push_str("\n\n");
    }
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    match errors {
        0 => {}
        1 => out.push_str("error: aborting due to 1 previous error\n"),
        n => out.push_str(&format!("error: aborting due to {n} previous errors\n")),
    }
    out
}

/// Clamp a label's byte range into its source and onto character boundaries, so that input
/// from Python can never make the renderer panic.
fn range_in(src: &str, label: &Label) -> Range<usize> {
    let mut lo = (label.span.lo as usize).min(src.len());
    let mut hi = (label.span.hi as usize).clamp(lo, src.len());
    while !src.is_char_boundary(lo) {
        lo -= 1;
    }
    while !src.is_char_boundary(hi) {
        hi += 1;
    }
    lo..hi
}

/// Render one diagnostic: header, `--> file:line:col`, the source lines with carets
/// (primary `^`, secondary `-`), then `= note:` and `= help:` lines.
pub fn render_one(files: &[SourceFile], d: &Diagnostic, color: bool) -> String {
    let level = match d.severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
    };
    let mut title = level.primary_title(d.message.as_str());
    if !d.code.is_empty() {
        title = title.id(d.code.as_str());
    }
    // One snippet per file, the primary label's file first.
    let mut order: Vec<u32> = vec![d.primary.span.file];
    for l in &d.secondary {
        if !order.contains(&l.span.file) {
            order.push(l.span.file);
        }
    }
    let mut group = Group::with_title(title);
    let mut unplaced: Vec<String> = Vec::new();
    for fid in order {
        let Some(file) = files.get(fid as usize) else {
            if fid == d.primary.span.file {
                unplaced.push(format!(
                    "at line {}: {}",
                    d.primary.span.line, d.primary.message
                ));
            }
            continue;
        };
        let src = file.source.as_str();
        let mut snippet = Snippet::source(src).path(file.path.as_str()).line_start(1);
        if d.primary.span.file == fid {
            snippet = snippet.annotation(
                AnnotationKind::Primary
                    .span(range_in(src, &d.primary))
                    .label(non_empty(&d.primary.message)),
            );
        }
        for l in d.secondary.iter().filter(|l| l.span.file == fid) {
            snippet = snippet.annotation(
                AnnotationKind::Context
                    .span(range_in(src, l))
                    .label(non_empty(&l.message)),
            );
        }
        group = group.element(snippet);
    }
    for n in unplaced.iter().chain(d.notes.iter()) {
        group = group.element(Level::NOTE.message(n.as_str()));
    }
    if let Some(h) = &d.help {
        group = group.element(Level::HELP.message(h.as_str()));
    }
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    renderer.render(&[group])
}

fn non_empty(s: &str) -> Option<&str> {
    if s.is_empty() {
        None
    } else {
        Some(s)
    }
}
