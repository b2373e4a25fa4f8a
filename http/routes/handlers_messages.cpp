// Anthropic's Messages API on a session (http/anthropic/api_anthropic.hpp for the shapes): the
// stream's event sequence and the plain reply. A forced call to one function streams its arguments
// as input_json_delta events in a tool_use block; a call among several (or several parallel calls)
// comes whole at the end, a block each; a call cut short is no tool_use block (stop_reason
// max_tokens). A threaded request (`thread`, http/anthropic/message_thread.hpp) is made whole
// from the store before it is parsed, and its reply, plain or streamed, is stored for the next
// continue.
#include "http/anthropic/api_anthropic.hpp"
#include "http/anthropic/message_thread.hpp"
#include "http/api_render.hpp"
#include "http/api_structured.hpp"
#include "http/responses/response_store.hpp"
#include "http/routes/session.hpp"

#include <boost/json.hpp>

#include <algorithm>

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

} // namespace

void session::messages_stream_head() {
    if (call_->head_sent)
        return;
    call_->head_sent = true;
    sse_event("message_start",
              anthropic_message_start(call_->req_id, call_->model, call_->prompt_tokens));
    if (!call_->tool_call)
        sse_event("content_block_start", block_start(R"({"type":"text","text":""})"));
    else if (!call_->tool_name.empty())
        sse_event("content_block_start",
                  tool_use_start(anthropic_tool_use_id(call_->req_id), call_->tool_name));
    // A call among several functions: its block starts once the name is known (at the end), and
    // so do parallel calls, a block each.
    sse_event("ping", R"({"type":"ping"})");
}

void session::stream_messages_token(const msg::token_event& ev) {
    messages_stream_head();
    if (ev.text.empty())
        return;
    if (!call_->tool_call)
        sse_event(
            "content_block_delta",
            R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":)" +
                quoted(ev.text) + "}}");
    else if (!call_->tool_name.empty())
        sse_event("content_block_delta", json_delta(ev.text));
}

void session::messages_done_events(const msg::completion& c) {
    if (!call_->head_sent) {
        call_->prompt_tokens = std::max(call_->prompt_tokens, c.prompt_tokens);
        messages_stream_head();
    }
    const auto& r = *call_->reply;
    if (call_->whole_calls_at_end()) {
        // The calls among several functions, whole, each in one piece; a cut turn opens no block.
        // Calls the model opened itself follow the text block the stream began with.
        std::size_t first = 0;
        if (call_->auto_called()) {
            sse_event("content_block_stop", block_stop());
            first = 1;
        }
        if (r.called) {
            const auto blocks = anthropic_tool_use_blocks(r.calls, call_->req_id);
            for (std::size_t i = 0; i < blocks.size(); ++i) {
                const auto& block = blocks[i];
                sse_event("content_block_start",
                          tool_use_start(std::string(block.at("id").as_string()),
                                         std::string(block.at("name").as_string()), first + i));
                sse_event("content_block_delta",
                          json_delta(json::serialize(block.at("input")), first + i));
                sse_event("content_block_stop", block_stop(first + i));
            }
        }
    } else {
        sse_event("content_block_stop", block_stop());
    }
    const auto stop_reason = anthropic_stop_reason(c.finish, r.called, call_->has_stops);
    sse_event("message_delta", R"({"type":"message_delta","delta":{"stop_reason":)" +
                                   quoted(stop_reason) + R"(,"stop_sequence":)" +
                                   anthropic_stop_sequence(stop_reason, c) + R"(},"usage":)" +
                                   anthropic_usage(c) + "}");
    if (call_->cut)
        sse_event("error", anthropic_error_body(drain_error(), call_->req_id));
    else
        sse_event("message_stop", R"({"type":"message_stop"})");
    remember_thread(messages_content()); // a stream's reply continues its thread like a plain one
}

std::string session::messages_content() const {
    const auto& r = *call_->reply;
    json::array content;
    const auto text_block = [&] { return json::object{{"type", "text"}, {"text", r.text}}; };
    if (!call_->tool_call && !r.called) {
        content.push_back(text_block());
    } else if (r.called) {
        if (!r.text.empty()) // an auto turn's text before its calls
            content.push_back(text_block());
        for (auto& b : anthropic_tool_use_blocks(r.calls, call_->req_id))
            content.push_back(std::move(b));
    }
    return json::serialize(content);
}

std::string session::messages_body(const msg::completion& c) const {
    const auto content = messages_content();
    remember_thread(content);
    return anthropic_message_body(
        call_->req_id, c.model.empty() ? call_->model : c.model, content,
        anthropic_stop_reason(c.finish, call_->reply->called, call_->has_stops), c);
}

std::optional<api_error> session::expand_thread(const std::string& body, call& c,
                                                std::string& expanded) {
    auto parsed = parse_request_json(body);
    auto* root = std::get_if<json::value>(&parsed);
    auto* o = root ? root->if_object() : nullptr;
    if (!o)
        return std::nullopt; // the parser names what is wrong with it
    auto thread = read_message_thread(*o);
    if (auto* e = std::get_if<api_error>(&thread))
        return *e;
    const auto& t = std::get<message_thread>(thread);
    if (t.type == message_thread::kind::none)
        return std::nullopt;
    if (!srv_.responses.enabled())
        return thread_error(thread_refusal::unsupported, t.previous_message_id);
    std::string record;
    if (t.type == message_thread::kind::resume) {
        auto claim = srv_.responses.claim_thread(client_key_, t.previous_message_id);
        using state = response_store::thread_state;
        if (claim.state != state::claimed)
            return thread_error(claim.state == state::not_found ? thread_refusal::not_found
                                : claim.state == state::in_flight
                                    ? thread_refusal::in_flight
                                    : thread_refusal::already_continued,
                                t.previous_message_id);
        record = std::move(claim.record);
        c.thread_hold = std::move(claim.hold); // released with the call unless continued
        c.thread_previous = t.previous_message_id;
    }
    auto x = expand_message_thread(std::move(*o), record,
                                   static_cast<std::size_t>(srv_.opt.max_body_bytes));
    if (auto* e = std::get_if<api_error>(&x))
        return *e;
    auto& ex = std::get<thread_expansion>(x);
    expanded = std::move(ex.body);
    c.thread_head = std::move(ex.head);
    return std::nullopt;
}

void session::remember_thread(const std::string& content) const {
    if (call_->thread_head.empty() || call_->cut)
        return;
    srv_.responses.put_thread(client_key_, anthropic_message_id(call_->req_id),
                              thread_record(call_->thread_head, content), call_->thread_previous);
}

} // namespace bitnet::http
