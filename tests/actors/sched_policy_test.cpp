// The continuous-batching policy without an actor system. The executor stand-in (`fake_engine`)
// mirrors what model::engine checks on every step (positions continue each sequence's KV, the
// block budget is never exceeded, released sequences start over at 0), so a plan the policy
// emits that a real engine would refuse fails these tests.
#include "actors/sched_policy_rig.hpp"

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <set>

using namespace sched_rig;
using namespace bitnet::sched;
using namespace std::chrono_literals;

TEST_CASE("admission follows weighted priority, FIFO within a level") {
    auto cfg = small_config();
    cfg.weights = {2, 1, 1};
    policy pol(cfg);
    // Low first, high last: arrival order must not beat priority.
    for (request_id i = 0; i < 3; ++i)
        REQUIRE(pol.add(req(30 + i, 2, priority::low), t0));
    for (request_id i = 0; i < 3; ++i)
        REQUIRE(pol.add(req(20 + i, 2, priority::normal), t0));
    for (request_id i = 0; i < 3; ++i)
        REQUIRE(pol.add(req(10 + i, 2, priority::high), t0));
    auto plan = pol.schedule(t0);
    CHECK(ids_of(plan) == std::vector<request_id>{10, 11, 20, 30, 12, 21, 31, 22});
    CHECK(pol.stats().waiting[static_cast<std::size_t>(priority::low)] == 1);
    CHECK(pol.stats().running == 8);
}

TEST_CASE("with one slot per step, high priority is admitted before earlier normal work") {
    auto cfg = small_config();
    cfg.max_batch_seqs = 1;
    policy pol(cfg);
    REQUIRE(pol.add(req(1, 4, priority::normal), t0));
    REQUIRE(pol.add(req(2, 4, priority::high), t0));
    CHECK(ids_of(pol.schedule(t0)) == std::vector<request_id>{2});
}

TEST_CASE("a long prompt is chunked and never stalls running decodes") {
    auto cfg = small_config();
    cfg.max_batch_tokens = 8;
    policy pol(cfg);
    fake_engine eng{cfg.kv_block_tokens, cfg.kv_blocks_total, {}};
    REQUIRE(pol.add(req(1, 3, priority::normal, 100), t0));
    auto plan = pol.schedule(t0);
    REQUIRE(plan.chunks.size() == 1);
    CHECK(plan.chunks[0].part.want_logits);
    auto out = pol.update_from_output(plan, eng.run(plan), t0);
    REQUIRE(out.tokens.size() == 1);

    REQUIRE(pol.add(req(2, 20, priority::high, 100), t0));
    std::vector<std::size_t> prefill_sizes;
    bool b_sampled = false;
    for (int step = 0; step < 10 && !b_sampled; ++step) {
        plan = pol.schedule(t0);
        CHECK(plan.n_tokens <= cfg.max_batch_tokens);
        // The running decode is in every step, first.
        REQUIRE(plan.chunks.size() >= 1);
        CHECK(plan.chunks[0].part.seq == 1);
        CHECK(plan.chunks[0].part.tokens.size() == 1);
        CHECK(plan.chunks[0].part.want_logits);
        for (const auto& c : plan.chunks)
            if (c.part.seq == 2) {
                prefill_sizes.push_back(c.part.tokens.size());
                b_sampled = c.part.want_logits;
            }
        out = pol.update_from_output(plan, eng.run(plan), t0);
    }
    CHECK(prefill_sizes == std::vector<std::size_t>{7, 7, 6});
    CHECK(b_sampled);
    plan = pol.schedule(t0);
    CHECK(ids_of(plan) == std::vector<request_id>{1, 2}); // both decoding now
}

