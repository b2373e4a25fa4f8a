// F16C rounding to F16 and back (kernels/f16_round.hpp). Compiled with AVX2, FMA and F16C flags.
#include "kernels/cpu/f16_round_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {

void round_to_f16_avx2(const float* x, float* y, std::size_t n) {
    constexpr int nearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), nearest)));
    for (; i < n; ++i)
        y[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(x[i]), nearest)));
}

} // namespace bitnet::kernels::cpu
