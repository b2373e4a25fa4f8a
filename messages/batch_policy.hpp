// A batcher's scheduling settings: a plain value with no CAF in the header, used by the policy
// (actors/batcher/sched_policy.hpp) and carried in a batcher order (messages/orders.hpp).
#pragma once

#include "messages/ids.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace bitnet::msg {

struct batch_policy {
    /// The engine's hard cap on tokens in one step, and the step's budget when nothing decodes.
    std::uint32_t max_batch_tokens = 512;
    /// Tokens in a step that carries decodes: every running decode, then prefill chunks until
    /// the step holds this many tokens (never more than max_batch_tokens). It bounds how long a
    /// running stream waits for its next token while other prompts prefill: on the 2B-4T shape
    /// on 2 cores a prompt token costs ~6 ms, so 512 would stall every stream ~3 s per step.
    /// When the decodes alone reach it, prompts wait for running streams to end (they all do).
    std::uint32_t decoding_batch_tokens = 128;
    std::uint32_t max_batch_seqs = 32;
    std::uint32_t kv_block_tokens = 16;
    std::uint32_t kv_blocks_total = 1024;
    std::uint32_t n_ctx = 4096; ///< the model's context window
    /// Weighted-fair admission: per round, `weights[p]` admissions from priority p before lower
    /// levels wait (a level with nothing waiting yields its turn).
    std::array<std::uint32_t, n_priorities> weights{4, 2, 1};
    std::vector<token_id> eog_ids; ///< the model's end-of-generation tokens
    /// Automatic prefix caching: sequences start from the longest cached prefix of whole KV
    /// blocks. The policy then counts a released sequence's shareable blocks as free only once
    /// the engine reports them free (sync_kv_free), as other sequences may hold them.
    bool prefix_caching = false;
    /// Fair shares between tenants (API keys): while a request of another tenant waits, one
    /// tenant's sequences (a request with n choices counts n) hold at most this percent of
    /// max_batch_seqs, and its prompt chunks at most this percent of the step's prompt budget.
    /// A tenant over its share gives up its newest sequences (preempted, recomputed later) to a
    /// waiting tenant under it. 100: first come, first served across tenants too.
    std::uint32_t tenant_share_percent = 50;
    /// Speculative decoding (n-gram drafts from the sequence's own tokens): the most draft tokens
    /// one decoding sequence verifies in a step. 0: none. Only requests that ask for it (or the
    /// server's default) draft, and each sequence drafts fewer while its drafts are rejected.
    std::uint32_t spec_max_draft = 0;
    /// Drafts use only what a step leaves: they are added after every decode, prefill chunk and
    /// admission is planned, while the step holds fewer than this many tokens (a step of many
    /// sequences is no longer bandwidth-bound, and verification would cost more than it saves).
    std::uint32_t spec_step_tokens = 16;
    /// Whether a request that does not say (spec_mode::server_default) speculates.
    bool spec_by_default = false;
    /// The executor has a draft model (executor_order::draft_model): speculating sequences ask
    /// it for drafts after each of their samples (step_chunk::draft_next).
    bool spec_draft_model = false;
};

} // namespace bitnet::msg