TEST_CASE(
    "KV exhaustion: admission waits, running sequences preempt the newest, never over-commit") {
    auto cfg = small_config();
    cfg.kv_blocks_total = 4; // 16 tokens
    policy pol(cfg);
    fake_engine eng{cfg.kv_block_tokens, cfg.kv_blocks_total, {}};
    REQUIRE(pol.add(req(1, 8, priority::normal, 16), t0)); // 24 tokens: more than the pool
    REQUIRE(pol.add(req(2, 8, priority::normal, 4), t0));
    REQUIRE(pol.add(req(3, 4, priority::normal, 4), t0));
    auto plan = pol.schedule(t0);
    CHECK(ids_of(plan) == std::vector<request_id>{1, 2}); // 3 waits: no block left
    CHECK(pol.stats().kv_blocks_used == 4);
    CHECK(pol.stats().waiting[1] == 1);
    CHECK(pol.update_from_output(plan, eng.run(plan), t0).tokens.size() == 2);

    // Both want a 3rd block for position 8; only by preempting 2 can 1 go on.
    plan = pol.schedule(t0);
    CHECK(ids_of(plan) == std::vector<request_id>{1});
    CHECK(plan.release == std::vector<request_id>{2});
    CHECK(pol.stats().preemptions == 1);
    CHECK(pol.stats().waiting[1] == 2);
    auto out = pol.update_from_output(plan, eng.run(plan), t0);
    REQUIRE(out.tokens.size() == 1);
    CHECK(out.tokens[0].index == 1);

    // Run to the end: every request finishes and the engine never holds more than the budget.
    std::map<request_id, std::uint32_t> generated;
    std::vector<finished_seq> fin;
    for (int step = 0; step < 200 && pol.has_unfinished(); ++step) {
        plan = pol.schedule(t0);
        CHECK(pol.stats().kv_blocks_used <= cfg.kv_blocks_total);
        auto o = pol.update_from_output(plan, eng.run(plan), t0);
        for (const auto& f : o.finished)
            generated[f.id] = f.n_generated;
        for (auto& f : pol.take_finished())
            fin.push_back(f);
    }
    CHECK_FALSE(pol.has_unfinished());
    // Requests 2 and 3 complete all their tokens; request 1 (8 + 16 tokens) outgrows the pool
    // once alone: it ends with `length` when its 4 blocks are full.
    CHECK(generated == std::map<request_id, std::uint32_t>{{2, 4}, {3, 4}});
    REQUIRE(fin.size() == 1);
    CHECK(fin[0].id == 1);
    CHECK(fin[0].reason == finish_reason::length);
    CHECK(fin[0].n_generated == 9); // 16 positions cached + the last sampled token
    plan = pol.schedule(t0);
    CHECK(pol.stats().kv_blocks_used == 0);
    eng.run(plan);
    CHECK(eng.cached.empty());
}

TEST_CASE("randomised load keeps every plan executable and every request accounted for") {
    auto cfg = small_config();
    cfg.kv_blocks_total = 24;
    cfg.max_batch_tokens = 16;
    cfg.max_batch_seqs = 4;
    policy pol(cfg);
    fake_engine eng{cfg.kv_block_tokens, cfg.kv_blocks_total, {}};
    std::mt19937 rng(42);
    std::map<request_id, bool> open;
    request_id next = 1;
    for (int step = 0; step < 600; ++step) {
        if (next <= 60 && rng() % 3 == 0) {
            auto r = req(next, 1 + rng() % 30, static_cast<priority>(rng() % 3), 1 + rng() % 12);
            REQUIRE(pol.add(r, t0));
            open[next++] = true;
        }
        if (!open.empty() && rng() % 17 == 0) {
            auto victim = std::next(open.begin(), static_cast<long>(rng() % open.size()))->first;
            CHECK(pol.finish(victim, finish_reason::cancelled, t0));
        }
        auto plan = pol.schedule(t0);
        CHECK(plan.n_tokens <= cfg.max_batch_tokens);
        CHECK(plan.chunks.size() <= cfg.max_batch_seqs);
        auto o = pol.update_from_output(plan, eng.run(plan, static_cast<token_id>(rng() % 50)), t0);
        for (const auto& f : o.finished)
            CHECK(open.erase(f.id) == 1);
        for (const auto& f : pol.take_finished())
            CHECK(open.erase(f.id) == 1);
    }
    for (int step = 0; step < 400 && pol.has_unfinished(); ++step) {
        auto plan = pol.schedule(t0);
        for (const auto& f : pol.update_from_output(plan, eng.run(plan), t0).finished)
            CHECK(open.erase(f.id) == 1);
        for (const auto& f : pol.take_finished())
            CHECK(open.erase(f.id) == 1);
    }
    CHECK(open.empty());
    CHECK(next > 40);
    eng.run(pol.schedule(t0));
    CHECK(eng.cached.empty());
    CHECK(pol.stats().kv_blocks_used == 0);
}

