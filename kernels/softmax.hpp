// The softmax of attention scores as ggml_soft_max computes it in bitnet.cpp (docs/GGUF-FORMAT.md
// §3.6): per row, m = max, e_i = expf(x_i − m) in float, the sum of the e_i in double in position
// order, then each e_i times (float)(1 / sum), optionally rounded to F16.
//
// The vector family keeps those bits: its expf repeats glibc's (since 2.28; the FMA variant,
// which glibc itself picks on every CPU our vector kernels run on) operation for operation in
// double, and the double sums of several rows run side by side, each in its own order. Because
// "equals libm" is a property of the libm the process loaded, the vector expf is compared with
// std::exp once per process (vector_expf_matches_libm); where they differ the scalar loop runs.
#pragma once

#include "kernels/cpu_features.hpp"

#include <cstddef>

namespace bitnet::kernels {

/// Softmax of n_rows rows of n floats each (row r at s + r · n), in place. n may be 0.
void softmax_rows(float* s, std::size_t n_rows, std::size_t n, bool round_f16,
                  isa family = best_isa());

/// y[i] = expf(x[i]) for i < n with `family`'s code (the scalar family calls std::exp); y may
/// alias x exactly. For checks against libm: production code calls softmax_rows.
void expf_rows(const float* x, float* y, std::size_t n, isa family = best_isa());

/// True when the vector expf equals std::exp on a fixed sample of inputs (every float of a
/// stride through all 2^32 bit patterns, and a dense stride through [−104, 0], where softmax
/// inputs live). Computed once; false on a CPU without the vector family.
[[nodiscard]] bool vector_expf_matches_libm();

} // namespace bitnet::kernels
