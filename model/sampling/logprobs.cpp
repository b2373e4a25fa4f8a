#include "model/sampling/logprobs.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace bitnet::model {

result<float> checked_max(std::span<const float> z) {
    if (z.empty())
        return error(errc::invalid_argument, "sampling: empty logits row");
    // One pass for both (the row is checked for every draw): NaN never compares greater, so
    // the maximum skips it and the flag reports it.
    float z_max = -std::numeric_limits<float>::infinity();
    bool nan = false;
    for (const float v : z) {
        nan |= std::isnan(v);
        z_max = v > z_max ? v : z_max;
    }
    if (nan) {
        const auto at = std::find_if(z.begin(), z.end(), [](float v) { return std::isnan(v); });
        return error(errc::invalid_argument,
                     "sampling: logit of token " + std::to_string(at - z.begin()) + " is NaN");
    }
    if (!std::isfinite(z_max))
        return error(errc::invalid_argument,
                     "sampling: logits row has +inf or no finite value (max = " +
                         std::to_string(z_max) + ")");
    return z_max;
}

double log_normalizer_of_checked(std::span<const float> z, float z_max) {
    double sum = 0.0;
    for (const float v : z)
        sum += exp_or_zero(static_cast<double>(v) - z_max);
    return z_max + std::log(sum);
}

result<double> log_normalizer(std::span<const float> z) {
    const auto z_max = checked_max(z);
    if (!z_max)
        return z_max.error();
    return log_normalizer_of_checked(z, *z_max);
}

void top_logprobs(std::span<const float> z, std::size_t k, double log_norm,
                  std::vector<std::int32_t>& order, std::vector<token_logprob>& out) {
    const auto n_vocab = static_cast<std::int32_t>(z.size());
    order.resize(z.size());
    for (std::int32_t i = 0; i < n_vocab; ++i)
        order[static_cast<std::size_t>(i)] = i;
    const auto n = std::min(k, order.size());
    // More likely first; on equal logits the lower id first, so the choice is deterministic.
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                      [&z](std::int32_t a, std::int32_t b) {
                          const auto ua = static_cast<std::size_t>(a);
                          const auto ub = static_cast<std::size_t>(b);
                          return z[ua] > z[ub] || (z[ua] == z[ub] && a < b);
                      });
    for (std::size_t i = 0; i < n; ++i)
        out.push_back({order[i], logprob_of(z, order[i], log_norm)});
}

result<scored_token> score_token(std::span<const float> z, std::int32_t target, std::size_t n_top,
                                 std::vector<std::int32_t>& order) {
    if (target < 0 || static_cast<std::size_t>(target) >= z.size())
        return error(errc::invalid_argument, "prompt logprobs: token id " + std::to_string(target) +
                                                 " is outside the logits row");
    const auto log_norm = log_normalizer(z);
    if (!log_norm)
        return log_norm.error();
    scored_token out;
    out.logprob = logprob_of(z, target, *log_norm);
    if (n_top > 0)
        top_logprobs(z, n_top, *log_norm, order, out.top);
    return out;
}

} // namespace bitnet::model
