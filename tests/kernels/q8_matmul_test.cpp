// The Q8_0 logits product: blocks quantize as ggml's quantize_row_q8_0_ref, every family equals the
// scalar twin bit for bit on ragged shapes, and the scalar twin equals the block formula computed
// here in double, within float rounding.
#include "kernels/q8_matmul.hpp"

#include "kernel_test_util.hpp"
#include "kernels/f16.hpp"

#include <algorithm>
#include <cmath>

using namespace bitnet;
using namespace bitnet::test;

namespace {

// Value k of row m of w, wherever the packed layout keeps it.
int value(const kernels::packed_q8_0& w, std::size_t m, std::size_t k) {
    return w.values.as<std::int8_t>()[m * w.cols + kernels::q8_0_value_offset(k, w.cols)];
}

} // namespace

TEST_CASE("q8_0 logits: the packed layout puts every value of a row in a place of its own") {
    for (std::size_t cols : {32u, 96u, 512u, 544u, 1024u, 2560u, 2592u}) {
        CAPTURE(cols);
        std::vector<int> seen(cols, 0);
        for (std::size_t k = 0; k < cols; ++k) {
            const std::size_t at = kernels::q8_0_value_offset(k, cols);
            REQUIRE(at < cols);
            ++seen[at];
        }
        CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<long>(cols));
    }
    // Word l of vector v of a full group is values 4v..4v+3 of block l.
    CHECK(kernels::q8_0_value_offset(32 * 5 + 4 * 3 + 1, 2560) == 64 * 3 + 4 * 5 + 1);
    // In a last group of 2 blocks (cols 576 = 18 blocks), vectors are 8 bytes apart.
    CHECK(kernels::q8_0_value_offset(512 + 32 + 4 * 7 + 2, 576) == 512 + 8 * 7 + 4 + 2);
}

TEST_CASE("q8_0 logits: weight blocks are ggml's Q8_0 (scale absmax/127 in F16, round half away)") {
    const std::uint32_t rows = 2, cols = 64;
    auto h = random_f16(rows * cols, 3);
    // Row 0, block 0: absmax 127 (so d = 1 exactly) and two exact halves.
    h[0] = kernels::f32_to_f16(-127.0f);
    h[1] = kernels::f32_to_f16(2.5f);
    h[2] = kernels::f32_to_f16(-2.5f);
    for (std::uint32_t k = 3; k < 32; ++k)
        h[k] = kernels::f32_to_f16(0.25f * static_cast<float>(k % 7));
    // Row 1, block 1: all zeros.
    for (std::uint32_t k = 32; k < 64; ++k)
        h[cols + k] = 0;
    const auto w = kernels::pack_q8_0(h.data(), rows, cols, kernels::isa::scalar);
    CHECK(w.bytes() == rows * cols + rows * (cols / 32) * 2);
    const auto* d = w.scales.as<std::uint16_t>();
    CHECK(kernels::f16_to_f32(d[0]) == 1.0f);
    CHECK(value(w, 0, 0) == -127);
    CHECK(value(w, 0, 1) == 3); // half away from zero, not to even
    CHECK(value(w, 0, 2) == -3);
    CHECK(d[1 * 2 + 1] == 0);
    for (std::uint32_t k = 32; k < 64; ++k)
        CHECK(value(w, 1, k) == 0);
    // Every other block against the reference formula, written out here.
    for (std::uint32_t m = 0; m < rows; ++m)
        for (std::uint32_t b = 0; b < cols / 32; ++b) {
            if ((m == 0 && b == 0) || (m == 1 && b == 1))
                continue;
            float amax = 0.0f;
            for (std::uint32_t j = 0; j < 32; ++j)
                amax = std::max(amax, std::fabs(kernels::f16_to_f32(h[m * cols + b * 32 + j])));
            const float dd = amax / 127.0f;
            CHECK(d[m * 2 + b] == kernels::f32_to_f16(dd));
            for (std::uint32_t j = 0; j < 32; ++j) {
                const float x = kernels::f16_to_f32(h[m * cols + b * 32 + j]);
                CHECK(value(w, m, b * 32 + j) == static_cast<int>(std::round(x * (1.0f / dd))));
            }
        }
}

