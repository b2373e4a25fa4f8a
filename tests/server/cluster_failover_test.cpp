// A cluster on loopback losing nodes under load (actors/cluster/cluster_node.hpp,
// actors/cluster/stream_relay.hpp): three real bitnet-server processes, a router without a model
// and two replicas of bitnet.cpp's tiny file (greedy margins down to 0.003, so a stream resumed in
// any way but exactly diverges). A replica killed (SIGKILL) or hung (SIGSTOP) in the middle of 32
// streams: every stream completes through the router, one id each, byte-identical to what a single
// node produces. A node that comes back (SIGCONT, or a restart under its name) is up again and
// takes work. A replica whose model crashes (the test hook) and restarts in place: its streams
// continue on the other one, as for a lost node. With no replica left, streams end with
// replica_lost and new requests get 503 + Retry-After.
#include "cluster_process.hpp"

namespace bitnet::test {

namespace {

/// Whether bursts of short streams through `router` come to be served by `node` too (its finished
/// count grows) within two minutes; every stream must succeed. A burst takes seconds under the
/// sanitizers on a busy 2-core machine, so the 30 s of a plain poll left room for too few of
/// them (an ASan run failed here after a SIGCONT).
bool serves_again(const cluster_node& router, const cluster_node& node) {
    const auto before = stat_on(node, "finished");
    return eventually(
        [&] {
            for (const auto& t :
                 run_streams(router.port(), 8, [](int i) { return stream_body(100 + i, 16); }))
                if (!t.ok())
                    return false;
            return stat_on(node, "finished") > before;
        },
        std::chrono::seconds(120));
}

/// A router and two replicas; `extra` goes to every node. Ready when the router has sent work
/// to both.
struct three_nodes {
    scratch_dir dir;
    std::unique_ptr<cluster_node> a, b, r;

    explicit three_nodes(const std::vector<std::string>& extra = {}) {
        auto flags = [&](bool model, const std::string& join) {
            std::vector<std::string> f{"--cluster-listen",   "127.0.0.1:0",
                                       "--cluster-insecure", "--cluster-insecure-acknowledged",
                                       "--threads",          "1"};
            if (model) {
                f.emplace_back("--model");
                f.push_back(bitnetcpp_tiny());
                f.emplace_back("--alias");
                f.emplace_back("tiny");
            }
            if (!join.empty()) {
                f.emplace_back("--join");
                f.push_back(join);
            }
            f.insert(f.end(), extra.begin(), extra.end());
            return f;
        };
        a = std::make_unique<cluster_node>("a", flags(true, ""), "", dir.file("a.log"));
        b = std::make_unique<cluster_node>("b", flags(true, a->cluster_address()), "",
                                           dir.file("b.log"));
        r = std::make_unique<cluster_node>("r", flags(false, a->cluster_address()), "",
                                           dir.file("r.log"));
        REQUIRE_MESSAGE(eventually([&] { return r->sees("a") == "up" && r->sees("b") == "up"; }),
                        r->log());
        REQUIRE_MESSAGE(eventually([&] { return r->get("/health/ready").status == 200; }),
                        r->log());
        REQUIRE_MESSAGE((serves_again(*r, *a) && serves_again(*r, *b)), r->log());
    }
};

/// Starts `n` streams through the router; once both replicas run some, `fault` strikes; returns
/// the transcripts.
std::vector<stream_transcript> streams_with_fault(three_nodes& c, int n,
                                                  const std::function<std::string(int)>& body,
                                                  const std::function<void()>& fault) {
    // Idle first (the stats are polled: a warm-up's streams may still show as running).
    REQUIRE(eventually([&] { return running_on(*c.a) == 0 && running_on(*c.b) == 0; }));
    std::vector<stream_transcript> out;
    std::thread clients([&] { out = run_streams(c.r->port(), n, body); });
    const bool both_busy = eventually([&] { return running_on(*c.a) > 0 && running_on(*c.b) > 0; });
    if (both_busy)
        fault();
    clients.join();
    const auto why = "the streams never ran on both replicas\n" + c.r->log();
    REQUIRE_MESSAGE(both_busy, why);
    return out;
}

/// Every stream of `got` completed with the text and finish of `want`'s.
void check_same_streams(const std::vector<stream_transcript>& got,
                        const std::vector<stream_transcript>& want) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("stream " << i << ": " << got[i].raw.substr(0, 400));
        REQUIRE(want[i].ok());
        CHECK(got[i].ok());
        CHECK(got[i].finish_reason == want[i].finish_reason);
        CHECK(got[i].text == want[i].text);
    }
}

