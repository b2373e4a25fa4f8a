// Cluster roles and certificate-bound names over mutual TLS, with certificates made at test time
// by deploy/cluster/make-certs.sh (NODE:ROLES puts role URIs in them):
//   - a process whose certificate names another node cannot join under that name, even while
//     the node it names is down, and the refusal is counted (bitnet_cluster_refusals_total);
//   - a peer whose certificate gives it only the replica role cannot roll models anywhere (a
//     node with the admin role can, the same request otherwise), nor place requests: the
//     replica's batcher and text actor refuse it, counted;
//   - a peer with the router role only is never sent work, even when it serves the model.
#include "server/certs.hpp"
#include "server/cluster_process.hpp"

#include <memory>

using namespace bitnet;
using namespace bitnet::test;

namespace {

class tls_nodes {
public:
    tls_nodes() {
        model_ = dir_.file("tiny.gguf");
        const auto made = run_tool("bitnet-model", "make --shape tiny --seed 1 -o " + model_);
        REQUIRE_MESSAGE(made.exit_code == 0, made.err);
        ca_ = dir_.file("ca");
    }
    [[nodiscard]] const std::string& ca() const { return ca_; }

    /// Node `name` with the pair made for `cert` (default: its own name), the model when `model`.
    std::unique_ptr<cluster_node> start(const std::string& name, bool model,
                                        const std::string& join = {},
                                        std::vector<std::string> extra = {},
                                        const std::string& cert = {}) {
        const auto pair = ca_ + "/" + (cert.empty() ? name : cert);
        std::vector<std::string> args{
            "--cluster-listen", "127.0.0.1:0",  "--cluster-cert", pair + ".crt", "--cluster-key",
            pair + ".key",      "--cluster-ca", ca_ + "/ca.crt",  "--threads",   "1"};
        if (model)
            args.insert(args.end(), {"--model", model_});
        if (!join.empty())
            args.insert(args.end(), {"--join", join});
        args.insert(args.end(), extra.begin(), extra.end());
        return std::make_unique<cluster_node>(
            name, args, "", dir_.file(name + "-" + std::to_string(++started_) + ".log"));
    }

private:
    scratch_dir dir_;
    std::string model_, ca_;
    int started_ = 0;
};

/// The roles `via` lists for `node` in GET /v1/cluster ("" when it lists none).
std::string roles_seen(const cluster_node& via, const std::string& node) {
    for (const auto& n : cluster_nodes_on(via.port()))
        if (n.at("name").as_string() == node && n.as_object().contains("roles"))
            return std::string(n.at("roles").as_string());
    return {};
}

} // namespace

TEST_CASE("cluster roles: a process whose certificate names another node cannot join under "
          "that name, even while that node is down, and is counted") {
    tls_nodes c;
    make_certs(c.ca(), "a:replica,router,admin b x");
    auto a = c.start("a", true);
    auto b = c.start("b", false, a->cluster_address());
    REQUIRE_MESSAGE(
        eventually([&] { return a->sees("b") == "up" && b->sees("a") == "up"; }), "a's log:\n"
                                                                                      << a->log());
    CHECK(roles_seen(*a, "b") == "replica,router"); // a certificate without roles
    CHECK(roles_seen(*b, "a") == "replica,router,admin");

    // x's holder, named c: its own server accepts the certificate only as a shared one.
    auto c_node = c.start("c", false, a->cluster_address(), {"--cluster-shared-certificate"}, "x");
    CHECK(eventually([&] { return a->refusals("proof") >= 1; }));
    CHECK(a->sees("c").empty());
    CHECK(b->sees("c").empty());
    CHECK(c_node->sees("a") != "up");
    c_node.reset();

    // b is gone: a name whose process is down is still not x's to take.
    b->kill_now();
    REQUIRE(eventually([&] { return a->sees("b") == "down"; }));
    const auto refusals = a->refusals("proof");
    auto impostor =
        c.start("b", false, a->cluster_address(), {"--cluster-shared-certificate"}, "x");
    CHECK(eventually([&] { return a->refusals("proof") > refusals; }));
    INFO("a's log:\n" << a->log());
    CHECK(a->refusals("name_taken") == 0); // refused for its proof, not as a second 'b'
    std::this_thread::sleep_for(std::chrono::seconds(1));
    CHECK(a->sees("b") == "down");
    CHECK(impostor->sees("a") != "up");
}

