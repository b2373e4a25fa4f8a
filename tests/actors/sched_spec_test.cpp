// Speculative decoding in the batching policy, without an actor system: a stand-in engine runs
// a deterministic "model" (the next token is a function of the last) and verifies draft chunks
// the way the executor does (sample row after row while each sample equals the next draft, drop
// the rest of the KV). It mirrors the engine's checks (positions continue each sequence's KV,
// the block budget holds), so a plan the policy emits that a real engine would refuse fails
// here. Output must be the same with and without drafts; only the number of steps changes.
#include "actors/batcher/sched_policy.hpp"
#include "actors/batcher/spec_draft.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace {

using namespace bitnet::sched;
using namespace std::chrono_literals;

const clock::time_point t0 = clock::time_point{} + 1h;

using next_fn = std::function<token_id(token_id)>;

/// A period-5 loop over 100..104: drafts from the sequence's own tokens are right.
token_id loop5(token_id t) {
    return 100 + (t - 100 + 1 + 5) % 5;
}
/// Climbs: never repeats.
token_id climb(token_id t) {
    return t + 1;
}

/// "20 30" then a token never seen before, again and again: "20 30" recurs with another
/// follower each time, so drafts are proposed every third token and are always wrong.
next_fn fresh_after_20_30() {
    return [n = 1000](token_id t) mutable -> token_id {
        if (t == 30)
            return n++;
        return t == 20 ? 30 : 20;
    };
}

struct verifying_engine {
    std::uint32_t block_tokens;
    std::uint32_t blocks_total;
    next_fn next;
    std::map<request_id, std::uint32_t> cached;
    std::uint64_t drafted = 0;
    std::uint32_t used_after_append = 0; ///< blocks held once every chunk is appended

    std::uint32_t blocks_used() const {
        std::uint32_t n = 0;
        for (const auto& [id, c] : cached)
            n += (c + block_tokens - 1) / block_tokens;
        return n;
    }

    std::vector<sample> run(const step_plan& plan) {
        for (auto id : plan.release)
            cached.erase(id);
        for (const auto& c : plan.chunks) {
            auto& n = cached[c.part.seq];
            REQUIRE_MESSAGE(c.part.pos0 == n, "chunk of " << c.part.seq << " skips positions");
            n += static_cast<std::uint32_t>(c.part.tokens.size());
        }
        used_after_append = blocks_used();
        REQUIRE(used_after_append <= blocks_total);
        std::vector<sample> out;
        for (const auto& c : plan.chunks) {
            auto& n = cached[c.part.seq];
            if (c.n_draft == 0) {
                if (c.part.want_logits)
                    out.push_back({c.part.seq, next(c.part.tokens.back()), -0.5f});
                continue;
            }
            // Draft positions are computed as decodes, every row returned.
            CHECK(c.part.all_logits);
            CHECK(c.part.decodes(c.part.pos0 + 1));
            REQUIRE(c.part.tokens.size() == c.n_draft + 1u);
            drafted += c.n_draft;
            std::uint32_t accepted = 0;
            for (std::uint32_t j = 0; j <= c.n_draft; ++j) {
                const token_id t = next(c.part.tokens[j]);
                out.push_back({c.part.seq, t, -0.5f});
                if (j == c.n_draft || t != c.part.tokens[j + 1])
                    break;
                ++accepted;
            }
            n -= c.n_draft - accepted; // the executor's truncate
        }
        return out;
    }
};

policy_config spec_config(std::uint32_t max_draft) {
    policy_config cfg;
    cfg.max_batch_tokens = 64;
    cfg.decoding_batch_tokens = 32;
    cfg.max_batch_seqs = 8;
    cfg.kv_block_tokens = 4;
    cfg.kv_blocks_total = 64;
    cfg.n_ctx = 256;
    cfg.eog_ids = {2};
    cfg.spec_max_draft = max_draft;
    cfg.spec_step_tokens = 16;
    return cfg;
}

seq_request spec_req(request_id id, std::vector<token_id> prompt, std::uint32_t max_tokens) {
    seq_request r;
    r.id = id;
    r.prompt = std::move(prompt);
    r.max_tokens = max_tokens;
    r.speculate = true;
    return r;
}

