//! Host-level ownership rules of cutile (docs/design.md §3, host rules 1-4 and 6).
//!
//! - [`HostRegistry`]: storages (allocations) and handles (live Python tensor objects,
//!   each viewing a byte [`Region`] of a storage). A handle is `live`, `moved` into a
//!   pending operation (which names it in errors), `consumed` by `partition` /
//!   `unpartition`, `dropped` with an operation that never ran (unusable for good: what it
//!   holds is not what the program meant it to hold), or `released`. `consume` enforces unique storage (rule 1); `move_in`
//!   moves a launch's arguments all or nothing, refusing duplicates and stride-aware
//!   overlaps with a mutable argument (rules 2, 3); `give_back` ends the loan.
//! - [`Ledger`]: byte ranges in flight per completion token (rule 4), with the stream
//!   position of the work; [`Clocks`]: how far each stream is enqueued and complete;
//!   [`InFlight`]: the two together, which order work across streams, host reads and
//!   frees.
//! - [`validate_launch`]: grid and tile shapes against the kernel (rule 6).
//! - [`OpState`]: one launch op's life (start once, release once, abandoned when dropped
//!   without running); `launch_plan` binds,
//!   grids, checks and packs a launch ([`launch_plan::ParamBuffer`]).
//!
//! No PyO3 here; `cutile-py` maps [`HostError`] to `BorrowError` / `LaunchError`.
//! Testing: `cargo test -p cutile-host`; `cargo bench -p cutile-host` times `move_in`.

mod holders;
mod in_flight;
mod launch;
pub mod launch_plan;
mod ledger;
mod loans;
mod op_state;
mod region;
pub mod streams;

pub use in_flight::{InFlight, POLL_EVERY};
pub use launch::{validate_launch, PartitionArg};
pub use ledger::{Access, Ledger};
pub use op_state::{DropAction, OpState, Release, StartRefusal};
pub use region::{may_overlap, Region};
pub use streams::{Clocks, EventOps, NoEvents, Stats, Waits, NO_STREAM};

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// Which Python exception a host error becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Borrow,
    Launch,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    pub kind: ErrorKind,
    pub code: &'static str,
    pub message: String,
    pub hint: Option<String>,
    /// What the error is about, as data for tools (the message says it in words); boxed
    /// so that a refusal stays small on the launch path.
    pub about: Box<About>,
}

/// The kernel, op and tensor an error names, where the layer that made it knows them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct About {
    pub kernel: Option<String>,
    pub op: Option<u64>,
    /// The parameter the tensor was (or would be) passed as.
    pub tensor: Option<String>,
}

impl HostError {
    pub fn borrow(code: &'static str, message: String, hint: Option<String>) -> Self {
        HostError {
            kind: ErrorKind::Borrow,
            code,
            message,
            hint,
            about: Box::default(),
        }
    }

    pub fn launch(code: &'static str, message: String, hint: Option<String>) -> Self {
        HostError {
            kind: ErrorKind::Launch,
            code,
            message,
            hint,
            about: Box::default(),
        }
    }

    /// Name the kernel, unless a more specific layer already did.
    pub fn with_kernel(mut self, kernel: &str) -> Self {
        self.about.kernel.get_or_insert_with(|| kernel.to_string());
        self
    }

    /// Name the op, unless a more specific layer already did.
    pub fn with_op(mut self, op: u64) -> Self {
        self.about.op.get_or_insert(op);
        self
    }

    /// Name the tensor's parameter, unless a more specific layer already did.
    pub fn with_tensor(mut self, param: &str) -> Self {
        self.about.tensor.get_or_insert_with(|| param.to_string());
        self
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

impl std::error::Error for HostError {}

/// Ids are small sequential integers: hash them with one multiply.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandleState {
    Live,
    /// Held by pending operation `op` (its name is in the op table).
    Moved {
        op: u64,
    },
    Consumed {
        by: Arc<str>,
    },
    /// Moved into operation `op`, which was dropped without running: the tensor never got
    /// the contents the program asked for, so no use of it is allowed again (the Python
    /// object can only be released). `kernel` and `op` name the op in errors ("`add` (op
    /// #7)"); `param` is the parameter it was passed as, where known. (Boxed: the state of
    /// a handle no launch uses again keeps every live handle's record small.)
    Dropped(Box<DroppedInto>),
}

/// What a [`HandleState::Dropped`] handle was moved into, named in its errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedInto {
    pub op: u64,
    pub kernel: Arc<str>,
    pub param: Option<Arc<str>>,
}

