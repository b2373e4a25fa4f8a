// The greedy token from a Q8_0 screen (kernels/greedy_screen.hpp) is the first maximum of the full
// F16 logits product, bit for bit, in every family: on ragged shapes, with rows planted as exact
// ties and as near ties one F16 step apart, for tokens aligned with a row and for random ones, and
// with values that are not finite (then the full product decides). The screen must also decide
// from few rows when one row stands out, or it would be the full product at a higher price.
#include "kernels/greedy_screen.hpp"

#include "kernel_test_util.hpp"
#include "kernels/f16.hpp"
#include "kernels/f16_matmul.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace bitnet;
using namespace bitnet::test;

namespace {

/// What the screen must reproduce: the scalar F16 product of every row, then the first maximum.
std::vector<kernels::screened_token> reference(const std::vector<std::uint16_t>& w,
                                               std::size_t rows, std::size_t cols,
                                               const std::vector<float>& x, std::size_t n_tok) {
    std::vector<float> y(n_tok * rows);
    kernels::f16_matmul(w.data(), rows, cols, x.data(), n_tok, cols, y.data(), rows, 1,
                        kernels::isa::scalar);
    std::vector<kernels::screened_token> out(n_tok);
    for (std::size_t t = 0; t < n_tok; ++t) {
        const auto* yt = y.data() + t * rows;
        const auto best = std::max_element(yt, yt + rows);
        out[t].token = static_cast<std::int32_t>(best - yt);
        out[t].logit = *best;
    }
    return out;
}

void check_same(const std::vector<kernels::screened_token>& got,
                const std::vector<kernels::screened_token>& want, std::size_t rows) {
    REQUIRE(got.size() == want.size());
    for (std::size_t t = 0; t < got.size(); ++t) {
        CAPTURE(t);
        CHECK(got[t].token == want[t].token);
        CHECK(first_bit_difference({got[t].logit}, {want[t].logit}) == -1);
        CHECK(got[t].exact_rows >= 1);
        CHECK(got[t].exact_rows <= rows);
    }
}

kernels::q8_0_screen screen_of(const std::vector<std::uint16_t>& w, std::size_t rows,
                               std::size_t cols, kernels::isa family) {
    return kernels::make_q8_0_screen(w.data(), static_cast<std::uint32_t>(rows),
                                     static_cast<std::uint32_t>(cols), family);
}

std::vector<kernels::isa> families_here() {
    std::vector<kernels::isa> out{kernels::isa::scalar};
    for (auto f : simd_families)
        if (kernels::isa_supported(f))
            out.push_back(f);
    return out;
}

} // namespace

TEST_CASE("greedy screen: the token is the full F16 product's first maximum, bit for bit, in "
          "every family, on ragged shapes with exact and near ties") {
    std::uint32_t seed = 11;
    for (std::size_t cols : {32u, 96u, 544u, 2560u})
        for (std::size_t rows : {1u, 7u, 65u, 300u}) {
            CAPTURE(cols);
            CAPTURE(rows);
            auto w = random_f16(rows * cols, ++seed);
            const std::size_t a = rows / 3;
            if (rows >= 4) {
                // Row a+1 equals row a (an exact tie: the lower index wins), row a+2 is row a
                // with one value one F16 step larger (a near tie the Q8_0 copy cannot see).
                std::copy_n(w.begin() + a * cols, cols, w.begin() + (a + 1) * cols);
                std::copy_n(w.begin() + a * cols, cols, w.begin() + (a + 2) * cols);
                auto& v = w[(a + 2) * cols + cols / 2];
                v = static_cast<std::uint16_t>(v + 1);
            }
            // Tokens: aligned with row a (its copies are the best rows), with row a and
            // noise, and random.
            const std::size_t n_tok = 5;
            auto x = random_floats(n_tok * cols, ++seed, -1.5f, 1.5f);
            for (std::size_t k = 0; k < cols; ++k) {
                const float wa = kernels::f16_to_f32(w[a * cols + k]);
                x[0 * cols + k] = wa;
                x[1 * cols + k] = wa + 0.05f * x[1 * cols + k];
                x[2 * cols + k] = -wa; // the same row at the bottom: another row wins
            }
            const auto want = reference(w, rows, cols, x, n_tok);
            for (auto family : families_here()) {
                CAPTURE(std::string(kernels::isa_name(family)));
                const auto screen = screen_of(w, rows, cols, family);
                REQUIRE(screen.finite);
                for (int threads : {1, 3}) {
                    std::vector<kernels::screened_token> got(n_tok);
                    kernels::screened_argmax(screen, w.data(), x.data(), n_tok, cols, got.data(),
                                             threads, family);
                    check_same(got, want, rows);
                }
            }
        }
}

