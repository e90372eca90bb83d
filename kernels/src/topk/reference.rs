//! The independent references of the kernels, for certification: sorts and direct counts
//! on the host.

use super::TOPK_PAD_INDEX;
use forge_core::Result;

/// The order key of a value: larger keys sort first. NaNs are all equal and above `+inf`;
/// `-0.0` sits just below `+0.0`.
fn order_key(v: f32) -> (u8, f64, bool) {
    if v.is_nan() {
        (1, 0.0, false)
    } else {
        (0, v as f64, !v.is_sign_negative())
    }
}

/// The output order of (value, tie-break position) pairs: `Less` comes first.
fn output_order(a: (f32, u32), b: (f32, u32)) -> std::cmp::Ordering {
    let (ka, kb) = (order_key(a.0), order_key(b.0));
    kb.0.cmp(&ka.0)
        .then(kb.1.partial_cmp(&ka.1).unwrap_or(std::cmp::Ordering::Equal))
        .then(kb.2.cmp(&ka.2))
        .then(a.1.cmp(&b.1))
}

/// The independent reference: each block's real elements sorted by a comparator on `f64`
/// values and indices, the first `k` kept, then padding.
#[allow(clippy::too_many_arguments)]
pub fn topk_select_reference(
    vals: &[f32],
    ids: &[u32],
    n: u32,
    b: u32,
    k: u32,
    _p: u32,
    chained: u32,
    local: u32,
) -> Result<(Vec<f32>, Vec<u32>)> {
    let (n, b, k) = (n as usize, b as usize, k as usize);
    let (mut out_v, mut out_i) = (Vec::new(), Vec::new());
    for (blk, chunk) in vals[..n].chunks(b).enumerate() {
        // (value, tie-break position, index to report)
        let mut items: Vec<(f32, u32, u32)> = chunk
            .iter()
            .enumerate()
            .filter_map(|(j, &v)| {
                let src = blk * b + j;
                let id = if chained != 0 {
                    ids[src]
                } else if local != 0 {
                    j as u32
                } else {
                    src as u32
                };
                (chained == 0 || id != TOPK_PAD_INDEX).then_some((v, j as u32, id))
            })
            .collect();
        items.sort_by(|x, y| output_order((x.0, x.1), (y.0, y.1)));
        let (v, i): (Vec<f32>, Vec<u32>) = first_k(items.iter().map(|x| (x.0, x.2)), k);
        out_v.extend(v);
        out_i.extend(i);
    }
    Ok((out_v, out_i))
}

/// The first `k` of the (value, index) pairs `sorted`, padded with `-inf` and
/// [`TOPK_PAD_INDEX`].
fn first_k<P: FromIterator<(f32, u32)>>(sorted: impl Iterator<Item = (f32, u32)>, k: usize) -> P {
    let padding = std::iter::repeat((f32::NEG_INFINITY, TOPK_PAD_INDEX));
    sorted.chain(padding).take(k).collect()
}

/// The values of `[f32; 4]` elements, the first `n`.
fn flat(vals: &[[f32; 4]], n: u32) -> Vec<f32> {
    vals.iter().flatten().copied().take(n as usize).collect()
}

/// The independent reference of [`topk_rows`](super::topk_rows): [`topk_select_reference`] on the values.
pub fn topk_rows_reference(
    vals: &[[f32; 4]],
    n: u32,
    b: u32,
    k: u32,
    local: u32,
) -> Result<(Vec<f32>, Vec<u32>)> {
    topk_select_reference(&flat(vals, n), &[0], n, b, k, 0, 0, local)
}

/// The radix-select key of a value, as torch orders values: larger keys first, every NaN
/// `u32::MAX`, `-0.0` just below `+0.0`, nothing at 0.
fn radix_key(v: f32) -> u32 {
    if v.is_nan() {
        u32::MAX
    } else if v.is_sign_negative() {
        !v.to_bits()
    } else {
        v.to_bits() | 0x8000_0000
    }
}

