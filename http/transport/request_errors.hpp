// The errors the HTTP layer answers by itself, before a request reaches a route's validation:
// framing (what the parser refused), routing (404/405), media type, auth. Pure functions, shared
// by the session and the request fuzzer.
#pragma once

#include "http/errors.hpp"

#include <boost/beast/http/fields.hpp>
#include <boost/system/error_code.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace bitnet::http {

/// The contract's body for a status the server answers itself: 400 invalid_request, 401
/// invalid_api_key, 404 not_found, 405/413/415 invalid_request, 431 request_header_too_large.
[[nodiscard]] api_error status_error(unsigned status, std::string message);

/// The limits a connection reads under (server_options carries them).
struct read_limits {
    std::uint64_t max_body_bytes = 1 << 20;
    std::uint32_t max_header_bytes = 16384;
};

/// The answer to a request the parser refused (413 body, 431 headers or trailers, 400 malformed),
/// or nothing when the connection simply ended (EOF, reset, timeout: nobody to answer).
[[nodiscard]] std::optional<api_error> read_refusal(const boost::system::error_code& ec,
                                                    const read_limits& limits);

/// What RFC 9112 refuses in a request's header section before its body is read, or nothing:
/// a Transfer-Encoding whose last coding is not chunked (with or without Content-Length: the
/// body cannot be framed, RFC 9112 §6.3), chunked applied twice, or a coding this server does
/// not decode (`gzip, chunked`: 501, RFC 9112 §6.1); an HTTP/1.1 request without exactly one
/// Host (RFC 9112 §3.2); an Expect other than 100-continue (417, RFC 9110 §10.1.1). Each
/// answer closes the connection.
[[nodiscard]] std::optional<api_error> framing_refusal(const boost::beast::http::fields& f,
                                                       unsigned version);

/// Whether the request asks for `100 Continue` before it sends its body (HTTP/1.1 only).
[[nodiscard]] bool expects_continue(const boost::beast::http::fields& f, unsigned version);

} // namespace bitnet::http
