// One model's batcher counters, which admission and the supervisor ask batchers for: a plain struct
// of std types with its CAF `inspect`, apart from types.hpp because every wave adds counters.
#pragma once

#include <caf/meta/type_name.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace bitnet::msg {

/// One model's queue and batch state, for /v1/stats, /metrics and Retry-After.
struct batcher_stats {
    std::string model;
    std::array<std::uint32_t, 3> waiting{}; ///< by priority: high, normal, low
    std::uint64_t waiting_prompt_tokens = 0;
    std::uint32_t running = 0;
    std::uint32_t kv_blocks_used = 0;
    std::uint32_t kv_blocks_total = 0;
    std::uint64_t steps = 0;
    std::uint64_t preemptions = 0;
    std::uint64_t finished = 0;
    std::string model_version;
    /// Prompt tokens still to prefill plus tokens still to generate (up to max_tokens), over the
    /// queued and running requests: the work a replica holds, for routing.
    std::uint64_t outstanding_tokens = 0;
    /// Structured output: JSON Schemas compiled in this process so far (a schema that comes
    /// again is a cache hit and does not count).
    std::uint64_t schema_compilations = 0;
    /// Prefix caching since this version started: prompt tokens of sequences that looked the
    /// cache up, the tokens it served, and prompt tokens the forward pass computed.
    std::uint64_t prefix_query_tokens = 0;
    std::uint64_t prefix_hit_tokens = 0;
    std::uint64_t prompt_tokens_computed = 0;
    /// Structured output's mask cache (process-wide, constrain/mask_cache.hpp): its byte budget,
    /// the bytes and masks it holds, the schemas they belong to, lookups and evictions.
    std::uint64_t mask_cache_budget_bytes = 0;
    std::uint64_t mask_cache_bytes = 0;
    std::uint64_t mask_cache_masks = 0;
    std::uint64_t mask_cache_schemas = 0;
    std::uint64_t mask_cache_hits = 0;
    std::uint64_t mask_cache_misses = 0;
    std::uint64_t mask_cache_evictions = 0;
    /// Speculative decoding since this version started: draft tokens verified, and those
    /// accepted (each accepted one is a token produced without a pass of its own), from every
    /// source; and those of them drafted from schemas (jump-forward; the rest are n-grams).
    std::uint64_t spec_drafted_tokens = 0;
    std::uint64_t spec_accepted_tokens = 0;
    std::uint64_t spec_grammar_drafted_tokens = 0;
    std::uint64_t spec_grammar_accepted_tokens = 0;
    /// Those of them proposed by the draft model (executor_order::draft_model).
    std::uint64_t spec_model_drafted_tokens = 0;
    std::uint64_t spec_model_accepted_tokens = 0;
    /// Tokens whose greedy choice came from the engine's exact greedy screen (the greedy_screen
    /// setting) instead of the whole logits product, since this version started.
    std::uint64_t greedy_screened_tokens = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batcher_stats& x) {
    return f(caf::meta::type_name("batcher_stats"), x.model, x.waiting, x.waiting_prompt_tokens,
             x.running, x.kv_blocks_used, x.kv_blocks_total, x.steps, x.preemptions, x.finished,
             x.model_version, x.outstanding_tokens, x.schema_compilations, x.prefix_query_tokens,
             x.prefix_hit_tokens, x.prompt_tokens_computed, x.mask_cache_budget_bytes,
             x.mask_cache_bytes, x.mask_cache_masks, x.mask_cache_schemas, x.mask_cache_hits,
             x.mask_cache_misses, x.mask_cache_evictions, x.spec_drafted_tokens,
             x.spec_accepted_tokens, x.spec_grammar_drafted_tokens, x.spec_grammar_accepted_tokens,
             x.spec_model_drafted_tokens, x.spec_model_accepted_tokens, x.greedy_screened_tokens);
}

} // namespace bitnet::msg
