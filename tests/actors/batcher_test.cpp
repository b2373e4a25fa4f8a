// The batcher actor over a real executor actor and a contract-checking fake engine: completions
// with usage, EOG and stop strings, deadline while queued, and cancellation when the sink dies
// (KV freed in the engine within a step).
#include "actors/batcher/batcher.hpp"

#include "actors/actor_test_config.hpp"
#include "actors/batcher_client.hpp"
#include "actors/batcher_rig.hpp"
#include "actors/executor/executor.hpp"
#include "actors/fake_engine.hpp"
#include "messages/errors.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <doctest/doctest.h>

#include <thread>

using namespace bitnet;
using namespace std::chrono_literals;

namespace {

using test::make_req;
using test::rig;
using test::transcript;

/// Submits through a scoped actor acting as the sink and collects until done/fail.
transcript run_one(rig& r, msg::generate_request req) {
    return test::run_together(r.sys, r.batcher, {std::move(req)}).front();
}

} // namespace

TEST_CASE("a request runs to max_tokens with usage and timings") {
    rig r;
    auto t = run_one(r, make_req(1, {1, 2, 3}, 5));
    REQUIRE(t.done);
    CHECK(t.done->finish == msg::finish_reason::length);
    CHECK(t.done->prompt_tokens == 3);
    CHECK(t.done->completion_tokens == 5);
    CHECK(t.done->model == "fake");
    CHECK(t.done->total_us >= t.done->ttft_us);
    REQUIRE(t.tokens.size() == 5);
    for (std::uint32_t i = 0; i < 5; ++i) {
        CHECK(t.tokens[i].index == i);
        CHECK(t.tokens[i].token == static_cast<msg::token_id>(4 + i));
    }
    auto s = r.stats();
    CHECK(s.running == 0);
    CHECK(s.kv_blocks_used == 0);
    CHECK(s.finished == 1);
}

TEST_CASE("an EOG token ends with eos") {
    rig r;
    auto t = run_one(r, make_req(1, {27}, 20)); // 28, 29, 30, then 31 = EOG
    REQUIRE(t.done);
    CHECK(t.done->finish == msg::finish_reason::eos);
    CHECK(t.tokens.size() == 3);
    // The EOG token ends the reply without being returned: usage counts what was delivered.
    CHECK(t.done->completion_tokens == 3);
}

TEST_CASE("a stop string ends with stop, text before it is delivered, the stop string is not") {
    rig r(0ms, 8, true);
    auto req = make_req(1, {1}, 20);
    req.stop = {"<5><6"};
    auto t = run_one(r, req);
    REQUIRE(t.done);
    CHECK(t.done->finish == msg::finish_reason::stop);
    CHECK(t.text() == "<2><3><4>");
}

TEST_CASE("text held for a possible stop string is released when generation ends otherwise") {
    rig r(0ms, 8, true);
    auto req = make_req(1, {1}, 4); // 2, 3, 4, 5
    req.stop = {"<5>X"};
    auto t = run_one(r, req);
    REQUIRE(t.done);
    CHECK(t.done->finish == msg::finish_reason::length);
    CHECK(t.text() == "<2><3><4><5>");
    // "<5>" could have begun the stop string: it came after the last token, as text only.
    REQUIRE(t.tokens.size() == 5);
    CHECK(t.tokens[3].text.empty());
    CHECK(t.tokens[4].text == "<5>");
}

TEST_CASE("a character split over two tokens is emitted whole, with the token that completes it") {
    rig r(0ms, 8, true);
    auto t = run_one(r, make_req(1, {19}, 3)); // 20 = 0xC3, 21 = 0xA9, 22
    REQUIRE(t.done);
    REQUIRE(t.tokens.size() == 3);
    CHECK(t.tokens[0].token == 20);
    CHECK(t.tokens[0].text.empty());
    CHECK(t.tokens[1].text == "\xC3\xA9");
    CHECK(t.tokens[2].text == "<22>");
    CHECK(t.text() == "\xC3\xA9<22>");
}

TEST_CASE("a stop string that ends inside a split character still stops the request") {
    rig r(0ms, 8, true);
    auto req = make_req(1, {18}, 10); // 19, 20, 21, 22...
    req.stop = {"\xC3\xA9"};
    auto t = run_one(r, req);
    REQUIRE(t.done);
    CHECK(t.done->finish == msg::finish_reason::stop);
    CHECK(t.text() == "<19>");
}

TEST_CASE("a prompt longer than the context is refused at submit") {
    rig r;
    auto t = run_one(r, make_req(1, std::vector<msg::token_id>(64, 1), 4));
    REQUIRE(t.failed);
    CHECK(t.failed->value() == errc::prompt_too_long);
}

