//! [`attention_rows`]: flash attention with the online softmax on the accumulators'
//! rows, in registers on CUDA. Part of [`super`].

use super::reference::attention_reference_vec;
use forge_macros::forge_kernel;

/// Flash attention with the softmax on the accumulators' rows: `attention`'s inputs, output
/// and meaning, and the layout of a block's keys and values in workgroup memory, but the
/// scores, the probabilities and the rescaling never leave the subgroup's accumulators
/// (`c.row_max()`, `c.exp2_rows(..)`, `c.scale_rows(..)`, `c.to_a()`). On CUDA, which
/// knows the fragments' layout, that is registers and shuffles, as FlashAttention-2 does:
/// each block of keys takes the one barrier that hands over its `K` and `V`. WGSL's
/// matrices are opaque, so each row operation goes through workgroup memory there, and
/// [`attention`](super::attention), written for that, stays the kernel of WGSL backends.
///
/// A workgroup of `WG` invocations owns `WG / 2` query rows of one head, 16 a subgroup,
/// and steps through the keys `KB` at a time:
/// 1. `K` and `V`'s rows of the block are copied into `skv` by `async_copy`, zero past `s`;
/// 2. `S = Q·Kᵀ`, scaled to log2 units, `KB / 16` accumulators; keys past `s`, and when
///    causal past each row's own, are masked to `-∞` (only in the blocks that reach them);
/// 3. the rows' new maximum `m'`, the factor `α = 2^(m − m')` for what came before, the
///    probabilities `P = 2^(S − m')` and the sums `l = α·l + ΣP`, all on the rows of the
///    accumulators;
/// 4. `O = α·O + P·V`, `P` rounded to `f16` as the left operand.
///
/// Last, `O / l` goes out as `f16` through `skv`. Workgroup memory: `skv`, `2·KB` rows of
/// `128 + PAD` halves, which also stage `Q` at the start and `O` at the end (`keep` makes
/// `2·KB` at least the `WG / 2` rows).
#[forge_kernel(crate = ::forge_core, workgroup = 64,
    threads = bh * s.div_ceil(WG / 2) * WG, ext = false,
    knobs(KB = 16, PAD = 8),
    tune(workgroup = [64, 128], KB = [16, 32, 64], PAD = [8], keep = 4 * KB >= WG),
    reference = attention_reference_vec, tolerance(abs = 2e-3, rel = 2e-3, terms = s + d),
    case(bh = 1, s = 16, d = 16, causal = 0, scale = 0.25),
    case(bh = 2, s = 37, d = 64, causal = 0, scale = 0.125),
    case(bh = 2, s = 37, d = 64, causal = 1, scale = 0.125),
    case(bh = 1, s = 70, d = 128, causal = 1, scale = 0.088388),
    case(bh = 3, s = 5, d = 32, causal = 0, scale = 0.17677),
    case(bh = 1, s = 100, d = 64, causal = 1, scale = -0.3),
    cost(bytes = 8 * bh * s * d, flops = 4 * bh * s * s * d / (causal + 1)))]
