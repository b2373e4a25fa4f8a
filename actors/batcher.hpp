// The batcher: one per model. A mailbox around sched::policy that drives the step loop
//   plan = policy.schedule() -> request(executor, step) -> policy.update_from_output()
// with one step in flight, turns samples into token_events for each request's sink, matches stop
// strings on the detokenized text (vLLM: stop strings are front-end work), and sends a completion
// (or fail for a deadline passed while queued) when a request ends. A sink that dies cancels its
// request, so a disconnected client's KV is freed within one step.
#pragma once

#include "actors/sched_policy.hpp"
#include "messages/interfaces.hpp"

#include <functional>
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
    /// The UTF-8 text a token adds (the streaming detokenizer of model/tokenizer.hpp, which
    /// holds back incomplete characters). Null = no text (token ids only).
    std::function<std::string(std::uint64_t seq, msg::token_id)> token_text;
};

[[nodiscard]] msg::batcher_actor spawn_batcher(caf::actor_system& sys, batcher_options opt,
                                               msg::executor_actor executor);

/// Stop-string matching over streamed text: emits what can no longer be part of a stop string,
/// holds back a possible prefix, and reports a match (text before it is emitted, the rest not).
class stop_matcher {
public:
    explicit stop_matcher(std::vector<std::string> stops)
        : stops_(std::move(stops)) {}
    /// Adds `piece`; returns the text safe to emit now. `matched()` turns true on a stop string.
    [[nodiscard]] std::string push(std::string_view piece);
    /// The held-back text, at the end of generation for another reason.
    [[nodiscard]] std::string flush();
    [[nodiscard]] bool matched() const noexcept { return matched_; }

private:
    std::vector<std::string> stops_;
    std::string pending_;
    bool matched_ = false;
};

} // namespace bitnet::actors
