// errc -> HTTP status + the contract's error body, in one function (HTTP-API.md "Errors").
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

/// `{"error":{"message","type","code","param","request_id","suggestion"}}`.
[[nodiscard]] std::string error_body(const api_error& e, std::string_view request_id);

/// What a request cut by the drain deadline is told (503 `draining`; in a stream, its error
/// event).
[[nodiscard]] api_error drain_error();

} // namespace bitnet::http
