//! Host rule 6, decided from the kernel's facts: the grid is the partitions' common tile
//! grid, or, for a persistent kernel (its facts say which outputs are walked with
//! `iter_indices()`), `num_blocks` blocks that share those outputs' tiles by the checked
//! schedule. A launch where an output has no tile at all runs no block (grid `[0, 0, 0]`),
//! except a persistent output's: the other outputs' tiles still run (persistent outputs
//! may differ in tile count, so an empty one must not empty the launch).

use super::{Arg, Dim, LaunchPlan, ParamKind, Refusal, Value};
use crate::{validate_launch, HostError, PartitionArg};

/// CUDA's grid limits: x up to 2^31 - 1, y and z up to 65,535.
pub const MAX_GRID: [u64; 3] = [(1 << 31) - 1, 65_535, 65_535];

impl LaunchPlan {
    /// The declared tile shape of partition parameter `p` with these `Const` values (`-1`
    /// where the declaration names no int: such a partition never matches).
    fn declared(&self, dims: &[Dim], consts: &[Value]) -> Vec<i64> {
        dims.iter()
            .map(|d| match *d {
                Dim::Fixed(n) => n,
                Dim::Const(c) => match consts.get(c) {
                    Some(Value::Int(v)) => *v,
                    _ => -1,
                },
                Dim::Any | Dim::Unknown => -1,
            })
            .collect()
    }

