// The executor: owns one model::engine on its own thread (spawned detached: a forward pass must
// never block CAF's cooperative scheduler), runs each step_batch through engine::step and samples
// one token per logits row with each sequence's own model::sampler (seeded, so a sequence's draws
// do not depend on what else is in the batch). It is spawned from a plain-data order
// (messages/orders.hpp) and builds its engine from it; the device is chosen once, from the
// order, and reported.
#pragma once

#include "messages/interfaces.hpp"
#include "messages/orders.hpp"

namespace caf {
class actor_system;
}

namespace bitnet::actors {

/// Spawns the executor detached. It builds its engine first (engine_kinds.hpp: the order's
/// engine kind; the real "gguf" kind loads order.engine.model_path and then checks the path still
/// names order.file); if that fails it exits with the error (as a caf::error) so a monitor sees
/// why.
[[nodiscard]] msg::executor_actor spawn_executor(caf::actor_system& sys, msg::executor_order order);

} // namespace bitnet::actors
