// The CUDA RMSNorm body (kernels/cuda/norm.cuh) on the simulated grid against kernels::rms_norm,
// bit for bit: ragged widths, padded strides, gathered rows, and a row built so that the block's
// summation order would round the scale differently from the CPU's sequential order. The checks
// (cuda_kernel_checks_norm_rope_elementwise.hpp) run on a real device too, in the gpu suite.
#include "cuda_kernel_checks_norm_rope_elementwise.hpp"

#include <doctest/doctest.h>

using namespace bitnet;

TEST_SUITE("cuda_sim") {

    TEST_CASE("cuda_sim rms_norm matches kernels::rms_norm bit for bit on ragged shapes") {
        const auto o = kernels::cuda::make_simulated_ops();
        test::cuda::check_rms_norm_table(*o);
    }

    TEST_CASE("cuda_sim rms_norm takes the CPU's order where the block's order would round apart") {
        const auto o = kernels::cuda::make_simulated_ops();
        test::cuda::check_rms_norm_cpu_order(*o);
    }

    TEST_CASE("cuda_sim rms_norm normalises in place and launches nothing for zero rows") {
        const auto o = kernels::cuda::make_simulated_ops();
        test::cuda::check_rms_norm_in_place_and_empty(*o);
    }

} // TEST_SUITE
