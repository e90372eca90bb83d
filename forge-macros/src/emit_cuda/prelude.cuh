// ---- WGSL Forge CUDA prelude: the kernel language's semantics in CUDA C++ ----
// Every operation whose C meaning differs from the language's (which the CPU oracle
// defines, after WGSL and Rust) is a function here, overloaded per type; vectors apply
// the scalar function to each component.
// - i32 arithmetic wraps: it goes through unsigned arithmetic (signed overflow is
//   undefined in C).
// - Division and remainder follow WGSL: x / 0 == x, x % 0 == 0, MIN / -1 == MIN and
//   MIN % -1 == 0.
// - Shift amounts are masked to 0..31, as Rust's wrapping shifts and WGSL do.
// - Float-to-integer casts truncate and clamp to the float values that fit, NaN to 0.
// - Float min/max ignore a NaN operand (Rust's f32::min); round is half away from zero;
//   NaN tests go through the bits.

// Vectors are aligned as WGSL aligns them (a vec2 at twice its component's size, a vec4 at
// four times; a vec3 keeps its component's, structs place it by explicit padding), so that
// loading or storing one is one instruction (`ld.global.v4.u32`), not one per component.
template <class T, int N> struct alignas(N == 3 ? alignof(T) : N * sizeof(T)) fg_vec { T v[N]; };
template <class T, unsigned N> struct fg_arr {
    T v[N];
    __device__ __forceinline__ T &operator[](unsigned i) { return v[i]; }
    __device__ __forceinline__ const T &operator[](unsigned i) const { return v[i]; }
};

#define FG_FN __device__ __forceinline__

// `HVec8::join(lo, hi)`: two vectors of four as one of eight.
template <class T> FG_FN fg_vec<T, 8> fg_join(fg_vec<T, 4> a, fg_vec<T, 4> b) {
    return fg_vec<T, 8>{{a.v[0], a.v[1], a.v[2], a.v[3], b.v[0], b.v[1], b.v[2], b.v[3]}};
}

// A vector of one value.
template <int N, class T> FG_FN fg_vec<T, N> fg_splat(T x) {
    fg_vec<T, N> r;
    for (int i = 0; i < N; ++i) r.v[i] = x;
    return r;
}
// Components picked by index: `v.zyx()`.
template <int... I, class T, int N> FG_FN fg_vec<T, sizeof...(I)> fg_swz(fg_vec<T, N> v) {
    return fg_vec<T, sizeof...(I)>{{v.v[I]...}};
}
// WGSL's `select`: both values are evaluated.
template <class T> FG_FN T fg_select(T f, T t, bool c) { return c ? t : f; }
template <class T, int N> FG_FN bool fg_all_eq(fg_vec<T, N> a, fg_vec<T, N> b) {
    bool r = true;
    for (int i = 0; i < N; ++i) r = r && a.v[i] == b.v[i];
    return r;
}

// Componentwise forms of unary and binary functions (vector op vector, vector op scalar,
// scalar op vector).
#define FG_VEC_UNARY(name)                                                              \
    template <class T, int N> FG_FN auto name(fg_vec<T, N> a)->fg_vec<decltype(name(a.v[0])), N> { \
        fg_vec<decltype(name(a.v[0])), N> r;                                            \
        for (int i = 0; i < N; ++i) r.v[i] = name(a.v[i]);                              \
        return r;                                                                       \
    }
#define FG_VEC_BINARY(name)                                                             \
    template <class T, int N> FG_FN fg_vec<T, N> name(fg_vec<T, N> a, fg_vec<T, N> b) { \
        fg_vec<T, N> r;                                                                 \
        for (int i = 0; i < N; ++i) r.v[i] = name(a.v[i], b.v[i]);                      \
        return r;                                                                       \
    }                                                                                   \
    template <class T, int N> FG_FN fg_vec<T, N> name(fg_vec<T, N> a, T b) {            \
        fg_vec<T, N> r;                                                                 \
        for (int i = 0; i < N; ++i) r.v[i] = name(a.v[i], b);                           \
        return r;                                                                       \
    }                                                                                   \
    template <class T, int N> FG_FN fg_vec<T, N> name(T a, fg_vec<T, N> b) {            \
        fg_vec<T, N> r;                                                                 \
        for (int i = 0; i < N; ++i) r.v[i] = name(a, b.v[i]);                           \
        return r;                                                                       \
    }
