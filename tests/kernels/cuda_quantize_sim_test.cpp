// The CUDA quantize kernel (kernels/cuda/quantize.cuh) on the simulated grid against
// kernels::quantize_activations' scalar family: the same bytes and the same scales.
#include "cuda_kernel_checks.hpp"

#include <doctest/doctest.h>

using namespace bitnet;

TEST_CASE("cuda_sim quantize equals quantize_activations bit for bit") {
    const auto o = kernels::cuda::make_simulated_ops();
    test::cuda::check_quantize_table(*o);
}
