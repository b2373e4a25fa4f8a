// A sequence's sampling settings: a plain value (messages carry it as it is, see
// messages/types.hpp) and the check of its ranges. The sampler (sampler.hpp) applies it, in the
// order sampler.hpp states.
#pragma once

#include "common/error.hpp"

#include <cstdint>
#include <vector>

namespace bitnet::model {

/// One entry of OpenAI's `logit_bias`: `bias` is added to token `token`'s logit before anything
/// else the sampler does (-100 bans the token in practice, +100 forces it).
struct logit_bias_entry {
    std::int32_t token = 0;
    float bias = 0.0f; ///< [-100, 100]
    friend bool operator==(const logit_bias_entry&, const logit_bias_entry&) = default;
};

/// OpenAI/llama.cpp/vLLM-style sampling parameters. Defaults sample from the plain softmax.
struct sampling_params {
    float temperature = 1.0f; ///< 0 = greedy (argmax, lowest id wins ties); else in (0, 100]
    int top_k = 0;            ///< keep the k most likely tokens; 0 = off
    float top_p = 1.0f;       ///< keep the smallest prefix with probability mass >= top_p; (0, 1]
    float min_p = 0.0f;       ///< drop tokens with p < min_p * p_max; [0, 1]
    /// llama.cpp semantics: a token seen in the last `repeat_last_n` tokens (prompt included) has
    /// its logit divided by the penalty when positive, multiplied when negative. 1 = off; (0, 10].
    float repetition_penalty = 1.0f;
    int repeat_last_n = 64; ///< window of the penalty; 0 = off, -1 = every token given
    /// OpenAI semantics, over the tokens this sequence generated (never the prompt): token t's
    /// logit loses presence_penalty once if t was generated at all, and frequency_penalty times
    /// the number of times it was. 0 = off; each in [-2, 2] (negative values favour repeats).
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    /// OpenAI's `logit_bias`, ids ascending and distinct, at most max_logit_bias entries. Ids
    /// past the vocabulary are refused where the vocabulary is known (admission); the sampler
    /// skips them.
    std::vector<logit_bias_entry> logit_bias;
    /// vLLM's `min_tokens`: while fewer tokens than this were generated, `eog_ids` and
    /// `stop_ids` are held back (logit -inf), so the sequence cannot end on them. 0 = off.
    std::uint32_t min_tokens = 0;
    /// vLLM's and llama.cpp's `ignore_eos`: `eog_ids` are never drawn (logit -inf), so only
    /// max_tokens, the context, a stop id or a stop string ends the sequence.
    bool ignore_eos = false;
    /// The ids min_tokens and ignore_eos act on, filled by whoever knows them (the batcher, from
    /// the model and the request), never by a client: the model's end-of-generation ids, and the
    /// request's stop token ids (which min_tokens holds back too, ignore_eos does not).
    std::vector<std::int32_t> eog_ids;
    std::vector<std::int32_t> stop_ids;
    std::uint64_t seed = 0;
    int n_logprobs = 0; ///< how many top alternatives to report per token; [0, max_logprobs]
    /// Whether the chosen token's log-probability is delivered. A greedy draw that delivers
    /// none (and has no penalty or alternatives) needs only the row's first maximum, which an
    /// engine with a greedy screen finds without computing the whole row (seq_chunk::
    /// greedy_only); its reported logprob then means nothing.
    bool report_logprob = true;

    static constexpr int max_logprobs = 20;
    static constexpr std::size_t max_logit_bias = 300; ///< OpenAI's bound on `logit_bias`
    static constexpr float max_bias = 100.0f;
    static constexpr float max_openai_penalty = 2.0f;

    /// Whether any setting changes the logits before the draw (bias, hold-backs, penalties).
    [[nodiscard]] bool shapes_logits() const noexcept {
        return (repetition_penalty != 1.0f && repeat_last_n != 0) || presence_penalty != 0.0f ||
               frequency_penalty != 0.0f || !logit_bias.empty() || min_tokens > 0 || ignore_eos;
    }
};

/// Checks every range above; the message names the parameter, its value and the allowed range.
[[nodiscard]] result<void> validate(const sampling_params& p);

} // namespace bitnet::model
