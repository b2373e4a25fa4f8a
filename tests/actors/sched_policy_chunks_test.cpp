// The continuous-batching policy's chunking: how prompts share a step with running decodes
// (decoding_batch_tokens), that no prompt token is computed alone, and resumed requests; checked
// against sched_policy_rig.hpp's fake_engine, as sched_policy_test.cpp's cases are.
#include "actors/sched_policy_rig.hpp"

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <set>

using namespace sched_rig;
using namespace bitnet::sched;
using namespace std::chrono_literals;

TEST_CASE("while streams decode, every step holds every running decode and at most "
          "decoding_batch_tokens tokens, and the queue still drains") {
    auto cfg = small_config();
    cfg.max_batch_tokens = 64;
    cfg.decoding_batch_tokens = 16;
    cfg.max_batch_seqs = 12;
    cfg.kv_blocks_total = 256;
    policy pol(cfg);
    fake_engine eng{cfg.kv_block_tokens, cfg.kv_blocks_total, {}};
    // 6 streams that decode for a long time, then a long queue of prompts behind them.
    for (request_id i = 1; i <= 6; ++i)
        REQUIRE(pol.add(req(i, 5, priority::normal, 60), t0));
    std::mt19937 rng(7);
    for (request_id i = 100; i < 130; ++i)
        REQUIRE(pol.add(req(i, 2 + rng() % 40, priority::normal, 3), t0));

    std::set<request_id> decoding; // sampled at least once and not finished
    std::size_t steps_with_prefill_and_decodes = 0;
    std::size_t queued_done = 0;
    for (int step = 0; step < 400 && pol.has_unfinished(); ++step) {
        auto plan = pol.schedule(t0);
        std::map<request_id, std::size_t> in_plan;
        for (const auto& c : plan.chunks)
            in_plan[c.part.seq] = c.part.tokens.size();
        for (auto id : decoding) {
            CAPTURE(id);
            REQUIRE(in_plan.count(id) == 1); // never starved by prefill
            CHECK(in_plan[id] == 1);
        }
        if (decoding.empty()) {
            CHECK(plan.n_tokens <= cfg.max_batch_tokens);
        } else {
            CHECK(plan.n_tokens <=
                  std::max<std::size_t>(cfg.decoding_batch_tokens, decoding.size()));
            if (plan.n_tokens > decoding.size())
                ++steps_with_prefill_and_decodes;
        }
        auto out = pol.update_from_output(plan, eng.run(plan), t0);
        for (const auto& t : out.tokens)
            decoding.insert(t.id);
        for (const auto& f : out.finished) {
            decoding.erase(f.id);
            queued_done += f.id >= 100;
        }
    }
    CHECK_FALSE(pol.has_unfinished());
    CHECK(queued_done == 30);                    // prompts were not starved either
    CHECK(steps_with_prefill_and_decodes >= 20); // the budget was exercised, not bypassed
}

TEST_CASE("decoding_batch_tokens: prompts take the whole max_batch_tokens when nothing decodes") {
    auto cfg = small_config();
    cfg.max_batch_tokens = 40;
    cfg.decoding_batch_tokens = 10;
    policy pol(cfg);
    fake_engine eng{cfg.kv_block_tokens, cfg.kv_blocks_total, {}};
    REQUIRE(pol.add(req(1, 30), t0));
    REQUIRE(pol.add(req(2, 30), t0));
    auto plan = pol.schedule(t0);
    CHECK(plan.n_tokens == 40); // nobody waits on this step: the engine's cap
    CHECK(pol.update_from_output(plan, eng.run(plan), t0).tokens.size() == 1);
    plan = pol.schedule(t0); // 1 decodes now: 9 tokens of prompt 2 ride along
    CHECK(ids_of(plan) == std::vector<request_id>{1, 2});
    CHECK(plan.n_tokens == 10);

    // Larger than max_batch_tokens acts as max_batch_tokens (the engine's hard cap).
    cfg.decoding_batch_tokens = 1000;
    policy wide(cfg);
    CHECK(wide.config().decoding_batch_tokens == 40);
}

