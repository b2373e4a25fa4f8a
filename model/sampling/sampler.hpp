// Token sampling for one sequence: logit bias, end-of-generation hold-backs, repetition,
// presence and frequency penalties, top-k, top-p, min-p, temperature, a seeded RNG of its own,
// and log-probabilities to report. Deterministic: the same parameters, seed, logits and tokens
// give the same tokens on every run and in any batch (the RNG is per sequence, never shared).
//
// The order of operations of sample(), which every sampler of this project (the CUDA device
// sampler too) follows step for step, in float unless it says otherwise:
//   1. z = the logits row (a schema's mask has already set disallowed tokens to -inf).
//   2. logit_bias: z[t] = z[t] + bias for each entry whose t is inside the row (others skipped).
//   3. Hold-backs: with ignore_eos, z[t] = -inf for every t in eog_ids; while n_generated <
//      min_tokens, z[t] = -inf for every t in eog_ids and in stop_ids.
//   4. Repetition penalty (llama.cpp): for each distinct t among the last repeat_last_n entries
//      of `recent` (prompt and generated; -1 = all of them), z[t] = z[t] > 0 ? z[t] / penalty
//      : z[t] * penalty.
//   5. Presence and frequency penalties (OpenAI): c[t] = how often t occurs among the last
//      n_generated entries of `recent` (the generated tokens only); for each t with c[t] > 0,
//      z[t] = z[t] - (frequency_penalty * float(c[t]) + presence_penalty).
//   6. Reported log-probabilities: the log-softmax of z after 2-5 (logprobs.hpp, in double),
//      before temperature and the truncating filters; computed only where delivered
//      (report_logprob or n_logprobs), otherwise the token's logprob is 0.
//   7. Greedy (temperature 0): the first maximum of z (lowest id among equal values); no draw.
//   8. Otherwise: top-k, top-p and min-p on the softmax of z (temperature-free), then the
//      softmax of what is left at 1/temperature, and one 64-bit draw of the sequence's RNG
//      (53 bits make a uniform double in [0, 1); sampler.cpp's draw_candidate).
// -inf stays -inf through 4 and 5 (a held-back or masked token is never revived by a bias or
// a negative penalty: the bias comes before the hold-backs), and a row whose every entry is
// -inf is an error, not a draw.
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
/// by lowest id). Log-probabilities are the log-softmax of the logits after the bias, the
/// hold-backs and the penalties (steps 2-5 above) and before temperature and the truncating
/// filters: they describe the distribution the request asked for, not how the token was drawn.
struct sampled {
    std::int32_t token = 0;
    float logprob = 0.0f; ///< 0 where not delivered (neither report_logprob nor n_logprobs)
    std::vector<token_logprob> top_logprobs; ///< n_logprobs entries (fewer if the vocab is tiny)
};

/// A per-sequence sampler. Not thread-safe; owned by whoever owns the sequence.
class sampler {
public:
    /// Validates `p` and seeds the RNG (std::mt19937_64 from p.seed).
    [[nodiscard]] static result<sampler> create(const sampling_params& p);

    /// Picks the next token from `logits` (one row of n_vocab). `recent` is the sequence so far
    /// (prompt and generated tokens, oldest first), of which the last `n_generated` are the
    /// sequence's own output (more than recent holds counts as all of it): the repetition
    /// penalty reads the last repeat_last_n entries, the presence and frequency penalties the
    /// generated ones, min_tokens compares with n_generated. Ids outside the vocabulary are
    /// ignored. invalid_argument on an empty row, NaN logits, or a row with no finite logit.
    [[nodiscard]] result<sampled> sample(std::span<const float> logits,
                                         std::span<const std::int32_t> recent = {},
                                         std::size_t n_generated = 0);

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

    /// Whether a draw takes the row's first maximum and reports nothing else: greedy, nothing
    /// that shapes the logits (sampling_params::shapes_logits), no alternatives and no logprob
    /// of its own. sample() then gives the same token from a row that holds only that maximum
    /// (the rest -inf) as from the full row.
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
    std::vector<std::int32_t> counts_; ///< scratch: the generated ids, sorted (penalties)
};

} // namespace bitnet::model
