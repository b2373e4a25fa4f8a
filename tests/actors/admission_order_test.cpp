// Admission's queue cap, driven message by message on CAF's deterministic test coordinator
// (scheduler policy "testing"): no thread runs an actor unless the test says so, and admission's
// poll timer fires only when the test triggers it. The batcher behind admission is a scripted
// stand-in (this test is about admission's counting, not about batching): it acknowledges every
// submit and reports the queue depth the test sets.
#include "actors/admission/admission.hpp"
#include "messages/errors.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <variant>

using namespace bitnet;
using namespace std::chrono_literals;

namespace {

struct testing_config : caf::actor_system_config {
    testing_config() {
        msg::register_messages(*this);
        set("scheduler.policy", caf::atom("testing"));
    }
};

/// What the stand-in batcher reports and has seen.
struct batcher_script {
    std::uint32_t waiting = 0;
    /// When set, the batcher has started this many of the requests it was given, and the rest
    /// wait (`waiting` is then what it has been given less these).
    std::optional<std::uint32_t> started;
    std::uint32_t submits = 0;
    std::uint32_t stats_asked = 0;
};

msg::batcher_actor::behavior_type scripted_batcher(msg::batcher_actor::pointer,
                                                   std::shared_ptr<batcher_script> script) {
    return {
        [script](msg::submit_atom, const msg::generate_request& req,
                 const msg::sink_actor&) -> msg::request_id {
            ++script->submits;
            return req.id;
        },
        [](msg::cancel_atom, msg::request_id) {},
        [](msg::tick_atom) {},
        [script](msg::stats_atom) {
            ++script->stats_asked;
            msg::batcher_stats s;
            s.model = "tiny";
            s.waiting[1] = script->started
                               ? script->submits - std::min(script->submits, *script->started)
                               : script->waiting;
            return s;
        },
    };
}

msg::generate_request make_req(msg::request_id id) {
    msg::generate_request r;
    r.id = id;
    r.prompt = {1, 2, 3};
    r.max_tokens = 8;
    return r;
}

bool refused_queue_full(const std::variant<msg::request_id, caf::error>& r) {
    const auto* e = std::get_if<caf::error>(&r);
    return e != nullptr && msg::from_caf_error(*e).value() == errc::queue_full &&
           msg::retry_after_of(*e) >= 1;
}

struct fixture {
    testing_config cfg;
    caf::actor_system sys{cfg};
    caf::scheduler::test_coordinator& sched =
        dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
    caf::scoped_actor self{sys};
    std::shared_ptr<batcher_script> script = std::make_shared<batcher_script>();
    msg::batcher_actor batcher = sys.spawn(scripted_batcher, script);
    msg::admission_actor adm;

    explicit fixture(std::uint32_t cap) {
        actors::admission_options ao;
        ao.default_model = "tiny";
        ao.max_waiting_requests = cap;
        ao.poll_interval = 20ms;
        adm = actors::spawn_admission(sys, ao);
        msg::executor_info info;
        info.n_vocab = 32;
        info.n_ctx = 64;
        info.kv_block_tokens = 4;
        info.kv_blocks_total = 64;
        self->send(adm, msg::route_atom_v, std::string("tiny"), batcher, msg::text_actor{}, info);
        sched.run();
        self->receive([](bool) {}, [](caf::error& e) { FAIL(caf::to_string(e)); });
    }
    ~fixture() {
        for (const auto& a :
             {caf::actor_cast<caf::actor>(adm), caf::actor_cast<caf::actor>(batcher)})
            self->send_exit(a, caf::exit_reason::user_shutdown);
        sched.run();
    }

    /// Submits and runs every message that follows (admission, then the batcher, then back).
    std::variant<msg::request_id, caf::error> submit(msg::request_id id) {
        self->send(adm, msg::submit_atom_v, make_req(id), caf::actor_cast<msg::sink_actor>(self));
        sched.run();
        std::variant<msg::request_id, caf::error> out;
        self->receive([&](msg::request_id got) { out = got; }, [&](caf::error& e) { out = e; });
        return out;
    }

    /// Sends every submit before any message runs (they reach admission as one burst), then runs
    /// them all; how many were admitted.
    int submit_burst(msg::request_id first, int n) {
        for (int i = 0; i < n; ++i)
            self->send(adm, msg::submit_atom_v, make_req(first + static_cast<msg::request_id>(i)),
                       caf::actor_cast<msg::sink_actor>(self));
        sched.run();
        int admitted = 0;
        for (int i = 0; i < n; ++i)
            self->receive([&](msg::request_id) { ++admitted; },
                          [&](caf::error& e) { CHECK(refused_queue_full(e)); });
        return admitted;
    }

    /// Fires admission's poll timer and lets the poll's round trip to the batcher complete.
    void poll() {
        const auto asked = script->stats_asked;
        sched.trigger_timeouts();
        sched.run();
        REQUIRE(script->stats_asked > asked);
    }
};

} // namespace

