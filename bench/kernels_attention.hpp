// What bench_kernels' files share: the attention and softmax benchmarks
// (bench/kernels_attention.cpp) and the random inputs every benchmark draws
// (bench/bench_kernels.cpp).
#pragma once

#include "kernels/cpu_features.hpp"

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace bitnet::bench {

/// n floats drawn from N(0, 1) with a fixed seed.
std::vector<float> random_floats(std::size_t n, std::uint32_t seed);

/// Registers the prefill-attention and softmax benchmarks of each family.
void register_attention(const std::vector<kernels::isa>& families);

} // namespace bitnet::bench
