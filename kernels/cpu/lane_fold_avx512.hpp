// The lane fold that ends the fixed summation orders of the AVX-512 F16 and Q8_0 logits products:
// lane i += lane i + w for w = 8, 4, 2, 1, then lane 0. Include it only from *_avx512.cpp files:
// it is compiled with their flags, and every copy the linker may keep must be one of theirs.
#pragma once

#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {

inline float fold16(__m512 v) {
    const __m256 lo = _mm512_castps512_ps256(v);
    // A shuffle rather than an extract: GCC 12's extract intrinsics trip -Wmaybe-uninitialized.
    const __m256 hi = _mm512_castps512_ps256(_mm512_shuffle_f32x4(v, v, 0xee));
    const __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
    return _mm_cvtss_f32(s4);
}

} // namespace bitnet::kernels::cpu