TEST_CASE("cancel wherever the sequence is, its KV is released with the next plan") {
    auto cfg = small_config();
    cfg.max_batch_tokens = 8;
    cfg.max_batch_seqs = 2;
    policy pol(cfg);
    fake_engine eng{cfg.kv_block_tokens, cfg.kv_blocks_total, {}};
    REQUIRE(pol.add(req(1, 2), t0));  // will decode
    REQUIRE(pol.add(req(2, 30), t0)); // will be mid-prefill
    REQUIRE(pol.add(req(3, 2), t0));  // stays queued (2 seqs per step)
    auto plan = pol.schedule(t0);
    CHECK(ids_of(plan) == std::vector<request_id>{1, 2});
    auto samples = eng.run(plan);

    SUBCASE("queued: no KV to release, reported as never scheduled") {
        CHECK(pol.finish(3, finish_reason::cancelled, t0));
        auto fin = pol.take_finished();
        REQUIRE(fin.size() == 1);
        CHECK(fin[0].never_scheduled);
        CHECK(fin[0].reason == finish_reason::cancelled);
        CHECK(pol.stats().waiting[1] == 0);
        (void)pol.update_from_output(plan, samples, t0);
        CHECK(pol.schedule(t0).release.empty());
    }
    SUBCASE("prefilling: blocks freed at once, released before the next step") {
        const auto used = pol.stats().kv_blocks_used;
        CHECK(pol.finish(2, finish_reason::cancelled, t0));
        CHECK(pol.stats().kv_blocks_used == used - 2); // 6 tokens = 2 blocks
        (void)pol.update_from_output(plan, samples, t0);
        auto next = pol.schedule(t0);
        CHECK(next.release == std::vector<request_id>{2});
        CHECK(ids_of(next) == std::vector<request_id>{1, 3});
        eng.run(next);
        CHECK(eng.cached.count(2) == 0);
    }
    SUBCASE("decoding with its sample in flight: the sample is dropped") {
        CHECK(pol.finish(1, finish_reason::cancelled, t0));
        auto out = pol.update_from_output(plan, samples, t0);
        CHECK(out.tokens.empty());
        CHECK(out.finished.empty());
        auto fin = pol.take_finished();
        REQUIRE(fin.size() == 1);
        CHECK_FALSE(fin[0].never_scheduled);
        CHECK(pol.schedule(t0).release == std::vector<request_id>{1});
    }
    CHECK_FALSE(pol.finish(99, finish_reason::cancelled, t0));
}