/// One handle's record. Small (the region, read only to test two views of one storage
/// for overlap, is boxed): a launch looks up a record per tensor, and with thousands of
/// tensors alive each lookup is a cache miss; a record that fits in one cache line with
/// its key costs one miss, not three.
#[derive(Debug, Clone)]
struct Handle {
    storage: u64,
    state: HandleState,
    region: Box<Region>,
    /// Released while a pending op held it (its Python object died): it keeps its storage
    /// until the op gives it back (the GPU may still be using the memory), and no use of
    /// it is allowed meanwhile.
    zombie: bool,
}

/// No slot (a handle made without a registry, or one the caller does not know the slot
/// of): lookups go by id.
pub const NO_SLOT: u32 = u32::MAX;

/// A handle as a launch names it: its id, and the slot of the registry's slab that held
/// it when its tensor was made (a hint: a lookup checks the slot still holds that id, so a
/// slot reused after a release never stands for another handle; ids are never reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandleAt {
    pub id: u64,
    pub slot: u32,
}

impl HandleAt {
    /// A handle known by id only.
    pub fn id(id: u64) -> Self {
        HandleAt { id, slot: NO_SLOT }
    }
}

/// A slot of the handle slab: the id of the handle it holds (0: free) and its record.
/// One cache line each: a launch reads one per tensor, found by index, not by hashing
/// (a hash lookup reads the table's control bytes and then the bucket: two misses).
#[derive(Debug)]
#[repr(align(64))]
struct HandleSlot {
    id: u64,
    handle: Option<Handle>,
}

#[derive(Debug)]
enum OpName {
    /// Given whole to [`HostRegistry::move_in`] (interned).
    Given(Arc<str>),
    /// A kernel launch ([`HostRegistry::move_in_launch`]), shown as "`kernel` (op #id)":
    /// formatted only when an error or `holder` needs it.
    Launch(Arc<str>),
    /// A long-lived holder ([`HostRegistry::hold`]: a CUDA Graph), which keeps its
    /// tensors until it gives them back.
    Holder(Arc<str>),
}

/// How a kernel launch names its operation in errors: "`add` (op #7)".
pub fn launch_op_name(kernel: &str, op: u64) -> String {
    format!("`{kernel}` (op #{op})")
}

#[derive(Debug)]
struct Op {
    name: OpName,
    handles: loans::Held,
}

#[derive(Debug, Clone)]
struct Storage {
    nbytes: u64,
    /// Handles not consumed and not released.
    handles: u32,
    /// Foreign memory imported shared (read-only, `cutile.from_dlpack`): another library
    /// may read it at any time, so cutile never writes it.
    shared: bool,
    /// Live exports to another library (DLPack capsules not yet released, tensors seen
    /// through `__cuda_array_interface__`): while any is live, cutile does not write it.
    exports: u32,
    /// Long-lived holders (CUDA Graphs, by op id) whose replays read or write this memory:
    /// while any holds it, no one else writes it (a mutable launch argument, a
    /// `partition`), whatever handle they reach it through (host rule 5).
    holders: Vec<u64>,
}

impl Storage {
    /// Another library may see it: imported shared, or exported and not yet released.
    fn foreign(&self) -> bool {
        self.shared || self.exports > 0
    }
}

