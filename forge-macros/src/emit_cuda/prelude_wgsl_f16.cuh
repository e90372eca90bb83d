// ---- WGSL's builtins on f16: on the exact f32 value, the result rounded once ----
FG_FN __half fg_clamp_min_max(__half x, __half lo, __half hi) {
    return __float2half_rn(fg_clamp_min_max(__half2float(x), __half2float(lo), __half2float(hi)));
}
FG_HALF_VIA_F32_1(fg_fract_floor)
FG_HALF_VIA_F32_1(fg_sign)
FG_HALF_VIA_F32_1(fg_inverse_sqrt)
FG_HALF_VIA_F32_1(fg_saturate)
FG_HALF_VIA_F32_2(fg_step)
FG_FN __half fg_mix(__half a, __half b, __half t) {
    return __float2half_rn(fg_mix(__half2float(a), __half2float(b), __half2float(t)));
}
FG_FN __half fg_smoothstep(__half lo, __half hi, __half x) {
    return __float2half_rn(fg_smoothstep(__half2float(lo), __half2float(hi), __half2float(x)));
}
FG_FN __half fg_ldexp(__half x, int e) { return __float2half_rn(fg_ldexp(__half2float(x), e)); }
FG_HALF_VIA_F32_1(fg_frexp_fract)
FG_FN int fg_frexp_exp(__half x) { return fg_frexp_exp(__half2float(x)); }
