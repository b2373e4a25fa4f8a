// The batcher's output for requests another node placed here (generate_request::relay): one
// stream_batch per step for each relay, carrying that step's tokens of every such request and
// their ends, instead of one message per token to each sink; requests without a relay still go
// to their sinks. This is what keeps a cluster's network traffic per step, not per token.
#include "actors/batcher_rig.hpp"

#include <caf/actor_cast.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

#include <map>
#include <set>

using namespace bitnet;
using namespace std::chrono_literals;

TEST_CASE("a relayed request's events reach its relay batched per step and never its sink") {
    test::rig r;
    caf::scoped_actor relay{r.sys};
    std::vector<std::unique_ptr<caf::scoped_actor>> sinks;
    constexpr int n = 3;
    constexpr std::uint32_t max_tokens = 6;
    for (int i = 0; i < n; ++i) {
        sinks.push_back(std::make_unique<caf::scoped_actor>(r.sys));
        auto req = test::make_req(static_cast<msg::request_id>(10 + i),
                                  {1, static_cast<msg::token_id>(2 + i)}, max_tokens);
        req.relay = caf::actor_cast<caf::actor>(relay);
        auto& s = *sinks.back();
        s->request(r.batcher, std::chrono::seconds(5), msg::submit_atom_v, req,
                   caf::actor_cast<msg::sink_actor>(s))
            .receive([](msg::request_id) {}, [](const caf::error& e) { FAIL(caf::to_string(e)); });
    }
    // A request without a relay, beside them: its events go to its own sink as before.
    caf::scoped_actor direct{r.sys};
    direct
        ->request(r.batcher, std::chrono::seconds(5), msg::submit_atom_v,
                  test::make_req(99, {5, 6}, max_tokens), caf::actor_cast<msg::sink_actor>(direct))
        .receive([](msg::request_id) {}, [](const caf::error& e) { FAIL(caf::to_string(e)); });

    std::map<msg::request_id, std::vector<msg::token_event>> tokens;
    std::set<msg::request_id> done;
    std::size_t batches = 0, total_tokens = 0;
    bool idle = false;
    while (done.size() < n && !idle)
        relay->receive(
            [&](msg::stream_atom, msg::stream_batch& b) {
                ++batches;
                CHECK(!b.empty());
                std::set<msg::request_id> in_batch;
                for (auto& ev : b.tokens) {
                    // One token per request per step: a batch is one step's output.
                    CHECK(in_batch.insert(ev.id).second);
                    tokens[ev.id].push_back(ev);
                    ++total_tokens;
                }
                for (const auto& c : b.done)
                    done.insert(c.id);
                CHECK(b.failed.empty());
            },
            caf::after(std::chrono::seconds(10)) >> [&] { idle = true; });
    REQUIRE(done.size() == n);
    CHECK(total_tokens == n * max_tokens);
    // At most one message per step (the requests share steps once all are queued), not one per
    // token.
    CHECK(batches <= r.stats().steps);
    CHECK(batches < total_tokens);
    for (const auto& [id, evs] : tokens) {
        REQUIRE(evs.size() == max_tokens);
        for (std::uint32_t i = 0; i < max_tokens; ++i)
            CHECK(evs[i].index == i);
    }
    // The relayed requests' sinks heard nothing: everything went through the relay.
    for (auto& s : sinks) {
        bool heard = false;
        (*s)->receive([&](caf::message&) { heard = true; },
                      caf::after(std::chrono::milliseconds(50)) >> [] {});
        CHECK_FALSE(heard);
    }
    // The plain request's sink got its tokens and its end directly.
    std::size_t direct_tokens = 0;
    bool direct_done = false;
    for (int k = 0; k < 100 && !direct_done; ++k)
        direct->receive([&](msg::token_atom, msg::token_event&) { ++direct_tokens; },
                        [&](msg::done_atom, msg::completion&) { direct_done = true; },
                        caf::after(std::chrono::seconds(5)) >> [&] { direct_done = true; });
    CHECK(direct_tokens == max_tokens);
}

