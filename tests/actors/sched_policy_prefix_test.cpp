// The policy's KV accounting with prefix caching: a released sequence's whole prompt blocks may
// be shared through the cache, so only its private blocks count as free at once; the engine's
// report (sync_kv_free) is the truth for the rest. Without prefix caching nothing changes.
#include "actors/batcher/sched_policy.hpp"

#include <doctest/doctest.h>

namespace {

using namespace bitnet::sched;
using namespace std::chrono_literals;

const clock::time_point t0 = clock::time_point{} + 1h;

seq_request req(request_id id, std::size_t n_prompt, std::uint32_t max_tokens) {
    seq_request r;
    r.id = id;
    for (std::size_t i = 0; i < n_prompt; ++i)
        r.prompt.push_back(100 + static_cast<token_id>(i));
    r.max_tokens = max_tokens;
    return r;
}

policy_config config(bool prefix_caching) {
    policy_config cfg;
    cfg.max_batch_tokens = 64;
    cfg.max_batch_seqs = 8;
    cfg.kv_block_tokens = 4;
    cfg.kv_blocks_total = 20;
    cfg.n_ctx = 256;
    cfg.prefix_caching = prefix_caching;
    return cfg;
}

/// Runs one request of `n_prompt` tokens to its end (max_tokens 2) and returns the policy's
/// used-block count right after it ended (before the engine released it).
std::uint32_t used_after_end(policy& p, std::size_t n_prompt) {
    REQUIRE(p.add(req(1, n_prompt, 2), t0));
    for (int i = 0; i < 4 && p.has_unfinished(); ++i) {
        const auto plan = p.schedule(t0);
        std::vector<sample> samples;
        for (const auto& c : plan.chunks)
            if (c.part.want_logits)
                samples.push_back({c.part.seq, 7, -0.1f});
        (void)p.update_from_output(plan, samples, t0);
    }
    REQUIRE_FALSE(p.has_unfinished());
    return p.stats().kv_blocks_used;
}

} // namespace

TEST_CASE("policy, prefix caching: a finished sequence's whole prompt blocks wait for the "
          "engine's count, its private blocks are free at once") {
    policy off(config(false));
    CHECK(used_after_end(off, 18) == 0); // exact mirror: everything back
    off.sync_kv_free(3);                 // ignored without prefix caching
    CHECK(off.stats().kv_blocks_used == 0);

    policy on(config(true));
    // 18 prompt tokens + 1 generated with KV = 19 positions, 5 blocks; 4 whole prompt blocks
    // may be in the cache (and shared), 1 (positions 16..18) is private.
    CHECK(used_after_end(on, 18) == 4);
    // The engine reports 17 free after the step; the sequence's release is still pending (its
    // private block comes on top).
    on.sync_kv_free(17);
    CHECK(on.stats().kv_blocks_used == 20 - 18);
    // The next plan sends the release; the engine's count then is the whole truth.
    const auto plan = on.schedule(t0);
    CHECK(plan.release == std::vector<request_id>{1});
    on.sync_kv_free(20);
    CHECK(on.stats().kv_blocks_used == 0);
    on.sync_kv_free(500); // never more than the pool
    CHECK(on.stats().kv_blocks_used == 0);
}
