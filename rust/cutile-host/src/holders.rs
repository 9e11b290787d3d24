//! Long-lived holders' guards (host rule 5: a CUDA Graph owns the memory its replays read
//! and write for its whole life, whatever handle another writer reaches it through), and
//! the undo of a consume that failing work never used.

use super::*;

impl HostRegistry {
    /// Refuse a write of `storage` (`what()` names it: made only for the error) that a
    /// long-lived holder guards (CT5001): a CUDA Graph whose replays read or write it owns
    /// it for its whole life, so another writer, through whatever handle (a view kept from
    /// the capture, one made before it), would change what the graph reads or overwrite
    /// what it wrote, between replays the program cannot see.
    pub(crate) fn refuse_held_write(
        &self,
        storage: u64,
        what: impl FnOnce() -> String,
    ) -> Result<(), HostError> {
        if self.guarded == 0 {
            return Ok(()); // nothing guarded: none to look up
        }
        let Some(&holder) = self
            .storages
            .get(&storage)
            .and_then(|st| st.holders.first())
        else {
            return Ok(());
        };
        Err(HostError::borrow(
            "CT5001",
            format!(
                "cannot {}: the tensor's memory is held by {}, whose replays read or write \
                 it, until it gives its tensors back (`into_inner()`, or when it is dropped)",
                what(),
                self.shown(holder)
            ),
            Some(
                "write a tensor of your own (copy what you need: `g.read(i)`), or give the \
                 graph's tensors back first"
                    .into(),
            ),
        ))
    }

    /// Long-lived holder `op` (a CUDA Graph, which [`HostRegistry::hold`]s its handles)
    /// guards `storages`, the memory its replays read or write: until it gives its
    /// tensors back, a write of them by anyone else is refused (CT5001), through any
    /// handle. Returns how many storages it guards.
    pub fn guard(&mut self, op: u64, storages: &[u64]) -> usize {
        let mut mine: Vec<u64> = Vec::new();
        for &s in storages {
            if mine.contains(&s) {
                continue;
            }
            let Some(st) = self.storages.get_mut(&s) else {
                continue;
            };
            if st.holders.contains(&op) {
                continue;
            }
            self.guarded += usize::from(st.holders.is_empty());
            st.holders.push(op);
            mine.push(s);
        }
        let n = mine.len();
        self.guards.entry(op).or_default().extend(mine);
        n
    }

    /// End holder `op`'s guards (it gave its tensors back).
    pub(crate) fn end_guards(&mut self, op: u64) {
        if self.guards.is_empty() {
            return;
        }
        let Some(mine) = self.guards.remove(&op) else {
            return;
        };
        for s in mine {
            if let Some(st) = self.storages.get_mut(&s) {
                let had = !st.holders.is_empty();
                st.holders.retain(|&h| h != op);
                if had && st.holders.is_empty() {
                    self.guarded = self.guarded.saturating_sub(1);
                }
            }
        }
    }

    /// Undo a consume on failure: `original` was consumed into a handle that came to
    /// `current` (`partition`, `persistent`, ...) by code that now fails before any work
    /// used it (an autotuned call partitions an output the caller passed whole): `current`
    /// is consumed (`by` names why) and `original` is live again, so the caller's tensor
    /// stays usable. Both must view the same region of the same storage, `current` be live
    /// and `original` consumed (CT5007 otherwise: nothing changes).
    pub fn restore(&mut self, original: u64, current: u64, by: &str) -> Result<(), HostError> {
        self.check_live(current, by)?;
        let refuse = |why: &str| {
            HostError::borrow(
                "CT5007",
                format!("cannot restore handle {original} from handle {current}: {why}"),
                None,
            )
        };
        let (storage, region) = self.region(current).ok_or_else(|| refuse("unknown"))?;
        match self.handle(original) {
            Some(h) if !matches!(h.state, HandleState::Consumed { .. }) => {
                return Err(refuse("it was not consumed"));
            }
            Some(h) if h.storage != storage || *h.region != *region => {
                return Err(refuse("they view different memory"));
            }
            Some(_) => {}
            None => return Err(refuse("it was released")),
        }
        for (id, state) in [
            (current, HandleState::Consumed { by: by.into() }),
            (original, HandleState::Live),
        ] {
            if let Some(i) = self.find(HandleAt::id(id)) {
                if let Some(h) = self.slots[i as usize].handle.as_mut() {
                    h.state = state;
                }
            }
        }
        Ok(())
    }
}
