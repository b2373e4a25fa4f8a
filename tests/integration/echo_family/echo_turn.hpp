// A family written outside http/, in the test tree: POST /v1/echo answers in its own JSON shape,
// {"said","tokens","finish"} plain, or as NDJSON lines ({"id"}, {"piece"}..., then
// {"done":true,...}) when streamed. It plugs in with one registry line:
//   http::add_family("/v1/echo", echo_family::start);
// and everything else (admission, tenants, metrics, the settled turn) is the server's.
#pragma once

#include "http/errors.hpp"
#include "http/family_turn.hpp"
#include "http/routes/families.hpp"

#include <boost/json.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <variant>

namespace echo_family {

namespace json = boost::json;
using namespace bitnet;
using namespace bitnet::http;

class echo_turn final : public family_turn {
public:
    [[nodiscard]] stream_framing framing() const override { return stream_framing::ndjson; }
    void open(frame_writer& out, const turn_facts& t) override {
        out.frame(nullptr, json::serialize(json::object{{"id", t.req_id}, {"model", t.model}}));
    }
    void token(frame_writer& out, const turn_facts&, const msg::token_event& ev) override {
        if (!ev.text.empty())
            out.frame(nullptr, json::serialize(json::object{{"piece", ev.text}}));
    }
    void end(frame_writer& out, const turn_facts&, const turn_reply& r,
             const msg::completion& c) override {
        out.frame(nullptr, json::serialize(json::object{{"done", true},
                                                        {"said", r.text},
                                                        {"tokens", c.completion_tokens},
                                                        {"finish", to_string(c.finish)}}));
    }
    void fail(frame_writer& out, const turn_facts&, const api_error& e) override {
        out.frame(nullptr, json::serialize(json::object{{"error", e.message}}));
    }
    [[nodiscard]] std::string body(const turn_facts&, const turn_reply& r,
                                   const msg::completion& c) override {
        return json::serialize(json::object{
            {"said", r.text}, {"tokens", c.completion_tokens}, {"finish", to_string(c.finish)}});
    }
};

/// {"ids": [token ids], "max": N (default 4), "stream": bool}: greedy, N tokens after the ids.
inline std::variant<api_error, started_turn> start(std::string_view body, const family_context&) {
    boost::system::error_code ec;
    const auto v = json::parse(body, ec);
    if (ec || !v.is_object())
        return invalid_value("", "an echo request is a JSON object");
    const auto& o = v.get_object();
    const auto* ids = o.if_contains("ids");
    if (!ids || !ids->is_array() || ids->as_array().empty())
        return invalid_value("ids", "ids must be a non-empty array of token ids");
    started_turn s;
    for (const auto& id : ids->as_array()) {
        if (!id.is_int64())
            return invalid_value("ids", "ids must be a non-empty array of token ids");
        s.in.prompt_ids.push_back(static_cast<msg::token_id>(id.as_int64()));
    }
    s.in.prompt_is_ids = true;
    s.in.max_tokens = 4;
    if (const auto* m = o.if_contains("max"); m && m->is_int64())
        s.in.max_tokens = static_cast<std::uint32_t>(m->as_int64());
    s.in.params.temperature = 0.0f;
    if (const auto* st = o.if_contains("stream"); st && st->is_bool())
        s.in.stream = st->as_bool();
    s.turn = std::make_unique<echo_turn>();
    return s;
}

} // namespace echo_family
