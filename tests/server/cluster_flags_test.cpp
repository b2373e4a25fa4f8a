// bitnet-server as a process: the cluster flags are validated before anything starts (no
// listener, no actor system), with the loader's message on stderr and exit code 2.
#include "server/server_process.hpp"

#include <string>

using namespace bitnet;

namespace {

/// Bounded: a server that wrongly starts fails the test with exit 124 instead of hanging it.
test::process_result run_server(const std::string& args) {
    return test::run_tool("bitnet-server", args, "", 60);
}

} // namespace

TEST_CASE("--cluster-insecure off loopback stops the server before it starts, saying why") {
    const auto r = run_server("--port 0 --cluster-listen 0.0.0.0:7000 --cluster-insecure");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--cluster-insecure sends peer traffic in the clear: only allowed when "
                     "--cluster-listen is a loopback address") != std::string::npos);
    CHECK(r.out.find("listening") == std::string::npos);
    CHECK(r.err.find("listening") == std::string::npos);
}

TEST_CASE("a cluster listener without TLS or --cluster-insecure is refused at start-up") {
    const auto r = run_server("--port 0 --cluster-listen 0.0.0.0:7000");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("'cluster_listen'") != std::string::npos);
    CHECK(r.err.find("need TLS") != std::string::npos);
}

TEST_CASE("--print-config shows the cluster keys set by flags") {
    const auto r = run_server("--port 0 --node-name node-a --cluster-listen 127.0.0.1:0 "
                              "--cluster-insecure --cluster-insecure-acknowledged "
                              "--join 127.0.0.1:7001,localhost:7002 "
                              "--print-config");
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const auto o = test::parse_object(r.out);
    CHECK(o.at("node_name").as_string() == "node-a");
    CHECK(o.at("cluster_listen").as_string() == "127.0.0.1:0");
    CHECK(o.at("cluster_insecure").as_int64() == 1);
    CHECK(o.at("cluster_insecure_acknowledged").as_int64() == 1);
    REQUIRE(o.at("cluster_join").as_array().size() == 2);
    CHECK(o.at("cluster_join").as_array()[1].as_string() == "localhost:7002");
    CHECK(o.at("cluster_heartbeat_ms").as_int64() == 250);
}