/// The bit range `(shift, width)` of the digit of radix-select `level` (0..6): levels
/// 0..3 are digits of the key, levels 3..6 digits of the complemented index.
fn radix_digit(level: u32) -> (u32, u32) {
    match level % 3 {
        0 => (21, 11),
        1 => (10, 11),
        _ => (0, 10),
    }
}

/// Whether element `e` with key `key` matches the prefix `(pk, pmask, pi, imask)`.
fn radix_matches(key: u32, e: u32, state: [u32; 4]) -> bool {
    let [pk, pmask, pi, imask] = state;
    (key & pmask) == pk && (!e & imask) == pi
}

/// The independent reference of [`topk_radix_hist`](super::topk_radix_hist).
#[allow(clippy::too_many_arguments)]
pub fn topk_radix_hist_reference(
    vals: &[[f32; 4]],
    state: &[u32],
    hist: &mut [u32],
    n: u32,
    level: u32,
    grid: u32,
    sample: u32,
    slot: u32,
) -> Result<()> {
    let top = 0xffe0_0000u32;
    let x = flat(vals, n);
    let step = sample.max(1) as usize;
    let units = x.len().div_ceil(4).div_ceil(step);
    if level == 0 {
        // One count per invocation: its largest sampled key, over the units `g + i·grid`.
        for g in 0..(grid as usize).min(units) {
            let best = (g..units)
                .step_by(grid as usize)
                .flat_map(|u| x.iter().skip(4 * u * step).take(4))
                .map(|&v| radix_key(v))
                .max();
            if let Some(key) = best {
                let at = &mut hist[(slot * 2048 + (key >> 21)) as usize];
                *at = at.wrapping_add(1);
            }
        }
        return Ok(());
    }
    for w in (0..x.len().div_ceil(4)).step_by(step) {
        for &v in x.iter().skip(4 * w).take(4) {
            let key = radix_key(v);
            let d = if key & top == state[6] & top {
                (key >> 10) & 0x7ff
            } else {
                continue;
            };
            let at = &mut hist[(slot * 2048 + d) as usize];
            *at = at.wrapping_add(1);
        }
    }
    Ok(())
}

/// Whether element `e` is marked in the bitmap of [`topk_radix_mark`](super::topk_radix_mark).
fn marked(marks: &[[u32; 4]], e: usize) -> bool {
    (marks[e >> 7][(e >> 5) & 3] >> (e & 31)) & 1 != 0
}

/// The independent reference of [`topk_radix_mark`](super::topk_radix_mark): the histogram and the bitmap in place.
pub fn topk_radix_mark_reference(
    vals: &[[f32; 4]],
    state: &[u32],
    hist: &mut [u32],
    marks: &mut [[u32; 4]],
    n: u32,
) -> Result<()> {
    marks.iter_mut().for_each(|m| *m = [0; 4]);
    for (e, &v) in flat(vals, n).iter().enumerate() {
        let key = radix_key(v);
        if key >= state[6] {
            let at = &mut hist[(key >> 21) as usize];
            *at = at.wrapping_add(1);
            marks[e >> 7][(e >> 5) & 3] |= 1 << (e & 31);
        }
    }
    Ok(())
}

/// The independent reference of [`topk_radix_refine`](super::topk_radix_refine).
pub fn topk_radix_refine_reference(
    vals: &[[f32; 4]],
    marks: &[[u32; 4]],
    state: &[u32],
    hist: &mut [u32],
    n: u32,
    level: u32,
    _grid: u32,
) -> Result<()> {
    if state[0] != 0 {
        return Ok(());
    }
    let prefix = [state[2], state[3], state[4], state[5]];
    let (shift, width) = radix_digit(level);
    for (e, &v) in flat(vals, n).iter().enumerate() {
        let (key, e32) = (radix_key(v), e as u32);
        if marked(marks, e) && radix_matches(key, e32, prefix) {
            let field = if level < 3 { key } else { !e32 };
            let d = (field >> shift) & ((1 << width) - 1);
            let at = &mut hist[((level % 8) * 2048 + d) as usize];
            *at = at.wrapping_add(1);
        }
    }
    Ok(())
}