TEST_CASE("finish reasons: eos, stop token, max_tokens, context window, deadline, step failure") {
    auto cfg = small_config();
    policy pol(cfg);
    fake_engine eng{cfg.kv_block_tokens, cfg.kv_blocks_total, {}};

    SUBCASE("an EOG token ends with eos and is not delivered") {
        REQUIRE(pol.add(req(1, 3), t0));
        auto plan = pol.schedule(t0);
        auto out = pol.update_from_output(plan, eng.run(plan, 2), t0);
        CHECK(out.tokens.empty());
        REQUIRE(out.finished.size() == 1);
        CHECK(out.finished[0].reason == finish_reason::eos);
        CHECK(out.finished[0].n_generated == 0); // the EOG token is not one generated
        CHECK(out.finished[0].n_prompt == 3);
    }
    SUBCASE("a stop token id ends with stop") {
        auto r = req(1, 3);
        r.stop_token_ids = {9};
        REQUIRE(pol.add(r, t0));
        auto plan = pol.schedule(t0);
        CHECK(pol.update_from_output(plan, eng.run(plan, 8), t0).tokens.size() == 1);
        plan = pol.schedule(t0);
        auto out = pol.update_from_output(plan, eng.run(plan, 9), t0);
        REQUIRE(out.finished.size() == 1);
        CHECK(out.finished[0].reason == finish_reason::stop);
    }
    SUBCASE("max_tokens ends with length after delivering the last token") {
        REQUIRE(pol.add(req(1, 3, priority::normal, 3), t0));
        std::vector<std::uint32_t> indices;
        step_outcome out;
        for (int i = 0; i < 3; ++i) {
            auto plan = pol.schedule(t0);
            out = pol.update_from_output(plan, eng.run(plan), t0);
            for (const auto& t : out.tokens)
                indices.push_back(t.index);
        }
        CHECK(indices == std::vector<std::uint32_t>{0, 1, 2});
        REQUIRE(out.finished.size() == 1);
        CHECK(out.finished[0].reason == finish_reason::length);
        CHECK(out.finished[0].n_generated == 3);
        CHECK_FALSE(pol.has_unfinished());
    }
    SUBCASE("the context window ends with length") {
        auto small = cfg;
        small.n_ctx = 6;
        policy p2(small);
        REQUIRE(p2.add(req(1, 4, priority::normal, 100), t0));
        step_outcome out;
        int steps = 0;
        while (p2.has_unfinished() && steps++ < 10) {
            auto plan = p2.schedule(t0);
            out = p2.update_from_output(plan, eng.run(plan), t0);
        }
        REQUIRE(out.finished.size() == 1);
        CHECK(out.finished[0].reason == finish_reason::length);
        CHECK(out.finished[0].n_generated == 2);
    }
    SUBCASE("a deadline ends queued and running requests") {
        auto queued = req(1, 3);
        queued.deadline = t0 + 10ms;
        auto running = req(2, 3);
        running.deadline = t0 + 20ms;
        REQUIRE(pol.add(running, t0));
        auto plan = pol.schedule(t0);
        (void)pol.update_from_output(plan, eng.run(plan), t0);
        REQUIRE(pol.add(queued, t0));
        plan = pol.schedule(t0 + 15ms);
        auto fin = pol.take_finished();
        REQUIRE(fin.size() == 1);
        CHECK(fin[0].id == 1);
        CHECK(fin[0].reason == finish_reason::deadline);
        CHECK(fin[0].never_scheduled);
        (void)pol.update_from_output(plan, eng.run(plan), t0 + 15ms);
        plan = pol.schedule(t0 + 25ms);
        fin = pol.take_finished();
        REQUIRE(fin.size() == 1);
        CHECK(fin[0].id == 2);
        CHECK_FALSE(fin[0].never_scheduled);
        CHECK(fin[0].n_generated == 2);
        CHECK(plan.release == std::vector<request_id>{2});
    }
    SUBCASE("a failed step ends its sequences with error and releases them") {
        REQUIRE(pol.add(req(1, 3), t0));
        auto plan = pol.schedule(t0);
        pol.step_failed(plan, t0);
        auto fin = pol.take_finished();
        REQUIRE(fin.size() == 1);
        CHECK(fin[0].reason == finish_reason::error);
        CHECK(pol.schedule(t0).release == std::vector<request_id>{1});
        CHECK(pol.stats().kv_blocks_used == 0);
    }
}

TEST_CASE("add rejects what can never run") {
    auto cfg = small_config();
    cfg.kv_blocks_total = 4;
    policy pol(cfg);
    auto too_long = pol.add(req(1, 128), t0);
    REQUIRE_FALSE(too_long);
    CHECK(too_long.error().value() == bitnet::errc::prompt_too_long);
    auto too_big_for_kv = pol.add(req(2, 16), t0);
    REQUIRE_FALSE(too_big_for_kv);
    CHECK(too_big_for_kv.error().value() == bitnet::errc::prompt_too_long);
    auto empty = pol.add(req(3, 0), t0);
    REQUIRE_FALSE(empty);
    CHECK(empty.error().value() == bitnet::errc::invalid_argument);
    REQUIRE(pol.add(req(4, 3), t0));
    auto dup = pol.add(req(4, 3), t0);
    REQUIRE_FALSE(dup);
    CHECK(dup.error().message.find("already") != std::string::npos);
    CHECK(pol.stats().waiting_prompt_tokens == 3);
}
