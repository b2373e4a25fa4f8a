// The errors the HTTP layer answers by itself, before a request reaches a route's validation:
// framing (what the parser refused), routing (404/405), media type, auth. Pure functions, shared
// by the session and the request fuzzer.
#pragma once

#include "http/errors.hpp"

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

} // namespace bitnet::http
