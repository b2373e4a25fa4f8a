// Throughput loops for the AVX2 ceilings (compiled with -mavx2 -mfma; called only when CPUID says
// the CPU has them).
#include "kernels/cpu/x86_intrinsics.hpp"

#include <cstdint>
#include <initializer_list>

namespace bitnet::bench::detail {

// Four products, each into its own accumulator.
#define BITNET_PROBE_ROUND(a, b, c, d)                                                             \
    "vpmaddubsw %[y], %[x], %[p0]\n\t"                                                             \
    "vpaddw %[p0], %[" a "], %[" a "]\n\t"                                                         \
    "vpmaddubsw %[y], %[x], %[p1]\n\t"                                                             \
    "vpaddw %[p1], %[" b "], %[" b "]\n\t"                                                         \
    "vpmaddubsw %[y], %[x], %[p2]\n\t"                                                             \
    "vpaddw %[p2], %[" c "], %[" c "]\n\t"                                                         \
    "vpmaddubsw %[y], %[x], %[p3]\n\t"                                                             \
    "vpaddw %[p3], %[" d "], %[" d "]\n\t"

// vpmaddubsw: 32 u8 x s8 products summed in pairs to 16 int16 (32 MACs an instruction), each
// added to an int16 accumulator with vpaddw, and the int16 sums widened with vpmaddwd every 32
// products, as the ternary kernels do (their int16 sums cannot overflow in 32 steps). The time
// of the widening is in the count, its MACs are not. Written as one asm block per iteration (8
// accumulators × 4 products): with intrinsics GCC hoists products of loop-invariant inputs, and
// an empty asm that "changes" the inputs each time costs a register copy per product, which on
// Zen 3 made the earlier version of this loop read about three quarters of this one.
std::int64_t maddubs_ymm_loop(std::int64_t iters) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
            a7 = a0;
    __m256i wide = _mm256_setzero_si256();
    const __m256i x = _mm256_set1_epi8(1), y = _mm256_set1_epi8(2), ones = _mm256_set1_epi16(1);
    constexpr std::int64_t iters_per_widen = 8; // 8 iterations × 4 products = 32 per accumulator
    for (std::int64_t i = 0; i < iters; ++i) {
        __m256i p0, p1, p2, p3;
        asm volatile(BITNET_PROBE_ROUND("a0", "a1", "a2", "a3")
                         BITNET_PROBE_ROUND("a4", "a5", "a6", "a7")
                             BITNET_PROBE_ROUND("a0", "a1", "a2", "a3")
                                 BITNET_PROBE_ROUND("a4", "a5", "a6", "a7")
                                     BITNET_PROBE_ROUND("a0", "a1", "a2", "a3")
                                         BITNET_PROBE_ROUND("a4", "a5", "a6", "a7")
                                             BITNET_PROBE_ROUND("a0", "a1", "a2", "a3")
                                                 BITNET_PROBE_ROUND("a4", "a5", "a6", "a7")
                     : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4),
                       [a5] "+x"(a5), [a6] "+x"(a6), [a7] "+x"(a7), [p0] "=&x"(p0), [p1] "=&x"(p1),
                       [p2] "=&x"(p2), [p3] "=&x"(p3)
                     : [x] "x"(x), [y] "x"(y));
        if ((i + 1) % iters_per_widen == 0) {
            for (__m256i* a : {&a0, &a1, &a2, &a3, &a4, &a5, &a6, &a7}) {
                wide = _mm256_add_epi32(wide, _mm256_madd_epi16(*a, ones));
                *a = _mm256_setzero_si256();
            }
        }
    }
    alignas(32) std::int32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), wide);
    std::int64_t t = 0;
    for (auto v : lanes)
        t += v;
    return t;
}

#undef BITNET_PROBE_ROUND

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
