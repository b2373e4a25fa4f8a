// What the scheduling-policy tests share: request and prompt builders, a small configuration,
// and `fake_engine`, which checks each plan as model::engine would (positions continue each
// sequence's KV, the block budget holds, released sequences start over at 0).
#pragma once

#include "actors/batcher/sched_policy.hpp"

#include <doctest/doctest.h>

#include <map>
#include <vector>

namespace sched_rig {

using namespace bitnet::sched;
using namespace std::chrono_literals;

inline const clock::time_point t0 = clock::time_point{} + 1h;

inline std::vector<token_id> prompt_of(std::size_t n, token_id first = 100) {
    std::vector<token_id> p(n);
    for (std::size_t i = 0; i < n; ++i)
        p[i] = first + static_cast<token_id>(i);
    return p;
}

inline seq_request req(request_id id, std::size_t n_prompt, priority prio = priority::normal,
                       std::uint32_t max_tokens = 16) {
    seq_request r;
    r.id = id;
    r.prompt = prompt_of(n_prompt);
    r.prio = prio;
    r.max_tokens = max_tokens;
    return r;
}

/// Checks each plan the way the engine would and samples a fixed token for each logits row.
struct fake_engine {
    std::uint32_t block_tokens;
    std::uint32_t blocks_total;
    std::map<request_id, std::uint32_t> cached; // tokens in KV per sequence

    std::uint32_t blocks_used() const {
        std::uint32_t n = 0;
        for (const auto& [id, c] : cached)
            n += (c + block_tokens - 1) / block_tokens;
        return n;
    }

    std::vector<sample> run(const step_plan& plan, token_id tok = 7) {
        for (auto id : plan.release)
            cached.erase(id);
        std::vector<sample> out;
        for (const auto& c : plan.chunks) {
            auto& n = cached[c.part.seq];
            REQUIRE_MESSAGE(c.part.pos0 == n,
                            "chunk of " << c.part.seq << " does not continue its KV");
            n += static_cast<std::uint32_t>(c.part.tokens.size());
            if (c.part.want_logits)
                out.push_back({c.part.seq, tok, -0.5f});
        }
        REQUIRE(blocks_used() <= blocks_total);
        return out;
    }
};

inline policy_config small_config() {
    policy_config cfg;
    cfg.max_batch_tokens = 64;
    cfg.max_batch_seqs = 8;
    cfg.kv_block_tokens = 4;
    cfg.kv_blocks_total = 64;
    cfg.n_ctx = 128;
    cfg.eog_ids = {2};
    return cfg;
}

inline std::vector<request_id> ids_of(const step_plan& plan) {
    std::vector<request_id> ids;
    for (const auto& c : plan.chunks)
        ids.push_back(c.part.seq);
    return ids;
}

} // namespace sched_rig
