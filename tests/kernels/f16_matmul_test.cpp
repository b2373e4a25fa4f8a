// The tied-logits F16 product (kernels/f16_matmul.hpp): the scalar family against the summation
// order written out here and against a double-precision product, and every SIMD family against the
// scalar family bit for bit.
#include "kernels/f16_matmul.hpp"

#include "kernel_test_util.hpp"
#include "kernels/f16.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace bitnet;
using namespace bitnet::kernels;
using bitnet::test::first_bit_difference;

namespace {

std::vector<std::uint16_t> random_f16(std::size_t n, std::uint32_t seed) {
    const std::vector<float> v = test::random_floats(n, seed, -1.0f, 1.0f);
    std::vector<std::uint16_t> h(n);
    for (std::size_t i = 0; i < n; ++i)
        h[i] = f32_to_f16(v[i]);
    return h;
}

std::vector<float> run(const std::vector<std::uint16_t>& w, std::size_t rows, std::size_t cols,
                       const std::vector<float>& x, std::size_t n_tok, std::size_t ldx,
                       std::size_t ldy, int n_threads, isa family) {
    std::vector<float> y(n_tok * ldy, std::numeric_limits<float>::quiet_NaN());
    f16_matmul(w.data(), rows, cols, x.data(), n_tok, ldx, y.data(), ldy, n_threads, family);
    return y;
}

struct shape {
    std::size_t rows;
    std::size_t cols;
    std::size_t n_tok;
};

// Columns on and off multiples of 16 and 8, rows around the 8-, 4-, 3- and 2-row blocks, token
// counts around the token groups (4 for AVX-512; for AVX2 3 with 3 or 5 tokens, else 2 against 3
// rows; a tail of five in one AVX-512 group, of four in two AVX2 groups of two), and batches of
// 12 to 33 tokens.
constexpr shape shapes[] = {
    {1, 16, 1},
    {3, 7, 2},
    {4, 2560, 1},
    {5, 37, 3},
    {67, 100, 4},
    {130, 2560, 8},
    {9, 256, 5},
    {66, 24, 9},
    {2, 1, 1},
    {129, 640, 7},
    {64, 2576, 2},
    {7, 33, 16},
    {70, 1000, 23},
    {13, 2576, 33},
    {8, 15, 12},
    {131, 160, 32},
    {4, 2560, 17},
    {12, 2576, 13},
    {5, 48, 6},
    {11, 512, 9},
    {2, 64, 7},
    // One token (decode) around the 8-row decode blocks of AVX-512.
    {8, 100, 1},
    {13, 2576, 1},
    {67, 37, 1},
    {130, 160, 1},
};

} // namespace

TEST_CASE("scalar f16_matmul follows the 16-lane order and matches a double product") {
    for (const shape& s : shapes) {
        CAPTURE(s.rows);
        CAPTURE(s.cols);
        CAPTURE(s.n_tok);
        const std::vector<std::uint16_t> w = random_f16(s.rows * s.cols, 3);
        const std::vector<float> x =
            test::random_floats(s.n_tok * s.cols, 4, -2.0f, 2.0f); // not F16-representable
        const std::vector<float> y =
            run(w, s.rows, s.cols, x, s.n_tok, s.cols, s.rows, 1, isa::scalar);
        for (std::size_t t = 0; t < s.n_tok; ++t)
            for (std::size_t m = 0; m < s.rows; ++m) {
                float lanes[16] = {};
                double exact = 0.0;
                double magnitude = 0.0;
                for (std::size_t k = 0; k < s.cols; ++k) {
                    const float wk = f16_to_f32(w[m * s.cols + k]);
                    const float xk = f16_to_f32(f32_to_f16(x[t * s.cols + k]));
                    lanes[k % 16] = std::fma(wk, xk, lanes[k % 16]);
                    exact += static_cast<double>(wk) * xk;
                    magnitude += std::fabs(static_cast<double>(wk) * xk);
                }
                for (int width = 8; width > 0; width /= 2)
                    for (int i = 0; i < width; ++i)
                        lanes[i] += lanes[i + width];
                const float got = y[t * s.rows + m];
                CHECK(got == lanes[0]);
                CHECK(std::fabs(got - exact) <= 1e-6 * magnitude + 1e-30);
            }
    }
}

TEST_CASE("f16_matmul rounds the activations to F16") {
    // One-hot weight rows pick single activations: y = f16(x[c]).
    const std::size_t cols = 40;
    std::vector<std::uint16_t> w(cols * cols, f32_to_f16(0.0f));
    for (std::size_t c = 0; c < cols; ++c)
        w[c * cols + c] = f32_to_f16(1.0f);
    const std::vector<float> x = test::random_floats(cols, 11, -100.0f, 100.0f);
    for (const isa family : {isa::scalar, isa::avx2, isa::avx512_vnni}) {
        if (!test::family_runs_here(family))
            continue;
        CAPTURE(isa_name(family));
        const std::vector<float> y = run(w, cols, cols, x, 1, cols, cols, 1, family);
        std::size_t n_rounded = 0;
        for (std::size_t c = 0; c < cols; ++c) {
            CHECK(y[c] == f16_to_f32(f32_to_f16(x[c])));
            n_rounded += y[c] != x[c] ? 1 : 0;
        }
        CHECK(n_rounded > cols / 2); // most random floats are not F16 values
    }
}

TEST_CASE("every SIMD f16_matmul family equals the scalar family bit for bit") {
    for (const isa family : test::simd_families) {
        if (!test::family_runs_here(family))
            continue;
        CAPTURE(isa_name(family));
        for (const shape& s : shapes) {
            CAPTURE(s.rows);
            CAPTURE(s.cols);
            CAPTURE(s.n_tok);
            const std::size_t ldx = s.cols + 3;
            const std::size_t ldy = s.rows + 5;
            const std::vector<std::uint16_t> w = random_f16(s.rows * s.cols, 7);
            // Mixed magnitudes make the summation order visible in the last bits.
            std::vector<float> x = test::random_floats(s.n_tok * ldx, 8, -2.0f, 2.0f);
            for (std::size_t i = 0; i < x.size(); i += 5)
                x[i] *= 300.0f;
            const std::vector<float> expect =
                run(w, s.rows, s.cols, x, s.n_tok, ldx, ldy, 1, isa::scalar);
            CHECK(first_bit_difference(run(w, s.rows, s.cols, x, s.n_tok, ldx, ldy, 1, family),
                                       expect) == -1);
            CHECK(first_bit_difference(run(w, s.rows, s.cols, x, s.n_tok, ldx, ldy, 2, family),
                                       expect) == -1);
        }
    }
}

TEST_CASE("the fixed summation order is visible: a sequential sum differs") {
    // Guards the test above against comparing two identical naive loops: with this data a plain
    // left-to-right float sum gives a different result from the 16-lane order.
    const std::size_t cols = 2560;
    const std::vector<std::uint16_t> w = random_f16(cols, 17);
    std::vector<float> x = test::random_floats(cols, 18, -2.0f, 2.0f);
    for (std::size_t i = 0; i < cols; i += 5)
        x[i] *= 300.0f;
    float sequential = 0.0f;
    for (std::size_t k = 0; k < cols; ++k)
        sequential = std::fma(f16_to_f32(w[k]), f16_to_f32(f32_to_f16(x[k])), sequential);
    const std::vector<float> y = run(w, 1, cols, x, 1, cols, 1, 1, isa::scalar);
    CHECK(y[0] != sequential);
}
