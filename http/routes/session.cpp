// The session's side of the transport's hooks (transport/connection.hpp): its place in the
// request registry, the end of a request cut by the drain deadline or left by its client, the
// answer to an internal failure, each API family's request-id header and error shape, and the
// stream's head with each family's opening events.
#include "http/routes/session.hpp"

#include "http/routes/families.hpp"

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace bitnet::http {

session::session(tcp::socket&& s, server::impl& srv)
    : connection(std::move(s), srv)
    , srv_(srv)
    , requests_(srv.requests) {}

session::~session() {
    std::lock_guard lk(requests_->mu);
    requests_->sinks.erase(reg_id_);
}

std::string session::route_label(std::string_view method, std::string_view path) const {
    const auto m = match_route(method, path, srv_.opt.test_hooks);
    return m.found ? std::string(m.label) : std::string("-");
}

std::string session::error_body_for(const std::string& route, const api_error& e,
                                    const std::string& id) const {
    return family_error_body(route, e, id);
}

std::vector<std::pair<std::string, std::string>>
session::family_headers(const std::string& route, const std::string& req_id) const {
    return http::family_headers(route, req_id);
}

void session::cut_request() {
    if (call_->sink)
        caf::anon_send_exit(call_->sink, caf::exit_reason::user_shutdown);
    call_->cut = true;
    msg::completion c;
    c.finish = msg::finish_reason::cancelled;
    c.model = call_->model;
    c.prompt_tokens = call_->prompt_tokens;
    c.completion_tokens = static_cast<std::uint32_t>(call_->n_tokens);
    const auto us = [this](steady::time_point t) {
        return std::chrono::duration_cast<std::chrono::microseconds>(t - call_->start).count();
    };
    c.total_us = us(steady::now());
    if (call_->first_token != steady::time_point{}) {
        c.ttft_us = us(call_->first_token);
        c.decode_us = c.total_us - c.ttft_us;
    }
    if (call_->n_choices <= 1)
        return on_done(std::move(c));
    // n > 1: every choice still running ends here, each with its own tokens; the last one
    // sends the usage, the drain error and [DONE] (or, before the stream began, the 503).
    for (std::uint32_t i = 0; i < call_->n_choices; ++i) {
        if (!call_ || call_->ended)
            break;
        if (i < call_->choices.size() && call_->choices[i].done)
            continue;
        auto ci = c;
        ci.choice = i;
        ci.completion_tokens = i < call_->choices.size() ? call_->choices[i].n_tokens : 0;
        on_done(std::move(ci));
    }
}

/// The sequence is cancelled (its sink dies, the batcher frees its KV); counted and logged as
/// 499, the status nobody receives.
void session::request_gone() {
    if (!call_ || call_->ended)
        return;
    if (call_->sink)
        caf::anon_send_exit(call_->sink, caf::exit_reason::user_shutdown);
    call_->ended = true;
    const auto secs = std::chrono::duration<double>(steady::now() - call_->start).count();
    srv_.m.request_done(call_->route, 499, secs);
    spdlog::info("{} {} {} 499 client_closed tokens_sent={} total_ms={}{}", call_->req_id,
                 call_->route, sse_ ? "stream" : "plain", call_->n_tokens, fixed(secs * 1000.0, 3),
                 trace_note());
    trace_attr("gen_ai.usage.output_tokens", static_cast<std::int64_t>(call_->n_tokens));
    end_trace(499, call_->req_id);
}

void session::internal_failure(const char* what, const char* why) noexcept {
    try {
        const auto id = call_ ? call_->req_id : "-";
        spdlog::error("{}: internal error while handling the {}: {}", id, what, why);
        keep_alive_ = false;
        api_error e{500,
                    "server_error",
                    "internal_error",
                    "the server failed while handling this request",
                    "",
                    "",
                    0};
        if (call_ && !call_->ended && sse_) {
            srv_.m.request_done(call_->route, 500, 0);
            if (call_->family)
                call_->family->fail(*this, facts(), e); // in the family's own shape
            else
                sse_event("error", error_body(e, call_->req_id));
            return end_stream();
        }
        if (call_ && call_->sink)
            caf::anon_send_exit(call_->sink, caf::exit_reason::user_shutdown);
        if (!responding_ && !sse_ && !closed_) {
            auto route = call_ ? call_->route : std::string("-");
            call_.reset();
            return send_error(route, e, id);
        }
        close();
    } catch (...) {
        close();
    }
}

void session::begin_stream() {
    open_stream(call_->req_id, call_->route, call_->family->framing());
    call_->family->open(*this, facts());
}

void session::frame(const char* name, const std::string& data) {
    if (framing_ == stream_framing::ndjson)
        ndjson_line(data);
    else if (name)
        sse_event(name, data);
    else
        sse_data(data);
}

const turn_facts& session::facts() {
    // Built once per request and kept in step with what changes while it runs (the model that
    // serves it, the prompt's length, a drain cut), so a token costs no string copies here.
    auto& t = call_->facts;
    if (t.req_id.empty()) {
        t.req_id = call_->req_id;
        t.created = call_->created;
        t.mode = call_->tool_call    ? turn_mode::forced_call
                 : call_->auto_tools ? turn_mode::auto_calls
                                     : turn_mode::text;
        t.tool_name = call_->tool_name;
        t.has_stops = call_->has_stops;
    }
    if (t.model != call_->model)
        t.model = call_->model;
    t.prompt_tokens = call_->prompt_tokens;
    t.drain_cut = call_->cut;
    return t;
}

void session::end_stream() {
    call_->ended = true;
    finish_stream();
}

} // namespace bitnet::http
