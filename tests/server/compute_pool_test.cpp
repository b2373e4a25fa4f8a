// The compute pool's manners (tools/server/compute_pool.hpp): the server sets OpenMP's wait
// itself (a bounded spin, then sleep) whatever the user's environment says, sizes the pool from
// the CPUs it may use, and beside a CPU-bound process its control plane still answers while
// every core computes (the latency figure itself is bench/control_plane.mjs's, in RESULTS.md;
// the bound here is generous).
#include "server_process.hpp"

#include <algorithm>
#include <atomic>
#include <fstream>

namespace bitnet::test {

namespace {

/// The environment of process `pid` as NAME=VALUE strings.
std::vector<std::string> environ_of(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    std::vector<std::string> out;
    std::string item;
    while (std::getline(f, item, '\0'))
        out.push_back(item);
    return out;
}

bool has(const std::vector<std::string>& env, const std::string& item) {
    return std::find(env.begin(), env.end(), item) != env.end();
}

/// A CPU-bound child process (a busy loop) until destroyed.
struct cpu_hog {
    pid_t pid = ::fork();
    cpu_hog() {
        if (pid == 0) {
            volatile unsigned long x = 0;
            for (;;)
                x = x + 1;
        }
    }
    ~cpu_hog() {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
};

} // namespace

TEST_CASE("compute pool: the server sets OpenMP's wait from compute_spin_count, not from the "
          "user's environment, and sizes the pool from the CPUs it may use") {
    ::setenv("OMP_WAIT_POLICY", "active", 1); // what a user might have exported
    server_process s({"--compute-spin-count", "12345", "--threads", "0"});
    ::unsetenv("OMP_WAIT_POLICY");
    const auto env = environ_of(s.pid());
    CHECK(has(env, "GOMP_SPINCOUNT=12345"));
    CHECK(std::none_of(env.begin(), env.end(),
                       [](const std::string& e) { return e.rfind("OMP_WAIT_POLICY=", 0) == 0; }));
    const auto log = s.log();
    CHECK_MESSAGE(log.find("compute: ") != std::string::npos, log);
    CHECK(log.find("spin 12345") != std::string::npos);
    CHECK(log.find("the CPUs this process may use") != std::string::npos);
    // The server works as before.
    CHECK(s.post("/v1/completions", R"({"prompt":"hi","max_tokens":4})").status == 200);
}

TEST_CASE("compute pool: with default settings beside a CPU-bound process and streams decoding, "
          "/health/live still answers promptly") {
    server_process s;
    cpu_hog hog;
    std::atomic<bool> stop{false};
    std::vector<std::thread> streams;
    for (int i = 0; i < 8; ++i)
        streams.emplace_back([&, i] {
            while (!stop)
                (void)s.post("/v1/completions", R"({"prompt":"Once )" + std::to_string(i) +
                                                    R"(","max_tokens":64,"stream":true})");
        });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::vector<double> ms;
    for (int i = 0; i < 100; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto r = s.get("/health/live");
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
        CHECK(r.status == 200);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stop = true;
    for (auto& t : streams)
        t.join();
    std::sort(ms.begin(), ms.end());
    const double p99 = ms[98];
    INFO("health p50 " << ms[50] << " ms, p99 " << p99 << " ms");
    // The goal is 50 ms (bench/RESULTS.md has the figure: 6-8 ms on a 2-core EPYC); the bound
    // leaves room for a loaded CI machine and sanitizers.
    CHECK(p99 < 1000.0);
}

} // namespace bitnet::test
