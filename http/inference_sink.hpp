// The asio<->CAF bridge of one inference request: a sink actor that submits the request to
// admission and relays its events (admitted, token, done, fail) to callbacks, which post them
// onto the connection's strand. No asio thread ever waits on an actor. Internal to http/.
#pragma once

#include "messages/interfaces.hpp"

#include <caf/actor.hpp>
#include <caf/error.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <utility>

namespace caf {
class actor_system;
}

namespace bitnet::http {

/// Counts a sink_target while it lives, in a counter the server waits on at stop.
class live_count {
public:
    live_count() = default;
    explicit live_count(std::shared_ptr<std::atomic<int>> n)
        : n_(std::move(n)) {
        ++*n_;
    }
    live_count(const live_count&) = delete;
    live_count& operator=(const live_count&) = delete;
    live_count& operator=(live_count&& o) noexcept {
        std::swap(n_, o.n_);
        return *this;
    }
    ~live_count() {
        if (n_)
            --*n_;
    }

private:
    std::shared_ptr<std::atomic<int>> n_;
};

/// Where a sink actor delivers (callbacks run on CAF threads; they post to the strand). The
/// callbacks hold the session, whose socket and timers need the server's io_context: `counted`
/// comes first so it is released last, after them, and server::stop waits for the count to
/// reach zero before the io_context may go.
struct sink_target {
    live_count counted;
    std::function<void()> on_admitted;
    std::function<void(msg::token_event)> on_token;
    std::function<void(msg::completion)> on_done;
    std::function<void(caf::error)> on_fail;
};

/// Spawns the sink of one request: it submits `req` to `admission`, watches the batcher that
/// takes it (a crashed model fails the request), and quits after the request's last event or
/// when killed (client gone, drain cut), which the batcher sees as a cancel. It demonitors its
/// batcher on every way out.
[[nodiscard]] caf::actor spawn_sink(caf::actor_system& sys, msg::admission_actor admission,
                                    msg::generate_request req, std::shared_ptr<sink_target> t);

} // namespace bitnet::http