#define FG_VEC_TERNARY(name)                                                            \
    template <class T, int N> FG_FN fg_vec<T, N> name(fg_vec<T, N> a, fg_vec<T, N> b, fg_vec<T, N> c) { \
        fg_vec<T, N> r;                                                                 \
        for (int i = 0; i < N; ++i) r.v[i] = name(a.v[i], b.v[i], c.v[i]);              \
        return r;                                                                       \
    }

// Workgroup memory starts zeroed, as WGSL's: the invocations clear it 16 bytes a store
// (every `__shared__` array is aligned to 16), then the tail's bytes.
FG_FN void fg_zero_shared(void *p, unsigned bytes, unsigned lid, unsigned wg) {
    for (unsigned i = lid; i < bytes / 16u; i += wg) ((fg_vec<unsigned, 4> *)p)[i] = fg_vec<unsigned, 4>{};
    for (unsigned i = lid; i < bytes % 16u; i += wg) ((unsigned char *)p)[bytes / 16u * 16u + i] = 0;
}

// Asynchronous copies (`async_copy`, `async_wait`): from sm_80, an element of 4, 8 or 16
// bytes goes from global to shared memory by `cp.async`, in the background, and a wait
// closes this thread's batch (`commit_group`), waits until at most N batches are in flight
// (`wait_group`), then is a barrier, which makes every thread's copies visible to all. 16
// bytes go through L2 only (`.cg`), as a tile does not need L1; 4 and 8 (`.ca`) through
// L1, which `.cg` does not take. Elsewhere a copy is an assignment, complete at once, as
// in WGSL, and a wait is the barrier alone.
template <class T> FG_FN void fg_async_copy(T *dst, const T *src) {
#if __CUDA_ARCH__ >= 800
    if (sizeof(T) == 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src) : "memory");
        return;
    }
    if (sizeof(T) == 8 || sizeof(T) == 4) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "n"((int)sizeof(T)) : "memory");
        return;
    }
#endif
    *dst = *src;
}
template <int N> FG_FN void fg_async_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n\tcp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
    __syncthreads();
}

