//! The in-flight ledger (host rule 4): byte ranges each pending operation reads or writes,
//! keyed by its completion token. A new access that conflicts with a pending one (same
//! storage, overlapping bytes, either side exclusive, another token) must wait for that
//! token; `acquire` refuses it, `conflicts` says what to wait for.

use crate::HostError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub storage: u64,
    /// Byte range `[lo, hi)`.
    pub lo: u64,
    pub hi: u64,
    pub exclusive: bool,
}

#[derive(Debug, Clone)]
struct Entry {
    token: u64,
    access: Access,
}

#[derive(Debug, Default)]
pub struct Ledger {
    entries: Vec<Entry>,
}

fn clash(a: &Access, b: &Access) -> bool {
    a.storage == b.storage
        && a.lo < b.hi
        && b.lo < a.hi
        && a.hi > a.lo
        && b.hi > b.lo
        && (a.exclusive || b.exclusive)
}

impl Ledger {
    pub fn new() -> Self {
        Ledger::default()
    }

    /// Tokens of pending operations that conflict with `access` (sorted, unique).
    pub fn conflicts(&self, access: &Access, except: Option<u64>) -> Vec<u64> {
        let mut out: Vec<u64> = self
            .entries
            .iter()
            .filter(|e| Some(e.token) != except && clash(&e.access, access))
            .map(|e| e.token)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The lowest token of another pending operation that conflicts with `access`.
    fn first_conflict(&self, access: &Access, except: u64) -> Option<u64> {
        self.entries
            .iter()
            .filter(|e| e.token != except && clash(&e.access, access))
            .map(|e| e.token)
            .min()
    }

    /// Record every access of `token`, all or nothing.
    pub fn acquire(&mut self, token: u64, accesses: &[Access]) -> Result<(), HostError> {
        for a in accesses {
            if let Some(first) = self.first_conflict(a, token) {
                return Err(HostError::borrow(
                    "CT5008",
                    format!(
                        "bytes {}..{} of storage {} are {} by pending operation {first}",
                        a.lo,
                        a.hi,
                        a.storage,
                        if a.exclusive {
                            "in use"
                        } else {
                            "being written"
                        }
                    ),
                    Some(
                        "wait for that operation (`.sync()` or `await`) before this access".into(),
                    ),
                ));
            }
        }
        self.entries.extend(accesses.iter().map(|a| Entry {
            token,
            access: a.clone(),
        }));
        Ok(())
    }

    /// The operation `token` completed: drop its accesses; returns how many.
    pub fn release(&mut self, token: u64) -> usize {
        let before = self.entries.len();
        self.entries.retain(|e| e.token != token);
        before - self.entries.len()
    }

    /// Number of recorded accesses.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(storage: u64, lo: u64, hi: u64, exclusive: bool) -> Access {
        Access {
            storage,
            lo,
            hi,
            exclusive,
        }
    }

    #[test]
    fn shared_reads_coexist_writes_conflict() {
        let mut l = Ledger::new();
        l.acquire(1, &[acc(7, 0, 100, false)]).unwrap();
        l.acquire(2, &[acc(7, 50, 150, false)]).unwrap();
        let e = l.acquire(3, &[acc(7, 90, 95, true)]).unwrap_err();
        assert_eq!(e.code, "CT5008");
        assert_eq!(l.conflicts(&acc(7, 90, 95, true), None), vec![1, 2]);
        assert!(l.conflicts(&acc(8, 90, 95, true), None).is_empty());
        assert!(l.conflicts(&acc(7, 100, 150, true), None) == vec![2]);
        assert_eq!(l.release(2), 1);
        l.acquire(3, &[acc(7, 100, 150, true)]).unwrap();
    }

    #[test]
    fn acquire_is_all_or_nothing() {
        let mut l = Ledger::new();
        l.acquire(1, &[acc(1, 0, 10, true)]).unwrap();
        assert!(l
            .acquire(2, &[acc(2, 0, 10, true), acc(1, 5, 6, false)])
            .is_err());
        assert_eq!(l.len(), 1);
        assert!(l.conflicts(&acc(2, 0, 10, true), None).is_empty());
    }
}