/// What one node alone streams for the same bodies (the surviving replica, asked directly).
void check_same_as_one_node(const std::vector<stream_transcript>& got, const cluster_node& alone,
                            const std::function<std::string(int)>& body) {
    check_same_streams(got, run_streams(alone.port(), static_cast<int>(got.size()), body));
}

std::uint64_t migrated(const cluster_node& n) {
    const auto m = n.get("/metrics").body;
    const auto at = m.find("bitnet_requests_migrated_total{node=\"" + n.name() + "\"}");
    if (at == std::string::npos)
        return 0;
    return std::stoull(m.substr(m.find(' ', at) + 1));
}

} // namespace

TEST_CASE("cluster: a replica killed under 32 greedy streams: every stream completes through the "
          "router byte-identical to one node's output") {
    three_nodes c;
    auto body = [](int i) { return stream_body(i, 200); };
    auto got = streams_with_fault(c, 32, body, [&] { c.a->kill_now(); });
    CHECK(eventually([&] { return c.r->sees("a") == "down"; }));
    check_same_as_one_node(got, *c.b, body);
    // The streams that ran on a moved: the router counts them.
    CHECK(migrated(*c.r) > 0);
}

TEST_CASE("cluster: a replica killed and restarted three times under 16 greedy streams: each "
          "time every stream equals one node's output") {
    // bench/failover_soak.mjs runs this cycle hundreds of times and classifies what differs;
    // here three cycles: a stream resumed on a node that had itself been restarted, and one
    // moved off a restarted node, are both exercised. Node b is the one killed each time (node
    // a is the seed every restart joins through).
    three_nodes c;
    auto body = [](int i) { return stream_body(i, 300); };
    const auto want = run_streams(c.a->port(), 16, body);
    for (int cycle = 0; cycle < 3; ++cycle) {
        CAPTURE(cycle);
        const auto moved_before = migrated(*c.r);
        auto got = streams_with_fault(c, 16, body, [&] { c.b->kill_now(); });
        CHECK(migrated(*c.r) > moved_before);
        check_same_streams(got, want);
        c.b->start();
        REQUIRE_MESSAGE(eventually([&] { return c.r->sees("b") == "up"; }), c.r->log());
        REQUIRE_MESSAGE(serves_again(*c.r, *c.b), c.r->log());
    }
}

TEST_CASE("cluster: a replica killed under 32 seeded streams at temperature 0.8: the resumed "
          "sampler gives one node's text") {
    three_nodes c;
    auto body = [](int i) { return stream_body(i, 200, 0.8, 1000 + i); };
    auto got = streams_with_fault(c, 32, body, [&] { c.b->kill_now(); });
    check_same_as_one_node(got, *c.a, body);
    CHECK(migrated(*c.r) > 0);
}

TEST_CASE("cluster: a hung replica (SIGSTOP) is found by missed heartbeats and its streams "
          "continue elsewhere and after SIGCONT it rejoins and serves again") {
    three_nodes c({"--cluster-failure-timeout-ms", "1500", "--cluster-heartbeat-ms", "100"});
    auto body = [](int i) { return stream_body(i, 200); };
    auto got = streams_with_fault(c, 16, body, [&] { c.a->stop(); });
    // The router could only learn of the hang from the silence (the link stays open).
    CHECK(c.r->sees("a") == "down");
    // Found by the failure timeout: the silence it judged is the timeout plus at most a few
    // ticks (a late tick of a loaded machine), not a link's own TCP timeout (minutes).
    const auto log = c.r->log();
    const auto at = log.find("is down: no heartbeat for ");
    REQUIRE(at != std::string::npos);
    const auto silent_ms = std::stol(log.substr(at + 26));
    CHECK(silent_ms >= 1500);
    CHECK(silent_ms < 3000);
    // The router's series for `a`: the suspicion counted before the verdict, and the gaps
    // between the heartbeats `a` sent while it ran.
    {
        const auto metrics = c.r->get("/metrics").body;
        auto value_of = [&](const std::string& family) -> double {
            for (std::size_t pos = metrics.find(family + "{"); pos != std::string::npos;
                 pos = metrics.find(family + "{", pos + 1)) {
                const auto end = metrics.find('\n', pos);
                const auto line = metrics.substr(pos, end - pos);
                if (line.find("peer=\"a\"") != std::string::npos &&
                    line.find("le=") == std::string::npos)
                    return std::stod(line.substr(line.rfind(' ') + 1));
            }
            return -1;
        };
        CHECK(value_of("bitnet_cluster_suspect_total") >= 1);
        CHECK(value_of("bitnet_cluster_heartbeat_gap_seconds_count") >= 1);
        CHECK(value_of("bitnet_cluster_heartbeat_gap_seconds_sum") > 0);
    }
    check_same_as_one_node(got, *c.b, body);
    c.a->cont();
    REQUIRE_MESSAGE(eventually([&] { return c.r->sees("a") == "up"; }), c.r->log());
    // Its moved sequences were cancelled there, not left running.
    CHECK(eventually([&] { return running_on(*c.a) == 0; }));
    // It takes work again: streams through the router reach it.
    CHECK_MESSAGE(serves_again(*c.r, *c.a), (c.r->log() + "\n--- node a:\n" + c.a->log()));
}

