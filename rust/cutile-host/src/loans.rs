//! Loans of handles to operations (host rule 3): a launch or another operation takes its
//! arguments' handles, all or nothing, after the checks that they are live, not aliased
//! where one is written, and not memory another library may see; it gives them back when
//! it completes, or, dropped without running, leaves them unusable; a long-lived holder (a
//! CUDA Graph) keeps them until it is done.

use super::*;

/// The slots of the handles an operation holds: inline up to [`Held::INLINE`] (a launch
/// holds one per tensor argument), so moving arguments in allocates nothing however many
/// ops are in flight. (A handle moved into an op stays in its slot until the op gives it
/// back: released meanwhile, it is kept as a zombie; the op still checks each slot holds a
/// handle moved into it before changing it.)
#[derive(Debug, Default)]
pub(crate) struct Held {
    inline: [u32; Held::INLINE],
    n: usize,
    more: Vec<u32>,
}

impl Held {
    const INLINE: usize = 8;

    pub(crate) fn push(&mut self, id: u32) {
        if self.n < Self::INLINE {
            self.inline[self.n] = id;
        } else {
            self.more.push(id);
        }
        self.n += 1;
    }

    pub(crate) fn len(&self) -> usize {
        self.n
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.inline[..self.n.min(Self::INLINE)]
            .iter()
            .chain(&self.more)
            .copied()
    }
}

impl HostRegistry {
    /// Move handles into pending operation `op` (host rule 3), all or nothing. `args` are
    /// `(handle, mutable)`.
    pub fn move_in(
        &mut self,
        op: u64,
        op_name: &str,
        args: &[(u64, bool)],
    ) -> Result<(), HostError> {
        let args: Vec<(HandleAt, bool)> = args.iter().map(|&(h, m)| (HandleAt::id(h), m)).collect();
        let args = &args[..];
        self.check_moves(args, op, op_name)?;
        let name = match self.names.get(op_name) {
            Some(n) => n.clone(),
            None => {
                let n: Arc<str> = Arc::from(op_name);
                self.names.insert(op_name.into(), n.clone());
                n
            }
        };
        self.record_moves(op, OpName::Given(name), args);
        Ok(())
    }

    /// [`HostRegistry::move_in`] for a kernel launch: the operation is named
    /// "`kernel` (op #op)" (see [`launch_op_name`]), formatted only when shown; each
    /// handle comes with its slot (found by index, checked against its id).
    pub fn move_in_launch(
        &mut self,
        op: u64,
        kernel: &Arc<str>,
        args: &[(HandleAt, bool)],
    ) -> Result<(), HostError> {
        self.check_moves(args, op, kernel)?;
        self.record_moves(op, OpName::Launch(kernel.clone()), args);
        Ok(())
    }

    /// Move every live handle of `handles` into long-lived holder `op` (a CUDA Graph that
    /// owns the tensors it touches): until [`HostRegistry::give_back`], every use of them is
    /// refused (CT5001, naming the holder). Handles that are not live (consumed, released)
    /// are skipped: the holder keeps their memory by other means. Returns how many moved.
    pub fn hold(&mut self, op: u64, name: &str, handles: &[u64]) -> usize {
        let live: Vec<(HandleAt, bool)> = handles
            .iter()
            .filter(|h| self.state(**h) == Some(&HandleState::Live))
            .map(|h| (HandleAt::id(*h), false))
            .collect();
        self.record_moves(op, OpName::Holder(Arc::from(name)), &live);
        self.ops.get(&op).map_or(0, |o| o.handles.len())
    }