TEST_CASE("cluster roles: a replica-only peer cannot roll models or place requests, a router-only "
          "peer is sent no work, an admin peer rolls") {
    tls_nodes c;
    make_certs(c.ca(), "a:replica,router,admin rep:replica ro:router r:router adm:admin");
    auto a = c.start("a", true);
    auto ro = c.start("ro", true, a->cluster_address());
    auto r = c.start("r", false, a->cluster_address());
    // rep routes to peers despite lacking the router role (a test hook), so what a's own
    // checks do with its requests shows.
    auto rep = c.start("rep", false, a->cluster_address(), {"--test-hooks", "1"});
    auto adm = c.start("adm", false, a->cluster_address());
    const std::vector<const cluster_node*> peers{ro.get(), r.get(), rep.get(), adm.get()};
    REQUIRE_MESSAGE(eventually([&] {
                        for (const auto* p : peers)
                            if (a->sees(p->name()) != "up" || p->sees("a") != "up" ||
                                p->version_on("a", "tiny").empty())
                                return false;
                        return true;
                    }),
                    "a's log:\n"
                        << a->log());
    CHECK(roles_seen(*a, "rep") == "replica");
    CHECK(roles_seen(*a, "ro") == "router");
    CHECK(eventually([&] { return roles_seen(*r, "ro") == "router"; }));

    {
        // A router-only replica is sent no work. r has no model: every request it takes runs on a
        // replica elsewhere, a's never ro's. r's admission learns the replicas at its next tick
        // after the reports.
        const auto ask = [&] {
            return r->post("/v1/inference", R"({"model":"tiny","prompt":"Once","max_tokens":2})");
        };
        http_reply g;
        REQUIRE_MESSAGE(eventually([&] { return (g = ask()).status == 200; }), g.body);
        for (int i = 0; i < 6; ++i) {
            g = ask();
            CHECK_MESSAGE(g.status == 200, g.body);
        }
        // r's seven went to a (a retry under load may add one), none to ro: r took the output of
        // each (one stream batch or more) from a's replica, never any from ro.
        CHECK(eventually([&] { return r->streamed_from("a") >= 7; }));
        CHECK(r->streamed_from("ro") == 0);
    }

    if (!has_test_hooks(rep->get("/health"))) {
        MESSAGE("the server under test has no test hooks: the placement check is not reached");
    } else {
        // A replica-only peer's requests are refused by the replica, logged.
        // rep's admission learns the replicas at its next tick (404 until then).
        http_reply ids;
        (void)eventually([&] {
            ids = rep->post("/v1/inference", R"({"model":"tiny","prompt":[1,2,3],"max_tokens":2})");
            return ids.status != 404;
        });
        CHECK_MESSAGE(ids.status == 403, ids.body);
        CHECK(ids.body.find("router role") != std::string::npos);
        CHECK_MESSAGE(eventually([&] { return a->refusals("placement") >= 1; }), a->log());
        const auto text =
            rep->post("/v1/inference", R"({"model":"tiny","prompt":"Once","max_tokens":2})");
        CHECK_MESSAGE(text.status == 403, text.body);
        CHECK(rep->streamed_from("a") == 0); // none of rep's ran there
    }

    {
        // Only the admin role rolls models on peers. rep's unload (rep is admin_open) reaches a and
        // ro as orders from a non-admin.
        const auto del =
            http_request(rep->port(), boost::beast::http::verb::delete_, "/v1/models/tiny");
        REQUIRE_MESSAGE(del.status == 202, del.body);
        const auto op =
            ended_roll(*rep, std::string(parse_object(del.body).at("operation_id").as_string()));
        INFO("rep's roll: " << boost::json::serialize(op));
        REQUIRE_FALSE(op.empty());
        CHECK(op.at("state").as_string() == "failed");
        CHECK_MESSAGE(eventually([&] { return a->refusals("order") >= 1; }), a->log());
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        CHECK_FALSE(a->version_on("a", "tiny").empty());
        CHECK_FALSE(a->version_on("ro", "tiny").empty());

        // The same request from adm, whose certificate has the admin role, rolls both. A roll
        // covers the nodes its node knows to serve the alias: wait until adm sees both (beside a
        // CPU burner, ro's report once reached adm after the roll began: 1 of 20 rounds).
        REQUIRE_MESSAGE(eventually([&] {
                            return !adm->version_on("a", "tiny").empty() &&
                                   !adm->version_on("ro", "tiny").empty();
                        }),
                        adm->log());
        const auto un =
            http_request(adm->port(), boost::beast::http::verb::delete_, "/v1/models/tiny");
        REQUIRE_MESSAGE(un.status == 202, un.body);
        const auto done =
            ended_roll(*adm, std::string(parse_object(un.body).at("operation_id").as_string()));
        INFO("adm's roll: " << boost::json::serialize(done) << "\na's log:\n" << a->log());
        CHECK(done.at("state").as_string() == "done");
        CHECK(done.at("nodes").as_array().size() == 2);
        CHECK(eventually([&] {
            return a->version_on("a", "tiny").empty() && a->version_on("ro", "tiny").empty();
        }));
    }
}