pub fn attention_rows(
    q: &[HVec4; bh * s * d / 4],
    k: &[HVec4; bh * s * d / 4],
    v: &[HVec4; bh * s * d / 4],
    #[out] o: &mut [HVec4; bh * s * d / 4],
    bh: u32,
    s: u32,
    d: u32,
    causal: u32,
    scale: f32,
) {
    // `skv`'s rows are `SKV` `HVec4`s: 128 halves and `PAD`, which put a fragment's rows
    // on different banks.
    const SKV: u32 = (128 + PAD) / 4;
    #[shared]
    let mut skv = [HVec4::ZERO; 2 * KB * SKV];
    let rows = WG / 2;
    let nqb = s.div_ceil(rows);
    let w = workgroup_index();
    if w < bh * nqb {
        let d4 = d / 4;
        let base = (w / nqb) * s * d4;
        let q0 = (w % nqb) * rows;
        let fd = d / 16;
        let lid = local_index();
        let sid = subgroup_id();
        // Q, zero past `s`, staged in `skv` and kept as fragments.
        let mut e = lid;
        while e < rows * d4 {
            let (r, c) = (e / d4, e % d4);
            skv[r * SKV + c] = if q0 + r < s {
                q[base + (q0 + r) * d4 + c]
            } else {
                HVec4::ZERO
            };
            e += WG;
        }
        workgroup_barrier();
        let mut qf = [CoopA::zeroed(); 8];
        #[unroll]
        for f in 0..8 {
            if f < fd {
                qf[f] = CoopA::load_row_major(&skv[sid * 16 * SKV + 4 * f], SKV);
            }
        }
        let mut of = [CoopC::zeroed(); 8];
        let c2 = CoopRow::splat(scale * 1.442_695_f32);
        let mut m = CoopRow::splat(f32::NEG_INFINITY);
        let mut l = CoopRow::splat(0.0);
        // Keys up to the block's last row when causal: later blocks are masked whole.
        let kend = if causal != 0 { (q0 + rows).min(s) } else { s };
        // Where this invocation's first `HVec4` of a block lies, and the step to the next.
        let (r0, c0) = (lid / d4, lid % d4);
        let (dr, dc) = (WG / d4, WG % d4);
        for kb in 0..kend.div_ceil(KB) {
            let k0 = kb * KB;
            // Everyone is done with the last block (and with `Q`) before it is replaced.
            workgroup_barrier();
            let (mut r, mut c) = (r0, c0);
            while r < KB {
                let (ak, av) = (r * SKV + c, (KB + r) * SKV + c);
                if k0 + r < s {
                    let at = base + (k0 + r) * d4 + c;
                    async_copy(&mut skv[ak], &k[at]);
                    async_copy(&mut skv[av], &v[at]);
                } else {
                    skv[ak] = HVec4::ZERO;
                    skv[av] = HVec4::ZERO;
                }
                r += dr;
                c += dc;
                if c >= d4 {
                    c -= d4;
                    r += 1;
                }
            }
            async_wait(0);
            // S = Q·Kᵀ in log2 units: Kᵀ(p, j) = K(j, p), column-major.
            let mut sc = [CoopC::zeroed(); KB / 16];
            #[unroll]
            for j in 0..KB / 16 {
                #[unroll]
                for f in 0..8 {
                    if f < fd {
                        let kt = CoopB::load_col_major(&skv[16 * j * SKV + 4 * f], SKV);
                        sc[j] = qf[f].mul_add(kt, sc[j]);
                    }
                }
                sc[j] = sc[j].scale_rows(c2);
            }
            // Element (r, c) of fragment j is key `k0 + 16·j + c`: masked from `s` on,
            // and, when causal, past row `q0 + 16·sid + r`.
            if k0 + KB > s {
                #[unroll]
                for j in 0..KB / 16 {
                    sc[j] = sc[j].mask_from(s as i32 - (k0 + 16 * j) as i32, 0, f32::NEG_INFINITY);
                }
            }
            if causal != 0 && k0 + KB > q0 + 1 {
                let first = (q0 + 16 * sid + 1) as i32 - k0 as i32;
                #[unroll]
                for j in 0..KB / 16 {
                    sc[j] = sc[j].mask_from(first - (16 * j) as i32, 1, f32::NEG_INFINITY);
                }
            }
            // The online softmax. Key 0 is in every row's first block, so `m'` is finite
            // from there on, and `α = 2^(-∞)` = 0 clears nothing that was not zero.
            let mut mx = sc[0].row_max();
            #[unroll]
            for j in 1..KB / 16 {
                mx = mx.max(sc[j].row_max());
            }
            let mn = m.max(mx);
            let alpha = m.sub(mn).exp2();
            m = mn;
            l = l.mul(alpha);
            #[unroll]
            for f in 0..8 {
                if f < fd {
                    of[f] = of[f].scale_rows(alpha);
                }
            }
            // O += P·V, a block of 16 keys at a time.
            #[unroll]
            for j in 0..KB / 16 {
                let p = sc[j].exp2_rows(1.0, mn);
                l = l.add(p.row_sum());
                let pa = p.to_a();
                #[unroll]
                for f in 0..8 {
                    if f < fd {
                        let vb = CoopB::load_row_major(&skv[(KB + 16 * j) * SKV + 4 * f], SKV);
                        of[f] = pa.mul_add(vb, of[f]);
                    }
                }
            }
        }
        // O / l, as f16, staged in the subgroup's rows of `skv`, then the rows below `s`.
        let inv = l.recip();
        workgroup_barrier();
        #[unroll]
        for f in 0..8 {
            if f < fd {
                let out = of[f].scale_rows(inv).to_a();
                out.store_row_major(&mut skv[sid * 16 * SKV + 4 * f], SKV);
            }
        }
        workgroup_barrier();
        let mut e = lid;
        while e < rows * d4 {
            let (r, c) = (e / d4, e % d4);
            if q0 + r < s {
                o[base + (q0 + r) * d4 + c] = skv[r * SKV + c];
            }
            e += WG;
        }
    }
}
