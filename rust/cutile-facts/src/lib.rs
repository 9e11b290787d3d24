//! What cutile's checker decided about a kernel, as data (`KernelFacts`).
//!
//! The checker (`cutile-check`) is the only reader of a kernel that decides anything about
//! safety. It writes its decisions here once; the lowering (through `cutile._native`) and
//! the launcher (`cutile-host`) read them and decide nothing themselves:
//!
//! - `outputs`: for each `Mut` parameter, whether the launch is over its partition's tiles
//!   (one block per tile) or persistent (blocks walk the tiles by the checked schedule);
//! - `grid_rank` and `index_width`: the grid axes the kernel may use, and the integer width
//!   the prover assumed for index arithmetic (the width the lowering emits);
//! - `schedules`: for every `for idx in z.iter_indices()` loop, the schedule the checker
//!   proved its stores disjoint under (the output, the grid axis whose block id starts it
//!   and whose block count strides it, the map from flat tile id to tile coordinate, the
//!   cap of the group size): the lowering emits exactly that schedule and refuses such a
//!   loop without one;
//! - `loop_counters`: the width of every `for` loop's counter (a 32-bit counter that
//!   steps past 2^31 - 1 wraps on the device and the loop goes on, so it is 64 bits
//!   unless the checker proved it stays in range);
//! - `folded_branches`: every `if`, `while`, conditional expression and `for` whose test the
//!   checker evaluated at compile time, and which branch it read as live;
//! - `obligations`: every safety goal, keyed by the node that creates it (its id and the
//!   device-call path that leads there), with how it is discharged: statically, by a launch
//!   predicate (a typed expression, `pred.rs`), or by a device assert the lowering emits.

mod pred;

pub use cutile_kast::Span;
pub use pred::{Atom, BinOp, Clause, CmpOp, EvalError, Expr, Pred};

/// A node of the kernel AST as one inlined instance: the ids of the `call_device` nodes
/// from the entry down to the function holding it, then the node's own id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeRef {
    pub path: Vec<u32>,
    pub nid: u32,
}

/// How an obligation is discharged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Discharge {
    Static,
    /// The launcher evaluates the predicate before every launch and refuses a launch for
    /// which it is false or undecidable.
    Launch(Pred),
    /// The lowering emits an assert at the node; `text` says what it checks.
    Device {
        text: String,
    },
    /// Refuted (the checker also reported an error).
    Failed,
}

impl Discharge {
    pub fn name(&self) -> &'static str {
        match self {
            Discharge::Static => "static",
            Discharge::Launch(_) => "launch",
            Discharge::Device { .. } => "device",
            Discharge::Failed => "failed",
        }
    }

    /// The predicate text (launch) or the asserted condition (device).
    pub fn text(&self) -> Option<&str> {
        match self {
            Discharge::Launch(p) => Some(&p.text),
            Discharge::Device { text } => Some(text),
            _ => None,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Discharge::Static => 0,
            Discharge::Launch(_) => 1,
            Discharge::Device { .. } => 2,
            Discharge::Failed => 3,
        }
    }

    /// The weaker of two outcomes for one goal (a node visited on several paths through
    /// a loop must hold on all of them): launch predicates are joined.
    pub fn worst(self, other: Discharge) -> Discharge {
        match (self, other) {
            (Discharge::Launch(a), Discharge::Launch(b)) => Discharge::Launch(a.and(b)),
            (a, b) if b.rank() > a.rank() => b,
            (a, _) => a,
        }
    }
}

/// One safety goal and how it is discharged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Obligation {
    /// `store-own-tile`, `store-mapped-index`, `store-index-injective`, `subpartition-shape`,
    /// `subtile-bounds`, `bounds`, `load-own-tile`, `loop-bounds-fit` (a `range` bound the
    /// device computes in i32 fits, so the loop runs over its exact range),
    /// `loop-step-positive` (a run-time `range` step is at least 1 as the loop runs it).
    pub kind: String,
    pub description: String,
    pub node: NodeRef,
    /// Where it is in the source (for messages).
    pub span: Span,
    pub discharge: Discharge,
}

/// How the launch covers one `Mut` parameter's partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// One block per tile; the grid is the partition's tile grid.
    Partitioned,
    /// `for idx in z.iter_indices()`: a persistent launch, blocks walk the tiles.
    Persistent,
}

/// How a persistent schedule maps a flat tile id to a tile coordinate (`cutile-check`'s
/// `schedule.rs` proves each a bijection onto the tile grid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleMap {
    /// Rank 1: the flat id is the tile index.
    Linear,
    /// Rank 2: the grouped swizzle (`swizzle::grouped`) of the two axes.
    Grouped,
    /// Rank 3: the leading axis is `flat // (m * n)`, the trailing two the grouped swizzle
    /// of `flat % (m * n)`.
    LinearGrouped,
}

impl ScheduleMap {
    /// The map of a partition of `rank` (1 to 3).
    pub fn of_rank(rank: usize) -> Option<ScheduleMap> {
        match rank {
            1 => Some(ScheduleMap::Linear),
            2 => Some(ScheduleMap::Grouped),
            3 => Some(ScheduleMap::LinearGrouped),
            _ => None,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            ScheduleMap::Linear => "linear",
            ScheduleMap::Grouped => "grouped",
            ScheduleMap::LinearGrouped => "linear-grouped",
        }
    }
}

