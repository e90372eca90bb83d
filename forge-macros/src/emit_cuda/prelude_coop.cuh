// ---- cooperative matrices on tensor cores (sm_80 and up) ----
// A 16x16 matrix belongs to a warp, as the language's belongs to a subgroup. It is held in
// the register fragments of `mma.sync.aligned.m16n8k16` (PTX ISA, "Matrix fragments for
// mma.m16n8k16"): with g = lane / 4 and t = lane % 4,
// - A (f16): register i holds row g + 8 (i & 1), columns 2t + 8 (i >> 1) and the next;
// - B (f16): register i holds rows (k) 2t + 8 (i & 1) and the next, column (n)
//   g + 8 (i >> 1): an n8 half per pair of registers, as mma's col-layout B wants;
// - C (f32): element i holds row g + 8 ((i & 3) >> 1), column 2t + (i & 1) + 8 (i >> 2):
//   the two m16n8 accumulators of the halves of n.
// `a.mul_add(b, c)` is two mma.sync, one per half of n. Loads from workgroup memory take
// `ldmatrix` (transposed where the layout asks) when every row starts on 16 bytes; every
// other load and every store goes element by element, so any index and stride the oracle
// accepts works here too. A load's `LDSM` says what the emitter proved of its rows
// (`emit_cuda::align`): 0, not in workgroup memory; 1, not known, so tested here; 2, every
// row on 16 bytes, so no test and no other path: each load issues as soon as it may. A pointer is the matrix's first element and a stride counts
// elements of the matrix's type (the emitter scales an array of vectors' stride by its
// width), as `oracle::coop` places them.

struct fg_coop_a { unsigned r[4]; };
struct fg_coop_b { unsigned r[4]; };
struct fg_coop_c { float r[8]; };

