// The listener: the transport's shared state and the accept loop. It owns the io_context and its
// threads, the acceptor (with its back-off when descriptors run out and its refusal past
// max_connections), the TLS contexts, the drain flag and the registry of open connections. It
// knows connections only as transport objects (connection.hpp): what a request means is decided
// above it, by whoever hands it the factory that makes each connection (routes/server.cpp).
// Internal to http/: Beast and asio live here, never in routes/server.hpp.
#pragma once

#include "common/error.hpp"
#include "http/observe/metrics.hpp"
#include "http/transport/client_address.hpp"
#include "http/transport/tls_context.hpp"
#include "http/transport/transport_options.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace bitnet::http {

class connection;

/// The connections alive, for the end of a drain (cut_all) and the connection caps; shared with
/// every connection so one that outlives the listener (a sink actor may hold the last reference)
/// still has it.
struct connection_registry {
    using steady = std::chrono::steady_clock;
    struct entry {
        std::function<void()> cut; ///< posts a cut to its strand
        /// Posts "close if still idle or stalled" to its strand; with true, "close if its request
        /// is still being read" (a read of the peer that holds the most connections).
        std::function<void(bool)> reclaim;
        std::string peer;
        bool idle = false; ///< waiting for a request, none of its bytes read
        steady::time_point idle_since{};
        bool reading = false; ///< a request's headers or body are being read
        steady::time_point
            progress_at{}; ///< while reading: its headers' start, or the last body bytes
    };
    std::mutex mu;
    std::uint64_t next = 1;
    std::unordered_map<std::uint64_t, entry> conns;
    std::unordered_map<std::string, std::uint32_t> per_peer; ///< registered, not closed
    std::atomic<int> open{0};                ///< connections whose socket is not closed yet
    std::atomic<std::uint64_t> reclaimed{0}; ///< idle or stalled connections closed for room

    /// Connections `peer` holds (mu held).
    [[nodiscard]] std::uint32_t held(const std::string& peer) const;
    /// The connection to close to make room (of `peer` when it is not null): the oldest idle
    /// one, else the read whose last progress is oldest and before `stalled_since`; 0 when none
    /// (mu held). With `newcomer` (the global cap), only of an address that holds at least as
    /// many as the newcomer's: addresses that keep retaking slots take each other's, never the
    /// one connection of a client that holds few (its new connection is idle until its first
    /// bytes are read).
    [[nodiscard]] std::uint64_t reclaimable(const std::string* peer,
                                            steady::time_point stalled_since,
                                            const std::string* newcomer = nullptr) const;
    /// Past max_connections with nothing idle or stalled: the read whose headers or body have
    /// been coming longest, of the peer holding the most connections, when that peer holds at
    /// least two more than `peer` does; 0 otherwise (mu held). Reads that keep trickling are
    /// never stalled, so without this a few addresses that each hold their share of the slots
    /// (and retake every slot that frees) would keep a client that holds none out; peers that
    /// hold about as many as each other never take each other's slots.
    [[nodiscard]] std::uint64_t crowded_read(const std::string& peer) const;
};

class listener {
public:
    using steady = std::chrono::steady_clock;
    using tcp = boost::asio::ip::tcp;
    /// Makes the connection object for an accepted socket (it does not start it).
    using factory = std::function<std::shared_ptr<connection>(tcp::socket&&)>;

    listener(const transport_options& conf, std::shared_ptr<metrics> m);
    listener(const listener&) = delete;
    listener& operator=(const listener&) = delete;

    /// Loads the TLS context (when configured), binds, listens and starts the io threads;
    /// returns the bound port.
    [[nodiscard]] result<std::uint16_t> start(factory make);
    /// Closes the acceptor, stops the io_context and joins its threads.
    void stop_io();
    /// Asks every open connection to cut (connection::cut) on its strand.
    void cut_all();
    [[nodiscard]] std::size_t open_connections() const;

    const transport_options& conf;
    boost::asio::io_context ioc;
    std::shared_ptr<metrics> metrics_ptr;
    metrics& m;
    std::atomic<std::uint64_t> next_id{1};
    steady::time_point started = steady::now();
    std::shared_ptr<connection_registry> connections = std::make_shared<connection_registry>();
    std::atomic<bool> draining{false};
    /// HTTPS: the context new connections handshake with (null: plain HTTP).
    std::unique_ptr<tls_contexts> tls;

    /// Parsed trusted_proxies (start fails on an entry that is not an address or network).
    trusted_proxies proxies;

private:
    void do_accept();
    /// An accepted connection within the caps (making room by closing an idle one), or the
    /// refusal's message.
    [[nodiscard]] std::optional<std::string> admit(const std::string& peer, bool trusted_peer);
    void on_accept_error(const boost::beast::error_code& ec);

    factory make_;
    std::optional<tcp::acceptor> acceptor_;
    std::vector<std::thread> threads_;
    std::optional<boost::asio::steady_timer> accept_backoff_;
    steady::time_point last_accept_warning_{};
};

} // namespace bitnet::http
