// OpenAI requests with n > 1 (several choices from one prompt, its KV shared in the engine): each
// choice's tokens gather (or stream, as chunks carrying the choice's `index`) on their own; the
// reply, or the stream's usage and [DONE], comes when the last choice has ended. Usage counts the
// prompt once and the choices' tokens summed.
#include "http/openai/api_render_choices.hpp"
#include "http/routes/session.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace bitnet::http {

void session::choice_token(const msg::token_event& ev, bool lp) {
    if (ev.choice >= call_->choices.size())
        return;
    auto& ch = call_->choices[ev.choice];
    if (ch.done)
        return; // ended (a drain cut it): what was still in flight is not sent after its finish
    if (ev.token >= 0)
        ++ch.n_tokens;
    std::string chat_lp;
    std::array<std::string, 4> cols;
    if (lp && call_->kind == route_kind::chat)
        chat_lp = chat_logprob(ev, pieces_of(ev));
    if (lp && call_->kind == route_kind::completions) {
        cols = completion_logprob_columns(ev, pieces_of(ev), ch.text_offset);
        ch.text_offset += ev.text.size();
    }
    ch.text += ev.text;
    if (!sse_) {
        if (lp && call_->kind == route_kind::chat)
            ch.lp_chat.push_back(std::move(chat_lp));
        if (lp && call_->kind == route_kind::completions)
            for (std::size_t i = 0; i < 4; ++i)
                ch.lp_cols[i].push_back(std::move(cols[i]));
        return;
    }
    if (ev.text.empty() && !lp)
        return;
    if (call_->kind == route_kind::chat) {
        sse_data(chat_chunk(head(), R"({"content":)" + quoted(ev.text) + "}", "null",
                            lp ? chat_logprobs_object({chat_lp}) : "null", ev.choice));
    } else {
        std::string lps = "null";
        if (lp) {
            std::array<std::vector<std::string>, 4> one;
            for (std::size_t i = 0; i < 4; ++i)
                one[i].push_back(std::move(cols[i]));
            lps = completion_logprobs_object(one);
        }
        sse_data(completion_chunk(head(), ev.text, "null", lps, ev.choice));
    }
}

void session::choice_done(msg::completion c) {
    if (c.choice >= call_->choices.size() || call_->choices[c.choice].done)
        return;
    const auto index = c.choice;
    if (sse_) {
        const auto finish = quoted(openai_finish(c.finish));
        if (call_->kind == route_kind::chat)
            sse_data(chat_chunk(head(), "{}", finish, "null", index));
        else
            sse_data(completion_chunk(head(), "", finish, "null", index));
    }
    call_->choices[index].done = std::move(c);
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
    if (sse_) {
        if (call_->include_usage)
            sse_data(call_->kind == route_kind::chat ? chat_usage_chunk(head(), total)
                                                     : completion_usage_chunk(head(), total));
        if (call_->cut)
            sse_data(error_body(drain_error(), call_->req_id));
        sse_data("[DONE]");
        return end_stream();
    }
    std::vector<rendered_choice> out;
    for (auto& ch : call_->choices) {
        rendered_choice r;
        r.text = std::move(ch.text);
        r.finish = ch.done->finish;
        if (call_->want_logprobs)
            r.logprobs = call_->kind == route_kind::chat ? chat_logprobs_object(ch.lp_chat)
                                                         : completion_logprobs_object(ch.lp_cols);
        out.push_back(std::move(r));
    }
    auto body = call_->kind == route_kind::chat
                    ? chat_choices_body(call_->req_id, call_->created, total, out)
                    : completion_choices_body(call_->req_id, call_->created, total, out);
    auto route = call_->route;
    auto req_id = call_->req_id;
    call_.reset();
    send_json(route, 200, std::move(body), req_id, server_timing(total), 0, /*counted=*/true);
}

} // namespace bitnet::http
