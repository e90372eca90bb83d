// ---- WGSL's builtins that no Rust method means (`first_leading_bit(x)`, `mix(a, b, t)`,
// ...), with the results the language picks where WGSL leaves a choice (the oracle's
// `oracle::wgsl` defines them): min and max ignore a NaN operand, sign(±0) is 0. ----
FG_FN float fg_clamp_min_max(float x, float lo, float hi) { return fg_min(fg_max(x, lo), hi); }
FG_FN unsigned fg_clamp_min_max(unsigned x, unsigned lo, unsigned hi) { return fg_min(fg_max(x, lo), hi); }
FG_FN int fg_clamp_min_max(int x, int lo, int hi) { return fg_min(fg_max(x, lo), hi); }
FG_FN float fg_fract_floor(float x) { return x - floorf(x); }
FG_FN float fg_sign(float x) { return fg_isnan(x) ? x : (x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f)); }
FG_FN int fg_sign(int x) { return (x > 0) - (x < 0); }
// A division, not CUDA's rsqrtf: WGSL allows 2 ulp, and this is within 1.
FG_FN float fg_inverse_sqrt(float x) { return 1.0f / sqrtf(x); }
FG_FN float fg_saturate(float x) { return fg_clamp_min_max(x, 0.0f, 1.0f); }
FG_FN float fg_step(float edge, float x) { return edge <= x ? 1.0f : 0.0f; }
// Written as the oracle's order of operations, each rounded (no contraction into fma).
FG_FN float fg_mix(float a, float b, float t) { return __fadd_rn(__fmul_rn(a, __fsub_rn(1.0f, t)), __fmul_rn(b, t)); }
FG_FN float fg_smoothstep(float lo, float hi, float x) {
    float t = fg_saturate(__fdiv_rn(__fsub_rn(x, lo), __fsub_rn(hi, lo)));
    return __fmul_rn(__fmul_rn(t, t), __fsub_rn(3.0f, __fmul_rn(2.0f, t)));
}
// x·2^e in double (exact) then rounded once, as the oracle; e beyond ±350 changes nothing.
FG_FN float fg_ldexp(float x, int e) {
    e = e < -350 ? -350 : (e > 350 ? 350 : e);
    return (float)((double)x * ldexp(1.0, e));
}
FG_FN float fg_quantize_to_f16(float x) { return __half2float(__float2half_rn(x)); }
FG_FN float fg_frexp_fract(float x) {
    if (x == 0.0f || !fg_isfinite(x)) return x;
    int e;
    return frexpf(x, &e);
}
FG_FN int fg_frexp_exp(float x) {
    if (x == 0.0f || !fg_isfinite(x)) return 0;
    int e;
    frexpf(x, &e);
    return e;
}
FG_FN unsigned fg_count_one_bits(unsigned x) { return (unsigned)__popc(x); }
FG_FN int fg_count_one_bits(int x) { return __popc((unsigned)x); }
FG_FN unsigned fg_count_leading_zeros(unsigned x) { return (unsigned)__clz((int)x); }
FG_FN int fg_count_leading_zeros(int x) { return __clz(x); }
FG_FN unsigned fg_count_trailing_zeros(unsigned x) { return fg_trailing_zeros(x); }
FG_FN int fg_count_trailing_zeros(int x) { return (int)fg_trailing_zeros(x); }
FG_FN unsigned fg_first_leading_bit(unsigned x) { return x == 0u ? 0xffffffffu : 31u - (unsigned)__clz((int)x); }
// Of a negative i32, the most significant 0 bit.
FG_FN int fg_first_leading_bit(int x) {
    unsigned b = x < 0 ? ~(unsigned)x : (unsigned)x;
    return b == 0u ? -1 : 31 - __clz((int)b);
}
FG_FN unsigned fg_first_trailing_bit(unsigned x) { return x == 0u ? 0xffffffffu : (unsigned)(__ffs((int)x) - 1); }
FG_FN int fg_first_trailing_bit(int x) { return x == 0 ? -1 : __ffs(x) - 1; }
// WGSL's offset and count: o = min(offset, 32), c = min(count, 32 - o).
FG_FN unsigned fg_extract_bits(unsigned x, unsigned offset, unsigned count) {
    unsigned o = offset < 32u ? offset : 32u, c = count < 32u - o ? count : 32u - o;
    return c == 0u ? 0u : (x << (32u - o - c)) >> (32u - c);
}
FG_FN int fg_extract_bits(int x, unsigned offset, unsigned count) {
    unsigned o = offset < 32u ? offset : 32u, c = count < 32u - o ? count : 32u - o;
    return c == 0u ? 0 : (int)((unsigned)x << (32u - o - c)) >> (32u - c);
}
FG_FN unsigned fg_insert_bits(unsigned x, unsigned bits, unsigned offset, unsigned count) {
    unsigned o = offset < 32u ? offset : 32u, c = count < 32u - o ? count : 32u - o;
    if (c == 0u) return x;
    unsigned mask = (0xffffffffu >> (32u - c)) << o;
    return (x & ~mask) | ((bits << o) & mask);
}
FG_FN int fg_insert_bits(int x, int bits, unsigned offset, unsigned count) {
    return (int)fg_insert_bits((unsigned)x, (unsigned)bits, offset, count);
}
// ---- packing: floor(0.5 + scale·clamp(x)), the first component in the low bits ----
// Each step rounded, as the oracle and the WGSL compute it (no contraction into fma).
FG_FN unsigned fg_snorm(float x, float scale, unsigned mask) {
    return (unsigned)(int)floorf(__fadd_rn(0.5f, __fmul_rn(scale, fg_clamp_min_max(x, -1.0f, 1.0f)))) & mask;
}
FG_FN unsigned fg_unorm(float x, float scale) {
    return (unsigned)floorf(__fadd_rn(0.5f, __fmul_rn(scale, fg_clamp_min_max(x, 0.0f, 1.0f))));
}
FG_FN unsigned fg_pack4x8snorm(fg_vec<float, 4> v) {
    unsigned r = 0u;
    for (int i = 0; i < 4; ++i) r |= fg_snorm(v.v[i], 127.0f, 0xffu) << (8 * i);
    return r;
}
FG_FN unsigned fg_pack4x8unorm(fg_vec<float, 4> v) {
    unsigned r = 0u;
    for (int i = 0; i < 4; ++i) r |= fg_unorm(v.v[i], 255.0f) << (8 * i);
    return r;
}
FG_FN unsigned fg_pack2x16snorm(fg_vec<float, 2> v) {
    return fg_snorm(v.v[0], 32767.0f, 0xffffu) | (fg_snorm(v.v[1], 32767.0f, 0xffffu) << 16);
}
FG_FN unsigned fg_pack2x16unorm(fg_vec<float, 2> v) {
    return fg_unorm(v.v[0], 65535.0f) | (fg_unorm(v.v[1], 65535.0f) << 16);
}
FG_FN unsigned fg_pack2x16float(fg_vec<float, 2> v) {
    return (unsigned)__half_as_ushort(__float2half_rn(v.v[0])) | ((unsigned)__half_as_ushort(__float2half_rn(v.v[1])) << 16);
}
FG_FN unsigned fg_pack4x_i8(fg_vec<int, 4> v) {
    unsigned r = 0u;
    for (int i = 0; i < 4; ++i) r |= ((unsigned)v.v[i] & 0xffu) << (8 * i);
    return r;
}
FG_FN unsigned fg_pack4x_u8(fg_vec<unsigned, 4> v) {
    unsigned r = 0u;
    for (int i = 0; i < 4; ++i) r |= (v.v[i] & 0xffu) << (8 * i);
    return r;
}
FG_FN unsigned fg_pack4x_i8_clamp(fg_vec<int, 4> v) {
    unsigned r = 0u;
    for (int i = 0; i < 4; ++i) r |= ((unsigned)fg_clamp_min_max(v.v[i], -128, 127) & 0xffu) << (8 * i);
    return r;
}
FG_FN unsigned fg_pack4x_u8_clamp(fg_vec<unsigned, 4> v) {
    unsigned r = 0u;
    for (int i = 0; i < 4; ++i) r |= fg_min(v.v[i], 255u) << (8 * i);
    return r;
}
FG_FN fg_vec<float, 4> fg_unpack4x8snorm(unsigned u) {
    fg_vec<float, 4> r;
    for (int i = 0; i < 4; ++i) r.v[i] = fg_max(__fdiv_rn((float)(signed char)(u >> (8 * i)), 127.0f), -1.0f);
    return r;
}
FG_FN fg_vec<float, 4> fg_unpack4x8unorm(unsigned u) {
    fg_vec<float, 4> r;
    for (int i = 0; i < 4; ++i) r.v[i] = __fdiv_rn((float)((u >> (8 * i)) & 0xffu), 255.0f);
    return r;
}
FG_FN fg_vec<float, 2> fg_unpack2x16snorm(unsigned u) {
    fg_vec<float, 2> r;
    for (int i = 0; i < 2; ++i) r.v[i] = fg_max(__fdiv_rn((float)(short)(u >> (16 * i)), 32767.0f), -1.0f);
    return r;
}
FG_FN fg_vec<float, 2> fg_unpack2x16unorm(unsigned u) {
    fg_vec<float, 2> r;
    for (int i = 0; i < 2; ++i) r.v[i] = __fdiv_rn((float)((u >> (16 * i)) & 0xffffu), 65535.0f);
    return r;
}
FG_FN fg_vec<float, 2> fg_unpack2x16float(unsigned u) {
    fg_vec<float, 2> r;
    for (int i = 0; i < 2; ++i) r.v[i] = __half2float(__ushort_as_half((unsigned short)(u >> (16 * i))));
    return r;
}
FG_FN fg_vec<int, 4> fg_unpack4x_i8(unsigned u) {
    fg_vec<int, 4> r;
    for (int i = 0; i < 4; ++i) r.v[i] = (int)(signed char)(u >> (8 * i));
    return r;
}
FG_FN fg_vec<unsigned, 4> fg_unpack4x_u8(unsigned u) {
    fg_vec<unsigned, 4> r;
    for (int i = 0; i < 4; ++i) r.v[i] = (u >> (8 * i)) & 0xffu;
    return r;
}
// ---- vector forms: componentwise, scalar arguments to each component ----
FG_VEC_TERNARY(fg_clamp_min_max)
FG_VEC_UNARY(fg_fract_floor)
FG_VEC_UNARY(fg_sign)
FG_VEC_UNARY(fg_inverse_sqrt)
FG_VEC_UNARY(fg_saturate)
FG_VEC_BINARY(fg_step)
FG_VEC_TERNARY(fg_mix)
FG_VEC_TERNARY(fg_smoothstep)
FG_VEC_UNARY(fg_quantize_to_f16)
FG_VEC_UNARY(fg_frexp_fract)
FG_VEC_UNARY(fg_frexp_exp)
FG_VEC_UNARY(fg_count_one_bits)
FG_VEC_UNARY(fg_count_leading_zeros)
FG_VEC_UNARY(fg_count_trailing_zeros)
FG_VEC_UNARY(fg_first_leading_bit)
FG_VEC_UNARY(fg_first_trailing_bit)
template <class T, int N, class E> FG_FN fg_vec<T, N> fg_ldexp(fg_vec<T, N> x, fg_vec<E, N> e) {
    fg_vec<T, N> r;
    for (int i = 0; i < N; ++i) r.v[i] = fg_ldexp(x.v[i], e.v[i]);
    return r;
}
template <class T, int N> FG_FN fg_vec<T, N> fg_extract_bits(fg_vec<T, N> x, unsigned o, unsigned c) {
    fg_vec<T, N> r;
    for (int i = 0; i < N; ++i) r.v[i] = fg_extract_bits(x.v[i], o, c);
    return r;
}
template <class T, int N> FG_FN fg_vec<T, N> fg_insert_bits(fg_vec<T, N> x, fg_vec<T, N> b, unsigned o, unsigned c) {
    fg_vec<T, N> r;
    for (int i = 0; i < N; ++i) r.v[i] = fg_insert_bits(x.v[i], b.v[i], o, c);
    return r;
}
// ---- vector geometry ----
template <class T, int N> FG_FN fg_vec<T, N> fg_face_forward(fg_vec<T, N> n, fg_vec<T, N> i, fg_vec<T, N> nref) {
    return fg_dot(nref, i) < (T)0.0f ? n : fg_neg(n);
}
template <class T, int N> FG_FN fg_vec<T, N> fg_reflect(fg_vec<T, N> i, fg_vec<T, N> n) {
    T d = fg_dot(n, i);
    fg_vec<T, N> r;
    for (int c = 0; c < N; ++c) r.v[c] = fg_sub(i.v[c], fg_mul(fg_mul((T)2.0f, d), n.v[c]));
    return r;
}
template <class T, int N> FG_FN fg_vec<T, N> fg_refract(fg_vec<T, N> i, fg_vec<T, N> n, T eta) {
    T d = fg_dot(n, i);
    T k = fg_sub((T)1.0f, fg_mul(fg_mul(eta, eta), fg_sub((T)1.0f, fg_mul(d, d))));
    fg_vec<T, N> r;
    if (k < (T)0.0f) {
        for (int c = 0; c < N; ++c) r.v[c] = (T)0.0f;
        return r;
    }
    T s = fg_add(fg_mul(eta, d), fg_sqrt(k));
    for (int c = 0; c < N; ++c) r.v[c] = fg_sub(fg_mul(eta, i.v[c]), fg_mul(s, n.v[c]));
    return r;
}