/// Host-side ownership of device memory.
#[derive(Debug, Default)]
pub struct HostRegistry {
    storages: IdMap<Storage>,
    /// Handle records in a slab: a tensor knows its slot ([`HandleAt`]), so a launch finds
    /// each record by index; freed slots are reused.
    slots: Vec<HandleSlot>,
    free_slots: Vec<u32>,
    /// The slot of each handle by id: for the calls that name a handle by id alone (Python's,
    /// once per tensor made or released, not per launch).
    slot_of: IdMap<u32>,
    ops: IdMap<Op>,
    /// Interned op names (one allocation per distinct kernel name, not per launch).
    names: HashMap<Box<str>, Arc<str>>,
    /// Storages another library may see ([`Storage::foreign`]): while there are none, a
    /// launch's writes need no storage lookup (a launch otherwise takes a cache miss per
    /// written tensor on the storage's record).
    foreign: usize,
    /// Storages a long-lived holder guards ([`Storage::holders`] not empty): while there
    /// are none, a write needs no storage lookup for them either.
    guarded: usize,
    /// The storages each long-lived holder guards, by op id ([`HostRegistry::guard`]).
    guards: IdMap<Vec<u64>>,
    next_storage: u64,
    next_handle: u64,
}

impl HostRegistry {
    pub fn new() -> Self {
        HostRegistry::default()
    }

    pub fn new_storage(&mut self, nbytes: u64) -> u64 {
        self.add_storage(nbytes, false)
    }

    /// A storage of foreign memory imported shared: no handle of it is ever written by a
    /// launch or partitioned (CT5040).
    pub fn new_shared_storage(&mut self, nbytes: u64) -> u64 {
        self.add_storage(nbytes, true)
    }

    fn add_storage(&mut self, nbytes: u64, shared: bool) -> u64 {
        self.next_storage += 1;
        let st = Storage {
            nbytes,
            handles: 0,
            shared,
            exports: 0,
            holders: Vec::new(),
        };
        self.foreign += usize::from(st.foreign());
        self.storages.insert(self.next_storage, st);
        self.next_storage
    }

    /// Another library got a view of `storage` (an export): until the matching
    /// [`HostRegistry::unpin_export`], cutile does not write it (CT5041). Returns the
    /// live export count.
    pub fn pin_export(&mut self, storage: u64) -> Result<u32, HostError> {
        self.change_exports(storage, |n| n.saturating_add(1))
    }

    /// The other library released an export of `storage`. Returns the live export count.
    pub fn unpin_export(&mut self, storage: u64) -> Result<u32, HostError> {
        self.change_exports(storage, |n| n.saturating_sub(1))
    }

    /// Set `storage`'s export count to `f(count)`, keeping the foreign count; returns it.
    fn change_exports(
        &mut self,
        storage: u64,
        f: impl FnOnce(u32) -> u32,
    ) -> Result<u32, HostError> {
        let st = self
            .storages
            .get_mut(&storage)
            .ok_or_else(|| unknown_storage(storage))?;
        let was = st.foreign();
        st.exports = f(st.exports);
        let (now, exports) = (st.foreign(), st.exports);
        self.foreign = self.foreign + usize::from(now) - usize::from(was);
        Ok(exports)
    }

    /// `(shared, live exports)` of `storage`.
    pub fn storage_sharing(&self, storage: u64) -> Result<(bool, u32), HostError> {
        self.storages
            .get(&storage)
            .map(|s| (s.shared, s.exports))
            .ok_or_else(|| unknown_storage(storage))
    }

    /// Refuse writes of `storages` (`what` names the writer) where another library may
    /// see one of them (CT5040, CT5041): a graph replay checks the memory it writes.
    pub fn check_writable(&self, storages: &[u64], what: &str) -> Result<(), HostError> {
        for &s in storages {
            self.refuse_foreign_write(s, || what.to_string())?;
        }
        Ok(())
    }

