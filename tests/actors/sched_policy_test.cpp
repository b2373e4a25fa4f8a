// The continuous-batching policy without an actor system. The executor stand-in (`fake_engine`)
// mirrors what model::engine checks on every step (positions continue each sequence's KV, the
// block budget is never exceeded, released sequences start over at 0), so a plan the policy
// emits that a real engine would refuse fails these tests.
#include "actors/batcher/sched_policy.hpp"

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <set>

namespace {

using namespace bitnet::sched;
using namespace std::chrono_literals;

const clock::time_point t0 = clock::time_point{} + 1h;

std::vector<token_id> prompt_of(std::size_t n, token_id first = 100) {
    std::vector<token_id> p(n);
    for (std::size_t i = 0; i < n; ++i)
        p[i] = first + static_cast<token_id>(i);
    return p;
}

seq_request req(request_id id, std::size_t n_prompt, priority prio = priority::normal,
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

policy_config small_config() {
    policy_config cfg;
    cfg.max_batch_tokens = 64;
    cfg.max_batch_seqs = 8;
    cfg.kv_block_tokens = 4;
    cfg.kv_blocks_total = 64;
    cfg.n_ctx = 128;
    cfg.eog_ids = {2};
    return cfg;
}

std::vector<request_id> ids_of(const step_plan& plan) {
    std::vector<request_id> ids;
    for (const auto& c : plan.chunks)
        ids.push_back(c.part.seq);
    return ids;
}

} // namespace

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
