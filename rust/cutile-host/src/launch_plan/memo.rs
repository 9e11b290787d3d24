//! A kernel's memo of launch decisions. Binding, the grid and the launch predicates read
//! only each argument's launch facts ([`TensorDesc::same_launch_facts`]) and scalar values,
//! and the device the launch runs on (its multiprocessor count sizes a persistent grid; a
//! compiled kernel belongs to one device), so a call on the same device whose arguments
//! agree with an earlier accepted call's on those gets the same decisions and reuses them:
//! a loop launching a kernel on tensors of one layout binds once. The caller finds the
//! device first (a call with tensors of two devices has none, and is never looked up).
//! What depends on which memory an argument is (the moves into the op, the ledger ranges,
//! the packed pointers) is still made per call. Only accepted calls are remembered: a
//! refused one is decided (and its error made) again.

use super::{Arg, Layout, Value};
use std::sync::Arc;

/// One argument of a remembered call: of a tensor, its launch facts (what
/// [`super::TensorDesc::same_launch_facts`] compares), not the tensor, which may die.
#[derive(Debug)]
enum Remembered {
    Handle {
        device: u32,
        align16: bool,
        layout: Arc<Layout>,
    },
    Value(Value),
}

impl Remembered {
    fn matches(&self, a: &Arg<'_>) -> bool {
        match (self, a) {
            (
                Remembered::Handle {
                    device,
                    align16,
                    layout,
                },
                Arg::Handle(e),
            ) => e.has_launch_facts(*device, *align16, layout),
            // Bit-exact: -0.0 and 0.0 (or two NaNs) are different calls.
            (Remembered::Value(Value::Float(x)), Arg::Float(y)) => x.to_bits() == y.to_bits(),
            (Remembered::Value(Value::Int(x)), Arg::Int(y)) => x == y,
            (Remembered::Value(Value::Bool(x)), Arg::Bool(y)) => x == y,
            _ => false,
        }
    }
}

#[derive(Debug)]
struct Entry<T> {
    device: u32,
    args: Box<[Remembered]>,
    decided: Arc<T>,
}

/// The last few distinct accepted calls of a kernel and what was decided for each (`T`).
#[derive(Debug)]
pub struct LaunchMemo<T> {
    entries: Vec<Entry<T>>,
    /// The entry the next new call replaces once the memo is full.
    next: usize,
}

impl<T> Default for LaunchMemo<T> {
    fn default() -> Self {
        LaunchMemo {
            entries: Vec::new(),
            next: 0,
        }
    }
}

impl<T> LaunchMemo<T> {
    /// Calls remembered: a kernel launched on a few layouts in turn keeps hitting.
    pub const CAPACITY: usize = 4;

    /// What was decided for a call on `device` with these arguments (in parameter order),
    /// if one was.
    pub fn get(&self, device: u32, args: &[Arg<'_>]) -> Option<&Arc<T>> {
        self.entries
            .iter()
            .find(|e| {
                e.device == device
                    && e.args.len() == args.len()
                    && e.args.iter().zip(args).all(|(r, a)| r.matches(a))
            })
            .map(|e| &e.decided)
    }

    /// Remember an accepted call on `device`: `args` in parameter order. A call with an
    /// argument the launcher cannot read (`Arg::Other`) is not remembered.
    pub fn insert(&mut self, device: u32, args: &[Arg<'_>], decided: Arc<T>) {
        let mut kept = Vec::with_capacity(args.len());
        for a in args {
            kept.push(match a {
                Arg::Handle(d) => Remembered::Handle {
                    device: d.device,
                    align16: d.align16,
                    layout: d.layout.clone(),
                },
                Arg::Int(v) => Remembered::Value(Value::Int(*v)),
                Arg::Float(v) => Remembered::Value(Value::Float(*v)),
                Arg::Bool(v) => Remembered::Value(Value::Bool(*v)),
                Arg::Other => return,
            });
        }
        let entry = Entry {
            device,
            args: kept.into_boxed_slice(),
            decided,
        };
        if self.entries.len() < Self::CAPACITY {
            self.entries.push(entry);
        } else {
            self.entries[self.next] = entry;
            self.next = (self.next + 1) % Self::CAPACITY;
        }
    }

    /// Calls remembered now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
