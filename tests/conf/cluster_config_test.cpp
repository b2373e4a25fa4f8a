// The cluster keys of server_config: forms, layering, and the rules that keep peer links either
// mutual TLS or explicitly plaintext on loopback.
#include "conf/config_checks.hpp"
#include "conf/fake_env.hpp"
#include "conf/server_config.hpp"
#include "support/test_data.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <map>

namespace {

using bitnet::conf::config_sources;
using bitnet::conf::load_config;
using bitnet::conf::server_config;

using bitnet::test::fake_env;

using bitnet::test::error_of;
using bitnet::test::has;

/// Stand-ins for the PEM files: the loader only checks that they can be read (the TLS layer
/// parses them when the cluster starts).
struct tls_files {
    bitnet::test::scratch_dir dir;
    std::string cert = dir.file("node.crt"), key = dir.file("node.key"), ca = dir.file("ca.crt");
    tls_files() {
        for (const auto& p : {cert, key, ca})
            bitnet::test::write_file(p, {'p', 'e', 'm'});
    }
    std::vector<std::string> flags() const {
        return {"--cluster-cert", cert, "--cluster-key", key, "--cluster-ca", ca};
    }
};

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

} // namespace

TEST_CASE("cluster keys are off by default and the defaults validate") {
    const server_config d;
    CHECK(d.cluster_listen.empty());
    CHECK(d.cluster_join.empty());
    CHECK(d.node_name.empty());
    CHECK(d.cluster_insecure == 0);
    CHECK(d.cluster_failure_timeout_ms == 3000);
    CHECK(d.cluster_heartbeat_ms == 250);
    CHECK(bitnet::conf::validate(d).has_value());
}

TEST_CASE("a TLS cluster from flags: every key set, --join is --cluster-join") {
    tls_files tls;
    auto r = load_config(
        {.args = std::vector<std::string>{"--node-name", "node-1", "--cluster-listen",
                                          "0.0.0.0:7070", "--join", "a.peers:7070,[fd00::2]:7071",
                                          "--cluster-failure-timeout-ms", "1000",
                                          "--cluster-heartbeat-ms", "100"} +
                 tls.flags()});
    REQUIRE(r.has_value());
    CHECK(r->node_name == "node-1");
    CHECK(r->cluster_listen == "0.0.0.0:7070");
    CHECK(r->cluster_join == std::vector<std::string>{"a.peers:7070", "[fd00::2]:7071"});
    CHECK(r->cluster_cert == tls.cert);
    CHECK(r->cluster_key == tls.key);
    CHECK(r->cluster_ca == tls.ca);
    CHECK(r->cluster_insecure == 0);
    CHECK(r->cluster_failure_timeout_ms == 1000);
    CHECK(r->cluster_heartbeat_ms == 100);
    const auto json = bitnet::conf::to_json(*r);
    CHECK(has(json, R"("cluster_join":["a.peers:7070","[fd00::2]:7071"])"));
    CHECK(has(json, R"("cluster_listen":"0.0.0.0:7070")"));
    CHECK(has(json, R"("node_name":"node-1")"));
    // What --print-config prints loads back as a file to the same configuration.
    bitnet::test::scratch_dir dir;
    const auto path = dir.file("printed.json");
    bitnet::test::write_file(path, {json.begin(), json.end()});
    auto back = load_config({.file = path});
    REQUIRE(back.has_value());
    CHECK(bitnet::conf::to_json(*back) == json);
}

