//! The host side of the multi-pass top-k: the global top-k's scratch and the recording of
//! its passes, and the block top-k's register path, on device tensors.

use super::kernels::*;
use super::{TOPK_GLOBAL_MAX_K, TOPK_GLOBAL_MAX_LEN};
use crate::dims::dim;
use forge_core::{ForgeError, ForgeRuntime, GpuTensor, Result, Schedule};

/// The device buffers of the global top-k's radix select, reusable from call to call.
///
/// The select works on a 64-bit composite key, the order key of a value (see
/// [`topk_rows`]) then its complemented index, which is unique and orders equal values by
/// index. `state` (eight `u32`) holds what the passes decided:
/// - `[0]`: 1 once the threshold is final (later levels do nothing);
/// - `[1]`: how many of the elements that match the prefix are still to be taken;
/// - `[2]`, `[3]`: the prefix of the key, and the mask of the key bits it fixes;
/// - `[4]`, `[5]`: the same for the complemented index (levels 3..6);
/// - `[6]`: the floor of the full pass, from the sample (22 bits of a key);
/// - `[7]`: the sample's rank left within the floor's 11-bit bin.
///
/// `hist` holds eight histograms of 2048 bins: levels 0..6, then the sample's two levels.
/// `marks` is the bitmap of the candidates (one bit per element, [`topk_radix_mark`]),
/// `counts` and `regions` the collect's output, one region of 2048 indices per chunk of
/// 65536 elements. The elements above the prefix number fewer than `k`; with those
/// matching it they are what the collect pass gathers.
pub struct TopkGlobalScratch {
    hist: GpuTensor<u32>,
    state: GpuTensor<u32>,
    marks: GpuTensor<[u32; 4]>,
    counts: GpuTensor<u32>,
    regions: GpuTensor<u32>,
    groups: u32,
    grid: u32,
    sample: u32,
    /// The most values it serves.
    n: usize,
}

impl TopkGlobalScratch {
    /// Buffers for inputs of `n` values.
    pub fn new(rt: &mut ForgeRuntime, n: usize) -> Result<Self> {
        let n4 = dim(topk_radix_hist::NAME, "n / 4", n.div_ceil(4))?;
        let groups = dim(topk_radix_mark::NAME, "n / 65536", n.div_ceil(65536))?;
        Ok(TopkGlobalScratch {
            hist: rt.zeros(8 * 2048)?,
            state: rt.zeros(8)?,
            marks: rt.zeros(groups as usize * 512)?,
            counts: rt.zeros(groups as usize)?,
            regions: rt.zeros(groups as usize * 2048)?,
            groups,
            grid: n4.div_ceil(32).clamp(1, level_grid_cap(n)),
            // About 2^16 `Vec4`s, one in up to 256.
            sample: (n4 >> 16).clamp(1, 256),
            n,
        })
    }

    /// The invocations of the level passes over the bitmap (`min(n/128, cap)` by default,
    /// one `UVec4` of it each, the cap 2^17, or 2^16 from 2^27 values on), which stride
    /// over it; at least 1.
    pub fn set_grid(&mut self, grid: u32) {
        self.grid = grid.max(1);
    }
}

/// The most invocations the level passes take by default for `n` values: on the H200, 2^28
/// values took a third of the time at 2^16 that they took at 2^18, smaller inputs within 8%
/// at any of the three (`docs/PERFORMANCE.md`, "The global top-k's default level grid").
fn level_grid_cap(n: usize) -> u32 {
    if n >= 1 << 27 {
        1 << 16
    } else {
        1 << 17
    }
}

/// The size of the final sort of the global top-k: the select refines its threshold until
/// the candidates fit it. Small sorts are cheap, extra levels cost a pass over the bitmap.
fn sort_cap(k: u32) -> u32 {
    (2 * k.next_power_of_two()).clamp(256, 2048)
}

