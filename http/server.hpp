// The HTTP front end: a Boost.Beast listener on its own io_context threads serving the routes of
// HTTP-API.md. Beast and CAF stay out of this header (pimpl) so callers compile cheaply.
// The asio<->CAF seam (bridge.cpp's pattern, inside server.cpp): an asio thread never waits on
// an actor: it spawns one sink actor per request, which submits to admission and receives the
// token/done/fail events; the sink posts each event onto the connection's strand. Only the
// strand writes to the socket. A dropped connection kills the sink, and the batcher (which
// monitors sinks) cancels the sequence and frees its KV within a step.
#pragma once

#include "common/error.hpp"
#include "messages/interfaces.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace caf {
class actor_system;
}

namespace bitnet::http {

struct server_options {
    std::string address = "127.0.0.1";
    std::uint16_t port = 0; ///< 0 = ephemeral
    unsigned io_threads = 1;
    std::uint64_t max_body_bytes = 1 << 20;
    std::chrono::milliseconds read_timeout{30000};
    std::chrono::milliseconds write_timeout{30000};
    std::chrono::milliseconds sse_ping{10000};
    std::size_t sse_buffer_bytes = 1 << 20;
    std::vector<std::string> api_keys; ///< empty = open
    std::string default_model;
    /// Text -> token ids for `model` (the model's tokenizer). Null: text prompts get a 400 that
    /// says to send token ids.
    std::function<result<std::vector<std::int32_t>>(std::string_view model, std::string_view text,
                                                    bool add_bos)>
        tokenize;
};

class server {
public:
    server(caf::actor_system& sys, msg::admission_actor admission, server_options opt);
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    /// Binds and starts the io threads; returns the bound port.
    [[nodiscard]] result<std::uint16_t> start();
    /// Stops accepting new connections (drain); running requests continue.
    void stop_accepting();
    /// Stops everything and joins the io threads.
    void stop();

    struct impl; ///< opaque (Beast and CAF live in server.cpp only)

private:
    std::unique_ptr<impl> impl_;
};

} // namespace bitnet::http
