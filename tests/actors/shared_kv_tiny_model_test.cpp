// KV shared between sequences, through the batcher and a REAL executor on bitnet.cpp's tiny file
// (random weights, greedy margins down to 0.003, so any KV row computed differently shows up as
// other tokens):
//  - automatic prefix caching: requests sharing a prefix give the tokens they give with the
//    cache off, alone or together, greedy or seeded, with or without preemption; the hits are
//    counted; a request that asks for no reuse (reuse_prefix false) computes its whole prompt;
//  - n > 1: the choices fork the prompt's KV (prefilled once) and choice i gives the tokens of
//    the single request with seed + i, also when choices are preempted and recomputed.
#include "actors/actor_test_config.hpp"
#include "actors/batcher/batcher.hpp"
#include "actors/batcher_client.hpp"
#include "actors/executor/executor.hpp"
#include "actors/tiny_model_rig.hpp"
#include "model/gguf/gguf_reader.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

#include <random>

using namespace bitnet;
using namespace std::chrono_literals;

namespace {

/// A real executor whose engine pool holds `kv_blocks` blocks of 4 tokens (0 = plenty) and a
/// batcher whose policy counts the same pool, with prefix caching on or off.
struct cache_rig {
    test::actor_test_config cfg;
    caf::actor_system sys{cfg};
    msg::executor_actor exec;
    msg::batcher_actor batcher;

    cache_rig(bool prefix_caching, std::uint32_t kv_blocks) {
        auto eo = test::tiny_executor_order();
        if (kv_blocks > 0) {
            const auto probe = info_of(actors::spawn_executor(sys, eo));
            eo.engine.kv_budget_bytes = probe.kv_pool_bytes / probe.kv_blocks_total * kv_blocks;
        }
        exec = actors::spawn_executor(sys, eo);
        const auto info = info_of(exec);
        auto bo = test::tiny_batcher_order(info.kv_blocks_total);
        bo.policy.prefix_caching = prefix_caching;
        batcher = actors::spawn_batcher(sys, bo, exec, nullptr);
    }
    ~cache_rig() {
        caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(exec, caf::exit_reason::user_shutdown);
    }

    msg::executor_info info_of(msg::executor_actor e) {
        caf::scoped_actor self{sys};
        msg::executor_info out;
        self->request(e, 30s, msg::info_atom_v)
            .receive([&](const msg::executor_info& i) { out = i; },
                     [&](const caf::error& err) { FAIL(caf::to_string(err)); });
        if (e != exec)
            caf::anon_send_exit(e, caf::exit_reason::user_shutdown);
        return out;
    }
    msg::batcher_stats stats() { return test::batcher_stats_of(sys, batcher); }
    std::vector<std::vector<msg::token_id>> run(const std::vector<msg::generate_request>& reqs) {
        std::vector<std::vector<msg::token_id>> out;
        for (const auto& t : test::run_together(sys, batcher, reqs, std::chrono::seconds(60))) {
            REQUIRE(t.done);
            out.push_back(test::generated_ids(t));
        }
        return out;
    }
};

using test::random_tokens;

/// Requests sharing `prefix`, each with a tail of its own; odd ones seeded, even ones greedy.
std::vector<msg::generate_request> sharing(const std::vector<msg::token_id>& prefix, int n,
                                           msg::request_id first_id, std::mt19937_64& rng) {
    std::vector<msg::generate_request> out;
    for (int k = 0; k < n; ++k) {
        msg::generate_request q;
        q.id = first_id + static_cast<msg::request_id>(k);
        q.prompt = prefix;
        const auto tail = random_tokens(2 + rng() % 7, rng);
        q.prompt.insert(q.prompt.end(), tail.begin(), tail.end());
        q.max_tokens = 24;
        q.params.temperature = k % 2 == 0 ? 0.0f : 0.8f;
        q.params.seed = 900 + static_cast<std::uint64_t>(k);
        out.push_back(std::move(q));
    }
    return out;
}

std::vector<msg::generate_request> renumbered(std::vector<msg::generate_request> reqs,
                                              msg::request_id offset) {
    for (auto& q : reqs)
        q.id += offset;
    return reqs;
}

} // namespace

TEST_CASE("tiny-i2_s prefix cache: shared-prefix requests give the uncached tokens, alone and "
          "together, and are served from the cache") {
    std::mt19937_64 rng(77);
    const auto prefix = random_tokens(37, rng); // 9 whole blocks of 4, one token over
    const auto reqs = sharing(prefix, 5, 1, rng);
    cache_rig off(false, 0);
    std::vector<std::vector<msg::token_id>> want;
    for (const auto& q : reqs)
        want.push_back(off.run({q}).front());
    CHECK(off.stats().prefix_hit_tokens == 0);

    cache_rig on(true, 0);
    for (std::size_t k = 0; k < reqs.size(); ++k) // one at a time: the later ones hit
        CHECK(on.run({reqs[k]}).front() == want[k]);
    const auto after_alone = on.stats();
    CHECK(after_alone.prefix_hit_tokens >= 4 * 36); // each later request: the 9 whole blocks
    CHECK(after_alone.prompt_tokens_computed < off.stats().prompt_tokens_computed);
    // Together (some attach while others compute), and again with everything cached.
    CHECK(on.run(renumbered(reqs, 100)) == want);
    CHECK(on.run(renumbered(reqs, 200)) == want);
    CHECK(on.stats().prefix_hit_tokens > after_alone.prefix_hit_tokens);
    CHECK(on.stats().prefix_query_tokens > on.stats().prefix_hit_tokens);

    // A request that must compute its whole prompt (prompt logprobs) attaches nothing.
    auto no_reuse = reqs[0];
    no_reuse.id = 500;
    no_reuse.reuse_prefix = false;
    const auto before = on.stats();
    CHECK(on.run({no_reuse}).front() == want[0]);
    CHECK(on.stats().prefix_hit_tokens == before.prefix_hit_tokens);
    CHECK(on.stats().prompt_tokens_computed - before.prompt_tokens_computed ==
          no_reuse.prompt.size());
}

