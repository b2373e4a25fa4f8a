// What the CUDA engine's device sampler reads for one row (kernels/cuda/sample.cuh), made from a
// device_sample (batch.hpp) on the host: the settings, and the distinct tokens a penalty or the
// logit bias touches, each once, in increasing id order.
#pragma once

#include "kernels/cuda/kernel_args.hpp"
#include "model/engine/batch.hpp"

#include <cstdint>
#include <vector>

namespace bitnet::model {

/// The most distinct tokens one row's penalties and bias may touch (the window, the counted
/// tokens and the bias together): the staging buffers hold this many per sampled row.
inline constexpr std::uint32_t max_adjusted_tokens = device_sample::max_adjusted_tokens;

/// An upper bound on the distinct tokens `s` touches (what step_sampled checks against
/// max_adjusted_tokens before anything runs).
[[nodiscard]] std::size_t adjusted_tokens_bound(const device_sample& s);

/// The row's settings; its adjustments appended to `adjust` (adjust_begin/end set to them).
/// Ids outside [0, n_vocab) are left out, as model::sampler ignores them.
[[nodiscard]] kernels::cuda::sample_row_params
device_sample_row(const device_sample& s, std::uint32_t n_vocab,
                  std::vector<kernels::cuda::sample_adjust>& adjust);

/// A sampler row that draws greedily and touches nothing (a recorded plan's rows that no sample
/// asked for).
[[nodiscard]] kernels::cuda::sample_row_params greedy_sample_row(std::uint32_t at);

} // namespace bitnet::model
