// Internal to the batcher's files (batcher.cpp: the actor, its steps and reports;
// batcher_echo.cpp: the prompt echo of `echo` requests, gathered from the executor's prompt
// scores): what the batcher keeps per live request and per actor, and the helpers both call.
#pragma once

#include "actors/batcher/batcher.hpp"
#include "actors/batcher/sched_policy.hpp"
#include "common/memory_tables.hpp"
#include "common/trace.hpp"
#include "model/constrain/tool_call_opener.hpp"
#include "model/sampling/stop_rules.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "model/tokenizer/tokenizer_stream.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace bitnet::actors::batcher_detail {

using sched::clock;

/// A sampled request's spans on this batcher while it runs (batcher_trace.cpp): its
/// bitnet.generate span's id and start, and the events its prefill and decode spans will carry.
struct request_trace {
    std::uint64_t span = 0; ///< 0: the request is not sampled
    /// When this batcher took it (a request placed by another node was received there first).
    std::int64_t start_ns = 0;
    std::uint32_t n0 = 0; ///< n_generated at submit (a resumed stream's tail)
    bool started = false; ///< scheduled at least once: a later start is a recompute
    std::vector<trace::event> prefill_events;
    std::vector<trace::event> decode_events;
};

struct live_request {
    msg::sink_actor sink;
    msg::generate_request req;
    std::optional<model::token_stream> text;         ///< with a tokenizer
    std::optional<model::stop_string_matcher> stops; ///< with stop strings
    clock::time_point received{};
    std::uint32_t n_generated = 0; ///< tokens delivered so far (the sampler's draws to replay)
    std::optional<bitnet::error> failure; ///< why the executor failed this sequence alone
    /// echo: the prompt's scores gathered so far (prompt_logprobs), and whether the echo event
    /// went out (it goes once, before any generated token).
    msg::prompt_echo echo;
    std::uint32_t echo_next = 1; ///< the next prompt position awaiting its score
    bool echo_sent = false;
    /// Prefix caching: the prompt's leading whole blocks, all computed with prompt semantics
    /// (positions below the chunks' decoded_from), for the executor's cache.
    std::vector<msg::token_id> prefix_tokens;
    /// n > 1: which choice this sequence is (req.id is the request's id for every choice).
    std::uint32_t choice = 0;
    /// Prompt positions its latest start took from the prefix cache.
    std::uint32_t cached_tokens = 0;
    request_trace trace;

    /// An auto tool-call request (generate_request::tool_union under a template that writes
    /// calls): the call opener and where the output's text turns into the call's.
    std::optional<model::constrain::call_splitter> calls;

    /// The text token `t` lets through: whole characters, minus anything a stop string may
    /// still claim (and nothing from a stop string on).
    std::string push(msg::token_id t) {
        if (!text)
            return {};
        auto piece = text->push(t);
        return stops ? stops->feed(piece).emit : piece;
    }
    /// The end for another reason than a stop string: what was held back.
    std::string flush() {
        if (!text)
            return {};
        auto piece = text->flush();
        if (!stops)
            return piece;
        auto out = stops->feed(piece).emit;
        return stops->matched() ? out : out + stops->flush();
    }
    /// push(t), split into the reply's text and the call's (all reply without `calls`).
    model::constrain::call_splitter::parts push_parts(msg::token_id t) {
        auto s = push(t);
        if (!calls)
            return {std::move(s), {}};
        return calls->feed(s);
    }
    /// flush(), split likewise; text held back as a possible opener is the reply's.
    model::constrain::call_splitter::parts flush_parts() {
        auto s = flush();
        if (!calls)
            return {std::move(s), {}};
        auto out = calls->feed(s);
        out.reply += calls->flush().reply;
        return out;
    }
    [[nodiscard]] bool stopped() const noexcept { return stops && stops->matched(); }
};

