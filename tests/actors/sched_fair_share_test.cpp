// Fair shares between tenants in the batching policy: a tenant holding every sequence slot (n > 1
// choices) or every prompt token of a step (long prefills) makes room for another tenant's
// request within two steps; a tenant alone still uses everything; a tenant's own requests keep
// their order; a waiting request never takes slots from a higher priority. Each scenario also
// runs with tenant_share_percent = 100 (first come, first served), where the second tenant
// waits: that is what the share changes.
#include "actors/batcher/sched_policy.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>

namespace {

using namespace bitnet::sched;
using namespace std::chrono_literals;

const clock::time_point t0 = clock::time_point{} + 1h;

seq_request req(request_id id, std::string tenant, std::size_t n_prompt, std::uint32_t max_tokens,
                std::uint32_t n = 1, priority prio = priority::normal) {
    seq_request r;
    r.id = id;
    r.tenant = std::move(tenant);
    for (std::size_t i = 0; i < n_prompt; ++i)
        r.prompt.push_back(static_cast<token_id>(100 + i));
    r.max_tokens = max_tokens;
    r.n_choices = n;
    r.prio = prio;
    return r;
}

/// Runs plans as an engine would (each chunk continues its sequence's KV; a fork starts where
/// its parent's chunk ended) and samples token 7 (never an end-of-generation) for every row.
struct fork_engine {
    std::map<request_id, std::uint32_t> cached;

    std::vector<sample> run(const step_plan& plan) {
        for (auto id : plan.release)
            cached.erase(id);
        std::vector<sample> out;
        for (const auto& c : plan.chunks) {
            auto& n = cached[c.part.seq];
            REQUIRE_MESSAGE(c.part.pos0 == n, "chunk of " << c.part.seq << " skips its KV");
            n += static_cast<std::uint32_t>(c.part.tokens.size());
            if (!c.part.want_logits)
                continue;
            out.push_back({c.part.seq, 7, -0.5f});
            for (auto k : c.forks) {
                cached[k] = n;
                out.push_back({k, 7, -0.5f});
            }
        }
        return out;
    }
};

policy_config config(std::uint32_t share_percent) {
    policy_config cfg;
    cfg.max_batch_tokens = 64;
    cfg.decoding_batch_tokens = 32;
    cfg.max_batch_seqs = 8;
    cfg.kv_block_tokens = 4;
    cfg.kv_blocks_total = 4096;
    cfg.n_ctx = 1024;
    cfg.eog_ids = {2};
    cfg.tenant_share_percent = share_percent;
    return cfg;
}

/// Steps `pol` until request `id` gets its first token; how many steps that took (give up
/// after `limit`: returns limit + 1). `running_max` gets the most sequences planned in a step.
int steps_to_first_token(policy& pol, fork_engine& eng, request_id id, int limit,
                         std::size_t* running_max = nullptr) {
    for (int step = 1; step <= limit; ++step) {
        auto plan = pol.schedule(t0);
        if (running_max)
            *running_max = std::max(*running_max, plan.chunks.size());
        auto out = pol.update_from_output(plan, eng.run(plan), t0);
        for (const auto& t : out.tokens)
            if (t.id == id)
                return step;
    }
    return limit + 1;
}

/// Tenant A's two n = 4 requests hold all 8 slots, decoding long outputs; then tenant B sends a
/// short request. The steps until B's first token.
int slots_scenario(std::uint32_t share_percent) {
    policy pol(config(share_percent));
    fork_engine eng;
    REQUIRE(pol.add(req(1, "key-a", 6, 500, 4), t0));
    REQUIRE(pol.add(req(2, "key-a", 6, 500, 4), t0));
    // Both prompts in one step; their first tokens fork the 8 choices.
    for (int i = 0; i < 4 && pol.stats().running < 8; ++i) {
        auto plan = pol.schedule(t0);
        (void)pol.update_from_output(plan, eng.run(plan), t0);
    }
    REQUIRE(pol.stats().running == 8);
    REQUIRE(pol.add(req(3, "key-b", 30, 30), t0));
    return steps_to_first_token(pol, eng, 3, 20);
}

} // namespace

TEST_CASE("fair shares: a tenant holding every slot with n > 1 makes room within two steps") {
    CHECK(slots_scenario(50) <= 2);
    // First come, first served: B waits for A's 500-token choices.
    CHECK(slots_scenario(100) > 20);
}

TEST_CASE("fair shares: long prompts of one tenant leave part of each step to another's") {
    const auto scenario = [](std::uint32_t share_percent) {
        policy pol(config(share_percent));
        fork_engine eng;
        for (request_id i = 1; i <= 3; ++i)
            REQUIRE(pol.add(req(i, "key-a", 900, 4), t0));
        auto plan = pol.schedule(t0);
        REQUIRE(plan.n_tokens == 64);
        (void)pol.update_from_output(plan, eng.run(plan), t0);
        REQUIRE(pol.add(req(9, "key-b", 20, 4), t0));
        return steps_to_first_token(pol, eng, 9, 100);
    };
    CHECK(scenario(50) <= 2);
    CHECK(scenario(100) > 10); // behind 2,700 prompt tokens at 64 a step
}

TEST_CASE("fair shares: a tenant alone uses every slot, its own requests keep their order") {
    policy pol(config(50));
    fork_engine eng;
    for (request_id i = 1; i <= 10; ++i)
        REQUIRE(pol.add(req(i, "key-a", 6, 50), t0));
    auto plan = pol.schedule(t0);
    CHECK(plan.chunks.size() == 8);
    for (std::size_t i = 0; i < plan.chunks.size(); ++i)
        CHECK(plan.chunks[i].part.seq == i + 1);
    (void)pol.update_from_output(plan, eng.run(plan), t0);
    // Tenant B arrives with two requests: it gets its share (4 slots) as A's newest give way,
    // in its own order, and A keeps the oldest.
    REQUIRE(pol.add(req(20, "key-b", 6, 50), t0));
    REQUIRE(pol.add(req(21, "key-b", 6, 50), t0));
    plan = pol.schedule(t0);
    std::vector<request_id> b;
    for (const auto& c : plan.chunks)
        if (c.part.seq >= 20)
            b.push_back(c.part.seq);
    CHECK(b == std::vector<request_id>{20});
    CHECK(plan.chunks.size() <= 8);
    (void)pol.update_from_output(plan, eng.run(plan), t0);
    plan = pol.schedule(t0);
    bool a1_runs = false, b21_runs = false;
    for (const auto& c : plan.chunks) {
        a1_runs = a1_runs || c.part.seq == 1;
        b21_runs = b21_runs || c.part.seq == 21;
    }
    CHECK(a1_runs);
    CHECK(b21_runs);
}

TEST_CASE("fair shares: a waiting request takes no slot from a higher priority") {
    policy pol(config(50));
    fork_engine eng;
    REQUIRE(pol.add(req(1, "key-a", 6, 500, 8, priority::high), t0));
    for (int i = 0; i < 4 && pol.stats().running < 8; ++i) {
        auto plan = pol.schedule(t0);
        (void)pol.update_from_output(plan, eng.run(plan), t0);
    }
    REQUIRE(pol.stats().running == 8);
    REQUIRE(pol.add(req(2, "key-b", 6, 10, 1, priority::low), t0));
    CHECK(steps_to_first_token(pol, eng, 2, 10) > 10);
    CHECK(pol.stats().preemptions == 0);
}