    pub fn grid(
        &self,
        kernel: &str,
        args: &[Arg<'_>],
        consts: &[Value],
    ) -> Result<[u64; 3], Refusal> {
        self.grid_with(kernel, args, consts, None)
    }

    /// The grid with `explicit`, the call's `grid=`: the grid of a kernel without `Mut`
    /// outputs (its only outputs `Atomic` tensors or `Ptr`s, which every block shares), or, for a
    /// kernel with outputs, the grid they give (any other is CT6001).
    pub fn grid_with(
        &self,
        kernel: &str,
        args: &[Arg<'_>],
        consts: &[Value],
        explicit: Option<[u64; 3]>,
    ) -> Result<[u64; 3], Refusal> {
        self.grid_on(kernel, args, consts, explicit, self.sm_count)
    }

    /// [`LaunchPlan::grid_with`] on a device with `sm_count` multiprocessors (a persistent
    /// launch without `num_blocks` runs one block per multiprocessor of its device).
    pub fn grid_on(
        &self,
        kernel: &str,
        args: &[Arg<'_>],
        consts: &[Value],
        explicit: Option<[u64; 3]>,
        sm_count: u64,
    ) -> Result<[u64; 3], Refusal> {
        let err = |e: HostError| Refusal::Refused(e);
        let show = |g: [u64; 3]| format!("[{}, {}, {}]", g[0], g[1], g[2]);
        let grid = match (self.inferred(kernel, args, consts, sm_count)?, explicit) {
            (Some(g), None) => g,
            (Some(g), Some(e)) if g == e => g,
            (Some(g), Some(e)) => {
                return Err(err(HostError::launch(
                    "CT6001",
                    format!(
                        "`{kernel}` launched with grid {}, but its `Mut` outputs give {}",
                        show(e),
                        show(g)
                    ),
                    Some("omit `grid=`: a kernel with `Mut` outputs runs their grid".into()),
                )))
            }
            (None, Some(e)) => e,
            (None, None) => {
                return Err(err(HostError::launch(
                    "CT6107",
                    format!("`{kernel}` has no `Mut` output, so no partition determines its grid"),
                    Some(
                        "pass the grid at the call, `grid=(blocks,)`: a kernel whose outputs \
                         are `Atomic` tensors or pointers runs as many blocks as it is given"
                            .into(),
                    ),
                )))
            }
        };
        if grid.contains(&0) {
            return Ok([0, 0, 0]);
        }
        for (k, (g, max)) in grid.iter().zip(MAX_GRID).enumerate() {
            if *g > max {
                return Err(err(HostError::launch(
                    "CT6109",
                    format!(
                        "`{kernel}`: the grid needs {g} blocks on axis {k}; CUDA allows at most {max}"
                    ),
                    Some("use larger tiles, or a persistent kernel (`iter_indices()`)".into()),
                )));
            }
        }
        Ok(grid)
    }

    /// The common launch's grid without allocating: regular (not persistent) partitions
    /// whose tiles are the declared ones and whose tile grids agree. `None`: anything else,
    /// which [`LaunchPlan::inferred`] decides (and words the error of).
    fn plain_grid(&self, args: &[Arg<'_>], consts: &[Value]) -> Option<Option<[u64; 3]>> {
        let mut grid: Option<[u64; 3]> = None;
        for (p, a) in self.params.iter().zip(args) {
            let (ParamKind::Partition, Arg::Handle(d)) = (p.kind, a) else {
                continue;
            };
            let tile = d.view.tile.as_ref()?;
            let shape = &d.view.shape;
            let rank = tile.len();
            if p.persistent || rank == 0 || rank > 3 || shape.len() != rank || p.dims.len() != rank
            {
                return None;
            }
            let mut g = [1u64; 3];
            for k in 0..rank {
                let declared = match p.dims[k] {
                    Dim::Fixed(n) => n,
                    Dim::Const(c) => match consts.get(c) {
                        Some(Value::Int(v)) => *v,
                        _ => return None,
                    },
                    Dim::Any | Dim::Unknown => return None,
                };
                let (t, n) = (tile[k], shape[k]);
                if t != declared || t < 1 || n < 0 {
                    return None;
                }
                g[k] = (n as u64).div_ceil(t as u64);
            }
            match grid {
                None => grid = Some(g),
                Some(g0) if g0 != g => return None,
                Some(_) => {}
            }
        }
        Some(grid)
    }

    /// The grid the `Mut` outputs give (`None`: the kernel has none).
    fn inferred(
        &self,
        kernel: &str,
        args: &[Arg<'_>],
        consts: &[Value],
        sm_count: u64,
    ) -> Result<Option<[u64; 3]>, Refusal> {
        if let Some(grid) = self.plain_grid(args, consts) {
            return Ok(grid);
        }
        let mut regular: Vec<PartitionArg> = Vec::new();
        let mut persistent: Vec<(PartitionArg, Option<u64>)> = Vec::new();
        for (p, a) in self.params.iter().zip(args) {
            let (ParamKind::Partition, Arg::Handle(d)) = (p.kind, a) else {
                continue;
            };
            let tile = d
                .view
                .tile
                .clone()
                .ok_or(Refusal::Slow("not a partition"))?;
            let part = PartitionArg {
                name: p.name.clone(),
                tensor_shape: d.view.shape.clone(),
                tile_shape: tile,
                declared: self.declared(&p.dims, consts),
            };
            if p.persistent {
                persistent.push((part, d.view.num_blocks));
            } else {
                regular.push(part);
            }
        }
        let err = |e: HostError| Refusal::Refused(e);
        if regular.is_empty() && persistent.is_empty() {
            return Ok(None);
        }
        let grid = if persistent.is_empty() {
            validate_launch(kernel, [0, 0, 0], &regular).map_err(err)?
        } else {
            let mut asked: Option<u64> = None;
            // the fewest tiles of an output that has any: an output without tiles gives
            // its blocks nothing to do, but must not stop the others' (their tiles would
            // go unwritten)
            let mut fewest = u64::MAX;
            let mut any_tiles = false;
            for (part, nb) in &persistent {
                let g =
                    validate_launch(kernel, [0, 0, 0], std::slice::from_ref(part)).map_err(err)?;
                if let Some(nb) = nb {
                    if asked.is_some_and(|a| a != *nb) {
                        return Err(err(HostError::launch(
                            "CT6108",
                            format!(
                                "`{kernel}`: persistent partitions ask for different block \
                                 counts ({} and {nb})",
                                asked.unwrap_or_default()
                            ),
                            Some("give every persistent partition the same `num_blocks`".into()),
                        )));
                    }
                    asked = Some(*nb);
                }
                let tiles = g.iter().try_fold(1u64, |acc, x| acc.checked_mul(*x));
                if tiles != Some(0) {
                    fewest = fewest.min(tiles.unwrap_or(u64::MAX));
                    any_tiles = true;
                }
            }
            if !any_tiles {
                // no persistent output has a tile: no block runs, so a regular output
                // beside one must have none either (else its tiles go unwritten)
                let empty = regular.is_empty()
                    || validate_launch(kernel, [0, 0, 0], &regular)
                        .map_err(err)?
                        .contains(&0);
                if empty {
                    return Ok(Some([0, 0, 0]));
                }
                fewest = 1;
            }
            let nb = asked.unwrap_or_else(|| fewest.min(sm_count).max(1));
            // The schedule counts flat tile ids in 32 bits: block b visits b, b + nb, ...
            // while below the tile count, so the count plus the stride must fit (no id
            // wraps past the end and revisits a tile another block owns).
            for (part, _) in &persistent {
                let g =
                    validate_launch(kernel, [0, 0, 0], std::slice::from_ref(part)).map_err(err)?;
                let tiles = g.iter().try_fold(1u64, |acc, x| acc.checked_mul(*x));
                if tiles
                    .and_then(|t| t.checked_add(nb))
                    .is_none_or(|t| t > i32::MAX as u64)
                {
                    return Err(err(HostError::launch(
                        "CT6109",
                        format!(
                            "`{kernel}`: the persistent partition `{}` has {} tiles and {nb} \
                             blocks; a persistent schedule counts at most 2^31 - 1 tile ids",
                            part.name,
                            tiles.map_or_else(|| "too many".to_string(), |t| t.to_string())
                        ),
                        Some("use larger tiles".into()),
                    )));
                }
            }
            let grid = [nb, 1, 1];
            if !regular.is_empty() {
                validate_launch(kernel, grid, &regular).map_err(err)?;
            }
            grid
        };
        Ok(Some(grid))
    }
}
