#include "http/transport/tls_context.hpp"

#include <boost/asio/ssl/context.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace bitnet::http {

namespace ssl = boost::asio::ssl;

namespace {

/// Mozilla's "intermediate" TLS 1.2 suites: forward secrecy (ECDHE) and AEAD only. TLS 1.3 has
/// its own list, OpenSSL's defaults (all AEAD with ephemeral keys).
constexpr const char* k_tls12_ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                                        "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                                        "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

/// The ex_data slot that marks our contexts (is_http_tls); allocated once, thread-safe.
int marker_index() {
    static const int idx = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return idx;
}

/// The value stored in the slot: any non-null address of ours.
char k_marker = 0;

/// Everything on this thread's OpenSSL error queue as one line, emptying it.
std::string drain_errors() {
    std::string what;
    while (const auto e = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        what += (what.empty() ? "" : "; ") + std::string(buf);
    }
    return what;
}

error tls_error(const std::string& what, const boost::system::error_code& ec) {
    auto detail = drain_errors();
    if (detail.empty())
        detail = ec.message();
    return {errc::invalid_argument, what + ": " + detail};
}

} // namespace

result<std::shared_ptr<ssl::context>> load_tls_context(const std::string& cert_file,
                                                       const std::string& key_file) {
    ERR_clear_error();
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    boost::system::error_code ec;
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                         ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                         ssl::context::no_tlsv1_1 | ssl::context::single_dh_use |
                         ssl::context::no_compression,
                     ec);
    if (ec)
        return tls_error("TLS options", ec);
    auto* native = ctx->native_handle();
    // Belt and braces beside no_tlsv1/no_tlsv1_1: a floor, not a list of what is excluded.
    SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
    SSL_CTX_set_options(native, SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                                    SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_set_cipher_list(native, k_tls12_ciphers) != 1)
        return tls_error("TLS 1.2 cipher list", ec);
    ctx->use_certificate_chain_file(cert_file, ec);
    if (ec)
        return tls_error("tls_cert '" + cert_file + "' is not a PEM certificate chain", ec);
    ctx->use_private_key_file(key_file, ssl::context::pem, ec);
    if (ec && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH)
        return tls_error(
            "tls_key '" + key_file + "' does not belong to tls_cert '" + cert_file + "'", ec);
    if (ec)
        return tls_error("tls_key '" + key_file + "' is not a PEM private key", ec);
    if (SSL_CTX_check_private_key(native) != 1)
        return tls_error(
            "tls_key '" + key_file + "' does not belong to tls_cert '" + cert_file + "'", ec);
    SSL_CTX_set_ex_data(native, marker_index(), &k_marker);
    drain_errors(); // warnings OpenSSL queued on the way (none expected): nobody else's to read
    return ctx;
}

bool is_http_tls(const ssl_st* s) noexcept {
    if (s == nullptr)
        return false;
    const auto* ctx = SSL_get_SSL_CTX(s);
    return ctx != nullptr && SSL_CTX_get_ex_data(ctx, marker_index()) == &k_marker;
}

result<void> tls_contexts::reload() {
    auto fresh = load_tls_context(cert_, key_);
    BITNET_TRY(fresh);
    std::lock_guard lk(mu_);
    current_ = std::move(*fresh);
    return {};
}

} // namespace bitnet::http
