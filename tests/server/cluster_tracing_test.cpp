// Tracing across the cluster (README "Tracing"): the trace context travels in the placement
// message, so a request through a router and a replica is one trace holding both nodes' spans,
// each node exporting its own (service.instance.id = its name); a stream moved off a killed
// replica shows the move as an event on the router's relay span, and the new replica's spans
// under that span.
#include "cluster_process.hpp"
#include "otlp_collector.hpp"

namespace bitnet::test {

namespace {

/// A router without a model and `replicas` replicas of bitnet.cpp's tiny file, all exporting
/// to one collector.
struct traced_cluster {
    scratch_dir dir;
    otlp_collector col;
    std::vector<std::unique_ptr<cluster_node>> replicas;
    std::unique_ptr<cluster_node> r;

    explicit traced_cluster(int n_replicas) {
        auto flags = [&](bool model, const std::string& join) {
            std::vector<std::string> f{"--cluster-listen",   "127.0.0.1:0",
                                       "--cluster-insecure", "--cluster-insecure-acknowledged",
                                       "--threads",          "1",
                                       "--otlp-endpoint",    col.endpoint()};
            if (model) {
                f.insert(f.end(), {"--model", bitnetcpp_tiny(), "--alias", "tiny"});
            }
            if (!join.empty())
                f.insert(f.end(), {"--join", join});
            return f;
        };
        const std::string names[] = {"a", "b"};
        for (int i = 0; i < n_replicas; ++i)
            replicas.push_back(std::make_unique<cluster_node>(
                names[i], flags(true, i == 0 ? "" : replicas[0]->cluster_address()), "",
                dir.file(names[i] + ".log")));
        r = std::make_unique<cluster_node>("r", flags(false, replicas[0]->cluster_address()), "",
                                           dir.file("r.log"));
        REQUIRE_MESSAGE(eventually([&] {
                            for (const auto& x : replicas)
                                if (r->sees(x->name()) != "up")
                                    return false;
                            return r->get("/health/ready").status == 200;
                        }),
                        r->log());
        // The router routes once its admission knows every replica's model: short bursts until
        // each replica has finished some of them.
        REQUIRE_MESSAGE(eventually([&] {
                            for (const auto& t : run_streams(
                                     r->port(), 8, [](int i) { return stream_body(100 + i, 8); }))
                                if (!t.ok())
                                    return false;
                            for (const auto& x : replicas)
                                if (stat_on(*x, "finished") <= 0)
                                    return false;
                            return true;
                        }),
                        r->log());
    }
};

const collected_span* on_node(const std::vector<collected_span>& spans, const std::string& name,
                              const std::string& node) {
    for (const auto& s : spans)
        if (s.name() == name && s.node() == node)
            return &s;
    return nullptr;
}

} // namespace

TEST_CASE("cluster tracing: a request through a router and a replica is one trace holding both "
          "nodes' spans, the replica's under the router's relay span") {
    traced_cluster c(1);
    const char* trace = "5bf92f3577b34da6a3ce929d0e0e4736";
    const char* caller = "10f067aa0ba902b7";
    const auto r = http_request(
        c.r->port(), boost::beast::http::verb::post, "/v1/completions", stream_body(7, 6), {},
        {{"traceparent", std::string("00-") + trace + "-" + caller + "-01"}});
    REQUIRE(r.status == 200);
    std::vector<collected_span> spans;
    CHECK(eventually(
        [&] {
            spans = c.col.trace(trace);
            return on_node(spans, "bitnet.decode", "a") && on_node(spans, "bitnet.relay", "r") &&
                   on_node(spans, "POST /v1/completions", "r");
        },
        std::chrono::seconds(20)));
    std::string all;
    for (const auto& s : spans)
        all += boost::json::serialize(s.o) + "\n";
    INFO(all);
    const auto* http = on_node(spans, "POST /v1/completions", "r");
    const auto* adm = on_node(spans, "bitnet.admission", "r");
    const auto* relay = on_node(spans, "bitnet.relay", "r");
    const auto* gen = on_node(spans, "bitnet.generate", "a");
    REQUIRE(http);
    REQUIRE(adm);
    REQUIRE(relay);
    REQUIRE(gen);
    CHECK(http->parent() == caller);
    CHECK(adm->attr_str("bitnet.admission.outcome") == "relayed");
    CHECK(relay->parent() == http->id());
    CHECK(relay->attr_str("bitnet.replica.node") == "a");
    CHECK(gen->parent() == relay->id()); // the replica's spans join the router's trace
    for (const auto& s : spans)
        CHECK_MESSAGE(reaches(spans, s, caller), s.name() << " on " << s.node());
    // The replica's generate span lies within the router's relay span (same host clock).
    CHECK(gen->start() >= relay->start());
    CHECK(gen->end() <= relay->end());
    // No node but the replica ran it: a's spans only.
    CHECK(on_node(spans, "bitnet.generate", "r") == nullptr);
}

TEST_CASE("cluster tracing: a stream moved off a SIGKILLed replica shows the move on the relay's "
          "span, and the new replica's spans continue the trace") {
    traced_cluster c(2);
    auto& a = *c.replicas[0];
    auto& b = *c.replicas[1];
    REQUIRE(eventually([&] { return running_on(a) == 0 && running_on(b) == 0; }));
    std::vector<stream_transcript> out;
    std::thread clients(
        [&] { out = run_streams(c.r->port(), 16, [](int i) { return stream_body(i, 250); }); });
    const bool both_busy = eventually([&] { return running_on(a) > 0 && running_on(b) > 0; });
    if (both_busy)
        a.kill_now();
    clients.join();
    REQUIRE_MESSAGE(both_busy, c.r->log());
    for (const auto& t : out)
        CHECK(t.ok());
    // Every moved stream: a migrate event from a to b on the router's relay span, and b's
    // generate span (resuming after what was delivered) under that span.
    std::vector<collected_span> spans;
    const collected_span* moved = nullptr;
    CHECK(eventually(
        [&] {
            spans = c.col.spans();
            for (const auto& s : spans)
                if (s.name() == "bitnet.relay" && s.node() == "r")
                    for (const auto& e : s.o.at("events").as_array())
                        if (e.as_object().at("name").as_string() == "bitnet.migrate") {
                            moved = &s;
                            return true;
                        }
            return false;
        },
        std::chrono::seconds(20)));
    REQUIRE_MESSAGE(moved, c.r->log());
    const auto trace = moved->trace();
    const auto relay_id = moved->id();
    const auto ev = moved->o.at("events").as_array().at(0).as_object(); // spans is refilled below
    CHECK(ev.at("name").as_string() == "bitnet.migrate");
    const auto ea = ev.at("attributes").as_object();
    CHECK(ea.at("bitnet.from_node").as_string() == "a");
    CHECK(ea.at("bitnet.to_node").as_string() == "b");
    CHECK(moved->attr_num("bitnet.moves") >= 1);
    const collected_span* resumed = nullptr;
    CHECK(eventually(
        [&] {
            spans = c.col.trace(trace);
            resumed = on_node(spans, "bitnet.generate", "b");
            return resumed != nullptr;
        },
        std::chrono::seconds(20)));
    REQUIRE(resumed);
    CHECK(resumed->parent() == relay_id);
    // It resumed what a had delivered (a cluster resume recomputes those tokens as decoded).
    const auto delivered = ea.at("bitnet.delivered_tokens").to_number<double>();
    CHECK(resumed->attr_num("bitnet.resumed_tokens") == (delivered > 0 ? delivered : -1));
}

} // namespace bitnet::test