TEST_CASE("a deadline that passes while queued fails the request with timeout") {
    rig r(5ms, 1); // one sequence per step: the second request waits
    caf::scoped_actor self{r.sys};
    auto long_one = make_req(1, {1}, 40);
    self->request(r.batcher, 5s, msg::submit_atom_v, long_one,
                  caf::actor_cast<msg::sink_actor>(self))
        .receive([](msg::request_id) {}, [](const caf::error& e) { FAIL(caf::to_string(e)); });
    auto waiting = make_req(2, {1}, 4);
    waiting.timeout_ms = 30;
    auto t = run_one(r, waiting);
    REQUIRE(t.failed);
    CHECK(t.failed->value() == errc::timeout);
    CHECK(t.tokens.empty());
}

TEST_CASE("when the sink dies its request is cancelled and the engine's KV is released") {
    rig r(5ms);
    // A sink that quits on the first token, like an HTTP session whose client went away.
    // One unused spawn argument: CAF 0.17 dereferences a null argument tuple otherwise (UBSan).
    auto sink = r.sys.spawn(
        [](msg::sink_actor::pointer self, int /*unused*/) -> msg::sink_actor::behavior_type {
            return {
                [self](msg::token_atom, const msg::token_event&) {
                    self->quit(caf::exit_reason::user_shutdown);
                },
                [](msg::done_atom, const msg::completion&) {},
                [](msg::fail_atom, msg::request_id, const caf::error&) {},
            };
        },
        0);
    caf::scoped_actor self{r.sys};
    self->request(r.batcher, 5s, msg::submit_atom_v, make_req(1, {1, 2, 3, 4, 5}, 50), sink)
        .receive([](msg::request_id) {}, [](const caf::error& e) { FAIL(caf::to_string(e)); });
    // Bounded polling, not message order: the release lands in the engine on the executor's own
    // (detached) thread, which no scheduler, the test coordinator included, can step.
    bool released = false;
    for (int i = 0; i < 200 && !released; ++i) {
        std::this_thread::sleep_for(5ms);
        auto s = r.stats();
        released = s.finished == 1 && s.kv_blocks_used == 0 && r.probe->blocks_used == 0 &&
                   r.probe->live_seqs == 0;
    }
    CHECK(released);
    // It stopped well before its 50 tokens.
    CHECK(r.probe->steps < 20);
}

TEST_CASE("an explicit cancel ends a running request with finish_reason cancelled") {
    rig r(5ms);
    caf::scoped_actor self{r.sys};
    auto sink = caf::actor_cast<msg::sink_actor>(self);
    self->request(r.batcher, 5s, msg::submit_atom_v, make_req(9, {1}, 50), sink)
        .receive([](msg::request_id) {}, [](const caf::error& e) { FAIL(caf::to_string(e)); });
    std::optional<msg::completion> done;
    int tokens = 0;
    for (int i = 0; i < 200 && !done; ++i)
        self->receive(
            [&](msg::token_atom, const msg::token_event&) {
                if (++tokens == 2)
                    self->send(r.batcher, msg::cancel_atom_v, msg::request_id{9});
            },
            [&](msg::done_atom, msg::completion c) { done = c; },
            [&](msg::fail_atom, msg::request_id, caf::error e) { FAIL(caf::to_string(e)); },
            caf::after(10s) >> [&] { FAIL("no completion"); });
    REQUIRE(done);
    CHECK(done->finish == msg::finish_reason::cancelled);
    CHECK(done->completion_tokens < 10);
}

TEST_CASE("seeded sampling gives the same tokens with and without preemption under KV pressure") {
    // 16 blocks of 4 tokens; four requests of 4 + 24 tokens (7 blocks each) cannot all grow, so
    // the newest are preempted and re-prefilled. Their samplers must continue, not restart.
    rig r(1ms);
    auto sampled = [](msg::request_id id, std::uint64_t seed) {
        auto q = make_req(id, {1, 2, 3, 4}, 24);
        q.params.temperature = 3.0f; // flat: every draw is a real choice
        q.params.top_k = 0;
        q.params.top_p = 1.0f;
        q.params.min_p = 0.0f;
        q.params.seed = seed;
        return q;
    };
    auto ids = [](const transcript& t) {
        std::vector<msg::token_id> out;
        for (const auto& e : t.tokens)
            out.push_back(e.token);
        return out;
    };
    std::vector<std::vector<msg::token_id>> alone;
    for (std::uint64_t k = 0; k < 4; ++k) {
        auto t = run_one(r, sampled(k + 1, 1000 + k));
        REQUIRE(t.done);
        alone.push_back(ids(t));
    }
    CHECK(r.stats().preemptions == 0);
    std::vector<transcript> together(4);
    std::vector<std::thread> clients;
    for (std::uint64_t k = 0; k < 4; ++k)
        clients.emplace_back([&, k] { together[k] = run_one(r, sampled(k + 11, 1000 + k)); });
    for (auto& t : clients)
        t.join();
    CHECK(r.stats().preemptions > 0);
    for (std::size_t k = 0; k < 4; ++k) {
        CAPTURE(k);
        REQUIRE(together[k].done);
        CHECK(ids(together[k]) == alone[k]);
    }
}

