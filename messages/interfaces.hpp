// The typed-actor interfaces (handle types). Who sends what:
//   http bridge --submit(generate_request, sink)--> admission --> batcher (of the model)
//   batcher --step(step_batch)--> executor --> step_result
//   batcher --token(token_event) / done(completion) / fail(id, error)--> sink (http bridge)
//   http bridge --cancel(id)--> admission --> batcher   (client gone)
//   anyone --route(alias)--> supervisor --> batcher handle
#pragma once

#include "messages/type_ids.hpp"

#include <caf/error.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <string>
#include <vector>

namespace bitnet::msg {

/// Receives one request's output. Implemented by http/bridge (one sink per request).
using sink_actor =
    caf::typed_actor<caf::reacts_to<token_atom, token_event>, caf::reacts_to<done_atom, completion>,
                     caf::reacts_to<fail_atom, request_id, caf::error>>;

/// Owns a model::engine on its own thread (spawned detached): runs steps, samples.
using executor_actor = caf::typed_actor<caf::replies_to<step_atom, step_batch>::with<step_result>,
                                        caf::replies_to<info_atom>::with<executor_info>>;

/// One per model: continuous batching around sched::policy, one step in flight.
/// `submit` answers the request id once queued (or an error: prompt_too_long, ...); output goes
/// to the sink. `tick` is its timer (deadlines while nothing runs).
using batcher_actor =
    caf::typed_actor<caf::replies_to<submit_atom, generate_request, sink_actor>::with<request_id>,
                     caf::reacts_to<cancel_atom, request_id>, caf::reacts_to<tick_atom>,
                     caf::replies_to<stats_atom>::with<batcher_stats>>;

/// Front door: caps, priorities, readiness, draining. `submit` errors: queue_full (cap hit or
/// draining; the message says which), not_found (unknown model), prompt_too_long, timeout
/// (deadline passed while queued). `ready` answers readiness and, when not ready, why.
/// `route(alias, batcher)` is pushed by the supervisor when a model becomes ready (or is
/// swapped); `tick` is admission's own timer (queue-depth polling for caps and Retry-After).
using admission_actor =
    caf::typed_actor<caf::replies_to<submit_atom, generate_request, sink_actor>::with<request_id>,
                     caf::reacts_to<cancel_atom, request_id>, caf::reacts_to<drain_atom>,
                     caf::replies_to<ready_atom>::with<bool, std::string>,
                     caf::reacts_to<route_atom, std::string, batcher_actor>,
                     caf::reacts_to<tick_atom>,
                     caf::replies_to<stats_atom>::with<std::vector<batcher_stats>>>;

/// Owns model versions and their batcher/executor pairs; answers routing lookups and lists every
/// model slot (state, failure, executor info) for /v1/models and /health.
using supervisor_actor =
    caf::typed_actor<caf::replies_to<route_atom, std::string>::with<batcher_actor>,
                     caf::replies_to<info_atom, std::string>::with<executor_info>,
                     caf::replies_to<models_atom>::with<std::vector<model_status>>>;

} // namespace bitnet::msg
