// Requests with n > 1 (several choices from one prompt, its KV shared in the engine; OpenAI's
// routes): each choice's tokens go to the family on their own (each streamed with its index, or
// gathered); the reply, or the stream's usage and end, comes when the last choice has ended.
// Usage counts the prompt once and the choices' tokens summed.
#include "http/routes/session.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace bitnet::http {

void session::choice_token(const msg::token_event& ev) {
    if (ev.choice >= call_->choices.size())
        return;
    auto& ch = call_->choices[ev.choice];
    if (ch.done)
        return; // ended (a drain cut it): what was still in flight is not sent after its finish
    if (ev.token >= 0)
        ++ch.n_tokens;
    if (sse_)
        call_->family->token(*this, facts(), ev);
    else
        call_->family->gather(facts(), ev);
}

void session::choice_done(msg::completion c) {
    if (c.choice >= call_->choices.size() || call_->choices[c.choice].done)
        return;
    call_->family->choice_end(sse_ ? this : nullptr, facts(), c);
    call_->choices[c.choice].done = std::move(c);
    if (!std::all_of(call_->choices.begin(), call_->choices.end(),
                     [](const call::choice& ch) { return ch.done.has_value(); }))
        return;

    // One completion for the whole request: the first choice's, with the tokens of all.
    msg::completion total = *call_->choices.front().done;
    total.completion_tokens = 0;
    for (const auto& ch : call_->choices) {
        const auto& d = *ch.done;
        total.completion_tokens += d.completion_tokens;
        total.ttft_us = std::min(total.ttft_us, d.ttft_us);
        total.decode_us = std::max(total.decode_us, d.decode_us);
        total.total_us = std::max(total.total_us, d.total_us);
    }
    srv_.m.completion(total);
    if (!srv_.opt.api_keys.empty())
        srv_.usage.add(client_key_, total.prompt_tokens, total.completion_tokens);
    srv_.m.request_done(call_->route, 200,
                        std::chrono::duration<double>(steady::now() - call_->start).count());
    spdlog::info("{} {} {} 200 model={} n={} prompt_tokens={} completion_tokens={} queue_ms={} "
                 "ttft_ms={} total_ms={}{}",
                 call_->req_id, call_->route, sse_ ? "stream" : "plain", total.model,
                 call_->choices.size(), total.prompt_tokens, total.completion_tokens,
                 ms_of(total.queue_us), ms_of(total.ttft_us), ms_of(total.total_us), trace_note());
    {
        std::vector<msg::completion> each;
        for (const auto& ch : call_->choices)
            each.push_back(*ch.done);
        trace_usage(each, &total);
    }
    const turn_reply none; // several choices: each one's text is the family's
    if (sse_) {
        call_->family->end(*this, facts(), none, total);
        return end_stream();
    }
    auto body = call_->family->body(facts(), none, total);
    auto route = call_->route;
    auto req_id = call_->req_id;
    call_.reset();
    send_json(route, 200, std::move(body), req_id, server_timing(total), 0, /*counted=*/true);
}

} // namespace bitnet::http