struct batcher_state {
    explicit batcher_state() = default;
    /// One batcher per model version: counted while it lives (memory::live_count).
    memory::live_counter<memory::live_kind::version> counted;
    std::unique_ptr<sched::policy> policy;
    msg::batcher_order opt;
    std::shared_ptr<const model::tokenizer> tokenizer;
    msg::executor_actor executor;
    std::unordered_map<msg::request_id, live_request> live;
    std::unordered_map<caf::actor_addr, msg::request_id> by_sink;
    /// Request id -> its choices not reported yet (the sink's entry goes with the last).
    std::unordered_map<msg::request_id, std::uint32_t> open_choices;
    bool in_flight = false;
    /// A step ran past step_timeout_ms: the executor is stuck, the supervisor replaces this pair,
    /// and no further step goes to it.
    bool stalled = false;
    /// Compiles JSON Schemas not in the schema cache yet, on a thread of its own (spawned at
    /// the first such request, linked to this batcher).
    caf::actor compiler;
    bool tick_pending = false;
    std::uint64_t steps = 0;
    std::uint64_t finished = 0;
    std::uint64_t prefix_query_tokens = 0;
    std::uint64_t prefix_hit_tokens = 0;
    std::uint64_t prompt_tokens_computed = 0;
    std::uint64_t greedy_screened_tokens = 0;
    /// Output for requests placed here by another node's relay, gathered over one pass of the
    /// mailbox and sent as one stream_batch per relay (flush()).
    std::vector<std::pair<caf::actor, msg::stream_batch>> outbox;
    std::int64_t step_sent_ns = 0; ///< when the step in flight went to the executor (tracing)
    static inline const char* name = "batcher";
};

using batcher_pointer = msg::batcher_actor::stateful_pointer<batcher_state>;

/// The most prompt tokens per chunk of a prompt_logprobs request: each returns a logits row
/// (n_vocab floats: 64 MiB for 128 rows of a 128k vocabulary), so the pass's memory stays bounded
/// whatever the step budget.
constexpr std::uint32_t echo_chunk_tokens = 128;

// Tracing (batcher_trace.cpp); each does nothing for requests that are not sampled.
/// A request was queued: its generate span starts.
void trace_submitted(live_request& lr);
/// A choice forked from `parent` (n > 1): a generate span of its own, from the request's start.
void trace_forked(const live_request& parent, live_request& child);
/// A step goes to the executor: preemptions (sequences released while still running), prefill
/// chunks and recomputes become events.
void trace_step_sent(batcher_state& st, const sched::step_plan& plan);
/// Its result came back: prefix-cache hits become events, and a step span linked to every
/// sampled request it served is recorded.
void trace_step_done(batcher_state& st, const sched::step_plan& plan, const msg::step_result& r);
/// A sequence ended (`error`: why it failed, empty otherwise): its generate, queue, prefill and
/// decode spans are recorded.
void trace_finished(const batcher_state& st, live_request& lr, const sched::finished_seq& f,
                    const std::string& error);

/// Plans and sends the next step when none is in flight (batcher.cpp).
void kick(batcher_pointer self);

/// The submit handler (batcher_submit.cpp): compiles the request's schema when it is new, on
/// the batcher's compiler thread, then queues the request.
caf::result<msg::request_id> submit(batcher_pointer self, msg::generate_request req,
                                    msg::sink_actor sink);

/// A request's events go to its sink, or into its relay's batch when another node placed it.
void emit_token(batcher_pointer self, const live_request& lr, msg::token_event ev);

/// The bytes token `id` stands for, for logprobs (its vocabulary entry when it has none).
std::string piece_of(const model::tokenizer& tok, msg::token_id id);

/// echo with prompt_logprobs: a chunk asks for the rows that score prompt tokens not scored yet.
void mark_prompt_rows(const live_request& lr, msg::step_chunk& sc);
/// Takes one prompt token's score from a step result (in position order).
void take_prompt_score(batcher_state& st, const msg::prompt_score& p);
/// Sends a request's prompt echo once it is whole (every prompt token scored, when asked).
void send_echo_when_ready(batcher_pointer self, msg::request_id id);

} // namespace bitnet::actors::batcher_detail
