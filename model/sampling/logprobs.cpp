#include "model/sampling/logprobs.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace bitnet::model {

result<double> log_normalizer(std::span<const float> z) {
    if (z.empty())
        return error(errc::invalid_argument, "sampling: empty logits row");
    for (std::size_t i = 0; i < z.size(); ++i)
        if (std::isnan(z[i]))
            return error(errc::invalid_argument,
                         "sampling: logit of token " + std::to_string(i) + " is NaN");
    const float z_max = *std::max_element(z.begin(), z.end());
    if (!std::isfinite(z_max))
        return error(errc::invalid_argument,
                     "sampling: logits row has +inf or no finite value (max = " +
                         std::to_string(z_max) + ")");
    double sum = 0.0;
    for (float v : z)
        sum += std::exp(static_cast<double>(v) - z_max);
    return z_max + std::log(sum);
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
