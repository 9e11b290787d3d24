//! Kernel-level safety rules of cutile (docs/design.md §3), over the kernel AST.
//!
//! ```text
//! kast::Document ──▶ check.rs   walk statements; names, moves, borrows, loops, inlining
//!                      │          (rules 1-4: own-tile stores, shared read-only, move
//!                      │           semantics of `Mut`, no foreign-tile reads)
//!                      ├─▶ effects.rs  memory effects of DSL ops (stores, loads, partitions)
//!                      │     ├─▶ prover.rs   store-index maps: injective + in bounds (rule 5)
//!                      │     │     ├─▶ swizzle.rs  grouped swizzles
//!                      │     │     ├─▶ digits.rs   `//` and `%`: mixed-radix digits of block ids
//!                      │     │     └─▶ search.rs   counterexamples on small launches
//!                      │     └─▶ bounds.rs   the ladder: static → launch → device
//!                      └─▶ errors.rs   one diagnostic constructor per violation
//! schedule.rs: the mapped-partition schedule (`iter_indices()`) and its bijection
//! ```
//!
//! Rule 6 (pointers, atomics, scatter/gather, unchecked stores, `assume_*` only in `unsafe`)
//! is in `effects.rs` (`unsafe_check`) and `check.rs` (pointer parameters); `Atomic`
//! parameters, whose atomics are safe, and `gather` from shared inputs in `atomics.rs`.
//!
//! The result is a list of diagnostics (never an `Err` for a user mistake) and a list of
//! [`Obligation`]s saying how each safety goal was discharged: `static`, `launch` (with a
//! predicate the host evaluates, fail-closed), `device` (an assert in the kernel), or
//! `failed`. Predicates use a small language: integers, `+ - * // %`, `cdiv(a, b)`,
//! `min`, `max`, comparisons and `&&`, over `grid(k)` (launch grid extent), `dim(x, k)`
//! (extent of tensor parameter `x`), `tiles(z, k)` (tile count of partition `z`),
//! `Const`/scalar parameter names, `block_id(k)` and `loopN` (device predicates only).
//!
//! Testing: `cargo test -p cutile-check` (unit tests, the corpus in `tests/corpus/`, and
//! property tests). `CUTILE_BLESS=1 cargo test -p cutile-check --test corpus` rewrites the
//! expected `.stderr` / `.obligations` files.

mod atomics;
pub mod axiswise;
pub mod bounds;
mod check;
pub mod digits;
mod effects;
pub mod errors;
mod fold;
pub mod launch_pred;
pub mod limits;
mod loads;
mod loops;
pub mod prover;
pub mod schedule;
pub mod search;
pub mod simplify;
mod state;
mod stores;
pub mod swizzle;
pub mod sym;
pub mod width;

use cutile_diag::{Diagnostic, Severity};
use cutile_kast::{Document, KastError};

pub use cutile_facts::{Discharge, KernelFacts, NodeRef, Obligation, OutputFact, OutputKind, Pred};

/// Everything the checker found: the violations, and the facts the lowering and the
/// launcher act on (meaningful when there is no error).
#[derive(Debug, Clone, Default)]
pub struct CheckOutput {
    pub diagnostics: Vec<Diagnostic>,
    pub facts: KernelFacts,
}

impl CheckOutput {
    /// No error diagnostics.
    pub fn ok(&self) -> bool {
        !self
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// The error codes, in report order.
    pub fn codes(&self) -> Vec<String> {
        self.diagnostics.iter().map(|d| d.code.clone()).collect()
    }
}

/// Run every kernel-level rule on a parsed document.
pub fn check(doc: &Document) -> CheckOutput {
    let Some(mut c) = check::Checker::new(doc, None) else {
        return CheckOutput::default();
    };
    c.run();
    // A schedule loop in the source that the walk never reached (a folded branch) walks no
    // output: read the kernel again as not mapped, so that its grid is the outputs' tile
    // grid the launch really has (one reading of `mapped` and the outputs' kinds,
    // `Checker::new`). Read as mapped, such a kernel had three grid axes, and a store
    // proved injective on the output's own axes was refused (CT2001).
    if c.mapped && c.persistent.is_empty() {
        if let Some(mut again) = check::Checker::new(doc, Some(false)) {
            again.run();
            c = again;
        }
    }
    let facts = c.facts();
    let mut diagnostics = drop_consequences(c.diags);
    // Stable order: by file, then position.
    diagnostics.sort_by_key(|d| (d.primary.span.file, d.primary.span.lo, d.primary.span.hi));
    CheckOutput { diagnostics, facts }
}

/// A constant too wide for the device (CT3052) makes its expression unknown, and every
/// proof over it fails in turn: keep the cause alone, once (the innermost span), and drop
/// the proof errors whose index contains it.
fn drop_consequences(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let within = |inner: &cutile_kast::Span, outer: &cutile_kast::Span| {
        inner.file == outer.file && outer.lo <= inner.lo && inner.hi <= outer.hi
    };
    let wide: Vec<cutile_kast::Span> = diags
        .iter()
        .filter(|d| d.code == "CT3052")
        .map(|d| d.primary.span)
        .collect();
    diags
        .into_iter()
        .filter(|d| {
            let s = d.primary.span;
            match d.code.as_str() {
                "CT3052" => !wide.iter().any(|w| *w != s && within(w, &s)),
                c if c.starts_with("CT2") => !wide.iter().any(|w| within(w, &s)),
                _ => true,
            }
        })
        .collect()
}

/// Parse a kernel AST document and check it.
pub fn check_json(json: &str) -> Result<(Document, CheckOutput), KastError> {
    let doc = cutile_kast::parse(json)?;
    let out = check(&doc);
    Ok((doc, out))
}