/// The schedule of one `for idx in z.iter_indices(group=G)` loop instance: block `b` of
/// the launch visits the flat tile ids `block_id(axis), block_id(axis) + num_blocks(axis),
/// ...` below the tile count of `param`'s partition, each mapped to a tile by `map` with
/// the group size `min(G, group_max, m)` (`G` the loop's compile-time `group`, at least 1;
/// any group of at least 1 is a bijection, and a group of `m` rows or more is the group of
/// `m`). The stores through the minted index are disjoint under exactly this schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleFact {
    /// The `Mut` parameter whose partition the loop walks.
    pub param: String,
    /// The partition's rank.
    pub rank: u8,
    /// The grid axis of the starting block id and the stride (the block count).
    pub axis: u8,
    pub map: ScheduleMap,
    /// The largest group size the schedule takes (a larger `G` is capped to it).
    pub group_max: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFact {
    pub param: String,
    pub kind: OutputKind,
}

/// Everything the lowering and the launcher need to know about a checked kernel.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KernelFacts {
    /// One per `Mut` parameter, in parameter order.
    pub outputs: Vec<OutputFact>,
    /// Grid axes the kernel's block ids range over (others have extent 1).
    pub grid_rank: u8,
    /// Bits of the integers the prover reasoned in (what the lowering emits for indices).
    pub index_width: u8,
    pub obligations: Vec<Obligation>,
    /// Every `for idx in z.iter_indices()` loop instance (keyed by its iterable's node, the
    /// `iter_indices` call) and the schedule the checker proved it under.
    pub schedules: Vec<(NodeRef, ScheduleFact)>,
    /// Every `for` loop instance (keyed by its iterable's node) and the bits of the
    /// counter the lowering steps it with: 32 where the checker proved the last value
    /// plus the step stays at most 2^31 - 1, else 64. A loop the lowering meets without
    /// an entry here is one the checker never read (the lowering refuses it).
    pub loop_counters: Vec<(NodeRef, u8)>,
    /// Every test the checker folded (an `if`, a `while` or a conditional expression
    /// keyed by its own node; a `for` by the statement's node, `Some(false)` for a range
    /// of literals that runs no iteration) and the branch it read:
    /// - `Some(b)`: the test is computed from literals (directly or through names) and is
    ///   `b`; the checker read only that branch (a `while False:` body, a `range(0)` body,
    ///   `if 0:`'s body are dead);
    /// - `None`: the test is a value of the `Const`s (`if C == 2:`): each specialization
    ///   runs one branch, the one its `Const`s select, and the checker read each branch
    ///   as the live one (a name bound to a different tensor on each is followed exactly);
    ///   or a value computed on each path, different on two (each read its own branch).
    ///
    /// The lowering folds exactly these tests (to the branch given, or to the one its
    /// `Const`s select), and no other: a test it cannot evaluate where the checker folded,
    /// or evaluates to the other branch, is a disagreement it refuses (CT9002).
    pub folded_branches: Vec<(NodeRef, Option<bool>)>,
}

impl KernelFacts {
    /// Is any output persistent (the launch is persistent)?
    pub fn persistent(&self) -> bool {
        self.outputs
            .iter()
            .any(|o| o.kind == OutputKind::Persistent)
    }

    /// The launch predicates, in obligation order.
    pub fn launch_predicates(&self) -> impl Iterator<Item = (&Obligation, &Pred)> {
        self.obligations.iter().filter_map(|o| match &o.discharge {
            Discharge::Launch(p) => Some((o, p)),
            _ => None,
        })
    }

    /// The counter width of the `for` loop at `node`, if the checker read it.
    pub fn loop_counter_bits(&self, node: &NodeRef) -> Option<u8> {
        self.loop_counters
            .iter()
            .find(|(n, _)| n == node)
            .map(|&(_, bits)| bits)
    }

    /// The schedule of the `iter_indices()` loop whose iterable is `node`, if any.
    pub fn schedule(&self, node: &NodeRef) -> Option<&ScheduleFact> {
        self.schedules
            .iter()
            .find(|(n, _)| n == node)
            .map(|(_, s)| s)
    }

    /// The checker's fold of the test at `node`: `None` where it did not fold it, else
    /// `Some(Some(b))` (a test of literals) or `Some(None)` (a value of the `Const`s).
    pub fn folded_branch(&self, node: &NodeRef) -> Option<Option<bool>> {
        self.folded_branches
            .iter()
            .find(|(n, _)| n == node)
            .map(|&(_, b)| b)
    }

    /// Does any obligation at `node` need a device assert?
    pub fn needs_device_check(&self, node: &NodeRef) -> bool {
        self.obligations
            .iter()
            .any(|o| &o.node == node && matches!(o.discharge, Discharge::Device { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tighter_of_two_bounds_stays() {
        let g = Expr::Atom(Atom::Grid(0));
        let le = |k: i128| Pred::clause(g.clone(), CmpOp::Le, Expr::Int(k), format!("g <= {k}"));
        assert_eq!(le(8).and(le(5)).text, "g <= 5");
        assert_eq!(le(5).and(le(8)).text, "g <= 5");
    }

    #[test]
    fn worst_joins_launch_predicates() {
        let p = |t: &str, k: i128| Pred::clause(Expr::Int(k), CmpOp::Le, Expr::Int(1), t.into());
        let a = Discharge::Launch(p("a", 0));
        let b = Discharge::Launch(p("b", 1));
        match a.clone().worst(b) {
            Discharge::Launch(q) => assert_eq!(q.text, "a && b"),
            other => panic!("{other:?}"),
        }
        assert_eq!(Discharge::Static.worst(a.clone()), a);
        let d = Discharge::Device { text: "x".into() };
        assert_eq!(a.worst(d.clone()), d);
        assert_eq!(d.worst(Discharge::Failed), Discharge::Failed);
    }
}
