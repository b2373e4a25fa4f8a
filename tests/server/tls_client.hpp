// A small blocking HTTPS client for the HTTPS tests (Boost.Beast over OpenSSL): one TLS
// connection that verifies the server against a CA file and the name "localhost", requests on
// it (keep-alive), and a streamed response read piece by piece, so a test can hold a stream open
// across a server-side event (a SIGHUP reload). Every read and write is bounded by socket
// timeouts: a server that stops answering fails the test instead of hanging it.
#pragma once

#include "server_process.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <memory>
#include <optional>
#include <string>

#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>

namespace bitnet::test {

struct tls_client_options {
    std::string ca_file;
    /// The highest protocol version the client offers (0 = OpenSSL's own); with a version
    /// below TLS 1.2 the client also allows it (security level 0, no floor), so that the
    /// server, not the client, is what refuses it.
    int max_version = 0;
};

class tls_client {
public:
    tls_client(std::uint16_t port, tls_client_options o)
        : ctx_(boost::asio::ssl::context::tls_client) {
        namespace net = boost::asio;
        namespace ssl = net::ssl;
        ctx_.set_verify_mode(ssl::verify_peer);
        boost::system::error_code ec;
        ctx_.load_verify_file(o.ca_file, ec);
        if (ec) {
            error_ = "CA file: " + ec.message();
            return;
        }
        if (o.max_version != 0) {
            SSL_CTX_set_max_proto_version(ctx_.native_handle(), o.max_version);
            if (o.max_version < TLS1_2_VERSION) {
                SSL_CTX_set_min_proto_version(ctx_.native_handle(), TLS1_VERSION);
                SSL_CTX_set_security_level(ctx_.native_handle(), 0);
                SSL_CTX_set_cipher_list(ctx_.native_handle(), "DEFAULT:@SECLEVEL=0");
            }
        }
        stream_.emplace(ioc_, ctx_);
        auto& sock = boost::beast::get_lowest_layer(*stream_);
        sock.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
        if (ec) {
            error_ = "connect: " + ec.message();
            return;
        }
        // Blocking calls with a bound: the kernel fails a read or write that waits this long.
        const timeval tv{30, 0};
        ::setsockopt(sock.socket().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(sock.socket().native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        SSL_set_tlsext_host_name(stream_->native_handle(), "localhost");
        stream_->set_verify_callback(ssl::host_name_verification("localhost"));
        stream_->handshake(ssl::stream_base::client, ec);
        if (ec) {
            error_ = "handshake: " + ec.message();
            return;
        }
        ok_ = true;
    }

    /// Whether the handshake succeeded; error() says why not.
    [[nodiscard]] bool ok() const noexcept { return ok_; }
    [[nodiscard]] const std::string& error() const noexcept { return error_; }
    /// The negotiated protocol, e.g. "TLSv1.3".
    [[nodiscard]] std::string version() { return SSL_get_version(stream_->native_handle()); }
    [[nodiscard]] int version_number() { return SSL_version(stream_->native_handle()); }

    /// One request and its whole response on this connection.
    http_reply request(boost::beast::http::verb verb, const std::string& target,
                       const std::string& body = {}) {
        if (!send(verb, target, body))
            return {};
        return read_rest();
    }

    /// Sends a request; read its response with read_head / read_until / read_rest.
    bool send(boost::beast::http::verb verb, const std::string& target, const std::string& body) {
        namespace bhttp = boost::beast::http;
        bhttp::request<bhttp::string_body> req{verb, target, 11};
        req.set(bhttp::field::host, "localhost");
        if (!body.empty()) {
            req.set(bhttp::field::content_type, "application/json");
            req.body() = body;
            req.prepare_payload();
        }
        boost::beast::error_code ec;
        bhttp::write(*stream_, req, ec);
        parser_.emplace();
        parser_->body_limit(64 << 20);
        return !ec;
    }
    /// The response's status once its header arrived (0 on an error).
    unsigned read_head() {
        boost::beast::error_code ec;
        boost::beast::http::read_header(*stream_, buf_, *parser_, ec);
        return ec ? 0 : parser_->get().result_int();
    }
    /// Reads the body until it contains `needle` or the response ends; the body so far.
    std::string read_until(const std::string& needle) {
        boost::beast::error_code ec;
        while (!parser_->is_done() && parser_->get().body().find(needle) == std::string::npos) {
            boost::beast::http::read_some(*stream_, buf_, *parser_, ec);
            if (ec)
                break;
        }
        return parser_->get().body();
    }
    /// Reads to the end of the response.
    http_reply read_rest() {
        boost::beast::error_code ec;
        boost::beast::http::read(*stream_, buf_, *parser_, ec);
        http_reply out;
        out.complete = !ec;
        const auto& res = parser_->get();
        out.status = res.result_int();
        out.body = res.body();
        out.content_type = std::string(res[boost::beast::http::field::content_type]);
        return out;
    }

    /// Leaves as a TLS client should: close_notify, then the TCP close (FIN), without waiting
    /// for the server's close_notify (a server busy generating a reply does not read).
    void hang_up() {
        stream_->async_shutdown([](boost::beast::error_code) {});
        ioc_.run_for(std::chrono::milliseconds(200));
        boost::beast::error_code ec;
        boost::beast::get_lowest_layer(*stream_).socket().close(ec);
    }

private:
    boost::asio::io_context ioc_;
    boost::asio::ssl::context ctx_;
    std::optional<boost::beast::ssl_stream<boost::beast::tcp_stream>> stream_;
    boost::beast::flat_buffer buf_;
    std::optional<boost::beast::http::response_parser<boost::beast::http::string_body>> parser_;
    bool ok_ = false;
    std::string error_;
};

/// GET `target` on a fresh HTTPS connection verified against `ca_file`.
inline http_reply https_get(std::uint16_t port, const std::string& ca_file,
                            const std::string& target) {
    tls_client c(port, {.ca_file = ca_file});
    if (!c.ok())
        return {};
    return c.request(boost::beast::http::verb::get, target);
}

} // namespace bitnet::test
