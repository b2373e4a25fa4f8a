// The session's part of tracing: which routes make a server span (probes and scrapes do not),
// the GenAI attributes of an inference request and of its response, and the log correlation
// fields. The trace context, the span and the traceresponse header are the transport's
// (transport/connection_trace.cpp).
#include "http/routes/session.hpp"

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
    connection::begin_trace(req, m.label, !untraced(m));
}

void session::trace_request(const msg::generate_request& g, bool chat) {
    // GenAI semantic conventions: chat-shaped routes are "chat", prompt completion
    // "text_completion".
    trace_attr("gen_ai.operation.name", std::string(chat ? "chat" : "text_completion"));
    trace_attr("gen_ai.provider.name", std::string("bitnet-serve"));
    trace_attr("gen_ai.request.model", call_ ? call_->model : g.model);
    trace_attr("gen_ai.request.max_tokens", static_cast<std::int64_t>(g.max_tokens));
    trace_attr("gen_ai.request.temperature", static_cast<double>(g.params.temperature));
    trace_attr("gen_ai.request.top_p", static_cast<double>(g.params.top_p));
    trace_attr("gen_ai.request.top_k", static_cast<std::int64_t>(g.params.top_k));
    if (g.params.presence_penalty != 0.0f)
        trace_attr("gen_ai.request.presence_penalty",
                   static_cast<double>(g.params.presence_penalty));
    if (g.params.frequency_penalty != 0.0f)
        trace_attr("gen_ai.request.frequency_penalty",
                   static_cast<double>(g.params.frequency_penalty));
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
        reasons.emplace_back(to_string(c.finish));
    trace_attr("gen_ai.response.finish_reasons", std::move(reasons));
    trace_attr("bitnet.model.version", t.model_version);
    trace_attr("bitnet.usage.cached_tokens", static_cast<std::int64_t>(t.cached_tokens));
    trace_attr("bitnet.queue_ms", static_cast<double>(t.queue_us) / 1000.0);
    trace_attr("bitnet.ttft_ms", static_cast<double>(t.ttft_us) / 1000.0);
    if (trace::recorder::process().include_text() && call_)
        trace_attr("bitnet.completion",
                   call_->reply ? call_->reply->text + call_->reply->call_text : call_->text);
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