TEST_CASE("cluster: a replica's model crashing under 16 greedy streams moves them to the other "
          "replica byte-identical, and its restarted model serves again") {
    three_nodes c({"--test-hooks", "1"});
    if (!has_test_hooks(c.a->get("/health"))) {
        MESSAGE("bitnet-server has no test hooks (not a Debug build): a model crash not checked");
        return;
    }
    auto body = [](int i) { return stream_body(i, 200); };
    int crash_status = 0;
    auto got = streams_with_fault(
        c, 16, body, [&] { crash_status = c.a->post("/v1/models/tiny/crash", "").status; });
    REQUIRE(crash_status == 202);
    // The node stayed up: only its model's pair stopped (and restarted in place). On a loaded
    // machine a late heartbeat may make it "suspect" for a moment (half the failure timeout),
    // which is not a lost node: it must never have been "down", and be "up" again.
    CHECK_MESSAGE(eventually([&] { return c.r->sees("a") == "up"; }), c.r->log());
    CHECK_MESSAGE(c.r->downs("a") == 0, c.r->log());
    check_same_as_one_node(got, *c.b, body);
    const auto log = c.r->log();
    // Moved (counted) while a was never down: its replica stopped the streams, not a lost node.
    CHECK_MESSAGE(migrated(*c.r) > 0, log);
    // The stopped batcher is left out of the router's view; node a's new one is not.
    CHECK_MESSAGE(serves_again(*c.r, *c.a), (c.r->log() + "\n--- node a:\n" + c.a->log()));
}

TEST_CASE("cluster: a node restarted under its name rejoins and serves") {
    three_nodes c;
    c.b->kill_now();
    REQUIRE(eventually([&] { return c.r->sees("b") == "down"; }));
    c.b->start(); // the same flags: --join a, a new cluster port
    REQUIRE_MESSAGE(eventually([&] { return c.r->sees("b") == "up" && c.a->sees("b") == "up"; }),
                    c.r->log());
    CHECK(c.r->downs("b") == 1); // down once (the kill), up again since
    CHECK(serves_again(*c.r, *c.b));
}

TEST_CASE("cluster: with no replica left streams end with replica_lost and new requests get 503 "
          "with Retry-After") {
    three_nodes c;
    auto body = [](int i) { return stream_body(i, 2000); };
    auto got = streams_with_fault(c, 8, body, [&] {
        c.a->kill_now();
        c.b->kill_now();
    });
    for (const auto& t : got) {
        INFO(t.raw.substr(0, 400));
        // A stream whose placement its replica had not yet acknowledged has sent no head: it is
        // answered 503 replica_lost as a whole (seen in 1 of 20 rounds beside a CPU burner);
        // a running one ends with the error event.
        if (t.status == 503) {
            CHECK(t.raw.find("\"replica_lost\"") != std::string::npos);
        } else {
            CHECK(t.status == 200);
            CHECK(t.error == "\"replica_lost\"");
        }
    }
    const auto after = c.r->post("/v1/completions", R"({"prompt":"hi","max_tokens":4})");
    CHECK(after.status == 503);
    CHECK(after.body.find("replica_lost") != std::string::npos);
    CHECK(!after.retry_after.empty());
    CHECK(c.r->get("/health/ready").status == 503);
}

} // namespace bitnet::test
