//! Byte regions of a storage and the stride-aware overlap test (host rule 2).
//!
//! `may_overlap` is *sound*: it never answers "disjoint" for regions that share a byte.
//! It is *exact* for 1-D arithmetic progressions (views with one non-trivial axis), by
//! solving `a0 + i*da - (b0 + j*db) = t` over the bounded `i`, `j` with the extended gcd,
//! and exact for two views with the same strides whose layout is injective over the
//! combined index box (tiles of one parent: `x[:, :64]` and `x[:, 64:]`). Other N-D pairs
//! are tested through 1-D supersets (every address is `offset mod gcd(strides)`) and
//! their bounding intervals; what survives is reported as overlapping.

/// A strided view: `shape` and `strides` in elements, `offset` and `itemsize` in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    pub offset: i64,
    pub shape: Vec<u64>,
    pub strides: Vec<i64>,
    pub itemsize: u64,
}

impl Region {
    pub fn new(offset: i64, shape: Vec<u64>, strides: Vec<i64>, itemsize: u64) -> Self {
        Region {
            offset,
            shape,
            strides,
            itemsize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.shape.contains(&0) || self.itemsize == 0
    }

    /// `[lo, hi)` bytes spanned by the view (`None` when empty).
    pub fn extent(&self) -> Option<(i128, i128)> {
        if self.is_empty() {
            return None;
        }
        let isz = self.itemsize as i128;
        let mut lo = self.offset as i128;
        let mut hi = self.offset as i128;
        for (n, s) in self.shape.iter().zip(&self.strides) {
            // A view whose extent does not fit in 128 bits spans everything.
            let span = (*n as i128 - 1)
                .checked_mul(*s as i128)
                .and_then(|x| x.checked_mul(isz));
            let Some(span) = span else {
                return Some((i128::MIN / 2, i128::MAX / 2));
            };
            if span < 0 {
                lo = lo.saturating_add(span);
            } else {
                hi = hi.saturating_add(span);
            }
        }
        Some((lo, hi.saturating_add(isz)))
    }

    /// The view as one arithmetic progression of element starts `(first, step, count)` in
    /// bytes, when at most one axis has extent > 1 (or strides make it one).
    fn progression(&self) -> Option<(i128, i128, i128)> {
        let isz = self.itemsize as i128;
        let mut first = self.offset as i128;
        let mut step = 0i128;
        let mut count = 1i128;
        for (n, s) in self.shape.iter().zip(&self.strides) {
            let (n, s) = (*n as i128, *s as i128 * isz);
            if n <= 1 || s == 0 {
                continue;
            }
            if count > 1 {
                // A second non-trivial axis: merge only if it continues the progression.
                if s == step * count {
                    count *= n;
                    continue;
                }
                if step == s * n {
                    step = s;
                    count *= n;
                    continue;
                }
                return None;
            }
            step = s;
            count = n;
        }
        if step < 0 {
            first += step * (count - 1);
            step = -step;
        }
        Some((first, step, count))
    }

    /// A 1-D progression containing every element start: `offset mod gcd(strides)`.
    fn superset(&self) -> Option<(i128, i128, i128)> {
        let (lo, hi) = self.extent()?;
        let isz = self.itemsize as i128;
        let g = self
            .shape
            .iter()
            .zip(&self.strides)
            .filter(|(n, _)| **n > 1)
            .fold(0i128, |g, (_, s)| gcd(g, *s as i128 * isz));
        if g == 0 {
            return Some((lo, 0, 1));
        }
        // Element starts lie in [lo, hi - isz] and are congruent to offset mod g.
        let first = lo + (self.offset as i128 - lo).rem_euclid(g);
        let count = (hi - isz - first) / g + 1;
        Some((first, g, count.max(1)))
    }
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Extended gcd: `(g, x, y)` with `a*x + b*y = g`.
fn egcd(a: i128, b: i128) -> (i128, i128, i128) {
    if b == 0 {
        (a, 1, 0)
    } else {
        let (g, x, y) = egcd(b, a % b);
        (g, y, x - (a / b) * y)
    }
}

fn div_floor(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn div_ceil(a: i128, b: i128) -> i128 {
    -div_floor(-a, b)
}

/// Do the progressions `a0 + i*da` (i < na, element size sa) and `b0 + j*db` (j < nb,
/// element size sb) share a byte? Exact.
fn progressions_overlap(a: (i128, i128, i128), sa: i128, b: (i128, i128, i128), sb: i128) -> bool {
    let (a0, mut da, na) = a;
    let (b0, mut db, nb) = b;
    if na <= 0 || nb <= 0 {
        return false;
    }
    if na == 1 {
        da = 0;
    }
    if nb == 1 {
        db = 0;
    }
    // Need i*da - j*db = t - (a0 - b0) for some t in (-sa, sb) (the byte intervals
    // [x, x+sa) and [y, y+sb) meet iff -sa < x - y < sb).
    for t in (-sa + 1)..sb {
        let rhs = t - (a0 - b0);
        if solvable(da, na, db, nb, rhs) {
            return true;
        }
    }
    false
}

/// Is there `0 <= i < na`, `0 <= j < nb` with `i*da - j*db == rhs`?
fn solvable(da: i128, na: i128, db: i128, nb: i128, rhs: i128) -> bool {
    match (da, db) {
        (0, 0) => rhs == 0,
        (0, _) => rhs % db == 0 && (0..nb).contains(&(-rhs / db)),
        (_, 0) => rhs % da == 0 && (0..na).contains(&(rhs / da)),
        _ => {
            let (g, x, y) = egcd(da, -db);
            if rhs % g != 0 {
                return false;
            }
            let k = rhs / g;
            // Overflow: answer "may overlap" (sound).
            let (Some(i0), Some(j0)) = (x.checked_mul(k), y.checked_mul(k)) else {
                return true;
            };
            // i = i0 + m * (-db/g), j = j0 - m * (da/g)
            let (si, sj) = (-db / g, -(da / g));
            let mut lo = i128::MIN;
            let mut hi = i128::MAX;
            for (v0, s, n) in [(i0, si, na), (j0, sj, nb)] {
                // 0 <= v0 + m*s <= n-1
                if s == 0 {
                    if !(0..n).contains(&v0) {
                        return false;
                    }
                    continue;
                }
                let (l, h) = if s > 0 {
                    (div_ceil(-v0, s), div_floor(n - 1 - v0, s))
                } else {
                    (div_ceil(n - 1 - v0, s), div_floor(-v0, s))
                };
                lo = lo.max(l);
                hi = hi.min(h);
            }
            lo <= hi
        }
    }
}

/// Same strides, same item size, element-aligned offsets, and an injective layout over
/// the combined index box: then the views overlap iff their index boxes intersect.
fn same_layout_overlap(a: &Region, b: &Region) -> Option<bool> {
    if a.strides != b.strides || a.itemsize != b.itemsize || a.shape.len() != b.shape.len() {
        return None;
    }
    let isz = a.itemsize as i128;
    let delta = b.offset as i128 - a.offset as i128;
    if delta % isz != 0 || a.strides.iter().any(|s| *s <= 0) {
        return None;
    }
    let mut rem = delta / isz;
    let mut order: Vec<usize> = (0..a.strides.len()).collect();
    order.sort_by_key(|k| std::cmp::Reverse(a.strides[*k]));
    let mut d = vec![0i128; a.strides.len()];
    for &k in &order {
        let s = a.strides[k] as i128;
        d[k] = div_floor(rem, s);
        rem -= d[k] * s;
    }
    if rem != 0 {
        return None;
    }
    // Box per axis: [min(0, d), max(na, d + nb)); injective if, by ascending stride, each
    // stride exceeds the span of all smaller-stride axes.
    let mut span: i128 = 0;
    for &k in order.iter().rev() {
        let lo = d[k].min(0);
        let hi = (a.shape[k] as i128).max(d[k] + b.shape[k] as i128);
        let s = a.strides[k] as i128;
        if s <= span {
            return None;
        }
        span += s * (hi - lo - 1);
    }
    Some((0..a.shape.len()).all(|k| {
        let (al, ah) = (0, a.shape[k] as i128);
        let (bl, bh) = (d[k], d[k] + b.shape[k] as i128);
        al < bh && bl < ah
    }))
}

/// May the two views share a byte? Sound; exact in the cases named in the module doc.
pub fn may_overlap(a: &Region, b: &Region) -> bool {
    let (Some((alo, ahi)), Some((blo, bhi))) = (a.extent(), b.extent()) else {
        return false;
    };
    if ahi <= blo || bhi <= alo {
        return false;
    }
    let (sa, sb) = (a.itemsize as i128, b.itemsize as i128);
    if let (Some(pa), Some(pb)) = (a.progression(), b.progression()) {
        return progressions_overlap(pa, sa, pb, sb);
    }
    if let Some(r) = same_layout_overlap(a, b) {
        return r;
    }
    match (a.superset(), b.superset()) {
        (Some(pa), Some(pb)) => progressions_overlap(pa, sa, pb, sb),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn bytes(r: &Region) -> HashSet<i128> {
        let mut out = HashSet::new();
        if r.is_empty() {
            return out;
        }
        let n = r.shape.len();
        let mut idx = vec![0u64; n];
        loop {
            let mut addr = r.offset as i128;
            for (i, s) in idx.iter().zip(&r.strides) {
                addr += *i as i128 * *s as i128 * r.itemsize as i128;
            }
            for b in 0..r.itemsize as i128 {
                out.insert(addr + b);
            }
            let mut k = n;
            loop {
                if k == 0 {
                    return out;
                }
                k -= 1;
                idx[k] += 1;
                if idx[k] < r.shape[k] {
                    break;
                }
                idx[k] = 0;
            }
        }
    }

    fn brute(a: &Region, b: &Region) -> bool {
        let x = bytes(a);
        bytes(b).iter().any(|v| x.contains(v))
    }

    #[test]
    fn interleaved_columns_are_disjoint() {
        // x of shape (4, 8) f32, row-major: x[:, 0::2] and x[:, 1::2].
        let even = Region::new(0, vec![4, 4], vec![8, 2], 4);
        let odd = Region::new(4, vec![4, 4], vec![8, 2], 4);
        assert!(!may_overlap(&even, &odd));
        assert!(may_overlap(&even, &even));
    }

    #[test]
    fn side_by_side_tiles_are_disjoint() {
        // x of shape (128, 128) f16: x[:, :64] and x[:, 64:].
        let left = Region::new(0, vec![128, 64], vec![128, 1], 2);
        let right = Region::new(128, vec![128, 64], vec![128, 1], 2);
        assert!(!may_overlap(&left, &right));
        let shifted = Region::new(126, vec![128, 64], vec![128, 1], 2);
        assert!(may_overlap(&left, &shifted));
    }

    #[test]
    fn one_d_progressions_are_exact() {
        let a = Region::new(0, vec![10], vec![3], 1);
        let b = Region::new(1, vec![10], vec![3], 1);
        assert!(!may_overlap(&a, &b));
        let c = Region::new(1, vec![10], vec![2], 1);
        assert!(may_overlap(&a, &c)); // 3 is in both
        let rev = Region::new(27, vec![10], vec![-3], 1);
        assert!(may_overlap(&a, &rev));
    }

    fn region() -> impl Strategy<Value = Region> {
        (1usize..=3)
            .prop_flat_map(|n| {
                (
                    0i64..24,
                    proptest::collection::vec(0u64..4, n),
                    proptest::collection::vec(-6i64..=6, n),
                    prop_oneof![Just(1u64), Just(2), Just(4)],
                )
            })
            .prop_map(|(o, s, st, isz)| Region::new(o + 64, s, st, isz))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn never_says_disjoint_when_overlapping(a in region(), b in region()) {
            if brute(&a, &b) {
                prop_assert!(may_overlap(&a, &b), "{a:?} {b:?}");
            }
        }

        #[test]
        fn exact_for_one_d(o1 in 0i64..40, n1 in 0u64..12, s1 in -7i64..=7, o2 in 0i64..40, n2 in 0u64..12, s2 in -7i64..=7, isz in 1u64..=4) {
            let a = Region::new(o1 + 100, vec![n1], vec![s1], isz);
            let b = Region::new(o2 + 100, vec![n2], vec![s2], isz);
            prop_assert_eq!(may_overlap(&a, &b), brute(&a, &b), "{:?} {:?}", a, b);
        }
    }
}
