// Entry point of the F16C rounding (kernels/cpu/f16_round_avx2.cpp), called only by
// kernels/f16_round.cpp after a CPUID check. Plain pointers only (see isa_kernels.hpp for why).
#pragma once

#include <cstddef>

namespace bitnet::kernels::cpu {

/// y[i] = x[i] rounded to F16 (nearest even) and back, for i < n; y may alias x exactly.
void round_to_f16_avx2(const float* x, float* y, std::size_t n);

} // namespace bitnet::kernels::cpu
