// The HTTP front end's fuzz property, shared by the in-tree mutation fuzzer and the libFuzzer
// entry. Arbitrary bytes go through what a connection does with them, as the session does it:
// Beast's request parser under the server's limits and bounded read buffer, fed in socket-sized
// pieces, pipelined requests one after another; then the route table, and the body validation
// of the route that matched. The property: nothing throws or crashes; a refused request maps to
// 400/413/431 with a JSON error body; every metrics label is a route pattern or "unmatched"; a
// validated inference request keeps its invariants. Any violation aborts (a finding).
#pragma once

#include "http/anthropic/api_anthropic.hpp"
#include "http/api_json.hpp"
#include "http/responses/api_responses.hpp"
#include "http/responses/response_store.hpp"
#include "http/routes/routes.hpp"
#include "http/transport/request_errors.hpp"
#include "model/tokenizer/chat_template.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace bitnet::fuzz {

[[noreturn]] inline void http_finding(const char* what, std::string_view detail = {}) {
    std::fprintf(stderr, "http fuzz finding: %s %.*s\n", what, static_cast<int>(detail.size()),
                 detail.data());
    std::abort();
}

/// Small limits, so that the refusals (413, 431) are reached by short inputs.
inline constexpr http::read_limits k_fuzz_limits{4096, 1024};

inline void check_error_body(const http::api_error& e) {
    if (e.message.empty() || e.code.empty() || e.type.empty())
        http_finding("error without message, code or type", e.message);
    boost::system::error_code ec;
    auto v = boost::json::parse(http::error_body(e, "req-1"), ec);
    if (ec || !v.is_object() || !v.as_object().contains("error"))
        http_finding("error body is not the contract's JSON", e.message);
}

/// The families that translate to chat: Anthropic's Messages and OpenAI's Responses API.
enum class translated { none, messages, responses };

/// A store with one reply and its items, so previous_response_id and item_reference resolve
/// ("resp_f", "msg_f", "fc_f") as well as miss.
inline http::response_store& fuzz_store() {
    static http::response_store store({8, std::chrono::seconds(3600), 1 << 20});
    static const bool seeded = [] {
        store.put(
            "", "resp_f",
            R"([{"type":"message","role":"user","content":"q"},)"
            R"({"id":"fc_f","type":"function_call","call_id":"c","name":"f","arguments":"{}"}])",
            {{"fc_f", R"({"id":"fc_f","type":"function_call","call_id":"c","name":"f",)"
                      R"("arguments":"{}"})"},
             {"msg_f", R"({"id":"msg_f","type":"message","role":"assistant","content":"a"})"}});
        return true;
    }();
    (void)seeded;
    return store;
}

inline void check_inference(const std::string& body, http::api_family kind,
                            translated via = translated::none) {
    std::string expanded;
    if (via == translated::responses) {
        // As the session does: the stored parts first, bounded by the body limit.
        auto x =
            http::expand_responses_request(body, fuzz_store(), "", k_fuzz_limits.max_body_bytes);
        if (auto* e = std::get_if<http::api_error>(&x)) {
            if (e->status != 400)
                http_finding("stored-reply refusal outside 400", e->message);
            return check_error_body(*e);
        }
        expanded = std::move(std::get<http::responses_expansion>(x).body);
        if (expanded.size() > k_fuzz_limits.max_body_bytes && expanded != body)
            http_finding("an expanded request past the body limit");
    }
    auto parsed = via == translated::messages    ? http::parse_messages(body)
                  : via == translated::responses ? http::parse_responses(expanded)
                                                 : http::parse_inference(body, kind);
    if (auto* e = std::get_if<http::api_error>(&parsed)) {
        if (e->status < 400 || e->status > 499)
            http_finding("validation error outside 4xx", e->message);
        return check_error_body(*e);
    }
    const auto& in = std::get<http::inference_input>(parsed);
    if (in.max_tokens < 1 || in.max_tokens > (1u << 20))
        http_finding("max_tokens out of range after validation");
    if (kind == http::api_family::chat) {
        if (in.messages.empty())
            http_finding("chat without messages after validation");
        // What the serving version's text actor does with them.
        std::vector<model::chat_turn> turns;
        for (const auto& m : in.messages) {
            model::chat_turn t{m.role, m.content, {}, m.name};
            for (const auto& c : m.tool_calls)
                t.calls.push_back({c.name, c.arguments});
            turns.push_back(std::move(t));
        }
        (void)model::render_chat(turns, model::chat_template::bitnet);
        (void)model::render_chat(turns, model::chat_template::llama3);
    } else if (in.prompt_is_ids ? in.prompt_ids.empty() : in.prompt_text.empty()) {
        http_finding("empty prompt after validation");
    }
}

