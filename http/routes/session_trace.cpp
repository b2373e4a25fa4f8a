// The session's part of tracing: the request's trace context (a caller's W3C traceparent, or a
// new trace), the HTTP server span that every other span of the request hangs under, the
// `traceresponse` header that tells the caller the trace id, and the span's end with the status
// the client saw (499 when it left first). Spans exist only for sampled requests; the context,
// the header and the log correlation id exist for every request.
#include "http/session.hpp"

#include <spdlog/spdlog.h>

namespace bitnet::http {

namespace bhttp = boost::beast::http;

namespace {

/// Probes and scrapes make no spans: at sampling 1.0 they would bury the requests.
bool untraced(const route_match& m) {
    if (!m.found)
        return false;
    switch (m.found->id) {
    case route_id::health_live:
    case route_id::health_ready:
    case route_id::health:
    case route_id::metrics:
        return true;
    default:
        return false;
    }
}

} // namespace

void session::begin_trace(const request& req, const route_match& m) {
    std::optional<trace::context> incoming;
    if (auto tp = req.find("traceparent"); tp != req.end()) {
        incoming = trace::parse_traceparent(tp->value());
        if (incoming)
            if (auto ts = req.find("tracestate"); ts != req.end() && ts->value().size() <= 512)
                incoming->state = std::string(ts->value());
    }
    auto& rec = trace::recorder::process();
    trace_ = rec.start(incoming);
    const auto parent = trace_.span; // the caller's span, or 0
    trace_.span = trace::new_span_id();
    span_.reset();
    if (!trace_.sampled() || untraced(m))
        return;
    trace::span_record s;
    s.ctx = trace_;
    s.parent = parent;
    s.kind = trace::span_kind::server;
    s.name = std::string(req.method_string()) + " " + std::string(m.label);
    s.start_ns = trace::now_ns();
    s.attrs.push_back({"http.request.method", std::string(req.method_string())});
    s.attrs.push_back({"http.route", std::string(m.label)});
    s.attrs.push_back({"url.path", std::string(req.target().substr(0, req.target().find('?')))});
    s.attrs.push_back({"url.scheme", std::string(stream_.tls() ? "https" : "http")});
    boost::system::error_code ec;
    const auto peer = stream_.tcp_layer().socket().remote_endpoint(ec);
    if (!ec)
        s.attrs.push_back({"client.address", peer.address().to_string()});
    if (auto ua = req.find(bhttp::field::user_agent); ua != req.end())
        s.attrs.push_back({"user_agent.original", std::string(ua->value().substr(0, 256))});
    span_ = std::move(s);
}

std::string session::traceresponse() const {
    return trace_.trace == trace::trace_id{} ? std::string() : trace::format_traceparent(trace_);
}

void session::trace_attr(std::string key, trace::value v) {
    if (span_)
        span_->attrs.push_back({std::move(key), std::move(v)});
}

void session::end_trace(unsigned status, std::string_view request_id, const std::string& error) {
    if (!span_)
        return;
    auto s = std::move(*span_);
    span_.reset();
    s.end_ns = trace::now_ns();
    s.attrs.push_back({"http.response.status_code", static_cast<std::int64_t>(status)});
    if (!request_id.empty() && request_id != "-")
        s.attrs.push_back({"bitnet.request_id", std::string(request_id)});
    // OpenTelemetry's HTTP conventions: a server span is an error for 5xx only (a 4xx is the
    // client's); 499 (the client left) is neither, but says so.
    if (status >= 500 || !error.empty()) {
        s.status = trace::status_code::error;
        s.status_message = error.empty() ? "HTTP " + std::to_string(status) : error;
    }
    if (status >= 500)
        s.attrs.push_back({"error.type", std::to_string(status)});
    trace::recorder::process().submit(std::move(s));
}

void session::trace_request(const msg::generate_request& g, route_kind kind) {
    // GenAI semantic conventions: chat-shaped routes are "chat", prompt completion
    // "text_completion".
    const bool chat =
        kind == route_kind::chat || kind == route_kind::messages || kind == route_kind::responses;
    trace_attr("gen_ai.operation.name", std::string(chat ? "chat" : "text_completion"));
    trace_attr("gen_ai.provider.name", std::string("bitnet-serve"));
    trace_attr("gen_ai.request.model", call_ ? call_->model : g.model);
    trace_attr("gen_ai.request.max_tokens", static_cast<std::int64_t>(g.max_tokens));
    trace_attr("gen_ai.request.temperature", static_cast<double>(g.params.temperature));
    trace_attr("gen_ai.request.top_p", static_cast<double>(g.params.top_p));
    trace_attr("gen_ai.request.top_k", static_cast<std::int64_t>(g.params.top_k));
    if (g.n > 1)
        trace_attr("gen_ai.request.choice.count", static_cast<std::int64_t>(g.n));
    trace_attr("bitnet.stream", call_ ? call_->stream : false);
    if (!g.json_schema.empty())
        trace_attr("bitnet.schema_param", g.schema_param);
    if (!trace::recorder::process().include_text())
        return;
    // Only with otlp_include_text: the prompt as the server got it (text, or chat turns).
    std::string prompt = g.text.text;
    for (const auto& m : g.text.messages)
        prompt += (prompt.empty() ? "" : "\n") + m.role + ": " + m.content;
    if (g.text.form == msg::prompt_form::ids)
        prompt = std::to_string(g.prompt.size()) + " token ids";
    trace_attr("bitnet.prompt", std::move(prompt));
}

void session::trace_usage(const std::vector<msg::completion>& choices,
                          const msg::completion* total) {
    if (!span_ || choices.empty())
        return;
    const auto& t = total ? *total : choices.front();
    trace_attr("gen_ai.response.id", call_ ? call_->req_id : std::string());
    trace_attr("gen_ai.response.model", t.model);
    trace_attr("gen_ai.usage.input_tokens", static_cast<std::int64_t>(t.prompt_tokens));
    trace_attr("gen_ai.usage.output_tokens", static_cast<std::int64_t>(t.completion_tokens));
    std::vector<std::string> reasons;
    for (const auto& c : choices)
        reasons.push_back(c.finish_reason);
    trace_attr("gen_ai.response.finish_reasons", std::move(reasons));
    trace_attr("bitnet.model.version", t.model_version);
    trace_attr("bitnet.usage.cached_tokens", static_cast<std::int64_t>(t.cached_tokens));
    trace_attr("bitnet.queue_ms", static_cast<double>(t.queue_us) / 1000.0);
    trace_attr("bitnet.ttft_ms", static_cast<double>(t.ttft_us) / 1000.0);
    if (trace::recorder::process().include_text() && call_)
        trace_attr("bitnet.completion", call_->text);
}

std::string session::trace_note() const {
    return trace_.trace == trace::trace_id{} ? std::string()
                                             : " trace=" + trace::to_hex(trace_.trace);
}

log_fields session::log_context() const {
    log_fields f;
    if (call_) {
        f.request_id = call_->req_id;
        f.model = call_->model;
    }
    if (trace_.trace != trace::trace_id{}) {
        f.trace_id = trace::to_hex(trace_.trace);
        f.span_id = trace::to_hex(trace_.span);
    }
    return f;
}

} // namespace bitnet::http
