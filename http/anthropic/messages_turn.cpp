#include "http/anthropic/messages_turn.hpp"

#include "http/anthropic/api_anthropic.hpp"
#include "http/api_render.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <utility>

namespace bitnet::http {

namespace json = boost::json;

namespace {

std::string block_start(const std::string& block, std::size_t index = 0) {
    return R"({"type":"content_block_start","index":)" + std::to_string(index) +
           R"(,"content_block":)" + block + "}";
}

std::string block_stop(std::size_t index = 0) {
    return R"({"type":"content_block_stop","index":)" + std::to_string(index) + "}";
}

std::string tool_use_start(const std::string& id, const std::string& name, std::size_t index = 0) {
    return block_start(
        json::serialize(json::object{
            {"type", "tool_use"}, {"id", id}, {"name", name}, {"input", json::object{}}}),
        index);
}

std::string json_delta(const std::string& partial, std::size_t index = 0) {
    return R"({"type":"content_block_delta","index":)" + std::to_string(index) +
           R"(,"delta":{"type":"input_json_delta","partial_json":)" + quoted(partial) + "}}";
}

/// The turn answers with calls that go out whole at the end: a forced call naming no one
/// function, or calls the model opened itself.
bool calls_at_end(const turn_facts& t, const turn_reply& r) {
    return (t.mode == turn_mode::forced_call && t.tool_name.empty()) ||
           (t.mode == turn_mode::auto_calls && r.called);
}

} // namespace

messages_turn::messages_turn(thread_keeper keep_thread)
    : keep_thread_(std::move(keep_thread)) {}

void messages_turn::open(frame_writer&, const turn_facts&) {
    // message_start carries the prompt's token count, known with the first token: it goes out
    // then (token), or at the end of a turn that wrote none.
}

void messages_turn::head(frame_writer& out, const turn_facts& t, std::uint32_t prompt_tokens) {
    if (head_sent_)
        return;
    head_sent_ = true;
    out.frame("message_start", anthropic_message_start(t.req_id, t.model, prompt_tokens));
    if (t.mode != turn_mode::forced_call)
        out.frame("content_block_start", block_start(R"({"type":"text","text":""})"));
    else if (!t.tool_name.empty())
        out.frame("content_block_start",
                  tool_use_start(anthropic_tool_use_id(t.req_id), t.tool_name));
    // A call among several functions: its block starts once the name is known (at the end), and
    // so do parallel calls, a block each.
    out.frame("ping", R"({"type":"ping"})");
}

void messages_turn::token(frame_writer& out, const turn_facts& t, const msg::token_event& ev) {
    head(out, t, t.prompt_tokens);
    if (ev.text.empty())
        return;
    if (t.mode != turn_mode::forced_call)
        out.frame(
            "content_block_delta",
            R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":)" +
                quoted(ev.text) + "}}");
    else if (!t.tool_name.empty())
        out.frame("content_block_delta", json_delta(ev.text));
}

void messages_turn::end(frame_writer& out, const turn_facts& t, const turn_reply& r,
                        const msg::completion& c) {
    head(out, t, std::max(t.prompt_tokens, c.prompt_tokens));
    if (calls_at_end(t, r)) {
        // The calls among several functions, whole, each in one piece; a cut turn opens no block.
        // Calls the model opened itself follow the text block the stream began with.
        std::size_t first = 0;
        if (t.mode == turn_mode::auto_calls) {
            out.frame("content_block_stop", block_stop());
            first = 1;
        }
        if (r.called) {
            const auto blocks = anthropic_tool_use_blocks(r.calls, t.req_id);
            for (std::size_t i = 0; i < blocks.size(); ++i) {
                const auto& block = blocks[i];
                out.frame("content_block_start",
                          tool_use_start(std::string(block.at("id").as_string()),
                                         std::string(block.at("name").as_string()), first + i));
                out.frame("content_block_delta",
                          json_delta(json::serialize(block.at("input")), first + i));
                out.frame("content_block_stop", block_stop(first + i));
            }
        }
    } else {
        out.frame("content_block_stop", block_stop());
    }
    const auto stop_reason = anthropic_stop_reason(c.finish, r.called, t.has_stops);
    out.frame("message_delta", R"({"type":"message_delta","delta":{"stop_reason":)" +
                                   quoted(stop_reason) + R"(,"stop_sequence":)" +
                                   anthropic_stop_sequence(stop_reason, c) + R"(},"usage":)" +
                                   anthropic_usage(c) + "}");
    if (t.drain_cut)
        out.frame("error", anthropic_error_body(drain_error(), t.req_id));
    else
        out.frame("message_stop", R"({"type":"message_stop"})");
    keep(t, content(t, r)); // a stream's reply continues its thread like a plain one
}

void messages_turn::fail(frame_writer& out, const turn_facts& t, const api_error& e) {
    out.frame("error", anthropic_error_body(e, t.req_id));
}

std::string messages_turn::content(const turn_facts& t, const turn_reply& r) {
    json::array blocks;
    const auto text_block = [&] { return json::object{{"type", "text"}, {"text", r.text}}; };
    if (t.mode != turn_mode::forced_call && !r.called) {
        blocks.push_back(text_block());
    } else if (r.called) {
        if (!r.text.empty()) // an auto turn's text before its calls
            blocks.push_back(text_block());
        for (auto& b : anthropic_tool_use_blocks(r.calls, t.req_id))
            blocks.push_back(std::move(b));
    }
    return json::serialize(blocks);
}

std::string messages_turn::body(const turn_facts& t, const turn_reply& r,
                                const msg::completion& c) {
    const auto blocks = content(t, r);
    keep(t, blocks);
    return anthropic_message_body(t.req_id, c.model.empty() ? t.model : c.model, blocks,
                                  anthropic_stop_reason(c.finish, r.called, t.has_stops), c);
}

void messages_turn::keep(const turn_facts& t, const std::string& blocks) const {
    if (keep_thread_ && !t.drain_cut)
        keep_thread_(blocks);
}

} // namespace bitnet::http
