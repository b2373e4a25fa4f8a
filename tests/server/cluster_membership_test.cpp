// Membership that forgets: twelve short-lived nodes join a router and die. The router marks them
// down, redials each with a growing backoff, forgets each after cluster_forget_after_ms (no longer
// listed, no more dials), and the nodes it forgot are not brought back by anyone.
#include "cluster_process.hpp"

#include <memory>
#include <string>

namespace bitnet::test {

TEST_CASE("cluster: nodes that join and die are forgotten after the configured time, and their "
          "redials back off") {
    scratch_dir dir;
    const std::vector<std::string> timing{
        "--cluster-insecure",           "--cluster-insecure-acknowledged",
        "--cluster-failure-timeout-ms", "600",
        "--cluster-heartbeat-ms",       "100"};
    auto with = [&](std::vector<std::string> a) {
        a.insert(a.end(), timing.begin(), timing.end());
        return a;
    };
    cluster_node r("r",
                   with({"--cluster-listen", "127.0.0.1:0", "--cluster-forget-after-ms", "6000",
                         "--cluster-max-dial-backoff-ms", "30000"}),
                   "", dir.file("r.log"));
    // All twelve up at once, then all killed: their ports are all taken while they run, so no
    // node gets another's address from the OS.
    std::vector<std::unique_ptr<cluster_node>> nodes;
    for (int i = 0; i < 12; ++i) {
        const std::string name = "n" + std::to_string(i);
        nodes.push_back(std::make_unique<cluster_node>(
            name, with({"--cluster-listen", "127.0.0.1:0", "--join", r.cluster_address()}), "",
            dir.file(name + ".log")));
    }
    for (int i = 0; i < 12; ++i)
        REQUIRE_MESSAGE(eventually([&] { return r.sees("n" + std::to_string(i)) == "up"; }),
                        r.log());
    for (auto& n : nodes)
        n->kill_now();
    REQUIRE(eventually([&] { return r.sees("n11") == "down"; }));
    // All twelve leave the listing once forgotten (the last one 6 s after it went down).
    REQUIRE_MESSAGE(eventually(
                        [&] {
                            for (int i = 0; i < 12; ++i)
                                if (!r.sees("n" + std::to_string(i)).empty())
                                    return false;
                            return true;
                        },
                        std::chrono::seconds(30)),
                    r.log());
    // In its 6 s down, a node is redialed after ~1, 2 and 4 s: at most 4 dials each, 48 for the
    // twelve, where a fixed one-second redial made 6 or more each (72 or more). Every one of them
    // failed (the nodes are dead) and is counted.
    const auto dials = r.dial_failures();
    CHECK_MESSAGE(dials >= 12, r.log()); // each was redialed at least once before it was forgotten
    CHECK_MESSAGE(dials <= 12 * 4, r.log());
    // Forgotten: no more dials.
    std::this_thread::sleep_for(std::chrono::seconds(3));
    CHECK(r.dial_failures() == dials);
}

} // namespace bitnet::test
