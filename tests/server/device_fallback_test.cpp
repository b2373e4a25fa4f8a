// The issue's acceptance test for devices (issue 16, "Done when"): the real bitnet-server, told
// to run its model on a CUDA placement that cannot load, logs the fallback and serves on the
// CPU; /health, /v1/models/{alias} and /metrics say which device serves and why.
//
// cuda:63 is the placement forced to fail on every machine: on one without a GPU (or without a
// CUDA build) no CUDA placement loads, and on one with GPUs no machine has 64 of them, so the
// index is past the runtime's device count. The literal `--devices cuda:0` of the issue is tested
// too, with its fallback asserted where /health reports no CUDA device (else it must serve).
#include "server/model_admin.hpp"
#include "server/server_process.hpp"

#include <fstream>

using namespace bitnet;

namespace {

/// The value of the bitnet_device_fallbacks_total series from `from` to `to` for `alias`,
/// whatever its reason label (which names the machine's failure: not_built, no_device, ...).
double fallbacks_in(const std::string& metrics, const std::string& alias, const std::string& from,
                    const std::string& to, std::string* reason = nullptr) {
    std::size_t at = 0;
    while ((at = metrics.find("\nbitnet_device_fallbacks_total{", at)) != std::string::npos) {
        const auto end = metrics.find('\n', at + 1);
        const auto line = metrics.substr(at + 1, end - at - 1);
        at = end;
        if (line.find("alias=\"" + alias + "\"") == std::string::npos ||
            line.find("from=\"" + from + "\"") == std::string::npos ||
            line.find("to=\"" + to + "\"") == std::string::npos)
            continue;
        if (reason) {
            const auto r = line.find("reason=\"") + 8;
            *reason = line.substr(r, line.find('"', r) - r);
        }
        return std::stod(line.substr(line.rfind(' ') + 1));
    }
    return 0.0;
}

/// /health's entry for `alias`.
boost::json::object health_model(const test::server_process& s, const std::string& alias) {
    const auto h = test::parse_object(s.get("/health").body);
    for (const auto& m : h.at("components").as_object().at("models").as_array())
        if (m.as_object().at("alias").as_string() == alias)
            return m.as_object();
    FAIL("no model " << alias << " in /health");
    return {};
}

/// The checks of a version that fell back from `from` to the CPU and serves there.
void check_served_on_cpu_after(const test::server_process& s, const std::string& from) {
    // It serves: completions come back with tokens.
    for (int i = 0; i < 3; ++i) {
        auto r = s.post("/v1/completions", test::greedy("tiny", "Hello " + std::to_string(i), 6));
        REQUIRE_MESSAGE(r.status == 200, r.body);
        const auto usage = test::parse_object(r.body).at("usage").as_object();
        CHECK(usage.at("completion_tokens").as_int64() >= 1);
    }
    // /health: the model on the CPU, with the fallback's reason naming the placement.
    const auto hm = health_model(s, "tiny");
    CHECK(hm.at("state").as_string() == "ready");
    CHECK(hm.at("device").as_string() == "cpu");
    const std::string reason(hm.at("device_reason").as_string());
    CHECK(reason.rfind("fallback from " + from + ": ", 0) == 0);
    CHECK(reason.size() > ("fallback from " + from + ": ").size()); // and the device's why
    CHECK(hm.at("device_fallbacks").as_int64() == 1);
    // /v1/models/{alias} says the same.
    const auto m = test::model(s, "tiny");
    CHECK(m.at("device").as_string() == "cpu");
    CHECK(m.at("device_reason").as_string() == reason);
    CHECK(m.at("device_fallbacks").as_int64() == 1);
    // /metrics counts it once.
    std::string label;
    CHECK(fallbacks_in(s.get("/metrics").body, "tiny", from, "cpu", &label) == 1.0);
    CHECK(!label.empty());
    // The log says so: the placement that failed, the move, and where the model serves.
    const auto log = s.log();
    CHECK(test::count_of(log, from + " cannot serve it") == 1);
    CHECK(test::count_of(log, "starting it on cpu") == 1);
    CHECK(test::count_of(log, " on cpu (fallback from " + from + ": ") == 1);
}

} // namespace

TEST_CASE("--devices cuda:63: the placement cannot load anywhere, the CPU serves, and says why") {
    test::server_process s({"--devices", "cuda:63"});
    const auto h = test::parse_object(s.get("/health").body);
    const auto& devices = h.at("devices").as_object();
    boost::json::array expected{"cuda:63", "cpu"};
    CHECK(devices.at("placements").as_array() == expected);
    CHECK(devices.at("cuda").as_object().contains("built"));
    check_served_on_cpu_after(s, "cuda:63");
}

