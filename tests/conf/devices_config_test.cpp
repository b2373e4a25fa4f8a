// The `devices` key: its default, its three layers (file, BITNET_DEVICES, --devices), and a clear
// refusal of any name that is not a placement, naming the key, the value and where it came from.
#include "conf/config_checks.hpp"
#include "conf/fake_env.hpp"
#include "conf/server_config.hpp"

#include <doctest/doctest.h>

using namespace bitnet::conf;
using bitnet::test::error_of;
using bitnet::test::fake_env;
using bitnet::test::has;

TEST_CASE("devices defaults to auto and takes a comma list from the flag and the environment") {
    auto d = load_config({});
    REQUIRE(d.has_value());
    CHECK(d->devices == std::vector<std::string>{"auto"});

    auto flag = load_config({.args = {"--devices", "cuda:1,cuda:0,cpu"}});
    REQUIRE(flag.has_value());
    CHECK(flag->devices == std::vector<std::string>{"cuda:1", "cuda:0", "cpu"});

    auto env = load_config({.env = fake_env({{"BITNET_DEVICES", "sim:0,cuda"}})});
    REQUIRE(env.has_value());
    CHECK(env->devices == std::vector<std::string>{"sim:0", "cuda"});

    // Flags win over the environment, as for every key.
    auto both =
        load_config({.env = fake_env({{"BITNET_DEVICES", "cuda:0"}}), .args = {"--devices=cpu"}});
    REQUIRE(both.has_value());
    CHECK(both->devices == std::vector<std::string>{"cpu"});
}

TEST_CASE("devices from the file is a JSON array of placement names") {
    server_config cfg;
    REQUIRE(apply_json(cfg, R"({"devices":["cuda:2","auto"]})", "test.json").has_value());
    CHECK(cfg.devices == std::vector<std::string>{"cuda:2", "auto"});
    auto bad = apply_json(cfg, R"({"devices":["cuda:0","gpu0"]})", "test.json");
    REQUIRE_FALSE(bad.has_value());
    CHECK(has(bad.error().message, "devices"));
    CHECK(has(bad.error().message, "test.json"));
    CHECK(has(bad.error().message, "'gpu0'"));
    CHECK_FALSE(apply_json(cfg, R"({"devices":"cpu"})", "test.json").has_value());
}

TEST_CASE("a device name that is not a placement is refused with the name and its origin") {
    for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:64", "cuda:007", "sim",
                            "CPU", "cuda:0:1", "tpu:0"}) {
        INFO(bad);
        const auto msg = error_of({.args = {"--devices", std::string("cpu,") + bad}});
        CHECK(has(msg, "devices"));
        CHECK(has(msg, "--devices"));
        CHECK(has(msg, std::string("'") + bad + "'"));
    }
    const auto env_msg = error_of({.env = fake_env({{"BITNET_DEVICES", "cuda:99"}})});
    CHECK(has(env_msg, "BITNET_DEVICES"));
    CHECK(has(env_msg, "0..63"));
    // Nothing named at all: there must be somewhere to run (the default is auto).
    const auto empty = error_of({.args = {"--devices", ","}});
    CHECK(has(empty, "devices"));
    CHECK(has(empty, "at least one"));
}

TEST_CASE("every placement name the engine knows is accepted") {
    for (const char* ok : {"auto", "cpu", "cuda", "cuda:0", "cuda:63", "sim:0", "sim:12"}) {
        INFO(ok);
        auto r = load_config({.args = {"--devices", ok}});
        REQUIRE(r.has_value());
        CHECK(r->devices == std::vector<std::string>{ok});
    }
}
