// Prompt logprobs (echo) through the actors, over the contract-checking fake engine (whose row
// after token t puts (t + 1) % 32 at logit 5 and every other token at 0, so each score is known
// in closed form): the executor scores each token of an all_logits chunk from the row before it
// (the one after the chunk from its last row), and the batcher gathers the scores over chunked
// prefill and sends the echo once, before any generated token and before the end.
#include "actors/actor_test_config.hpp"
#include "actors/batcher/batcher.hpp"
#include "actors/batcher/sched_policy.hpp"
#include "actors/batcher_client.hpp"
#include "actors/batcher_rig.hpp"
#include "actors/executor/executor.hpp"
#include "actors/fake_engine.hpp"

#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

#include <cmath>

using namespace bitnet;
using namespace std::chrono_literals;

namespace {

// The fake model's log-probabilities: log-softmax of one 5 and 31 zeros, in double as
// model::log_normalizer computes it, rounded to float.
const double log_norm = 5.0 + std::log(1.0 + 31.0 * std::exp(-5.0));
const float lp_next = static_cast<float>(5.0 - log_norm); ///< the token after (t + 1)
const float lp_other = static_cast<float>(0.0 - log_norm);

float expected(msg::token_id before, msg::token_id t) {
    return t == (before + 1) % 32 ? lp_next : lp_other;
}

msg::generate_request echo_req(msg::request_id id, std::vector<msg::token_id> prompt,
                               std::uint32_t max_tokens, int n_logprobs) {
    auto r = test::make_req(id, std::move(prompt), max_tokens);
    r.echo = true;
    r.prompt_logprobs = n_logprobs > 0;
    r.params.n_logprobs = n_logprobs;
    r.token_pieces = n_logprobs > 0;
    return r;
}

/// Checks the echo event's scores against the fake model's closed form.
void check_scores(const msg::prompt_echo& e, const std::vector<msg::token_id>& prompt,
                  std::uint32_t n_top) {
    CHECK(e.tokens == prompt);
    REQUIRE(e.logprobs.size() == prompt.size() - 1);
    CHECK(e.n_top == n_top);
    REQUIRE(e.top_tokens.size() == (prompt.size() - 1) * n_top);
    REQUIRE(e.top_pieces.size() == e.top_tokens.size());
    for (std::size_t i = 1; i < prompt.size(); ++i) {
        CAPTURE(i);
        CHECK(e.logprobs[i - 1] == expected(prompt[i - 1], prompt[i]));
        // Most likely first: the fake model's next token, then the lowest ids at 0.
        CHECK(e.top_tokens[(i - 1) * n_top] == (prompt[i - 1] + 1) % 32);
        CHECK(e.top_logprobs[(i - 1) * n_top] == lp_next);
        const auto next = (prompt[i - 1] + 1) % 32;
        if (next != 20 && next != 21) // (those two stand for raw bytes)
            CHECK(e.top_pieces[(i - 1) * n_top] == "<" + std::to_string(next) + ">");
    }
}

} // namespace