TEST_CASE("q8_0 logits: activation blocks keep their float scale and their extreme at ±127") {
    auto x = random_floats(3 * 96, 5, -2.0f, 2.0f);
    x[40] = -9.0f; // row 0, block 1
    kernels::q8_0_acts a;
    kernels::quantize_q8_0(x.data(), 3, 96, 96, a);
    REQUIRE(a.q.size() == 3 * 96);
    REQUIRE(a.scale.size() == 3 * 3);
    CHECK(a.q[40] == -127);
    CHECK(a.scale[1] == 9.0f / 127.0f);
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t b = 0; b < 3; ++b)
            for (std::size_t j = 0; j < 32; ++j) {
                const std::size_t i = t * 96 + b * 32 + j;
                CHECK(std::fabs(x[i] - a.q[i] * a.scale[t * 3 + b]) <=
                      0.5001f * a.scale[t * 3 + b]);
            }
}

TEST_CASE("q8_0 logits: every family equals the scalar twin, the scalar follows the formula") {
    std::uint32_t seed = 10;
    // cols: one block, partial groups of 2, 3 and 8 blocks, one full group, five full groups, and
    // full groups followed by a partial one; rows around the 4- and 8-row blocks. Tokens: every
    // pass size of the AVX2 family (1 to 6), and 7, 9 and 13 for two and three passes.
    for (std::uint32_t rows : {1u, 3u, 4u, 5u, 9u, 13u, 65u, 130u}) {
        for (std::uint32_t cols : {32u, 64u, 96u, 256u, 512u, 2560u, 2656u}) {
            for (std::size_t n_tok : {1, 2, 3, 4, 5, 6, 7, 9, 13}) {
                CAPTURE(rows);
                CAPTURE(cols);
                CAPTURE(n_tok);
                const auto h = random_f16(std::size_t{rows} * cols, ++seed);
                const auto x = random_floats(n_tok * cols, ++seed, -3.0f, 3.0f);
                kernels::q8_0_acts acts;
                kernels::quantize_q8_0(x.data(), n_tok, cols, cols, acts);
                const auto ws = kernels::pack_q8_0(h.data(), rows, cols, kernels::isa::scalar);
                // y has a wider stride than its rows, to catch writes past them.
                const std::size_t ldy = rows + 3;
                std::vector<float> want(n_tok * ldy, -1.0f);
                kernels::q8_0_matmul(ws, acts, want.data(), ldy, 1);

                // The block formula in double: the scalar twin's float sum is within a few
                // float roundings of it (16 lanes of at most cols/64 + 1 fused steps).
                const auto* d = ws.scales.as<std::uint16_t>();
                const std::size_t nb = cols / 32;
                bool formula = true;
                for (std::size_t t = 0; t < n_tok; ++t)
                    for (std::uint32_t m = 0; m < rows; ++m) {
                        double sum = 0.0;
                        double bound = 0.0;
                        for (std::size_t b = 0; b < nb; ++b) {
                            std::int64_t dot = 0;
                            for (std::size_t j = 0; j < 32; ++j)
                                dot += value(ws, m, b * 32 + j) * acts.q[t * cols + b * 32 + j];
                            const double s =
                                static_cast<double>(kernels::f16_to_f32(d[m * nb + b])) *
                                acts.scale[t * nb + b];
                            sum += s * static_cast<double>(dot);
                            bound += std::fabs(s) * 32.0 * 127.0 * 127.0;
                        }
                        const double err = std::fabs(want[t * ldy + m] - sum);
                        formula = formula && err <= bound * 1e-6;
                    }
                CHECK(formula);
                for (std::size_t t = 0; t < n_tok; ++t)
                    for (std::size_t m = rows; m < ldy; ++m)
                        CHECK(want[t * ldy + m] == -1.0f);

                for (kernels::isa family : simd_families) {
                    if (!family_runs_here(family))
                        continue;
                    const auto wf = kernels::pack_q8_0(h.data(), rows, cols, family);
                    CHECK(wf.family == family);
                    for (int threads : {1, 2}) {
                        std::vector<float> got(n_tok * ldy, -1.0f);
                        kernels::q8_0_matmul(wf, acts, got.data(), ldy, threads);
                        CHECK(first_bit_difference(want, got) == -1);
                    }
                    // One layout for every family: the scalar-packed matrix run by this one.
                    std::vector<float> any(n_tok * ldy, -1.0f);
                    kernels::q8_0_matmul(ws, acts, any.data(), ldy, 2, family);
                    CHECK(first_bit_difference(want, any) == -1);
                }
            }
        }
    }
}