TEST_CASE("no prompt token is ever alone in a chunk (the engine computes those like decode)") {
    auto cfg = small_config();
    cfg.max_batch_tokens = 64;
    cfg.decoding_batch_tokens = 4;
    policy pol(cfg);
    fake_engine eng{cfg.kv_block_tokens, cfg.kv_blocks_total, {}};
    // 3 decodes leave 1 token of room: a 5-token prompt must wait rather than take 1 token.
    for (request_id i = 1; i <= 3; ++i)
        REQUIRE(pol.add(req(i, 2, priority::normal, 50), t0));
    auto plan = pol.schedule(t0);
    (void)pol.update_from_output(plan, eng.run(plan), t0);
    REQUIRE(pol.add(req(4, 5), t0));
    plan = pol.schedule(t0);
    CHECK(ids_of(plan) == std::vector<request_id>{1, 2, 3});
    (void)pol.update_from_output(plan, eng.run(plan), t0);
    // A 1-token prompt may take that 1 token: it is the whole prompt, as unsplit.
    auto one = req(5, 1, priority::high);
    REQUIRE(pol.add(one, t0));
    plan = pol.schedule(t0);
    CHECK(ids_of(plan) == std::vector<request_id>{1, 2, 3, 5});
    (void)pol.update_from_output(plan, eng.run(plan), t0);
    (void)pol.finish(5, finish_reason::cancelled, t0);
    (void)pol.take_finished();
    // 2 decodes leave room for 2 of a 3-token prompt, which would leave its last token alone:
    // it takes nothing; with room for 3 it takes all 3 (never 2 + 1).
    (void)pol.finish(3, finish_reason::cancelled, t0);
    (void)pol.take_finished();
    (void)pol.finish(4, finish_reason::cancelled, t0);
    (void)pol.take_finished();
    REQUIRE(pol.add(req(6, 3), t0));
    plan = pol.schedule(t0);
    CHECK(ids_of(plan) == std::vector<request_id>{1, 2});
    (void)pol.update_from_output(plan, eng.run(plan), t0);
    (void)pol.finish(2, finish_reason::cancelled, t0);
    (void)pol.take_finished();
    plan = pol.schedule(t0);
    CHECK(ids_of(plan) == std::vector<request_id>{1, 6});
    CHECK(plan.chunks[1].part.tokens.size() == 3);
}

TEST_CASE("randomised: every prompt position is in a chunk of 2+ tokens unless the prompt is 1") {
    std::mt19937 rng(1234);
    std::uint64_t preemptions = 0;
    for (int round = 0; round < 20; ++round) {
        auto cfg = small_config();
        cfg.max_batch_tokens = 4 + rng() % 20;
        cfg.decoding_batch_tokens = 2 + rng() % 12;
        cfg.max_batch_seqs = 2 + rng() % 6;
        cfg.kv_block_tokens = 1 + rng() % 4; // small blocks: chunks also shrink to free blocks
        cfg.kv_blocks_total = 40 / cfg.kv_block_tokens + rng() % 40;
        CAPTURE(round);
        policy pol(cfg);
        fake_engine eng{cfg.kv_block_tokens, cfg.kv_blocks_total, {}};
        std::map<request_id, std::size_t> n_prompt; // the original prompt, resumed tokens apart
        std::size_t split_chunks = 0;
        request_id next = 1;
        for (int step = 0; step < 300; ++step) {
            if (next <= 40 && rng() % 2 == 0) {
                const std::size_t n = 1 + rng() % 30;
                auto r = req(next, n, priority::normal, 1 + rng() % 8);
                // Some are streams resumed elsewhere: their last tokens were generated before.
                if (rng() % 3 == 0)
                    r.n_resumed =
                        static_cast<std::uint32_t>(rng() % std::min<std::size_t>(n, r.max_tokens));
                if (pol.add(r, t0))
                    n_prompt[next] = n - r.n_resumed;
                ++next;
            }
            auto plan = pol.schedule(t0);
            for (const auto& c : plan.chunks) {
                const auto np = n_prompt.at(c.part.seq);
                // Generated positions (resumed, or recomputed after a preemption) are computed
                // as they were first decoded; a one-token prompt was decoded too.
                CHECK(c.part.decoded_from == (np == 1 ? 0 : np));
                if (c.part.pos0 < np) {
                    CAPTURE(c.part.seq);
                    CAPTURE(c.part.pos0);
                    CHECK((c.part.tokens.size() >= 2 || np == 1));
                    split_chunks += c.part.tokens.size() < np - c.part.pos0;
                }
            }
            (void)pol.update_from_output(plan, eng.run(plan), t0);
            (void)pol.take_finished();
        }
        for (int step = 0; step < 400 && pol.has_unfinished(); ++step) {
            auto plan = pol.schedule(t0);
            (void)pol.update_from_output(plan, eng.run(plan), t0);
            (void)pol.take_finished();
        }
        CHECK_FALSE(pol.has_unfinished()); // the rule never deadlocks a prompt
        CHECK(split_chunks > 0);           // prompts were really split, not only run whole
        preemptions += pol.stats().preemptions;
    }
    CHECK(preemptions > 0); // recomputes were planned too
}

