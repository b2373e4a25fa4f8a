// bench_kernels' attention and softmax benchmarks (bench/kernels_attention.cpp).
#pragma once

#include "kernels/cpu_features.hpp"

#include <benchmark/benchmark.h>

#include <vector>

namespace bitnet::bench {

/// Registers the prefill-attention and softmax benchmarks of each family.
void register_attention(const std::vector<kernels::isa>& families);

} // namespace bitnet::bench
