// Exhaustive check of the vector expf (kernels/softmax.hpp): every one of the 2^32 float bit
// patterns through kernels::expf_rows and through std::exp (libm), counting the inputs whose bits
// differ. Beside it, the same algorithm without glibc's fused multiply-adds (what its __expf_sse2
// computes on a CPU without FMA) is run too, to show how rarely the two variants part and on which
// inputs; tests/kernels/softmax_test.cpp keeps such inputs, so a port that loses a fusion fails
// there without an exhaustive run. Not a benchmark: a fidelity record for bench/RESULTS.md.
#include "kernels/cpu/expf_glibc_data.hpp"
#include "kernels/softmax.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace {

namespace g = bitnet::kernels::cpu::glibc_expf;

double from_bits(std::uint64_t b) {
    return std::bit_cast<double>(b);
}

/// glibc's expf main path with every product rounded before its sum (no FMA), for inputs with
/// |x| < 88 only.
float expf_unfused(float x) {
    const double xd = x;
    const double z = from_bits(g::inv_ln2_n) * xd;
    double kd = z + from_bits(g::shift);
    const std::uint64_t ki = std::bit_cast<std::uint64_t>(kd);
    kd -= from_bits(g::shift);
    const double r = z - kd;
    const double s = std::bit_cast<double>(g::exp2_table[ki % 32] + (ki << 47));
    const double p = from_bits(g::c0) * r + from_bits(g::c1);
    const double r2 = r * r;
    double y = from_bits(g::c2) * r + 1.0;
    y = p * r2 + y;
    return static_cast<float>(y * s);
}

bool same(float a, float b) {
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

struct tally {
    std::uint64_t checked = 0;
    std::uint64_t vector_differs = 0;          ///< non-NaN results, or NaN against non-NaN
    std::uint64_t vector_nan_payload = 0;      ///< both NaN, other bits
    std::uint64_t unfused_differs = 0;         ///< |x| < 88
    std::uint64_t unfused_differs_softmax = 0; ///< x in [-88, 0]
    std::vector<std::uint32_t> first_vector, first_unfused;
};

void check_range(std::uint64_t from, std::uint64_t to, tally& t) {
    constexpr std::size_t chunk = 4096;
    std::vector<float> x(chunk), y(chunk);
    for (std::uint64_t b0 = from; b0 < to; b0 += chunk) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, to - b0));
        for (std::size_t i = 0; i < n; ++i)
            x[i] = std::bit_cast<float>(static_cast<std::uint32_t>(b0 + i));
        bitnet::kernels::expf_rows(x.data(), y.data(), n, bitnet::kernels::isa::avx2);
        for (std::size_t i = 0; i < n; ++i) {
            const float want = std::exp(x[i]);
            const auto bits = static_cast<std::uint32_t>(b0 + i);
            if (!same(want, y[i])) {
                if (std::isnan(want) && std::isnan(y[i])) {
                    ++t.vector_nan_payload;
                } else {
                    ++t.vector_differs;
                    if (t.first_vector.size() < 8)
                        t.first_vector.push_back(bits);
                }
            }
            if (std::fabs(x[i]) < 88.0f && !same(want, expf_unfused(x[i]))) {
                ++t.unfused_differs;
                if (x[i] <= 0.0f)
                    ++t.unfused_differs_softmax;
                if (t.first_unfused.size() < 16)
                    t.first_unfused.push_back(bits);
            }
        }
        t.checked += n;
    }
}

} // namespace

int main(int argc, char** argv) {
    const unsigned n_threads =
        argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : std::thread::hardware_concurrency();
    if (!bitnet::kernels::isa_supported(bitnet::kernels::isa::avx2)) {
        std::puts("check_expf: this CPU has no AVX2 + FMA, so there is no vector expf to check");
        return 0;
    }
    constexpr std::uint64_t all = std::uint64_t{1} << 32;
    std::vector<tally> tallies(n_threads);
    std::vector<std::thread> threads;
    for (unsigned i = 0; i < n_threads; ++i)
        threads.emplace_back(
            [&, i] { check_range(all * i / n_threads, all * (i + 1) / n_threads, tallies[i]); });
    for (auto& th : threads)
        th.join();
    tally total;
    for (const tally& t : tallies) {
        total.checked += t.checked;
        total.vector_differs += t.vector_differs;
        total.vector_nan_payload += t.vector_nan_payload;
        total.unfused_differs += t.unfused_differs;
        total.unfused_differs_softmax += t.unfused_differs_softmax;
        total.first_vector.insert(total.first_vector.end(), t.first_vector.begin(),
                                  t.first_vector.end());
        total.first_unfused.insert(total.first_unfused.end(), t.first_unfused.begin(),
                                   t.first_unfused.end());
    }
    std::printf("inputs checked: %llu (every float bit pattern)\n",
                static_cast<unsigned long long>(total.checked));
    std::printf("vector expf != libm expf: %llu (NaN results with other payload bits: %llu)\n",
                static_cast<unsigned long long>(total.vector_differs),
                static_cast<unsigned long long>(total.vector_nan_payload));
    for (const std::uint32_t b : total.first_vector)
        std::printf("  differs at 0x%08x (%a)\n", b, static_cast<double>(std::bit_cast<float>(b)));
    std::printf("the same algorithm without FMA != libm expf: %llu of |x| < 88, %llu of them in "
                "[-88, 0]\n",
                static_cast<unsigned long long>(total.unfused_differs),
                static_cast<unsigned long long>(total.unfused_differs_softmax));
    for (const std::uint32_t b : total.first_unfused)
        std::printf("  e.g. 0x%08x (%a)\n", b, static_cast<double>(std::bit_cast<float>(b)));
    return total.vector_differs == 0 ? 0 : 1;
}