// ---- integer and float arithmetic ----
FG_FN unsigned fg_add(unsigned a, unsigned b) { return a + b; }
FG_FN unsigned fg_sub(unsigned a, unsigned b) { return a - b; }
FG_FN unsigned fg_mul(unsigned a, unsigned b) { return a * b; }
FG_FN unsigned fg_div(unsigned a, unsigned b) { return b == 0u ? a : a / b; }
FG_FN unsigned fg_rem(unsigned a, unsigned b) { return b == 0u ? 0u : a % b; }
FG_FN unsigned fg_neg(unsigned a) { return 0u - a; }
FG_FN int fg_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
FG_FN int fg_sub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
FG_FN int fg_mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
FG_FN int fg_div(int a, int b) {
    return (b == 0 || (a == (-2147483647 - 1) && b == -1)) ? a : a / b;
}
FG_FN int fg_rem(int a, int b) {
    return (b == 0 || (a == (-2147483647 - 1) && b == -1)) ? 0 : a % b;
}
FG_FN int fg_neg(int a) { return (int)(0u - (unsigned)a); }
FG_FN float fg_add(float a, float b) { return a + b; }
FG_FN float fg_sub(float a, float b) { return a - b; }
FG_FN float fg_mul(float a, float b) { return a * b; }
FG_FN float fg_div(float a, float b) { return a / b; }
FG_FN float fg_rem(float a, float b) { return fmodf(a, b); }
FG_FN float fg_neg(float a) { return -a; }
FG_FN double fg_add(double a, double b) { return a + b; }
FG_FN double fg_sub(double a, double b) { return a - b; }
FG_FN double fg_mul(double a, double b) { return a * b; }
FG_FN double fg_div(double a, double b) { return a / b; }
FG_FN double fg_rem(double a, double b) { return fmod(a, b); }
FG_FN double fg_neg(double a) { return -a; }
FG_FN unsigned fg_and(unsigned a, unsigned b) { return a & b; }
FG_FN unsigned fg_or(unsigned a, unsigned b) { return a | b; }
FG_FN unsigned fg_xor(unsigned a, unsigned b) { return a ^ b; }
FG_FN int fg_and(int a, int b) { return a & b; }
FG_FN int fg_or(int a, int b) { return a | b; }
FG_FN int fg_xor(int a, int b) { return a ^ b; }
FG_FN unsigned fg_not(unsigned a) { return ~a; }
FG_FN int fg_not(int a) { return ~a; }
// Shifts: the amount is masked; `>>` on i32 is arithmetic, as in Rust and WGSL.
FG_FN unsigned fg_shl(unsigned a, unsigned b) { return a << (b & 31u); }
FG_FN unsigned fg_shr(unsigned a, unsigned b) { return a >> (b & 31u); }
FG_FN int fg_shl(int a, unsigned b) { return (int)((unsigned)a << (b & 31u)); }
FG_FN int fg_shr(int a, unsigned b) { return a >> (b & 31u); }
FG_FN unsigned fg_shl(unsigned a, int b) { return fg_shl(a, (unsigned)b); }
FG_FN unsigned fg_shr(unsigned a, int b) { return fg_shr(a, (unsigned)b); }
FG_FN int fg_shl(int a, int b) { return fg_shl(a, (unsigned)b); }
FG_FN int fg_shr(int a, int b) { return fg_shr(a, (unsigned)b); }
FG_VEC_BINARY(fg_add)
FG_VEC_BINARY(fg_sub)
FG_VEC_BINARY(fg_mul)
FG_VEC_BINARY(fg_div)
FG_VEC_BINARY(fg_rem)
FG_VEC_BINARY(fg_and)
FG_VEC_BINARY(fg_or)
FG_VEC_BINARY(fg_xor)
FG_VEC_UNARY(fg_neg)
FG_VEC_UNARY(fg_not)
template <class T, int N, class S> FG_FN fg_vec<T, N> fg_shl(fg_vec<T, N> a, S b) {
    fg_vec<T, N> r;
    for (int i = 0; i < N; ++i) r.v[i] = fg_shl(a.v[i], b);
    return r;
}
template <class T, int N, class S> FG_FN fg_vec<T, N> fg_shr(fg_vec<T, N> a, S b) {
    fg_vec<T, N> r;
    for (int i = 0; i < N; ++i) r.v[i] = fg_shr(a.v[i], b);
    return r;
}
template <class T, int N, class S> FG_FN fg_vec<T, N> fg_shl(fg_vec<T, N> a, fg_vec<S, N> b) {
    fg_vec<T, N> r;
    for (int i = 0; i < N; ++i) r.v[i] = fg_shl(a.v[i], b.v[i]);
    return r;
}
template <class T, int N, class S> FG_FN fg_vec<T, N> fg_shr(fg_vec<T, N> a, fg_vec<S, N> b) {
    fg_vec<T, N> r;
    for (int i = 0; i < N; ++i) r.v[i] = fg_shr(a.v[i], b.v[i]);
    return r;
}