namespace {

/// Token ids of a transcript.
std::vector<msg::token_id> ids_of(const transcript& t) {
    std::vector<msg::token_id> out;
    for (const auto& e : t.tokens)
        out.push_back(e.token);
    return out;
}

/// Submits every request before collecting any (each from its own sink), so they share steps.
std::vector<transcript> run_together(rig& r, const std::vector<msg::generate_request>& reqs) {
    return test::run_together(r.sys, r.batcher, reqs);
}

/// After a failure the pool must be whole again: the policy's and the engine's view agree. Polled
/// (bounded): the engine's side changes on the executor's detached thread.
bool kv_all_free(rig& r) {
    for (int i = 0; i < 200; ++i) {
        const auto s = r.stats();
        if (s.running == 0 && s.kv_blocks_used == 0 && r.probe->blocks_used == 0 &&
            r.probe->live_seqs == 0)
            return true;
        std::this_thread::sleep_for(5ms);
    }
    return false;
}

} // namespace

TEST_CASE("a prompt id outside the vocabulary fails its own request, its batch-mates complete") {
    // Sent straight to the batcher (admission refuses it first on the HTTP path): the executor
    // must keep the bad chunk out of the batched step instead of failing every sequence in it.
    rig r(2ms);
    const auto alone_a = run_one(r, make_req(1, {1, 2, 3}, 12));
    const auto alone_b = run_one(r, make_req(2, {7, 8}, 12));
    REQUIRE(alone_a.done);
    REQUIRE(alone_b.done);
    auto t = run_together(
        r, {make_req(11, {1, 2, 3}, 12), make_req(12, {5, 99}, 12), make_req(13, {7, 8}, 12)});
    REQUIRE(t[1].failed);
    CHECK(t[1].failed->value() == errc::invalid_argument);
    CHECK(t[1].failed->message.find("99") != std::string::npos);
    CHECK(t[1].failed->message.find("32") != std::string::npos); // the vocabulary size
    for (std::size_t i : {0u, 2u}) {
        CAPTURE(i);
        REQUIRE(t[i].done);
        CHECK(t[i].done->finish == msg::finish_reason::length);
    }
    CHECK(ids_of(t[0]) == ids_of(alone_a));
    CHECK(ids_of(t[2]) == ids_of(alone_b));
    CHECK(kv_all_free(r));
}

TEST_CASE("a sequence the engine fails for its own reason fails alone, the others go on") {
    // The fake engine fails any step holding sequence 22, which no check before the step can
    // see: the executor has to find the culprit by running the batch's sequences apart.
    rig r(2ms);
    const auto alone_a = run_one(r, make_req(1, {1, 2, 3}, 12));
    const auto alone_b = run_one(r, make_req(2, {7, 8}, 12));
    REQUIRE(alone_a.done);
    REQUIRE(alone_b.done);
    r.probe->poison_seq = 22;
    auto t = run_together(
        r, {make_req(21, {1, 2, 3}, 12), make_req(22, {4, 5}, 12), make_req(23, {7, 8}, 12)});
    REQUIRE(t[1].failed);
    CHECK(t[1].failed->message.find("poisoned") != std::string::npos);
    CHECK(t[1].tokens.empty());
    for (std::size_t i : {0u, 2u}) {
        CAPTURE(i);
        REQUIRE(t[i].done);
        CHECK(t[i].done->finish == msg::finish_reason::length);
        CHECK_FALSE(t[i].failed);
    }
    CHECK(ids_of(t[0]) == ids_of(alone_a));
    CHECK(ids_of(t[2]) == ids_of(alone_b));
    CHECK(kv_all_free(r));
    // The server side goes on: a later request runs normally.
    r.probe->poison_seq = 0;
    auto later = run_one(r, make_req(30, {1, 2, 3}, 12));
    REQUIRE(later.done);
    CHECK(ids_of(later) == ids_of(alone_a));
}
