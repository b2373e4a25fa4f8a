// The session's SSE writer: the stream's head, HTTP/1.1 chunk framing of each event, the ping
// comments that keep proxies from timing out, the write queue with its slow-reader cap
// (sse_buffer_bytes), the stream's end, and the abort of a request whose client is gone
// (counted and logged as 499).
#include "http/api_json.hpp"
#include "http/session.hpp"

#include <boost/asio/write.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

namespace bitnet::http {

namespace beast = boost::beast;
namespace net = boost::asio;

void session::begin_stream() {
    if (watching_) {
        // The stream's own writes now notice a gone client.
        beast::error_code ec;
        stream_.socket().cancel(ec);
        watching_ = false;
    }
    sse_ = true;
    std::string preamble =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n"
        "X-Request-Id: " +
        call_->req_id + "\r\n" +
        (call_->kind == route_kind::messages ? "request-id: " + call_->req_id + "\r\n"
                                             : std::string()) +
        (trace_.trace == trace::trace_id{} ? std::string()
                                           : "traceresponse: " + traceresponse() + "\r\n") +
        cors_header_lines() + "Transfer-Encoding: chunked\r\n\r\n";
    enqueue_raw(std::move(preamble));
    // Every choice opens with its role, as OpenAI streams n > 1 (the SDK's stream helper
    // refuses a choice whose first delta has none); a tool call's with content null, not "" (an
    // empty string is an empty text part to the AI SDK).
    // Messages: message_start carries the prompt's token count, known with the first token; it
    // goes out then (stream_messages_token).
    if (call_->kind == route_kind::responses)
        responses_stream_head();
    if (call_->kind == route_kind::chat)
        for (std::uint32_t i = 0; i < std::max<std::uint32_t>(call_->n_choices, 1); ++i)
            sse_data(chat_chunk(head(),
                                call_->tool_call ? R"({"role":"assistant","content":null})"
                                                 : R"({"role":"assistant","content":""})",
                                "null", "null", i));
    arm_ping();
}

void session::arm_ping() {
    ping_.expires_after(srv_.opt.sse_ping);
    ping_.async_wait([self = shared_from_this()](beast::error_code ec) {
        if (ec || !self->sse_ || !self->call_ || self->call_->ended)
            return;
        self->enqueue_chunk(": ping\n\n");
        self->arm_ping();
    });
}

void session::sse_data(const std::string& payload) {
    enqueue_chunk("data: " + payload + "\n\n");
}

void session::sse_event(const char* ev, const std::string& payload) {
    enqueue_chunk(std::string("event: ") + ev + "\ndata: " + payload + "\n\n");
}

void session::enqueue_chunk(const std::string& data) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "%zx\r\n", data.size());
    enqueue_raw(hex + data + "\r\n");
}

void session::enqueue_raw(std::string bytes) {
    if (closed_)
        return;
    queued_bytes_ += bytes.size();
    if (queued_bytes_ > srv_.opt.sse_buffer_bytes) {
        // A reader this slow would make us buffer without limit: cancel it instead.
        spdlog::warn("{}: SSE reader too slow ({} bytes unsent), cancelling",
                     call_ ? call_->req_id : "-", queued_bytes_);
        return abort_call();
    }
    out_.push_back(std::move(bytes));
    do_write();
}

void session::do_write() {
    if (writing_ || out_.empty() || closed_)
        return;
    writing_ = true;
    stream_.expires_after(srv_.opt.write_timeout);
    net::async_write(
        stream_, net::buffer(out_.front()),
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_written(ec); });
}

void session::on_written(beast::error_code ec) {
    writing_ = false;
    if (ec)
        return abort_call(); // client gone: cancel the sequence
    queued_bytes_ -= out_.front().size();
    out_.pop_front();
    if (!out_.empty())
        return do_write();
    if (stream_done_) {
        stream_done_ = false;
        sse_ = false;
        end_trace(200, call_ ? std::string_view(call_->req_id) : std::string_view("-"));
        call_.reset();
        if (keep_alive_)
            do_read();
        else
            close();
    }
}

void session::end_stream() {
    call_->ended = true;
    ping_.cancel();
    stream_done_ = true;
    enqueue_raw("0\r\n\r\n");
}

/// The client is gone (or too slow to keep up): cancel the sequence (its sink dies, the
/// batcher frees its KV) and close. Counted and logged as 499, the status nobody receives.
void session::abort_call() {
    if (call_ && !call_->ended) {
        if (call_->sink)
            caf::anon_send_exit(call_->sink, caf::exit_reason::user_shutdown);
        call_->ended = true;
        const auto secs = std::chrono::duration<double>(steady::now() - call_->start).count();
        srv_.m.request_done(call_->route, 499, secs);
        spdlog::info("{} {} {} 499 client_closed tokens_sent={} total_ms={}{}", call_->req_id,
                     call_->route, sse_ ? "stream" : "plain", call_->n_tokens,
                     fixed(secs * 1000.0, 3), trace_note());
        trace_attr("gen_ai.usage.output_tokens", static_cast<std::int64_t>(call_->n_tokens));
        end_trace(499, call_->req_id);
    }
    ping_.cancel();
    close();
}

} // namespace bitnet::http
