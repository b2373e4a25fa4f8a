// The iterative generation API for one sequence: start it with a prompt, sampling parameters
// and stop rules, call next() for each token, and let it go (the destructor releases the KV
// blocks). It runs the engine one sequence at a time; the batcher does the same for many
// sequences at once through engine::step, with the same sampler, stop rules and detokenizer.
#pragma once

#include "common/error.hpp"
#include "model/engine/engine.hpp"
#include "model/sampling/sampler.hpp"
#include "model/sampling/stop_rules.hpp"
#include "model/tokenizer/tokenizer_stream.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bitnet::model {

struct generation_request {
    std::vector<std::int32_t> prompt; ///< ids, BOS included if wanted; never empty
    sampling_params sampling;
    /// Stop rules. The tokenizer's end-of-generation ids are added to eog_tokens unless
    /// ignore_eog is set.
    stop_criteria stop;
    bool ignore_eog = false;
};

struct generated_token {
    std::int32_t token = 0;
    float logprob = 0.0f;
    std::vector<token_logprob> top_logprobs;
    std::string text; ///< what to show for this token (whole UTF-8 characters; stop text held)
    finish_reason finish = finish_reason::none;
};

class generation {
public:
    /// Validates the request (sampling ranges, token ids, context room) without running anything.
    [[nodiscard]] static result<generation> start(engine& e, seq_id seq, generation_request req);

    generation(generation&& other) noexcept;
    generation& operator=(generation&&) = delete;
    generation(const generation&) = delete;
    generation& operator=(const generation&) = delete;
    ~generation();

    /// Runs one step (the whole prompt on the first call) and samples the next token. After the
    /// sequence has finished, returns invalid_argument. Engine errors (kv_exhausted, ...) pass
    /// through and leave the sequence where it was, so the call may be retried.
    [[nodiscard]] result<generated_token> next();

    [[nodiscard]] bool finished() const noexcept { return finish_ != finish_reason::none; }
    [[nodiscard]] finish_reason reason() const noexcept { return finish_; }
    [[nodiscard]] const std::vector<std::int32_t>& generated() const noexcept { return generated_; }
    /// Prompt tokens processed (0 before the first next()).
    [[nodiscard]] std::size_t n_prompt_done() const noexcept { return prompt_done_; }

private:
    generation(engine& e, seq_id seq, generation_request req, sampler s, stop_rules r);

    engine* engine_;
    seq_id seq_;
    generation_request req_;
    sampler sampler_;
    stop_rules rules_;
    token_stream stream_;
    std::vector<std::int32_t> history_; ///< prompt + generated, for the repetition penalty
    std::vector<std::int32_t> generated_;
    std::size_t prompt_done_ = 0;
    finish_reason finish_ = finish_reason::none;
    bool owns_ = true;
};

} // namespace bitnet::model