TEST_CASE("executor: an all_logits chunk scores each prompt token from the row before it, the "
          "next chunk's first token from its last row") {
    test::actor_test_config cfg;
    caf::actor_system sys{cfg};
    auto probe = std::make_shared<test::fake_engine_probe>();
    auto exec = actors::spawn_executor(
        sys, test::fake_order([probe]() -> result<std::unique_ptr<model::engine>> {
            return std::make_unique<test::fake_engine>(16, 0ms, probe);
        }));
    caf::scoped_actor self{sys};
    msg::step_batch b;
    b.step = 1;
    msg::step_chunk c;
    c.part = {7, {3, 4, 9}, 0, false};
    c.part.all_logits = true;
    c.params.temperature = 0.0f;
    c.params.n_logprobs = 3;
    c.next_token = 10; // the prompt goes on after the chunk
    msg::step_chunk mate;
    mate.part = {8, {1, 2}, 0, true};
    mate.params.temperature = 0.0f;
    b.chunks = {mate, c};
    self->request(exec, 10s, msg::step_atom_v, b)
        .receive(
            [&](const msg::step_result& r) {
                REQUIRE(r.prompt_scores.size() == 3);
                const std::vector<msg::token_id> scored{4, 9, 10};
                for (std::size_t i = 0; i < 3; ++i) {
                    CAPTURE(i);
                    CHECK(r.prompt_scores[i].seq == 7);
                    CHECK(r.prompt_scores[i].pos == i + 1);
                    CHECK(r.prompt_scores[i].token == scored[i]);
                    CHECK(r.prompt_scores[i].top_tokens.size() == 3);
                }
                CHECK(r.prompt_scores[0].logprob == lp_next);  // 4 after 3
                CHECK(r.prompt_scores[1].logprob == lp_other); // 9 after 4
                CHECK(r.prompt_scores[2].logprob == lp_next);  // 10 after 9
                // The batch-mate samples as before; the scored chunk does not sample.
                REQUIRE(r.samples.size() == 1);
                CHECK(r.samples[0].seq == 8);
                CHECK(r.samples[0].token == 3);
            },
            [](const caf::error& e) { FAIL(caf::to_string(e)); });

    // The prompt's last chunk: its last row samples, the rows before it score.
    b.step = 2;
    b.chunks.clear();
    c.part = {7, {10, 11}, 3, true};
    c.part.all_logits = true;
    c.next_token = -1;
    b.chunks.push_back(c);
    self->request(exec, 10s, msg::step_atom_v, b)
        .receive(
            [&](const msg::step_result& r) {
                REQUIRE(r.prompt_scores.size() == 1);
                CHECK(r.prompt_scores[0].pos == 4);
                CHECK(r.prompt_scores[0].token == 11);
                CHECK(r.prompt_scores[0].logprob == lp_next);
                REQUIRE(r.samples.size() == 1);
                CHECK(r.samples[0].token == 12);
            },
            [](const caf::error& e) { FAIL(caf::to_string(e)); });

    // A next token outside the vocabulary fails its sequence alone, with a clear message.
    b.step = 3;
    b.release = {7, 8};
    c.part = {9, {1, 2}, 0, false};
    c.part.all_logits = true;
    c.next_token = 999;
    b.chunks = {c};
    self->request(exec, 10s, msg::step_atom_v, b)
        .receive(
            [&](const msg::step_result& r) {
                REQUIRE(r.failed.size() == 1);
                CHECK(r.failed[0].seq == 9);
                CHECK(r.failed[0].message.find("999") != std::string::npos);
            },
            [](const caf::error& e) { FAIL(caf::to_string(e)); });
    self->send_exit(exec, caf::exit_reason::user_shutdown);
}

TEST_CASE("batcher: echo with logprobs and max_tokens 0 gives the prompt scored, no token, "
          "finish length") {
    test::rig r(0ms, 8, /*with_text=*/true);
    const std::vector<msg::token_id> prompt{3, 4, 5, 9, 10};
    auto t = test::run_together(r.sys, r.batcher, {echo_req(1, prompt, 0, 2)}).front();
    REQUIRE(t.done);
    CHECK(t.done->finish == msg::finish_reason::length);
    CHECK(t.done->completion_tokens == 0);
    CHECK(t.done->prompt_tokens == prompt.size());
    REQUIRE(t.tokens.size() == 1);
    const auto& ev = t.tokens[0];
    CHECK(ev.token == -1);
    CHECK(ev.text.empty());
    CHECK(ev.prompt_tokens == prompt.size());
    check_scores(ev.echo, prompt, 2);
    CHECK(ev.echo.pieces == std::vector<std::string>{"<3>", "<4>", "<5>", "<9>", "<10>"});
    CHECK(ev.echo.text == "<3><4><5><9><10>");
    CHECK(ev.echo.text_offsets == std::vector<std::uint32_t>{0, 3, 6, 9, 12});
    CHECK(r.stats().kv_blocks_used == 0);
}

TEST_CASE("batcher: a prompt prefilled in many chunks is scored whole, in order, and the echo "
          "precedes the generated tokens, a batch-mate is unaffected") {
    test::rig r(0ms, 8, /*with_text=*/true, /*max_batch_tokens=*/5);
    std::vector<msg::token_id> prompt;
    for (int i = 0; i < 23; ++i)
        prompt.push_back(static_cast<msg::token_id>((i * 7) % 30)); // scrambled: few "next" hits
    auto plain = test::make_req(2, {1, 2, 3}, 4);
    auto ts = test::run_together(r.sys, r.batcher, {echo_req(1, prompt, 3, 1), plain});
    const auto& t = ts[0];
    REQUIRE(t.done);
    CHECK(t.done->finish == msg::finish_reason::length);
    CHECK(t.done->completion_tokens == 3);
    REQUIRE(t.tokens.size() == 4);
    check_scores(t.tokens[0].echo, prompt, 1);
    for (std::size_t i = 1; i < 4; ++i) {
        CHECK(t.tokens[i].echo.tokens.empty());
        CHECK(t.tokens[i].index == i - 1);
        CHECK(t.tokens[i].token == (prompt.back() + static_cast<msg::token_id>(i)) % 32);
    }
    const auto& p = ts[1];
    REQUIRE(p.done);
    REQUIRE(p.tokens.size() == 4);
    CHECK(p.tokens[0].token == 4);
    CHECK(p.tokens[0].echo.tokens.empty());
}