    /// Refuse a write of `storage` (`what()` names it: made only for the error) that
    /// another library may see: memory imported shared (CT5040), or exported and not yet
    /// released (CT5041).
    fn refuse_foreign_write(
        &self,
        storage: u64,
        what: impl FnOnce() -> String,
    ) -> Result<(), HostError> {
        if self.foreign == 0 {
            return Ok(()); // no storage another library may see: none to look up
        }
        let Some(st) = self.storages.get(&storage) else {
            return Ok(());
        };
        if !st.foreign() {
            return Ok(());
        }
        let what = what();
        if st.shared {
            return Err(HostError::borrow(
                "CT5040",
                format!(
                    "cannot {what}: the tensor is memory of another library imported shared \
                     (`cutile.from_dlpack`), which cutile only reads"
                ),
                Some(
                    "write into a cutile tensor (`api.empty(...)`) instead, or, if nothing \
                     else reads or writes that memory while cutile holds it, import it with \
                     `cutile.unsafe.from_dlpack_exclusive(obj)`"
                        .into(),
                ),
            ));
        }
        if st.exports > 0 {
            return Err(HostError::borrow(
                "CT5041",
                format!(
                    "cannot {what}: the tensor's memory is exported to another library \
                     ({} live export{}: DLPack or `__cuda_array_interface__`), which may \
                     still read it",
                    st.exports,
                    if st.exports == 1 { "" } else { "s" }
                ),
                Some(
                    "drop the other library's tensor first (that ends a DLPack export), or \
                     export a copy (`__dlpack__(copy=True)`)"
                        .into(),
                ),
            ));
        }
        Ok(())
    }

    /// A new live handle viewing `region` of `storage`. The region must lie inside it.
    pub fn new_handle(&mut self, storage: u64, region: Region) -> Result<u64, HostError> {
        self.new_handle_at(storage, region).map(|h| h.id)
    }

    /// [`HostRegistry::new_handle`], with the slot that holds it (what a launch passes).
    pub fn new_handle_at(&mut self, storage: u64, region: Region) -> Result<HandleAt, HostError> {
        let Some(st) = self.storages.get_mut(&storage) else {
            return Err(HostError::borrow(
                "CT5007",
                format!("unknown storage {storage}"),
                None,
            ));
        };
        if region.shape.len() != region.strides.len() {
            return Err(HostError::borrow(
                "CT5007",
                format!(
                    "a view needs one stride per axis: shape has {} axes, strides {}",
                    region.shape.len(),
                    region.strides.len()
                ),
                None,
            ));
        }
        if let Some((lo, hi)) = region.extent() {
            if lo < 0 || hi > i128::from(st.nbytes) {
                return Err(HostError::borrow(
                    "CT5007",
                    format!(
                        "view spans bytes {lo}..{hi}, outside storage {storage} of {} bytes",
                        st.nbytes
                    ),
                    None,
                ));
            }
        }
        st.handles += 1;
        self.next_handle += 1;
        let id = self.next_handle;
        let handle = Some(Handle {
            storage,
            state: HandleState::Live,
            region: Box::new(region),
            zombie: false,
        });
        let slot = match self.free_slots.pop() {
            Some(i) => {
                self.slots[i as usize] = HandleSlot { id, handle };
                i
            }
            None => {
                self.slots.push(HandleSlot { id, handle });
                (self.slots.len() - 1) as u32
            }
        };
        self.slot_of.insert(id, slot);
        Ok(HandleAt { id, slot })
    }

    /// The slot holding handle `h`: its hint where that slot still holds it, else by id.
    pub(crate) fn find(&self, h: HandleAt) -> Option<u32> {
        find_slot(&self.slots, &self.slot_of, h)
    }

    /// The slot holding handle `id` ([`NO_SLOT`] if none): a tensor keeps it as a hint.
    pub fn slot_of(&self, id: u64) -> u32 {
        self.slot_of.get(&id).copied().unwrap_or(NO_SLOT)
    }

    /// The record of handle `id` (a zombie's too: see [`Handle::zombie`]).
    pub(crate) fn handle(&self, id: u64) -> Option<&Handle> {
        let i = self.find(HandleAt::id(id))?;
        self.slots[i as usize].handle.as_ref()
    }

    /// Free slot `i` (it holds a handle): the handle is forgotten.
    fn remove_slot(&mut self, i: u32) -> Option<Handle> {
        let s = self.slots.get_mut(i as usize)?;
        let h = s.handle.take()?;
        self.slot_of.remove(&s.id);
        s.id = 0;
        self.free_slots.push(i);
        Some(h)
    }

    /// Handles known (live, moved, consumed or dropped, and released while moved).
    pub fn handle_count(&self) -> usize {
        self.slot_of.len()
    }

