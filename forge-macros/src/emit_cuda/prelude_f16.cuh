// ---- f16: cuda_fp16.h's __half, with the prelude's functions over it ----
// Vectors of two and four halves are laid out as the generic vector is, but share their
// storage with 32-bit words: a whole vector then moves as one or two registers (a 64-bit
// load stored to workgroup memory as it came). As a plain array of halves, each half took
// a register of its own, and every copy split and repacked them (two PRMTs a half: a
// third of gemm_f16's loop on sm_90). Components are still read and written as `.v[i]`.
template <> struct alignas(4) fg_vec<__half, 2> { union { __half v[2]; unsigned fg_w; }; };
template <> struct alignas(8) fg_vec<__half, 4> { union { __half v[4]; uint2 fg_w; }; };
// Arithmetic is native (each operation rounds once, as f16 arithmetic does); the other
// functions compute on the exact f32 value and round the result once.
FG_FN __half fg_add(__half a, __half b) { return __hadd(a, b); }
FG_FN __half fg_sub(__half a, __half b) { return __hsub(a, b); }
FG_FN __half fg_mul(__half a, __half b) { return __hmul(a, b); }
FG_FN __half fg_div(__half a, __half b) { return __hdiv(a, b); }
FG_FN __half fg_neg(__half a) { return __hneg(a); }
#define FG_HALF_VIA_F32_1(name)                                                        \
    FG_FN __half name(__half x) { return __float2half_rn(name(__half2float(x))); }
#define FG_HALF_VIA_F32_2(name)                                                        \
    FG_FN __half name(__half a, __half b) {                                             \
        return __float2half_rn(name(__half2float(a), __half2float(b)));                 \
    }
FG_HALF_VIA_F32_2(fg_rem)
FG_HALF_VIA_F32_1(fg_abs)
FG_HALF_VIA_F32_2(fg_min)
FG_HALF_VIA_F32_2(fg_max)
FG_FN __half fg_clamp(__half x, __half lo, __half hi) {
    return __float2half_rn(fg_clamp(__half2float(x), __half2float(lo), __half2float(hi)));
}
FG_HALF_VIA_F32_1(fg_sqrt)
FG_HALF_VIA_F32_1(fg_exp)
FG_HALF_VIA_F32_1(fg_exp2)
FG_HALF_VIA_F32_1(fg_ln)
FG_HALF_VIA_F32_1(fg_log2)
FG_HALF_VIA_F32_1(fg_log10)
FG_HALF_VIA_F32_1(fg_sin)
FG_HALF_VIA_F32_1(fg_cos)
FG_HALF_VIA_F32_1(fg_tan)
FG_HALF_VIA_F32_1(fg_tanh)
FG_HALF_VIA_F32_1(fg_asin)
FG_HALF_VIA_F32_1(fg_acos)
FG_HALF_VIA_F32_1(fg_atan)
FG_HALF_VIA_F32_1(fg_sinh)
FG_HALF_VIA_F32_1(fg_cosh)
FG_HALF_VIA_F32_1(fg_asinh)
FG_HALF_VIA_F32_1(fg_acosh)
FG_HALF_VIA_F32_1(fg_atanh)
FG_HALF_VIA_F32_2(fg_atan2)
FG_HALF_VIA_F32_2(fg_powf)
FG_HALF_VIA_F32_2(fg_hypot)
FG_HALF_VIA_F32_1(fg_floor)
FG_HALF_VIA_F32_1(fg_ceil)
FG_HALF_VIA_F32_1(fg_trunc)
FG_HALF_VIA_F32_1(fg_round)
FG_HALF_VIA_F32_1(fg_round_ties_even)
FG_HALF_VIA_F32_1(fg_fract)
FG_HALF_VIA_F32_1(fg_signum)
FG_HALF_VIA_F32_1(fg_recip)
FG_HALF_VIA_F32_2(fg_rem_euclid)
FG_HALF_VIA_F32_1(fg_to_degrees)
FG_HALF_VIA_F32_1(fg_to_radians)
FG_FN __half fg_powi(__half x, int n) { return __float2half_rn(fg_powi(__half2float(x), n)); }
FG_FN __half fg_mul_add(__half a, __half b, __half c) { return __hfma(a, b, c); }
FG_FN bool fg_isnan(__half x) { return (__half_as_ushort(x) & 0x7fffu) > 0x7c00u; }
FG_FN bool fg_isfinite(__half x) { return (__half_as_ushort(x) & 0x7c00u) != 0x7c00u; }
// Float to integer: truncation, clamped to the f16 values that fit (an infinity gives
// ±65504), NaN to 0.
FG_FN int fg_f16_to_i32(__half x) {
    float f = __half2float(x);
    return fg_isnan(f) ? 0 : (int)fminf(fmaxf(f, -65504.0f), 65504.0f);
}
FG_FN unsigned fg_f16_to_u32(__half x) {
    float f = __half2float(x);
    return fg_isnan(f) ? 0u : (unsigned)fminf(fmaxf(f, 0.0f), 65504.0f);
}
