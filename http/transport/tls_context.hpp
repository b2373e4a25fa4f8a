// The HTTPS listener's OpenSSL context: built from a PEM certificate chain and key with the
// project's TLS policy (TLS 1.2 minimum, no compression, no renegotiation, ECDHE + AEAD ciphers
// for 1.2, OpenSSL's TLS 1.3 defaults, the server's cipher preference), and re-read on SIGHUP.
// Beast and OpenSSL stay out of this header: callers (the executable, the session) compile
// cheaply.
#pragma once

#include "common/error.hpp"

#include <memory>
#include <mutex>
#include <string>

namespace boost::asio::ssl {
class context;
}

struct ssl_st; // OpenSSL's SSL

namespace bitnet::http {

/// A server context from `cert_file` (PEM chain, leaf first) and `key_file` (PEM key), checked
/// to belong together. An error says which file and what OpenSSL said; either way the calling
/// thread's OpenSSL error queue is left empty (it is per thread, and a CAF or asio thread that
/// calls this next must not read our leftovers as its own failure).
[[nodiscard]] result<std::shared_ptr<boost::asio::ssl::context>>
load_tls_context(const std::string& cert_file, const std::string& key_file);

/// Whether `s` is a session of a context load_tls_context made (HTTP), not one of CAF's cluster
/// links. The executable's SSL_get_error interposer (tools/server/tls_error_queue.cpp) leaves
/// HTTP sessions alone: asio reads the error queue itself right after SSL_get_error.
[[nodiscard]] bool is_http_tls(const ssl_st* s) noexcept;

/// The context new connections use: replaced by a reload, while connections already open keep
/// the one they started with (shared ownership). Thread-safe.
class tls_contexts {
public:
    tls_contexts(std::string cert_file, std::string key_file,
                 std::shared_ptr<boost::asio::ssl::context> first)
        : cert_(std::move(cert_file))
        , key_(std::move(key_file))
        , current_(std::move(first)) {}

    [[nodiscard]] std::shared_ptr<boost::asio::ssl::context> current() const {
        std::lock_guard lk(mu_);
        return current_;
    }
    /// Re-reads both files; on an error the current context stays and the error is returned.
    result<void> reload();

private:
    std::string cert_, key_;
    mutable std::mutex mu_;
    std::shared_ptr<boost::asio::ssl::context> current_;
};

} // namespace bitnet::http