TEST_CASE("batcher: echo without logprobs gives the prompt's tokens and text only, a one-token "
          "prompt's echo has nothing to score") {
    test::rig r(0ms, 8, /*with_text=*/true);
    auto ts = test::run_together(r.sys, r.batcher,
                                 {echo_req(1, {6, 7, 8}, 2, 0), echo_req(2, {6}, 0, 2)});
    const auto& a = ts[0];
    REQUIRE(a.done);
    REQUIRE(a.tokens.size() == 3);
    CHECK(a.tokens[0].echo.tokens == std::vector<msg::token_id>{6, 7, 8});
    CHECK(a.tokens[0].echo.text == "<6><7><8>");
    CHECK(a.tokens[0].echo.logprobs.empty());
    CHECK(a.tokens[1].token == 9);
    const auto& b = ts[1];
    REQUIRE(b.done);
    CHECK(b.done->finish == msg::finish_reason::length);
    REQUIRE(b.tokens.size() == 1);
    CHECK(b.tokens[0].echo.tokens == std::vector<msg::token_id>{6});
    CHECK(b.tokens[0].echo.logprobs.empty());
}

TEST_CASE("policy: max_tokens 0 is accepted (prompt only) and ends with length without a token") {
    sched::policy_config pc;
    pc.kv_block_tokens = 4;
    pc.kv_blocks_total = 16;
    pc.n_ctx = 64;
    sched::policy p(pc);
    sched::seq_request req;
    req.id = 1;
    req.prompt = {1, 2, 3, 4, 5, 6, 7};
    req.max_tokens = 0;
    req.max_chunk_tokens = 3;
    const auto now = sched::clock::now();
    REQUIRE(p.add(req, now));
    std::vector<std::size_t> sizes;
    for (int i = 0; i < 10 && p.has_unfinished(); ++i) {
        auto plan = p.schedule(now);
        REQUIRE(plan.chunks.size() == 1);
        sizes.push_back(plan.chunks[0].part.tokens.size());
        std::vector<sched::sample> samples;
        if (plan.chunks[0].part.want_logits)
            samples.push_back({1, 9, -0.5f});
        auto out = p.update_from_output(plan, samples, now);
        CHECK(out.tokens.empty());
        if (!out.finished.empty()) {
            CHECK(out.finished[0].reason == sched::finish_reason::length);
            CHECK(out.finished[0].n_generated == 0);
        }
    }
    CHECK_FALSE(p.has_unfinished());
    // max_chunk_tokens bounds each chunk (and no prompt token is left alone in one).
    for (auto n : sizes)
        CHECK(n <= 3);
    CHECK(sizes.size() >= 3);
}

TEST_CASE("batcher: the echo is the same with and without KV pressure (preempted sequences are "
          "scored once, from recomputed rows)") {
    // 16 blocks of 4 tokens: three requests of 18 + 20 tokens (10 blocks each) cannot all grow,
    // so the newest are preempted and re-prefilled, the echo request among them or beside them.
    test::rig r(2ms, 8, /*with_text=*/true, /*max_batch_tokens=*/8);
    std::vector<msg::token_id> prompt;
    for (int i = 0; i < 18; ++i)
        prompt.push_back(static_cast<msg::token_id>((i * 5 + 2) % 30));
    prompt.back() = 0; // 20 tokens follow before the fake model's EOG (31)
    const auto alone = test::run_together(r.sys, r.batcher, {echo_req(1, prompt, 20, 2)}).front();
    REQUIRE(alone.done);
    REQUIRE(!alone.tokens.empty());
    check_scores(alone.tokens[0].echo, prompt, 2);
    auto ts = test::run_together(
        r.sys, r.batcher,
        {test::make_req(2, {1, 2}, 20), test::make_req(3, {4, 5}, 20), echo_req(4, prompt, 20, 2)});
    // All three overlap (request 2 decodes 20 steps of >= 2 ms while the others are queued at
    // once), and together they need 22 blocks of 16: something is preempted.
    CHECK(r.stats().preemptions > 0);
    const auto& t = ts[2];
    REQUIRE(t.done);
    REQUIRE(t.tokens.size() == alone.tokens.size());
    CHECK(t.tokens[0].echo.logprobs == alone.tokens[0].echo.logprobs);
    CHECK(t.tokens[0].echo.top_tokens == alone.tokens[0].echo.top_tokens);
    std::size_t echoes = 0;
    for (std::size_t i = 0; i < t.tokens.size(); ++i) {
        echoes += t.tokens[i].echo.tokens.empty() ? 0 : 1;
        CHECK(t.tokens[i].token == alone.tokens[i].token);
    }
    CHECK(echoes == 1);
}
