// The CUDA elementwise bodies (kernels/cuda/elementwise.cuh) on the simulated grid: the ReLU²
// gate against kernels::gated_activation's scalar family, the residual add against a plain loop,
// bit for bit, for sizes around the block and the grid-stride boundaries, in place too.
#include "cuda_sim_util.hpp"
#include "kernel_test_util.hpp"
#include "kernels/activation.hpp"
#include "kernels/cuda/ops.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

using namespace bitnet;
using namespace bitnet::kernels;

namespace {

// 1 and 255..257 straddle a block, 16777217 = 2^16 blocks of 256 plus one: the grid is capped at
// 2^16 blocks, so the last element is reached only through the grid-stride loop.
const std::uint64_t sizes[] = {1, 3, 255, 256, 257, 6912, 100003, (1u << 24) + 1};

} // namespace

TEST_SUITE("cuda_sim") {

    TEST_CASE("cuda_sim relu_sqr_gate matches the CPU's ReLU² gate bit for bit") {
        std::uint32_t seed = 500;
        for (const std::uint64_t n : sizes) {
            CAPTURE(n);
            std::vector<float> g = test::random_floats(n, ++seed, -3.0f, 3.0f);
            const std::vector<float> u = test::random_floats(n, ++seed, -2.0f, 2.0f);
            if (n >
                3) { // the edges of relu: signed zeros and a NaN go through g > 0 like the CPU's
                g[0] = -0.0f;
                g[1] = 0.0f;
                g[2] = NAN;
            }
            std::vector<float> want(n);
            gated_activation(ffn_activation::relu_sqr, g.data(), u.data(), n, want.data(), 1,
                             isa::scalar);

            const auto o = cuda::make_simulated_ops();
            test::device_vector<float> dg(*o, g);
            test::device_vector<float> du(*o, u);
            test::device_vector<float> dz(*o, n);
            for (const bool in_place : {false, true}) {
                CAPTURE(in_place);
                cuda::relu_sqr_gate_args a;
                a.g = dg.get();
                a.u = du.get();
                a.z = in_place ? dg.get() : dz.get();
                a.n = n;
                o->run(a);
                CHECK(test::first_bit_difference(in_place ? dg.download() : dz.download(), want) ==
                      -1);
            }
        }
    }

    TEST_CASE("cuda_sim add is the residual x += d bit for bit") {
        std::uint32_t seed = 600;
        for (const std::uint64_t n : sizes) {
            CAPTURE(n);
            const std::vector<float> x = test::random_floats(n, ++seed, -10.0f, 10.0f);
            const std::vector<float> d = test::random_floats(n, ++seed, -1e-3f, 1e-3f);
            std::vector<float> want(n);
            for (std::uint64_t i = 0; i < n; ++i)
                want[i] = x[i] + d[i];

            const auto o = cuda::make_simulated_ops();
            test::device_vector<float> dx(*o, x);
            test::device_vector<float> dd(*o, d);
            cuda::add_args a;
            a.x = dx.get();
            a.d = dd.get();
            a.n = n;
            o->run(a);
            CHECK(test::first_bit_difference(dx.download(), want) == -1);
        }
    }

} // TEST_SUITE
