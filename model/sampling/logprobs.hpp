// The log-probabilities the server reports, in one place: the log-softmax of a logits row
// (temperature-free) and its most likely tokens. The sampler (a generated token's logprobs) and
// prompt scoring (echo's teacher-forced logprobs) both use it, so a token scored either way from
// the same logits row gets the same bits.
#pragma once

#include "common/error.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace bitnet::model {

struct token_logprob {
    std::int32_t token = 0;
    float logprob = 0.0f;
};

/// A logits row's maximum, checked: invalid_argument on an empty row, a NaN logit, or a row
/// whose maximum is not finite (nothing can be normalised or drawn from it).
[[nodiscard]] result<float> checked_max(std::span<const float> z);

/// A logits row's log-softmax normaliser: z_max + log Σ exp(z - z_max), in double, the sum in
/// index order. invalid_argument as checked_max.
[[nodiscard]] result<double> log_normalizer(std::span<const float> z);
/// The same for a row already checked, whose maximum is `z_max`.
[[nodiscard]] double log_normalizer_of_checked(std::span<const float> z, float z_max);

/// exp(x) for a shifted logit: -inf (a masked or held-back token) is 0 without a call to exp,
/// which gives exactly 0 there too, so sums over a masked row keep their bits.
[[nodiscard]] inline double exp_or_zero(double x) {
    return x == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp(x);
}

/// log p(t) = z[t] - log_norm, rounded to float.
[[nodiscard]] inline float logprob_of(std::span<const float> z, std::int32_t t, double log_norm) {
    return static_cast<float>(static_cast<double>(z[static_cast<std::size_t>(t)]) - log_norm);
}

/// The `k` most likely tokens of `z` (fewer if the row is shorter), most likely first, equal
/// logits by lowest id, with their logprobs. `order` is scratch (reused across calls).
void top_logprobs(std::span<const float> z, std::size_t k, double log_norm,
                  std::vector<std::int32_t>& order, std::vector<token_logprob>& out);

/// A prompt token scored from the row of the token before it.
struct scored_token {
    float logprob = 0.0f;
    std::vector<token_logprob> top; ///< n_top entries (fewer if the vocab is smaller)
};

/// Scores `target` under the raw logits row `z` (no repetition penalty, no temperature: the
/// model's own distribution) with `n_top` alternatives. invalid_argument as log_normalizer, or
/// for a target outside the row.
[[nodiscard]] result<scored_token> score_token(std::span<const float> z, std::int32_t target,
                                               std::size_t n_top, std::vector<std::int32_t>& order);

} // namespace bitnet::model
