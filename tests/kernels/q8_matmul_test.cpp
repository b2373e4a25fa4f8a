// The int8 logits product: every family equals the scalar twin bit for bit, the scalar equals the
// formula computed here from the quantized values, and row quantization keeps each row's extreme.
#include "kernels/q8_matmul.hpp"

#include "kernel_test_util.hpp"
#include "kernels/f16.hpp"

#include <cmath>

using namespace bitnet;
using namespace bitnet::test;

namespace {

std::vector<std::uint16_t> random_f16(std::size_t n, std::uint32_t seed) {
    const auto f = random_floats(n, seed, -1.5f, 1.5f);
    std::vector<std::uint16_t> h(n);
    for (std::size_t i = 0; i < n; ++i)
        h[i] = kernels::f32_to_f16(f[i]);
    return h;
}

} // namespace

TEST_CASE("q8 logits: row quantization keeps the row's extreme at ±127 and zero rows at zero") {
    const std::uint32_t rows = 5, cols = 64;
    auto h = random_f16(rows * cols, 3);
    for (std::uint32_t k = 0; k < cols; ++k)
        h[2 * cols + k] = 0;                  // an all-zero row
    h[cols + 7] = kernels::f32_to_f16(-4.0f); // row 1's extreme is negative
    const auto w = kernels::pack_q8_rows(h.data(), rows, cols, kernels::isa::scalar);
    const auto* q = w.data.as<std::int8_t>();
    CHECK(q[cols + 7] == -127);
    CHECK(w.row_scale[1] == doctest::Approx(4.0f / 127.0f));
    for (std::uint32_t k = 0; k < cols; ++k)
        CHECK(q[2 * cols + k] == 0);
    for (std::uint32_t m = 0; m < rows; ++m) {
        std::int32_t sum = 0;
        for (std::uint32_t k = 0; k < cols; ++k)
            sum += q[m * cols + k];
        CHECK(w.row_sum[m] == sum);
    }
}

TEST_CASE("q8 logits: every family equals the scalar twin; the scalar follows the formula") {
    std::uint32_t seed = 10;
    for (std::uint32_t rows : {1u, 3u, 4u, 65u, 130u}) {
        for (std::uint32_t cols : {64u, 256u, 2560u}) {
            for (std::size_t n_tok :
                 {std::size_t{1}, std::size_t{2}, std::size_t{5}, std::size_t{9}}) {
                CAPTURE(rows);
                CAPTURE(cols);
                CAPTURE(n_tok);
                const auto h = random_f16(std::size_t{rows} * cols, ++seed);
                const auto x = random_floats(n_tok * cols, ++seed, -3.0f, 3.0f);
                kernels::quantized_acts acts;
                kernels::quantize_activations(x.data(), n_tok, cols, cols, acts,
                                              kernels::isa::scalar);
                const auto ws = kernels::pack_q8_rows(h.data(), rows, cols, kernels::isa::scalar);
                std::vector<float> want(n_tok * rows);
                kernels::q8_matmul(ws, acts, want.data(), rows, 1);

                const auto* q8 = ws.data.as<std::int8_t>();
                bool formula = true;
                for (std::size_t t = 0; t < n_tok; ++t)
                    for (std::uint32_t m = 0; m < rows; ++m) {
                        std::int64_t dot = 0;
                        for (std::uint32_t k = 0; k < cols; ++k)
                            dot += q8[std::size_t{m} * cols + k] * acts.q[t * cols + k];
                        const float f = static_cast<float>(dot) / acts.scale[t] * ws.row_scale[m];
                        formula = formula && f == want[t * rows + m];
                    }
                CHECK(formula);

                for (kernels::isa family : simd_families) {
                    if (!family_runs_here(family))
                        continue;
                    const auto wf = kernels::pack_q8_rows(h.data(), rows, cols, family);
                    std::vector<float> got(n_tok * rows);
                    kernels::q8_matmul(wf, acts, got.data(), rows, 2);
                    CHECK(first_bit_difference(want, got) == -1);
                }
            }
        }
    }
}