struct run_result {
    std::map<request_id, std::vector<token_id>> tokens;
    std::map<request_id, finish_reason> reasons;
    int steps = 0;
    policy_stats stats;
};

/// Runs every request to its end; checks after each step that the policy's KV count matches the
/// engine's and that token indices arrive in order without gaps.
/// `draft_model`, when given, stands in for the executor's draft model: after each step, every
/// chunk that asked (draft_next) is offered that many tokens, each `draft_model` of the one
/// before, from the sequence's last sample.
run_result run_all(const policy_config& cfg, const std::vector<seq_request>& reqs, next_fn next,
                   const std::function<void(const step_plan&)>& on_plan = {},
                   const next_fn& draft_model = {}) {
    policy pol(cfg);
    verifying_engine eng{cfg.kv_block_tokens, cfg.kv_blocks_total, std::move(next), {}};
    for (const auto& r : reqs)
        REQUIRE(pol.add(r, t0));
    run_result res;
    while (pol.has_unfinished() && res.steps < 2000) {
        auto plan = pol.schedule(t0);
        REQUIRE(plan.n_tokens <= cfg.max_batch_tokens);
        // Drafts only in a step that stays within spec_step_tokens.
        std::uint32_t drafts = 0;
        for (const auto& c : plan.chunks)
            drafts += c.n_draft;
        if (drafts > 0)
            CHECK(plan.n_tokens <= cfg.spec_step_tokens);
        if (on_plan)
            on_plan(plan);
        const auto planned_used = pol.stats().kv_blocks_used;
        const auto samples = eng.run(plan);
        CHECK(eng.used_after_append == planned_used);
        auto out = pol.update_from_output(plan, samples, t0);
        for (const auto& c : plan.chunks) {
            CHECK((c.draft_next == 0 || cfg.spec_draft_model));
            if (c.draft_next == 0 || !draft_model)
                continue;
            auto last = std::find_if(samples.rbegin(), samples.rend(),
                                     [&](const sample& x) { return x.id == c.part.seq; });
            REQUIRE(last != samples.rend());
            std::vector<token_id> d{draft_model(last->token)};
            while (d.size() < c.draft_next)
                d.push_back(draft_model(d.back()));
            pol.offer_drafts(c.part.seq, d);
        }
        ++res.steps;
        for (const auto& ev : out.tokens) {
            auto& got = res.tokens[ev.id];
            REQUIRE(ev.index == got.size());
            got.push_back(ev.token);
        }
        // Sequences ended now are released with the next plan: compare the others.
        std::set<request_id> ended;
        for (const auto& f : out.finished)
            res.reasons[f.id] = f.reason, ended.insert(f.id);
        for (const auto& f : pol.take_finished())
            res.reasons[f.id] = f.reason, ended.insert(f.id);
        std::uint32_t engine_used = 0;
        for (const auto& [id, n] : eng.cached)
            if (!ended.count(id))
                engine_used += (n + cfg.kv_block_tokens - 1) / cfg.kv_block_tokens;
        CHECK(pol.stats().kv_blocks_used == engine_used);
    }
    REQUIRE_FALSE(pol.has_unfinished());
    res.stats = pol.stats();
    CHECK(res.stats.spec_drafted == eng.drafted);
    return res;
}

} // namespace

TEST_CASE("ngram drafter: the continuation of the latest earlier occurrence of the longest "
          "suffix") {
    ngram_drafter d;
    std::vector<token_id> out;
    // "5 6 7" occurs at 0 and at 5; the latest earlier one (5) is followed by 9 then 5 6 7.
    const std::vector<token_id> seq{5, 6, 7, 8, 1, 5, 6, 7, 9, 5, 6, 7};
    d.propose(seq, 3, out);
    CHECK(out == std::vector<token_id>{9, 5, 6});
    // A longer suffix wins over a later shorter one: "1 2 3" continues with 4, although "2 3"
    // alone occurs later followed by 0.
    out.clear();
    d.propose(std::vector<token_id>{1, 2, 3, 4, 2, 3, 0, 1, 2, 3}, 2, out);
    CHECK(out == std::vector<token_id>{4, 2});
    // A repeat continues itself past the known tokens.
    out.clear();
    d.propose(std::vector<token_id>{4, 7, 8, 7, 8}, 5, out);
    CHECK(out == std::vector<token_id>{7, 8, 7, 8, 7});
    // Nothing repeats (a lone token's repeat is not enough): no drafts.
    out.clear();
    d.propose(std::vector<token_id>{1, 2, 3, 1, 4}, 4, out);
    CHECK(out.empty());
    d.propose(std::vector<token_id>{9}, 4, out);
    CHECK(out.empty());
    // The lookback bounds the search.
    ngram_drafter near{2, 4, 4};
    near.propose(std::vector<token_id>{1, 2, 3, 0, 0, 0, 0, 1, 2}, 4, out);
    CHECK(out.empty());
}

