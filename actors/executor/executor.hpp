// The executor: owns one model::engine on its own thread (spawned detached: a forward pass must
// never block CAF's cooperative scheduler), runs each step_batch through engine::step and samples
// one token per logits row with each sequence's own model::sampler (seeded, so a sequence's draws
// do not depend on what else is in the batch). It is spawned from a plain-data order
// (messages/orders.hpp) and builds its engine from it; the device is chosen once, from the
// order, and reported.
#pragma once

#include "messages/interfaces.hpp"
#include "messages/orders.hpp"

#include <memory>

namespace caf {
class actor_system;
}

namespace bitnet::model::constrain {
struct cancel_token;
}

namespace bitnet::actors {

/// Spawns the executor detached. It builds its engine first (engine_kinds.hpp: the order's
/// engine kind; the real "gguf" kind loads order.engine.model_path and then checks the path still
/// names order.file); if that fails it exits with the error (as a caf::error) so a monitor sees
/// why. `cancel`, when given, is the supervisor's way to stop a stuck step: once set, the loops
/// a client's schema drives (compile, token masks) end at their next check.
[[nodiscard]] msg::executor_actor
spawn_executor(caf::actor_system& sys, msg::executor_order order,
               std::shared_ptr<model::constrain::cancel_token> cancel = nullptr);

} // namespace bitnet::actors