TEST_CASE("greedy screen: rows a few F16 steps apart, closer than the Q8_0 copy can tell, still "
          "give the exact first maximum") {
    // Every row is one base row with a few values moved by a few F16 steps: their logits differ
    // by less than what quantizing a row changes, so the Q8_0 products order them wrongly and only
    // a bound that holds keeps the true maximum among the rows computed again.
    std::mt19937 rng(31);
    for (std::size_t cols : {64u, 2560u}) {
        CAPTURE(cols);
        const std::size_t rows = 200;
        const auto base = random_f16(cols, 32 + static_cast<std::uint32_t>(cols));
        std::vector<std::uint16_t> w(rows * cols);
        std::uniform_int_distribution<std::size_t> col(0, cols - 1);
        std::uniform_int_distribution<int> step(-6, 6);
        for (std::size_t m = 0; m < rows; ++m) {
            std::copy(base.begin(), base.end(), w.begin() + m * cols);
            for (int i = 0; i < 4; ++i) {
                auto& v = w[m * cols + col(rng)];
                v = static_cast<std::uint16_t>(v + step(rng)); // same sign: steps in magnitude
            }
        }
        const std::size_t n_tok = 4;
        auto x = random_floats(n_tok * cols, 33, -0.2f, 0.2f);
        for (std::size_t t = 0; t < n_tok; ++t)
            for (std::size_t k = 0; k < cols; ++k)
                x[t * cols + k] += kernels::f16_to_f32(base[k]);
        const auto want = reference(w, rows, cols, x, n_tok);
        for (auto family : families_here()) {
            CAPTURE(std::string(kernels::isa_name(family)));
            const auto screen = screen_of(w, rows, cols, family);
            std::vector<kernels::screened_token> got(n_tok);
            kernels::screened_argmax(screen, w.data(), x.data(), n_tok, cols, got.data(), 2,
                                     family);
            check_same(got, want, rows);
        }
    }
}

TEST_CASE("greedy screen: unlike rows made to tie for one token keep the exact first maximum, "
          "where only the token's quantization separates the Q8_0 products") {
    // Rows on the Q8_0 grid (values q·2^-7, a ±127 in every block: the copy is exact, so the
    // row's term of the bound is 0), each with one value solved so that its logit for the token
    // is 0 to within a grid step: near ties, which the token's own quantization (large at a
    // spike of the token) orders at random in the Q8_0 products. Only a bound that counts the
    // token's term keeps the true maximum among the rows computed again (without it, the wrong
    // row came back in every trial).
    const std::size_t rows = 300, cols = 256;
    const std::size_t spike = 130;
    for (std::uint32_t trial = 0; trial < 8; ++trial) {
        CAPTURE(trial);
        auto x = random_floats(cols, 41 + trial, -0.5f, 0.5f);
        x[spike] = 16.0f;
        std::mt19937 rng(43 + trial);
        std::uniform_int_distribution<int> value(-126, 126);
        std::vector<std::uint16_t> w(rows * cols);
        for (std::size_t m = 0; m < rows; ++m) {
            std::vector<int> q(cols);
            for (std::size_t k = 0; k < cols; ++k)
                q[k] = value(rng);
            for (std::size_t b = 0; b < cols / kernels::q8_0_block; ++b)
                q[b * kernels::q8_0_block + 1] = (m + b) % 2 ? 127 : -127; // the block's absmax
            double rest = 0.0;
            for (std::size_t k = 0; k < cols; ++k)
                if (k != spike)
                    rest += q[k] * 0x1p-7 * x[k];
            q[spike] =
                std::clamp(static_cast<int>(std::lround(-rest / x[spike] * 0x1p7)), -126, 126);
            for (std::size_t k = 0; k < cols; ++k)
                w[m * cols + k] = kernels::f32_to_f16(static_cast<float>(q[k]) * 0x1p-7f);
        }
        const auto want = reference(w, rows, cols, x, 1);
        for (auto family : families_here()) {
            CAPTURE(std::string(kernels::isa_name(family)));
            const auto screen = screen_of(w, rows, cols, family);
            CHECK(*std::max_element(screen.w_err.begin(), screen.w_err.end()) == 0.0f);
            std::vector<kernels::screened_token> got(1);
            kernels::screened_argmax(screen, w.data(), x.data(), 1, cols, got.data(), 2, family);
            check_same(got, want, rows);
        }
    }
}

