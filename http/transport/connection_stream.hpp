// One connection's byte stream: a beast::tcp_stream, or (HTTPS) that TCP stream inside a Beast
// SSL stream once engage_tls() is called. The session's logic is written once against this
// type: reads and writes go to whichever layer is engaged, decided by one branch per I/O call,
// so plain HTTP keeps its code path and cost. The timeouts (expires_after) and the socket are
// always the TCP layer's: under TLS they bound the handshake and every record too.
// Internal to http/.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <utility>

namespace bitnet::http {

class connection_stream {
public:
    using tcp = boost::asio::ip::tcp;
    using executor_type = boost::beast::tcp_stream::executor_type;

    explicit connection_stream(tcp::socket&& s)
        : plain_(std::move(s)) {}

    /// From now on reads and writes pass through TLS with `ctx` (held for as long as this
    /// connection lives, whatever a reload does meanwhile).
    void engage_tls(std::shared_ptr<boost::asio::ssl::context> ctx) {
        // TLS writes several small records in a row (the handshake's flights, TLS 1.3's session
        // tickets, then the response): with Nagle each waits for the peer's delayed ACK of the
        // one before, 40 ms a time on Linux. Measured: 64 handshakes/s with Nagle
        // (bench/RESULTS.md, "HTTPS"). Plain HTTP writes each response at once and keeps its
        // setting.
        boost::system::error_code ec;
        plain_.socket().set_option(tcp::no_delay(true), ec);
        ctx_ = std::move(ctx);
        tls_.emplace(std::move(plain_), *ctx_);
    }
    [[nodiscard]] bool tls() const noexcept { return tls_.has_value(); }
    [[nodiscard]] boost::beast::ssl_stream<boost::beast::tcp_stream>& tls_stream() { return *tls_; }

    /// The TCP layer (moved into the TLS stream by engage_tls).
    [[nodiscard]] boost::beast::tcp_stream& tcp_layer() noexcept {
        return tls_ ? tls_->next_layer() : plain_;
    }
    [[nodiscard]] tcp::socket& socket() noexcept { return tcp_layer().socket(); }
    [[nodiscard]] executor_type get_executor() noexcept { return tcp_layer().get_executor(); }

    template <class Duration>
    void expires_after(Duration d) {
        tcp_layer().expires_after(d);
    }
    void expires_at(std::chrono::steady_clock::time_point t) { tcp_layer().expires_at(t); }
    void expires_never() { tcp_layer().expires_never(); }
    void close() { tcp_layer().close(); }

    // AsyncReadStream / AsyncWriteStream: Beast's and asio's composed operations run on this.
    template <class MutableBuffers, class Handler>
    void async_read_some(const MutableBuffers& b, Handler&& h) {
        if (tls_)
            tls_->async_read_some(b, std::forward<Handler>(h));
        else
            plain_.async_read_some(b, std::forward<Handler>(h));
    }
    template <class ConstBuffers, class Handler>
    void async_write_some(const ConstBuffers& b, Handler&& h) {
        if (tls_)
            tls_->async_write_some(b, std::forward<Handler>(h));
        else
            plain_.async_write_some(b, std::forward<Handler>(h));
    }

private:
    boost::beast::tcp_stream plain_;
    std::shared_ptr<boost::asio::ssl::context> ctx_;
    std::optional<boost::beast::ssl_stream<boost::beast::tcp_stream>> tls_;
};

} // namespace bitnet::http
