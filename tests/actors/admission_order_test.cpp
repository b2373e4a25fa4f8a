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

#include <memory>
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
            s.waiting[1] = script->waiting;
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

    /// Fires admission's poll timer and lets the poll's round trip to the batcher complete.
    void poll() {
        const auto asked = script->stats_asked;
        sched.trigger_timeouts();
        sched.run();
        REQUIRE(script->stats_asked > asked);
    }
};

bool refused_queue_full(const std::variant<msg::request_id, caf::error>& r) {
    const auto* e = std::get_if<caf::error>(&r);
    return e != nullptr && msg::from_caf_error(*e).value() == errc::queue_full &&
           msg::retry_after_of(*e) >= 1;
}

} // namespace

TEST_CASE("admission's cap counts what its last poll saw plus what it admitted since") {
    fixture f(3);
    f.poll(); // the batcher reports an empty queue
    CHECK(std::holds_alternative<msg::request_id>(f.submit(1)));
    CHECK(std::holds_alternative<msg::request_id>(f.submit(2)));
    CHECK(std::holds_alternative<msg::request_id>(f.submit(3)));
    // Three admitted since the poll and none polled away: the fourth is over the cap.
    CHECK(refused_queue_full(f.submit(4)));
    CHECK(f.script->submits == 3);

    // The batcher has started two of them: the next poll sees one waiting, so two fit again.
    f.script->waiting = 1;
    f.poll();
    CHECK(std::holds_alternative<msg::request_id>(f.submit(5)));
    CHECK(std::holds_alternative<msg::request_id>(f.submit(6)));
    CHECK(refused_queue_full(f.submit(7)));
    CHECK(f.script->submits == 5);
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
