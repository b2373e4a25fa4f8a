// Entry points of the per-ISA gated-activation translation units (kernels/cpu/activation_*.cpp),
// called only by kernels/activation.cpp after a CPUID check. Plain pointers only (see
// isa_kernels.hpp for why).
#pragma once

#include <cstddef>

namespace bitnet::kernels::cpu {

/// z[i] = (r · r) · u[i] with r = g[i] > 0 ? g[i] : 0, for i < n, the scalar twin's operations in
/// its order. z may alias g or u exactly (element i is read before it is written).
void relu_sqr_gate_avx2(const float* g, const float* u, std::size_t n, float* z);
void relu_sqr_gate_avx512(const float* g, const float* u, std::size_t n, float* z);

} // namespace bitnet::kernels::cpu
