#include "http/openai/openai_turn.hpp"

#include "http/api_render.hpp"
#include "http/api_structured.hpp"
#include "http/openai/api_render_choices.hpp"
#include "http/openai/echo_render.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <utility>

namespace bitnet::http {

namespace json = boost::json;

namespace {

chunk_head head_of(const turn_facts& t) {
    return {t.req_id, t.created, t.model};
}

} // namespace

openai_turn::openai_turn(openai_options opt)
    : opt_(std::move(opt))
    , choices_(std::max<std::uint32_t>(opt_.n, 1)) {}

void openai_turn::open(frame_writer& out, const turn_facts& t) {
    if (!opt_.chat)
        return;
    // Every choice opens with its role, as OpenAI streams n > 1 (the SDK's stream helper
    // refuses a choice whose first delta has none); a tool call's with content null, not "" (an
    // empty string is an empty text part to the AI SDK).
    for (std::uint32_t i = 0; i < choices_.size(); ++i)
        out.frame(nullptr, chat_chunk(head_of(t),
                                      t.mode == turn_mode::forced_call
                                          ? R"({"role":"assistant","content":null})"
                                          : R"({"role":"assistant","content":""})",
                                      "null", "null", i));
}

openai_turn::choice* openai_turn::choice_of(const msg::token_event& ev) {
    if (ev.choice >= choices_.size() || choices_[ev.choice].finish)
        return nullptr; // ended (a drain cut it): what was still in flight is not kept
    auto& ch = choices_[ev.choice];
    if (opt_.n > 1)
        ch.text += ev.text; // one choice's text is the session's
    return &ch;
}

std::array<std::string, 4> openai_turn::columns_of(choice& ch, const msg::token_event& ev) {
    auto cols = completion_logprob_columns(ev, pieces_of(ev), ch.text_offset);
    ch.text_offset += ev.text.size();
    return cols;
}

void openai_turn::gather(const turn_facts&, const msg::token_event& ev) {
    auto* ch = choice_of(ev);
    if (!ch || !opt_.logprobs || ev.token < 0)
        return;
    if (opt_.chat) {
        ch->lp_chat.push_back(chat_logprob(ev, pieces_of(ev)));
        return;
    }
    auto cols = columns_of(*ch, ev);
    for (std::size_t i = 0; i < 4; ++i)
        ch->lp_cols[i].push_back(std::move(cols[i]));
}

void openai_turn::token(frame_writer& out, const turn_facts& t, const msg::token_event& ev) {
    auto* ch = choice_of(ev);
    if (!ch)
        return;
    const bool lp = opt_.logprobs && ev.token >= 0;
    if (opt_.chat) {
        const auto lps = lp ? chat_logprobs_object({chat_logprob(ev, pieces_of(ev))}) : "null";
        if (opt_.n > 1) {
            if (!ev.text.empty() || lp)
                out.frame(nullptr, chat_chunk(head_of(t), R"({"content":)" + quoted(ev.text) + "}",
                                              "null", lps, ev.choice));
            return;
        }
        return stream_chat_token(out, t, ev, lps);
    }
    if (ev.text.empty() && !lp)
        return;
    std::string lps = "null";
    if (lp) {
        auto cols = columns_of(*ch, ev);
        std::array<std::vector<std::string>, 4> one;
        for (std::size_t i = 0; i < 4; ++i)
            one[i].push_back(std::move(cols[i]));
        lps = completion_logprobs_object(one);
    }
    out.frame(nullptr, completion_chunk(head_of(t), ev.text, "null", lps, ev.choice));
}

void openai_turn::stream_chat_token(frame_writer& out, const turn_facts& t,
                                    const msg::token_event& ev, const std::string& lps) {
    if (t.mode == turn_mode::forced_call && !t.tool_name.empty()) {
        // The arguments as they come, as OpenAI streams them: the call's id and name first.
        if (!tool_opened_) {
            tool_opened_ = true;
            json::object fn{{"name", t.tool_name}, {"arguments", ""}};
            json::object open{{"index", 0},
                              {"id", tool_call_id(t.req_id)},
                              {"type", "function"},
                              {"function", std::move(fn)}};
            out.frame(nullptr, chat_chunk(head_of(t),
                                          R"({"tool_calls":)" +
                                              json::serialize(json::array{std::move(open)}) + "}",
                                          "null"));
        }
        if (!ev.text.empty())
            out.frame(nullptr, chat_chunk(head_of(t),
                                          R"({"tool_calls":[{"index":0,"function":{"arguments":)" +
                                              quoted(ev.text) + "}}]}",
                                          "null"));
        return;
    }
    if (t.mode == turn_mode::forced_call)
        return; // the call goes out whole at the end
    if (!ev.text.empty() || lps != "null")
        out.frame(nullptr,
                  chat_chunk(head_of(t), R"({"content":)" + quoted(ev.text) + "}", "null", lps));
}

std::string openai_turn::echo(frame_writer* out, const turn_facts& t, const msg::token_event& ev) {
    std::string text = opt_.echo_text ? *opt_.echo_text : ev.echo.text;
    std::array<std::vector<std::string>, 4> cols;
    if (opt_.logprobs)
        cols = completion_echo_columns(ev.echo);
    auto& ch = choices_.front();
    ch.text_offset = text.size(); // the generated tokens' offsets continue after it
    if (out) {
        out->frame(nullptr,
                   completion_chunk(head_of(t), text, "null",
                                    opt_.logprobs ? completion_logprobs_object(cols) : "null"));
        return text;
    }
    for (std::size_t i = 0; i < cols.size(); ++i)
        ch.lp_cols[i].insert(ch.lp_cols[i].begin(), cols[i].begin(), cols[i].end());
    return text;
}

void openai_turn::choice_end(frame_writer* out, const turn_facts& t, const msg::completion& c) {
    if (c.choice >= choices_.size())
        return;
    if (out) {
        const auto finish = quoted(openai_finish(c.finish));
        out->frame(nullptr, opt_.chat ? chat_chunk(head_of(t), "{}", finish, "null", c.choice)
                                      : completion_chunk(head_of(t), "", finish, "null", c.choice));
    }
    choices_[c.choice].finish = c.finish;
}

void openai_turn::end(frame_writer& out, const turn_facts& t, const turn_reply& r,
                      const msg::completion& c) {
    if (opt_.n > 1)
        return end_choices(out, t, c);
    if (opt_.chat)
        end_chat(out, t, r, c);
    else
        out.frame(nullptr, completion_chunk(head_of(t), "", quoted(openai_finish(c.finish))));
    if (opt_.include_usage)
        out.frame(nullptr, opt_.chat ? chat_usage_chunk(head_of(t), c)
                                     : completion_usage_chunk(head_of(t), c));
    if (t.drain_cut)
        out.frame(nullptr, error_body(drain_error(), t.req_id));
    out.frame(nullptr, "[DONE]");
}

void openai_turn::end_chat(frame_writer& out, const turn_facts& t, const turn_reply& r,
                           const msg::completion& c) {
    const auto finish = quoted(openai_finish(c.finish));
    if (t.mode == turn_mode::forced_call && !t.tool_name.empty()) {
        // The arguments went out as deltas; a whole call ends with "tool_calls", a cut one
        // with its reason (its partial arguments were only ever tool-call deltas).
        out.frame(nullptr, chat_chunk(head_of(t), "{}", r.called ? quoted("tool_calls") : finish));
    } else if (t.mode == turn_mode::forced_call || r.called) {
        // One delta with the whole call, then the finish: OpenAI's shape, in one piece. Cut
        // before the call was whole: no partial arguments as content.
        if (!r.calls.empty())
            out.frame(nullptr, chat_chunk(head_of(t),
                                          R"({"tool_calls":)" +
                                              tool_calls_json(r.calls, t.req_id, true) + "}",
                                          "null"));
        out.frame(nullptr, chat_chunk(head_of(t), "{}", r.called ? quoted("tool_calls") : finish));
    } else {
        out.frame(nullptr, chat_chunk(head_of(t), "{}", finish));
    }
}

void openai_turn::end_choices(frame_writer& out, const turn_facts& t,
                              const msg::completion& total) {
    if (opt_.include_usage)
        out.frame(nullptr, opt_.chat ? chat_usage_chunk(head_of(t), total)
                                     : completion_usage_chunk(head_of(t), total));
    if (t.drain_cut)
        out.frame(nullptr, error_body(drain_error(), t.req_id));
    out.frame(nullptr, "[DONE]");
}

void openai_turn::fail(frame_writer& out, const turn_facts& t, const api_error& e) {
    out.frame(nullptr, error_body(e, t.req_id));
    out.frame(nullptr, "[DONE]");
}

std::string openai_turn::body(const turn_facts& t, const turn_reply& r, const msg::completion& c) {
    if (opt_.n > 1)
        return choices_body(t, c);
    const auto& ch = choices_.front();
    if (opt_.chat && (t.mode == turn_mode::forced_call || r.called))
        return chat_tool_call_body(
            t.req_id, t.created, c,
            r.called ? std::optional(tool_calls_json(r.calls, t.req_id, false)) : std::nullopt,
            r.text.empty() ? nullptr : &r.text);
    if (opt_.chat)
        return chat_body(t.req_id, t.created, c, r.text,
                         opt_.logprobs ? chat_logprobs_object(ch.lp_chat) : "null");
    return completion_body(t.req_id, t.created, c, r.text,
                           opt_.logprobs ? completion_logprobs_object(ch.lp_cols) : "null");
}

std::string openai_turn::choices_body(const turn_facts& t, const msg::completion& total) {
    std::vector<rendered_choice> out;
    for (auto& ch : choices_) {
        rendered_choice r;
        r.text = std::move(ch.text);
        r.finish = ch.finish.value_or(msg::finish_reason::cancelled);
        if (opt_.logprobs)
            r.logprobs = opt_.chat ? chat_logprobs_object(ch.lp_chat)
                                   : completion_logprobs_object(ch.lp_cols);
        out.push_back(std::move(r));
    }
    return opt_.chat ? chat_choices_body(t.req_id, t.created, total, out)
                     : completion_choices_body(t.req_id, t.created, total, out);
}

} // namespace bitnet::http
