// The server's shared state behind the pimpl (server::impl): options, the io_context and its
// threads, the acceptor, metrics, the request-id counter, the drain flag, and the registry of
// live sessions (for cut_all and the connection cap). Internal to http/: Beast and asio live
// here, never in server.hpp.
#pragma once

#include "http/key_usage.hpp"
#include "http/metrics.hpp"
#include "http/server.hpp"
#include "http/tls_context.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <caf/actor.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

namespace bitnet::http {

/// The sessions alive, for the end of a drain (cut_all); shared with every session so a session
/// that outlives the server (a sink actor may hold the last reference) still has it.
struct session_registry {
    std::mutex mu;
    std::uint64_t next = 1;
    std::unordered_map<std::uint64_t, std::function<void()>> cut; ///< posts a cut to its strand
    std::atomic<int> open{0};  ///< sessions whose socket is not closed yet
    std::atomic<int> calls{0}; ///< inference requests not yet answered in full
    std::unordered_map<std::uint64_t, caf::actor> sinks; ///< each session's sink, for stop()
    /// sink_targets alive (each holds its session); stop() waits for zero.
    std::shared_ptr<std::atomic<int>> sink_targets = std::make_shared<std::atomic<int>>(0);
};

/// Counts one inference request in session_registry::calls for as long as it lives.
class call_count {
public:
    call_count() = default;
    explicit call_count(std::shared_ptr<session_registry> r)
        : reg_(std::move(r)) {
        ++reg_->calls;
    }
    call_count(call_count&& o) noexcept
        : reg_(std::move(o.reg_)) {}
    call_count& operator=(call_count&& o) noexcept {
        if (this != &o) {
            release();
            reg_ = std::move(o.reg_);
        }
        return *this;
    }
    call_count(const call_count&) = delete;
    call_count& operator=(const call_count&) = delete;
    ~call_count() { release(); }

private:
    void release() {
        if (reg_)
            --reg_->calls;
        reg_.reset();
    }
    std::shared_ptr<session_registry> reg_;
};

struct server::impl {
    using steady = std::chrono::steady_clock;
    using tcp = boost::asio::ip::tcp;

    caf::actor_system& sys;
    msg::admission_actor admission;
    server_options opt;
    boost::asio::io_context ioc;
    std::optional<tcp::acceptor> acceptor;
    std::vector<std::thread> threads;
    std::atomic<std::uint64_t> next_id{1};
    std::shared_ptr<metrics> metrics_ptr;
    metrics& m;
    steady::time_point started = steady::now();
    std::shared_ptr<session_registry> sessions = std::make_shared<session_registry>();
    std::atomic<bool> draining{false};
    std::optional<boost::asio::steady_timer> accept_backoff;
    steady::time_point last_accept_warning{};
    /// HTTPS: the context new connections handshake with (null: plain HTTP).
    std::unique_ptr<tls_contexts> tls;
    /// Per API key: requests and tokens, for that key's own /v1/stats.
    key_usage usage;
    /// Recent Responses replies, per API key (previous_response_id, item_reference).
    response_store responses;

    impl(caf::actor_system& s, msg::admission_actor a, server_options o)
        : sys(s)
        , admission(std::move(a))
        , opt(std::move(o))
        , metrics_ptr(opt.shared_metrics ? opt.shared_metrics : std::make_shared<metrics>())
        , m(*metrics_ptr)
        , responses(opt.responses_store) {
        next_id = opt.first_request_id;
        m.build_info(opt.build.version, opt.build.git_sha);
    }

    void do_accept();
    void on_accept_error(const boost::beast::error_code& ec);
};

} // namespace bitnet::http
