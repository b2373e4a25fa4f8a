// The HTTPS keys of server_config (tls_cert, tls_key): the three layers, both-or-neither, and
// files that must be readable. Whether the files hold a certificate and its key is OpenSSL's
// question, asked by the executable at start-up (tests/server/https_test.cpp).
#include "conf/config_checks.hpp"
#include "conf/fake_env.hpp"
#include "conf/server_config.hpp"
#include "support/test_data.hpp"

#include <doctest/doctest.h>

namespace {

using bitnet::conf::config_sources;
using bitnet::conf::load_config;
using bitnet::test::fake_env;

/// Two readable stand-ins for the PEM files.
struct pem_files {
    bitnet::test::scratch_dir dir;
    std::string cert = dir.file("server.crt"), key = dir.file("server.key");
    pem_files() {
        for (const auto& p : {cert, key})
            bitnet::test::write_file(p, {'p', 'e', 'm'});
    }
};

using bitnet::test::error_of;
using bitnet::test::has;

} // namespace

TEST_CASE("tls keys: off by default, flags, environment and file set them, later layers win") {
    pem_files f;
    auto plain = load_config({});
    REQUIRE(plain.has_value());
    CHECK(plain->tls_cert.empty());
    CHECK(plain->tls_key.empty());

    auto by_flags = load_config({.args = {"--tls-cert", f.cert, "--tls-key", f.key}});
    REQUIRE_MESSAGE(by_flags.has_value(), by_flags.error().message);
    CHECK(by_flags->tls_cert == f.cert);
    CHECK(by_flags->tls_key == f.key);

    auto by_env =
        load_config({.env = fake_env({{"BITNET_TLS_CERT", f.cert}, {"BITNET_TLS_KEY", f.key}})});
    REQUIRE_MESSAGE(by_env.has_value(), by_env.error().message);
    CHECK(by_env->tls_cert == f.cert);

    const auto file = f.dir.file("c.json");
    const std::string json = R"({"tls_cert":")" + f.cert + R"(","tls_key":")" + f.key + R"("})";
    bitnet::test::write_file(file, std::vector<std::uint8_t>(json.begin(), json.end()));
    // The flag's key file wins over the file's (both readable).
    const auto other_key = f.dir.file("other.key");
    bitnet::test::write_file(other_key, {'k'});
    auto layered = load_config({.file = file, .args = {"--tls-key", other_key}});
    REQUIRE_MESSAGE(layered.has_value(), layered.error().message);
    CHECK(layered->tls_cert == f.cert);
    CHECK(layered->tls_key == other_key);
}

TEST_CASE("tls keys: one without the other is refused, naming the missing key") {
    pem_files f;
    const auto no_key = error_of({.args = {"--tls-cert", f.cert}});
    CHECK(has(no_key, "'tls_key'"));
    CHECK(has(no_key, "together"));
    const auto no_cert = error_of({.env = fake_env({{"BITNET_TLS_KEY", f.key}})});
    CHECK(has(no_cert, "'tls_cert'"));
}

TEST_CASE("tls keys: a file that cannot be read is refused with the path and the reason") {
    pem_files f;
    const auto missing = f.dir.file("absent.crt");
    const auto e1 = error_of({.args = {"--tls-cert", missing, "--tls-key", f.key}});
    CHECK(has(e1, "'tls_cert'"));
    CHECK(has(e1, missing));
    const auto e2 = error_of({.args = {"--tls-cert", f.cert, "--tls-key", f.dir.file("")}});
    CHECK(has(e2, "'tls_key'"));
    CHECK(has(e2, "directory"));
}
