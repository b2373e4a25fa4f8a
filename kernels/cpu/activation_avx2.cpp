// The AVX2 family of the ReLU² gate. max(g, 0) with g as the first operand returns the second
// (+0) for NaN, −0 and every g ≤ 0, exactly as the scalar twin's `g > 0 ? g : 0`, and the two
// products follow in the same order, so every element equals the scalar one bit for bit.
#include "kernels/cpu/activation_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {

void relu_sqr_gate_avx2(const float* g, const float* u, std::size_t n, float* z) {
    const __m256 zero = _mm256_setzero_ps();
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 r = _mm256_max_ps(_mm256_loadu_ps(g + i), zero);
        _mm256_storeu_ps(z + i, _mm256_mul_ps(_mm256_mul_ps(r, r), _mm256_loadu_ps(u + i)));
    }
    for (; i < n; ++i) {
        const float r = g[i] > 0.0f ? g[i] : 0.0f;
        z[i] = (r * r) * u[i];
    }
}

} // namespace bitnet::kernels::cpu
