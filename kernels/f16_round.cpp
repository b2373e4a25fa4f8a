#include "kernels/f16_round.hpp"

#include "kernels/cpu/f16_round_kernels.hpp"
#include "kernels/f16.hpp"

namespace bitnet::kernels {

void round_to_f16(const float* x, float* y, std::size_t n, isa family) {
    if (family != isa::scalar && isa_supported(isa::avx2)) {
        cpu::round_to_f16_avx2(x, y, n);
        return;
    }
    for (std::size_t i = 0; i < n; ++i)
        y[i] = f16_to_f32(f32_to_f16(x[i]));
}

} // namespace bitnet::kernels
