// The server's shared state behind the pimpl (server::impl): the listener (transport state: the
// io_context and its threads, metrics, the request-id counter, the drain flag, the open
// connections), the options, the registry of requests in progress (for stop and cut_all), each
// key's usage and the Responses store. Internal to http/: Beast and asio live here, never in
// server.hpp.
#pragma once

#include "http/observe/key_usage.hpp"
#include "http/observe/metrics.hpp"
#include "http/responses/response_store.hpp"
#include "http/routes/server.hpp"
#include "http/transport/listener.hpp"

#include <caf/actor.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace bitnet::http {

/// The inference requests in progress, for stop() and cut_all(); shared with every session so a
/// session that outlives the server (a sink actor may hold the last reference) still has it.
struct request_registry {
    std::mutex mu;
    std::atomic<int> calls{0}; ///< inference requests not yet answered in full
    /// Each session's sink (by its connection's registry id), for stop().
    std::unordered_map<std::uint64_t, caf::actor> sinks;
    /// sink_targets alive (each holds its session); stop() waits for zero.
    std::shared_ptr<std::atomic<int>> sink_targets = std::make_shared<std::atomic<int>>(0);
};

/// Counts one inference request in request_registry::calls for as long as it lives.
class call_count {
public:
    call_count() = default;
    explicit call_count(std::shared_ptr<request_registry> r)
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
    std::shared_ptr<request_registry> reg_;
};

/// The options, as a base of server::impl so that they exist before the listener (the next base)
/// keeps a reference to their transport part.
struct server_options_holder {
    server_options opt;
};

struct server::impl : server_options_holder, listener {
    caf::actor_system& sys;
    msg::admission_actor admission;
    std::shared_ptr<request_registry> requests = std::make_shared<request_registry>();
    /// Per API key: requests and tokens, for that key's own /v1/stats.
    key_usage usage;
    /// Recent Responses replies, per API key (previous_response_id, item_reference).
    response_store responses;

    impl(caf::actor_system& s, msg::admission_actor a, server_options o)
        : server_options_holder{std::move(o)}
        , listener(opt, opt.shared_metrics ? opt.shared_metrics : std::make_shared<metrics>())
        , sys(s)
        , admission(std::move(a))
        , responses(opt.responses_store) {
        m.build_info(opt.build.version, opt.build.git_sha);
    }
};

} // namespace bitnet::http
