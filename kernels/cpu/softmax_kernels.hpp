// Entry points of the per-ISA softmax translation units (kernels/cpu/softmax_*.cpp), called only
// by kernels/softmax.cpp after a CPUID check. Plain pointers only (see isa_kernels.hpp for why).
#pragma once

#include <cstddef>

namespace bitnet::kernels::cpu {

/// y[i] = expf(x[i]) for i < n, as glibc 2.28+ computes it on a CPU with FMA (its __expf_fma):
/// every lane takes the same double operations in the same order, so the bits are libm's.
/// y may alias x exactly.
void expf_rows_avx2(const float* x, float* y, std::size_t n);

/// The softmax of each of n_rows rows of n floats (row r at s + r · n), in place, with the scalar
/// twin's operations (kernels/softmax.hpp): max, expf(x − max) as above, the sum in double in
/// position order, one multiply by 1 / sum, optionally rounded to F16.
void softmax_rows_avx2(float* s, std::size_t n_rows, std::size_t n, bool round_f16);

} // namespace bitnet::kernels::cpu
