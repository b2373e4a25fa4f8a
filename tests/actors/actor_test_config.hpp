// The actor system configuration of the actor tests: every message type registered, and two
// scheduler threads (the suites share a small machine).
#pragma once

#include "messages/errors.hpp"

#include <caf/actor_system_config.hpp>

namespace bitnet::test {

struct actor_test_config : caf::actor_system_config {
    actor_test_config() {
        msg::register_messages(*this);
        set("scheduler.max-threads", 2);
    }
};

} // namespace bitnet::test