TEST_CASE("cluster keys layer file < environment < flags") {
    tls_files tls;
    bitnet::test::scratch_dir dir;
    const auto file = dir.file("server.json");
    const std::string text = R"({"node_name": "from-file", "cluster_listen": "127.0.0.1:7000",
        "cluster_join": ["127.0.0.1:7001", "localhost:7002"], "cluster_insecure": 1,
        "cluster_insecure_acknowledged": 1, "cluster_failure_timeout_ms": 5000})";
    bitnet::test::write_file(file, {text.begin(), text.end()});

    auto from_file = load_config({.file = file});
    REQUIRE(from_file.has_value());
    CHECK(from_file->node_name == "from-file");
    CHECK(from_file->cluster_join == std::vector<std::string>{"127.0.0.1:7001", "localhost:7002"});
    CHECK(from_file->cluster_insecure == 1);
    CHECK(from_file->cluster_failure_timeout_ms == 5000);

    auto env = fake_env({{"BITNET_NODE_NAME", "from-env"},
                         {"BITNET_CLUSTER_JOIN", "127.0.0.1:8001,127.0.0.2:8002"},
                         {"BITNET_CLUSTER_HEARTBEAT_MS", "400"},
                         {"BITNET_CLUSTER_LISTEN", "127.0.0.1:8000"}});
    auto from_env = load_config({.file = file, .env = env});
    REQUIRE(from_env.has_value());
    CHECK(from_env->node_name == "from-env");
    CHECK(from_env->cluster_listen == "127.0.0.1:8000");
    CHECK(from_env->cluster_join == std::vector<std::string>{"127.0.0.1:8001", "127.0.0.2:8002"});
    CHECK(from_env->cluster_heartbeat_ms == 400);
    CHECK(from_env->cluster_failure_timeout_ms == 5000); // file beats default

    // Flags beat the environment; --cluster-insecure 0 plus the TLS files turns the links to TLS.
    auto from_flags =
        load_config({.file = file,
                     .env = env,
                     .args = std::vector<std::string>{"--node-name=from-flag", "--join",
                                                      "[::1]:9001", "--cluster-insecure", "0"} +
                             tls.flags()});
    REQUIRE(from_flags.has_value());
    CHECK(from_flags->node_name == "from-flag");
    CHECK(from_flags->cluster_join == std::vector<std::string>{"[::1]:9001"});
    CHECK(from_flags->cluster_insecure == 0);
    CHECK(from_flags->cluster_cert == tls.cert);

    // The TLS files from the environment too.
    auto tls_env = load_config({.env = fake_env({{"BITNET_CLUSTER_LISTEN", "0.0.0.0:7070"},
                                                 {"BITNET_CLUSTER_CERT", tls.cert},
                                                 {"BITNET_CLUSTER_KEY", tls.key},
                                                 {"BITNET_CLUSTER_CA", tls.ca}})});
    REQUIRE(tls_env.has_value());
    CHECK(tls_env->cluster_ca == tls.ca);
}

TEST_CASE("--cluster-insecure alone means 1, and a following 0 or 1 is its value") {
    const std::string ack = "--cluster-insecure-acknowledged";
    auto alone =
        load_config({.args = {"--cluster-listen", "127.0.0.1:0", "--cluster-insecure", ack}});
    REQUIRE(alone.has_value());
    CHECK(alone->cluster_insecure == 1);
    auto before_flag = load_config(
        {.args = {"--cluster-insecure", ack, "--cluster-listen", "127.0.0.1:0", "--port", "9000"}});
    REQUIRE(before_flag.has_value());
    CHECK(before_flag->cluster_insecure == 1);
    CHECK(before_flag->port == 9000);
    auto one =
        load_config({.args = {"--cluster-insecure", "1", "--cluster-listen", "[::1]:0", ack, "1"}});
    REQUIRE(one.has_value());
    CHECK(one->cluster_insecure == 1);
    auto eq =
        load_config({.args = {"--cluster-insecure=1", "--cluster-listen", "localhost:7", ack}});
    REQUIRE(eq.has_value());
    CHECK(eq->cluster_insecure == 1);
    // The environment takes the 0/1 form only.
    auto msg = error_of({.env = fake_env({{"BITNET_CLUSTER_INSECURE", "yes"}})});
    CHECK(has(msg, "'cluster_insecure'"));
    CHECK(has(msg, "BITNET_CLUSTER_INSECURE"));
    msg = error_of({.args = {"--cluster-insecure", "2"}});
    CHECK(has(msg, "unexpected argument '2'"));
}

TEST_CASE("malformed values name the key and where they came from") {
    auto msg = error_of({.args = {"--node-name", "bad name"}});
    CHECK(has(msg, "'node_name'"));
    CHECK(has(msg, "--node-name"));
    CHECK(has(msg, "1..64"));
    msg = error_of({.env = fake_env({{"BITNET_NODE_NAME", std::string(65, 'n')}})});
    CHECK(has(msg, "'node_name'"));
    CHECK(has(msg, "BITNET_NODE_NAME"));

    msg = error_of({.args = {"--cluster-listen", "::1:7070"}});
    CHECK(has(msg, "'cluster_listen'"));
    CHECK(has(msg, "--cluster-listen"));
    CHECK(has(msg, "brackets"));
    msg = error_of({.env = fake_env({{"BITNET_CLUSTER_LISTEN", "host:99999"}})});
    CHECK(has(msg, "'cluster_listen'"));
    CHECK(has(msg, "BITNET_CLUSTER_LISTEN"));

    msg = error_of({.args = {"--join", "ok:7070,no-port"}});
    CHECK(has(msg, "'cluster_join'"));
    CHECK(has(msg, "--cluster-join"));
    CHECK(has(msg, "'no-port'"));
    msg = error_of({.args = {"--join", "peer:0"}});
    CHECK(has(msg, "'cluster_join'"));
    CHECK(has(msg, "port 0"));

    bitnet::test::scratch_dir dir;
    const auto file = dir.file("server.json");
    for (const auto& [text, want] : std::vector<std::pair<std::string, std::string>>{
             {R"({"cluster_join": "a:1"})", "array of strings"},
             {R"({"cluster_join": ["a:1", 7]})", "array of strings"},
             {R"({"cluster_join": ["a:1", "b"]})", "'b'"},
             {R"({"cluster_listen": 7070})", "expected a string"},
             {R"({"node_name": "x/y"})", "1..64"}}) {
        INFO(text);
        bitnet::test::write_file(file, {text.begin(), text.end()});
        msg = error_of({.file = file});
        CHECK(has(msg, "server.json"));
        CHECK(has(msg, want));
    }
}

