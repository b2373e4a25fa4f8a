// How a stream's frames travel: Server-Sent Events (the OpenAI, Anthropic and native families) or
// newline-delimited JSON (one JSON value per line, as Ollama's API streams). The family chooses
// (family_turn::framing); the transport writes it.
#pragma once

#include <cstdint>

namespace bitnet::http {

enum class stream_framing : std::uint8_t {
    sse,    ///< text/event-stream: `event:` and `data:` lines, a blank line after each event
    ndjson, ///< application/x-ndjson: each frame's data on a line of its own
};

} // namespace bitnet::http
