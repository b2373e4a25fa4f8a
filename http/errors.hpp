// errc -> HTTP status + the contract's error body, in one function (http/openapi.json,
// ErrorResponse).
#pragma once

#include "common/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace bitnet::http {

/// One HTTP error as the contract shapes it.
struct api_error {
    unsigned status = 500;
    std::string type; ///< invalid_request_error, not_found_error, overloaded, timeout, ...
    std::string code; ///< invalid_value, context_length_exceeded, model_not_found, queue_full...
    std::string message;
    std::string param; ///< the offending field, when one is
    std::string suggestion;
    std::uint32_t retry_after_s = 0; ///< sent as Retry-After when non-zero
    /// Anthropic's `error.details` (a JSON object, the server's own text), when not empty: what
    /// the SDK reads to recover from a refused message thread (its `error_code`).
    std::string details{};
    /// Sent with `x-should-retry: false`: the same request would be refused again, so the SDKs
    /// that retry a 409 by default (Stainless's) answer at once instead.
    bool final_answer = false;
};

/// Maps our error vocabulary to the status table. `retry_after_s` rides along for 503s; `param`
/// names the offending field, else the error's own `param` is used (prompt_too_long: "prompt").
[[nodiscard]] api_error to_api_error(const bitnet::error& e, std::uint32_t retry_after_s = 0,
                                     std::string param = {});

/// `e` as a client without the admin key may read it: an `unavailable` error loses the operator's
/// detail after common/error.hpp's unserved_phrase (a load failure names paths, as /v1/models
/// hides them); any other error is unchanged.
[[nodiscard]] bitnet::error without_operator_detail(bitnet::error e);

/// A 400 for a field: the common validation failure.
[[nodiscard]] api_error invalid_value(std::string param, std::string message);

/// At most `max_bytes` of `s`, cut at a UTF-8 character boundary, "..." marking a cut: how an
/// error quotes a value the client sent (a name, an id, a key), never whole.
[[nodiscard]] std::string excerpt(std::string_view s, std::size_t max_bytes = 64);

/// The most bytes of an error's message and param a body carries: whatever a message quotes,
/// an error body stays small (error_body and the API families' own shapes cut to these).
inline constexpr std::size_t max_error_message_bytes = 1024;
inline constexpr std::size_t max_error_param_bytes = 128;

/// `{"error":{"message","type","code","param","request_id","suggestion"}}`; message and param cut
/// to their bounds.
[[nodiscard]] std::string error_body(const api_error& e, std::string_view request_id);

/// What a request cut by the drain deadline is told (503 `draining`; in a stream, its error
/// event).
[[nodiscard]] api_error drain_error();

} // namespace bitnet::http
