// The asio<->CAF bridge of one inference request: a sink actor that submits the request to
// admission and relays its events (admitted, token, done, fail) to callbacks, which post them
// onto the connection's strand. No asio thread ever waits on an actor. Internal to http/.
#pragma once

#include "messages/interfaces.hpp"

#include <caf/actor.hpp>
#include <caf/error.hpp>

#include <functional>
#include <memory>

namespace caf {
class actor_system;
}

namespace bitnet::http {

/// Where a sink actor delivers (callbacks run on CAF threads; they post to the strand).
struct sink_target {
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