// ---- bits and NaN tests ----
FG_FN bool fg_isnan(float x) { return (__float_as_uint(x) & 0x7fffffffu) > 0x7f800000u; }
FG_FN bool fg_isnan(double x) {
    return ((unsigned long long)__double_as_longlong(x) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}
FG_FN bool fg_isfinite(float x) { return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u; }
FG_FN bool fg_isfinite(double x) {
    return ((unsigned long long)__double_as_longlong(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
FG_FN unsigned fg_to_bits(float x) { return __float_as_uint(x); }
FG_FN float fg_from_bits(unsigned x) { return __uint_as_float(x); }
FG_FN unsigned fg_count_ones(unsigned x) { return (unsigned)__popc(x); }
FG_FN unsigned fg_count_ones(int x) { return (unsigned)__popc((unsigned)x); }
FG_FN unsigned fg_leading_zeros(unsigned x) { return (unsigned)__clz((int)x); }
FG_FN unsigned fg_leading_zeros(int x) { return (unsigned)__clz(x); }
FG_FN unsigned fg_trailing_zeros(unsigned x) { return x == 0u ? 32u : (unsigned)(__ffs((int)x) - 1); }
FG_FN unsigned fg_trailing_zeros(int x) { return fg_trailing_zeros((unsigned)x); }
FG_FN unsigned fg_reverse_bits(unsigned x) { return __brev(x); }
FG_FN int fg_reverse_bits(int x) { return (int)__brev((unsigned)x); }
// WGSL's dot4I8Packed / dot4U8Packed: the dot product of four bytes of each operand. From
// sm_61 one `dp4a` (`__dp4a`, signed or unsigned bytes, a 32-bit sum that cannot overflow
// here); before, byte by byte.
FG_FN int fg_dot4_i8_packed(unsigned a, unsigned b) {
#if __CUDA_ARCH__ >= 610
    return __dp4a((int)a, (int)b, 0);
#else
    int r = 0;
    for (int i = 0; i < 32; i += 8) r += (int)(signed char)(a >> i) * (int)(signed char)(b >> i);
    return r;
#endif
}
FG_FN unsigned fg_dot4_u8_packed(unsigned a, unsigned b) {
#if __CUDA_ARCH__ >= 610
    return __dp4a(a, b, 0u);
#else
    unsigned r = 0u;
    for (int i = 0; i < 32; i += 8) r += ((a >> i) & 0xffu) * ((b >> i) & 0xffu);
    return r;
#endif
}
FG_VEC_UNARY(fg_count_ones)
FG_VEC_UNARY(fg_leading_zeros)
FG_VEC_UNARY(fg_trailing_zeros)
FG_VEC_UNARY(fg_reverse_bits)

// ---- casts: float to integer truncates and clamps to the float values that fit ----
FG_FN int fg_f32_to_i32(float x) {
    return fg_isnan(x) ? 0 : (int)fminf(fmaxf(x, -2147483648.0f), 2147483520.0f);
}
FG_FN unsigned fg_f32_to_u32(float x) {
    return fg_isnan(x) ? 0u : (unsigned)fminf(fmaxf(x, 0.0f), 4294967040.0f);
}
FG_FN int fg_f64_to_i32(double x) {
    return fg_isnan(x) ? 0 : (int)fmin(fmax(x, -2147483648.0), 2147483647.0);
}
FG_FN unsigned fg_f64_to_u32(double x) {
    return fg_isnan(x) ? 0u : (unsigned)fmin(fmax(x, 0.0), 4294967295.0);
}

// ---- math with Rust's meaning ----
FG_FN unsigned fg_abs(unsigned x) { return x; }
FG_FN int fg_abs(int x) { return x < 0 ? fg_neg(x) : x; }
FG_FN float fg_abs(float x) { return fabsf(x); }
FG_FN double fg_abs(double x) { return fabs(x); }
FG_FN unsigned fg_min(unsigned a, unsigned b) { return a < b ? a : b; }
FG_FN unsigned fg_max(unsigned a, unsigned b) { return a > b ? a : b; }
FG_FN int fg_min(int a, int b) { return a < b ? a : b; }
FG_FN int fg_max(int a, int b) { return a > b ? a : b; }
// A NaN operand, signalling ones too (which C's fminf may turn into a NaN result), gives
// the other operand.
FG_FN float fg_min(float a, float b) { return fg_isnan(a) ? b : fg_isnan(b) ? a : fminf(a, b); }
FG_FN float fg_max(float a, float b) { return fg_isnan(a) ? b : fg_isnan(b) ? a : fmaxf(a, b); }
FG_FN double fg_min(double a, double b) { return fg_isnan(a) ? b : fg_isnan(b) ? a : fmin(a, b); }
FG_FN double fg_max(double a, double b) { return fg_isnan(a) ? b : fg_isnan(b) ? a : fmax(a, b); }
// Rust's clamp passes NaN through and never reorders its bounds; the integer form is
// min(max(x, lo), hi), as WGSL's.
FG_FN float fg_clamp(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
FG_FN double fg_clamp(double x, double lo, double hi) { return x < lo ? lo : (x > hi ? hi : x); }
FG_FN unsigned fg_clamp(unsigned x, unsigned lo, unsigned hi) { return fg_min(fg_max(x, lo), hi); }
FG_FN int fg_clamp(int x, int lo, int hi) { return fg_min(fg_max(x, lo), hi); }
FG_FN float fg_sqrt(float x) { return sqrtf(x); }
FG_FN double fg_sqrt(double x) { return sqrt(x); }
FG_FN float fg_exp(float x) { return expf(x); }
FG_FN float fg_exp2(float x) { return exp2f(x); }
FG_FN float fg_ln(float x) { return logf(x); }
FG_FN float fg_log2(float x) { return log2f(x); }
FG_FN float fg_log10(float x) { return log10f(x); }
FG_FN float fg_sin(float x) { return sinf(x); }
FG_FN float fg_cos(float x) { return cosf(x); }
FG_FN float fg_tan(float x) { return tanf(x); }
FG_FN float fg_tanh(float x) { return tanhf(x); }
FG_FN float fg_asin(float x) { return asinf(x); }
FG_FN float fg_acos(float x) { return acosf(x); }
FG_FN float fg_atan(float x) { return atanf(x); }
FG_FN float fg_sinh(float x) { return sinhf(x); }
FG_FN float fg_cosh(float x) { return coshf(x); }
FG_FN float fg_asinh(float x) { return asinhf(x); }
FG_FN float fg_acosh(float x) { return acoshf(x); }
FG_FN float fg_atanh(float x) { return atanhf(x); }
FG_FN float fg_atan2(float y, float x) { return atan2f(y, x); }
// C's pow is Rust's powf, special cases included.
FG_FN float fg_powf(float x, float y) { return powf(x, y); }
FG_FN float fg_powi(float x, int n) { return powf(x, (float)n); }
// C's hypot: an infinity wins over a NaN, no overflow in the squares, as Rust's.
FG_FN float fg_hypot(float x, float y) { return hypotf(x, y); }
FG_FN double fg_hypot(double x, double y) { return hypot(x, y); }
FG_FN float fg_floor(float x) { return floorf(x); }
FG_FN float fg_ceil(float x) { return ceilf(x); }
FG_FN float fg_trunc(float x) { return truncf(x); }
FG_FN float fg_round(float x) { return roundf(x); }
FG_FN float fg_round_ties_even(float x) { return rintf(x); }
FG_FN float fg_fract(float x) { return x - truncf(x); }
FG_FN double fg_floor(double x) { return floor(x); }
FG_FN double fg_ceil(double x) { return ceil(x); }
FG_FN double fg_trunc(double x) { return trunc(x); }
FG_FN double fg_round(double x) { return round(x); }
FG_FN double fg_round_ties_even(double x) { return rint(x); }
FG_FN double fg_fract(double x) { return x - trunc(x); }
FG_FN float fg_mul_add(float a, float b, float c) { return fmaf(a, b, c); }
FG_FN double fg_mul_add(double a, double b, double c) { return fma(a, b, c); }
// Rust's signum: +0.0 gives 1.0, -0.0 gives -1.0, NaN stays NaN.
FG_FN float fg_signum(float x) { return fg_isnan(x) ? x : copysignf(1.0f, x); }
FG_FN double fg_signum(double x) { return fg_isnan(x) ? x : copysign(1.0, x); }
FG_FN int fg_signum(int x) { return (x > 0) - (x < 0); }
FG_FN float fg_recip(float x) { return 1.0f / x; }
FG_FN double fg_recip(double x) { return 1.0 / x; }
FG_FN unsigned fg_div_ceil(unsigned a, unsigned b) { return fg_div(a, b) + (fg_rem(a, b) != 0u ? 1u : 0u); }
FG_FN unsigned fg_rem_euclid(unsigned x, unsigned y) { return fg_rem(x, y); }
FG_FN int fg_rem_euclid(int x, int y) {
    int r = fg_rem(x, y);
    return r < 0 ? fg_add(r, fg_abs(y)) : r;
}
FG_FN float fg_rem_euclid(float x, float y) {
    float r = fmodf(x, y);
    return r < 0.0f ? r + fabsf(y) : r;
}
FG_FN double fg_rem_euclid(double x, double y) {
    double r = fmod(x, y);
    return r < 0.0 ? r + fabs(y) : r;
}
FG_FN float fg_to_degrees(float x) { return x * 57.2957795f; }
FG_FN double fg_to_degrees(double x) { return x * 57.29577951308232; }
FG_FN float fg_to_radians(float x) { return x * 0.0174532924f; }
FG_FN double fg_to_radians(double x) { return x * 0.017453292519943295; }
FG_VEC_UNARY(fg_abs)
FG_VEC_BINARY(fg_min)
FG_VEC_BINARY(fg_max)
FG_VEC_TERNARY(fg_clamp)
FG_VEC_TERNARY(fg_mul_add)
FG_VEC_UNARY(fg_sqrt)
FG_VEC_UNARY(fg_exp)
FG_VEC_UNARY(fg_exp2)
FG_VEC_UNARY(fg_ln)
FG_VEC_UNARY(fg_log2)
FG_VEC_UNARY(fg_log10)
FG_VEC_UNARY(fg_sin)
FG_VEC_UNARY(fg_cos)
FG_VEC_UNARY(fg_tan)
FG_VEC_UNARY(fg_tanh)
FG_VEC_UNARY(fg_asin)
FG_VEC_UNARY(fg_acos)
FG_VEC_UNARY(fg_atan)
FG_VEC_UNARY(fg_sinh)
FG_VEC_UNARY(fg_cosh)
FG_VEC_UNARY(fg_asinh)
FG_VEC_UNARY(fg_acosh)
FG_VEC_UNARY(fg_atanh)
FG_VEC_BINARY(fg_atan2)
FG_VEC_BINARY(fg_powf)
FG_VEC_BINARY(fg_hypot)
FG_VEC_UNARY(fg_floor)
FG_VEC_UNARY(fg_ceil)
FG_VEC_UNARY(fg_trunc)
FG_VEC_UNARY(fg_round)
FG_VEC_UNARY(fg_round_ties_even)
FG_VEC_UNARY(fg_fract)
FG_VEC_UNARY(fg_signum)
FG_VEC_UNARY(fg_recip)
FG_VEC_BINARY(fg_rem_euclid)
FG_VEC_UNARY(fg_to_degrees)
FG_VEC_UNARY(fg_to_radians)
FG_VEC_UNARY(fg_isnan)
FG_VEC_UNARY(fg_isfinite)

// ---- vector geometry ----
template <class T, int N> FG_FN T fg_dot(fg_vec<T, N> a, fg_vec<T, N> b) {
    T r = fg_mul(a.v[0], b.v[0]);
    for (int i = 1; i < N; ++i) r = fg_add(r, fg_mul(a.v[i], b.v[i]));
    return r;
}
template <class T, int N> FG_FN T fg_length(fg_vec<T, N> a) { return fg_sqrt(fg_dot(a, a)); }
template <class T, int N> FG_FN fg_vec<T, N> fg_normalize(fg_vec<T, N> a) {
    return fg_div(a, fg_length(a));
}
template <class T, int N> FG_FN T fg_distance(fg_vec<T, N> a, fg_vec<T, N> b) {
    return fg_length(fg_sub(a, b));
}
template <class T> FG_FN fg_vec<T, 3> fg_cross(fg_vec<T, 3> a, fg_vec<T, 3> b) {
    return fg_vec<T, 3>{{fg_sub(fg_mul(a.v[1], b.v[2]), fg_mul(a.v[2], b.v[1])),
                         fg_sub(fg_mul(a.v[2], b.v[0]), fg_mul(a.v[0], b.v[2])),
                         fg_sub(fg_mul(a.v[0], b.v[1]), fg_mul(a.v[1], b.v[0]))}};
}

// ---- atomics on f32, stored as their bits: compare-exchange loops ----
template <class F> FG_FN float fg_atomic_update_f32(float *p, F update) {
    unsigned *bits = (unsigned *)p;
    unsigned old = *(volatile unsigned *)bits;
    for (;;) {
        unsigned next = __float_as_uint(update(__uint_as_float(old)));
        unsigned seen = atomicCAS(bits, old, next);
        if (seen == old) return __uint_as_float(old);
        old = seen;
    }
}
FG_FN float fg_atomic_min_f32(float *p, float v) {
    return fg_atomic_update_f32(p, [=](float o) { return fg_min(o, v); });
}
FG_FN float fg_atomic_max_f32(float *p, float v) {
    return fg_atomic_update_f32(p, [=](float o) { return fg_max(o, v); });
}
FG_FN float fg_atomic_sub_f32(float *p, float v) {
    return fg_atomic_update_f32(p, [=](float o) { return o - v; });
}
template <class T> FG_FN T fg_atomic_load(T *p) { return *(volatile T *)p; }

// ---- subgroups: warps of 32 lanes; `mask` holds the lanes the workgroup has ----
template <class T> FG_FN T fg_shfl(unsigned mask, T v, unsigned lane) { return __shfl_sync(mask, v, lane); }
template <class T> FG_FN T fg_shfl_up(unsigned mask, T v, unsigned d) { return __shfl_up_sync(mask, v, d); }
template <class T> FG_FN T fg_shfl_down(unsigned mask, T v, unsigned d) { return __shfl_down_sync(mask, v, d); }
template <class T> FG_FN T fg_shfl_xor(unsigned mask, T v, unsigned m) { return __shfl_xor_sync(mask, v, m); }
FG_FN bool fg_shfl(unsigned mask, bool v, unsigned lane) { return __shfl_sync(mask, (int)v, lane) != 0; }
FG_FN bool fg_shfl_up(unsigned mask, bool v, unsigned d) { return __shfl_up_sync(mask, (int)v, d) != 0; }
FG_FN bool fg_shfl_down(unsigned mask, bool v, unsigned d) { return __shfl_down_sync(mask, (int)v, d) != 0; }
FG_FN bool fg_shfl_xor(unsigned mask, bool v, unsigned m) { return __shfl_xor_sync(mask, (int)v, m) != 0; }
#define FG_VEC_SHFL(name)                                                               \
    template <class T, int N> FG_FN fg_vec<T, N> name(unsigned mask, fg_vec<T, N> v, unsigned x) { \
        fg_vec<T, N> r;                                                                 \
        for (int i = 0; i < N; ++i) r.v[i] = name(mask, v.v[i], x);                     \
        return r;                                                                       \
    }
FG_VEC_SHFL(fg_shfl)
FG_VEC_SHFL(fg_shfl_up)
FG_VEC_SHFL(fg_shfl_down)
FG_VEC_SHFL(fg_shfl_xor)
struct fg_op_add { template <class T> FG_FN T operator()(T a, T b) const { return fg_add(a, b); } };
struct fg_op_sub { template <class T> FG_FN T operator()(T a, T b) const { return fg_sub(a, b); } };
struct fg_op_mul { template <class T> FG_FN T operator()(T a, T b) const { return fg_mul(a, b); } };
struct fg_op_min { template <class T> FG_FN T operator()(T a, T b) const { return fg_min(a, b); } };
struct fg_op_max { template <class T> FG_FN T operator()(T a, T b) const { return fg_max(a, b); } };
struct fg_op_and { template <class T> FG_FN T operator()(T a, T b) const { return fg_and(a, b); } };
struct fg_op_or { template <class T> FG_FN T operator()(T a, T b) const { return fg_or(a, b); } };
struct fg_op_xor { template <class T> FG_FN T operator()(T a, T b) const { return fg_xor(a, b); } };
// The inclusive scan over the lanes 0..=lane (the mask's lanes are a prefix: lanes
// 0..k of the warp), by shuffles up; every source lane is in the mask.
template <class Op, class T> FG_FN T fg_sg_inclusive(unsigned mask, unsigned lane, T v, Op op) {
    for (unsigned d = 1u; d < 32u; d <<= 1) {
        T t = fg_shfl_up(mask, v, d);
        if (lane >= d) v = op(v, t);
    }
    return v;
}
// The whole subgroup's reduction. A full warp (the mask is a constant where `WG` is a
// multiple of 32) reduces by butterfly: five shuffles and no lane test, every lane ending
// with the same total (each step combines `a` and `b` on one lane and `b` and `a` on its
// partner, which commutative operations make equal). A partial warp (a workgroup's last
// lanes) takes the last lane's inclusive scan.
template <class Op, class T> FG_FN T fg_sg_reduce(unsigned mask, unsigned lane, T v, Op op) {
    if (mask == 0xffffffffu) {
        for (unsigned d = 16u; d >= 1u; d >>= 1) v = op(v, fg_shfl_xor(mask, v, d));
        return v;
    }
    T s = fg_sg_inclusive(mask, lane, v, op);
    return fg_shfl(mask, s, 31u - (unsigned)__clz((int)mask));
}
// 32-bit integer sums, minima, maxima and bitwise operations: one `redux.sync` from sm_80,
// which takes any mask.
#if __CUDA_ARCH__ >= 800
#define FG_REDUX(op, T, intrinsic) \
    FG_FN T fg_sg_reduce(unsigned mask, unsigned, T v, op) { return intrinsic(mask, v); }
FG_REDUX(fg_op_add, int, __reduce_add_sync)
FG_REDUX(fg_op_add, unsigned, __reduce_add_sync)
FG_REDUX(fg_op_min, int, __reduce_min_sync)
FG_REDUX(fg_op_min, unsigned, __reduce_min_sync)
FG_REDUX(fg_op_max, int, __reduce_max_sync)
FG_REDUX(fg_op_max, unsigned, __reduce_max_sync)
FG_REDUX(fg_op_and, unsigned, __reduce_and_sync)
FG_REDUX(fg_op_or, unsigned, __reduce_or_sync)
FG_REDUX(fg_op_xor, unsigned, __reduce_xor_sync)
#undef FG_REDUX
#endif
// The exclusive scan: the previous lane's inclusive one, `identity` on lane 0.
template <class Op, class T> FG_FN T fg_sg_exclusive(unsigned mask, unsigned lane, T v, Op op, T identity) {
    T s = fg_sg_inclusive(mask, lane, v, op);
    T prev = fg_shfl_up(mask, s, 1u);
    return lane == 0u ? identity : prev;
}
// ---- end of the prelude ----
