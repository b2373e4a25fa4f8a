// The stream relay (actors/cluster/stream_relay.hpp) when the replica running a relayed stream
// stops while its node lives (a crash and its restart in place, an unload or rollback there): its
// batcher fails the request with `cancelled`, and the relay continues the stream on another replica
// of the same version, from the tokens it delivered, never on the stopped batcher; a second stop
// under the same stream ends it (a request that crashes its executor must not crash every replica
// in turn). The relay and admission are the real actors; the two replicas are stand-in batchers
// that record what they are sent and emit the step output a test gives them.
#include "actors/cluster/stream_relay.hpp"

#include "actors/actor_test_config.hpp"
#include "actors/admission/admission.hpp"
#include "messages/errors.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

#include <mutex>
#include <thread>

using namespace bitnet;
using namespace std::chrono_literals;

namespace {

/// What a stand-in batcher was sent.
struct replica_log {
    std::mutex m;
    std::vector<msg::generate_request> submitted;
    std::vector<msg::request_id> cancelled;

    std::size_t submits() {
        std::lock_guard lock(m);
        return submitted.size();
    }
    msg::generate_request last() {
        std::lock_guard lock(m);
        return submitted.back();
    }
};

/// A replica's batcher as the relay sees it: takes submits (answering the request's id) and
/// cancels; `(stream_atom, batch)` from the test is sent on to the relay of the last request, as
/// this batcher's own step output.
caf::behavior stand_in_batcher(caf::event_based_actor* self, std::shared_ptr<replica_log> log) {
    auto relay = std::make_shared<caf::actor>();
    return {
        [log, relay](msg::submit_atom, msg::generate_request& req,
                     const msg::sink_actor&) -> msg::request_id {
            *relay = req.relay;
            std::lock_guard lock(log->m);
            log->submitted.push_back(req);
            return req.id;
        },
        [log](msg::cancel_atom, msg::request_id id) {
            std::lock_guard lock(log->m);
            log->cancelled.push_back(id);
        },
        [self, relay](msg::stream_atom, msg::stream_batch& b) {
            self->send(caf::actor_cast<msg::relay_actor>(*relay), msg::stream_atom_v, std::move(b));
        },
    };
}

msg::replica_view view_of(const std::string& node, std::uint64_t outstanding,
                          const caf::actor& batcher) {
    msg::replica_view v;
    v.node = node;
    v.alias = "m";
    v.version = "v";
    v.batcher = batcher;
    v.text = batcher;
    v.outstanding_tokens = outstanding;
    v.device = "cpu";
    return v;
}

msg::stream_batch tokens_of(msg::request_id id, std::uint32_t from,
                            const std::vector<msg::token_id>& ids) {
    msg::stream_batch b;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        msg::token_event ev;
        ev.id = id;
        ev.index = from + static_cast<std::uint32_t>(i);
        ev.token = ids[i];
        b.tokens.push_back(ev);
    }
    return b;
}

msg::stream_batch stopped(msg::request_id id) {
    msg::stream_batch b;
    b.failed.push_back({id, msg::to_caf_error(errc::cancelled, "the model's batcher stopped")});
    return b;
}

bool wait_submits(replica_log& log, std::size_t n) {
    for (int i = 0; i < 500; ++i) {
        if (log.submits() >= n)
            return true;
        std::this_thread::sleep_for(10ms);
    }
    return false;
}

} // namespace

TEST_CASE("a relayed stream whose replica's model stops continues once on another replica of its "
          "version from the tokens it delivered, and a second stop ends it with worker_stopped") {
    test::actor_test_config cfg;
    caf::actor_system sys{cfg};
    actors::admission_options ao;
    ao.node_name = "router";
    auto adm = actors::spawn_admission(sys, ao);
    auto log_a = std::make_shared<replica_log>();
    auto log_b = std::make_shared<replica_log>();
    auto log_c = std::make_shared<replica_log>();
    auto a = sys.spawn(stand_in_batcher, log_a);
    auto b = sys.spawn(stand_in_batcher, log_b);
    auto c = sys.spawn(stand_in_batcher, log_c); // where a second move would go
    actors::relay_options ro;
    ro.node_name = "router";
    ro.admission = adm;
    auto relay = actors::spawn_stream_relay(sys, ro);
    caf::scoped_actor sink{sys};
    // Node a ranks first (no work), then b: a placement that did not leave a's batcher out would
    // pick it again.
    sink->send(adm, msg::cluster_atom_v,
               std::vector<msg::replica_view>{view_of("a", 0, a), view_of("b", 5000, b),
                                              view_of("c", 9000, c)});

    msg::generate_request req;
    req.id = 7;
    req.model = "m";
    req.prompt = {1, 2, 3};
    req.max_tokens = 10;
    sink->request(relay, 5s, msg::submit_atom_v, req, caf::actor_cast<msg::sink_actor>(sink),
                  view_of("a", 0, a))
        .receive([](msg::request_id id) { CHECK(id == 7); },
                 [](const caf::error& e) { FAIL(caf::to_string(e)); });
    REQUIRE(log_a->submits() == 1);

    // Two tokens, then node a's model stops under the stream.
    sink->send(a, msg::stream_atom_v, tokens_of(7, 0, {11, 12}));
    for (msg::token_id want : {11, 12})
        sink->receive([&](msg::token_atom, const msg::token_event& ev) { CHECK(ev.token == want); },
                      caf::after(5s) >> [] { FAIL("a token did not reach the sink"); });
    sink->send(a, msg::stream_atom_v, stopped(7));

    // It continues on b: the client's prompt plus what was delivered, marked as resumed.
    REQUIRE_MESSAGE(wait_submits(*log_b, 1), "the stream was not moved to replica b");
    const auto moved = log_b->last();
    CHECK(moved.id == 7);
    CHECK(moved.prompt == std::vector<msg::token_id>{1, 2, 3, 11, 12});
    CHECK(moved.n_resumed == 2);
    CHECK(log_a->submits() == 1); // never placed on the stopped batcher again
    // b's tokens reach the sink; a stale event from a (the placement it left) does not.
    sink->send(a, msg::stream_atom_v, tokens_of(7, 2, {99}));
    sink->send(b, msg::stream_atom_v, tokens_of(7, 2, {13}));
    sink->receive([](msg::token_atom, const msg::token_event& ev) { CHECK(ev.token == 13); },
                  caf::after(5s) >> [] { FAIL("b's token did not reach the sink"); });

    // A second stop under the same stream ends it, though c could take it: the client's 503
    // worker_stopped.
    sink->send(b, msg::stream_atom_v, stopped(7));
    bool failed = false;
    sink->receive(
        [&](msg::fail_atom, msg::request_id id, const caf::error& e) {
            failed = true;
            CHECK(id == 7);
            CHECK(msg::from_caf_error(e).value() == errc::cancelled);
        },
        [](msg::token_atom, const msg::token_event& ev) { FAIL("unexpected token " << ev.token); },
        caf::after(5s) >> [] {});
    CHECK(failed);
    CHECK(log_a->submits() == 1);
    CHECK(log_b->submits() == 1);
    CHECK(log_c->submits() == 0);

    for (const auto& x : {a, b, c})
        sink->send_exit(x, caf::exit_reason::user_shutdown);
    sink->send_exit(relay, caf::exit_reason::user_shutdown);
    sink->send_exit(adm, caf::exit_reason::user_shutdown);
}
