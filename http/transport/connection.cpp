// The connection's transport: its life in the registry, reading a request under the body,
// header and trailer limits, plain responses (status, headers, keep-alive, drain closes), the
// linger close that keeps a last response from being lost to an RST, the disconnect watch of a
// plain request being generated, and the cut at the end of a drain.
#include "http/transport/connection.hpp"

#include "http/transport/request_errors.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <spdlog/spdlog.h>

#include <cerrno>

#include <sys/socket.h>

namespace bitnet::http {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;

connection::connection(tcp::socket&& s, listener& net)
    : stream_(std::move(s))
    , net_(net)
    , reg_(net.connections)
    , ping_(stream_.get_executor()) {
    ++reg_->open;
    beast::error_code ec;
    const auto ep = stream_.socket().remote_endpoint(ec);
    if (!ec)
        peer_address_ = ep.address();
}

connection::~connection() {
    release_slot();
    std::lock_guard lk(reg_->mu);
    reg_->conns.erase(reg_id_);
}

void connection::run(const std::string& peer) {
    {
        std::lock_guard lk(reg_->mu);
        reg_id_ = reg_->next++;
        peer_ = peer;
        peer_counted_ = true;
        ++reg_->per_peer[peer_];
        connection_registry::entry e;
        e.peer = peer;
        e.cut = [w = weak_from_this()] {
            if (auto s = w.lock())
                net::post(s->stream_.get_executor(), [s] { s->cut(); });
        };
        e.reclaim = [w = weak_from_this()](bool crowded) {
            if (auto s = w.lock())
                net::post(s->stream_.get_executor(), [s, crowded] { s->reclaim(crowded); });
        };
        reg_->conns.emplace(reg_id_, std::move(e));
    }
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
        if (self->net_.tls)
            return self->start_tls(false);
        self->do_read();
    });
}

void connection::refuse_overloaded(const std::string& why) {
    overload_reason_ = why;
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
        if (self->net_.tls)
            return self->start_tls(true);
        self->answer_overloaded(self->overload_reason_);
    });
}

void connection::answer_overloaded(const std::string& why) {
    net_.m.rejected("too_many_connections");
    keep_alive_ = false;
    api_error e{503, "overloaded", "too_many_connections",
                why, "",           "retry shortly, or against another replica",
                1};
    send_error("-", e, "-");
}

void connection::set_idle(bool idle) {
    if (idle_ == idle || reg_id_ == 0)
        return;
    idle_ = idle;
    std::lock_guard lk(reg_->mu);
    if (auto it = reg_->conns.find(reg_id_); it != reg_->conns.end()) {
        it->second.idle = idle;
        if (idle)
            it->second.idle_since = steady::now();
    }
}

void connection::reclaim(bool crowded) {
    // Chosen while idle; still idle only if nothing of a request has arrived since.
    if (idle_ && !closed_ && !(parser_ && parser_->got_some()) && buf_.size() == 0) {
        spdlog::debug("closing an idle connection to make room past a connection cap");
        return close();
    }
    idle_ = false; // the registry no longer lists it as idle; it is busy now
    // Or chosen as a read that stalled: closed if it still makes no progress. Or as a read of
    // the peer holding the most connections: closed if its request is still being read.
    if (reading_ && !closed_ &&
        (crowded || steady::now() - progress_at_ >= net_.conf.stalled_read_after)) {
        spdlog::debug("closing a stalled request read to make room past a connection cap");
        close();
    }
}

void connection::set_reading(bool reading) {
    if (reading_ == reading || reg_id_ == 0)
        return;
    reading_ = reading;
    progress_at_ = steady::now();
    std::lock_guard lk(reg_->mu);
    if (auto it = reg_->conns.find(reg_id_); it != reg_->conns.end()) {
        it->second.reading = reading;
        it->second.progress_at = progress_at_;
    }
}

void connection::note_progress() {
    progress_at_ = steady::now();
    std::lock_guard lk(reg_->mu);
    if (auto it = reg_->conns.find(reg_id_); it != reg_->conns.end())
        it->second.progress_at = progress_at_;
}

void connection::release_slot() {
    if (slot_released_)
        return;
    slot_released_ = true;
    --reg_->open;
    if (!peer_counted_)
        return;
    std::lock_guard lk(reg_->mu);
    if (auto it = reg_->per_peer.find(peer_); it != reg_->per_peer.end() && --it->second == 0)
        reg_->per_peer.erase(it);
}

void connection::cut() {
    keep_alive_ = false;
    if (request_running())
        return cut_request();
    if (!responding_ && out_.empty() && !request_open())
        close();
}

// ---- reading -----------------------------------------------------------------------------

