// The session's HTTPS start and end: the first bytes of a connection on a TLS port tell a TLS
// ClientHello (record type 0x16) from plain HTTP; a hello is handshaken with the context current
// at that moment (a SIGHUP reload changes it for later connections only), anything else gets a
// plain-HTTP 400 saying the port speaks HTTPS (nginx's 497 idea) and the connection closes. Both
// run under the read timeout, so a client that connects and says nothing, or stalls mid-
// handshake, is dropped like an idle keep-alive connection. After the last response the TLS
// close sends close_notify, bounded, before the socket closes.
#include "http/session.hpp"

#include <boost/beast/core/detect_ssl.hpp>
#include <spdlog/spdlog.h>

namespace bitnet::http {

namespace beast = boost::beast;
namespace net = boost::asio;

namespace {

/// "ADDRESS:PORT" of the client, for the log.
std::string peer_of(net::ip::tcp::socket& s) {
    beast::error_code ec;
    const auto ep = s.remote_endpoint(ec);
    if (ec)
        return "a client";
    return ep.address().to_string() + ":" + std::to_string(ep.port());
}

} // namespace

void session::start_tls(bool overloaded) {
    buf_.max_size(srv_.opt.max_header_bytes + 1024);
    stream_.expires_after(srv_.opt.read_timeout);
    beast::async_detect_ssl(
        stream_.tcp_layer(), buf_,
        [self = shared_from_this(), overloaded](beast::error_code ec, bool is_tls) {
            self->safely("TLS start", [&] { self->on_tls_detected(ec, is_tls, overloaded); });
        });
}

void session::on_tls_detected(beast::error_code ec, bool is_tls, bool overloaded) {
    if (ec)
        return close(); // gone or silent past the read timeout before saying anything
    if (!is_tls)
        return refuse_plain_http();
    stream_.engage_tls(srv_.tls->current());
    // The hello is already in buf_: the handshake starts from it. (The default argument: Beast
    // 1.81 checks this overload's handler against void(error_code), asio calls it with the
    // bytes used too.)
    stream_.tls_stream().async_handshake(
        net::ssl::stream_base::server, buf_.data(),
        [self = shared_from_this(), overloaded](beast::error_code hec, std::size_t used = 0) {
            self->safely("TLS handshake", [&] { self->on_handshake(hec, used, overloaded); });
        });
}

void session::on_handshake(beast::error_code ec, std::size_t used, bool overloaded) {
    buf_.consume(used);
    if (ec) {
        // Scanners, old clients (TLS < 1.2), clients that do not trust our certificate: not
        // the server's failure, so not a warning; counted in bitnet_tls_handshake_failures_total.
        srv_.m.tls_handshake_failed();
        spdlog::debug("https: TLS handshake with {} failed: {}", peer_of(stream_.socket()),
                      ec.message());
        return close();
    }
    if (overloaded)
        return answer_overloaded();
    do_read();
}

void session::refuse_plain_http() {
    keep_alive_ = false;
    api_error e{400,
                "invalid_request_error",
                "https_required",
                "this port speaks HTTPS: the request was plain HTTP",
                "",
                "send the request to https:// on this port",
                0};
    // Plain bytes on the plain TCP layer (TLS is not engaged), then the plain linger close.
    send_error("-", e, "-");
}

void session::tls_linger_close() {
    stream_.expires_after(std::chrono::seconds(2));
    stream_.tls_stream().async_shutdown(
        [self = shared_from_this()](beast::error_code) { self->close(); });
}

} // namespace bitnet::http
