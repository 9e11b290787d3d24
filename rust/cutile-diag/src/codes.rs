//! The registry of stable error codes. A code, once published, keeps its meaning; a rule
//! that changes meaning gets a new code. `docs/errors/CTxxxx.md` has a page for each.

/// Which layer reports a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeKind {
    /// Kernel-level rule found by the static checker (`KernelCheckError`).
    Kernel,
    /// Host ownership (`BorrowError`).
    Host,
    /// Launch configuration (`LaunchError`).
    Launch,
}

#[derive(Debug, Clone, Copy)]
pub struct CodeInfo {
    pub code: &'static str,
    pub kind: CodeKind,
    pub summary: &'static str,
}

const fn k(code: &'static str, summary: &'static str) -> CodeInfo {
    CodeInfo {
        code,
        kind: CodeKind::Kernel,
        summary,
    }
}

const fn h(code: &'static str, summary: &'static str) -> CodeInfo {
    CodeInfo {
        code,
        kind: CodeKind::Host,
        summary,
    }
}

const fn l(code: &'static str, summary: &'static str) -> CodeInfo {
    CodeInfo {
        code,
        kind: CodeKind::Launch,
        summary,
    }
}

/// Every code, in order.
pub const CODES: &[CodeInfo] = &[
    // CT1xxx: ownership and borrowing inside a kernel.
    k("CT1001", "store through a shared, read-only tensor"),
    k("CT1002", "use of a mutable tensor after it was moved"),
    k(
        "CT1003",
        "one mutable tensor passed twice to a device function call",
    ),
    k(
        "CT1004",
        "mutable tensor used while a sub-partition of it is live",
    ),
    k(
        "CT1005",
        "`load_tile` on a mutable tensor reads another block's tile",
    ),
    k(
        "CT1006",
        "`load_tile_like` reads a mutable tensor at another tensor's tile",
    ),
    k(
        "CT1007",
        "`load(index=...)` of a mutable tensor not provably the block's own tile",
    ),
    k(
        "CT1008",
        "store through a value that is not a mutable tensor",
    ),
    k(
        "CT1009",
        "`load_tile_like` needs a mutable tensor as its position source",
    ),
    k(
        "CT1010",
        "mutable tensor in a position whose provenance cannot be tracked",
    ),
    k(
        "CT1011",
        "non-mutable argument for a mutable device function parameter",
    ),
    k(
        "CT1012",
        "recursive or too deeply nested device function call",
    ),
    k("CT1013", "plain read of an `Atomic` tensor"),
    k("CT1014", "plain write to an `Atomic` tensor"),
    k(
        "CT1015",
        "`Atomic` tensor partitioned or used as a tile position",
    ),
    k(
        "CT1016",
        "`Atomic` tensor in a position whose provenance cannot be tracked",
    ),
    k(
        "CT1017",
        "`Atomic` and plain tensor mixed up in a device function call",
    ),
    k(
        "CT1018",
        "block-scoped atomic on a tensor every block shares",
    ),
    k(
        "CT1019",
        "a kernel too large for the checker to follow (inlined calls, tuples, walks)",
    ),
    // CT2xxx: disjointness, index and bounds proofs.
    k(
        "CT2001",
        "store index map sends two blocks to the same tile",
    ),
    k("CT2002", "store index map leaves the partition grid"),
    k("CT2003", "store index map cannot be proved injective"),
    k(
        "CT2004",
        "store with an index minted by another tensor's `iter_indices()`",
    ),
    k(
        "CT2005",
        "sub-partition shape does not divide the tile shape",
    ),
    k("CT2006", "sub-partition store index out of bounds"),
    k("CT2007", "tile index out of bounds"),
    k(
        "CT2008",
        "check needs a device assert but `deny_in_kernel_checks` is set",
    ),
    k(
        "CT2009",
        "`iter_indices()` of a value that is not a mutable tensor",
    ),
    k(
        "CT2010",
        "one mutable tensor stored through two different index maps",
    ),
    k(
        "CT2011",
        "own-tile access on an output of a persistent kernel",
    ),
    k(
        "CT2012",
        "an output read at one tile and written through another index map",
    ),
    k(
        "CT2013",
        "a `for` loop over a range or `iter_indices()` not written in its header",
    ),
    // CT3xxx (types and shapes) the checker sees before the lowering does.
    k("CT3031", "a method this kind of value does not have"),
    k(
        "CT3051",
        "a reduction of a scalar along an axis (a shadowed builtin `min`/`max`)",
    ),
    k(
        "CT3052",
        "a literal too large for the device integers it is computed with",
    ),
    // CT4xxx: unsafe operations outside `unsafe`.
    k("CT4001", "pointer operation outside `unsafe`"),
    k(
        "CT4002",
        "atomic operation on a tensor that is not `Atomic`, outside `unsafe`",
    ),
    k(
        "CT4003",
        "scatter, or gather from a non-shared tensor, outside `unsafe`",
    ),
    k("CT4004", "unchecked store outside `unsafe`"),
    k("CT4005", "`assume_*` hint outside `unsafe`"),
    k("CT4006", "pointer parameter in a safe kernel"),
    // CT5xxx: host ownership (`BorrowError`).
    h("CT5001", "tensor used while a pending operation holds it"),
    h(
        "CT5002",
        "tensor used after it was consumed by `partition`/`unpartition`",
    ),
    h("CT5003", "tensor handle used after it was released"),
    h(
        "CT5004",
        "partition of a tensor whose storage has other live views",
    ),
    h(
        "CT5005",
        "one tensor passed twice to a launch with a mutable use",
    ),
    h(
        "CT5006",
        "mutable launch argument overlaps another argument in memory",
    ),
    h("CT5007", "unknown tensor handle or storage"),
    h("CT5008", "byte range in use by a pending operation"),
    h(
        "CT5009",
        "tensor moved into an operation that was dropped without running",
    ),
    h(
        "CT5040",
        "write of foreign memory imported shared (read-only)",
    ),
    h(
        "CT5041",
        "write of a tensor exported to another library that still holds it",
    ),
    h(
        "CT5060",
        "access that conflicts with a CUDA Graph capture (captured work has not run)",
    ),
    h("CT5061", "work enqueued on a stream that was closed"),
    // CT6xxx: launch configuration (`LaunchError`).
    l("CT6001", "launch grid differs from the partition grid"),
    l(
        "CT6002",
        "partition tile shape differs from the kernel's declared tile shape",
    ),
    l(
        "CT6003",
        "output partitions of one launch have different tile grids",
    ),
    l("CT6004", "partition rank or shape is invalid"),
];

/// The registry entry of `code`.
pub fn lookup(code: &str) -> Option<&'static CodeInfo> {
    CODES.iter().find(|c| c.code == code)
}