TEST_CASE("speculation: drafts that the model confirms give the same tokens in fewer steps") {
    const std::vector<token_id> prompt{100, 101, 102, 103, 104, 100, 101};
    const auto plain = run_all(spec_config(0), {spec_req(1, prompt, 60)}, loop5);
    const auto spec = run_all(spec_config(8), {spec_req(1, prompt, 60)}, loop5);
    REQUIRE(plain.tokens.at(1).size() == 60);
    CHECK(spec.tokens.at(1) == plain.tokens.at(1));
    CHECK(spec.reasons.at(1) == finish_reason::length);
    CHECK(plain.stats.spec_drafted == 0);
    CHECK(spec.stats.spec_accepted > 40);
    CHECK(spec.stats.spec_accepted <= spec.stats.spec_drafted);
    MESSAGE("60 tokens: " << plain.steps << " steps plain, " << spec.steps << " with drafts ("
                          << spec.stats.spec_accepted << " of " << spec.stats.spec_drafted
                          << " drafts accepted)");
    CHECK(spec.steps * 3 < plain.steps);
}

TEST_CASE("speculation: drafts the model rejects change nothing, give their KV back and back "
          "off") {
    const std::vector<token_id> prompt{20, 30, 20, 30, 20, 30};
    auto cfg = spec_config(8);
    cfg.kv_blocks_total = 12; // tight: every unconfirmed draft's block must come back
    const auto plain = run_all(spec_config(0), {spec_req(1, prompt, 30)}, fresh_after_20_30());
    const auto spec = run_all(cfg, {spec_req(1, prompt, 30)}, fresh_after_20_30());
    CHECK(spec.tokens.at(1) == plain.tokens.at(1));
    CHECK(spec.stats.spec_accepted == 0);
    CHECK(spec.steps == plain.steps);
    // Drafts come every third token; their length halves after each miss (8, 4, 2, 1), then a
    // single draft after each rest: far fewer than 8 per chance.
    MESSAGE("drafted " << spec.stats.spec_drafted << " tokens in " << spec.steps << " steps");
    CHECK(spec.stats.spec_drafted > 8);
    CHECK(spec.stats.spec_drafted <= 8 + 4 + 2 + 1 + 30 / 3);
}

TEST_CASE("speculation: a stop or end token among accepted drafts ends the sequence there, and "
          "max_tokens is never passed") {
    // loop5 with 2 (an end-of-generation id) after 101; the prompt's own "104 100 101 2" makes
    // the end token one of the drafts.
    auto with_eog = [](token_id t) -> token_id {
        if (t == 101)
            return 2;
        return loop5(t);
    };
    const std::vector<token_id> prompt{104, 100, 101, 2, 103, 104, 100};
    const auto plain = run_all(spec_config(0), {spec_req(1, prompt, 50)}, with_eog);
    const auto spec = run_all(spec_config(8), {spec_req(1, prompt, 50)}, with_eog);
    CHECK(spec.tokens.at(1) == plain.tokens.at(1));
    CHECK(spec.reasons.at(1) == finish_reason::eos);
    CHECK(plain.reasons.at(1) == finish_reason::eos);

    auto stop_req = spec_req(2, {100, 101, 102, 103, 104, 100, 101}, 50);
    stop_req.stop_token_ids = {104};
    auto plain_stop = stop_req;
    plain_stop.speculate = false;
    const auto a = run_all(spec_config(8), {plain_stop}, loop5);
    const auto b = run_all(spec_config(8), {stop_req}, loop5);
    CHECK(b.tokens.at(2) == a.tokens.at(2));
    CHECK(b.reasons.at(2) == finish_reason::stop);

    for (std::uint32_t max_tokens : {1u, 2u, 3u, 9u, 17u}) {
        CAPTURE(max_tokens);
        const auto r = run_all(spec_config(8),
                               {spec_req(3, {100, 101, 102, 103, 104, 100}, max_tokens)}, loop5);
        CHECK(r.tokens.at(3).size() == max_tokens);
        CHECK(r.reasons.at(3) == finish_reason::length);
    }
}

