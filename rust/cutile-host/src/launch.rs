//! Host rule 6: the launch grid equals the partition grid, and every partition's tile
//! shape equals the kernel's declared tile shape.

use crate::HostError;

/// One mutable partition argument of a launch.
#[derive(Debug, Clone)]
pub struct PartitionArg {
    pub name: String,
    pub tensor_shape: Vec<i64>,
    pub tile_shape: Vec<i64>,
    pub declared: Vec<i64>,
}

fn shape(s: &[i64]) -> String {
    format!(
        "[{}]",
        s.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The tile grid (x = dim 0) of every partition, checked to agree with each other, with
/// the declared tile shapes, and with `grid` unless `grid` is `(0, 0, 0)` (infer).
pub fn validate_launch(
    kernel: &str,
    grid: [u64; 3],
    parts: &[PartitionArg],
) -> Result<[u64; 3], HostError> {
    let mut inferred: Option<([u64; 3], &str)> = None;
    for p in parts {
        let rank = p.tile_shape.len();
        if rank == 0 || rank > 3 || p.tensor_shape.len() != rank {
            return Err(HostError::launch(
                "CT6004",
                format!(
                    "`{kernel}`: partition `{}` has tensor shape {} and tile shape {}; ranks must match and be 1 to 3",
                    p.name,
                    shape(&p.tensor_shape),
                    shape(&p.tile_shape)
                ),
                None,
            ));
        }
        if p.tile_shape.iter().any(|t| *t < 1) || p.tensor_shape.iter().any(|d| *d < 0) {
            return Err(HostError::launch(
                "CT6004",
                format!(
                    "`{kernel}`: partition `{}` has tile shape {} over tensor shape {}",
                    p.name,
                    shape(&p.tile_shape),
                    shape(&p.tensor_shape)
                ),
                Some("tile extents must be at least 1 and tensor extents non-negative".into()),
            ));
        }
        if p.tile_shape != p.declared {
            return Err(HostError::launch(
                "CT6002",
                format!(
                    "`{kernel}` declares `{}` with tile shape {}, but the partition has tile shape {}",
                    p.name,
                    shape(&p.declared),
                    shape(&p.tile_shape)
                ),
                Some(format!("partition the tensor with `.partition({})`", shape(&p.declared))),
            ));
        }
        let mut g = [1u64; 3];
        for (gk, (d, t)) in g.iter_mut().zip(p.tensor_shape.iter().zip(&p.tile_shape)) {
            *gk = (*d as u64).div_ceil(*t as u64);
        }
        match inferred {
            None => inferred = Some((g, &p.name)),
            Some((g0, first)) if g0 != g => {
                return Err(HostError::launch(
                    "CT6003",
                    format!(
                        "`{kernel}`: partition `{first}` has tile grid {g0:?} but `{}` has {g:?}",
                        p.name
                    ),
                    Some(
                        "every output partition of one launch must have the same tile grid".into(),
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    match inferred {
        Some((g, _)) if grid == [0, 0, 0] || grid == g => Ok(g),
        Some((g, first)) => Err(HostError::launch(
            "CT6001",
            format!("`{kernel}` launched with grid {grid:?}, but partition `{first}` has tile grid {g:?}"),
            Some("omit the grid to infer it from the partitions".into()),
        )),
        None if grid.iter().all(|x| *x >= 1) => Ok(grid),
        None => Err(HostError::launch(
            "CT6001",
            format!("`{kernel}` has no partition to infer a grid from, and the grid {grid:?} is empty"),
            Some("pass a grid with every extent at least 1".into()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, t: &[i64], tile: &[i64], decl: &[i64]) -> PartitionArg {
        PartitionArg {
            name: name.into(),
            tensor_shape: t.to_vec(),
            tile_shape: tile.to_vec(),
            declared: decl.to_vec(),
        }
    }

    #[test]
    fn infers_and_checks_the_grid() {
        assert_eq!(
            validate_launch("add", [0, 0, 0], &[p("z", &[1024], &[128], &[128])]).unwrap(),
            [8, 1, 1]
        );
        assert_eq!(
            validate_launch("add", [0, 0, 0], &[p("z", &[1000], &[128], &[128])]).unwrap(),
            [8, 1, 1]
        );
        assert_eq!(
            validate_launch(
                "mm",
                [4, 2, 1],
                &[p("z", &[512, 256], &[128, 128], &[128, 128])]
            )
            .unwrap(),
            [4, 2, 1]
        );
        let e = validate_launch("add", [4, 1, 1], &[p("z", &[1024], &[128], &[128])]).unwrap_err();
        assert_eq!(e.code, "CT6001");
        let e = validate_launch("add", [0, 0, 0], &[p("z", &[1024], &[64], &[128])]).unwrap_err();
        assert_eq!(e.code, "CT6002");
        let e = validate_launch(
            "k",
            [0, 0, 0],
            &[
                p("z", &[1024], &[128], &[128]),
                p("w", &[512], &[128], &[128]),
            ],
        )
        .unwrap_err();
        assert_eq!(e.code, "CT6003");
        let e = validate_launch(
            "k",
            [0, 0, 0],
            &[p("z", &[1, 2, 3, 4], &[1, 1, 1, 1], &[1, 1, 1, 1])],
        )
        .unwrap_err();
        assert_eq!(e.code, "CT6004");
        assert_eq!(validate_launch("k", [3, 1, 1], &[]).unwrap(), [3, 1, 1]);
        assert_eq!(
            validate_launch("k", [0, 0, 0], &[]).unwrap_err().code,
            "CT6001"
        );
    }
}
