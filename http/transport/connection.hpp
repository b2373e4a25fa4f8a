// One HTTP connection, as the transport sees it: reading a request under the body, header and
// trailer limits, plain responses (status, headers, keep-alive, drain closes, the linger close),
// the SSE writer (chunk framing, pings, the slow-reader cap), HTTPS (telling a TLS hello from
// plain HTTP, the handshake, the TLS close), CORS, the disconnect watch while a plain reply is
// generated, the request's trace context and server span, and the net under every piece of work
// (safely). One object on one strand; its members are defined by concern, one file each:
//   connection.cpp        reading, plain responses, keep-alive, linger close, the disconnect
//                         watch, the drain cut
//   connection_tls.cpp    HTTPS start and end
//   connection_sse.cpp    the SSE writer and the abort of a request whose client is gone
//   connection_cors.cpp   CORS headers and preflights
//   connection_trace.cpp  trace context, traceresponse, the server span
// What a request means is not the transport's: a subclass (routes/session.hpp) handles each
// request read and answers the hooks below about the request in progress. Internal to http/.
#pragma once

#include "common/trace.hpp"
#include "http/errors.hpp"
#include "http/observe/log_context.hpp"
#include "http/stream_framing.hpp"
#include "http/transport/connection_stream.hpp"
#include "http/transport/listener.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bitnet::http {

class connection : public std::enable_shared_from_this<connection> {
public:
    using tcp = boost::asio::ip::tcp;
    using steady = std::chrono::steady_clock;
    using request = boost::beast::http::request<boost::beast::http::string_body>;

    connection(tcp::socket&& s, listener& net);
    virtual ~connection();
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    /// Registers for cut_all and the connection caps (as a connection of `peer`, the client's
    /// address) and starts reading on the strand.
    void run(const std::string& peer);

    /// Past max_connections or max_connections_per_client with nothing idle to close: answer
    /// 503 + Retry-After (`why` says which cap) without reading the request, then close (over
    /// TLS after the handshake, so the client can read it).
    void refuse_overloaded(const std::string& why);

    /// The end of a drain whose deadline passed (on the strand): a request still in progress is
    /// ended by the subclass (cut_request); idle connections are closed; nothing is cut
    /// mid-write.
    void cut();

protected:
    // ---- what the subclass decides ------------------------------------------------------

    /// A whole request was read: answer it (under safely()).
    virtual void handle(request req) = 0;
    /// The metrics label of a request refused before it was whole (a body too large): its
    /// route's pattern, or "-".
    [[nodiscard]] virtual std::string route_label(std::string_view method,
                                                  std::string_view path) const = 0;
    /// Whether a request is in progress (accepted, not yet answered in full), and whether it
    /// is still running (its answer not yet complete).
    [[nodiscard]] virtual bool request_open() const = 0;
    [[nodiscard]] virtual bool request_running() const = 0;
    /// The request id of the request in progress, or "-".
    [[nodiscard]] virtual std::string request_id() const = 0;
    /// The drain's deadline passed while the request runs: end it and answer properly.
    virtual void cut_request() = 0;
    /// The client is gone (or too slow): cancel the running request, count and log it.
    virtual void request_gone() = 0;
    /// A streamed answer went out whole: forget the request.
    virtual void stream_sent() = 0;
    /// An exception escaped a piece of work: answer the request in progress (a 500, or an
    /// error event when its stream has begun) and close.
    virtual void internal_failure(const char* what, const char* why) noexcept = 0;
    /// The correlation fields of log lines written for the request in progress (JSON logs).
    [[nodiscard]] virtual log_fields log_context() const = 0;
    /// An error body in the shape of the API family `route` belongs to.
    [[nodiscard]] virtual std::string error_body_for(const std::string& route, const api_error& e,
                                                     const std::string& id) const;
    /// Header lines ("Name: value\r\n") an answer on `route` carries beside X-Request-Id (an
    /// API family's own request-id header, for its SDK).
    [[nodiscard]] virtual std::vector<std::pair<std::string, std::string>>
    family_headers(const std::string& route, const std::string& req_id) const;