    /// Every handle live; no handle twice and no byte-overlap where either use is mutable.
    fn check_moves(
        &self,
        args: &[(HandleAt, bool)],
        op: u64,
        kernel: &str,
    ) -> Result<(), HostError> {
        let op_name = || launch_op_name(kernel, op);
        const INLINE: usize = 16;
        let mut inline: [Option<&Handle>; INLINE] = [None; INLINE];
        let mut spill: Vec<&Handle> = Vec::new();
        for (i, &(at, _)) in args.iter().enumerate() {
            let id = at.id;
            let h = self
                .find(at)
                .and_then(|s| self.slots[s as usize].handle.as_ref())
                .ok_or_else(|| self.missing(id))?;
            if h.state != HandleState::Live {
                return Err(self.not_live(id, &h.state, &format!("pass it to {}", op_name())));
            }
            if args[i].1 {
                let what = || format!("pass it to {} as argument {i}, which writes it", op_name());
                self.refuse_foreign_write(h.storage, what)
                    .and_then(|()| self.refuse_held_write(h.storage, what))
                    .map_err(|e| e.with_op(op).with_kernel(kernel))?;
            }
            if i < INLINE {
                inline[i] = Some(h);
            } else {
                spill.push(h);
            }
        }
        let get = |i: usize| {
            if i < INLINE {
                inline[i]
            } else {
                spill.get(i - INLINE).copied()
            }
        };
        for i in 0..args.len() {
            for j in i + 1..args.len() {
                let ((a, ma), (b, mb)) = (args[i], args[j]);
                if !(ma || mb) {
                    continue;
                }
                if a.id == b.id {
                    return Err(HostError::borrow(
                        "CT5005",
                        format!("the same tensor is passed to {} as arguments {i} and {j}, and one of them is mutable", op_name()),
                        Some("pass distinct tensors, or copy one of them".into()),
                    )
                    .with_op(op)
                    .with_kernel(kernel));
                }
                let (Some(x), Some(y)) = (get(i), get(j)) else {
                    continue;
                };
                if x.storage != y.storage {
                    continue;
                }
                // (`may_overlap` rejects disjoint byte spans first)
                if may_overlap(&x.region, &y.region) {
                    return Err(HostError::borrow(
                        "CT5006",
                        format!("arguments {i} and {j} of {} may overlap in memory, and one of them is mutable", op_name()),
                        Some("pass views that do not share elements, or copy one of them".into()),
                    )
                    .with_op(op)
                    .with_kernel(kernel));
                }
            }
        }
        Ok(())
    }

    fn record_moves(&mut self, op: u64, name: OpName, args: &[(HandleAt, bool)]) {
        let HostRegistry {
            ops,
            slots,
            slot_of,
            ..
        } = self;
        let entry = match ops.entry(op) {
            std::collections::hash_map::Entry::Occupied(o) => {
                let e = o.into_mut();
                e.name = name;
                e
            }
            std::collections::hash_map::Entry::Vacant(v) => v.insert(Op {
                name,
                handles: Held::default(),
            }),
        };
        for &(at, _) in args {
            let Some(slot) = find_slot(slots, slot_of, at) else {
                continue;
            };
            if let Some(h) = slots[slot as usize].handle.as_mut() {
                if h.state == HandleState::Live {
                    h.state = HandleState::Moved { op };
                    entry.handles.push(slot);
                }
            }
        }
    }

    /// Operation `op` completed (or failed before launch): its handles are live again.
    /// Returns how many were handed back.
    pub fn give_back(&mut self, op: u64) -> usize {
        self.end_loan(op, |_| HandleState::Live)
    }

    /// Operation `op` was dropped without running: its handles stay unusable for good
    /// ([`HandleState::Dropped`]), each named by its parameter from `params` (`(handle,
    /// parameter)`; the first entry for a handle wins). Returns how many were marked.
    pub fn abandon(&mut self, op: u64, params: &[(u64, &str)]) -> usize {
        let kernel: Arc<str> = match self.ops.get(&op).map(|o| &o.name) {
            Some(OpName::Given(n) | OpName::Launch(n) | OpName::Holder(n)) => n.clone(),
            None => return 0,
        };
        self.end_loan(op, |id| {
            HandleState::Dropped(Box::new(DroppedInto {
                op,
                kernel: kernel.clone(),
                param: params
                    .iter()
                    .find(|(handle, _)| *handle == id)
                    .map(|(_, p)| Arc::from(*p)),
            }))
        })
    }

    /// End `op`'s loan: each handle it still holds takes the state `next(handle)`, and
    /// those whose Python object died meanwhile are released. Returns how many changed.
    fn end_loan(&mut self, op: u64, mut next: impl FnMut(u64) -> HandleState) -> usize {
        self.end_guards(op);
        let Some(entry) = self.ops.remove(&op) else {
            return 0;
        };
        let mut n = 0;
        for slot in entry.handles.iter() {
            let Some(s) = self.slots.get_mut(slot as usize) else {
                continue;
            };
            let id = s.id;
            let Some(h) = s.handle.as_mut() else {
                continue;
            };
            if !matches!(&h.state, HandleState::Moved { op: o } if *o == op) {
                continue; // (never another op's handle, whatever the slot holds now)
            }
            if h.zombie {
                // Released while in flight: now the storage may really lose it.
                if let Some(h) = self.remove_slot(slot) {
                    if let Some(st) = self.storages.get_mut(&h.storage) {
                        st.handles = st.handles.saturating_sub(1);
                    }
                }
                continue;
            }
            h.state = next(id);
            n += 1;
        }
        n
    }

    /// The name of the operation holding a moved handle.
    pub fn holder(&self, handle: u64) -> Option<String> {
        match self.handle(handle).map(|h| &h.state) {
            Some(HandleState::Moved { op }) => Some(self.op_name(*op)),
            _ => None,
        }
    }
}