    /// The Python object died. Returns the storage's remaining handle count (0: it may be
    /// freed once no pending operation holds it).
    pub fn release_handle(&mut self, handle: u64) -> Result<u32, HostError> {
        let Some(i) = self.find(HandleAt::id(handle)) else {
            return Err(self.missing(handle));
        };
        let Some(h) = self.slots[i as usize].handle.as_mut() else {
            return Err(self.missing(handle));
        };
        if h.zombie {
            return Err(self.missing(handle));
        }
        if let HandleState::Moved { .. } = h.state {
            let storage = h.storage;
            h.zombie = true;
            return self.storage_live_handles(storage);
        }
        let Some(h) = self.remove_slot(i) else {
            return Err(self.missing(handle));
        };
        let Some(st) = self.storages.get_mut(&h.storage) else {
            return Ok(0);
        };
        if !matches!(h.state, HandleState::Consumed { .. }) {
            st.handles = st.handles.saturating_sub(1);
        }
        Ok(st.handles)
    }

    /// The storage's memory was freed (its last Python reference died, so no handle of it
    /// is live): forget it, so the registry holds what is alive, not the history.
    pub fn drop_storage(&mut self, storage: u64) -> bool {
        match self.storages.remove(&storage) {
            Some(st) => {
                self.foreign -= usize::from(st.foreign());
                self.guarded = self
                    .guarded
                    .saturating_sub(usize::from(!st.holders.is_empty()));
                true
            }
            None => false,
        }
    }

    /// Storages known (live allocations).
    pub fn storage_count(&self) -> usize {
        self.storages.len()
    }

    pub fn storage_live_handles(&self, storage: u64) -> Result<u32, HostError> {
        self.storages
            .get(&storage)
            .map(|s| s.handles)
            .ok_or_else(|| unknown_storage(storage))
    }

    fn missing(&self, handle: u64) -> HostError {
        if handle >= 1 && handle <= self.next_handle {
            HostError::borrow(
                "CT5003",
                format!("tensor handle {handle} was released"),
                Some("keep a reference to the tensor while it is used".into()),
            )
        } else {
            HostError::borrow("CT5007", format!("unknown tensor handle {handle}"), None)
        }
    }

    /// The kernel (or given name) of op `op`.
    fn op_kernel(&self, op: u64) -> Option<&str> {
        self.ops.get(&op).map(|o| match &o.name {
            OpName::Given(n) | OpName::Launch(n) | OpName::Holder(n) => &**n,
        })
    }

    fn op_name(&self, op: u64) -> String {
        match self.ops.get(&op).map(|o| &o.name) {
            Some(OpName::Given(n)) => n.to_string(),
            Some(OpName::Launch(k) | OpName::Holder(k)) => launch_op_name(k, op),
            None => "?".into(),
        }
    }

    /// How a message names op `op`, ready to print (it brings its own backticks):
    /// "`add` (op #7)".
    fn shown(&self, op: u64) -> String {
        match self.ops.get(&op).map(|o| &o.name) {
            Some(OpName::Given(n) | OpName::Launch(n) | OpName::Holder(n)) => launch_op_name(n, op),
            None => format!("op #{op}"),
        }
    }

