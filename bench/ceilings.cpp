#include "ceilings.hpp"

#include "kernels/cpu_features.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

namespace bitnet::bench {
namespace {

/// Best of 3 wall times of `loop(iters)` run on n_threads threads at once; returns the rate of
/// `units_per_iter` units an iteration per thread.
double rate(int n_threads, double units_per_iter, const std::function<void(std::int64_t)>& loop) {
    // Calibrate to about 0.2 s a run on one thread.
    std::int64_t iters = 1 << 16;
    for (;;) {
        const auto t0 = std::chrono::steady_clock::now();
        loop(iters);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (s > 0.05) {
            iters = static_cast<std::int64_t>(static_cast<double>(iters) * 0.2 / s);
            break;
        }
        iters *= 4;
    }
    double best = 1e30;
    for (int r = 0; r < 3; ++r) {
        std::vector<std::thread> ts;
        const auto t0 = std::chrono::steady_clock::now();
        for (int t = 0; t < n_threads; ++t)
            ts.emplace_back([&] { loop(iters); });
        for (auto& t : ts)
            t.join();
        best = std::min(
            best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return units_per_iter * static_cast<double>(iters) * n_threads / best;
}

std::atomic<double> sink{0}; // keeps the loops' results alive

} // namespace

peak int8_mac_peak(int n_threads) {
    const auto& f = kernels::detect_cpu_features();
    std::vector<peak> found;
    if (f.avx512) {
        found.push_back({"vpdpbusd zmm", rate(n_threads, 12.0 * 64, [](std::int64_t n) {
                             sink = sink + static_cast<double>(detail::vnni_zmm_loop(n));
                         })});
        found.push_back({"vpdpbusd ymm", rate(n_threads, 12.0 * 32, [](std::int64_t n) {
                             sink = sink + static_cast<double>(detail::vnni_ymm_loop(n));
                         })});
    }
    if (f.avx2)
        found.push_back({"vpmaddubsw ymm", rate(n_threads, 8.0 * 4 * 32, [](std::int64_t n) {
                             sink = sink + static_cast<double>(detail::maddubs_ymm_loop(n));
                         })});
    if (found.empty())
        return {"none (scalar)", 0};
    return *std::max_element(found.begin(), found.end(),
                             [](const peak& a, const peak& b) { return a.per_s < b.per_s; });
}

peak fp32_fma_peak(int n_threads) {
    const auto& f = kernels::detect_cpu_features();
    if (f.avx512)
        return {"vfmadd231ps zmm", rate(n_threads, 12.0 * 16 * 2, [](std::int64_t n) {
                    sink = sink + detail::fma_zmm_loop(n);
                })};
    if (f.avx2)
        return {"vfmadd231ps ymm", rate(n_threads, 12.0 * 8 * 2, [](std::int64_t n) {
                    sink = sink + detail::fma_ymm_loop(n);
                })};
    return {"none (scalar)", 0};
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0)
            return line.substr(line.find(':') + 2);
    return "unknown";
}

std::string cpu_simd_flags() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("flags", 0) != 0)
            continue;
        std::istringstream words(line.substr(line.find(':') + 1));
        std::string out;
        for (std::string w; words >> w;)
            if (w == "avx2" || w == "fma" || w == "f16c" || w.rfind("avx512", 0) == 0 ||
                w == "avx_vnni")
                out += (out.empty() ? "" : " ") + w;
        return out;
    }
    return "";
}

} // namespace bitnet::bench
