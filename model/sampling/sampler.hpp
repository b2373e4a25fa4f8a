// Token sampling for one sequence: repetition penalty, top-k, top-p, min-p, temperature, a seeded
// RNG of its own, and log-probabilities to report. Deterministic: the same parameters, seed and
// logits give the same tokens on every run and in any batch (the RNG is per sequence, never
// shared).
#pragma once

#include "common/error.hpp"
#include "model/sampling/logprobs.hpp"
#include "model/sampling/sampling_params.hpp"

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace bitnet::model {

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

    /// The uniform draw in [0, 1) that the next non-greedy sample() would take, taken now: for
    /// an engine that samples on its device (the CUDA engine's sampler draws with it, so a seeded
    /// sequence continues the same stream whichever side samples). Advances the RNG as that
    /// sample() would; greedy draws take none, so call it only when temperature is not 0.
    [[nodiscard]] double take_uniform() { return next_uniform(); }
    /// The same draw without taking it (the RNG stays where it is): a device step that may fail
    /// peeks, and takes the draw once its token is in.
    [[nodiscard]] double peek_uniform() const {
        auto rng = rng_;
        return static_cast<double>(rng() >> 11) * 0x1.0p-53;
    }

    /// Puts the RNG where it stands after `n_sampled` earlier calls to sample() (a sequence that
    /// was preempted and re-prefilled continues its draws instead of restarting them). Every
    /// non-greedy sample() takes exactly one 64-bit draw; greedy takes none.
    void resume_after(std::uint64_t n_sampled);

    [[nodiscard]] const sampling_params& params() const noexcept { return params_; }

    /// Whether a draw takes the row's first maximum and reports nothing else: greedy, no
    /// repetition penalty, no alternatives and no logprob of its own. sample() then gives the
    /// same token from a row that holds only that maximum (the rest -inf) as from the full row.
    [[nodiscard]] bool first_maximum_only() const noexcept;

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