    // ---- reading and plain responses (connection.cpp) ------------------------------------

    /// Runs one piece of the connection's work; an exception never leaves it (it would end the
    /// io thread and the process): internal_failure answers, and the log says which request.
    template <class F>
    void safely(const char* what, F&& f) noexcept {
        // The request's correlation fields, for JSON log lines only (text lines name the
        // request themselves): nothing is built per token event otherwise.
        const log_scope scope(json_logs() ? log_context() : log_fields{});
        try {
            f();
        } catch (const std::exception& e) {
            internal_failure(what, e.what());
        } catch (...) {
            internal_failure(what, "unknown exception");
        }
    }

    void answer_overloaded(const std::string& why);
    /// Marks this connection idle (waiting for a request, nothing of it read) or busy in the
    /// registry: past a connection cap the oldest idle one is closed to make room.
    void set_idle(bool idle);
    /// Closes it if it is still idle, or its read still stalled, or (`crowded`) its request is
    /// still being read (the listener chose it to make room: connection_registry).
    void reclaim(bool crowded);
    /// Gives back its place in the open count and its peer's count (once).
    void release_slot();
    /// Reads the next request: idle (in the registry) until its first bytes arrive.
    void do_read();
    /// The rest of a request whose first bytes have come (busy from here on): its headers
    /// within header_timeout, refused when RFC 9112 refuses their framing (framing_refusal),
    /// `100 Continue` when the client expects it, then the body at min_body_rate or faster.
    void read_rest();
    void on_header(boost::beast::error_code ec);
    void read_body();
    void on_read(boost::beast::error_code ec);
    /// Marks this connection reading a request (headers or body) in the registry, with the
    /// time of its last progress: past a connection cap a read stalled for stalled_read_after
    /// is closed to make room, as an idle connection is.
    void set_reading(bool reading);
    void note_progress();
    /// While a non-streamed reply is being generated nothing reads the socket: wait for it to
    /// become readable. Readable with nothing to read is the peer's FIN: the client is gone, so
    /// the request is cancelled (its KV freed) instead of generating for nobody.
    void watch_disconnect();
    void on_readable_while_busy();

    void send_error(const std::string& route, const api_error& e, const std::string& req_id);
    /// `final_answer`: with `x-should-retry: false` (api_error::final_answer).
    void send_json(const std::string& route, unsigned status, std::string body,
                   const std::string& req_id = "-", const std::string& server_timing = {},
                   std::uint32_t retry_after = 0, bool counted = false, bool final_answer = false);
    void write_response(const std::string& route, bool counted);
    void linger_close();
    void linger_read();
    void close();

    // ---- HTTPS (connection_tls.cpp) ------------------------------------------------------

    /// A TLS port's first step: read until the first bytes tell a TLS ClientHello from anything
    /// else (under the read timeout, so a client that says nothing does not hold a slot), then
    /// handshake with the current context, or refuse plain HTTP cleanly. Then read the request,
    /// or (`overloaded`) answer 503.
    void start_tls(bool overloaded);
    void on_tls_detected(boost::beast::error_code ec, bool is_tls, bool overloaded);
    void on_handshake(boost::beast::error_code ec, std::size_t used, bool overloaded);
    /// Plain HTTP on the TLS port: a 400 in plain HTTP saying the port speaks HTTPS, then close.
    void refuse_plain_http();
    /// The end of a TLS connection after its last response: close_notify, bounded, then close.
    void tls_linger_close();
    /// Under the disconnect watch, with bytes readable: whether they are the client leaving (an
    /// alert record, e.g. close_notify, or the FIN behind it) rather than a pipelined request.
    [[nodiscard]] bool tls_client_leaving();

    // ---- the SSE writer (connection_sse.cpp) ---------------------------------------------

