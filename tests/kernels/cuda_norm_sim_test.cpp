// The CUDA RMSNorm body (kernels/cuda/norm.cuh) on the simulated grid against kernels::rms_norm,
// bit for bit: ragged widths, padded strides, gathered rows, and a row built so that the block's
// summation order would round the scale differently from the CPU's sequential order.
#include "cuda_sim_util.hpp"
#include "kernel_test_util.hpp"
#include "kernels/cuda/ops.hpp"
#include "kernels/rms_norm.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

using namespace bitnet;
using namespace bitnet::kernels;

namespace {

struct norm_case {
    std::uint32_t n_rows;
    std::uint32_t n;
    std::uint32_t ld;
    bool gather;
};

/// Runs the simulated kernel; rows (when gathering) index x's rows, out has n_out rows of ld
/// (in place: written over x, which then has n_out rows).
std::vector<float> run_sim(const std::vector<float>& x, const std::vector<float>& g,
                           const std::vector<std::int32_t>& rows, std::uint32_t n_out,
                           std::uint32_t n, std::uint32_t ld, float eps, bool in_place = false) {
    const auto o = cuda::make_simulated_ops();
    test::device_vector<float> dx(*o, x);
    test::device_vector<float> dg(*o, g);
    test::device_vector<float> dy(*o, std::vector<float>(static_cast<std::size_t>(n_out) * ld));
    test::device_vector<std::int32_t> drows(*o, rows.empty() ? std::vector<std::int32_t>{0} : rows);
    cuda::rms_norm_args a;
    a.x = dx.get();
    a.ldx = ld;
    a.weight = dg.get();
    a.y = in_place ? dx.get() : dy.get();
    a.ldy = ld;
    a.n_rows = n_out;
    a.n = n;
    a.eps = eps;
    a.rows = rows.empty() ? nullptr : drows.get();
    o->run(a);
    return in_place ? dx.download() : dy.download();
}

} // namespace

TEST_SUITE("cuda_sim") {

    TEST_CASE("cuda_sim rms_norm matches kernels::rms_norm bit for bit on ragged shapes") {
        const norm_case cases[] = {
            {1, 1, 1, false},      {3, 7, 9, false},       {2, 31, 31, true},
            {4, 256, 260, false},  {3, 257, 257, true},    {2, 1000, 1003, false},
            {5, 2560, 2560, true}, {1, 6912, 6912, false}, {2, 2561, 2600, true}};
        std::uint32_t seed = 100;
        for (const norm_case& c : cases) {
            CAPTURE(c.n_rows);
            CAPTURE(c.n);
            CAPTURE(c.gather);
            const std::uint32_t n_src = c.gather ? c.n_rows + 3 : c.n_rows;
            const std::vector<float> x =
                test::random_floats(static_cast<std::size_t>(n_src) * c.ld, ++seed, -3.0f, 3.0f);
            const std::vector<float> g = test::random_floats(c.n, ++seed, 0.5f, 1.5f);
            std::vector<std::int32_t> rows;
            if (c.gather)
                for (std::uint32_t r = 0; r < c.n_rows; ++r)
                    rows.push_back(static_cast<std::int32_t>((r * 5 + 2) % n_src));
            const float eps = 1e-5f;

            std::vector<float> want(static_cast<std::size_t>(c.n_rows) * c.ld, 0.0f);
            for (std::uint32_t r = 0; r < c.n_rows; ++r) {
                const std::size_t src = c.gather ? static_cast<std::size_t>(rows[r]) : r;
                rms_norm(x.data() + src * c.ld, g.data(), 1, c.n, c.ld, eps,
                         want.data() + r * c.ld);
            }
            const std::vector<float> got = run_sim(x, g, rows, c.n_rows, c.n, c.ld, eps);
            CHECK(test::first_bit_difference(got, want) == -1);
        }
    }

    TEST_CASE("cuda_sim rms_norm takes the CPU's order where the block's order would round apart") {
        // x[0]² = 1 and 255 squares of 2^-56: added in index order each tiny square is rounded away
        // (sum 1), while the block adds them among themselves first (sum 1 + 15·2^-52). With
        // eps = 11589·2^-32, mean + eps is exactly halfway between two floats for the CPU (ties to
        // even: down, to 2^-8·(1 + 5794·2^-23)) and just above halfway for the block's sum (up),
        // and the two neighbours' 1/sqrt differ (a pair found by search): without the order check
        // the scale would be one ulp off.
        const std::uint32_t n = 256;
        std::vector<float> x(n, 0x1p-28f);
        x[0] = 1.0f;
        const std::vector<float> g = test::random_floats(n, 9, 0.5f, 1.5f);
        const float eps = 11589.0f * 0x1p-32f;
        std::vector<float> want(n);
        rms_norm(x.data(), g.data(), 1, n, n, eps, want.data());
        const std::vector<float> got = run_sim(x, g, {}, 1, n, n, eps);
        CHECK(test::first_bit_difference(got, want) == -1);
        // The premise: the CPU's scale is the one of the rounded-down neighbour.
        const float down = 0x1p-8f * (1.0f + 5794.0f * 0x1p-23f);
        const float up = std::nextafter(down, 1.0f);
        REQUIRE(1.0f / std::sqrt(down) != 1.0f / std::sqrt(up));
        CHECK(want[0] == (x[0] * (1.0f / std::sqrt(down))) * g[0]);
    }

    TEST_CASE("cuda_sim rms_norm normalises in place and launches nothing for zero rows") {
        const std::uint32_t n = 300;
        const std::uint32_t rows = 3;
        const std::vector<float> x =
            test::random_floats(static_cast<std::size_t>(rows) * n, 4, -2.0f, 2.0f);
        const std::vector<float> g = test::random_floats(n, 5, 0.5f, 1.5f);
        std::vector<float> want(x.size());
        rms_norm(x.data(), g.data(), rows, n, n, 1e-6f, want.data());

        CHECK(test::first_bit_difference(run_sim(x, g, {}, rows, n, n, 1e-6f, true), want) == -1);

        const auto o = cuda::make_simulated_ops();
        cuda::rms_norm_args a;
        a.n = n;
        a.n_rows = 0;
        a.x = nullptr; // nothing may be read
        o->run(a);
    }

} // TEST_SUITE
