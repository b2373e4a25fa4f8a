// A sequence's sampling settings: a plain value (messages carry it as it is, see
// messages/types.hpp) and the check of its ranges. The sampler (sampler.hpp) applies it.
#pragma once

#include "common/error.hpp"

#include <cstdint>

namespace bitnet::model {

/// OpenAI/llama.cpp-style sampling parameters. Defaults sample from the plain softmax.
struct sampling_params {
    float temperature = 1.0f; ///< 0 = greedy (argmax, lowest id wins ties); else in (0, 100]
    int top_k = 0;            ///< keep the k most likely tokens; 0 = off
    float top_p = 1.0f;       ///< keep the smallest prefix with probability mass >= top_p; (0, 1]
    float min_p = 0.0f;       ///< drop tokens with p < min_p * p_max; [0, 1]
    /// llama.cpp semantics: a token seen in the last `repeat_last_n` tokens (prompt included) has
    /// its logit divided by the penalty when positive, multiplied when negative. 1 = off; (0, 10].
    float repetition_penalty = 1.0f;
    int repeat_last_n = 64; ///< window of the penalty; 0 = off, -1 = every token given
    std::uint64_t seed = 0;
    int n_logprobs = 0; ///< how many top alternatives to report per token; [0, max_logprobs]
    /// Whether the chosen token's log-probability is delivered. A greedy draw that delivers
    /// none (and has no penalty or alternatives) needs only the row's first maximum, which an
    /// engine with a greedy screen finds without computing the whole row (seq_chunk::
    /// greedy_only); its reported logprob then means nothing.
    bool report_logprob = true;

    static constexpr int max_logprobs = 20;
};

/// Checks every range above; the message names the parameter, its value and the allowed range.
[[nodiscard]] result<void> validate(const sampling_params& p);

} // namespace bitnet::model
