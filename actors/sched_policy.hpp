// The continuous-batching policy: plain C++, no CAF, no I/O (vLLM v1's scheduler interface).
// The batcher actor is a mailbox around one `policy`; its loop is
//   plan = schedule(now) -> executor runs plan -> update_from_output(plan, samples, now).
// One idea covers prefill and decode: every sequence has `tokens` (prompt + generated) of which
// `n_cached` are in the KV cache; a step gives it a chunk of tokens[n_cached, ...). A decode is a
// chunk of one token; prompts are split into chunks under a per-step token budget while streams
// decode (decoding_batch_tokens), so a running stream waits only for a short step, never for
// whole prompts.
// The policy mirrors the engine's KV block accounting and never plans a step whose blocks are not
// free; when running sequences cannot all grow, the newest is preempted (KV released, re-queued
// at the head of its priority to be recomputed), as vLLM does.
#pragma once

#include "common/error.hpp"
#include "messages/batch_policy.hpp"
#include "messages/ids.hpp"
#include "model/engine/batch.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace bitnet::sched {

using clock = std::chrono::steady_clock;
using msg::n_priorities;
using msg::priority;
using msg::request_id;
using msg::token_id;

/// Why a sequence ended (HTTP-API.md `finish_reason`).
enum class finish_reason : std::uint8_t {
    stop,      ///< a stop token id, or a stop string (reported by the front end via finish())
    length,    ///< max_tokens reached, or the context window is full
    eos,       ///< an end-of-generation token of the model
    cancelled, ///< client gone or explicit cancel
    deadline,  ///< the request's deadline passed (while queued: HTTP 504)
    error,     ///< the step failed for this sequence
};
[[nodiscard]] const char* to_string(finish_reason r) noexcept;

using policy_config = msg::batch_policy;

/// What the front end asks for, already tokenized and validated.
struct seq_request {
    request_id id = 0;
    std::vector<token_id> prompt;
    std::uint32_t max_tokens = 128;
    std::vector<token_id> stop_token_ids;
    priority prio = priority::normal;
    clock::time_point deadline = clock::time_point::max();
};

/// One sequence's share of a step: the engine's chunk as the executor will run it (its `seq` is
/// the request id; `want_logits`: it reaches the end of the known tokens, sample after it), and
/// the sequence's preemption count when planned (stale-sample guard).
struct chunk {
    model::seq_chunk part;
    std::uint32_t epoch = 0;
};

struct step_plan {
    std::uint64_t step = 0;
    /// Sequences whose KV the executor must release before running `chunks` (finished,
    /// cancelled or preempted since the last plan).
    std::vector<request_id> release;
    std::vector<chunk> chunks;
    std::uint32_t n_tokens = 0;
    [[nodiscard]] bool empty() const noexcept { return chunks.empty(); }
};

/// The executor's answer for one chunk with want_logits.
struct sample {
    request_id id = 0;
    token_id token = 0;
    float logprob = 0.0f;
};

/// A token to deliver to the request's sink. `sample_index` points into the samples given to
/// update_from_output (so the batcher can attach top-logprobs without the policy knowing them).
struct token_event {
    request_id id = 0;
    token_id token = 0;
    float logprob = 0.0f;
    std::uint32_t index = 0; ///< 0-based position among the generated tokens
    std::size_t sample_index = 0;
};

struct seq_timings {
    clock::time_point queued{};
    clock::time_point first_scheduled{}; ///< epoch when it never ran
    clock::time_point first_token{};     ///< epoch when it produced none
    clock::time_point finished{};
};

struct finished_seq {
    request_id id = 0;
    finish_reason reason = finish_reason::stop;
    std::uint32_t n_prompt = 0;
    std::uint32_t n_generated = 0;
    bool never_scheduled = false; ///< ended while queued (deadline -> 504, cancel -> no reply)
    seq_timings timings;
};

struct step_outcome {
    std::vector<token_event> tokens;
    std::vector<finished_seq> finished;
};

struct policy_stats {
    std::array<std::uint32_t, n_priorities> waiting{};
    std::uint64_t waiting_prompt_tokens = 0;
    std::uint32_t running = 0;
    std::uint32_t kv_blocks_used = 0;
    std::uint32_t kv_blocks_total = 0;
    std::uint64_t preemptions = 0;
    /// Tokens still to prefill plus tokens still to generate (to max_tokens), over every
    /// unfinished sequence: the load a router compares replicas by.
    std::uint64_t outstanding_tokens = 0;
};