void connection::do_read() {
    trace_ = {}; // a refusal of what comes next must not carry the last request's trace
    head_ = false;
    parser_.emplace();
    parser_->body_limit(net_.conf.max_body_bytes);
    parser_->header_limit(net_.conf.max_header_bytes);
    // The parser buffers a chunked body's trailers whole and bounds them by nothing but this
    // buffer; body bytes pass through it in pieces, so the bound costs them nothing.
    buf_.max_size(net_.conf.max_header_bytes + 1024);
    stream_.expires_after(net_.conf.read_timeout);
    if (buf_.size() > 0) // a pipelined request has begun already
        return read_rest();
    // Idle until the request's first bytes: only then may a connection cap close it to make
    // room (one that has started a request is never taken for idle).
    // The first bytes are read raw into the buffer (the parser's own read would complete only
    // with whole headers), then the parser takes them from there.
    set_idle(true);
    constexpr std::size_t first_read = 512;
    stream_.async_read_some(buf_.prepare(first_read),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                self->buf_.commit(n);
                                if (ec)
                                    return self->on_read(ec);
                                self->read_rest();
                            });
}

void connection::read_rest() {
    set_idle(false);
    set_reading(true);
    // The headers whole within header_timeout of their first bytes, however they trickle in.
    stream_.expires_after(net_.conf.header_timeout);
    bhttp::async_read_header(
        stream_, buf_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
}

void connection::on_header(beast::error_code ec) {
    if (ec)
        return on_read(ec);
    note_progress();
    const auto& h = parser_->get();
    if (auto refusal = framing_refusal(h, h.version())) {
        keep_alive_ = false;
        set_reading(false);
        return safely("request", [&] { send_error("-", *refusal, "-"); });
    }
    body_start_ = steady::now();
    body_read_ = 0;
    if (!expects_continue(h, h.version()) || parser_->is_done())
        return read_body();
    // The client waits for this before it sends the body (RFC 9110 section 10.1.1).
    static constexpr std::string_view go_on = "HTTP/1.1 100 Continue\r\n\r\n";
    net::async_write(stream_, net::buffer(go_on.data(), go_on.size()),
                     [self = shared_from_this()](beast::error_code wec, std::size_t) {
                         if (wec)
                             return self->on_read(wec);
                         self->read_body();
                     });
}

void connection::read_body() {
    if (parser_->is_done())
        return on_read({});
    // Each piece moves the deadline on by what the minimum rate allows for it: a body that
    // keeps to min_body_rate (after header_timeout's head start) is read whole, a slower one
    // is closed.
    const auto rate = net_.conf.min_body_rate;
    if (rate == 0)
        stream_.expires_after(net_.conf.read_timeout);
    else
        stream_.expires_at(body_start_ + net_.conf.header_timeout +
                           std::chrono::milliseconds(body_read_ * 1000 / rate));
    bhttp::async_read_some(stream_, buf_, *parser_,
                           [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                               if (ec)
                                   return self->on_read(ec);
                               self->body_read_ += n;
                               self->note_progress();
                               self->read_body();
                           });
}

void connection::on_read(beast::error_code ec) {
    set_idle(false);
    set_reading(false);
    if (!ec)
        return safely("request", [&] { handle(parser_->release()); });
    if (auto refusal = read_refusal(ec, {net_.conf.max_body_bytes, net_.conf.max_header_bytes})) {
        // The rest of what the client sent cannot be framed: answer, then close. A body too
        // large came after whole headers (Beast refuses a Content-Length past the limit before
        // it marks them done): its route is known, and answers in its API's shape (Anthropic's
        // on /v1/messages*).
        keep_alive_ = false;
        std::string route = "-";
        if (parser_ && refusal->status == 413) {
            const auto& h = parser_->get();
            std::string target(h.target());
            if (auto q = target.find('?'); q != std::string::npos)
                target.resize(q);
            route = route_label(h.method_string(), target);
        }
        return send_error(route, *refusal, "-");
    }
    close(); // the client went away or timed out: nobody to answer
}

// ---- the disconnect watch ----------------------------------------------------------------

void connection::watch_disconnect() {
    stream_.expires_never(); // a long generation must not trip the read timeout
    watching_ = true;
    stream_.socket().async_wait(tcp::socket::wait_read,
                                [self = shared_from_this()](beast::error_code ec) {
                                    self->watching_ = false;
                                    if (ec || !self->request_running() || self->sse_)
                                        return;
                                    self->on_readable_while_busy();
                                });
}

/// A readiness event is only a hint: the reactor may report one left over from the request
/// it already read (edge-triggered epoll queues it before the request's bytes were taken
/// speculatively), so "readable with nothing to read" is not proof of a FIN. Peek: 0 bytes
/// is the peer's FIN, EAGAIN was a stale event (watch again), data is a pipelined request
/// (the client is still there). Trusting the stale event dropped about one connection in a
/// thousand without an answer.
void connection::on_readable_while_busy() {
    char byte = 0;
    const auto fd = stream_.socket().native_handle();
    const auto n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0 && stream_.tls() && tls_client_leaving())
        return abort_call();
    if (n > 0)
        return;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        spdlog::debug("{}: stale readiness event while the reply is generated; watching again",
                      request_id());
        return watch_disconnect();
    }
    abort_call();
}

