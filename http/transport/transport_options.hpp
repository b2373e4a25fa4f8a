// The server options the transport reads (limits, timeouts, CORS, TLS files, the listen
// address): plain values, so routes/server.hpp can extend them without pulling in asio.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bitnet::http {

/// What the transport needs to know of the server's options (routes/server.hpp's server_options
/// adds the rest).
struct transport_options {
    std::string address = "127.0.0.1";
    std::uint16_t port = 0; ///< 0 = ephemeral
    unsigned io_threads = 1;
    std::uint64_t max_body_bytes = 1 << 20;
    /// Request line + headers, and a chunked body's trailers: 431 past it. The connection's read
    /// buffer is bounded by it too, so no header or trailer block can grow memory without end.
    std::uint32_t max_header_bytes = 16384;
    /// Open connections. Past the cap the oldest idle connection (waiting for a request, kept
    /// alive or new) is closed to make room, else the read stalled longest (stalled_read_after),
    /// else the oldest read of the peer holding the most connections if it holds two or more
    /// than the new one's peer; with none of these the new one is answered 503 + Retry-After.
    std::uint32_t max_connections = 1024;
    /// Open connections of one peer address (trusted proxies exempt). Past it that peer's oldest
    /// idle connection is closed to make room, or the new one is answered 503.
    std::uint32_t max_connections_per_client = 256;
    /// Proxies whose X-Forwarded-For names the client (addresses or ADDRESS/PREFIX networks).
    std::vector<std::string> trusted_proxies;
    std::chrono::milliseconds read_timeout{30000}; ///< the wait for a request's first bytes
    /// The request line and headers must arrive whole within this from their first byte
    /// (nginx's client_header_timeout); the body must then come at `min_body_rate` bytes/s or
    /// faster on average, with this as its head start. Slower, the connection is closed.
    std::chrono::milliseconds header_timeout{10000};
    std::uint32_t min_body_rate = 1024; ///< bytes/s; 0: none (read_timeout per read)
    /// Past a connection cap, a request being read that made no progress for this long (headers
    /// not yet whole, or a body stalled) is closed to make room, as an idle connection is.
    std::chrono::milliseconds stalled_read_after{1000};
    std::chrono::milliseconds write_timeout{30000};
    std::chrono::milliseconds sse_ping{10000};
    std::size_t sse_buffer_bytes = 1 << 20;
    /// CORS: the origins browser pages may call from ("*" = any); empty = no CORS headers. No
    /// cookie or HTTP-auth credentials are ever allowed (the API's keys travel in headers the
    /// page sets itself), so "*" can never expose a user's session.
    std::vector<std::string> cors_origins;
    /// The first request id; a cluster node starts its ids at a prefix of its own, so ids are
    /// unique across the nodes a request may pass through.
    std::uint64_t first_request_id = 1;
    /// HTTPS: PEM certificate chain and key (transport/tls_context.hpp has the TLS policy). Both
    /// empty: plain HTTP. With them the port speaks only HTTPS; plain HTTP gets a 400.
    std::string tls_cert;
    std::string tls_key;
};

} // namespace bitnet::http