    /// The stream's head (200, its media type, the request id and the family's headers); an SSE
    /// stream then pings every sse_ping while the request runs (NDJSON has no comments: a
    /// reader's timeout is the write's).
    void open_stream(const std::string& req_id, const std::string& route,
                     stream_framing framing = stream_framing::sse);
    void arm_ping();
    void sse_data(const std::string& payload);
    void sse_event(const char* ev, const std::string& payload);
    /// One NDJSON frame: `json` (one line, no newline in it) and a newline.
    void ndjson_line(const std::string& json);
    void enqueue_chunk(const std::string& data);
    void enqueue_raw(std::string bytes);
    void do_write();
    void on_written(boost::beast::error_code ec);
    /// The stream's last chunk; the connection reads again (or closes) once it is written.
    void finish_stream();
    /// The client is gone (or too slow to keep up): cancel the request and close (499).
    void abort_call();

    // ---- CORS (connection_cors.cpp) ------------------------------------------------------

    /// Reads the request's Origin: cors_origin_ is what the answer allows, or empty.
    void note_origin(const request& req);
    /// A CORS preflight (OPTIONS with Access-Control-Request-Method) on a known path, answered
    /// here when CORS is configured: true when it was. `route` is the matched pattern (the
    /// metrics label).
    bool answer_preflight(const request& req, const std::string& route, bool path_known);
    /// The CORS headers of the answer, as raw header lines (the SSE preamble) or on res_.
    [[nodiscard]] std::string cors_header_lines() const;
    void set_cors_headers();

    // ---- tracing (connection_trace.cpp) --------------------------------------------------

    /// The request's trace context (traceparent, or a new trace) and, when it is sampled and
    /// `traced` (not a probe or scrape), its HTTP server span named after `route`.
    void begin_trace(const request& req, std::string_view route, bool traced);
    /// The `traceresponse` header's value (W3C): the trace id and the server span's id; empty
    /// before the first request.
    [[nodiscard]] std::string traceresponse() const;
    /// An attribute on the server span (nothing when the request is not sampled).
    void trace_attr(std::string key, trace::value v);
    /// Ends the server span with the status the client saw (499: it left first); `error`
    /// marks it failed with that message.
    void end_trace(unsigned status, std::string_view request_id, const std::string& error = {});
    /// " trace=<id>" for the request log's lines (empty without a trace).
    [[nodiscard]] std::string trace_note() const;

    // ---- state ---------------------------------------------------------------------------

    connection_stream stream_;
    listener& net_;
    std::shared_ptr<connection_registry> reg_;
    std::uint64_t reg_id_ = 0;
    std::string peer_;                      ///< the client's address, as counted per peer
    boost::asio::ip::address peer_address_; ///< the socket's peer (unspecified when unknown)
    bool peer_counted_ = false;             ///< counted in the registry's per_peer
    bool slot_released_ = false;
    bool idle_ = false;
    bool reading_ = false;           ///< a request's headers or body are being read
    steady::time_point progress_at_; ///< while reading: the last progress
    steady::time_point body_start_;  ///< the body's read began (its rate is counted from here)
    std::uint64_t body_read_ = 0;    ///< bytes the parser took since
    std::string overload_reason_;    ///< why a connection past a cap was refused
    boost::asio::steady_timer ping_;
    boost::beast::flat_buffer buf_;
    std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
    boost::beast::http::response<boost::beast::http::string_body> res_;
    std::deque<std::string> out_;
    std::size_t queued_bytes_ = 0;
    bool writing_ = false;
    bool sse_ = false; ///< a stream is open (SSE or NDJSON: framing_)
    stream_framing framing_ = stream_framing::sse;
    bool stream_done_ = false;
    bool keep_alive_ = true;
    bool closed_ = false;
    bool watching_ = false;
    bool responding_ = false; ///< a plain response is being written
    bool head_ = false;       ///< the request is a HEAD: its answer goes without its body
    /// The Access-Control-Allow-Origin this request's answer carries (connection_cors.cpp);
    /// empty: none (no CORS configured, no Origin, or one not allowed).
    std::string cors_origin_;
    /// The request's trace: the caller's or a new trace id, with this server's span id.
    trace::context trace_;
    /// Its HTTP server span while the request runs (sampled requests only).
    std::optional<trace::span_record> span_;
    std::array<char, 4096> linger_buf_{};
    std::size_t linger_left_ = 0;
};

} // namespace bitnet::http