// ---- plain responses ---------------------------------------------------------------------

void connection::send_error(const std::string& route, const api_error& e,
                            const std::string& req_id) {
    // Every error body carries a request id, also for requests refused before they got one.
    const auto id = req_id == "-" ? "req-" + std::to_string(net_.next_id.fetch_add(1)) : req_id;
    // Each API family answers in its own error shape, whatever refused the request.
    send_json(route, e.status, error_body_for(route, e, id), id, {}, e.retry_after_s, false,
              e.final_answer);
}

void connection::send_json(const std::string& route, unsigned status, std::string body,
                           const std::string& req_id, const std::string& server_timing,
                           std::uint32_t retry_after, bool counted, bool final_answer) {
    res_ = {static_cast<bhttp::status>(status), 11};
    res_.set(bhttp::field::content_type, "application/json");
    if (req_id != "-") {
        res_.set("X-Request-Id", req_id);
        for (const auto& [name, value] : family_headers(route, req_id))
            res_.set(name, value);
    }
    if (!server_timing.empty())
        res_.set("Server-Timing", server_timing);
    if (retry_after > 0)
        res_.set(bhttp::field::retry_after, std::to_string(retry_after));
    if (final_answer)
        res_.set("x-should-retry", "false");
    res_.body() = std::move(body);
    write_response(route, counted);
}

void connection::write_response(const std::string& route, bool counted) {
    // Every answer names itself (the README's promise), also those that started no request.
    if (res_.find("X-Request-Id") == res_.end())
        res_.set("X-Request-Id", "req-" + std::to_string(net_.next_id.fetch_add(1)));
    if (auto tr = traceresponse(); !tr.empty())
        res_.set("traceresponse", tr);
    end_trace(res_.result_int(), std::string_view(res_["X-Request-Id"]));
    if (watching_) {
        // The disconnect watch must not outlive its request (the next read takes over).
        beast::error_code ec;
        stream_.socket().cancel(ec);
        watching_ = false;
    }
    if (!counted && !route.empty()) {
        net_.m.request_done(route, res_.result_int(), 0);
        // Refusals before a request started (validation, auth, routing) are logged too;
        // probes and scrapes stay out of the log.
        if (res_.result_int() >= 400)
            spdlog::info("{} {} {}{}", std::string(res_["X-Request-Id"]), route, res_.result_int(),
                         trace_note());
    }
    if (net_.draining)
        keep_alive_ = false;
    set_cors_headers();
    res_.keep_alive(keep_alive_);
    res_.prepare_payload();
    if (head_) { // GET's headers, its Content-Length included, and no body
        const auto length = res_.body().size();
        res_.body().clear();
        res_.content_length(length);
    }
    stream_.expires_after(net_.conf.write_timeout);
    responding_ = true;
    bhttp::async_write(stream_, res_,
                       [self = shared_from_this()](beast::error_code ec, std::size_t) {
                           self->responding_ = false;
                           if (ec)
                               return self->close();
                           if (!self->keep_alive_)
                               return self->linger_close();
                           self->do_read();
                       });
}

std::string connection::error_body_for(const std::string& route, const api_error& e,
                                       const std::string& id) const {
    (void)route;
    return error_body(e, id);
}

std::vector<std::pair<std::string, std::string>>
connection::family_headers(const std::string& route, const std::string& req_id) const {
    (void)route, (void)req_id;
    return {};
}

// ---- closing -----------------------------------------------------------------------------

/// Closes after our last response without losing it: closing a socket whose receive buffer
/// still holds unread bytes (the rest of a refused request) sends RST, and the client may then
/// never see the response. So: shut down our side, read and discard what is left for a
/// bounded time and size, then close.
void connection::linger_close() {
    if (closed_)
        return;
    if (stream_.tls())
        return tls_linger_close();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec)
        return close();
    linger_left_ = 64 * 1024;
    stream_.expires_after(std::chrono::seconds(2));
    linger_read();
}

void connection::linger_read() {
    stream_.async_read_some(net::buffer(linger_buf_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                if (ec || n >= self->linger_left_)
                                    return self->close();
                                self->linger_left_ -= n;
                                self->linger_read();
                            });
}

void connection::close() {
    if (closed_)
        return;
    closed_ = true;
    // A request whose answer never went out: the client sees nothing, as when it leaves.
    end_trace(499, request_id(), "the connection closed before the answer");
    set_idle(false);
    release_slot();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
}

} // namespace bitnet::http