TEST_CASE("failure timeout and heartbeat: ranges, and the heartbeat below half the timeout") {
    auto msg = error_of({.args = {"--cluster-failure-timeout-ms", "299"}});
    CHECK(has(msg, "'cluster_failure_timeout_ms'"));
    CHECK(has(msg, "300..600000"));
    msg = error_of({.args = {"--cluster-failure-timeout-ms", "600001"}});
    CHECK(has(msg, "300..600000"));
    msg = error_of({.args = {"--cluster-heartbeat-ms", "49"}});
    CHECK(has(msg, "'cluster_heartbeat_ms'"));
    CHECK(has(msg, "50..10000"));
    msg = error_of({.args = {"--cluster-heartbeat-ms", "10001"}});
    CHECK(has(msg, "50..10000"));
    // 2 x 500 = 1000 is not below 1000; 499 is.
    msg = error_of(
        {.args = {"--cluster-failure-timeout-ms", "1000", "--cluster-heartbeat-ms", "500"}});
    CHECK(has(msg, "'cluster_heartbeat_ms'"));
    CHECK(has(msg, "half of cluster_failure_timeout_ms (1000)"));
    CHECK(load_config(
              {.args = {"--cluster-failure-timeout-ms", "1000", "--cluster-heartbeat-ms", "499"}})
              .has_value());
}

TEST_CASE("cluster settings without cluster_listen are refused, not ignored") {
    tls_files tls;
    auto msg = error_of({.args = {"--join", "peer:7070"}});
    CHECK(has(msg, "'cluster_join'"));
    CHECK(has(msg, "needs cluster_listen"));
    msg = error_of({.args = {"--cluster-insecure"}});
    CHECK(has(msg, "'cluster_insecure'"));
    CHECK(has(msg, "cluster_listen is empty"));
    msg = error_of({.args = tls.flags()});
    CHECK(has(msg, "'cluster_cert'"));
    CHECK(has(msg, "cluster_listen is empty"));
    // node_name alone is harmless (it names the node in logs even without peers).
    CHECK(load_config({.args = {"--node-name", "solo"}}).has_value());
}

TEST_CASE("peer links are TLS or explicitly plaintext on loopback, never plaintext by default") {
    tls_files tls;
    // No TLS and no --cluster-insecure: refused, whatever the address.
    for (const char* listen : {"0.0.0.0:7070", "127.0.0.1:7070"}) {
        auto msg = error_of({.args = {"--cluster-listen", listen}});
        CHECK(has(msg, "'cluster_listen'"));
        CHECK(has(msg, "need TLS"));
        CHECK(has(msg, "--cluster-insecure"));
    }
    std::string msg;
    // Plaintext off loopback: refused, saying why.
    for (const char* listen : {"0.0.0.0:7000", "10.1.2.3:7000", "[::]:7000", "node-1:7000"}) {
        INFO(listen);
        msg = error_of({.args = {"--cluster-listen", listen, "--cluster-insecure"}});
        CHECK(has(msg, "'cluster_insecure'"));
        CHECK(has(msg, "--cluster-insecure sends peer traffic in the clear: only allowed when "
                       "--cluster-listen is a loopback address"));
    }
    // Plaintext on loopback, joining loopback peers: allowed.
    for (const char* listen : {"127.0.0.1:0", "127.9.9.9:7000", "[::1]:7000", "localhost:7000"}) {
        INFO(listen);
        CHECK(load_config({.args = {"--cluster-listen", listen, "--cluster-insecure",
                                    "--cluster-insecure-acknowledged", "--join",
                                    "127.0.0.1:7001,[::1]:7002,localhost:7003"}})
                  .has_value());
    }
    // ... and only acknowledged: any local process can join such a cluster as a peer.
    msg = error_of({.args = {"--cluster-listen", "127.0.0.1:7000", "--cluster-insecure"}});
    CHECK(has(msg, "'cluster_insecure'"));
    CHECK(has(msg, "any process on this machine"));
    CHECK(has(msg, "--cluster-insecure-acknowledged"));
    // ... but not joining a peer elsewhere (that link would leave the machine in the clear).
    msg = error_of({.args = {"--cluster-listen", "127.0.0.1:7000", "--cluster-insecure", "--join",
                             "127.0.0.1:7001,10.0.0.2:7000"}});
    CHECK(has(msg, "'cluster_join'"));
    CHECK(has(msg, "'10.0.0.2:7000' is not a loopback address"));
    // Both TLS and plaintext: ambiguous.
    msg = error_of({.args = std::vector<std::string>{"--cluster-listen", "127.0.0.1:7000",
                                                     "--cluster-insecure"} +
                            tls.flags()});
    CHECK(has(msg, "'cluster_insecure'"));
    CHECK(has(msg, "not both"));
    // TLS on any address: allowed.
    CHECK(load_config(
              {.args = std::vector<std::string>{"--cluster-listen", "0.0.0.0:7070"} + tls.flags()})
              .has_value());
}

