// Whether the test hooks are in the key table and the route table of a build, without building a
// whole release server: tests/CMakeLists.txt compiles this with conf/'s sources and
// http/routes/routes.cpp twice, once without BITNET_TEST_HOOKS (as the release preset compiles
// them) and once with it (as the dev and asan presets do, so the probe is not vacuous).
// bitnet-server's --help prints conf::usage() and its --print-config prints conf::to_json() of the
// loaded configuration (tools/server/bitnet_server.cpp), so what is checked here is what those
// print; the crash route is the route table's.
//
// usage: test_hooks_probe absent|present
// exit:  0 when the build has the hooks as expected, 1 with one line per mismatch.
#include "conf/server_config.hpp"
#include "http/routes/routes.hpp"

#include <cstdio>
#include <string>
#include <string_view>

namespace {

int mismatches = 0;

void expect(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "FAIL: %s\n", what.c_str());
        ++mismatches;
    }
}

bool mentions(const std::string& text, std::string_view word) {
    return text.find(word) != std::string::npos;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2 ||
        (std::string_view(argv[1]) != "absent" && std::string_view(argv[1]) != "present")) {
        std::fprintf(stderr, "usage: test_hooks_probe absent|present\n");
        return 2;
    }
    const bool present = std::string_view(argv[1]) == "present";
    const std::string help = bitnet::conf::usage();
    const std::string printed = bitnet::conf::to_json(bitnet::conf::server_config{});
    const std::string build = present ? "a build with BITNET_TEST_HOOKS" : "a build without it";

    // The two keys as --help names them (flag, environment variable) and as --print-config does.
    for (std::string_view w : {"--test-hooks", "BITNET_TEST_HOOKS", "--test-tool-call-opener-bias",
                               "BITNET_TEST_TOOL_CALL_OPENER_BIAS", "test hook"})
        expect(mentions(help, w) == present, "--help " +
                                                 std::string(present ? "lacks " : "lists ") +
                                                 std::string(w) + " in " + build);
    for (std::string_view w : {"\"test_hooks\"", "\"test_tool_call_opener_bias\""})
        expect(mentions(printed, w) == present, "--print-config " +
                                                    std::string(present ? "lacks " : "lists ") +
                                                    std::string(w) + " in " + build);
    // Without the hooks, no spelling of either at all.
    if (!present)
        for (std::string_view w : {"test_hooks", "test-hooks", "TEST_HOOKS", "test_tool_call",
                                   "test-tool-call", "TEST_TOOL_CALL", "/crash"})
            expect(!mentions(help, w) && !mentions(printed, w),
                   "--help or --print-config mentions " + std::string(w) + " in " + build);

    // The crash route, even with the runtime switch on.
    const bool route = bitnet::http::match_route("POST", "/v1/models/m/crash", true).path_known;
    expect(route == present, "the route table " + std::string(present ? "lacks" : "has") +
                                 " POST /v1/models/{alias}/crash in " + build);

    // A config file written for a test build (or an operator's older file) loads in both; the
    // flags are the test build's only.
    bitnet::conf::server_config cfg;
    const auto file = bitnet::conf::apply_json(
        cfg, R"({"test_hooks": 0, "test_tool_call_opener_bias": 0})", "probe.json");
    expect(file.has_value(), "a file with the test keys at 0 does not load in " + build + ": " +
                                 (file ? std::string() : file.error().message));
    const auto flag = bitnet::conf::load_config({.args = {"--test-hooks", "1"}});
    expect(flag.has_value() == present, "--test-hooks 1 " +
                                            std::string(present ? "is refused" : "is accepted") +
                                            " in " + build);

    if (mismatches == 0)
        std::printf("test hooks %s as expected in %s (--help, --print-config, the route table)\n",
                    present ? "present" : "absent", build.c_str());
    return mismatches == 0 ? 0 : 1;
}
