// The AVX-512 family of the ReLU² gate: the AVX2 one's operations (see activation_avx2.cpp for
// why max(g, 0) equals the scalar twin), 16 lanes at a time and a masked tail.
#include "kernels/cpu/activation_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {

void relu_sqr_gate_avx512(const float* g, const float* u, std::size_t n, float* z) {
    const __m512 zero = _mm512_setzero_ps();
    for (std::size_t i = 0; i < n; i += 16) {
        const auto m = static_cast<__mmask16>(n - i >= 16 ? 0xffffu : (1u << (n - i)) - 1u);
        const __m512 r = _mm512_max_ps(_mm512_maskz_loadu_ps(m, g + i), zero);
        _mm512_mask_storeu_ps(z + i, m,
                              _mm512_mul_ps(_mm512_mul_ps(r, r), _mm512_maskz_loadu_ps(m, u + i)));
    }
}

} // namespace bitnet::kernels::cpu