TEST_CASE("speculation: drafts take only what a step leaves, never a prompt's or another "
          "stream's place") {
    auto cfg = spec_config(8);
    cfg.spec_step_tokens = 16;
    std::vector<seq_request> reqs;
    // Twenty streams: once their decodes alone fill the step past spec_step_tokens, none drafts
    // (run_all checks every step with drafts stays within spec_step_tokens).
    cfg.max_batch_seqs = 32;
    cfg.kv_blocks_total = 512;
    for (request_id i = 1; i <= 20; ++i)
        reqs.push_back(spec_req(i, {100, 101, 102, 103, 104, 100, 101}, 12));
    int full_steps = 0;
    const auto many = run_all(cfg, reqs, loop5, [&](const step_plan& plan) {
        std::uint32_t decodes = 0, drafts = 0;
        for (const auto& c : plan.chunks) {
            decodes += c.part.pos0 >= 7 ? 1 : 0;
            drafts += c.n_draft;
        }
        if (decodes >= cfg.spec_step_tokens) {
            ++full_steps;
            CHECK(drafts == 0);
        }
    });
    CHECK(full_steps > 3);
    CHECK(many.tokens.size() == 20);

    // One stream decoding and one long prompt arriving: the prompt's chunks come first.
    policy pol(cfg);
    verifying_engine eng{cfg.kv_block_tokens, cfg.kv_blocks_total, loop5, {}};
    REQUIRE(pol.add(spec_req(1, {100, 101, 102, 103, 104, 100, 101}, 40), t0));
    for (int i = 0; i < 3; ++i) {
        auto plan = pol.schedule(t0);
        (void)pol.update_from_output(plan, eng.run(plan), t0);
    }
    std::vector<token_id> long_prompt(100, 50);
    REQUIRE(pol.add(spec_req(2, long_prompt, 4), t0));
    auto plan = pol.schedule(t0);
    REQUIRE(plan.chunks.size() == 2);
    CHECK(plan.chunks[0].part.seq == 1);
    CHECK(plan.chunks[0].n_draft == 0); // the prompt took what the step had
    CHECK(plan.chunks[1].part.tokens.size() == cfg.decoding_batch_tokens - 1);
    CHECK(plan.n_tokens <= cfg.decoding_batch_tokens);
    (void)pol.update_from_output(plan, eng.run(plan), t0);

    // A request that did not ask never drafts.
    auto quiet = spec_req(9, {100, 101, 102, 103, 104, 100, 101}, 30);
    quiet.speculate = false;
    CHECK(run_all(spec_config(8), {quiet}, loop5).stats.spec_drafted == 0);
}

TEST_CASE("speculation: mixed batches under KV pressure (preemption) give every sequence the "
          "tokens it has alone") {
    auto cfg = spec_config(6);
    cfg.kv_blocks_total = 24;
    cfg.spec_step_tokens = 24;
    std::vector<seq_request> reqs;
    for (request_id i = 1; i <= 5; ++i) {
        std::vector<token_id> p{100, 101, 102, 103, 104};
        p.push_back(static_cast<token_id>(100 + i % 5));
        reqs.push_back(spec_req(i, p, 30));
    }
    reqs.push_back(spec_req(6, {20, 30, 20, 30, 20, 30}, 30)); // drafts, all rejected
    auto mixed = [](token_id t) { return t >= 100 ? loop5(t) : climb(t); };
    const auto together = run_all(cfg, reqs, mixed);
    CHECK(together.stats.spec_accepted > 0);
    for (const auto& r : reqs) {
        CAPTURE(r.id);
        auto alone_req = r;
        alone_req.speculate = false;
        const auto alone = run_all(spec_config(0), {alone_req}, mixed);
        CHECK(together.tokens.at(r.id) == alone.tokens.at(r.id));
    }
    MESSAGE("preemptions in the mixed run: " << together.stats.preemptions);
}

