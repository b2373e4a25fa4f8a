// Token sampling for one sequence: repetition penalty, top-k, top-p, min-p, temperature, a seeded
// RNG of its own, and log-probabilities to report. Deterministic: the same parameters, seed and
// logits give the same tokens on every run and in any batch (the RNG is per sequence, never
// shared).
#pragma once

#include "common/error.hpp"

#include <cstdint>
#include <random>
#include <span>
#include <vector>

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

    static constexpr int max_logprobs = 20;
};

/// Checks every range above; the message names the parameter, its value and the allowed range.
[[nodiscard]] result<void> validate(const sampling_params& p);

struct token_logprob {
    std::int32_t token = 0;
    float logprob = 0.0f;
};

/// One sampled token with its log-probability and the top alternatives (most likely first, ties
/// by lowest id). Log-probabilities are the log-softmax of the logits after the repetition
/// penalty and before temperature and the truncating filters: they describe the model's own
/// distribution (as vLLM reports by default), so they do not depend on how the token was drawn.
struct sampled {
    std::int32_t token = 0;
    float logprob = 0.0f;
    std::vector<token_logprob> top_logprobs; ///< n_logprobs entries (fewer if the vocab is tiny)
};

/// A per-sequence sampler. Not thread-safe; owned by whoever owns the sequence.
class sampler {
public:
    /// Validates `p` and seeds the RNG (std::mt19937_64 from p.seed).
    [[nodiscard]] static result<sampler> create(const sampling_params& p);

    /// Picks the next token from `logits` (one row of n_vocab). `recent` is the sequence so far
    /// (prompt and generated tokens, oldest first); only its last repeat_last_n entries matter,
    /// and ids outside the vocabulary are ignored. invalid_argument on an empty row or NaN logits.
    [[nodiscard]] result<sampled> sample(std::span<const float> logits,
                                         std::span<const std::int32_t> recent = {});

    /// Puts the RNG where it stands after `n_sampled` earlier calls to sample() (a sequence that
    /// was preempted and re-prefilled continues its draws instead of restarting them). Every
    /// non-greedy sample() takes exactly one 64-bit draw; greedy takes none.
    void resume_after(std::uint64_t n_sampled);

    [[nodiscard]] const sampling_params& params() const noexcept { return params_; }

private:
    explicit sampler(const sampling_params& p);
    /// Uniform double in [0, 1) from 53 random bits (portable, unlike uniform_real_distribution).
    [[nodiscard]] double next_uniform();

    sampling_params params_;
    std::mt19937_64 rng_;
    // Scratch reused across calls so a decode step does not allocate a vocab-sized buffer.
    std::vector<float> work_;
    std::vector<std::int32_t> order_;
    std::vector<double> weights_;
};

} // namespace bitnet::model