TEST_CASE("a relayed echo request's prompt echo travels in its relay's batch, before its end") {
    test::rig r(std::chrono::milliseconds(0), 8, /*with_text=*/true);
    caf::scoped_actor relay{r.sys};
    caf::scoped_actor sink{r.sys};
    auto req = test::make_req(7, {3, 4, 9}, 0);
    req.echo = true;
    req.prompt_logprobs = true;
    req.params.n_logprobs = 1;
    req.relay = caf::actor_cast<caf::actor>(relay);
    sink->request(r.batcher, std::chrono::seconds(5), msg::submit_atom_v, req,
                  caf::actor_cast<msg::sink_actor>(sink))
        .receive([](msg::request_id) {}, [](const caf::error& e) { FAIL(caf::to_string(e)); });
    std::vector<msg::token_event> events;
    bool done = false, idle = false;
    while (!done && !idle)
        relay->receive(
            [&](msg::stream_atom, msg::stream_batch& b) {
                for (auto& ev : b.tokens)
                    events.push_back(ev);
                if (!b.done.empty()) {
                    CHECK(b.done[0].finish == msg::finish_reason::length);
                    done = true;
                }
            },
            caf::after(std::chrono::seconds(10)) >> [&] { idle = true; });
    REQUIRE(done);
    REQUIRE(events.size() == 1);
    CHECK(events[0].token == -1);
    CHECK(events[0].echo.tokens == std::vector<msg::token_id>{3, 4, 9});
    CHECK(events[0].echo.logprobs.size() == 2);
}

TEST_CASE("a batcher stopped with its version tells each request, running or waiting, to its relay "
          "or its sink, and at the node's shutdown says nothing") {
    // One sequence a step, slow steps: one request runs while the others wait.
    test::rig r(200ms, 1);
    caf::scoped_actor relay{r.sys};
    caf::scoped_actor sink{r.sys};
    caf::scoped_actor direct{r.sys};
    for (msg::request_id id : {21, 22, 23}) {
        auto req = test::make_req(id, {1, static_cast<msg::token_id>(id % 7 + 2)}, 40);
        req.relay = caf::actor_cast<caf::actor>(relay);
        sink->request(r.batcher, 5s, msg::submit_atom_v, req,
                      caf::actor_cast<msg::sink_actor>(sink))
            .receive([](msg::request_id) {}, [](const caf::error& e) { FAIL(caf::to_string(e)); });
    }
    direct
        ->request(r.batcher, 5s, msg::submit_atom_v, test::make_req(29, {5, 6}, 40),
                  caf::actor_cast<msg::sink_actor>(direct))
        .receive([](msg::request_id) {}, [](const caf::error& e) { FAIL(caf::to_string(e)); });
    // The relay's own actors do not watch the batcher (a relay on another node does not): the
    // stop (with the supervisor's reason for a version that stops) is all they hear of it.
    sink->send_exit(r.batcher, msg::to_caf_error(errc::cancelled, "its version stopped"));

    std::set<msg::request_id> failed;
    bool idle = false;
    while (failed.size() < 3 && !idle)
        relay->receive(
            [&](msg::stream_atom, msg::stream_batch& b) {
                for (auto& f : b.failed) {
                    CHECK(msg::from_caf_error(f.error).value() == errc::cancelled);
                    failed.insert(f.id);
                }
            },
            caf::after(5s) >> [&] { idle = true; });
    CHECK(failed == std::set<msg::request_id>{21, 22, 23});
    bool direct_failed = false;
    idle = false;
    while (!direct_failed && !idle)
        direct->receive([](msg::token_atom, const msg::token_event&) {},
                        [&](msg::fail_atom, msg::request_id id, const caf::error& e) {
                            CHECK(id == 29);
                            CHECK(msg::from_caf_error(e).value() == errc::cancelled);
                            direct_failed = true;
                        },
                        caf::after(5s) >> [&] { idle = true; });
    CHECK(direct_failed);

    // At the node's shutdown the relays see the node go and move their requests on: the batcher
    // says nothing to them.
    test::rig quiet(200ms, 1);
    caf::scoped_actor relay2{quiet.sys};
    caf::scoped_actor sink2{quiet.sys};
    auto req = test::make_req(31, {1, 2}, 40);
    req.relay = caf::actor_cast<caf::actor>(relay2);
    sink2
        ->request(quiet.batcher, 5s, msg::submit_atom_v, req,
                  caf::actor_cast<msg::sink_actor>(sink2))
        .receive([](msg::request_id) {}, [](const caf::error& e) { FAIL(caf::to_string(e)); });
    sink2->send_exit(quiet.batcher, caf::exit_reason::user_shutdown);
    bool told = false;
    for (bool quiet_now = false; !quiet_now;)
        relay2->receive(
            [&](msg::stream_atom, msg::stream_batch& b) { told = told || !b.failed.empty(); },
            caf::after(1s) >> [&] { quiet_now = true; });
    CHECK_FALSE(told);
}
