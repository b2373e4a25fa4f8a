// Why a request (or one of its choices) ended: one value from the scheduler that ends it, through
// the completion message and across nodes, to the API family that renders it in its own words.
#pragma once

#include <cstdint>

namespace bitnet::msg {

/// Why a sequence ended. The native API shows `to_string`'s word as `finish_reason`
/// (http/openapi.json); the other families map it to theirs when they render.
enum class finish_reason : std::uint8_t {
    stop,      ///< a stop token id, or a stop string (the batcher's stop rules)
    length,    ///< max_tokens reached, or the context window is full
    eos,       ///< an end-of-generation token of the model
    cancelled, ///< client gone, explicit cancel, or a drain that cut the stream
    deadline,  ///< the request's deadline passed (the batcher fails it: HTTP 504)
    error,     ///< the step failed for this sequence
};

/// The native API's word for `r`.
[[nodiscard]] constexpr const char* to_string(finish_reason r) noexcept {
    switch (r) {
    case finish_reason::stop:
        return "stop";
    case finish_reason::length:
        return "length";
    case finish_reason::eos:
        return "eos";
    case finish_reason::cancelled:
        return "cancelled";
    case finish_reason::deadline:
        return "deadline";
    case finish_reason::error:
        break;
    }
    return "error";
}

/// The output ran out of room or time before the model ended it, so the text it was writing
/// (a tool call, say) may be unfinished.
[[nodiscard]] constexpr bool ran_out(finish_reason r) noexcept {
    return r == finish_reason::length || r == finish_reason::deadline;
}

} // namespace bitnet::msg