TEST_CASE("spec policy: a draft model's offers are drafted next step, the output is unchanged, "
          "and wrong offers back off") {
    auto cfg = spec_config(8);
    cfg.spec_draft_model = true;
    // climb never repeats, so n-grams propose nothing: every draft is the draft model's.
    const std::vector<seq_request> reqs{spec_req(1, {5, 6, 7}, 60), spec_req(2, {40, 41}, 50)};
    auto plain_cfg = spec_config(0);
    const auto plain = run_all(plain_cfg, reqs, climb);
    // A draft model that is right four times in five.
    int calls = 0;
    const next_fn mostly = [&](token_id t) { return ++calls % 5 == 0 ? t + 7 : t + 1; };
    const auto good = run_all(cfg, reqs, climb, {}, mostly);
    CHECK(good.tokens == plain.tokens);
    CHECK(good.reasons == plain.reasons);
    MESSAGE("draft model right 4 in 5: " << good.steps << " steps (" << plain.steps << " without), "
                                         << good.stats.spec_model_accepted << " of "
                                         << good.stats.spec_model_drafted << " accepted");
    CHECK(good.stats.spec_model_drafted == good.stats.spec_drafted);
    CHECK(good.stats.spec_model_accepted > 40);
    CHECK(good.steps * 3 < plain.steps * 2);
    // Always wrong: the same output, and the sequence drafts less and rests.
    const next_fn wrong = [](token_id t) { return t + 3; };
    const auto bad = run_all(cfg, reqs, climb, {}, wrong);
    CHECK(bad.tokens == plain.tokens);
    CHECK(bad.stats.spec_model_accepted == 0);
    MESSAGE("draft model always wrong: " << bad.stats.spec_model_drafted << " drafted in "
                                         << bad.steps << " steps");
    CHECK(bad.stats.spec_model_drafted < 60);
    // Without a draft model configured, no chunk asks for proposals (checked in run_all).
    CHECK(run_all(spec_config(8), reqs, climb).stats.spec_model_drafted == 0);
}

TEST_CASE("spec policy: an offer for tokens that have moved on is not drafted") {
    auto cfg = spec_config(8);
    cfg.spec_draft_model = true;
    policy pol(cfg);
    REQUIRE(pol.add(spec_req(1, {5, 6, 7}, 20), t0));
    auto plan = pol.schedule(t0); // the prompt
    REQUIRE(plan.chunks.size() == 1);
    (void)pol.update_from_output(plan, std::vector<sample>{{1, 8, -0.1f}}, t0);
    plan = pol.schedule(t0); // decoding 8: asks for proposals
    REQUIRE(plan.chunks.size() == 1);
    CHECK(plan.chunks[0].draft_next > 0);
    CHECK(plan.chunks[0].n_draft == 0);
    (void)pol.update_from_output(plan, std::vector<sample>{{1, 9, -0.1f}}, t0);
    // Offered for the tokens as they are now (..., 8, 9): drafted next.
    pol.offer_drafts(1, std::vector<token_id>{10, 11});
    plan = pol.schedule(t0);
    REQUIRE(plan.chunks.size() == 1);
    CHECK(plan.chunks[0].n_draft == 2);
    CHECK(plan.chunks[0].source == draft_source::model);
    CHECK(plan.chunks[0].part.tokens == std::vector<token_id>{9, 10, 11});
    // The draft before the last is refused: 9, 10 then 12. The stale offer of the step before is
    // not drafted again, and an offer for an unknown sequence is ignored.
    (void)pol.update_from_output(plan, std::vector<sample>{{1, 10, -0.1f}, {1, 12, -0.1f}}, t0);
    pol.offer_drafts(99, std::vector<token_id>{1, 2});
    plan = pol.schedule(t0);
    REQUIRE(plan.chunks.size() == 1);
    CHECK(plan.chunks[0].part.tokens.front() == 12);
    CHECK(plan.chunks[0].source != draft_source::model);
}
