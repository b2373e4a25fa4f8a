// A cluster over mutual TLS (CAF's OpenSSL module), with certificates made at test time by the
// project's own deploy/cluster/make-certs.sh: nodes whose certificates one CA signed form a
// cluster and serve each other's replicas; a node whose certificate another CA signed is refused,
// the refusal is logged on both sides, and it breaks none of the good links.
#include "server/basp_probe.hpp"
#include "server/certs.hpp"
#include "server/cluster_process.hpp"

#include <memory>

using namespace bitnet;
using namespace bitnet::test;

namespace {

/// Nodes over TLS in one scratch directory: each with its certificate from `ca_dir`.
class tls_cluster {
public:
    tls_cluster() {
        model_ = dir_.file("tiny.gguf");
        const auto made = run_tool("bitnet-model", "make --shape tiny --seed 1 -o " + model_);
        REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    }

    [[nodiscard]] std::string ca(const std::string& name) const { return dir_.file(name); }

    /// Node `name` with the pair make-certs made for it in `ca_dir`; with the model when
    /// `model`; joining `join` unless empty.
    std::unique_ptr<cluster_node> start(const std::string& name, const std::string& ca_dir,
                                        bool model, const std::string& join = {}) {
        std::vector<std::string> args{"--cluster-listen", "127.0.0.1:0",
                                      "--cluster-cert",   ca_dir + "/" + name + ".crt",
                                      "--cluster-key",    ca_dir + "/" + name + ".key",
                                      "--cluster-ca",     ca_dir + "/ca.crt",
                                      "--threads",        "1"};
        if (model)
            args.insert(args.end(), {"--model", model_});
        if (!join.empty())
            args.insert(args.end(), {"--join", join});
        return std::make_unique<cluster_node>(name, args, "", dir_.file(name + ".log"));
    }

private:
    scratch_dir dir_;
    std::string model_;
};

/// Polls until a and b see each other up and b knows a's replica of "tiny".
bool formed(const cluster_node& a, const cluster_node& b) {
    return eventually([&] {
        return a.sees(b.name()) == "up" && b.sees(a.name()) == "up" &&
               !b.version_on(a.name(), "tiny").empty();
    });
}

/// POST /v1/inference for "tiny" on `n`: the reply.
http_reply generate(const cluster_node& n) {
    return n.post("/v1/inference",
                  R"({"model":"tiny","prompt":"Once upon","max_tokens":4,"temperature":0})");
}

} // namespace

TEST_CASE("cluster TLS: two nodes whose certificates one CA signed form a cluster, and a request "
          "through one is served by the other's replica") {
    tls_cluster c;
    const auto ca = c.ca("ca");
    make_certs(ca, "a b");
    auto a = c.start("a", ca, true);
    auto b = c.start("b", ca, false, a->cluster_address());
    REQUIRE_MESSAGE(formed(*a, *b), "a's log:\n" << a->log() << "\nb's log:\n" << b->log());
    CHECK(a->log().find("(TLS, mutual certificates)") != std::string::npos);
    CHECK(b->log().find("(TLS, mutual certificates)") != std::string::npos);

    // b has no model of its own: a 200 from it ran on a's replica, across the TLS link.
    CHECK(b->version_on("b", "tiny").empty());
    // b's admission learns a's replicas at b's next tick after the report that listed a's model.
    http_reply r;
    const bool served = eventually([&] { return (r = generate(*b)).status == 200; });
    REQUIRE_MESSAGE(served, r.body << "\nb's log:\n" << b->log());
    const auto o = parse_object(r.body);
    CHECK(o.at("model_version").as_string() == a->version_on("a", "tiny"));
    CHECK(o.at("tokens").as_array().size() == 4);
}

TEST_CASE("cluster TLS: a node whose certificate another CA signed is refused, the refusal is "
          "logged on both sides, and the good link stays up") {
    tls_cluster c;
    const auto ca = c.ca("ca"), other_ca = c.ca("other-ca");
    make_certs(ca, "a b");
    make_certs(other_ca, "c");
    auto a = c.start("a", ca, true);
    auto b = c.start("b", ca, false, a->cluster_address());
    REQUIRE_MESSAGE(formed(*a, *b), "a's log:\n" << a->log() << "\nb's log:\n" << b->log());

    // c dials a once a second; it must never be a member anywhere meanwhile.
    auto intruder = c.start("c", other_ca, false, a->cluster_address());
    std::set<std::string> c_seen;
    const bool refused_thrice = eventually([&] {
        for (const auto* n : {a.get(), b.get()})
            if (const auto s = n->sees("c"); !s.empty())
                c_seen.insert(n->name() + ": " + s);
        if (const auto s = intruder->sees("a"); s == "up")
            c_seen.insert("c sees a up");
        return intruder->dial_failures() >= 3 && a->refusals("tls") >= 3;
    });
    INFO("a's log:\n" << a->log() << "\nc's log:\n" << intruder->log());
    CHECK(refused_thrice);
    CHECK(c_seen.empty());
    CHECK(a->sees("c").empty());
    CHECK(b->sees("c").empty());
    CHECK(intruder->sees("a") != "up");
    // The accepting side says whom it refused and why (OpenSSL's own words follow).
    CHECK(a->log().find("cluster: TLS session with ") != std::string::npos);

    // The refused handshakes broke nothing between a and b (they once did: OpenSSL's error queue).
    CHECK(a->downs("b") == 0);
    CHECK(b->downs("a") == 0);
    CHECK(a->sees("b") == "up");
    CHECK(b->sees("a") == "up");
    const auto r = generate(*b);
    CHECK_MESSAGE(r.status == 200, r.body);
}

TEST_CASE("cluster TLS: a raw BASP header announcing 1 GiB never reaches CAF, RSS stays within "
          "10 MiB") {
    tls_cluster c;
    const auto ca = c.ca("ca");
    make_certs(ca, "a");
    auto a = c.start("a", ca, false);
    REQUIRE(eventually([&] { return a->get("/v1/cluster").status == 200; }));
    const auto before = rss_kib(a->pid());
    REQUIRE(before > 0);
    // Not a TLS record: the handshake fails and the connection closes.
    CHECK(send_basp_header(a->cluster_port(), 0x01, 1u << 30, std::chrono::seconds(5)));
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const auto after = rss_kib(a->pid());
    CHECK_MESSAGE(after < before + 10 * 1024,
                  "RSS " << before << " KiB before, " << after << " KiB after");
    CHECK(a->alive());
    CHECK(a->get("/v1/cluster").status == 200);
}