TEST_CASE("a resumed request continues where its first run stopped") {
    auto cfg = small_config();
    policy pol(cfg);
    fake_engine eng{cfg.kv_block_tokens, cfg.kv_blocks_total, {}};
    // 5 prompt tokens, then 3 the first run generated: an EOG id and a stop id among them (a
    // stream that ended on them would not be resumed; they must not be checked again).
    seq_request r;
    r.id = 1;
    r.prompt = {100, 101, 102, 103, 104, 2, 9, 50};
    r.n_resumed = 3;
    r.max_tokens = 5;
    r.stop_token_ids = {9};
    REQUIRE(pol.add(r, t0));
    CHECK(pol.stats().waiting_prompt_tokens == 8);
    auto plan = pol.schedule(t0);
    REQUIRE(plan.chunks.size() == 1);
    CHECK(plan.chunks[0].part.tokens == r.prompt);
    CHECK(plan.chunks[0].part.decoded_from == 5);
    CHECK(plan.chunks[0].part.want_logits);
    std::vector<std::uint32_t> indices;
    step_outcome out;
    while (pol.has_unfinished()) {
        out = pol.update_from_output(plan, eng.run(plan), t0);
        for (const auto& t : out.tokens)
            indices.push_back(t.index);
        plan = pol.schedule(t0);
        for (const auto& c : plan.chunks)
            CHECK(c.part.decoded_from == 5);
    }
    // max_tokens counts the resumed tokens: 2 more, numbered on from 3.
    CHECK(indices == std::vector<std::uint32_t>{3, 4});
    REQUIRE(out.finished.size() == 1);
    CHECK(out.finished[0].reason == finish_reason::length);
    CHECK(out.finished[0].n_prompt == 5);
    CHECK(out.finished[0].n_generated == 5);
    CHECK(out.finished[0].timings.first_token != clock::time_point{});

    // A one-token prompt was itself computed as a one-token chunk: every position is decoded.
    seq_request one;
    one.id = 2;
    one.prompt = {100, 7, 7};
    one.n_resumed = 2;
    REQUIRE(pol.add(one, t0));
    plan = pol.schedule(t0);
    REQUIRE(plan.chunks.size() == 1);
    CHECK(plan.chunks[0].part.tokens.size() == 3);
    CHECK(plan.chunks[0].part.decoded_from == 0);
}

TEST_CASE("add refuses n_resumed that leaves no prompt or reaches max_tokens") {
    policy pol(small_config());
    seq_request r;
    r.id = 1;
    r.prompt = {100, 101, 102};
    r.max_tokens = 8;
    r.n_resumed = 3; // the whole prompt
    auto all = pol.add(r, t0);
    REQUIRE_FALSE(all);
    CHECK(all.error().value() == bitnet::errc::invalid_argument);
    CHECK(all.error().param == "n_resumed");
    r.n_resumed = 2;
    r.max_tokens = 2; // nothing left to generate
    auto done = pol.add(r, t0);
    REQUIRE_FALSE(done);
    CHECK(done.error().value() == bitnet::errc::invalid_argument);
    CHECK(done.error().message.find("max_tokens") != std::string::npos);
    CHECK_FALSE(pol.has_unfinished());
    r.max_tokens = 3;
    CHECK(pol.add(r, t0));
}
