// Admission's choice between replicas of one alias on other nodes' devices (place_atom, the
// choice a moved stream and a new request make): the fastest device class first, the least
// outstanding work second (actors/supervisor/device_placements.hpp has the rule as a plain
// function); a batcher that stopped under a stream is never chosen again.
#include "actors/actor_test_config.hpp"
#include "actors/admission/admission.hpp"
#include "messages/errors.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

using namespace bitnet;
using namespace std::chrono_literals;

namespace {

/// Another node's replica of alias "m" (version "v") on `device` holding `outstanding` tokens.
/// Its batcher and text actor are stand-ins: place() only chooses, it sends them nothing.
msg::replica_view replica(const std::string& node, const std::string& device,
                          std::uint64_t outstanding, const caf::actor& stand_in) {
    msg::replica_view v;
    v.node = node;
    v.alias = "m";
    v.version = "v";
    v.batcher = stand_in;
    v.text = stand_in;
    v.outstanding_tokens = outstanding;
    v.device = device;
    return v;
}

/// The node admission places a stream of "m" version "v" on, leaving out the batcher `gone`;
/// "none" when it answers that no replica is up.
std::string placed_on(caf::scoped_actor& self, const msg::admission_actor& adm,
                      const caf::actor& gone = {}) {
    std::string node;
    self->request(adm, 5s, msg::place_atom_v, msg::replica_query{"m", "v", gone})
        .receive([&](const msg::replica_view& v) { node = v.node; },
                 [&](caf::error& e) {
                     REQUIRE_MESSAGE(msg::from_caf_error(e).value() == errc::replica_lost,
                                     caf::to_string(e));
                     node = "none";
                 });
    return node;
}

} // namespace

TEST_CASE("admission places on the GPU replica before a less loaded CPU one, the CPU before sim") {
    test::actor_test_config cfg;
    caf::actor_system sys{cfg};
    actors::admission_options ao;
    ao.node_name = "router";
    auto adm = actors::spawn_admission(sys, ao);
    auto stand_in = sys.spawn([](caf::event_based_actor*, int) -> caf::behavior { return {}; }, 0);
    caf::scoped_actor self{sys};

    self->send(adm, msg::cluster_atom_v,
               std::vector<msg::replica_view>{replica("cpu-node", "cpu", 0, stand_in),
                                              replica("gpu-node", "cuda:0", 5000, stand_in),
                                              replica("sim-node", "sim:0", 0, stand_in)});
    CHECK(placed_on(self, adm) == "gpu-node");

    // Without the GPU replica: the CPU beats the simulated grid, whatever their loads.
    self->send(adm, msg::cluster_atom_v,
               std::vector<msg::replica_view>{replica("sim-node", "sim:0", 0, stand_in),
                                              replica("cpu-node", "cpu", 900, stand_in)});
    CHECK(placed_on(self, adm) == "cpu-node");

    // Two GPUs: the one with less outstanding work.
    self->send(adm, msg::cluster_atom_v,
               std::vector<msg::replica_view>{replica("gpu-a", "cuda:0", 300, stand_in),
                                              replica("gpu-b", "cuda:1", 100, stand_in)});
    CHECK(placed_on(self, adm) == "gpu-b");

    self->send_exit(adm, caf::exit_reason::user_shutdown);
    self->send_exit(stand_in, caf::exit_reason::user_shutdown);
}

TEST_CASE("admission never places a moved stream on the batcher that stopped under it again, "
          "nor takes that batcher back from a later heartbeat") {
    test::actor_test_config cfg;
    caf::actor_system sys{cfg};
    actors::admission_options ao;
    ao.node_name = "router";
    auto adm = actors::spawn_admission(sys, ao);
    auto idle = [](caf::event_based_actor*, int) -> caf::behavior { return {}; };
    auto batcher_a = sys.spawn(idle, 0);
    auto batcher_b = sys.spawn(idle, 0);
    auto restarted_a = sys.spawn(idle, 0); // node a's pair after its model restarted
    caf::scoped_actor self{sys};
    // Node a ranks first (less work) until its batcher is known to have stopped.
    const std::vector<msg::replica_view> before{replica("a", "cpu", 0, batcher_a),
                                                replica("b", "cpu", 900, batcher_b)};
    self->send(adm, msg::cluster_atom_v, before);
    REQUIRE(placed_on(self, adm) == "a");
    CHECK(placed_on(self, adm, batcher_a) == "b");
    CHECK(placed_on(self, adm) == "b"); // dropped from the view, not only from that one answer
    // A heartbeat sent before node a dropped the stopped route still lists it: left out.
    self->send(adm, msg::cluster_atom_v, before);
    CHECK(placed_on(self, adm) == "b");
    // Node a's restarted pair is a new batcher: it serves again, and ranks first.
    self->send(adm, msg::cluster_atom_v,
               std::vector<msg::replica_view>{replica("a", "cpu", 0, restarted_a),
                                              replica("b", "cpu", 900, batcher_b)});
    CHECK(placed_on(self, adm) == "a");
    // The last replica stopping leaves none: replica_lost, not the stopped batcher.
    self->send(adm, msg::cluster_atom_v,
               std::vector<msg::replica_view>{replica("b", "cpu", 0, batcher_b)});
    CHECK(placed_on(self, adm, batcher_b) == "none");

    for (const auto& a : {batcher_a, batcher_b, restarted_a})
        self->send_exit(a, caf::exit_reason::user_shutdown);
    self->send_exit(adm, caf::exit_reason::user_shutdown);
}
