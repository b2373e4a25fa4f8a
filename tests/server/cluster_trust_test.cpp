// Who may change what a cluster serves: nodes a and b serve "tiny" with an admin key; a rogue
// node r joins them (insecure mode: any local process can) with admin_open and no key. r's
// DELETE of the model reaches a and b only as orders without the admin key's proof: both refuse
// and log it, and keep serving. The same DELETE on a with the admin key rolls across a and b (b
// checks a's proof). Peers never learn a supervisor: there is nothing else to send orders to.
#include "server/cluster_process.hpp"

#include <memory>

using namespace bitnet;
using namespace bitnet::test;

namespace {

const std::string admin_key = "cluster-admin-key-1";

std::unique_ptr<cluster_node> start(scratch_dir& dir, const std::string& name, bool model,
                                    bool admin, const std::string& join, const std::string& gguf) {
    std::vector<std::string> args{"--cluster-listen",
                                  "127.0.0.1:0",
                                  "--cluster-insecure",
                                  "--cluster-insecure-acknowledged",
                                  "--cluster-failure-timeout-ms",
                                  "20000",
                                  "--threads",
                                  "1"};
    if (model)
        args.insert(args.end(), {"--model", gguf});
    if (admin)
        args.insert(args.end(), {"--admin-key", admin_key});
    if (!join.empty())
        args.insert(args.end(), {"--join", join});
    return std::make_unique<cluster_node>(name, args, "", dir.file(name + ".log"));
}

} // namespace

TEST_CASE("cluster trust: a peer without the admin key cannot unload a model on other nodes, "
          "the admin key's roll can") {
    scratch_dir dir;
    const auto gguf = dir.file("tiny.gguf");
    const auto made = run_tool("bitnet-model", "make --shape tiny --seed 1 -o " + gguf);
    REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    auto a = start(dir, "a", true, true, "", gguf);
    auto b = start(dir, "b", true, true, a->cluster_address(), gguf);
    auto r = start(dir, "r", false, false, a->cluster_address(), gguf);
    const auto version = [&](const cluster_node& via, const std::string& node) {
        return via.version_on(node, "tiny");
    };
    REQUIRE_MESSAGE(eventually([&] {
                        return !version(*r, "a").empty() && !version(*r, "b").empty() &&
                               a->sees("r") == "up" && b->sees("r") == "up";
                    }),
                    "r's log:\n"
                        << r->log());

    // The rogue's unload: r itself allows it (admin_open), a and b do not.
    const auto del = http_request(r->port(), boost::beast::http::verb::delete_, "/v1/models/tiny");
    REQUIRE_MESSAGE(del.status == 202, del.body);
    const auto op =
        ended_roll(*r, std::string(parse_object(del.body).at("operation_id").as_string()));
    INFO("roll: " << boost::json::serialize(op));
    REQUIRE_FALSE(op.empty());
    CHECK(op.at("state").as_string() == "failed");
    CHECK(std::string(op.at("failure").as_string()).find("admin key") != std::string::npos);
    CHECK_MESSAGE(eventually([&] { return a->refusals("order") >= 1; }), a->log());
    // Both still serve it.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK_FALSE(version(*a, "a").empty());
    CHECK_FALSE(version(*a, "b").empty());
    CHECK(a->post("/v1/inference", R"({"model":"tiny","prompt":"hi","max_tokens":2})").status ==
          200);

    // The operator's unload on a, with the admin key: a runs it and b accepts a's proven order.
    const auto un = http_request(a->port(), boost::beast::http::verb::delete_, "/v1/models/tiny",
                                 {}, admin_key);
    REQUIRE_MESSAGE(un.status == 202, un.body);
    const auto gone =
        ended_roll(*a, std::string(parse_object(un.body).at("operation_id").as_string()));
    INFO("operator's roll: " << boost::json::serialize(gone) << "\nb's log:\n" << b->log());
    CHECK(gone.at("state").as_string() == "done");
    CHECK(eventually([&] { return version(*a, "a").empty() && version(*a, "b").empty(); }));
}

TEST_CASE("cluster trust: a second process claiming a member's name is not let in while the "
          "member is up") {
    scratch_dir dir;
    const auto gguf = dir.file("tiny.gguf");
    const auto made = run_tool("bitnet-model", "make --shape tiny --seed 1 -o " + gguf);
    REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    auto a = start(dir, "a", false, false, "", gguf);
    auto b = start(dir, "b", false, false, a->cluster_address(), gguf);
    REQUIRE(eventually([&] { return a->sees("b") == "up" && b->sees("a") == "up"; }));
    const auto address_of_b = [&] {
        for (const auto& n : cluster_nodes_on(a->port()))
            if (n.at("name").as_string() == "b")
                return std::string(n.at("address").as_string());
        return std::string();
    };
    REQUIRE(address_of_b() == b->cluster_address());
    // Another process named b joins a.
    auto impostor = std::make_unique<cluster_node>(
        "b",
        std::vector<std::string>{"--cluster-listen", "127.0.0.1:0", "--cluster-insecure",
                                 "--cluster-insecure-acknowledged", "--threads", "1", "--join",
                                 a->cluster_address()},
        "", dir.file("impostor.log"));
    CHECK_MESSAGE(eventually([&] { return a->refusals("name_taken") >= 1; }), a->log());
    std::this_thread::sleep_for(std::chrono::seconds(1));
    CHECK(a->sees("b") == "up");
    CHECK(address_of_b() == b->cluster_address());
    CHECK(impostor->sees("a") != "up");
}
