// The CUDA RoPE body (kernels/cuda/rope.cuh) on the simulated grid against kernels::rope_apply,
// bit for bit: both styles, head sizes odd and not powers of two, padded rows, positions in any
// order (the angle table is the CPU's, computed by kernels::rope_angles_for). The checks
// (cuda_kernel_checks_norm_rope_elementwise.hpp) run on a real device too, in the gpu suite.
#include "cuda_kernel_checks_norm_rope_elementwise.hpp"

#include <doctest/doctest.h>

using namespace bitnet;

TEST_SUITE("cuda_sim") {

    TEST_CASE("cuda_sim rope matches kernels::rope_apply bit for bit, NEOX and normal") {
        const auto o = kernels::cuda::make_simulated_ops();
        test::cuda::check_rope_table(*o);
    }

} // TEST_SUITE
