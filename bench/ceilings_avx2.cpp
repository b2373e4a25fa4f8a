// Throughput loops for the AVX2 ceilings (compiled with -mavx2 -mfma; called only when CPUID says
// the CPU has them).
#include "kernels/cpu/x86_intrinsics.hpp"

#include <cstdint>

namespace bitnet::bench::detail {

// vpmaddubsw: 32 u8 x s8 products summed in pairs to 16 int16 (32 MACs an instruction). Its
// int16 sums are widened with vpmaddwd every 4 steps, as a real kernel must, which the count
// includes in the time but not in the MACs.
std::int64_t maddubs_ymm_loop(std::int64_t iters) {
    __m256i acc[8];
    for (auto& a : acc)
        a = _mm256_setzero_si256();
    const __m256i x = _mm256_set1_epi8(1), y = _mm256_set1_epi8(2), ones = _mm256_set1_epi16(1);
    for (std::int64_t i = 0; i < iters; ++i)
        for (auto& a : acc) {
            // Four inputs the compiler must treat as new each time (an empty asm that "changes"
            // them), or it hoists the products of constants out of the loop.
            __m256i x0 = x, x1 = x, x2 = x, x3 = x;
            asm volatile("" : "+x"(x0), "+x"(x1), "+x"(x2), "+x"(x3));
            __m256i p = _mm256_maddubs_epi16(x0, y);
            p = _mm256_add_epi16(p, _mm256_maddubs_epi16(x1, y));
            p = _mm256_add_epi16(p, _mm256_maddubs_epi16(x2, y));
            p = _mm256_add_epi16(p, _mm256_maddubs_epi16(x3, y));
            a = _mm256_add_epi32(a, _mm256_madd_epi16(p, ones));
        }
    __m256i s = acc[0];
    for (int k = 1; k < 8; ++k)
        s = _mm256_add_epi32(s, acc[k]);
    alignas(32) std::int32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
    std::int64_t t = 0;
    for (auto v : lanes)
        t += v;
    return t;
}

double fma_ymm_loop(std::int64_t iters) {
    __m256 acc[12];
    for (auto& a : acc)
        a = _mm256_setzero_ps();
    const __m256 x = _mm256_set1_ps(1e-6f), y = _mm256_set1_ps(1.0f);
    for (std::int64_t i = 0; i < iters; ++i)
        for (auto& a : acc)
            a = _mm256_fmadd_ps(x, y, a);
    __m256 s = acc[0];
    for (int k = 1; k < 12; ++k)
        s = _mm256_add_ps(s, acc[k]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, s);
    double t = 0;
    for (auto v : lanes)
        t += v;
    return t;
}

} // namespace bitnet::bench::detail