TEST_CASE("cluster roles: declared only in insecure mode, from a known list, and a shared "
          "certificate only over TLS") {
    tls_files tls;
    const std::vector<std::string> insecure{"--cluster-listen", "127.0.0.1:7000",
                                            "--cluster-insecure",
                                            "--cluster-insecure-acknowledged"};
    auto ok = load_config(
        {.args = insecure + std::vector<std::string>{"--cluster-roles", "router,replica"}});
    REQUIRE(ok.has_value());
    CHECK(ok->cluster_roles == "router,replica");
    auto msg = error_of({.args = insecure + std::vector<std::string>{"--cluster-roles", "root"}});
    CHECK(has(msg, "'cluster_roles'"));
    CHECK(has(msg, "'root' is not a cluster role"));
    // Over TLS the certificate says, not the node.
    msg = error_of({.args = std::vector<std::string>{"--cluster-listen", "0.0.0.0:7070",
                                                     "--cluster-roles", "admin"} +
                            tls.flags()});
    CHECK(has(msg, "'cluster_roles'"));
    CHECK(has(msg, "come from its certificate"));
    // A shared certificate: a TLS matter (the flag alone means 1).
    auto shared = load_config({.args = std::vector<std::string>{"--cluster-listen", "0.0.0.0:7070",
                                                                "--cluster-shared-certificate"} +
                                       tls.flags()});
    REQUIRE(shared.has_value());
    CHECK(shared->cluster_shared_certificate == 1);
    msg = error_of({.args = insecure + std::vector<std::string>{"--cluster-shared-certificate"}});
    CHECK(has(msg, "'cluster_shared_certificate'"));
}

TEST_CASE("TLS files: all three or none, each readable") {
    tls_files tls;
    const std::vector<std::string> listen{"--cluster-listen", "0.0.0.0:7070"};
    // Any one missing is named.
    struct partial {
        std::vector<std::string> flags;
        std::string missing;
    };
    for (const auto& p :
         {partial{{"--cluster-cert", tls.cert, "--cluster-key", tls.key}, "'cluster_ca'"},
          partial{{"--cluster-cert", tls.cert, "--cluster-ca", tls.ca}, "'cluster_key'"},
          partial{{"--cluster-key", tls.key, "--cluster-ca", tls.ca}, "'cluster_cert'"},
          partial{{"--cluster-ca", tls.ca}, "'cluster_cert'"}}) {
        INFO(p.missing);
        auto msg = error_of({.args = listen + p.flags});
        CHECK(has(msg, p.missing));
        CHECK(has(msg, "together"));
    }
    // A path that cannot be read is named with the reason.
    const auto missing = tls.dir.file("absent.key");
    auto msg = error_of(
        {.args = listen + std::vector<std::string>{"--cluster-cert", tls.cert, "--cluster-key",
                                                   missing, "--cluster-ca", tls.ca}});
    CHECK(has(msg, "'cluster_key'"));
    CHECK(has(msg, "cannot read '" + missing + "'"));
    const auto folder = tls.dir.file("certs");
    std::filesystem::create_directory(folder);
    msg = error_of(
        {.args = listen + std::vector<std::string>{"--cluster-cert", tls.cert, "--cluster-key",
                                                   tls.key, "--cluster-ca", folder}});
    CHECK(has(msg, "'cluster_ca'"));
    CHECK(has(msg, "is a directory"));
}

TEST_CASE("usage lists the cluster flags with their environment names") {
    const auto u = bitnet::conf::usage();
    for (const char* s :
         {"--node-name", "BITNET_NODE_NAME", "--cluster-listen", "BITNET_CLUSTER_LISTEN",
          "--cluster-join", "BITNET_CLUSTER_JOIN", "--join", "--cluster-cert", "--cluster-key",
          "--cluster-ca", "--cluster-insecure", "BITNET_CLUSTER_INSECURE",
          "--cluster-insecure-acknowledged", "--cluster-failure-timeout-ms",
          "--cluster-heartbeat-ms"})
        CHECK_MESSAGE(has(u, s), s);
}