    fn not_live(&self, handle: u64, state: &HandleState, what: &str) -> HostError {
        match state {
            HandleState::Live => HostError::borrow("CT5007", String::new(), None),
            HandleState::Moved { op }
                if matches!(self.ops.get(op).map(|o| &o.name), Some(OpName::Holder(_))) =>
            {
                HostError::borrow(
                    "CT5001",
                    format!(
                        "cannot {what}: the tensor is held by {} until it gives its tensors \
                         back (`into_inner()`, or when it is dropped)",
                        self.shown(*op)
                    ),
                    Some(
                        "work through the graph (`g.replay(...)`, `g.read(i)`), or take the \
                         tensors back with `g.into_inner()`"
                            .into(),
                    ),
                )
                .with_op(*op)
            }
            HandleState::Moved { op } => {
                let e = HostError::borrow(
                    "CT5001",
                    format!(
                        "cannot {what}: the tensor was moved into {}, which has not completed",
                        self.shown(*op)
                    ),
                    Some(
                        "run the op with `.sync()` (or `await` it) and use the tensors it \
                         returns"
                            .into(),
                    ),
                )
                .with_op(*op);
                match self.op_kernel(*op) {
                    Some(k) => e.with_kernel(k),
                    None => e,
                }
            }
            HandleState::Consumed { by } => HostError::borrow(
                "CT5002",
                format!("cannot {what}: the tensor (handle {handle}) was consumed by `{by}`"),
                Some(format!("use the value returned by `{by}` instead")),
            ),
            HandleState::Dropped(d) => {
                let DroppedInto { op, kernel, param } = &**d;
                let tensor = param
                    .as_deref()
                    .map_or_else(|| "the tensor".to_string(), |p| format!("`{p}`"));
                let op_name = launch_op_name(kernel, *op);
                let e = HostError::borrow(
                    "CT5009",
                    format!(
                        "cannot {what}: {tensor} was moved into {op_name}, which was dropped \
                         without running"
                    ),
                    Some(format!(
                        "calling a kernel only builds an op, and `.sync()` or `await` runs it: \
                         run the op and use the tensors it returns; {tensor} cannot be used \
                         again (make it anew)"
                    )),
                )
                .with_op(*op)
                .with_kernel(kernel);
                match param {
                    Some(p) => e.with_tensor(p),
                    None => e,
                }
            }
        }
    }

    /// Raise unless `handle` is live; `what` names the attempted use.
    pub fn check_live(&self, handle: u64, what: &str) -> Result<(), HostError> {
        let h = self.handle(handle).ok_or_else(|| self.missing(handle))?;
        match &h.state {
            HandleState::Live => Ok(()),
            s => Err(self.not_live(handle, s, what)),
        }
    }

    /// Consume a live handle and return a new live one on the same region (`partition`,
    /// `unpartition`). With `require_unique`, no other handle of the storage may be live
    /// or moved (host rule 1).
    pub fn consume(
        &mut self,
        handle: u64,
        by: &str,
        require_unique: bool,
    ) -> Result<u64, HostError> {
        self.check_live(handle, by)?;
        let (storage, region) = {
            let h = self.handle(handle).ok_or_else(|| self.missing(handle))?;
            (h.storage, (*h.region).clone())
        };
        if require_unique {
            self.refuse_foreign_write(storage, || format!("`{by}`"))?;
            self.refuse_held_write(storage, || format!("`{by}`"))?;
            let others = self.storage_live_handles(storage)?.saturating_sub(1);
            if others > 0 {
                return Err(HostError::borrow(
                    "CT5004",
                    format!(
                        "cannot `{by}`: the tensor's storage has {others} other live view{}",
                        if others == 1 { "" } else { "s" }
                    ),
                    Some(
                        "drop the other views before partitioning it (`del`), or write into a \
                         tensor of its own (`cutile.api.empty(...)`)"
                            .into(),
                    ),
                ));
            }
        }
        if let Some(i) = self.find(HandleAt::id(handle)) {
            if let Some(h) = self.slots[i as usize].handle.as_mut() {
                h.state = HandleState::Consumed { by: by.into() };
            }
        }
        if let Some(st) = self.storages.get_mut(&storage) {
            st.handles = st.handles.saturating_sub(1);
        }
        self.new_handle(storage, region)
    }

    /// The state of a handle (`None` if released or unknown).
    pub fn state(&self, handle: u64) -> Option<&HandleState> {
        self.handle(handle).map(|h| &h.state)
    }

    /// The storage and region of a handle.
    pub fn region(&self, handle: u64) -> Option<(u64, &Region)> {
        self.handle(handle).map(|h| (h.storage, &*h.region))
    }
}

/// The slot of `slots` holding handle `h`: its hint where that slot holds that id (ids are
/// never reused, so this is the handle itself), else by id.
fn find_slot(slots: &[HandleSlot], slot_of: &IdMap<u32>, h: HandleAt) -> Option<u32> {
    match slots.get(h.slot as usize) {
        Some(s) if s.id == h.id && s.handle.is_some() => Some(h.slot),
        _ => slot_of.get(&h.id).copied(),
    }
}

fn unknown_storage(storage: u64) -> HostError {
    HostError::borrow("CT5007", format!("unknown storage {storage}"), None)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_slots;
