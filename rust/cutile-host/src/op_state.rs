//! The life of one launch op, as a state machine the bindings drive: created holding its
//! moved-in arguments; started once (never after giving them back); in the ledger from a
//! successful start; launched at a position of a stream; released exactly once (ledger
//! ranges, then the moves), whether it finished, failed or was dropped. Once launched, its
//! ledger ranges belong to the stream's clock ([`crate::InFlight::complete`] drops them
//! when the work is known done), so the op can hand its arguments back before the device
//! finishes (`then`, graph capture, a drop): what touches them next is ordered by the
//! ledger.
//!
//! An op is a value the program must run (like a Rust `#[must_use]` future): dropped before
//! anything ran it, its arguments are abandoned, not handed back, since an output that was
//! never written must not read as if it had been ([`OpState::on_drop`]).
//!
//! Atomics, not a lock: the Python object is shared (frozen) and `release` runs from
//! `Drop` too; every transition is one swap, so each side effect happens at most once.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Why an op may not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartRefusal {
    AlreadyStarted,
    GaveBack,
}

impl StartRefusal {
    pub fn message(self) -> &'static str {
        match self {
            StartRefusal::AlreadyStarted => "this launch already started",
            StartRefusal::GaveBack => "this launch gave its arguments back",
        }
    }
}

/// What dropping an op must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropAction {
    /// Nothing is held any more.
    Nothing,
    /// It was run (or started): wait for the device if it launched, then give back.
    GiveBack,
    /// Nothing ever ran it: abandon its arguments, and warn unless a composite op that
    /// adopted it (`zip`, `then`) warns for it.
    Abandon { warn: bool },
}

/// What a release must undo (each at most once over the op's life).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Release {
    /// Release the op's ledger ranges.
    pub ledger: bool,
    /// Give the moved-in arguments back to the registry.
    pub moves: bool,
}

#[derive(Debug)]
pub struct OpState {
    holding: AtomicBool,
    in_ledger: AtomicBool,
    started: AtomicBool,
    /// The op's position on its stream (0: not launched).
    launched: AtomicU64,
    /// The stream slot it launched on.
    slot: AtomicU32,
    /// `DeviceOp`'s "runs once" flag.
    ran: AtomicBool,
    /// A composite op (`zip`, `then`) owns this one and answers for it when dropped.
    adopted: AtomicBool,
}

impl Default for OpState {
    fn default() -> Self {
        OpState::new()
    }
}

impl OpState {
    /// A prepared op: its arguments are moved in.
    pub fn new() -> Self {
        OpState {
            holding: AtomicBool::new(true),
            in_ledger: AtomicBool::new(false),
            started: AtomicBool::new(false),
            launched: AtomicU64::new(0),
            slot: AtomicU32::new(0),
            ran: AtomicBool::new(false),
            adopted: AtomicBool::new(false),
        }
    }

    /// Start once, and only while holding the arguments.
    pub fn begin_start(&self) -> Result<(), StartRefusal> {
        if self.started.swap(true, Ordering::AcqRel) {
            return Err(StartRefusal::AlreadyStarted);
        }
        if !self.holding.load(Ordering::Acquire) {
            return Err(StartRefusal::GaveBack);
        }
        Ok(())
    }

    pub fn started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    pub fn holding(&self) -> bool {
        self.holding.load(Ordering::Acquire)
    }

    /// The ledger accepted the op's ranges.
    pub fn entered_ledger(&self) {
        self.in_ledger.store(true, Ordering::Release);
    }

    /// The driver accepted the launch as position `seq` of stream `slot`: from now on the
    /// stream's clock owns the ledger ranges.
    pub fn launched_as(&self, slot: u32, seq: u64) {
        self.slot.store(slot, Ordering::Release);
        self.launched.store(seq, Ordering::Release);
        self.in_ledger.store(false, Ordering::Release);
    }

    /// The position to wait for (0: nothing was launched).
    pub fn launched(&self) -> u64 {
        self.launched.load(Ordering::Acquire)
    }

    /// The stream slot it launched on (meaningful once `launched() != 0`).
    pub fn slot(&self) -> u32 {
        self.slot.load(Ordering::Acquire)
    }

