// The CUDA ternary product (kernels/cuda/ternary_gemm.cuh: the decode GEMV and the tiled GEMM) on
// the simulated grid against the CPU's scalar family times out_multiplier, bit for bit; the GPU
// weight layout (kernels/cuda/ternary_gpu_layout.hpp) against the I2_S formula
// (docs/GGUF-FORMAT.md §2.2).
#include "cuda_kernel_checks.hpp"
#include "kernels/cuda/ternary_gemm.cuh"

#include <doctest/doctest.h>

#include <cstring>

using namespace bitnet;
namespace kc = bitnet::kernels::cuda;

TEST_CASE("cuda_sim ternary GPU layout decodes to the I2_S weights of spec 2.2") {
    const std::uint32_t rows = 5;
    const std::uint32_t cols = 384;
    const std::vector<std::uint8_t> i2s = test::cuda::random_i2s(rows, cols, 3);
    const std::vector<std::uint8_t> gpu = kc::pack_ternary_gpu(i2s.data(), rows, cols);
    REQUIRE(gpu.size() == kc::ternary_gpu_bytes(rows, cols));
    for (std::uint32_t m = 0; m < rows; ++m)
        for (std::uint32_t k = 0; k < cols; ++k) {
            // docs/GGUF-FORMAT.md §2.2: flat index i = m·K + k, block i / 128 of 32 bytes,
            // byte (i % 128) % 32, shift 6 − 2·((i % 128) / 32); value = code − 1, code 3 reads
            // as 0.
            const std::size_t i = std::size_t{m} * cols + k;
            const unsigned code =
                (i2s[32 * (i / 128) + (i % 128) % 32] >> (6 - 2 * ((i % 128) / 32))) & 3u;
            const int want = code == 3 ? 0 : static_cast<int>(code) - 1;
            std::uint32_t word = 0;
            std::memcpy(&word, gpu.data() + std::size_t{m} * cols / 4 + 4 * (k / 16), 4);
            const std::int32_t lanes = kc::decode_group(word, (k % 16) / 4);
            const auto got =
                static_cast<std::int8_t>(static_cast<std::uint32_t>(lanes) >> (8 * (k % 4)));
            CAPTURE(m);
            CAPTURE(k);
            REQUIRE(int{got} == want);
        }
}

TEST_CASE("cuda_sim ternary_gemm equals the scalar ternary_matmul bit for bit") {
    const auto o = kernels::cuda::make_simulated_ops();
    test::cuda::check_ternary_gemm_table(*o);
}

namespace {

// Runs one named variant on the simulated grid, whatever launch() would choose.
template <class K>
std::vector<float> run_variant(const kc::ternary_gemm_args& a, const kc::launch_shape& shape,
                               std::size_t n) {
    kc::simulate(shape, [&](const kc::block& b) { K::body(b, a); });
    return std::vector<float>(a.y, a.y + n);
}

} // namespace

TEST_CASE("cuda_sim ternary GEMV and tiled GEMM agree for every token count the GEMV takes") {
    const std::uint32_t rows = 77;
    const std::uint32_t cols = 640;
    const std::vector<std::uint8_t> i2s = test::cuda::random_i2s(rows, cols, 9);
    std::vector<std::uint8_t> w = kc::pack_ternary_gpu(i2s.data(), rows, cols);
    for (std::uint32_t n_tok = 1; n_tok <= kc::ternary_gemv_kernel::max_tokens; ++n_tok) {
        CAPTURE(n_tok);
        const std::vector<float> x = test::random_floats(n_tok * cols, n_tok, -1.0f, 1.0f);
        kernels::quantized_acts acts;
        kernels::quantize_activations(x.data(), n_tok, cols, cols, acts, kernels::isa::scalar);
        std::vector<float> y1(n_tok * rows, test::cuda::sentinel);
        std::vector<float> y2 = y1;
        kc::ternary_gemm_args a;
        a.w = w.data();
        a.rows = rows;
        a.cols = cols;
        a.w_scale = 0.5f;
        a.q = acts.q.data();
        a.ldq = cols;
        a.act_scale = acts.scale.data();
        a.n_rows = n_tok;
        a.ldy = rows;
        a.out_multiplier = 1.25f;
        a.y = y1.data();
        const auto gemv =
            run_variant<kc::ternary_gemv_kernel>(a, {(rows + 7) / 8, 1, 256}, y1.size());
        a.y = y2.data();
        const auto tiled =
            run_variant<kc::ternary_gemm_tiled_kernel>(a, {(rows + 63) / 64, 1, 256}, y2.size());
        CHECK(test::first_bit_difference(gemv, tiled) == -1);
        CHECK(std::memcmp(&gemv[0], &test::cuda::sentinel, sizeof(float)) != 0);
    }
}

TEST_CASE("cuda_sim ternary_gemm refuses K off 128 and activation strides off 16") {
    const auto o = kernels::cuda::make_simulated_ops();
    std::vector<std::uint8_t> w(64);
    std::vector<std::int8_t> q(256);
    std::vector<float> scale(1, 1.0f);
    std::vector<float> y(4);
    kc::ternary_gemm_args a;
    a.w = w.data();
    a.rows = 2;
    a.cols = 128;
    a.q = q.data();
    a.ldq = 144;
    a.act_scale = scale.data();
    a.n_rows = 1;
    a.y = y.data();
    a.ldy = 2;
    CHECK_NOTHROW(o->run(a));
    a.ldq = 130;
    CHECK_THROWS_AS(o->run(a), std::invalid_argument);
    a.ldq = 128;
    a.cols = 64;
    CHECK_THROWS_AS(o->run(a), std::invalid_argument);
}
