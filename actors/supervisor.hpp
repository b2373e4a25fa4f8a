// The supervisor: loads the configured models at start-up (one executor + one batcher each),
// monitors both, restarts a crashed pair (bounded), pushes each ready model's route to
// admission and answers routing lookups. A model is a "version" slot: hot-swap later spawns a
// second pair beside the first and flips the route (the route push is already the only way
// admission learns where a model lives).
#pragma once

#include "actors/batcher.hpp"
#include "actors/executor.hpp"
#include "messages/interfaces.hpp"

#include <string>
#include <vector>

namespace caf {
class actor_system;
}

namespace bitnet::actors {

struct model_spec {
    std::string alias;
    std::string version = "1";
    std::string path; ///< the model file, for /v1/models (the executor's factory opens it)
    executor_options executor;
    /// Batching settings; n_ctx, KV block figures and EOG ids are filled from the executor.
    batcher_options batcher;
};

struct supervisor_options {
    std::vector<model_spec> models;
    msg::admission_actor admission; ///< receives route(alias, batcher) for each ready model
    std::uint32_t max_restarts = 3; ///< per model; past it the model stays failed
};

[[nodiscard]] msg::supervisor_actor spawn_supervisor(caf::actor_system& sys,
                                                     supervisor_options opt);

} // namespace bitnet::actors
