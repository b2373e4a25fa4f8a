// AVX2 softmax with an expf equal to glibc's (kernels/softmax.hpp). Compiled with AVX2, FMA and
// F16C flags and -ffp-contract=off (kernels/CMakeLists.txt): every multiply-add below that glibc
// fuses is an explicit FMA, and nothing else is fused.
//
// glibc's expf (sysdeps/ieee754/flt-32/e_expf.c, built with -mfma -mavx2 for its __expf_fma),
// for |x| < 88 and the rest of the range where the result is a finite nonzero float:
//   xd = (double)x;  kd' = fma(N/ln2, xd, 0x1.8p52);  ki = bits(kd');  kd = kd' − 0x1.8p52
//   r = fma(N/ln2, xd, −kd)            (the compiler fused z = N/ln2 · xd into both uses)
//   s = bits(T[ki mod 32] + (ki << 47))                       (2^(kd/32), N = 32)
//   y = fma(fma(C0, r, C1), r·r, fma(C2, r, 1)) · s;  return (float)y
// and outside it: NaN → x + x, x > 0x1.62e42ep6 → inf, x < −0x1.9fe368p6 (−inf too) → 0,
// x < −0x1.9d1d9ep6 → 0x1p-149 (its may-underflow path returns 0x1.4p-75f squared).
// The constants and the table are glibc's (kernels/cpu/expf_glibc_data.hpp). Each lane below runs
// those operations on doubles in the same order, so the rounding of each step, and the result,
// are libm's; kernels/softmax.cpp still compares the two once per process.
#include "kernels/cpu/expf_glibc_data.hpp"
#include "kernels/cpu/softmax_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

#include <cstdint>
#include <limits>

