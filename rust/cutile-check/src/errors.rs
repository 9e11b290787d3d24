//! One constructor per violation; each fixes its own code (rustc's `borrowck_errors.rs`
//! habit). Detection code never formats messages.

use cutile_diag::{Diagnostic, Label};
use cutile_kast::Span;

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Why a value was moved where it was (for the "moved here" label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveWhy {
    Assign,
    /// Moved in one branch of an `if`.
    Branch,
    /// Moved in an earlier iteration of the enclosing loop.
    Loop,
}

pub fn store_to_shared(name: &str, at: Span, param: Span) -> Diagnostic {
    Diagnostic::error(
        "CT1001",
        format!("cannot store to `{name}`, a shared read-only tensor"),
        Label::new(at, "store through a shared tensor"),
    )
    .with_secondary(param, format!("`{name}` is declared here without `Mut`"))
    .with_note("a plain `Tensor` parameter is shared by every block; a write would race")
    .with_help(format!(
        "declare the output as `{name}: Mut[Tensor[...]]` and pass a partition of it"
    ))
}

pub fn use_after_move(name: &str, used: Span, moved: Span, why: MoveWhy) -> Diagnostic {
    let moved_label = match why {
        MoveWhy::Assign => "value moved here".to_string(),
        MoveWhy::Branch => "value moved here, in one branch of an `if`".to_string(),
        MoveWhy::Loop => "value moved here, in the previous iteration of the loop".to_string(),
    };
    Diagnostic::error(
        "CT1002",
        format!("use of moved mutable tensor `{name}`"),
        Label::new(used, "value used here after move"),
    )
    .with_secondary(moved, moved_label)
    .with_note("a `Mut` tensor has exactly one live name; assigning it moves it")
    .with_help("use the name it was moved to, or move it back before this use")
}

pub fn passed_twice(name: &str, second: Span, first: Span, callee: &str) -> Diagnostic {
    Diagnostic::error(
        "CT1003",
        format!("mutable tensor `{name}` passed twice to `{callee}`"),
        Label::new(second, "second mutable borrow occurs here"),
    )
    .with_secondary(first, "first mutable borrow occurs here")
    .with_note("both parameters would name the same tile; writes through one would race reads of the other")
    .with_help("pass the tensor once and use it through one parameter")
}

pub fn used_while_borrowed(
    name: &str,
    holder: &str,
    used: Span,
    created: Span,
    later: Option<Span>,
) -> Diagnostic {
    let mut d = Diagnostic::error(
        "CT1004",
        format!("cannot use `{name}` while it is borrowed by sub-partition `{holder}`"),
        Label::new(used, format!("use of `{name}` while `{holder}` is live")),
    )
    .with_secondary(created, "mutable sub-partition created here");
    if let Some(l) = later {
        d = d.with_secondary(l, "borrow later used here");
    }
    d.with_help(format!(
        "finish every use of `{holder}` before using `{name}` again"
    ))
}

pub fn load_tile_on_mut(name: &str, at: Span) -> Diagnostic {
    Diagnostic::error(
        "CT1005",
        format!("cannot read an arbitrary tile of mutable tensor `{name}`"),
        Label::new(at, "this reads a tile that another block may be writing"),
    )
    .with_note("each tile of a `Mut` partition belongs to the block that writes it")
    .with_help(format!("read the block's own tile with `{name}.load()`"))
}

pub fn load_like_foreign_mut(src: &str, pos: &str, at: Span) -> Diagnostic {
    Diagnostic::error(
        "CT1006",
        format!("cannot read mutable tensor `{src}` at the tile position of `{pos}`"),
        Label::new(
            at,
            format!("`{src}` is mutable and `{pos}` is another tensor"),
        ),
    )
    .with_note(format!(
        "the tile of `{src}` at `{pos}`'s position is owned by whichever block writes it"
    ))
    .with_help(format!("read `{src}`'s own tile with `{src}.load()`"))
}

pub fn load_not_own(name: &str, at: Span) -> Diagnostic {
    Diagnostic::error(
        "CT1007",
        format!("cannot prove that this index is the block's own tile of `{name}`"),
        Label::new(at, "this index may name another block's tile"),
    )
    .with_note("reading another block's tile of a `Mut` tensor races that block's store")
    .with_help(format!(
        "use `{name}.load()`, an index minted by `{name}.iter_indices()`, `block_id(k)` on each axis, or the index this block stores `{name}` through"
    ))
}

pub fn store_not_mut(what: &str, at: Span) -> Diagnostic {
    Diagnostic::error(
        "CT1008",
        format!("cannot store through `{what}`: it is not a mutable tensor"),
        Label::new(at, "not a `Mut` tensor or a sub-partition of one"),
    )
    .with_help("store into a `Mut[Tensor[...]]` parameter or a `partition_mut` of it")
}

pub fn load_like_needs_mut(what: &str, at: Span) -> Diagnostic {
    Diagnostic::error(
        "CT1009",
        format!("`load_tile_like` needs a mutable tensor as its position, found `{what}`"),
        Label::new(at, "not a `Mut` tensor"),
    )
    .with_note("the position of a `Mut` partition's tile is the block's own tile")
    .with_help(
        "pass the output partition, `load_tile_like(x, z)`, or use `x.load_tile(shape, index)`",
    )
}

pub fn untracked_mut(name: &str, at: Span, what: &str) -> Diagnostic {
    Diagnostic::error(
        "CT1010",
        format!("mutable tensor `{name}` cannot be {what}"),
        Label::new(at, "the checker cannot follow the owner of this tensor"),
    )
    .with_note(
        "a `Mut` tensor may be bound to a name, passed to a device function, or used as a receiver",
    )
    .with_help(format!("use `{name}` directly where it is needed"))
}

pub fn expected_mut_arg(param: &str, callee: &str, at: Span, decl: Span) -> Diagnostic {
    Diagnostic::error(
        "CT1011",
        format!("`{callee}` takes `{param}` as a mutable tensor, but this argument is not one"),
        Label::new(at, "not a `Mut` tensor"),
    )
    .with_secondary(decl, format!("`{param}` is declared `Mut` here"))
    .with_help("pass a `Mut` parameter or a sub-partition made with `partition_mut`")
}

pub fn recursive_call(callee: &str, at: Span) -> Diagnostic {
    Diagnostic::error(
        "CT1012",
        format!("recursive call of device function `{callee}`"),
        Label::new(at, "this call is already being inlined"),
    )
    .with_note("device functions are always inlined, so they cannot recurse")
    .with_help("rewrite the recursion as a loop")
}

pub fn inlined_too_deep(callee: &str, at: Span, depth: usize) -> Diagnostic {
    Diagnostic::error(
        "CT1012",
        format!("device function `{callee}` would be inlined {depth} calls deep"),
        Label::new(at, "too deep to follow"),
    )
    .with_note("device functions are always inlined; the checker follows calls 31 deep")
    .with_help("flatten the chain of device functions")
}

/// A kernel that would inline more device-function calls than the checker follows.
pub fn too_many_inlined_calls(callee: &str, at: Span, total: usize, cap: usize) -> Diagnostic {
    let total = if total == usize::MAX {
        "more than 2^64".to_string()
    } else {
        total.to_string()
    };
    Diagnostic::error(
        "CT1019",
        format!("the kernel inlines {total} device-function calls up to this call of `{callee}`"),
        Label::new(at, "too many inlined calls to follow"),
    )
    .with_note(format!(
        "device functions are inlined at every call site, so a function that calls another \
         twice doubles the code; the checker follows {cap} inlined calls"
    ))
    .with_help("call the repeated device function in a loop instead of at many call sites")
}

/// A kernel whose walk took more statement visits than the checker allows.
pub fn too_many_steps(at: Span, cap: usize) -> Diagnostic {
    Diagnostic::error(
        "CT1019",
        format!("the checker stopped here after {cap} statement visits"),
        Label::new(at, "too much to follow"),
    )
    .with_note(
        "loops are walked until their state settles and device functions at each call \
         site, so deeply nested loops and calls multiply the walks",
    )
    .with_help("nest fewer loops, or move the inner ones into a separate kernel")
}

/// A tuple value with more elements (counting nested tuples' elements) than the checker
/// follows.
pub fn tuple_too_large(at: Span, cap: usize) -> Diagnostic {
    Diagnostic::error(
        "CT1019",
        format!("this tuple holds more than {cap} values (counting nested tuples)"),
        Label::new(at, "too large to follow"),
    )
    .with_note("a tuple nested in itself (`t = (t, t)`) doubles at each step")
    .with_help("keep tiles and indices in fewer, flatter tuples")
}

/// A name bound to different tensors on the two branches of an `if`, or before a loop and
/// after an iteration of it (`in_loop`): after it, no single owner can be followed (the
/// compiler keeps one branch only where the test is a constant, and runs no iteration of a
/// `while` whose test folds to False, and refuses the merge otherwise).
pub fn branch_tensors_differ(name: &str, at: Span, in_loop: bool) -> Diagnostic {
    let msg = if in_loop {
        format!("`{name}` names one tensor before this loop and another after an iteration")
    } else {
        format!("`{name}` names a different tensor on each branch of this `if`")
    };
    Diagnostic::error(
        "CT1010",
        msg,
        Label::new(at, "the checker cannot follow the owner of this tensor"),
    )
    .with_note(
        "a tensor or partition may be bound to a name on one path, or the same one on every path",
    )
    .with_help(format!(
        "use the tensors directly in each branch instead of through `{name}`"
    ))
}

/// A loop whose state at its head (what each name holds, borrowed or moved) still changed
/// after `passes` readings of its body: an iteration would run from a state never checked.
pub fn loop_state_unsettled(at: Span, passes: usize) -> Diagnostic {
    Diagnostic::error(
        "CT1010",
        "the checker cannot settle what each name holds at the head of this loop".to_string(),
        Label::new(
            at,
            format!("still changing after {passes} readings of the body"),
        ),
    )
    .with_note("every iteration must start from a state the checker has read")
    .with_help("bind each tensor and partition once, before the loop, and use it inside")
}

/// A device function returns one tensor on a path and another (or a value) on another:
/// the caller would get a value the checker cannot follow as either.
pub fn returned_tensors_differ(func: &str, at: Span) -> Diagnostic {
    Diagnostic::error(
        "CT1010",
        format!("`{func}` returns a different tensor here than on another path"),
        Label::new(at, "the checker cannot follow the owner of this tensor"),
    )
    .with_note("a device function may return a tensor only if every `return` gives the same one")
    .with_help(
        "pass the tensor the caller needs, or choose it in the caller with a test of `Const`s",
    )
}

pub fn store_collision(
    name: &str,
    at: Span,
    a: &str,
    b: &str,
    tile: &str,
    grid: &str,
) -> Diagnostic {
    Diagnostic::error(
        "CT2001",
        format!("blocks {a} and {b} both store to tile {tile} of `{name}`"),
        Label::new(at, "this index is the same for two different blocks"),
    )
    .with_note(format!("this happens on every launch grid of at least {grid} blocks"))
    .with_help("make the index an injective function of `block_id`, e.g. a permutation of its axes, or use `store(tile)`")
}

/// A collision or out-of-grid store found at a store that runs only on some paths: the
/// counterexample holds if the blocks named get there.
pub fn if_reached(d: Diagnostic, conditional: bool) -> Diagnostic {
    if !conditional {
        return d;
    }
    d.with_note(
        "this store runs only on some paths (in a branch, in a loop that may not run, or after \
         a `break`, `continue` or `return` that may have run); the checker does not follow \
         conditions, so this happens if the blocks named reach it",
    )
}

/// CT2001 with a concrete launch found by search (`launch` reads `H = 2 and grid (3, 1)`).
pub fn store_collision_at(
    name: &str,
    at: Span,
    launch: &str,
    a: &str,
    b: &str,
    tile: &str,
) -> Diagnostic {
    Diagnostic::error(
        "CT2001",
        format!("with {launch}: blocks {a} and {b} both store to tile {tile} of `{name}`"),
        Label::new(at, "this index is the same for two different blocks"),
    )
    .with_note("found by evaluating the index on small launches (every `Const` and grid extent at least 1): on this one the two blocks race")
    .with_help("make the index an injective function of `block_id`: an invertible affine map, a grouped swizzle, or every digit (`b // d`, `b % d`) of a block id kept in its own place")
}

/// CT2002 with a concrete launch found by search.
pub fn store_out_of_grid_at(
    name: &str,
    at: Span,
    launch: &str,
    block: &str,
    tile: &str,
    axis: usize,
    count: i128,
) -> Diagnostic {
    Diagnostic::error(
        "CT2002",
        format!("store index of `{name}` leaves the partition grid on axis {axis}"),
        Label::new(
            at,
            format!("with {launch}, block {block} stores to tile {tile}"),
        ),
    )
    .with_note(format!(
        "on that launch axis {axis} of `{name}` has {count} tile{}",
        plural(count.unsigned_abs() as usize)
    ))
    .with_help("keep every component in `0 <= i < num_tiles(z, axis)`")
}

pub fn store_out_of_grid(name: &str, at: Span, axis: usize, block: &str, tile: &str) -> Diagnostic {
    Diagnostic::error(
        "CT2002",
        format!("store index of `{name}` leaves the partition grid on axis {axis}"),
        Label::new(
            at,
            format!("block {block} stores to tile index {tile} on axis {axis}"),
        ),
    )
    .with_note(
        "with the launch grid equal to the partition grid, a map into the grid is also onto it",
    )
    .with_help("keep every component in `0 <= i < num_tiles(z, axis)`")
}

pub fn store_rank_mismatch(name: &str, at: Span, got: usize, rank: usize) -> Diagnostic {
    Diagnostic::error(
        "CT2002",
        format!(
            "store index of `{name}` has {got} component{}, but `{name}` is partitioned in {rank} dimension{}",
            plural(got),
            plural(rank)
        ),
        Label::new(at, format!("expected {rank} components")),
    )
    .with_help("give one tile index per partition axis")
}

pub fn store_unprovable(name: &str, at: Span, reason: &str) -> Diagnostic {
    Diagnostic::error(
        "CT2003",
        format!("cannot prove that each block stores to a different tile of `{name}`"),
        Label::new(at, "no proof that this index is injective in the block id"),
    )
    .with_note(reason.to_string())
    .with_help("use `store(tile)`, an affine map of `block_id` with an invertible matrix, a grouped swizzle, the digits `b // d` and `b % d` of a block id each in its own place, or `iter_indices()`")
}

pub fn minted_by_other(name: &str, other: &str, at: Span) -> Diagnostic {
    Diagnostic::error(
        "CT2004",
        format!("index minted by `{other}.iter_indices()` used to store to `{name}`"),
        Label::new(at, format!("this index belongs to `{other}`'s schedule")),
    )
    .with_note("a minted index is unique per block only within the partition that minted it")
    .with_help(format!(
        "iterate `{name}.iter_indices()` to store to `{name}`"
    ))
}

pub fn subpartition_shape(at: Span, axis: usize, tile: &str, sub: &str) -> Diagnostic {
    Diagnostic::error(
        "CT2005",
        format!("sub-partition shape {sub} does not divide the tile shape {tile} on axis {axis}"),
        Label::new(at, "sub-tiles would not tile the block's own tile exactly"),
    )
    .with_help("choose a sub-tile shape whose every item divides the tile shape")
}

pub fn subpartition_rank(at: Span, got: usize, rank: usize) -> Diagnostic {
    Diagnostic::error(
        "CT2005",
        format!(
            "sub-partition shape has {got} item{}, but the tile has rank {rank}",
            plural(got)
        ),
        Label::new(at, format!("expected {rank} items")),
    )
    .with_help("give one sub-tile extent per tile axis")
}

pub fn subtile_out_of_bounds(name: &str, at: Span, axis: usize, detail: &str) -> Diagnostic {
    Diagnostic::error(
        "CT2006",
        format!("sub-tile index of `{name}` is out of bounds on axis {axis}"),
        Label::new(at, detail.to_string()),
    )
    .with_note("a sub-partition only reaches inside the block's own tile")
    .with_help("keep each index below the number of sub-tiles, `tile // sub` on that axis")
}

pub fn index_out_of_bounds(name: &str, at: Span, axis: usize, detail: &str) -> Diagnostic {
    Diagnostic::error(
        "CT2007",
        format!("tile index of `{name}` is out of bounds on axis {axis}"),
        Label::new(at, detail.to_string()),
    )
    .with_help("keep every tile index in `0 <= i < num_tiles(x, axis, shape)`")
}

pub fn denied_device_check(what: &str, at: Span, predicate: &str) -> Diagnostic {
    Diagnostic::error(
        "CT2008",
        format!("cannot prove statically or at launch that {what}"),
        Label::new(at, "this needs a check inside the kernel"),
    )
    .with_note(format!("`deny_in_kernel_checks` forbids the device check `{predicate}`"))
    .with_help("derive the index from `block_id`, a `range(...)` over a launch-known count, or `iter_indices()`")
}

pub fn mixed_store_maps(name: &str, at: Span, first: Span) -> Diagnostic {
    Diagnostic::error(
        "CT2010",
        format!("`{name}` is stored through two different index maps"),
        Label::new(at, "this store writes a different tile than the first one"),
    )
    .with_secondary(first, "first store, through another map")
    .with_note("each map alone is injective, but the tile one block writes under one map can be another block's tile under the other")
    .with_help("store every tile of a tensor through the same index: the own tile, one computed index, or the minted index")
}

pub fn read_write_maps_differ(name: &str, load: Span, store: Span) -> Diagnostic {
    Diagnostic::error(
        "CT2012",
        format!("`{name}` is read at one tile and written through another index map"),
        Label::new(load, "this load reads a tile that another block may be writing"),
    )
    .with_secondary(store, "the store, through a different map")
    .with_note("a block reads its tile while the block that the store's map sends there writes it: a read-write race")
    .with_help("read and write an output through the same index (both the own tile, or both the minted index), or read the data from an input")
}

/// An own-tile access on an output of a persistent kernel, whose blocks own minted tiles.
pub fn no_own_tile(name: &str, op: &str, at: Span) -> Diagnostic {
    Diagnostic::error(
        "CT2011",
        format!("`{op}` needs the block's own tile of `{name}`, and a persistent kernel has none"),
        Label::new(at, "no own tile in a persistent kernel"),
    )
    .with_help(format!(
        "walk the tiles with `for idx in {name}.iter_indices():` and use `idx` \
         (`{name}.store(t, index=idx)`, `x.load_tile(shape, idx)`)"
    ))
}

/// A reduction of an integer scalar along an axis: almost always the builtin `min`/`max`
/// shadowed by `from cutile.core import *`.
pub fn scalar_reduction(op: &str, at: Span) -> Diagnostic {
    let elementwise = match op {
        "min" => "minimum",
        "max" => "maximum",
        _ => "",
    };
    let d = Diagnostic::error(
        "CT3051",
        format!("`{op}(x, axis)` reduces a tile along an axis, but `x` is a scalar"),
        Label::new(at, "reduction of a scalar"),
    );
    if elementwise.is_empty() {
        d
    } else {
        d.with_help(format!(
            "for the {} of two values use `{elementwise}(a, b)` (`cutile.core.{op}` shadows \
             the builtin under `from cutile.core import *`)",
            if op == "min" { "smaller" } else { "larger" }
        ))
    }
}

/// A literal that cannot be the constant of a device integer operation of `bits` bits.
pub fn constant_too_wide(v: i128, bits: u8, at: Span) -> Diagnostic {
    Diagnostic::error(
        "CT3052",
        format!("the constant {v} does not fit the {bits}-bit integers this operation runs in"),
        Label::new(at, format!("computed in {bits}-bit integers on the device")),
    )
    .with_note("a literal takes the type of the value it meets; block ids, extents and loop counters are 32-bit")
    .with_help("keep constants that meet device values within their type's range")
}

/// A method the op table does not give this kind of value.
pub fn no_such_method(kind: &str, method: &str, at: Span) -> Diagnostic {
    let what = match kind {
        "mut" => "an output tensor",
        "sub" => "a sub-partition",
        "tensor" => "a shared input tensor",
        "atomic" => "an atomic tensor",
        _ => "this value",
    };
    Diagnostic::error(
        "CT3031",
        format!("{what} has no method `{method}`"),
        Label::new(at, "unknown method for this value"),
    )
    .with_help(match kind {
        "sub" => "a sub-partition has `load(index)` and `store(tile, index)`; partition the output once, with the finest shape",
        "tensor" => "read an input with `x.load_tile(shape, index)` or `load_tile_like(x, z)`",
        "atomic" => "an `Atomic` tensor is accessed only by atomic operations: `atomic_add(a, indices, value)`",
        _ => "load the tile first (`z.load()`), then call the method on the tile",
    })
}

/// A `for` loop whose iterable is not written in its header (`r = range(n); for i in r:`),
/// or (`schedule_call`) `iter_indices()` called anywhere but a `for` header.
pub fn loop_iterable_not_in_header(what: &str, at: Span, schedule_call: bool) -> Diagnostic {
    let (message, label) = if schedule_call {
        (
            format!("`{what}` outside a `for` header"),
            "a schedule no `for` header walks",
        )
    } else {
        (
            format!("`for` over `{what}`, which is not a `range(...)` or `iter_indices()` written in the header"),
            "the loop's range must be written here",
        )
    };
    Diagnostic::error("CT2013", message, Label::new(at, label))
        .with_note("the checker reads a loop's range, and the schedule a persistent output is walked by, from the `for` header alone")
        .with_help("write the iterable in the header: `for i in range(n):`, `for idx in z.iter_indices():`")
}

pub fn iter_indices_not_mut(what: &str, at: Span) -> Diagnostic {
    Diagnostic::error(
        "CT2009",
        format!("`iter_indices()` of `{what}`, which is not a mutable tensor"),
        Label::new(at, "only a `Mut` partition has a store schedule"),
    )
    .with_help("iterate the output partition, `for idx in z.iter_indices():`")
}

/// A plain read of an `Atomic` tensor (`load_tile`, `load_tile_like`, `gather`, ...).
pub fn atomic_plain_read(name: &str, op: &str, at: Span, decl: Span) -> Diagnostic {
    Diagnostic::error(
        "CT1013",
        format!("cannot read atomic tensor `{name}` with `{op}`, a plain load"),
        Label::new(at, "plain read of a tensor other blocks update atomically"),
    )
    .with_secondary(decl, format!("`{name}` is declared `Atomic` here"))
    .with_note("every block may update any element of an `Atomic` tensor while the kernel runs; a plain read races those updates")
    .with_help(format!(
        "use the old values an atomic operation returns (`atomic_add({name}, indices, 0)` reads atomically), or read `{name}` in a later launch"
    ))
}

/// A plain write to an `Atomic` tensor (`store`, `scatter`, ...).
pub fn atomic_plain_write(name: &str, op: &str, at: Span, decl: Span) -> Diagnostic {
    Diagnostic::error(
        "CT1014",
        format!("cannot write atomic tensor `{name}` with `{op}`, a plain store"),
        Label::new(at, "plain write to a tensor other blocks update atomically"),
    )
    .with_secondary(decl, format!("`{name}` is declared `Atomic` here"))
    .with_note("other blocks update the same elements atomically; a plain store races them")
    .with_help(format!(
        "store atomically with `atomic_xchg({name}, indices, value)`, or declare a `Mut` output for tile-by-tile writes"
    ))
}

/// An `Atomic` tensor partitioned, scheduled or used as a tile position.
pub fn atomic_partitioned(name: &str, what: &str, at: Span, decl: Span) -> Diagnostic {
    Diagnostic::error(
        "CT1015",
        format!("atomic tensor `{name}` cannot be {what}"),
        Label::new(at, "an `Atomic` tensor has no tiles"),
    )
    .with_secondary(decl, format!("`{name}` is declared `Atomic` here"))
    .with_note("an `Atomic` tensor is shared by every block element by element: no block owns a tile of it, and it does not decide the grid")
    .with_help(format!(
        "index its elements in an atomic operation, `atomic_add({name}, indices, value)`; partition a `Mut` output instead"
    ))
}

/// An `Atomic` tensor where the checker cannot follow it.
pub fn atomic_escapes(name: &str, at: Span, what: &str) -> Diagnostic {
    Diagnostic::error(
        "CT1016",
        format!("atomic tensor `{name}` cannot be {what}"),
        Label::new(at, "the checker cannot follow this atomic tensor"),
    )
    .with_note("an `Atomic` tensor may be bound to a name, passed to a device function's `Atomic` parameter, read for its `shape`, or be the first argument of an atomic operation")
    .with_help(format!("use `{name}` directly where it is needed"))
}

/// An argument of a device call whose kind differs from the parameter's (`Atomic` or not).
pub fn atomic_arg_mismatch(
    param: &str,
    callee: &str,
    at: Span,
    decl: Span,
    arg_is_atomic: bool,
) -> Diagnostic {
    let (msg, label, help) = if arg_is_atomic {
        (
            format!("`{callee}` takes `{param}` as a plain tensor, but this argument is an atomic tensor"),
            "an `Atomic` tensor",
            format!("declare the parameter `{param}: Atomic[Tensor[...]]`"),
        )
    } else {
        (
            format!("`{callee}` takes `{param}` as an atomic tensor, but this argument is not one"),
            "not an `Atomic` tensor",
            "pass an `Atomic` parameter of the kernel".to_string(),
        )
    };
    Diagnostic::error("CT1017", msg, Label::new(at, label))
        .with_secondary(decl, format!("`{param}` is declared here"))
        .with_note("an `Atomic` tensor is accessed only by atomic operations, a plain tensor never by them")
        .with_help(help)
}

/// A block-scoped atomic on a tensor every block shares.
pub fn atomic_block_scope(op: &str, name: &str, at: Span, literal: bool) -> Diagnostic {
    let msg = if literal {
        format!("`{op}` with `scope=\"block\"` on atomic tensor `{name}`, which every block shares")
    } else {
        format!("the `scope` of `{op}` on atomic tensor `{name}` is not a string literal")
    };
    Diagnostic::error(
        "CT1018",
        msg,
        Label::new(at, "atomic only among the threads of one block"),
    )
    .with_note("a block-scoped atomic is not atomic with respect to other blocks: their updates of one element race")
    .with_help("write `scope=\"device\"` (the default) or `scope=\"system\"`")
}

/// An atomic operation on a tensor that is not an `Atomic` parameter, outside `unsafe`.
pub fn atomic_needs_atomic_param(op: &str, name: &str, at: Span) -> Diagnostic {
    Diagnostic::error(
        "CT4002",
        format!("atomic operation `{op}` on `{name}`, which is not an `Atomic` tensor, outside `unsafe`"),
        Label::new(at, "atomic operation outside `unsafe`"),
    )
    .with_note("the checker proves atomics race-free only on an `Atomic` parameter, which every block touches through atomic operations alone")
    .with_help(format!(
        "declare the parameter `{name}: Atomic[Tensor[...]]` and pass it a Tensor, or wrap the call in `with cutile.unsafe():`"
    ))
}

/// `gather` from something other than a shared input, outside `unsafe`.
pub fn gather_not_shared(name: &str, at: Span) -> Diagnostic {
    Diagnostic::error(
        "CT4003",
        format!("`gather` from `{name}`, which is not a shared input, outside `unsafe`"),
        Label::new(at, "scatter/gather outside `unsafe`"),
    )
    .with_note("other blocks write an output's elements while this block reads them")
    .with_help("gather from a shared `Tensor` parameter (safe), or wrap the call in `with cutile.unsafe():`")
}

/// Which unsafe family an operation belongs to.
pub fn unsafe_code(op: &str) -> Option<(&'static str, &'static str)> {
    Some(match op {
        "load_ptr" | "store_ptr" | "int_to_ptr" | "ptr_offset" => ("CT4001", "pointer operation"),
        "atomic_add" | "atomic_max" | "atomic_min" | "atomic_and" | "atomic_or" | "atomic_xor"
        | "atomic_xchg" | "atomic_cas" => ("CT4002", "atomic operation"),
        "scatter" | "gather" => ("CT4003", "scatter/gather"),
        "store_unchecked" => ("CT4004", "unchecked store"),
        "assume_div_by" | "assume_bounds" => ("CT4005", "`assume` hint"),
        _ => return None,
    })
}

pub fn unsafe_op(op: &str, at: Span) -> Option<Diagnostic> {
    let (code, family) = unsafe_code(op)?;
    Some(
        Diagnostic::error(
            code,
            format!("call to unsafe {family} `{op}` outside `unsafe`"),
            Label::new(at, format!("{family} outside `unsafe`")),
        )
        .with_note(
            "the checker cannot prove this operation free of races or out-of-bounds accesses",
        )
        .with_help("wrap it in `with cutile.unsafe():` and state why it is safe in a comment"),
    )
}

pub fn ptr_param(name: &str, at: Span, func: &str, entry: bool) -> Diagnostic {
    let decorator = if entry {
        "@cutile.entry(unsafe=True)"
    } else {
        "@cutile.device(unsafe=True)"
    };
    Diagnostic::error(
        "CT4006",
        format!("pointer parameter `{name}` in safe function `{func}`"),
        Label::new(at, "raw pointer parameter"),
    )
    .with_help(format!("declare the function with `{decorator}`"))
}

#[cfg(test)]
mod tests {
    /// Every code a constructor here can report is in the registry, as a kernel code.
    #[test]
    fn every_code_is_registered() {
        let src = include_str!("errors.rs");
        let mut n = 0;
        for (i, _) in src.match_indices("\"CT") {
            let code = &src[i + 1..i + 7];
            if code.len() == 6 && code[2..].chars().all(|c| c.is_ascii_digit()) {
                let info =
                    cutile_diag::lookup(code).unwrap_or_else(|| panic!("{code} is not registered"));
                assert_eq!(info.kind, cutile_diag::CodeKind::Kernel, "{code}");
                n += 1;
            }
        }
        assert!(n >= 28, "found only {n} codes");
    }
}