/// Records the global top-`k` of the first `n` values of `vals` (a `Vec4` per four values)
/// into `out_vals` and `out_ids` (`k` each), as [`TopkExt::topk_global_with_indices`](super::TopkExt::topk_global_with_indices)
/// computes it (see the [module docs](crate::topk)): the sample's two levels, the full
/// pass, five levels over the marked candidates (levels after the threshold is final do
/// nothing), the collect and the final sort. Nothing is submitted.
///
/// Errors, before anything is recorded: `n` or `k` zero ([`ForgeError::EmptyWork`]), `k`
/// past [`TOPK_GLOBAL_MAX_K`] or `n`, `n` past [`TOPK_GLOBAL_MAX_LEN`] or the values in
/// `vals`, a `scratch` made for fewer than `n` values, or outputs shorter than `k`
/// ([`ForgeError::InvalidArgument`]).
pub fn topk_global_record(
    rt: &mut ForgeRuntime,
    vals: &GpuTensor<[f32; 4]>,
    n: u32,
    k: u32,
    scratch: &TopkGlobalScratch,
    out_vals: &GpuTensor<f32>,
    out_ids: &GpuTensor<u32>,
) -> Result<()> {
    check_global(n as usize, k as usize)?;
    for (what, have, need) in [
        (
            "`vals` (4 values a `Vec4`)",
            vals.len().saturating_mul(4),
            n,
        ),
        ("`scratch` (made for a number of values)", scratch.n, n),
        ("`out_vals`", out_vals.len(), k),
        ("`out_ids`", out_ids.len(), k),
    ] {
        if have < need as usize {
            return Err(invalid(format!(
                "{what} holds {have}, fewer than the {need} that n = {n}, k = {k} need"
            )));
        }
    }
    let s = scratch;
    let cap = sort_cap(k);
    rt.clear(&s.hist)?;
    rt.clear(&s.state)?;
    let (st, h, m) = (&s.state, &s.hist, &s.marks);
    // The floor, from a sample: 11 bits, then 22.
    let sample_grid = (n.div_ceil(4).div_ceil(s.sample))
        .div_ceil(4)
        .clamp(1, 1 << 16);
    topk_radix_hist::launch(rt, vals, st, h, n, 0, sample_grid, s.sample, 6)?;
    topk_radix_select::launch(rt, h, st, 0, 6, k, 1, cap)?;
    topk_radix_hist::launch(rt, vals, st, h, n, 1, sample_grid, s.sample, 7)?;
    topk_radix_select::launch(rt, h, st, 1, 7, k, 1, cap)?;
    // The one full read: level 0 and the candidates' bitmap.
    topk_radix_mark::launch(rt, vals, st, h, m, n)?;
    topk_radix_select::launch(rt, h, st, 0, 0, k, 0, cap)?;
    let words4 = n.div_ceil(128);
    for level in 1..6 {
        // Levels past the second only run on massive ties (a 22-bit prefix of the key
        // already leaves a handful of continuous values): a small grid makes their usual
        // early exit cheap.
        let most = if level < 2 {
            words4
        } else {
            words4.min(1 << 12)
        };
        let grid = s.grid.min(most);
        topk_radix_refine::launch(rt, vals, m, st, h, n, level, grid)?;
        topk_radix_select::launch(rt, h, st, level, level, k, 0, cap)?;
    }
    topk_radix_collect::launch(rt, vals, m, st, &s.counts, &s.regions, n)?;
    topk_radix_sort::launch(
        rt, vals, &s.counts, &s.regions, out_vals, out_ids, n, k, s.groups, cap,
    )
}

/// Records the top `k ≤ 8` of each block of `b` of the first `n` values of `vals` into
/// `out_vals` and `out_ids` (`k` per block), indices within the block when `local`:
/// [`topk_rows`], one invocation per block. `schedule` overrides the tuned one.
#[allow(clippy::too_many_arguments)]
pub fn topk_rows_record(
    rt: &mut ForgeRuntime,
    vals: &GpuTensor<[f32; 4]>,
    n: u32,
    b: u32,
    k: u32,
    local: bool,
    out_vals: &GpuTensor<f32>,
    out_ids: &GpuTensor<u32>,
    schedule: Option<&Schedule>,
) -> Result<()> {
    let local = u32::from(local);
    match schedule {
        Some(s) => topk_rows::launch_with(rt, s, vals, out_vals, out_ids, n, b, k, local),
        None => topk_rows::launch(rt, vals, out_vals, out_ids, n, b, k, local),
    }
}

/// An argument error of the top-k methods.
pub(super) fn invalid(message: String) -> ForgeError {
    ForgeError::InvalidArgument {
        kernel: topk_select::NAME,
        message,
    }
}

/// The global top-k's limits: `k` from 1 to [`TOPK_GLOBAL_MAX_K`] and at most `n`, `n` from 1
/// to [`TOPK_GLOBAL_MAX_LEN`].
pub(super) fn check_global(n: usize, k: usize) -> Result<()> {
    if n == 0 || k == 0 {
        return Err(ForgeError::EmptyWork {
            kernel: topk_select::NAME,
            what: format!("n = {n}, k = {k}"),
        });
    }
    let why = if k > TOPK_GLOBAL_MAX_K {
        format!("`k` = {k} is larger than the global top-k's limit of {TOPK_GLOBAL_MAX_K}")
    } else if k > n {
        format!("`k` = {k} is larger than the input's {n} elements")
    } else if n > TOPK_GLOBAL_MAX_LEN {
        format!("the input has {n} elements, past the global top-k's limit of 2^28")
    } else {
        return Ok(());
    };
    Err(invalid(why))
}
