// The batching policy with deferred samples (structured output whose mask was not ready within a
// step's mask budget): the sequence gets a resume chunk (no tokens, no budget, no slot) until its
// sample comes, and then continues as if never deferred; the other sequences go on meanwhile.
#include "actors/batcher/sched_policy.hpp"

#include <doctest/doctest.h>

#include <map>

namespace {

using namespace bitnet::sched;
using namespace std::chrono_literals;

const clock::time_point t0 = clock::time_point{} + 1h;

seq_request req(request_id id, std::size_t n_prompt, std::uint32_t max_tokens = 16) {
    seq_request r;
    r.id = id;
    for (std::size_t i = 0; i < n_prompt; ++i)
        r.prompt.push_back(static_cast<token_id>(100 + i));
    r.max_tokens = max_tokens;
    return r;
}

policy_config config() {
    policy_config cfg;
    cfg.max_batch_tokens = 64;
    cfg.max_batch_seqs = 2;
    cfg.kv_block_tokens = 4;
    cfg.kv_blocks_total = 64;
    cfg.n_ctx = 128;
    cfg.eog_ids = {2};
    return cfg;
}

/// Runs `plan` as an executor would: every chunk continues its sequence's KV (a resume chunk
/// computes nothing), and each chunk that wants logits gets token 7 unless its sequence is in
/// `defer`.
struct fake_executor {
    std::map<request_id, std::uint32_t> cached;
    std::vector<sample> run(const step_plan& plan, const std::vector<request_id>& defer = {}) {
        for (auto id : plan.release)
            cached.erase(id);
        std::vector<sample> out;
        for (const auto& c : plan.chunks) {
            auto& n = cached[c.part.seq];
            REQUIRE(c.part.pos0 == n);
            CHECK(c.part.tokens.empty() == c.resume);
            n += static_cast<std::uint32_t>(c.part.tokens.size());
            if (c.part.want_logits &&
                std::find(defer.begin(), defer.end(), c.part.seq) == defer.end())
                out.push_back({c.part.seq, 7, -0.5f});
        }
        return out;
    }
};

std::size_t resumes_of(const step_plan& plan, request_id id) {
    return static_cast<std::size_t>(
        std::count_if(plan.chunks.begin(), plan.chunks.end(),
                      [&](const chunk& c) { return c.part.seq == id && c.resume; }));
}

} // namespace

TEST_CASE("deferred sample: a resume chunk until it comes, taking no budget, the others go on") {
    policy pol(config());
    fake_executor ex;
    REQUIRE(pol.add(req(1, 5), t0));
    REQUIRE(pol.add(req(2, 6), t0));
    auto plan = pol.schedule(t0);
    REQUIRE(plan.chunks.size() == 2);
    // Sequence 2's first sample is deferred: sequence 1 has its token, 2 none.
    std::vector<request_id> deferred{2};
    auto out = pol.update_from_output(plan, ex.run(plan, deferred), t0);
    pol.sample_deferred(deferred);
    REQUIRE(out.tokens.size() == 1);
    CHECK(out.tokens[0].id == 1);
    // Twice more deferred: each step has 1's decode and 2's resume, which costs no token and
    // no slot (max_batch_seqs is 2, and a third request is admitted beside them).
    REQUIRE(pol.add(req(3, 4), t0));
    for (int round = 0; round < 2; ++round) {
        plan = pol.schedule(t0);
        CHECK(resumes_of(plan, 2) == 1);
        CHECK(plan.n_tokens == 1 + (round == 0 ? 4 : 1)); // 1's decode (+ 3's prompt)
        out = pol.update_from_output(plan, ex.run(plan, deferred), t0);
        pol.sample_deferred(deferred);
        for (const auto& t : out.tokens)
            CHECK(t.id != 2);
    }
    // Its mask is ready: the resume chunk's sample is 2's first token, then it decodes.
    plan = pol.schedule(t0);
    REQUIRE(resumes_of(plan, 2) == 1);
    out = pol.update_from_output(plan, ex.run(plan), t0);
    pol.sample_deferred({});
    const auto first = std::find_if(out.tokens.begin(), out.tokens.end(),
                                    [](const token_event& t) { return t.id == 2; });
    REQUIRE(first != out.tokens.end());
    CHECK(first->index == 0);
    plan = pol.schedule(t0);
    CHECK(resumes_of(plan, 2) == 0);
    for (const auto& c : plan.chunks)
        if (c.part.seq == 2) {
            CHECK(c.part.tokens == std::vector<token_id>{7});
            CHECK(c.part.pos0 == 6);
        }
    (void)pol.update_from_output(plan, ex.run(plan), t0);
}

TEST_CASE("deferred sample: a stale deferral is ignored, a finished request leaves no resume") {
    policy pol(config());
    fake_executor ex;
    REQUIRE(pol.add(req(1, 5), t0));
    auto plan = pol.schedule(t0);
    (void)pol.update_from_output(plan, ex.run(plan, {1}), t0);
    pol.sample_deferred(std::vector<request_id>{1, 99}); // 99: no such sequence
    plan = pol.schedule(t0);
    CHECK(resumes_of(plan, 1) == 1);
    (void)pol.update_from_output(plan, ex.run(plan, {1}), t0);
    pol.sample_deferred(std::vector<request_id>{1});
    CHECK(pol.finish(1, finish_reason::cancelled, t0));
    plan = pol.schedule(t0);
    CHECK(resumes_of(plan, 1) == 0);
    CHECK(plan.release == std::vector<request_id>{1});
    // A sequence that decodes (its next token not computed yet) is not waiting for a sample.
    REQUIRE(pol.add(req(2, 5), t0));
    plan = pol.schedule(t0);
    (void)pol.update_from_output(plan, ex.run(plan), t0);
    pol.sample_deferred(std::vector<request_id>{2});
    plan = pol.schedule(t0);
    CHECK(resumes_of(plan, 2) == 0);
}