/// The independent reference of [`topk_radix_select`](super::topk_radix_select).
pub fn topk_radix_select_reference(
    hist: &[u32],
    state: &mut [u32],
    level: u32,
    slot: u32,
    k: u32,
    floor: u32,
    cap: u32,
) -> Result<()> {
    let (r, mut prefix) = if floor != 0 && level != 0 {
        (state[7], [0; 4])
    } else if floor != 0 || level == 0 {
        (k, [0; 4])
    } else if state[0] != 0 {
        return Ok(());
    } else {
        (state[1], [state[2], state[3], state[4], state[5]])
    };
    let (shift, width) = radix_digit(level);
    let counts = &hist[(slot * 2048) as usize..][..1 << width];
    let total = counts.iter().fold(0u32, |a, c| a.wrapping_add(*c));
    if floor != 0 && level == 0 && total < r {
        state[6] = 0;
        state[7] = 0;
    }
    let mut seen = 0u32;
    for d in (0..counts.len()).rev() {
        let count = counts[d];
        if r >= 1 && seen < r && r <= seen.wrapping_add(count) {
            if floor != 0 && level == 0 {
                state[6] = (d as u32) << shift;
                state[7] = r - seen;
                return Ok(());
            }
            if floor != 0 {
                state[6] = (state[6] & 0xffe0_0000) | ((d as u32) << shift);
                return Ok(());
            }
            let (value, mask) = if level < 3 { (0, 1) } else { (2, 3) };
            prefix[value] |= (d as u32) << shift;
            prefix[mask] |= ((1 << width) - 1) << shift;
            let left = r - seen;
            let done = k.wrapping_sub(left).wrapping_add(count) <= cap || level >= 5;
            state[0] = u32::from(done);
            state[1] = left;
            state[2..6].copy_from_slice(&prefix);
            return Ok(());
        }
        seen = seen.wrapping_add(count);
    }
    Ok(())
}

/// The independent reference of [`topk_radix_collect`](super::topk_radix_collect): the counts; the regions in place.
pub fn topk_radix_collect_reference(
    vals: &[[f32; 4]],
    marks: &[[u32; 4]],
    state: &[u32],
    regions: &mut [u32],
    n: u32,
) -> Result<Vec<u32>> {
    let [pk, pmask, pi, imask] = [state[2], state[3], state[4], state[5]];
    let x = flat(vals, n);
    let groups = x.len().div_ceil(65536);
    let mut counts = vec![0u32; groups];
    for (w, count) in counts.iter_mut().enumerate() {
        let picked: Vec<u32> = (w * 65536..((w + 1) * 65536).min(x.len()))
            .filter(|&e| {
                let kp = radix_key(x[e]) & pmask;
                marked(marks, e) && (kp > pk || (kp == pk && (!(e as u32) & imask) >= pi))
            })
            .map(|e| e as u32)
            .collect();
        for (j, &e) in picked.iter().take(2048).enumerate() {
            regions[w * 2048 + j] = e;
        }
        *count = picked.len() as u32;
    }
    Ok(counts)
}

/// The independent reference of [`topk_radix_sort`](super::topk_radix_sort): the regions' candidates in order
/// (`cap` at most), sorted by a comparator, the first `k` kept.
pub fn topk_radix_sort_reference(
    vals: &[[f32; 4]],
    counts: &[u32],
    regions: &[u32],
    n: u32,
    k: u32,
    groups: u32,
    cap: u32,
) -> Result<(Vec<f32>, Vec<u32>)> {
    let x = flat(vals, n);
    let mut cand: Vec<(u32, u32)> = (0..groups as usize)
        .flat_map(|g| {
            let c = counts[g].min(2048) as usize;
            regions[g * 2048..g * 2048 + c].iter().copied()
        })
        .take(cap as usize)
        .map(|id| {
            let key = if id < n { radix_key(x[id as usize]) } else { 0 };
            (key, id)
        })
        .collect();
    cand.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    // Padding (key 0) sorts last.
    let real = cand.iter().filter(|c| c.0 != 0);
    Ok(first_k(
        real.map(|&(_, id)| (x[id as usize], id)),
        k as usize,
    ))
}