TEST_CASE("admission's cap counts what its last poll saw plus what it admitted since") {
    fixture f(3);
    f.poll(); // the batcher reports an empty queue
    CHECK(std::holds_alternative<msg::request_id>(f.submit(1)));
    CHECK(std::holds_alternative<msg::request_id>(f.submit(2)));
    CHECK(std::holds_alternative<msg::request_id>(f.submit(3)));
    // Three admitted since the poll: the fourth is over the cap on that count, so admission asks
    // the batcher, which has all three waiting: refused.
    f.script->waiting = 3;
    auto asked = f.script->stats_asked;
    CHECK(refused_queue_full(f.submit(4)));
    CHECK(f.script->stats_asked == asked + 1);
    CHECK(f.script->submits == 3);

    // The batcher has started two of them: the next poll sees one waiting, so two fit again.
    f.script->waiting = 1;
    f.poll();
    CHECK(std::holds_alternative<msg::request_id>(f.submit(5)));
    CHECK(std::holds_alternative<msg::request_id>(f.submit(6)));
    f.script->waiting = 3;
    CHECK(refused_queue_full(f.submit(7)));
    CHECK(f.script->submits == 5);
}

TEST_CASE("admission's cap counts what waits now: requests that finished since the poll do not "
          "count") {
    fixture f(1);
    f.poll(); // an empty queue
    // Sequential requests, each done before the next comes (the batcher reports none waiting):
    // every one is admitted, however long ago the last poll was.
    for (msg::request_id id = 1; id <= 30; ++id) {
        const auto asked = f.script->stats_asked;
        CHECK(std::holds_alternative<msg::request_id>(f.submit(id)));
        // The first rides on the poll; each later one asked for what waits now.
        CHECK(f.script->stats_asked == asked + (id > 1 ? 1 : 0));
    }
    CHECK(f.script->submits == 30);
    // One really waiting: the next is refused.
    f.script->waiting = 1;
    CHECK(refused_queue_full(f.submit(31)));
}

TEST_CASE(
    "admission's cap holds for a burst whose answers from the batcher are in flight together") {
    fixture f(2);
    f.poll(); // an empty queue
    CHECK(f.submit_burst(1, 2) == 2);
    // The batcher started both: what it reports waiting is what it was given since.
    f.script->started = 2;
    // Four more at once, each over the cap on the count since the poll: each asks the batcher,
    // and the four questions are answered before any of the four is handed over. The first two
    // answers admit one each (the second counts the first as admitted since its question went
    // out); the last two find the cap reached. Counting "admitted since" down by each answer's
    // own snapshot let all four in.
    CHECK(f.submit_burst(3, 4) == 2);
    CHECK(f.script->submits == 4);
    // And the batcher agrees: two wait, the cap.
    f.poll();
    CHECK(f.submit_burst(7, 1) == 0);
}

TEST_CASE("admission refuses at once when the batcher's own queue is already at the cap") {
    fixture f(2);
    f.script->waiting = 2;
    f.poll();
    CHECK(refused_queue_full(f.submit(1)));
    CHECK(f.script->submits == 0);
    f.script->waiting = 0;
    f.poll();
    CHECK(std::holds_alternative<msg::request_id>(f.submit(2)));
    CHECK(f.script->submits == 1);
}

TEST_CASE("readiness waits for every model the server starts with, until each is served or "
          "failed") {
    testing_config cfg;
    caf::actor_system sys{cfg};
    auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
    caf::scoped_actor self{sys};
    auto script = std::make_shared<batcher_script>();
    auto batcher = sys.spawn(scripted_batcher, script);
    actors::admission_options ao;
    ao.default_model = "tiny";
    ao.startup_models = {"tiny", "second", "broken"};
    auto adm = actors::spawn_admission(sys, ao);
    auto ready = [&] {
        std::pair<bool, std::string> out;
        self->send(adm, msg::ready_atom_v);
        sched.run();
        self->receive(
            [&](bool ok, std::string why) {
                out = {ok, std::move(why)};
            },
            [](caf::error& e) { FAIL(caf::to_string(e)); });
        return out;
    };
    auto route = [&](const std::string& alias) {
        msg::executor_info info;
        info.n_vocab = 32;
        info.n_ctx = 64;
        self->send(adm, msg::route_atom_v, alias, batcher, msg::text_actor{}, info);
        sched.run();
        self->receive([](bool) {}, [](caf::error& e) { FAIL(caf::to_string(e)); });
    };
    CHECK_FALSE(ready().first);
    route("tiny"); // the default is served: it alone made the server ready before
    auto r = ready();
    CHECK_FALSE(r.first);
    CHECK(r.second.find("'broken'") != std::string::npos);
    self->send(adm, msg::fail_atom_v, msg::alias_failure{"broken", "bad file"});
    sched.run();
    r = ready();
    CHECK_FALSE(r.first);
    CHECK(r.second.find("'second'") != std::string::npos);
    route("second");
    CHECK(ready().first);
    // A load after start (a reload, a new alias) never takes readiness back.
    self->send(adm, msg::load_atom_v, std::string("later"));
    sched.run();
    CHECK(ready().first);
    for (const auto& a : {caf::actor_cast<caf::actor>(adm), caf::actor_cast<caf::actor>(batcher)})
        self->send_exit(a, caf::exit_reason::user_shutdown);
    sched.run();
}