    /// Mark the op as run; true when it had run already.
    pub fn claim(&self) -> bool {
        self.ran.swap(true, Ordering::AcqRel)
    }

    pub fn ran(&self) -> bool {
        self.ran.load(Ordering::Acquire)
    }

    pub fn set_ran(&self, value: bool) {
        self.ran.store(value, Ordering::Release);
    }

    /// What is left to undo; afterwards nothing is (idempotent).
    pub fn take_release(&self) -> Release {
        Release {
            ledger: self.in_ledger.swap(false, Ordering::AcqRel),
            moves: self.holding.swap(false, Ordering::AcqRel),
        }
    }

    /// A composite op took this one over: a drop without running stays silent.
    pub fn adopt(&self) {
        self.adopted.store(true, Ordering::Release);
    }

    /// What a drop must do now. Run means claimed (`sync`, `await`, a composite that ran)
    /// or started; an explicit hand-back leaves nothing to do.
    pub fn on_drop(&self) -> DropAction {
        if !self.needs_release() {
            DropAction::Nothing
        } else if self.ran() || self.started() {
            DropAction::GiveBack
        } else {
            DropAction::Abandon {
                warn: !self.adopted.load(Ordering::Acquire),
            }
        }
    }

    /// Whether a drop must still wait and release.
    pub fn needs_release(&self) -> bool {
        self.holding.load(Ordering::Acquire) || self.in_ledger.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_op_starts_once_and_releases_once() {
        let s = OpState::new();
        assert!(s.holding() && !s.started() && s.needs_release());
        assert_eq!(s.begin_start(), Ok(()));
        assert_eq!(s.begin_start(), Err(StartRefusal::AlreadyStarted));
        s.entered_ledger();
        s.launched_as(2, 7);
        assert_eq!((s.slot(), s.launched()), (2, 7));
        // launched: the stream's clock releases the ranges, the op only its moves
        assert_eq!(
            s.take_release(),
            Release {
                ledger: false,
                moves: true
            }
        );
        assert_eq!(s.take_release(), Release::default());
        assert!(!s.needs_release() && !s.holding());
    }

    #[test]
    fn a_start_that_failed_after_the_ledger_releases_it() {
        let s = OpState::new();
        s.begin_start().unwrap();
        s.entered_ledger();
        assert_eq!(
            s.take_release(),
            Release {
                ledger: true,
                moves: true
            }
        );
    }

    #[test]
    fn an_op_that_gave_back_does_not_start() {
        let s = OpState::new();
        assert_eq!(
            s.take_release(),
            Release {
                ledger: false,
                moves: true
            }
        );
        assert_eq!(s.begin_start(), Err(StartRefusal::GaveBack));
        assert!(!s.needs_release());
    }

    #[test]
    fn a_failed_start_releases_only_the_moves() {
        // the ledger refused the op: nothing to release there
        let s = OpState::new();
        s.begin_start().unwrap();
        assert_eq!(
            s.take_release(),
            Release {
                ledger: false,
                moves: true
            }
        );
    }

    #[test]
    fn a_dropped_op_that_never_ran_is_abandoned() {
        let s = OpState::new();
        assert_eq!(s.on_drop(), DropAction::Abandon { warn: true });
        s.adopt();
        assert_eq!(s.on_drop(), DropAction::Abandon { warn: false });
    }

    #[test]
    fn a_dropped_op_that_ran_or_gave_back_is_not_abandoned() {
        let claimed = OpState::new();
        claimed.claim();
        assert_eq!(claimed.on_drop(), DropAction::GiveBack);
        // `_run` starts without the runs-once flag
        let started = OpState::new();
        started.begin_start().unwrap();
        assert_eq!(started.on_drop(), DropAction::GiveBack);
        // `_give_back`, or a failed start, released everything
        let released = OpState::new();
        released.take_release();
        assert_eq!(released.on_drop(), DropAction::Nothing);
        claimed.take_release();
        assert_eq!(claimed.on_drop(), DropAction::Nothing);
    }

    #[test]
    fn runs_once() {
        let s = OpState::new();
        assert!(!s.claim());
        assert!(s.claim() && s.ran());
        s.set_ran(false);
        assert!(!s.ran());
    }
}
