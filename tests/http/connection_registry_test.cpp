// Which connection makes room past max_connections (transport/listener.hpp, connection_registry):
// with nothing idle or stalled, a read of the address that holds the most, and only for an address
// that holds at least two fewer, so crowding addresses never take each other's slots (each retake
// would free one for the next, and the churn keeps every held read too young to be stalled).
#include "http/transport/listener.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace bitnet::http;
using steady = std::chrono::steady_clock;

namespace {

/// `n` reads of `peer` whose headers began `age` ago.
void hold(connection_registry& reg, const std::string& peer, int n, steady::duration age) {
    for (int i = 0; i < n; ++i) {
        connection_registry::entry e;
        e.peer = peer;
        e.reading = true;
        e.progress_at = steady::now() - age;
        reg.conns.emplace(reg.next++, std::move(e));
        ++reg.per_peer[peer];
    }
}

} // namespace

TEST_CASE("connection registry: a read of the address holding the most makes room for one that "
          "holds fewer, the oldest first") {
    connection_registry reg;
    hold(reg, "10.0.0.2", 5, std::chrono::milliseconds(100));
    hold(reg, "10.0.0.3", 3, std::chrono::milliseconds(300));
    const auto oldest_of_crowded = reg.next; // older than the rest of .2's
    hold(reg, "10.0.0.2", 1, std::chrono::milliseconds(200));
    const auto stalled_since = steady::now() - std::chrono::seconds(1);
    // Nothing idle, nothing stalled for a second.
    CHECK(reg.reclaimable(nullptr, stalled_since) == 0);
    const auto victim = reg.crowded_read("10.0.0.9");
    REQUIRE(victim != 0);
    CHECK(reg.conns.at(victim).peer == "10.0.0.2");
    CHECK(victim == oldest_of_crowded);
    // .3 holds 3 and .2 six: .3 may take one of .2's.
    CHECK(reg.crowded_read("10.0.0.3") != 0);
}

TEST_CASE("connection registry: addresses holding about as many never take each other's slots") {
    connection_registry reg;
    hold(reg, "10.0.0.2", 4, std::chrono::milliseconds(100));
    hold(reg, "10.0.0.3", 3, std::chrono::milliseconds(100));
    CHECK(reg.crowded_read("10.0.0.3") == 0); // 4 is not two more than 3
    CHECK(reg.crowded_read("10.0.0.2") == 0); // the most already
    CHECK(reg.crowded_read("10.0.0.4") != 0); // holds none
}

TEST_CASE("connection registry: a connection past its headers (a request being answered) is "
          "never taken for room") {
    connection_registry reg;
    hold(reg, "10.0.0.2", 4, std::chrono::milliseconds(100));
    for (auto& [id, e] : reg.conns)
        e.reading = false; // their requests are being served
    CHECK(reg.crowded_read("10.0.0.9") == 0);
}

TEST_CASE("connection registry: past the global cap an address that holds many never takes the "
          "idle or stalled connection of one that holds fewer") {
    connection_registry reg;
    hold(reg, "10.0.0.2", 6, std::chrono::seconds(2)); // stalled
    connection_registry::entry lone;
    lone.peer = "10.0.0.9";
    lone.idle = true; // just accepted: its first bytes not read yet
    lone.idle_since = steady::now() - std::chrono::seconds(5);
    const auto lone_id = reg.next++;
    reg.conns.emplace(lone_id, lone);
    ++reg.per_peer["10.0.0.9"];
    const auto stalled_since = steady::now() - std::chrono::seconds(1);
    // Without a newcomer's count the oldest idle goes first, whoever holds it.
    CHECK(reg.reclaimable(nullptr, stalled_since) == lone_id);
    // A crowding address's new connection takes one of its own stalled reads instead.
    const std::string crowding = "10.0.0.2";
    const auto victim = reg.reclaimable(nullptr, stalled_since, &crowding);
    REQUIRE(victim != 0);
    CHECK(reg.conns.at(victim).peer == crowding);
    // Another client that holds none may take the idle one.
    const std::string other = "10.0.0.7";
    CHECK(reg.reclaimable(nullptr, stalled_since, &other) == lone_id);
}
