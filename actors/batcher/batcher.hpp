// The batcher: one per model. A mailbox around sched::policy that drives the step loop
//   plan = policy.schedule() -> request(executor, step) -> policy.update_from_output()
// with one step in flight, turns samples into token_events for each request's sink, detokenizes
// them (model/tokenizer/tokenizer_stream.hpp) and matches stop strings on that text
// (model/sampling/stop_rules.hpp; vLLM: stop strings are front-end work), and sends a completion
// (or fail for the request's deadline, queued or running) when a request ends. A sink that dies
// cancels its request, so a disconnected client's KV is freed within one step.
#pragma once

#include "actors/batcher/sched_policy.hpp"
#include "messages/interfaces.hpp"
#include "messages/orders.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <memory>
#include <string>

namespace caf {
class actor_system;
}

namespace bitnet::actors {

/// Spawns a batcher from its plain-data order, for `executor`. `tokenizer` is the version's text
/// side in this process (shared with its text actor): each request's tokens become text through
/// its own model::token_stream (whole UTF-8 characters only), then its model::stop_string_matcher.
/// Null = token ids only (no text, stop strings never match). It is a pointer beside the order,
/// not in it: a batcher spawned elsewhere would read it from the order's model file.
[[nodiscard]] msg::batcher_actor spawn_batcher(caf::actor_system& sys, msg::batcher_order order,
                                               msg::executor_actor executor,
                                               std::shared_ptr<const model::tokenizer> tokenizer);

} // namespace bitnet::actors
