//! The schedule of a mapped partition (`for idx in z.iter_indices()`, persistent kernels).
//!
//! Block `b` of `num_blocks` visits the flat tile ids `b, b + num_blocks, ...` below the
//! tile count (a grid-stride loop: the residue classes mod `num_blocks` partition the
//! ids, so every id goes to exactly one block). Each flat id becomes a tile coordinate:
//! rank 1 directly; rank 2 through the grouped swizzle of `swizzle.rs` (a bijection);
//! rank 3 with the leading axis linear and the trailing two axes swizzled. So every tile
//! is minted exactly once across all blocks: the stores through minted indices are
//! disjoint by construction. The tests enumerate the schedule on many grids.

use crate::swizzle::grouped;
use cutile_facts::{ScheduleFact, ScheduleMap};

/// The grid axis a persistent schedule starts and strides on (the launch grid of a
/// persistent kernel is `(num_blocks, 1, 1)`).
pub const AXIS: u8 = 0;
/// The largest group size: the lowering emits the group as an `i32` constant.
pub const GROUP_MAX: i64 = (1 << 31) - 1;

/// The schedule this module proves, for a loop over `param`'s partition of `rank`: the
/// fact the lowering emits the loop from (`None` for a rank the schedule does not have).
pub fn fact(param: &str, rank: usize) -> Option<ScheduleFact> {
    Some(ScheduleFact {
        param: param.to_string(),
        rank: rank as u8,
        axis: AXIS,
        map: ScheduleMap::of_rank(rank)?,
        group_max: GROUP_MAX,
    })
}

/// Tile coordinate of flat tile id `flat` over `grid` (rank 1 to 3, every extent >= 1)
/// with group size `group` (>= 1).
pub fn tile_of(flat: u64, grid: &[u64], group: u64) -> Vec<u64> {
    // The group the fact names: at most `GROUP_MAX` (a group of `m` rows or more is the
    // group of `m`, so the cap changes no schedule; the tests check it).
    let group = group.min(GROUP_MAX as u64);
    match (ScheduleMap::of_rank(grid.len()), grid) {
        (Some(ScheduleMap::Linear), [_]) => vec![flat],
        (Some(ScheduleMap::Grouped), [m, n]) => {
            let (i, j) = grouped(flat, *m, *n, group);
            vec![i, j]
        }
        (Some(ScheduleMap::LinearGrouped), [_, m, n]) => {
            let (i, j) = grouped(flat % (m * n), *m, *n, group);
            vec![flat / (m * n), i, j]
        }
        _ => Vec::new(),
    }
}

/// Why a schedule cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleError(pub String);

/// The tiles each block visits, in order.
pub fn schedule(
    grid: &[u64],
    num_blocks: u64,
    group: u64,
) -> Result<Vec<Vec<Vec<u64>>>, ScheduleError> {
    if grid.is_empty() || grid.len() > 3 {
        return Err(ScheduleError(format!(
            "a mapped partition has rank 1 to 3, not {}",
            grid.len()
        )));
    }
    if grid.contains(&0) {
        return Err(ScheduleError(
            "every tile grid extent must be at least 1".into(),
        ));
    }
    if num_blocks == 0 || group == 0 {
        return Err(ScheduleError(
            "`num_blocks` and `group` must be at least 1".into(),
        ));
    }
    let total: u64 = grid.iter().product();
    if num_blocks > total {
        return Err(ScheduleError(format!(
            "{num_blocks} blocks for {total} tiles: a mapped launch uses at most one block per tile"
        )));
    }
    Ok((0..num_blocks)
        .map(|b| {
            (b..total)
                .step_by(num_blocks as usize)
                .map(|f| tile_of(f, grid, group))
                .collect()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn check(grid: &[u64], nb: u64, group: u64) {
        let s = schedule(grid, nb, group).unwrap();
        let total: u64 = grid.iter().product();
        let mut seen = HashSet::new();
        for tiles in &s {
            for t in tiles {
                assert!(t.iter().zip(grid).all(|(i, g)| i < g), "{grid:?} {t:?}");
                assert!(
                    seen.insert(t.clone()),
                    "tile {t:?} twice for grid {grid:?} nb={nb} g={group}"
                );
            }
        }
        assert_eq!(seen.len() as u64, total);
    }

    #[test]
    fn schedule_visits_every_tile_exactly_once() {
        for m in 1..=9 {
            check(&[m], 1, 1);
            check(&[m], m, 1);
            for n in 1..=9 {
                for g in [1, 2, 3, 8] {
                    for nb in [1, 2, 3, 5, m * n] {
                        if nb <= m * n {
                            check(&[m, n], nb, g);
                        }
                    }
                    for l in [1, 2, 3] {
                        check(&[l, m, n], (l * m * n).min(7), g);
                    }
                }
            }
        }
    }

    #[test]
    fn the_fact_names_the_schedule_of_each_rank() {
        let maps: Vec<Option<ScheduleMap>> = (1..=4).map(|r| fact("z", r).map(|f| f.map)).collect();
        assert_eq!(
            maps,
            [
                Some(ScheduleMap::Linear),
                Some(ScheduleMap::Grouped),
                Some(ScheduleMap::LinearGrouped),
                None
            ]
        );
        let f = fact("z", 2).unwrap();
        assert_eq!(
            (f.axis, f.group_max, f.param.as_str()),
            (AXIS, GROUP_MAX, "z")
        );
    }

    #[test]
    fn a_group_past_the_cap_or_the_rows_is_the_group_of_the_rows() {
        for (m, n) in [(5, 3), (4, 4), (7, 2)] {
            let rows = schedule(&[m, n], 3, m).unwrap();
            for g in [m + 1, GROUP_MAX as u64, u64::MAX / 2] {
                assert_eq!(schedule(&[m, n], 3, g).unwrap(), rows, "{m}x{n} g={g}");
            }
        }
    }

    #[test]
    fn refuses_bad_schedules() {
        assert!(schedule(&[4, 4], 17, 1).is_err());
        assert!(schedule(&[4, 0], 1, 1).is_err());
        assert!(schedule(&[1, 2, 3, 4], 1, 1).is_err());
        assert!(schedule(&[4], 1, 0).is_err());
    }
}
