// The inference routes, every family alike: the request's family parses it (families.hpp) and it
// is handed to a sink actor (inference_sink.hpp) that submits it to admission; a text prompt or
// chat messages go as they came and are tokenized by the model version admission routes them to.
// The sink's events (admitted, token, done, fail), posted onto the strand, go to the family's
// turn (family_turn.hpp), which renders them; this file keeps the request log, metrics, the
// settled turn and the drain-cut answers.
#include "http/api_json.hpp"
#include "http/api_structured.hpp"
#include "http/cache_scope.hpp"
#include "http/routes/families.hpp"
#include "http/routes/session.hpp"
#include "http/transport/request_errors.hpp"
#include "messages/errors.hpp"

#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <caf/actor_system.hpp>
#include <spdlog/spdlog.h>

namespace bitnet::http {

namespace net = boost::asio;
namespace json = boost::json;

/// The request admission gets for the family's parse `s`, and what `c` keeps of it to render
/// the answer (prompt length when ids were sent, the echo, stops, the turn's mode).
msg::generate_request session::generate_request_of(call& c, started_turn& s,
                                                   std::uint64_t id) const {
    auto& in = s.in;
    msg::generate_request g;
    g.id = id;
    g.model = c.model;
    if (in.prompt_is_ids) {
        g.prompt = std::move(in.prompt_ids);
        c.prompt_tokens = static_cast<std::uint32_t>(g.prompt.size());
    } else if (s.chat_prompt) {
        g.text.form = msg::prompt_form::chat;
        g.text.messages = std::move(in.messages);
        g.text.tools_json = std::move(in.template_tools);
        g.text.kwargs_json = std::move(in.template_kwargs);
    } else {
        g.text.form = msg::prompt_form::text;
        g.text.text = std::move(in.prompt_text);
    }
    g.text.add_bos = in.add_bos;
    g.token_pieces = s.token_pieces;
    // Completions `echo`: the prompt comes back first, scored token by token (teacher forcing)
    // when logprobs are asked. Every scored row must be computed, so the batcher gives a
    // prompt_logprobs request no cached prefix.
    g.echo = in.echo;
    g.prompt_logprobs = in.echo && s.token_pieces;
    c.echo = in.echo;
    g.max_tokens = in.max_tokens;
    g.params = in.params;
    // Whether the reply shows the chosen token's logprob (the family says). A greedy request
    // that shows none needs only each row's first maximum (the greedy screen's case,
    // engine_options::greedy_screen).
    g.params.report_logprob = s.report_logprob;
    c.has_stops = !in.stop.empty();
    g.stop = std::move(in.stop);
    g.stop_token_ids = std::move(in.stop_token_ids);
    g.prio = in.prio;
    g.speculative = in.speculative;
    g.timeout_ms = in.timeout_ms;
    g.client_key = tenant_; // fair shares and quotas: the key, or the client's address
    g.cache_scope =
        cache_scope_of(srv_.opt.api_keys, srv_.opt.cache_share_groups, client_key_, in.cache_salt);
    g.json_schema = std::move(in.json_schema);
    g.schema_param = std::move(in.schema_param);
    c.tool_call = in.tool_call;
    c.tool_name = in.tool_name;
    c.auto_tools = !in.tool_union.empty() && in.n == 1;
    if (c.auto_tools)
        g.tool_union = std::move(in.tool_union);
    g.n = in.n;
    return g;
}

void session::start_inference(const std::string& route, const std::string& body) {
    const auto id = srv_.next_id.fetch_add(1);
    call c;
    c.route = route;
    c.req_id = "req-" + std::to_string(id);
    // The family parses the body (with the stored parts a Responses or threaded Messages
    // request names filled in) and gives the turn that renders the answer.
    auto started =
        start_family_turn(route, body,
                          family_context{srv_.responses, client_key_, c.req_id,
                                         static_cast<std::size_t>(srv_.opt.max_body_bytes)});
    if (!started)
        return send_error(route, status_error(404, "no API family serves " + route), c.req_id);
    if (auto* e = std::get_if<api_error>(&*started))
        return send_error(route, *e, c.req_id);
    auto& s = std::get<started_turn>(*started);
    const auto& in = s.in;
    c.model = in.model.empty() ? srv_.opt.default_model : in.model;
    c.stream = in.stream;
    if (in.n > srv_.opt.max_n)
        return send_error(route,
                          api_error{400, "invalid_request_error", "invalid_value",
                                    "n is " + std::to_string(in.n) +
                                        "; this server generates at most max_n = " +
                                        std::to_string(srv_.opt.max_n) + " choices per request",
                                    "n", "ask for fewer choices", 0},
                          c.req_id);
    c.n_choices = in.n;
    c.choices.resize(in.n);
    c.family = std::move(s.turn);

    auto g = generate_request_of(c, s, id);
    c.active = call_count(srv_.requests);
    g.t_received_us =
        std::chrono::duration_cast<std::chrono::microseconds>(steady::now().time_since_epoch())
            .count();

    g.trace = msg::trace_ref::of(trace_);

    auto t = make_sink_target();
    call_ = std::move(c);
    if (span_)
        trace_request(g, s.chat_prompt);
    // A stream's headers wait for admission's answer, so a refusal (429, 503) is a real
    // HTTP status with Retry-After, which client libraries act on.
    watch_disconnect();
    call_->sink = spawn_sink(srv_.sys, srv_.admission, std::move(g), std::move(t));
    std::lock_guard lk(requests_->mu);
    requests_->sinks[reg_id_] = call_->sink;
}

/// The sink's callbacks: each posts its event onto this connection's strand, under safely().
std::shared_ptr<sink_target> session::make_sink_target() {
    auto t = std::make_shared<sink_target>();
    t->counted = live_count(requests_->sink_targets);
    auto self = this->self();
    auto ex = stream_.get_executor();
    t->on_admitted = [self, ex] {
        net::post(ex, [self] {
            self->safely("admission", [&] {
                if (self->call_ && !self->call_->ended && self->call_->stream && !self->sse_)
                    self->begin_stream();
            });
        });
    };
    t->on_token = [self, ex](msg::token_event ev) {
        net::post(ex, [self, ev = std::move(ev)]() mutable {
            self->safely("token", [&] { self->on_token(std::move(ev)); });
        });
    };
    t->on_done = [self, ex](msg::completion done) {
        net::post(ex, [self, done = std::move(done)]() mutable {
            self->safely("completion", [&] { self->on_done(std::move(done)); });
        });
    };
    t->on_fail = [self, ex](caf::error e) {
        net::post(ex, [self, e = std::move(e)]() mutable {
            self->safely("failure", [&] { self->on_fail(std::move(e)); });
        });
    };
    return t;
}

// ---- events from the sink (on the strand) ------------------------------------------------

void session::on_token(msg::token_event ev) {
    if (!call_ || call_->ended)
        return;
    if (!ev.echo.tokens.empty())
        return on_echo(std::move(ev));
    if (call_->stream && !sse_)
        begin_stream(); // admission's answer is posted first; this is only a safety net
    const auto now = steady::now();
    const bool real_token = ev.token >= 0; // < 0: held-back text released at the end
    if (call_->model.empty() && !ev.model.empty())
        call_->model = ev.model; // routed without a model name: the alias that serves it
    if (real_token && call_->last_token != steady::time_point{})
        srv_.m.inter_token(std::chrono::duration<double>(now - call_->last_token).count());
    if (real_token) {
        call_->last_token = now;
        if (call_->n_tokens++ == 0) {
            call_->first_token = now;
            call_->prompt_tokens = ev.prompt_tokens;
            if (!call_->echoed) // else counted with the echo
                srv_.m.prompt_processed(call_->prompt_tokens);
        }
        srv_.m.token_generated();
    }
    if (call_->n_choices > 1)
        return choice_token(ev);
    // The text of a call the model opened is kept for the end (settle_turn_of).
    if (call_->auto_tools)
        call_->call_text += ev.call_text;
    call_->text += ev.text;
    if (!sse_)
        return call_->family->gather(facts(), ev);
    call_->family->token(*this, facts(), ev);
}

void session::settle_turn_of(const msg::completion& c) {
    call_->reply = settle_turn(turn_output{facts().mode, std::move(call_->text),
                                           std::move(call_->call_text), call_->tool_name},
                               c.finish, call_->cut);
    call_->text.clear();
    call_->call_text.clear();
    if (sse_ && !call_->reply->unsent_text.empty()) {
        msg::token_event rest;
        rest.token = -1; // text only
        rest.text = call_->reply->unsent_text;
        call_->family->token(*this, facts(), rest);
    }
}

/// The prompt echo (completions `echo`), before any generated token: the prompt's text (as sent,
/// for a text prompt) and, with logprobs, its columns (the first token's null) ahead of the
/// generated tokens'. A stream sends it as its first chunk, as vLLM does.
void session::on_echo(msg::token_event ev) {
    if (!call_->echo || call_->echoed)
        return; // a request moved to another node after its echo gets a second one: dropped
    call_->echoed = true;
    if (call_->stream && !sse_)
        begin_stream();
    if (call_->model.empty() && !ev.model.empty())
        call_->model = ev.model;
    call_->prompt_tokens = ev.prompt_tokens;
    srv_.m.prompt_processed(call_->prompt_tokens);
    auto text = call_->family->echo(sse_ ? this : nullptr, facts(), ev);
    call_->text = sse_ ? call_->text + text : std::move(text) + call_->text;
}

void session::on_done(msg::completion c) {
    if (!call_ || call_->ended)
        return;
    if (call_->cut && !sse_) {
        // Nothing was sent yet: a proper error reply (send_error counts and logs it).
        auto route = call_->route;
        auto req_id = call_->req_id;
        call_.reset();
        return send_error(route, drain_error(), req_id);
    }
    if (call_->stream && !sse_)
        begin_stream();
    if (call_->n_choices > 1)
        return choice_done(std::move(c));
    settle_turn_of(c);
    const auto& r = *call_->reply;
    srv_.m.completion(c);
    if (!srv_.opt.api_keys.empty())
        srv_.usage.add(client_key_, c.prompt_tokens, c.completion_tokens);
    srv_.m.request_done(call_->route, 200,
                        std::chrono::duration<double>(steady::now() - call_->start).count());
    // The request log: one line per inference request.
    spdlog::info("{} {} {} 200 model={} finish={} prompt_tokens={} completion_tokens={} "
                 "queue_ms={} ttft_ms={} total_ms={}{}",
                 call_->req_id, call_->route, sse_ ? "stream" : "plain", c.model,
                 to_string(c.finish), c.prompt_tokens, c.completion_tokens, ms_of(c.queue_us),
                 ms_of(c.ttft_us), ms_of(c.total_us), trace_note());
    trace_usage({c});
    if (sse_) {
        call_->family->end(*this, facts(), r, c);
        return end_stream();
    }
    auto body = call_->family->body(facts(), r, c);
    auto route = call_->route;
    auto req_id = call_->req_id;
    call_.reset();
    send_json(route, 200, std::move(body), req_id, server_timing(c), 0, /*counted=*/true);
}

void session::on_fail(caf::error e) {
    if (!call_ || call_->ended)
        return;
    const auto err =
        sees_all() ? msg::from_caf_error(e) : without_operator_detail(msg::from_caf_error(e));
    auto api = to_api_error(err, msg::retry_after_of(e));
    if (err.value() == errc::queue_full || err.value() == errc::draining)
        srv_.m.rejected(api.code);
    else if (err.value() == errc::quota_exceeded)
        srv_.m.rejected("quota");
    spdlog::info("{} {} {} {} code={} message={}{}", call_->req_id, call_->route,
                 sse_ ? "stream" : "plain", api.status, api.code,
                 excerpt(api.message, max_error_message_bytes), trace_note());
    if (span_) {
        trace_attr("error.type", api.code);
        if (sse_ || api.status >= 500) { // a stream's 200 went out; its failure is the span's
            span_->status = trace::status_code::error;
            span_->status_message = api.message;
        }
    }
    if (sse_) {
        srv_.m.request_done(call_->route, api.status, 0);
        call_->family->fail(*this, facts(), api);
        return end_stream();
    }
    auto route = call_->route;
    auto req_id = call_->req_id;
    call_.reset();
    send_error(route, api, req_id);
}

} // namespace bitnet::http