class policy {
public:
    explicit policy(policy_config cfg);

    /// Queues a request. Fails with prompt_too_long when the prompt cannot fit the context window
    /// or the whole KV pool, invalid_argument on an empty prompt or a duplicate id.
    [[nodiscard]] result<void> add(seq_request req, clock::time_point now);

    /// Plans the next step: expires deadlines, then one token per running decode sequence, then
    /// continuing prefill chunks (oldest first), then new admissions by weighted priority, all
    /// within max_batch_seqs and the free KV blocks, and within max_batch_tokens, or
    /// decoding_batch_tokens when the step carries a decode (decodes themselves are never cut by
    /// it). No prompt position is planned in a 1-token chunk unless the prompt is one token.
    /// Sequences that ended here (deadline) are returned by take_finished().
    [[nodiscard]] step_plan schedule(clock::time_point now);

    /// Applies the executor's samples for `plan`: appends tokens, applies EOG / stop ids /
    /// max_tokens / context-window rules, frees finished sequences' KV. Samples for sequences
    /// cancelled meanwhile are dropped.
    [[nodiscard]] step_outcome update_from_output(const step_plan& plan,
                                                  std::span<const sample> samples,
                                                  clock::time_point now);

    /// The executor could not run `plan`: every sequence in it ends with finish_reason::error
    /// (reported by take_finished()); the engine left their KV untouched, they are released.
    void step_failed(const step_plan& plan, clock::time_point now);

    /// Ends a request wherever it is (queued, prefilling, decoding): client cancel, a stop
    /// string found by the front end, or a sequence the executor failed alone (error). Returns
    /// false when the id is unknown (already finished). The result is reported by
    /// take_finished(); its KV is released with the next plan.
    bool finish(request_id id, finish_reason reason, clock::time_point now);

    /// Sequences that ended outside update_from_output (finish(), deadlines in schedule()).
    [[nodiscard]] std::vector<finished_seq> take_finished();

    [[nodiscard]] bool has_unfinished() const noexcept { return !seqs_.empty(); }
    [[nodiscard]] bool has_waiting() const noexcept;
    [[nodiscard]] policy_stats stats() const;
    [[nodiscard]] const policy_config& config() const noexcept { return cfg_; }

private:
    enum class state : std::uint8_t { waiting, running };
    struct sequence {
        seq_request req;
        std::vector<token_id> tokens; ///< prompt + generated
        std::uint32_t n_prompt = 0;
        std::uint32_t n_cached = 0; ///< tokens whose KV is computed
        std::uint32_t n_blocks = 0; ///< KV blocks held
        std::uint32_t n_generated = 0;
        std::uint32_t epoch = 0; ///< bumped on preemption
        state st = state::waiting;
        seq_timings timings;
    };

    [[nodiscard]] std::uint32_t blocks_for(std::uint32_t n_tokens) const noexcept;
    /// Removes a sequence, frees its blocks (released with the next plan) and records why.
    void end(request_id id, finish_reason reason, clock::time_point now,
             std::vector<finished_seq>& out);
    /// Releases a running sequence's KV and puts it back at the head of its priority's queue.
    void preempt(request_id id, step_plan& plan, std::uint32_t& budget, std::uint32_t& seqs_left);
    /// `n` shrunk so that no prompt position is computed in a chunk of exactly one token (the
    /// engine computes those differently), unless the prompt is one token; may be 0.
    [[nodiscard]] std::uint32_t prompt_safe_chunk(const sequence& s,
                                                  std::uint32_t n) const noexcept;
    /// Tries to give `s` a chunk of up to `max_tokens`, allocating its blocks; 0 if none fit.
    std::uint32_t plan_chunk(request_id id, sequence& s, std::uint32_t max_tokens, step_plan& plan);
    /// The priority level whose turn it is to admit, or -1 when nothing waits.
    [[nodiscard]] int next_priority();

    policy_config cfg_;
    std::unordered_map<request_id, sequence> seqs_;
    std::array<std::deque<request_id>, n_priorities> waiting_;
    std::vector<request_id> running_; ///< in admission order
    std::array<std::uint32_t, n_priorities> credits_{};
    std::unordered_set<token_id> eog_;
    std::uint32_t kv_blocks_free_ = 0;
    std::uint64_t waiting_prompt_tokens_ = 0;
    std::uint64_t next_step_ = 1;
    std::uint64_t preemptions_ = 0;
    std::vector<request_id> pending_release_;
    std::vector<finished_seq> finished_;
};

} // namespace bitnet::sched