/// What the session does with one parsed request, short of the actors.
inline void check_request(const boost::beast::http::request<boost::beast::http::string_body>& req) {
    std::string target(req.target());
    target = target.substr(0, target.find('?'));
    const auto m = http::match_route(req.method_string(), target, true);
    static const std::set<std::string_view> labels = [] {
        std::set<std::string_view> s{"unmatched"};
        for (const auto& r : http::routes())
            s.insert(r.pattern);
        return s;
    }();
    if (!labels.count(m.label))
        http_finding("metrics label from client text", m.label);
    if (m.found && m.found->need == http::role::open && target.substr(0, 4) == "/v1/")
        http_finding("an open route under /v1/", target);
    if (!m.found)
        return;
    const auto& body = req.body();
    switch (m.found->id) {
    case http::route_id::inference:
    case http::route_id::inference_stream:
        return check_inference(body, http::api_family::native);
    case http::route_id::completions:
        return check_inference(body, http::api_family::completions);
    case http::route_id::chat:
        return check_inference(body, http::api_family::chat);
    case http::route_id::messages:
    case http::route_id::messages_count_tokens:
        return check_inference(body, http::api_family::chat, translated::messages);
    case http::route_id::responses:
        return check_inference(body, http::api_family::chat, translated::responses);
    case http::route_id::tokenize:
    case http::route_id::detokenize:
    case http::route_id::model_load: {
        boost::system::error_code ec;
        (void)boost::json::parse(body, ec); // the session's non-throwing parse
        return;
    }
    default:
        return;
    }
}

/// Feeds `bytes` to the parser as a socket would: reads of 1..512 bytes (sizes drawn from the
/// input itself, so a case replays exactly) into a buffer bounded as the session bounds it.
inline void check_http_bytes(std::span<const std::uint8_t> bytes) {
    namespace beast = boost::beast;
    namespace bhttp = beast::http;
    try {
        std::size_t at = 0;
        std::uint32_t h = 2166136261u;
        for (auto b : bytes)
            h = (h ^ b) * 16777619u;
        beast::flat_buffer buf;
        buf.max_size(k_fuzz_limits.max_header_bytes + 1024);
        for (int request = 0; request < 8; ++request) { // pipelined requests on one connection
            bhttp::request_parser<bhttp::string_body> parser;
            parser.header_limit(k_fuzz_limits.max_header_bytes);
            parser.body_limit(k_fuzz_limits.max_body_bytes);
            beast::error_code ec;
            while (!parser.is_done()) {
                if (buf.size() > 0) {
                    const auto used = parser.put(buf.data(), ec);
                    buf.consume(used);
                    if (ec == bhttp::error::need_more)
                        ec = {};
                    else if (ec)
                        break;
                    if (used > 0)
                        continue;
                }
                if (at == bytes.size()) {
                    // The peer closed: EOF before a request, or in the middle of one.
                    if (parser.got_some())
                        parser.put_eof(ec);
                    else
                        ec = bhttp::error::end_of_stream;
                    break;
                }
                const std::size_t room = buf.max_size() - buf.size();
                if (room == 0) {
                    ec = bhttp::error::buffer_overflow; // what the session's read reports
                    break;
                }
                h = h * 1103515245u + 12345u;
                const std::size_t n =
                    std::min<std::size_t>({bytes.size() - at, room, 1 + (h >> 16) % 512});
                std::memcpy(buf.prepare(n).data(), bytes.data() + at, n);
                buf.commit(n);
                at += n;
            }
            if (ec) {
                if (auto refusal = http::read_refusal(ec, k_fuzz_limits)) {
                    if (refusal->status != 400 && refusal->status != 413 && refusal->status != 431)
                        http_finding("framing refusal with an unexpected status", refusal->message);
                    check_error_body(*refusal);
                }
                return; // the session answers (or not) and closes
            }
            const bool keep_alive = parser.keep_alive();
            check_request(parser.release());
            if (!keep_alive)
                return;
        }
    } catch (const std::exception& e) {
        http_finding("exception", e.what());
    }
}

} // namespace bitnet::fuzz
