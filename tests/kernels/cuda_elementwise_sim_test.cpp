// The CUDA elementwise bodies (kernels/cuda/elementwise.cuh) on the simulated grid: the ReLU²
// gate against kernels::gated_activation's scalar family, the residual add against a plain loop,
// bit for bit, for sizes around the block and the grid-stride boundaries, in place too. The
// checks (cuda_kernel_checks_norm_rope_elementwise.hpp) run on a real device too, in the gpu
// suite.
#include "cuda_kernel_checks_norm_rope_elementwise.hpp"

#include <doctest/doctest.h>

using namespace bitnet;

TEST_SUITE("cuda_sim") {

    TEST_CASE("cuda_sim relu_sqr_gate matches the CPU's ReLU² gate bit for bit") {
        const auto o = kernels::cuda::make_simulated_ops();
        test::cuda::check_relu_sqr_gate_table(*o);
    }

    TEST_CASE("cuda_sim add is the residual x += d bit for bit") {
        const auto o = kernels::cuda::make_simulated_ops();
        test::cuda::check_add_table(*o);
    }

} // TEST_SUITE
