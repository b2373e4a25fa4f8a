#include "model/engine/placement/generation.hpp"

#include "model/tokenizer/tokenizer.hpp"

namespace bitnet::model {

result<generation> generation::start(engine& e, seq_id seq, generation_request req) {
    if (req.prompt.empty())
        return error(errc::invalid_argument, "the prompt is empty");
    for (std::int32_t id : req.prompt)
        if (id < 0 || static_cast<std::uint32_t>(id) >= e.config().n_vocab)
            return error(errc::invalid_argument, "prompt token id " + std::to_string(id) +
                                                     " is outside the vocabulary of " +
                                                     std::to_string(e.config().n_vocab));
    if (e.config().n_ctx_train > 0 && req.prompt.size() >= e.config().n_ctx_train)
        return error(errc::prompt_too_long, "the prompt has " + std::to_string(req.prompt.size()) +
                                                " tokens; the model's context is " +
                                                std::to_string(e.config().n_ctx_train));
    if (!req.ignore_eog)
        for (std::int32_t id : e.vocab().eog_ids())
            req.stop.eog_tokens.push_back(id);
    auto s = sampler::create(req.sampling);
    if (!s)
        return s.error();
    auto r = stop_rules::create(req.stop);
    if (!r)
        return r.error();
    return generation(e, seq, std::move(req), std::move(*s), std::move(*r));
}

generation::generation(engine& e, seq_id seq, generation_request req, sampler s, stop_rules r)
    : engine_(&e)
    , seq_(seq)
    , req_(std::move(req))
    , sampler_(std::move(s))
    , rules_(std::move(r))
    , stream_(e.vocab())
    , history_(req_.prompt) {}

generation::generation(generation&& other) noexcept
    : engine_(other.engine_)
    , seq_(other.seq_)
    , req_(std::move(other.req_))
    , sampler_(std::move(other.sampler_))
    , rules_(std::move(other.rules_))
    , stream_(std::move(other.stream_))
    , history_(std::move(other.history_))
    , generated_(std::move(other.generated_))
    , prompt_done_(other.prompt_done_)
    , finish_(other.finish_)
    , owns_(other.owns_) {
    other.owns_ = false;
}

generation::~generation() {
    if (owns_)
        engine_->release(seq_);
}

result<generated_token> generation::next() {
    if (finished())
        return error(errc::invalid_argument, std::string("the sequence has finished (") +
                                                 finish_reason_name(finish_) + ")");
    seq_chunk chunk;
    chunk.seq = seq_;
    if (prompt_done_ == 0) {
        chunk.tokens = req_.prompt;
        chunk.pos0 = 0;
    } else {
        chunk.tokens = {generated_.back()};
        chunk.pos0 = static_cast<std::uint32_t>(history_.size() - 1);
    }
    auto out = engine_->step(std::span<const seq_chunk>(&chunk, 1));
    if (!out)
        return out.error();
    prompt_done_ = req_.prompt.size();
    auto picked = sampler_.sample(out->row(0, engine_->config().n_vocab), history_);
    if (!picked)
        return picked.error();
    generated_token g;
    g.token = picked->token;
    g.logprob = picked->logprob;
    g.top_logprobs = std::move(picked->top_logprobs);
    generated_.push_back(g.token);
    history_.push_back(g.token);
    // An end-of-generation token shows no text; others go through the UTF-8 stream first.
    const bool eog = !req_.ignore_eog && engine_->vocab().is_eog(g.token);
    const std::string piece = eog ? std::string() : stream_.push(g.token);
    auto decision = rules_.on_token(g.token, piece);
    g.text = std::move(decision.emit);
    g.finish = decision.reason;
    if (g.finish == finish_reason::none && engine_->config().n_ctx_train > 0 &&
        history_.size() >= engine_->config().n_ctx_train)
        g.finish = finish_reason::length; // the next token would not fit the context
    if (g.finish != finish_reason::none && g.finish != finish_reason::stop_string)
        g.text += stream_.flush();
    finish_ = g.finish;
    return g;
}

} // namespace bitnet::model
