//! `Runtime`'s device-side copies and fills (each one piece of work ordered through the
//! ledger like a launch), and the first step of work another library enqueues.

use super::*;

fn range(storage: u64, lo: u64, nbytes: u64, exclusive: bool) -> Access {
    Access {
        storage,
        lo,
        hi: lo + nbytes,
        exclusive,
    }
}

impl Runtime {
    /// Fill `nbytes` at `(storage, address, lo)` with copies of `pattern` on `slot`.
    pub(super) fn fill_on(
        &self,
        slot: u32,
        at: (u64, u64, u64),
        nbytes: u64,
        pattern: &[u8],
    ) -> Result<(), Failure> {
        let (storage, address, lo) = at;
        let access = [range(storage, lo, nbytes, true)];
        self.enqueue_work(next_op_id(), slot, &access, |d, stream| match d {
            Some(d) => match d.fill(address + lo, nbytes as usize, pattern, stream) {
                0 => Ok(()),
                code => Err((code, "cuMemsetAsync")),
            },
            None => Ok(()),
        })
        .map(|_| ())
    }

    /// Copy `nbytes` from host address `src` to `(storage, address, lo)` on `slot`.
    pub(super) fn htod_on(
        &self,
        slot: u32,
        at: (u64, u64, u64),
        src: usize,
        nbytes: u64,
    ) -> Result<(), Failure> {
        let (storage, address, lo) = at;
        let access = [range(storage, lo, nbytes, true)];
        self.enqueue_work(next_op_id(), slot, &access, |d, stream| match d {
            Some(d) => match d.htod(address + lo, src, nbytes as usize, stream) {
                0 => Ok(()),
                code => Err((code, "cuMemcpyHtoDAsync")),
            },
            None => Ok(()),
        })
        .map(|_| ())
    }

    /// Copy `nbytes` between allocations, `(storage, address, lo)` each, on `slot`: on one
    /// device (`devices` `None`), or from device `devices.1` to device `devices.0`.
    pub(super) fn dtod_on(
        &self,
        slot: u32,
        dst: (u64, u64, u64),
        src: (u64, u64, u64),
        nbytes: u64,
        devices: Option<(u32, u32)>,
    ) -> Result<u64, Failure> {
        let access = [
            range(dst.0, dst.2, nbytes, true),
            range(src.0, src.2, nbytes, false),
        ];
        let contexts = match devices {
            Some((to, from)) => Some((self.context_of(to)?, self.context_of(from)?)),
            None => None,
        };
        self.enqueue_work(next_op_id(), slot, &access, |d, stream| {
            let Some(d) = d else { return Ok(()) };
            let (to, from) = (dst.1 + dst.2, src.1 + src.2);
            match contexts {
                None => match d.dtod(to, from, nbytes as usize, stream) {
                    0 => Ok(()),
                    code => Err((code, "cuMemcpyDtoDAsync")),
                },
                Some((tc, fc)) => {
                    match d.peer_copy((to, tc), (from, fc), nbytes as usize, stream) {
                        0 => Ok(()),
                        code => Err((code, "cuMemcpyPeerAsync")),
                    }
                }
            }
        })
        .map(|(seq, _)| seq)
    }

    /// [`InFlight::begin_external`] on `slot`, ordered after the work it conflicts with.
    pub(super) fn begin_external_on(
        &self,
        token: u64,
        slot: u32,
        accesses: &[Access],
        label: Option<&str>,
    ) -> Result<(), Failure> {
        let mut guard = self.lock_live(slot)?;
        let st = &mut *guard;
        let waits = st
            .flight
            .begin_external(token, slot, accesses, label)
            .map_err(Failure::Host)?;
        let ordered = self.bind(st, slot).and_then(|previous| {
            let r = self.order(st, slot, &waits);
            self.restore(previous);
            r
        });
        if ordered.is_err() {
            st.flight.abort_external(token);
        }
        ordered
    }
}