TEST_CASE("--devices cuda:0 on a machine without a usable GPU logs the fallback, serves on cpu") {
    test::server_process s({"--devices", "cuda:0"});
    const auto h = test::parse_object(s.get("/health").body);
    const auto& cuda = h.at("devices").as_object().at("cuda").as_object();
    if (!cuda.at("devices").as_array().empty()) {
        // A GPU machine: cuda:0 may well serve; the forced failure is the cuda:63 test's.
        MESSAGE("this machine has a CUDA device: only checking that the model serves");
        CHECK(s.post("/v1/completions", test::greedy("tiny", "Hello", 4)).status == 200);
        return;
    }
    // Why there is none, in the runtime's words, at start-up and in /health.
    CHECK(!cuda.at("error").as_string().empty());
    CHECK(s.log().find("no CUDA devices: " + std::string(cuda.at("error").as_string())) !=
          std::string::npos);
    check_served_on_cpu_after(s, "cuda:0");
}

TEST_CASE("the load API takes a placement per version and refuses a name that is not one") {
    test::server_process s({"--devices", "cpu"});
    CHECK(health_model(s, "tiny").at("device_fallbacks").as_int64() == 0);
    CHECK(health_model(s, "tiny").at("device").as_string() == "cpu");
    CHECK(fallbacks_in(s.get("/metrics").body, "tiny", "cuda:63", "cpu") == 0.0);
    auto bad =
        s.post("/v1/models/load", test::load_body("tiny", s.model_path(), R"(,"device":"gpu0")"));
    CHECK(bad.status == 400);
    const auto err = test::parse_object(bad.body).at("error").as_object();
    CHECK(err.at("param").as_string() == "device");
    CHECK(std::string(err.at("message").as_string()).find("'gpu0'") != std::string::npos);

    // A version loaded onto cuda:63 falls back to the CPU like a start-up one.
    test::scratch_dir dir;
    const auto b = test::make_model(dir, "b.gguf", "--seed 2");
    const auto op = test::load_and_wait(s, "tiny", b, R"(,"device":"cuda:63")");
    REQUIRE_MESSAGE(op.at("state").as_string() == "ready", s.log());
    const auto m = test::model(s, "tiny");
    CHECK(m.at("device").as_string() == "cpu");
    CHECK(std::string(m.at("device_reason").as_string()).rfind("fallback from cuda:63: ", 0) == 0);
    CHECK(m.at("device_fallbacks").as_int64() == 1);
    CHECK(fallbacks_in(s.get("/metrics").body, "tiny", "cuda:63", "cpu") == 1.0);
    CHECK(s.post("/v1/completions", test::greedy("tiny", "Hello", 4)).status == 200);
}

namespace {

/// Whether this kernel refuses one allocation of `bytes` outright: its overcommit heuristic (0)
/// or strict accounting (2) with less memory and swap than that. Mode 1 promises any size and
/// the KV pool's first writes would then meet the OOM killer, so the test below does not run.
bool kernel_refuses(std::uint64_t bytes) {
    std::ifstream mode("/proc/sys/vm/overcommit_memory");
    int m = -1;
    if (!(mode >> m) || m == 1)
        return false;
    std::ifstream info("/proc/meminfo");
    std::uint64_t total_kib = 0;
    for (std::string key; info >> key;) {
        std::uint64_t kib = 0;
        info >> kib;
        if (key == "MemTotal:" || key == "SwapTotal:")
            total_kib += kib;
        info.ignore(64, '\n');
    }
    return total_kib > 0 && total_kib * 1024 < bytes;
}

} // namespace

TEST_CASE("a KV pool the host cannot allocate fails the load in words, and the server answers") {
#if defined(__SANITIZE_ADDRESS__)
    MESSAGE("AddressSanitizer's allocator ends a process whose new fails: not checked here");
    return;
#endif
    const std::string one_tib = "1099511627776"; // the largest kv_budget_bytes the config takes
    if (!kernel_refuses(std::stoull(one_tib))) {
        MESSAGE(
            "this kernel would promise 1 TiB (overcommit mode 1, or that much memory): skipped");
        return;
    }
    test::server_process s({"--devices", "cpu", "--kv-budget-bytes", one_tib},
                           test::ready_once_load_failed());
    const auto hm = health_model(s, "tiny");
    CHECK(hm.at("state").as_string() == "failed");
    const std::string failure(hm.at("failure").as_string());
    CHECK(failure.find("out of memory on cpu") != std::string::npos);
    CHECK(failure.find("KV pool of " + one_tib + " bytes, kv_budget_bytes") != std::string::npos);
    // It had ended the executor as a crash (an exception no one caught): restarted, then
    // "internal: system_error" as the version's failure.
    CHECK(failure.find("internal") == std::string::npos);
    CHECK(s.get("/health/ready").status == 503);
    CHECK(s.alive());
}
