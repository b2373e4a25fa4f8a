// Throughput loops for the AVX-512 ceilings (compiled with -mavx512f -mavx512bw -mavx512vl
// -mavx512vnni; called only when CPUID says the CPU has them).
#include "kernels/cpu/x86_intrinsics.hpp"

#include <cstdint>

namespace bitnet::bench::detail {

// 12 independent accumulators: vpdpbusd has a latency of 4-5 cycles and up to 2 per cycle.
std::int64_t vnni_zmm_loop(std::int64_t iters) {
    __m512i acc[12];
    for (auto& a : acc)
        a = _mm512_setzero_si512();
    const __m512i x = _mm512_set1_epi8(1), y = _mm512_set1_epi8(2);
    for (std::int64_t i = 0; i < iters; ++i)
        for (auto& a : acc)
            a = _mm512_dpbusd_epi32(a, x, y);
    __m512i s = acc[0];
    for (int k = 1; k < 12; ++k)
        s = _mm512_add_epi32(s, acc[k]);
    return _mm512_reduce_add_epi32(s);
}

std::int64_t vnni_ymm_loop(std::int64_t iters) {
    __m256i acc[12];
    for (auto& a : acc)
        a = _mm256_setzero_si256();
    const __m256i x = _mm256_set1_epi8(1), y = _mm256_set1_epi8(2);
    for (std::int64_t i = 0; i < iters; ++i)
        for (auto& a : acc)
            a = _mm256_dpbusd_epi32(a, x, y);
    __m256i s = acc[0];
    for (int k = 1; k < 12; ++k)
        s = _mm256_add_epi32(s, acc[k]);
    alignas(32) std::int32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
    std::int64_t t = 0;
    for (auto v : lanes)
        t += v;
    return t;
}

double fma_zmm_loop(std::int64_t iters) {
    __m512 acc[12];
    for (auto& a : acc)
        a = _mm512_setzero_ps();
    const __m512 x = _mm512_set1_ps(1e-6f), y = _mm512_set1_ps(1.0f);
    for (std::int64_t i = 0; i < iters; ++i)
        for (auto& a : acc)
            a = _mm512_fmadd_ps(x, y, a);
    __m512 s = acc[0];
    for (int k = 1; k < 12; ++k)
        s = _mm512_add_ps(s, acc[k]);
    return _mm512_reduce_add_ps(s);
}

} // namespace bitnet::bench::detail
