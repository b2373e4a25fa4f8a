// The connection's part of tracing: the request's trace context (a caller's W3C traceparent, or
// a new trace), the HTTP server span that every other span of the request hangs under, the
// `traceresponse` header that tells the caller the trace id, and the span's end with the status
// the client saw (499 when it left first). Spans exist only for sampled requests; the context,
// the header and the log correlation id exist for every request.
#include "http/transport/connection.hpp"

#include <boost/beast/http/field.hpp>

namespace bitnet::http {

namespace bhttp = boost::beast::http;

void connection::begin_trace(const request& req, std::string_view route, bool traced) {
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
    if (!trace_.sampled() || !traced)
        return;
    trace::span_record s;
    s.ctx = trace_;
    s.parent = parent;
    s.kind = trace::span_kind::server;
    s.name = std::string(req.method_string()) + " " + std::string(route);
    s.start_ns = trace::now_ns();
    s.attrs.push_back({"http.request.method", std::string(req.method_string())});
    s.attrs.push_back({"http.route", std::string(route)});
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

std::string connection::traceresponse() const {
    return trace_.trace == trace::trace_id{} ? std::string() : trace::format_traceparent(trace_);
}

void connection::trace_attr(std::string key, trace::value v) {
    if (span_)
        span_->attrs.push_back({std::move(key), std::move(v)});
}

void connection::end_trace(unsigned status, std::string_view request_id, const std::string& error) {
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

std::string connection::trace_note() const {
    return trace_.trace == trace::trace_id{} ? std::string()
                                             : " trace=" + trace::to_hex(trace_.trace);
}

} // namespace bitnet::http
