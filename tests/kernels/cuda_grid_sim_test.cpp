// The simulated grid itself (kernels/cuda/grid.hpp): its warp collectives against plain loops,
// dp4a against plain byte products, phases acting as barriers, per_thread values staying each
// thread's own, and simulate() running every block exactly once. Every other simulated-grid test
// relies on these emulations meaning what the device instructions mean.
#include "kernel_test_util.hpp"
#include "kernels/cuda/grid.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

using namespace bitnet;
using namespace bitnet::kernels::cuda;

namespace {

/// The fold by halves of `width` values (v[i] += v[i + w] for w = width/2 ... 1), the order the
/// CPU kernels reduce their lanes in; a xor butterfly must give this, bit for bit, in every lane.
float fold_by_halves(std::vector<float> v) {
    for (std::size_t w = v.size() / 2; w >= 1; w /= 2)
        for (std::size_t i = 0; i < w; ++i)
            v[i] = v[i] + v[i + w];
    return v[0];
}

bool same_bits(float a, float b) {
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

} // namespace

TEST_SUITE("cuda_sim") {

    TEST_CASE("cuda_sim grid: warp_sum leaves every lane with its warp's fold by halves") {
        for (const unsigned threads : {32u, 64u, 256u, 1024u}) {
            CAPTURE(threads);
            const std::vector<float> x = test::random_floats(threads, 7 + threads, -1e3f, 1e3f);
            per_thread<float> v;
            per_thread<std::int64_t> vi;
            const block b{0, 0, threads};
            b.threads([&](unsigned t) {
                v[t] = x[t];
                vi[t] = static_cast<std::int64_t>(t) * 1000003 - 77;
            });
            warp_sum(b, v);
            warp_sum(b, vi);
            for (unsigned w0 = 0; w0 < threads; w0 += warp_size) {
                const float want =
                    fold_by_halves(std::vector<float>(x.begin() + w0, x.begin() + w0 + warp_size));
                std::int64_t want_i = 0;
                for (unsigned l = 0; l < warp_size; ++l)
                    want_i += static_cast<std::int64_t>(w0 + l) * 1000003 - 77;
                for (unsigned l = 0; l < warp_size; ++l) {
                    CAPTURE(w0 + l);
                    CHECK(same_bits(v[w0 + l], want));
                    CHECK(vi[w0 + l] == want_i);
                }
            }
        }
    }

    TEST_CASE("cuda_sim grid: group_sum folds each group of width lanes on its own") {
        const unsigned threads = 128;
        const std::vector<float> x = test::random_floats(threads, 3, -5.0f, 5.0f);
        for (const unsigned width : {2u, 4u, 8u, 16u, 32u}) {
            CAPTURE(width);
            per_thread<float> v;
            const block b{0, 0, threads};
            b.threads([&](unsigned t) { v[t] = x[t]; });
            group_sum(b, v, width);
            for (unsigned g0 = 0; g0 < threads; g0 += width) {
                const float want =
                    fold_by_halves(std::vector<float>(x.begin() + g0, x.begin() + g0 + width));
                for (unsigned l = 0; l < width; ++l) {
                    CAPTURE(g0 + l);
                    CHECK(same_bits(v[g0 + l], want));
                }
            }
        }
    }

    TEST_CASE("cuda_sim grid: warp_max gives every lane its warp's maximum") {
        const unsigned threads = 96;
        const std::vector<float> x = test::random_floats(threads, 11, -100.0f, 100.0f);
        per_thread<float> v;
        const block b{0, 0, threads};
        b.threads([&](unsigned t) { v[t] = x[t]; });
        warp_max(b, v);
        for (unsigned w0 = 0; w0 < threads; w0 += warp_size) {
            float want = x[w0];
            for (unsigned l = 1; l < warp_size; ++l)
                want = x[w0 + l] > want ? x[w0 + l] : want;
            for (unsigned l = 0; l < warp_size; ++l)
                CHECK(same_bits(v[w0 + l], want));
        }
    }

    TEST_CASE("cuda_sim grid: dp4a is four signed byte products plus c") {
        std::mt19937 rng(5);
        std::uniform_int_distribution<std::uint32_t> word;
        std::uniform_int_distribution<int> acc(-1000000, 1000000);
        int negative_bytes = 0;
        for (int i = 0; i < 2000; ++i) {
            // Every tenth pair uses the extreme bytes -128 and 127 in all four places.
            const std::uint32_t a = i % 10 == 0 ? 0x807f807fu : word(rng);
            const std::uint32_t b = i % 10 == 0 ? 0x80807f7fu : word(rng);
            const int c = acc(rng);
            std::uint8_t ab[4];
            std::uint8_t bb[4];
            std::memcpy(ab, &a, 4); // little-endian: byte 0 is the low byte, as on the device
            std::memcpy(bb, &b, 4);
            long long want = c;
            for (int k = 0; k < 4; ++k) {
                const int sa = ab[k] >= 128 ? ab[k] - 256 : ab[k];
                const int sb = bb[k] >= 128 ? bb[k] - 256 : bb[k];
                negative_bytes += sa < 0;
                want += static_cast<long long>(sa) * sb;
            }
            CHECK(dp4a(static_cast<int>(a), static_cast<int>(b), c) == want);
        }
        CHECK(negative_bytes > 1000); // the signed path was exercised
    }

    TEST_CASE(
        "cuda_sim grid: a phase sees the previous phase's writes, per_thread stays per thread") {
        const unsigned threads = 64;
        const block b{0, 0, threads};
        BITNET_SHARED unsigned shared[threads];
        per_thread<unsigned> mine;
        b.threads([&](unsigned t) {
            shared[t] = 1000 + t;
            mine[t] = 7 * t;
        });
        b.sync();
        // Each thread reads its neighbour's shared value (written in the phase before: the barrier)
        // and only its own per_thread value.
        b.threads([&](unsigned t) { mine[t] += shared[(t + 1) % threads]; });
        b.sync();
        b.threads([&](unsigned t) { shared[t] = 0; }); // later writes do not reach back
        for (unsigned t = 0; t < threads; ++t)
            CHECK(mine[t] == 7 * t + 1000 + (t + 1) % threads);
    }

    TEST_CASE("cuda_sim grid: simulate runs every block of the grid exactly once") {
        for (const launch_shape shape : {launch_shape{1, 1, 32}, launch_shape{7, 3, 64},
                                         launch_shape{1, 5, 128}, launch_shape{13, 1, 32}}) {
            CAPTURE(shape.grid_x);
            CAPTURE(shape.grid_y);
            std::vector<int> visits(static_cast<std::size_t>(shape.grid_x) * shape.grid_y, 0);
            unsigned thread_calls = 0;
            simulate(shape, [&](const block& b) {
                REQUIRE(b.x() < shape.grid_x);
                REQUIRE(b.y() < shape.grid_y);
                CHECK(b.size() == shape.threads);
                ++visits[static_cast<std::size_t>(b.y()) * shape.grid_x + b.x()];
                b.threads([&](unsigned) { ++thread_calls; });
            });
            for (const int v : visits)
                CHECK(v == 1);
            CHECK(thread_calls == shape.grid_x * shape.grid_y * shape.threads);
        }
    }

} // TEST_SUITE
