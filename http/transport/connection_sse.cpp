// The connection's stream writer: the stream's head, HTTP/1.1 chunk framing of each SSE event or
// NDJSON line, the ping comments that keep proxies from timing out (SSE), the write queue with its
// slow-reader cap (sse_buffer_bytes), the stream's end, and the abort of a request whose client is
// gone.
#include "http/transport/connection.hpp"

#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

namespace bitnet::http {

namespace beast = boost::beast;
namespace net = boost::asio;

void connection::open_stream(const std::string& req_id, const std::string& route,
                             stream_framing framing) {
    if (watching_) {
        // The stream's own writes now notice a gone client.
        beast::error_code ec;
        stream_.socket().cancel(ec);
        watching_ = false;
    }
    sse_ = true;
    framing_ = framing;
    std::string preamble =
        std::string("HTTP/1.1 200 OK\r\nContent-Type: ") +
        (framing == stream_framing::ndjson ? "application/x-ndjson" : "text/event-stream") +
        "\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\n"
        "X-Request-Id: " +
        req_id + "\r\n";
    for (const auto& [name, value] : family_headers(route, req_id))
        preamble += name + ": " + value + "\r\n";
    if (trace_.trace != trace::trace_id{})
        preamble += "traceresponse: " + traceresponse() + "\r\n";
    preamble += cors_header_lines() + "Transfer-Encoding: chunked\r\n\r\n";
    enqueue_raw(std::move(preamble));
    if (framing == stream_framing::sse)
        arm_ping();
}

void connection::arm_ping() {
    ping_.expires_after(net_.conf.sse_ping);
    ping_.async_wait([self = shared_from_this()](beast::error_code ec) {
        if (ec || !self->sse_ || !self->request_running())
            return;
        self->enqueue_chunk(": ping\n\n");
        self->arm_ping();
    });
}

void connection::sse_data(const std::string& payload) {
    enqueue_chunk("data: " + payload + "\n\n");
}

void connection::sse_event(const char* ev, const std::string& payload) {
    enqueue_chunk(std::string("event: ") + ev + "\ndata: " + payload + "\n\n");
}

void connection::ndjson_line(const std::string& json) {
    enqueue_chunk(json + "\n");
}

void connection::enqueue_chunk(const std::string& data) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "%zx\r\n", data.size());
    enqueue_raw(hex + data + "\r\n");
}

void connection::enqueue_raw(std::string bytes) {
    if (closed_)
        return;
    queued_bytes_ += bytes.size();
    if (queued_bytes_ > net_.conf.sse_buffer_bytes) {
        // A reader this slow would make us buffer without limit: cancel it instead.
        spdlog::warn("{}: SSE reader too slow ({} bytes unsent), cancelling", request_id(),
                     queued_bytes_);
        return abort_call();
    }
    out_.push_back(std::move(bytes));
    do_write();
}

void connection::do_write() {
    if (writing_ || out_.empty() || closed_)
        return;
    writing_ = true;
    stream_.expires_after(net_.conf.write_timeout);
    net::async_write(
        stream_, net::buffer(out_.front()),
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_written(ec); });
}

void connection::on_written(beast::error_code ec) {
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
        end_trace(200, request_id());
        stream_sent();
        if (keep_alive_)
            do_read();
        else
            close();
    }
}

void connection::finish_stream() {
    ping_.cancel();
    stream_done_ = true;
    enqueue_raw("0\r\n\r\n");
}

/// The client is gone (or too slow to keep up): the subclass cancels the request (its sink dies,
/// the batcher frees its KV) and counts it as 499, the status nobody receives; then close.
void connection::abort_call() {
    request_gone();
    ping_.cancel();
    close();
}

} // namespace bitnet::http
