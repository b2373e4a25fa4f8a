// The batcher: one per model. A mailbox around sched::policy that drives the step loop
//   plan = policy.schedule() -> request(executor, step) -> policy.update_from_output()
// with one step in flight, turns samples into token_events for each request's sink, detokenizes
// them (model/tokenizer/tokenizer_stream.hpp) and matches stop strings on that text (model/sampling/stop_rules.hpp;
// vLLM: stop strings are front-end work), and sends a completion
// (or fail for a deadline passed while queued) when a request ends. A sink that dies cancels its
// request, so a disconnected client's KV is freed within one step.
#pragma once

#include "actors/sched_policy.hpp"
#include "messages/interfaces.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace caf {
class actor_system;
}

namespace bitnet::actors {

struct batcher_options {
    std::string model;         ///< alias, for completions and stats
    std::string model_version; ///< reported in completions
    sched::policy_config policy;
    std::uint32_t default_timeout_ms = 120000;
    std::chrono::milliseconds step_timeout{60000}; ///< a step slower than this is a failure
    /// The version's tokenizer (the one its text actor tokenizes with): each request's tokens
    /// become text through its own model::token_stream (whole UTF-8 characters only), then its
    /// model::stop_string_matcher; requests that ask get each token's piece for logprobs.
    /// Null = token ids only (no text, stop strings never match, no pieces).
    std::shared_ptr<const model::tokenizer> tokenizer;
    /// Called after every step with its sequence count and duration (metrics); may run on any
    /// thread, so it must be thread-safe.
    std::function<void(std::uint32_t n_seqs, std::int64_t step_us)> on_step;
};

[[nodiscard]] msg::batcher_actor spawn_batcher(caf::actor_system& sys, batcher_options opt,
                                               msg::executor_actor executor);

} // namespace bitnet::actors
