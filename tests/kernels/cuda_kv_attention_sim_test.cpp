// The CUDA KV kernels (kernels/cuda/kv_attention.cuh) on the simulated grid: kv_append against
// f32_to_f16 element by element, and paged_attention against kernels::attention_one_token, bit
// for bit, with GQA, several block sizes, ragged contexts and several rows with their own block
// tables in one launch, probabilities rounded to F16 and not. The checks
// (cuda_kernel_checks_kv_attention.hpp) run on a real device too, in the gpu suite, where
// paged_attention is held to device_tolerance instead of bit equality (the device's expf is not
// glibc's); here they run `exact`, and within that tolerance as well.
#include "cuda_kernel_checks_kv_attention.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace bitnet;

TEST_SUITE("cuda_sim") {

    TEST_CASE("cuda_sim kv_append rounds every K and V element to F16 at its row's offsets") {
        const auto o = kernels::cuda::make_simulated_ops();
        test::cuda::check_kv_append_table(*o);
    }

    TEST_CASE("cuda_sim paged_attention matches attention_one_token bit for bit") {
        const auto o = kernels::cuda::make_simulated_ops();
        const double worst = test::cuda::check_paged_attention_table(*o, true);
        // Here the error is 0: the host's expf is the CPU's.
        MESSAGE("paged_attention on the simulated grid: max |error| / max |V| = " << worst);
    }

    TEST_CASE(
        "cuda_sim paged_attention takes the CPU's order where the block's sum would round apart") {
        const auto o = kernels::cuda::make_simulated_ops();
        test::cuda::check_paged_attention_cpu_order(*o, true);
    }

    TEST_CASE("cuda_sim paged_attention refuses shapes its block cannot hold") {
        const auto o = kernels::cuda::make_simulated_ops();
        kernels::cuda::paged_attention_args a;
        a.n_rows = 1;
        a.n_head = 4;
        a.n_kv_head = 3;
        a.head_dim = 64;
        a.block_tokens = 16;
        CHECK_THROWS_AS(o->run(a), std::invalid_argument); // 4 heads over 3 KV heads
        a.n_kv_head = 2;
        a.head_dim = 1024;
        CHECK_THROWS_AS(o->run(a), std::invalid_argument); // beyond the shared q buffer
        a.head_dim = 64;
        a.block_tokens = 0;
        CHECK_THROWS_AS(o->run(a), std::invalid_argument);
    }

} // TEST_SUITE
