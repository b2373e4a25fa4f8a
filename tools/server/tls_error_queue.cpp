// Why this file defines OpenSSL's SSL_get_error: CAF 0.17's OpenSSL session (libcaf_openssl,
// session::handle_ssl_result) ends a TLS session on SSL_ERROR_SSL without reading OpenSSL's error
// queue, and that queue is per thread. Every peer link of a node runs on the middleman's one
// multiplexer thread, so the errors of one refused handshake (a peer whose certificate another CA
// signed) stay queued, and the next SSL_read of a healthy link that merely has no data yet (-1,
// want read) is then reported as SSL_ERROR_SSL: CAF closes that link too. A refused node dialing
// once a second broke every good link of the node it dialed, once a second.
// The dynamic linker binds libcaf_openssl's calls to this definition ahead of libssl's (the
// executable comes first in the lookup): it asks libssl's, and on a failure empties the queue and
// logs what it held with the peer's address, the log line CAF never writes (on the accepting side
// of a refused handshake CAF says nothing at all).
// The HTTPS listener's sessions (asio's SSL engine, on the HTTP io threads) pass straight
// through: asio empties the queue before each OpenSSL call and reads it right after
// SSL_get_error, so emptying it here would turn a failed handshake into an error code 0, which
// asio takes for success; and the log line would blame the cluster.
#include "tls_error_queue.hpp"

#include "http/transport/tls_context.hpp"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

namespace {

/// Set before any cluster session runs; never destroyed, so a session the middleman's thread
/// ends while the process exits still finds it.
std::function<void()>* const tls_refused = new std::function<void()>();

/// "ADDRESS:PORT" of the socket's other end, "an unknown peer" when there is none.
std::string peer_of(const SSL* s) {
    sockaddr_storage sa{};
    socklen_t len = sizeof sa;
    const int fd = SSL_get_fd(s);
    if (fd < 0 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0)
        return "an unknown peer";
    char host[INET6_ADDRSTRLEN] = {};
    if (sa.ss_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
        ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
    }
    if (sa.ss_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
        ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
    }
    return "an unknown peer";
}

} // namespace

void bitnet::server::on_cluster_tls_refusal(std::function<void()> f) {
    *tls_refused = std::move(f);
}

extern "C" int SSL_get_error(const SSL* s, int ret_code) {
    using real_fn = int (*)(const SSL*, int);
    static const auto real = reinterpret_cast<real_fn>(::dlsym(RTLD_NEXT, "SSL_get_error"));
    const int err = real ? real(s, ret_code) : SSL_ERROR_SSL;
    if (bitnet::http::is_http_tls(s))
        return err;
    if (err != SSL_ERROR_SSL && err != SSL_ERROR_SYSCALL)
        return err;
    std::string what;
    while (const auto e = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        what += (what.empty() ? "" : "; ") + std::string(buf);
    }
    if (what.empty())
        return err; // the socket closed: an ordinary end of a link
    if (const auto v = SSL_get_verify_result(s); v != X509_V_OK)
        what += std::string("; the peer's certificate: ") + X509_verify_cert_error_string(v);
    spdlog::error("cluster: TLS session with {} refused or broken: {} (a peer whose certificate "
                  "this cluster's CA did not sign, or that does not accept this node's, is "
                  "refused)",
                  peer_of(s), what);
    if (*tls_refused)
        (*tls_refused)();
    return err;
}
