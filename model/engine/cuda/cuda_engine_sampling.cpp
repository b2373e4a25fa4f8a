// device_sample -> the device sampler's row settings and adjustments (cuda_engine_sampling.hpp).
#include "model/engine/cuda/cuda_engine_sampling.hpp"

#include <algorithm>
#include <map>

namespace bitnet::model {

namespace cuda = kernels::cuda;

namespace {

/// The repetition penalty's window: model::sampler's rule (the last repeat_last_n tokens of
/// `recent`, all with -1, none with 0 or without a penalty).
std::span<const std::int32_t> penalty_window(const device_sample& s) {
    const sampling_params& p = s.params;
    if (p.repetition_penalty == 1.0f || p.repeat_last_n == 0 || s.recent.empty())
        return {};
    std::size_t window = s.recent.size();
    if (p.repeat_last_n > 0)
        window = std::min(window, static_cast<std::size_t>(p.repeat_last_n));
    return std::span<const std::int32_t>(s.recent).last(window);
}

} // namespace

std::size_t adjusted_tokens_bound(const device_sample& s) {
    return penalty_window(s).size() + s.counted.size() + s.logit_bias.size();
}

cuda::sample_row_params device_sample_row(const device_sample& s, std::uint32_t n_vocab,
                                          std::vector<cuda::sample_adjust>& adjust) {
    const sampling_params& p = s.params;
    cuda::sample_row_params r;
    r.temperature = p.temperature;
    r.top_k = p.top_k;
    r.top_p = p.top_p;
    r.min_p = p.min_p;
    r.repetition_penalty = p.repetition_penalty;
    r.presence_penalty = s.presence_penalty;
    r.frequency_penalty = s.frequency_penalty;
    r.uniform = s.uniform;
    r.want_logprob = p.report_logprob ? 1 : 0;
    // Ordered by id so that the list, and with it the device's writes, do not depend on the
    // order the tokens came in.
    std::map<std::int32_t, cuda::sample_adjust> by_token;
    auto entry = [&](std::int32_t t) -> cuda::sample_adjust* {
        if (t < 0 || static_cast<std::uint32_t>(t) >= n_vocab)
            return nullptr;
        auto& e = by_token[t];
        e.token = t;
        return &e;
    };
    for (std::int32_t t : penalty_window(s))
        if (auto* e = entry(t))
            e->in_window = 1;
    if (s.presence_penalty != 0.0f || s.frequency_penalty != 0.0f)
        for (std::int32_t t : s.counted)
            if (auto* e = entry(t))
                ++e->count;
    for (const auto& [t, bias] : s.logit_bias) // a later bias for the same token wins
        if (auto* e = entry(t))
            e->bias = bias;
    r.adjust_begin = static_cast<std::uint32_t>(adjust.size());
    for (const auto& [t, e] : by_token)
        adjust.push_back(e);
    r.adjust_end = static_cast<std::uint32_t>(adjust.size());
    return r;
}

cuda::sample_row_params greedy_sample_row(std::uint32_t at) {
    cuda::sample_row_params r;
    r.temperature = 0.0f;
    r.want_logprob = 0;
    r.adjust_begin = at;
    r.adjust_end = at;
    return r;
}

} // namespace bitnet::model