namespace bitnet::kernels::cpu {
namespace {

namespace g = glibc_expf;

inline __m256d from_bits(std::uint64_t b) {
    return _mm256_castsi256_pd(_mm256_set1_epi64x(static_cast<long long>(b)));
}

inline __m128 from_bits_ps(std::uint32_t b) {
    return _mm_castsi128_ps(_mm_set1_epi32(static_cast<int>(b)));
}

// The main path of glibc's expf for four inputs already in double.
inline __m256d exp_main4(__m256d xd) {
    const __m256d inv_ln2_n = from_bits(g::inv_ln2_n);
    const __m256d shift = from_bits(g::shift);
    const __m256d c0 = from_bits(g::c0);
    const __m256d c1 = from_bits(g::c1);
    const __m256d c2 = from_bits(g::c2);
    const __m256d one = _mm256_set1_pd(1.0);
    const __m256d kd_shifted = _mm256_fmadd_pd(inv_ln2_n, xd, shift);
    const __m256i ki = _mm256_castpd_si256(kd_shifted);
    const __m256d kd = _mm256_sub_pd(kd_shifted, shift);
    const __m256d r = _mm256_fmsub_pd(inv_ln2_n, xd, kd);
    const __m256i index = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
    const __m256i t = _mm256_add_epi64(
        _mm256_i64gather_epi64(reinterpret_cast<const long long*>(g::exp2_table), index, 8),
        _mm256_slli_epi64(ki, 47));
    const __m256d z = _mm256_fmadd_pd(c0, r, c1);
    const __m256d r2 = _mm256_mul_pd(r, r);
    __m256d y = _mm256_fmadd_pd(c2, r, one);
    y = _mm256_fmadd_pd(z, r2, y);
    return _mm256_mul_pd(y, _mm256_castsi256_pd(t));
}

// glibc's expf of four floats, special ranges included.
inline __m128 exp4(__m128 x) {
    __m128 y = _mm256_cvtpd_ps(exp_main4(_mm256_cvtps_pd(x)));
    const __m128 tiny = _mm_cmp_ps(x, from_bits_ps(g::subnormal_below), _CMP_LT_OQ);
    y = _mm_blendv_ps(y, from_bits_ps(0x00000001), tiny);
    const __m128 under = _mm_cmp_ps(x, from_bits_ps(g::underflow_below), _CMP_LT_OQ);
    y = _mm_blendv_ps(y, _mm_setzero_ps(), under);
    const __m128 over = _mm_cmp_ps(x, from_bits_ps(g::overflow_above), _CMP_GT_OQ);
    y = _mm_blendv_ps(y, from_bits_ps(0x7f800000), over);
    const __m128 nan = _mm_cmp_ps(x, x, _CMP_UNORD_Q);
    return _mm_blendv_ps(y, _mm_add_ps(x, x), nan);
}

inline __m256 exp8(__m256 x) {
    const __m128 lo = exp4(_mm256_castps256_ps128(x));
    const __m128 hi = exp4(_mm256_extractf128_ps(x, 1));
    return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
}

// Lanes [0, n) of a row, n < 8, loaded with the rest filled by `fill`.
inline __m256 load_partial(const float* p, std::size_t n, float fill) {
    alignas(32) float tmp[8];
    for (std::size_t i = 0; i < 8; ++i)
        tmp[i] = i < n ? p[i] : fill;
    return _mm256_load_ps(tmp);
}

inline void store_partial(float* p, std::size_t n, __m256 v) {
    alignas(32) float tmp[8];
    _mm256_store_ps(tmp, v);
    for (std::size_t i = 0; i < n; ++i)
        p[i] = tmp[i];
}

// max over a row, skipping NaNs as std::max(m, x) does (vmaxps returns its second operand when
// either is NaN). Which zero is kept when the max is ±0 may differ from the scalar scan; x − m
// and so expf(x − m) are the same for either.
float row_max(const float* row, std::size_t n) {
    __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    std::size_t p = 0;
    for (; p + 8 <= n; p += 8)
        m = _mm256_max_ps(_mm256_loadu_ps(row + p), m);
    if (p < n)
        m = _mm256_max_ps(load_partial(row + p, n - p, -std::numeric_limits<float>::infinity()), m);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, m);
    float r = -std::numeric_limits<float>::infinity();
    for (const float v : lanes)
        r = v > r ? v : r;
    return r;
}

void exp_minus_max(float* row, std::size_t n, float max_s) {
    const __m256 m = _mm256_set1_ps(max_s);
    std::size_t p = 0;
    for (; p + 8 <= n; p += 8)
        _mm256_storeu_ps(row + p, exp8(_mm256_sub_ps(_mm256_loadu_ps(row + p), m)));
    if (p < n)
        store_partial(row + p, n - p, exp8(_mm256_sub_ps(load_partial(row + p, n - p, 0.0f), m)));
}

void scale_row(float* row, std::size_t n, float inv, bool round_f16) {
    const __m256 v_inv = _mm256_set1_ps(inv);
    auto scaled = [&](__m256 e) {
        __m256 v = _mm256_mul_ps(e, v_inv);
        if (round_f16)
            v = _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        return v;
    };
    std::size_t p = 0;
    for (; p + 8 <= n; p += 8)
        _mm256_storeu_ps(row + p, scaled(_mm256_loadu_ps(row + p)));
    if (p < n)
        store_partial(row + p, n - p, scaled(load_partial(row + p, n - p, 0.0f)));
}

// The double sums of up to four rows side by side: each row's additions stay in position order,
// but the rows' dependency chains overlap instead of waiting on one another.
template <std::size_t R>
void row_sums(const float* s, std::size_t n, double* sums) {
    double acc[R] = {};
    for (std::size_t p = 0; p < n; ++p)
        for (std::size_t r = 0; r < R; ++r)
            acc[r] += static_cast<double>(s[r * n + p]);
    for (std::size_t r = 0; r < R; ++r)
        sums[r] = acc[r];
}

} // namespace

void expf_rows_avx2(const float* x, float* y, std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, exp8(_mm256_loadu_ps(x + i)));
    if (i < n)
        store_partial(y + i, n - i, exp8(load_partial(x + i, n - i, 0.0f)));
}

void softmax_rows_avx2(float* s, std::size_t n_rows, std::size_t n, bool round_f16) {
    for (std::size_t r0 = 0; r0 < n_rows; r0 += 4) {
        const std::size_t rows = n_rows - r0 < 4 ? n_rows - r0 : 4;
        float* tile = s + r0 * n;
        for (std::size_t r = 0; r < rows; ++r)
            exp_minus_max(tile + r * n, n, row_max(tile + r * n, n));
        double sums[4];
        switch (rows) {
        case 1:
            row_sums<1>(tile, n, sums);
            break;
        case 2:
            row_sums<2>(tile, n, sums);
            break;
        case 3:
            row_sums<3>(tile, n, sums);
            break;
        default:
            row_sums<4>(tile, n, sums);
            break;
        }
        for (std::size_t r = 0; r < rows; ++r)
            scale_row(tile + r * n, n, static_cast<float>(1.0 / sums[r]), round_f16);
    }
}

} // namespace bitnet::kernels::cpu
