//! `GraphAccesses`: what a captured graph touches (every range of every launch in the
//! capture, merged by the ledger at `end_capture`), kept as native ranges. A replay
//! is ordered and recorded by exactly these ranges, as any work is; holding them natively
//! spares each replay converting a few hundred Python tuples (a decode step's graph has
//! one range per weight, cache and buffer: ~460 for Qwen3-4B).

use cutile_host::Access;
use pyo3::prelude::*;

#[pyclass(module = "cutile._native", frozen)]
pub struct GraphAccesses {
    pub(crate) ranges: Box<[Access]>,
}

#[pymethods]
impl GraphAccesses {
    fn __len__(&self) -> usize {
        self.ranges.len()
    }

    /// The ranges as `(storage, lo, hi, exclusive)` tuples (for tests and debugging).
    fn tuples(&self) -> Vec<(u64, u64, u64, bool)> {
        self.ranges
            .iter()
            .map(|a| (a.storage, a.lo, a.hi, a.exclusive))
            .collect()
    }

    fn __repr__(&self) -> String {
        let writes = self.ranges.iter().filter(|a| a.exclusive).count();
        format!(
            "<GraphAccesses: {} ranges, {} written>",
            self.ranges.len(),
            writes
        )
    }
}
