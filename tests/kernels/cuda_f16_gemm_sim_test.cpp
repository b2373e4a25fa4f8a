// The CUDA F16 product (kernels/cuda/f16_gemm.cuh) on the simulated grid against kernels::
// f16_matmul's scalar family, bit for bit, with and without the gather of x rows.
#include "cuda_kernel_checks.hpp"

#include <doctest/doctest.h>

using namespace bitnet;

TEST_CASE("cuda_sim f16_gemm equals f16_matmul bit for bit") {
    const auto o = kernels::cuda::make_simulated_ops();
    test::cuda::check_f16_gemm_table(*o);
}
