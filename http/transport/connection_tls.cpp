// The connection's HTTPS start and end: the first bytes of a connection on a TLS port tell a TLS
// ClientHello (record type 0x16) from plain HTTP; a hello is handshaken with the context current
// at that moment (a SIGHUP reload changes it for later connections only), anything else gets a
// plain-HTTP 400 saying the port speaks HTTPS (nginx's 497 idea) and the connection closes. Both
// run under the read timeout, so a client that connects and says nothing, or stalls mid-
// handshake, is dropped like an idle keep-alive connection. After the last response the TLS
// close sends close_notify, bounded, before the socket closes.
#include "http/transport/connection.hpp"

#include <boost/beast/core/detect_ssl.hpp>
#include <spdlog/spdlog.h>

#include <array>

#include <poll.h>
#include <sys/socket.h>

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

void connection::start_tls(bool overloaded) {
    buf_.max_size(net_.conf.max_header_bytes + 1024);
    stream_.expires_after(net_.conf.read_timeout);
    beast::async_detect_ssl(
        stream_.tcp_layer(), buf_,
        [self = shared_from_this(), overloaded](beast::error_code ec, bool is_tls) {
            self->safely("TLS start", [&] { self->on_tls_detected(ec, is_tls, overloaded); });
        });
}

void connection::on_tls_detected(beast::error_code ec, bool is_tls, bool overloaded) {
    if (ec)
        return close(); // gone or silent past the read timeout before saying anything
    if (!is_tls)
        return refuse_plain_http();
    stream_.engage_tls(net_.tls->current());
    // The hello is already in buf_: the handshake starts from it. (The default argument: Beast
    // 1.81 checks this overload's handler against void(error_code), asio calls it with the
    // bytes used too.)
    stream_.tls_stream().async_handshake(
        net::ssl::stream_base::server, buf_.data(),
        [self = shared_from_this(), overloaded](beast::error_code hec, std::size_t used = 0) {
            self->safely("TLS handshake", [&] { self->on_handshake(hec, used, overloaded); });
        });
}

void connection::on_handshake(beast::error_code ec, std::size_t used, bool overloaded) {
    buf_.consume(used);
    if (ec) {
        // Scanners, old clients (TLS < 1.2), clients that do not trust our certificate: not
        // the server's failure, so not a warning; counted in bitnet_tls_handshake_failures_total.
        net_.m.tls_handshake_failed();
        spdlog::debug("https: TLS handshake with {} failed: {}", peer_of(stream_.socket()),
                      ec.message());
        return close();
    }
    if (overloaded)
        return answer_overloaded(overload_reason_);
    do_read();
}

void connection::refuse_plain_http() {
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

/// A polite TLS client that gives up sends close_notify, then its FIN: readable bytes, which for
/// plain HTTP would mean "a pipelined request, the client is still there". So look at them
/// without taking them: the FIN already behind them, or bytes that are exactly one alert record,
/// mean the client is gone. An alert is record type 21 under TLS 1.2; TLS 1.3 hides the type,
/// but an encrypted alert is an application-data record of 19 bytes (2 of alert, 1 of inner
/// type, a 16-byte AEAD tag), which no HTTP request fits in.
bool connection::tls_client_leaving() {
    const auto fd = stream_.socket().native_handle();
    pollfd p{fd, POLLRDHUP, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0)
        return true;
    std::array<unsigned char, 64> head{};
    const auto n = ::recv(fd, head.data(), head.size(), MSG_PEEK | MSG_DONTWAIT);
    if (n < 5)
        return false;
    const std::size_t body = (std::size_t{head[3]} << 8) | head[4];
    if (static_cast<std::size_t>(n) != 5 + body)
        return false; // more than one record, or one still arriving: not a lone alert
    constexpr unsigned char k_alert = 21, k_application_data = 23;
    return head[0] == k_alert || (head[0] == k_application_data && body == 19);
}

void connection::tls_linger_close() {
    stream_.expires_after(std::chrono::seconds(2));
    stream_.tls_stream().async_shutdown(
        [self = shared_from_this()](beast::error_code) { self->close(); });
}

} // namespace bitnet::http
