// Proofs on cluster-wide model operations (actors/cluster/order_proof.hpp): a node runs a peer's
// order only when one of its own admin keys gives the order's proof, the order names it, and it was
// issued within five minutes; any change to the order breaks the proof.
#include "actors/cluster/order_proof.hpp"

#include <doctest/doctest.h>

using namespace bitnet;
using actors::order_proof;
using actors::order_refusal;

namespace {

msg::node_order unload_on(const std::string& target, std::int64_t at_ms) {
    msg::node_order o;
    o.kind = "unload";
    o.load.alias = "tiny";
    o.issuer = "a";
    o.target = target;
    o.issued_ms = at_ms;
    return o;
}

} // namespace

TEST_CASE("an order's proof covers what it does, to whom and when") {
    const std::int64_t now = 1'800'000'000'000;
    auto o = unload_on("b", now);
    const auto p = order_proof("admin-key-1", o);
    CHECK(p.size() == 64);
    CHECK(order_proof("admin-key-1", o) == p);
    CHECK(order_proof("admin-key-2", o) != p);
    for (auto change : std::vector<void (*)(msg::node_order&)>{
             [](msg::node_order& x) { x.kind = "rollback"; },
             [](msg::node_order& x) { x.load.alias = "tin"; },
             [](msg::node_order& x) { x.load.path = "/other.gguf"; },
             [](msg::node_order& x) { x.load.version = "2"; },
             [](msg::node_order& x) { x.load.device = "cpu"; },
             [](msg::node_order& x) { x.load.warmup = false; },
             [](msg::node_order& x) { x.issuer = "c"; }, [](msg::node_order& x) { x.target = "c"; },
             [](msg::node_order& x) { ++x.issued_ms; },
             // Field boundaries count: "tiny" + "" is not "tin" + "y".
             [](msg::node_order& x) {
                 x.load.alias = "tin";
                 x.load.path = "y";
             }}) {
        auto x = o;
        change(x);
        CHECK(order_proof("admin-key-1", x) != p);
    }
}

TEST_CASE("a node runs a peer's order only with its own admin key's proof, to it, recently") {
    const std::int64_t now = 1'800'000'000'000;
    const std::vector<std::string> keys{"admin-key-1", "admin-key-2"};
    auto o = unload_on("b", now - 1000);
    o.proof = order_proof("admin-key-2", o);
    CHECK(order_refusal(o, "b", keys, false, now).empty());
    // Another target, a stale or future order, a key this node does not have, no proof.
    CHECK(order_refusal(o, "c", keys, false, now).find("names node 'b'") != std::string::npos);
    CHECK(order_refusal(o, "b", keys, false, now + 6 * 60 * 1000).find("five minutes") !=
          std::string::npos);
    CHECK(order_refusal(o, "b", keys, false, now - 6 * 60 * 1000).find("five minutes") !=
          std::string::npos);
    CHECK_FALSE(order_refusal(o, "b", {"admin-key-3"}, false, now).empty());
    auto unproven = o;
    unproven.proof.clear();
    CHECK(order_refusal(unproven, "b", keys, true, now).find("no admin key proof") !=
          std::string::npos);
    auto forged = o;
    forged.kind = "load"; // the proof was for an unload
    CHECK_FALSE(order_refusal(forged, "b", keys, false, now).empty());
    // No admin key here: only admin_open lets peers order, as it lets any HTTP client.
    CHECK(order_refusal(unproven, "b", {}, true, now).empty());
    CHECK(order_refusal(unproven, "b", {}, false, now).find("disabled") != std::string::npos);
}