TEST_CASE("tiny-i2_s prefix cache: a cached prefix longer than a step's token budget is "
          "attached in one step, past the planned chunk") {
    std::mt19937_64 rng(80);
    const auto prefix = random_tokens(150, rng); // 37 whole blocks; the step budget is 64 tokens
    const auto reqs = sharing(prefix, 3, 1, rng);
    cache_rig off(false, 0);
    std::vector<std::vector<msg::token_id>> want;
    std::vector<std::uint64_t> off_steps;
    for (const auto& q : reqs) {
        const auto before = off.stats().steps;
        want.push_back(off.run({q}).front());
        off_steps.push_back(off.stats().steps - before);
    }
    cache_rig on(true, 0);
    CHECK(on.run({reqs[0]}).front() == want[0]);
    for (std::size_t k = 1; k < reqs.size(); ++k) {
        const auto before = on.stats();
        CHECK(on.run({reqs[k]}).front() == want[k]);
        const auto after = on.stats();
        CHECK(after.prefix_hit_tokens - before.prefix_hit_tokens >= 37 * 4);
        // Uncached it takes 3 prefill steps (150+ tokens, 64 a step) and 23 decodes; with the
        // prefix attached past the first chunk, 2 (attach, then the tail) and 23.
        CHECK(after.steps - before.steps < off_steps[k]);
        CHECK(after.prompt_tokens_computed - before.prompt_tokens_computed <
              reqs[k].prompt.size() - 37 * 4 + 4);
    }
}

TEST_CASE("tiny-i2_s prefix cache: under KV pressure (preemption, eviction) the tokens are the "
          "uncached ones") {
    std::mt19937_64 rng(78);
    const auto prefix = random_tokens(21, rng);
    auto reqs = sharing(prefix, 4, 1, rng);
    for (auto& q : reqs)
        q.max_tokens = 40;
    cache_rig off(false, 0);
    std::vector<std::vector<msg::token_id>> want;
    for (const auto& q : reqs)
        want.push_back(off.run({q}).front());
    // 30 blocks of 4 tokens: four sequences of up to 29 + 40 tokens cannot all grow.
    cache_rig on(true, 30);
    CHECK(on.run(reqs) == want);
    CHECK(on.stats().preemptions > 0);
    CHECK(on.run(renumbered(reqs, 10)) == want);
    CHECK(on.stats().prefix_hit_tokens > 0);
    // Other prompts push the cached blocks out (LRU eviction), and the first ones still match.
    const auto others = sharing(random_tokens(25, rng), 4, 50, rng);
    (void)on.run(others);
    CHECK(on.run(renumbered(reqs, 20)) == want);
}

namespace {

/// The generated ids of each choice of a request with `n` choices.
std::vector<std::vector<msg::token_id>> choices_of(const test::transcript& t, std::uint32_t n) {
    std::vector<std::vector<msg::token_id>> out(n);
    for (const auto& e : t.tokens)
        if (e.token >= 0 && e.choice < n)
            out[e.choice].push_back(e.token);
    return out;
}

} // namespace

TEST_CASE("tiny-i2_s n > 1: one prefill, choice i is the single request with seed + i, also "
          "under preemption") {
    std::mt19937_64 rng(79);
    msg::generate_request q;
    q.id = 1;
    q.prompt = random_tokens(23, rng);
    q.max_tokens = 24;
    q.params.temperature = 0.8f;
    q.params.seed = 300;
    q.n = 6;
    cache_rig off(false, 0);
    std::vector<std::vector<msg::token_id>> want;
    for (std::uint32_t i = 0; i < q.n; ++i) {
        auto single = q;
        single.id = 10 + i;
        single.n = 1;
        single.params.seed = 300 + i;
        want.push_back(off.run({single}).front());
    }
    const auto before = off.stats().prompt_tokens_computed;
    const auto t = test::run_together(off.sys, off.batcher, {q}, std::chrono::seconds(60)).front();
    CHECK(off.stats().prompt_tokens_computed - before == q.prompt.size()); // once, not n times
    REQUIRE(t.dones.size() == q.n);
    std::vector<std::uint32_t> ended;
    for (const auto& d : t.dones) {
        CHECK(d.id == q.id);
        ended.push_back(d.choice);
    }
    std::sort(ended.begin(), ended.end());
    CHECK(ended == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5});
    CHECK(choices_of(t, q.n) == want);

    // 24 blocks of 4: six choices of 23 + 24 tokens cannot all grow; the newest are preempted
    // and recomputed (prompt + their own tokens), with and without the prefix cache.
    for (const bool caching : {false, true}) {
        CAPTURE(caching);
        cache_rig tight(caching, 24);
        const auto u =
            test::run_together(tight.sys, tight.batcher, {q}, std::chrono::seconds(60)).front();
        REQUIRE(u.dones.size() == q.n);
        CHECK(choices_of(u, q.n) == want);
        CHECK(tight.stats().preemptions > 0);
    }
}