TEST_CASE("greedy screen: unlike rows made to tie for one token keep the exact first maximum, "
          "where only the rows' quantization separates the Q8_0 products") {
    // The mirror of the case above: the token on the Q8_0 grid (every block's values a·2^-8 with
    // a ±127, and a spike block of a·2^-3: the token's term is 0), the rows random F16 values
    // off the grid, each with one value solved so that its logit is 0 to within an F16 step.
    const std::size_t rows = 300, cols = 256;
    const std::size_t spike = 130, spike_block = spike / kernels::q8_0_block;
    for (std::uint32_t trial = 0; trial < 8; ++trial) {
        CAPTURE(trial);
        std::mt19937 rng(51 + trial);
        std::uniform_int_distribution<int> fine(-126, 126), coarse(-4, 4);
        std::vector<float> x(cols);
        for (std::size_t k = 0; k < cols; ++k) {
            const bool in_spike_block = k / kernels::q8_0_block == spike_block;
            x[k] = in_spike_block ? static_cast<float>(coarse(rng)) * 0x1p-3f
                                  : static_cast<float>(fine(rng)) * 0x1p-8f;
            if (k % kernels::q8_0_block == 5)
                x[k] = in_spike_block ? 0.0f : 127.0f * 0x1p-8f; // the block's absmax
        }
        x[spike] = 127.0f * 0x1p-3f; // 15.875: the spike block's absmax, its scale 2^-3
        auto w = random_f16(rows * cols, 52 + trial);
        for (std::size_t m = 0; m < rows; ++m) {
            double rest = 0.0;
            for (std::size_t k = 0; k < cols; ++k)
                if (k != spike)
                    rest += static_cast<double>(kernels::f16_to_f32(w[m * cols + k])) * x[k];
            w[m * cols + spike] = kernels::f32_to_f16(static_cast<float>(-rest / x[spike]));
        }
        const auto want = reference(w, rows, cols, x, 1);
        for (auto family : families_here()) {
            CAPTURE(std::string(kernels::isa_name(family)));
            const auto screen = screen_of(w, rows, cols, family);
            std::vector<kernels::screened_token> got(1);
            kernels::screened_argmax(screen, w.data(), x.data(), 1, cols, got.data(), 2, family);
            check_same(got, want, rows);
        }
    }
}

TEST_CASE("greedy screen: a row that stands out is decided from a few rows, not all of them") {
    const std::size_t rows = 4000, cols = 2560;
    const auto w = random_f16(rows * cols, 5);
    std::vector<float> x(cols);
    for (std::size_t k = 0; k < cols; ++k)
        x[k] = kernels::f16_to_f32(w[17 * cols + k]);
    const auto screen = kernels::make_q8_0_screen(w.data(), rows, cols);
    kernels::screened_token got;
    kernels::screened_argmax(screen, w.data(), x.data(), 1, cols, &got, 2);
    CHECK(got.token == 17);
    CHECK(got.token == reference(w, rows, cols, x, 1)[0].token);
    MESSAGE("rows computed in F16: " << got.exact_rows << " of " << rows);
    CHECK(got.exact_rows < rows / 100);
}

TEST_CASE("greedy screen: a value that is not finite, in the matrix or in a token, gives what "
          "the full product gives") {
    const std::size_t rows = 40, cols = 96;
    auto w = random_f16(rows * cols, 21);
    auto x = random_floats(3 * cols, 22, -1.0f, 1.0f);
    x[1 * cols + 5] = std::numeric_limits<float>::quiet_NaN();
    x[2 * cols + 9] = std::numeric_limits<float>::infinity();
    // The screen's tokens against the full product's; how many rows the NaN token computed.
    auto check_screen = [&](bool finite_matrix) {
        const auto screen = kernels::make_q8_0_screen(w.data(), rows, cols);
        CHECK(screen.finite == finite_matrix);
        std::vector<kernels::screened_token> got(3);
        kernels::screened_argmax(screen, w.data(), x.data(), 3, cols, got.data(), 1);
        const auto want = reference(w, rows, cols, x, 3);
        for (std::size_t t = 0; t < 3; ++t) {
            CHECK(got[t].token == want[t].token);
            CHECK(first_bit_difference({got[t].logit}, {want[t].logit}) == -1);
        }
        return got[1].exact_rows;
    };
    CHECK(check_screen(true) == rows); // the NaN token took the full product
    w[3 * cols + 7] = 0x7e00;          // NaN
    w[9 * cols + 1] = 0x7c00;          // +inf
    CHECK(check_screen(false) == rows);
}