FG_FN unsigned fg_coop_lane() {
    unsigned l;
    asm("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}
FG_FN unsigned fg_coop_pack(__half lo, __half hi) {
    return (unsigned)__half_as_ushort(lo) | ((unsigned)__half_as_ushort(hi) << 16);
}
FG_FN __half fg_coop_lo(unsigned x) { return __ushort_as_half((unsigned short)(x & 0xffffu)); }
FG_FN __half fg_coop_hi(unsigned x) { return __ushort_as_half((unsigned short)(x >> 16)); }
// Element (r, c) of a matrix at `p`: row-major at p[r s + c], column-major at p[c s + r].
template <bool RM, class T> FG_FN T &fg_coop_at(T *p, unsigned s, unsigned r, unsigned c) {
    return RM ? p[r * s + c] : p[c * s + r];
}
// Row and column of an operand register's first half: A's (row, column); B's (k, n).
FG_FN unsigned fg_coop_a_row(unsigned l, unsigned i) { return (l >> 2) + 8u * (i & 1u); }
FG_FN unsigned fg_coop_a_col(unsigned l, unsigned i) { return 2u * (l & 3u) + 8u * (i >> 1); }
FG_FN unsigned fg_coop_b_k(unsigned l, unsigned i) { return 2u * (l & 3u) + 8u * (i & 1u); }
FG_FN unsigned fg_coop_b_n(unsigned l, unsigned i) { return (l >> 2) + 8u * (i >> 1); }
FG_FN unsigned fg_coop_c_row(unsigned l, unsigned i) { return (l >> 2) + 8u * ((i & 3u) >> 1); }
FG_FN unsigned fg_coop_c_col(unsigned l, unsigned i) { return 2u * (l & 3u) + (i & 1u) + 8u * (i >> 2); }

// Four 8x8 matrices of 16-bit elements from workgroup memory, a row address a lane.
template <bool TRANS> FG_FN void fg_coop_ldsm(unsigned (&r)[4], const __half *row) {
    unsigned a = (unsigned)__cvta_generic_to_shared(row);
    // It reads memory ("memory": never moved across a barrier or a store), and nothing
    // else: the multiplies may be scheduled around it.
    if (TRANS) {
        asm("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
            : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
    } else {
        asm("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
            : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
    }
}
// Whether `ldmatrix` can read the matrix at `p`: workgroup memory, every row on 16 bytes
// (`LDSM` as above).
template <int LDSM> FG_FN bool fg_coop_ldsm_ok(const __half *p, unsigned s) {
    return LDSM == 2 || (LDSM == 1 && ((((unsigned long long)p) | (unsigned long long)(s * 2u)) & 15u) == 0u);
}

// The row address lane `l` gives `ldmatrix` for the 8x8 block at rows `r0`, columns `c0`
// of the matrix at `p` (row-major where ROWS, else column-major, stride `s`): the block's
// row l % 8 where the memory holds rows, else its column l % 8.
template <bool ROWS> FG_FN const __half *fg_coop_row(const __half *p, unsigned s, unsigned l, unsigned r0, unsigned c0) {
    unsigned j = l & 7u;
    return ROWS ? p + (r0 + j) * s + c0 : p + (c0 + j) * s + r0;
}

template <bool RM, int LDSM> FG_FN fg_coop_a fg_coop_load_a(const __half *p, unsigned s) {
    fg_coop_a m;
    unsigned l = fg_coop_lane();
    if (fg_coop_ldsm_ok<LDSM>(p, s)) {
        // Block b = l / 8 is register b's: rows 8 (b & 1), columns 8 (b >> 1).
        unsigned b = l >> 3;
        fg_coop_ldsm<!RM>(m.r, fg_coop_row<RM>(p, s, l, 8u * (b & 1u), 8u * (b >> 1)));
        return m;
    }
    for (unsigned i = 0; i < 4u; ++i) {
        unsigned r = fg_coop_a_row(l, i), c = fg_coop_a_col(l, i);
        m.r[i] = fg_coop_pack(fg_coop_at<RM>(p, s, r, c), fg_coop_at<RM>(p, s, r, c + 1u));
    }
    return m;
}

template <bool RM, int LDSM> FG_FN fg_coop_b fg_coop_load_b(const __half *p, unsigned s) {
    fg_coop_b m;
    unsigned l = fg_coop_lane();
    if (fg_coop_ldsm_ok<LDSM>(p, s)) {
        // Block b = l / 8 is register b's: k 8 (b & 1), n 8 (b >> 1). mma takes B by
        // columns (n), so a column-major B is read as stored and a row-major one transposed.
        unsigned b = l >> 3;
        fg_coop_ldsm<RM>(m.r, fg_coop_row<!RM>(p, s, l, 8u * (b >> 1), 8u * (b & 1u)));
        return m;
    }
    for (unsigned i = 0; i < 4u; ++i) {
        unsigned k = fg_coop_b_k(l, i), n = fg_coop_b_n(l, i);
        m.r[i] = fg_coop_pack(fg_coop_at<RM>(p, s, k, n), fg_coop_at<RM>(p, s, k + 1u, n));
    }
    return m;
}

template <bool RM, int LDSM> FG_FN fg_coop_c fg_coop_load_c(const float *p, unsigned s) {
    fg_coop_c m;
    unsigned l = fg_coop_lane();
    for (unsigned i = 0; i < 8u; ++i) m.r[i] = fg_coop_at<RM>(p, s, fg_coop_c_row(l, i), fg_coop_c_col(l, i));
    return m;
}

template <bool RM> FG_FN void fg_coop_store(fg_coop_a m, __half *p, unsigned s) {
    unsigned l = fg_coop_lane();
    for (unsigned i = 0; i < 4u; ++i) {
        unsigned r = fg_coop_a_row(l, i), c = fg_coop_a_col(l, i);
        fg_coop_at<RM>(p, s, r, c) = fg_coop_lo(m.r[i]);
        fg_coop_at<RM>(p, s, r, c + 1u) = fg_coop_hi(m.r[i]);
    }
}
template <bool RM> FG_FN void fg_coop_store(fg_coop_b m, __half *p, unsigned s) {
    unsigned l = fg_coop_lane();
    for (unsigned i = 0; i < 4u; ++i) {
        unsigned k = fg_coop_b_k(l, i), n = fg_coop_b_n(l, i);
        fg_coop_at<RM>(p, s, k, n) = fg_coop_lo(m.r[i]);
        fg_coop_at<RM>(p, s, k + 1u, n) = fg_coop_hi(m.r[i]);
    }
}
template <bool RM> FG_FN void fg_coop_store(fg_coop_c m, float *p, unsigned s) {
    unsigned l = fg_coop_lane();
    for (unsigned i = 0; i < 8u; ++i) fg_coop_at<RM>(p, s, fg_coop_c_row(l, i), fg_coop_c_col(l, i)) = m.r[i];
}

// a·b + c: one mma.sync per half of n, accumulating in f32.
FG_FN fg_coop_c fg_coop_mul_add(fg_coop_a a, fg_coop_b b, fg_coop_c c) {
    fg_coop_c d;
    for (unsigned h = 0; h < 2u; ++h) {
        // Not volatile: a pure function of its registers, which the compiler may schedule
        // among the loads.
        asm(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
            : "=f"(d.r[4 * h]), "=f"(d.r[4 * h + 1]), "=f"(d.r[4 * h + 2]), "=f"(d.r[4 * h + 3])
            : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[2 * h]), "r"(b.r[2 * h + 1]),
              "f"(c.r[4 * h]), "f"(c.r[4 * h + 1]), "f"(c.r[4 * h + 2]), "f"(c.r[4 * h + 3]));
    }
    return d;
}

// ---- an accumulator's rows (`CoopRow`, `c.row_max()`, `c.exp2_rows(scale, m)`, ...) ----
// A row's value is held where the accumulator's row is: lane l holds rows g = l / 4 and
// g + 8 in r[0] and r[1], the same in the row's four lanes (t = l % 4). C's element i is
// in row g + 8 ((i & 3) >> 1), so row half h holds elements 2h, 2h + 1, 2h + 4, 2h + 5.
// (`fg_coop_r`, as `fg_coop_a`, `_b` and `_c` are named by their role's letter.)
struct fg_coop_r { float r[2]; };

FG_FN unsigned fg_coop_c_half(unsigned i) { return (i & 3u) >> 1; }
FG_FN fg_coop_r fg_coop_row_splat(float x) { return fg_coop_r{{x, x}}; }
// A row's maximum and minimum take `fmaxf`/`fminf` (one `FMNMX`, which gives the other
// operand where one is a NaN, as `fg_max` does), where `fg_max`'s tests for signalling NaNs
// split every step of a reduction into branches: an accumulator's elements come from
// arithmetic, whose NaNs are quiet.
struct fg_coop_op_max { FG_FN float operator()(float a, float b) const { return fmaxf(a, b); } };
struct fg_coop_op_min { FG_FN float operator()(float a, float b) const { return fminf(a, b); } };
// Each row reduced by `op`: a lane's four elements, then the row's other three lanes.
template <class Op> FG_FN fg_coop_r fg_coop_row_reduce(fg_coop_c c, Op op) {
    fg_coop_r o;
    for (unsigned h = 0; h < 2u; ++h) {
        float x = op(op(c.r[2 * h], c.r[2 * h + 1]), op(c.r[2 * h + 4], c.r[2 * h + 5]));
        x = op(x, __shfl_xor_sync(0xffffffffu, x, 1));
        x = op(x, __shfl_xor_sync(0xffffffffu, x, 2));
        o.r[h] = x;
    }
    return o;
}
template <class Op> FG_FN fg_coop_r fg_coop_row_zip(fg_coop_r a, fg_coop_r b, Op op) {
    return fg_coop_r{{op(a.r[0], b.r[0]), op(a.r[1], b.r[1])}};
}
FG_FN fg_coop_r fg_coop_row_scale(fg_coop_r a, float x) { return fg_coop_r{{a.r[0] * x, a.r[1] * x}}; }
// 2^x for a softmax: one `MUFU.EX2`, its results below 2^-126 flushed to zero (WGSL allows
// it), where `exp2f` without `--ftz` tests for them and scales around the instruction.
FG_FN float fg_coop_ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
FG_FN fg_coop_r fg_coop_row_exp2(fg_coop_r a) { return fg_coop_r{{fg_coop_ex2(a.r[0]), fg_coop_ex2(a.r[1])}}; }
FG_FN fg_coop_r fg_coop_row_recip(fg_coop_r a) { return fg_coop_r{{fg_recip(a.r[0]), fg_recip(a.r[1])}}; }

// Element (r, j) to `fill` where j >= first + step r, in i32 arithmetic that wraps, as
// WGSL's does.
FG_FN fg_coop_c fg_coop_mask_from(fg_coop_c c, int first, int step, float fill) {
    unsigned l = fg_coop_lane();
    for (unsigned i = 0; i < 8u; ++i) {
        unsigned r = fg_coop_c_row(l, i);
        int j = (int)fg_coop_c_col(l, i);
        if (j >= (int)((unsigned)first + (unsigned)step * r)) c.r[i] = fill;
    }
    return c;
}
// Element by element the larger of two accumulators (`fmaxf`, as a row's maximum): a row's
// maximum over several accumulators takes one reduction, not one each.
FG_FN fg_coop_c fg_coop_max_with(fg_coop_c c, fg_coop_c o) {
    for (unsigned i = 0; i < 8u; ++i) c.r[i] = fmaxf(c.r[i], o.r[i]);
    return c;
}
// Element by element the sum of two accumulators: a row's sum over several accumulators
// takes one reduction, not one each.
FG_FN fg_coop_c fg_coop_add_with(fg_coop_c c, fg_coop_c o) {
    for (unsigned i = 0; i < 8u; ++i) c.r[i] = fg_add(c.r[i], o.r[i]);
    return c;
}
// 2^(x scale - m[r]): the exponentials of a softmax, in registers.
FG_FN fg_coop_c fg_coop_exp2_rows(fg_coop_c c, float scale, fg_coop_r m) {
    for (unsigned i = 0; i < 8u; ++i) c.r[i] = fg_coop_ex2(c.r[i] * scale - m.r[fg_coop_c_half(i)]);
    return c;
}
// Factors of exactly 1 leave the lane's elements as they are (x·1 is x, NaNs included): an
// online softmax whose reference maximum did not move (most blocks, where the kernel moves
// it only by more than a slack) then skips its rescale. The test is the warp's vote (an
// accumulator is the whole warp's, so every lane is here), a branch the warp takes or skips
// whole: a test of the lane's own factors was made eight predicated multiplies, issued
// whether they ran or not (128 a block of keys in attention_rows at d = 128).
FG_FN fg_coop_c fg_coop_scale_rows(fg_coop_c c, fg_coop_r f) {
    if (__all_sync(0xffffffffu, f.r[0] == 1.0f && f.r[1] == 1.0f)) return c;
    for (unsigned i = 0; i < 8u; ++i) c.r[i] *= f.r[fg_coop_c_half(i)];
    return c;
}
// The accumulator as a left operand, rounded to f16: A's register k holds row
// g + 8 (k & 1), columns 2t + 8 (k >> 1) and the next, which are C's elements 2k and
// 2k + 1, so no value leaves its lane.
FG_FN fg_coop_a fg_coop_to_a(fg_coop_c c) {
    fg_coop_a a;
    for (unsigned k = 0; k < 4u; ++k) a.r[k] = fg_coop_pack(__float2half_rn(c.r[2 * k]), __float2half_rn(c.r[2 * k + 1]));
    return a;
}
