// The ternary product and activation quantization (kernels/ternary_matmul.hpp): the scalar family
// against a naive integer reference built here from ternary values, and every SIMD family against
// the scalar family bit for bit, on production-like and ragged shapes.
#include "kernels/ternary_matmul.hpp"

#include "kernel_test_util.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

using namespace bitnet;
using namespace bitnet::kernels;
using bitnet::test::first_bit_difference;

namespace {

// Ternary weights w[m][k] ∈ {-1, 0, 1} and their I2_S bytes, encoded from the formula of
// docs/GGUF-FORMAT.md §2.2 (flat index i = m·K + k, 128-code blocks of 32 bytes, code j of a block
// at byte j % 32, shift 6 − 2·(j / 32)), independently of the kernels' own decoder.
struct ternary_case {
    std::uint32_t rows = 0;
    std::uint32_t cols = 0;
    std::vector<std::int8_t> w;
    std::vector<std::uint8_t> i2s;
};

void set_code(std::vector<std::uint8_t>& i2s, std::size_t i, unsigned code) {
    const std::size_t b = i / 128;
    const std::size_t j = i % 128;
    i2s[32 * b + j % 32] |= static_cast<std::uint8_t>(code << (6 - 2 * (j / 32)));
}

ternary_case random_ternary(std::uint32_t rows, std::uint32_t cols, std::uint32_t seed) {
    ternary_case c{rows, cols, {}, {}};
    c.w.resize(static_cast<std::size_t>(rows) * cols);
    c.i2s.assign(c.w.size() / 4, 0);
    std::mt19937 rng(seed);
    for (std::size_t i = 0; i < c.w.size(); ++i) {
        c.w[i] = static_cast<std::int8_t>(static_cast<int>(rng() % 3) - 1);
        set_code(c.i2s, i, static_cast<unsigned>(c.w[i] + 1));
    }
    return c;
}

// y = (float)(Σ w·q) / act_scale · w_scale with the integer sum taken over the ternary values.
std::vector<float> naive_product(const ternary_case& c, const quantized_acts& a, float w_scale) {
    std::vector<float> y(a.n_rows * c.rows);
    for (std::size_t t = 0; t < a.n_rows; ++t)
        for (std::size_t m = 0; m < c.rows; ++m) {
            std::int64_t dot = 0;
            for (std::size_t k = 0; k < c.cols; ++k)
                dot += c.w[m * c.cols + k] * a.q[t * c.cols + k];
            y[t * c.rows + m] = static_cast<float>(dot) / a.scale[t] * w_scale;
        }
    return y;
}

quantized_acts random_acts(std::size_t n_tok, std::size_t k, std::uint32_t seed) {
    const std::vector<float> x = test::random_floats(n_tok * k, seed, -3.0f, 3.0f);
    quantized_acts a;
    quantize_activations(x.data(), n_tok, k, k, a, isa::scalar);
    return a;
}

std::vector<float> run(const packed_ternary& w, const quantized_acts& a, int n_threads) {
    std::vector<float> y(a.n_rows * w.rows, std::numeric_limits<float>::quiet_NaN());
    ternary_matmul(w, a, y.data(), w.rows, n_threads);
    return y;
}

struct shape {
    std::uint32_t rows;
    std::uint32_t cols;
    std::size_t n_tok;
};

// Rows on and off the 32/64-row tiles, K from one block to the 2B-4T width, token counts around
// the register tiles (groups of 1 to 4 for AVX2, 6 for AVX-512) and across the 96-token blocks of
// the batched path (whose AVX2 family unpacks a tile once when a block has more than 8 tokens).
// The AVX2 passes of 3 and 4 tokens take one half of a tile's code registers each (rows 8–15,
// 24–31, ... or the others): 5, 20, 39 and 41 rows end a tile inside or just before such a
// pass. That
// path goes through K in blocks of 512 columns, carrying int32 sums between them: K of 640 and
// 6,912 end in a shorter block, with an odd token count so the one-token tail crosses it too.
constexpr shape shapes[] = {
    {1, 128, 1},   {3, 128, 2},    {31, 256, 3},    {32, 128, 5},   {33, 384, 17},  {64, 256, 6},
    {65, 128, 7},  {100, 512, 64}, {127, 128, 129}, {130, 2560, 1}, {64, 2560, 13}, {200, 1024, 12},
    {17, 6912, 2}, {33, 128, 200}, {70, 256, 97},   {96, 640, 99},  {40, 6912, 5},  {5, 256, 4},
    {20, 128, 3},  {39, 512, 4},   {41, 256, 7},    {90, 2560, 8},  {64, 384, 9},
};

/// The scalar family and every SIMD family this CPU runs.
std::vector<isa> families_here() {
    std::vector<isa> out{isa::scalar};
    for (const isa f : test::simd_families)
        if (test::family_runs_here(f))
            out.push_back(f);
    return out;
}

} // namespace

TEST_CASE("scalar ternary_matmul equals the naive integer product of the ternary values") {
    for (const shape& s : shapes) {
        CAPTURE(s.rows);
        CAPTURE(s.cols);
        CAPTURE(s.n_tok);
        const ternary_case c = random_ternary(s.rows, s.cols, s.rows * 7 + s.cols);
        const quantized_acts a = random_acts(s.n_tok, s.cols, static_cast<std::uint32_t>(s.n_tok));
        const packed_ternary w = pack_ternary(c.i2s.data(), s.rows, s.cols, 0.75f, isa::scalar);
        CHECK(first_bit_difference(run(w, a, 1), naive_product(c, a, 0.75f)) == -1);
    }
}

TEST_CASE("every SIMD ternary_matmul family equals the scalar family bit for bit") {
    for (const isa family : test::simd_families) {
        if (!test::family_runs_here(family))
            continue;
        CAPTURE(isa_name(family));
        for (const shape& s : shapes) {
            CAPTURE(s.rows);
            CAPTURE(s.cols);
            CAPTURE(s.n_tok);
            const ternary_case c = random_ternary(s.rows, s.cols, s.rows * 13 + s.cols);
            const quantized_acts a = random_acts(s.n_tok, s.cols, 99 + s.rows);
            const packed_ternary ref =
                pack_ternary(c.i2s.data(), s.rows, s.cols, 0.0123f, isa::scalar);
            const packed_ternary w = pack_ternary(c.i2s.data(), s.rows, s.cols, 0.0123f, family);
            REQUIRE(w.family == family);
            const std::vector<float> expect = run(ref, a, 1);
            CHECK(first_bit_difference(run(w, a, 1), expect) == -1);
            CHECK(first_bit_difference(run(w, a, 2), expect) == -1);
        }
    }
}

TEST_CASE("ternary_matmul is exact at the extremes of the int8 codes") {
    // All weights +1 (code 2) against q = -128 everywhere: the largest magnitude an int16 pair
    // sum can reach (2·2·128), which the AVX2 family accumulates in int16 before widening.
    const std::uint32_t rows = 40;
    const std::uint32_t cols = 2560;
    ternary_case c{rows, cols, std::vector<std::int8_t>(rows * cols, 1),
                   std::vector<std::uint8_t>(rows * cols / 4, 0)};
    for (std::size_t i = 0; i < c.w.size(); ++i)
        set_code(c.i2s, i, 2);
    quantized_acts a;
    a.resize(3, cols);
    for (std::size_t i = 0; i < cols; ++i) {
        a.q[i] = -128;
        a.q[cols + i] = 127;
        a.q[2 * cols + i] = static_cast<std::int8_t>(i % 2 == 0 ? 127 : -128);
    }
    for (std::size_t t = 0; t < 3; ++t) {
        std::int32_t sum = 0;
        for (std::size_t i = 0; i < cols; ++i)
            sum += a.q[t * cols + i];
        a.sum[t] = sum;
        a.scale[t] = 1.0f;
    }
    const std::vector<float> expect = naive_product(c, a, 1.0f);
    CHECK(expect[0] == -128.0f * cols);
    for (const isa family : {isa::scalar, isa::avx2, isa::avx512_vnni}) {
        if (!test::family_runs_here(family))
            continue;
        CAPTURE(isa_name(family));
        const packed_ternary w = pack_ternary(c.i2s.data(), rows, cols, 1.0f, family);
        CHECK(first_bit_difference(run(w, a, 1), expect) == -1);
    }
}

TEST_CASE("pack_ternary reads code 3 as a zero weight in every family") {
    const std::uint32_t rows = 70;
    const std::uint32_t cols = 256;
    ternary_case c = random_ternary(rows, cols, 5);
    // Turn every zero weight of even rows into code 3 (= 1 | 2 on top of code 1).
    for (std::size_t i = 0; i < c.w.size(); ++i)
        if (c.w[i] == 0 && (i / cols) % 2 == 0)
            set_code(c.i2s, i, 3);
    const quantized_acts a = random_acts(5, cols, 8);
    const std::vector<float> expect = naive_product(c, a, 2.0f);
    for (const isa family : {isa::scalar, isa::avx2, isa::avx512_vnni}) {
        if (!test::family_runs_here(family))
            continue;
        CAPTURE(isa_name(family));
        const packed_ternary w = pack_ternary(c.i2s.data(), rows, cols, 2.0f, family);
        CHECK(first_bit_difference(run(w, a, 1), expect) == -1);
    }
}

TEST_CASE("ternary_matmul writes only its rows into a strided output") {
    const std::uint32_t rows = 45; // a partial tile in every family
    const std::uint32_t cols = 128;
    const std::size_t ldy = rows + 19;
    const ternary_case c = random_ternary(rows, cols, 21);
    const quantized_acts a = random_acts(4, cols, 22);
    const std::vector<float> expect = naive_product(c, a, 1.5f);
    for (const isa family : {isa::scalar, isa::avx2, isa::avx512_vnni}) {
        if (!test::family_runs_here(family))
            continue;
        CAPTURE(isa_name(family));
        const packed_ternary w = pack_ternary(c.i2s.data(), rows, cols, 1.5f, family);
        std::vector<float> y(4 * ldy, -7.0f);
        ternary_matmul(w, a, y.data(), ldy, 2);
        for (std::size_t t = 0; t < 4; ++t)
            for (std::size_t m = 0; m < ldy; ++m) {
                CAPTURE(t);
                CAPTURE(m);
                if (m < rows)
                    CHECK(y[t * ldy + m] == expect[t * rows + m]);
                else
                    CHECK(y[t * ldy + m] == -7.0f);
            }
    }
}

TEST_CASE("quantize_activations floors max|x| at 1e-5, so all zeros give zero codes") {
    const std::vector<float> x(256, 0.0f);
    for (const isa family : {isa::scalar, isa::avx2, isa::avx512_vnni}) {
        if (!test::family_runs_here(family))
            continue;
        quantized_acts a;
        quantize_activations(x.data(), 1, x.size(), x.size(), a, family);
        CHECK(a.scale[0] == static_cast<float>(127.0 / 1e-5));
        CHECK(a.sum[0] == 0);
        for (const std::int8_t q : a.q)
            CHECK(q == 0);
    }
}

TEST_CASE("quantize_activations rounds ties to even and reaches -127 at -max|x|") {
    // max|x| = 127 makes the scale exactly 1, so x·s is x and the ties are exact.
    const std::vector<float> x = {127.0f, 0.5f,  1.5f,  2.5f,   -0.5f,   -1.5f, -2.5f, 3.5f,
                                  -127.f, 0.49f, 0.51f, 126.5f, -126.5f, 4.5f,  -3.5f, 0.0f};
    const std::vector<std::int8_t> want = {127,  0, 2, 2,   0,    -2, -2, 4,
                                           -127, 0, 1, 126, -126, 4,  -4, 0};
    for (const isa family : {isa::scalar, isa::avx2, isa::avx512_vnni}) {
        if (!test::family_runs_here(family))
            continue;
        CAPTURE(isa_name(family));
        quantized_acts a;
        quantize_activations(x.data(), 1, x.size(), x.size(), a, family);
        CHECK(a.scale[0] == 1.0f);
        CHECK(a.q == want);
        std::int32_t sum = 0;
        for (const std::int8_t q : want)
            sum += q;
        CHECK(a.sum[0] == sum);
    }
}

TEST_CASE("quantize_activations never produces -128 from finite input") {
    // The clamp at -128 is only a guard: with s = 127 / max|x| rounded to float, |x·s| rounds to
    // at most 127. Values just below the max and a max whose reciprocal rounds up test that.
    for (const float max : {1.0f, 3.0f, 0.1f, 7e-6f, 1e30f, 0.3333333f}) {
        CAPTURE(max);
        std::vector<float> x = {-max, max, std::nextafter(-max, 0.0f), -max * 0.999f};
        for (const isa family : {isa::scalar, isa::avx2, isa::avx512_vnni}) {
            if (!test::family_runs_here(family))
                continue;
            quantized_acts a;
            quantize_activations(x.data(), 1, x.size(), x.size(), a, family);
            for (const std::int8_t q : a.q)
                CHECK(q >= -127);
            if (max >= 1e-5f)
                CHECK(a.q[0] == -127);
        }
    }
}

TEST_CASE("every SIMD quantize_activations family equals the scalar family") {
    for (const isa family : test::simd_families) {
        if (!test::family_runs_here(family))
            continue;
        CAPTURE(isa_name(family));
        for (const std::size_t k : {1u, 7u, 8u, 31u, 33u, 128u, 2560u, 2561u, 6912u}) {
            CAPTURE(k);
            const std::size_t n_rows = 3;
            const std::size_t ldx = k + 5;
            std::vector<float> x =
                test::random_floats(n_rows * ldx, static_cast<std::uint32_t>(k), -50.0f, 50.0f);
            // Row 1 has a wide dynamic range, row 2 values on exact .5 ties after scaling.
            for (std::size_t i = 0; i < k; ++i) {
                x[ldx + i] *= (i % 17 == 0) ? 1000.0f : 0.001f;
                x[2 * ldx + i] = static_cast<float>(static_cast<int>(i % 255) - 127) + 0.5f;
            }
            if (k > 0)
                x[2 * ldx] = 127.0f;
            quantized_acts ref;
            quantize_activations(x.data(), n_rows, k, ldx, ref, isa::scalar);
            quantized_acts got;
            quantize_activations(x.data(), n_rows, k, ldx, got, family);
            CHECK(got.q == ref.q);
            CHECK(got.sum == ref.sum);
            CHECK(first_bit_difference(got.scale, ref.scale) == -1);
        }
    }
}

TEST_CASE("a family the CPU lacks is lowered to one it has") {
    const isa got = best_isa_up_to(isa::avx512_vnni);
    CHECK(isa_supported(got));
    if (isa_supported(isa::avx512_vnni))
        CHECK(got == isa::avx512_vnni);
    CHECK(best_isa_up_to(isa::scalar) == isa::scalar);
    CHECK(ternary_tile_rows(isa::scalar) == 1);
    CHECK(ternary_tile_rows(isa::avx2) == 64);
    CHECK(ternary_tile_rows(isa::avx512_vnni) == 64);
}

TEST_CASE("every SIMD family packs the same bytes") {
    if (!isa_supported(isa::avx512_vnni) || !isa_supported(isa::avx2)) {
        MESSAGE("skipping: needs both AVX2 and AVX-512 VNNI");
        return;
    }
    for (const shape& s : shapes) {
        CAPTURE(s.rows);
        CAPTURE(s.cols);
        const ternary_case c = random_ternary(s.rows, s.cols, s.rows + 3 * s.cols);
        const packed_ternary a = pack_ternary(c.i2s.data(), s.rows, s.cols, 1.0f, isa::avx2);
        const packed_ternary b = pack_ternary(c.i2s.data(), s.rows, s.cols, 1.0f, isa::avx512_vnni);
        REQUIRE(a.data.size() == b.data.size());
        CHECK(std::memcmp(a.data.data(), b.data.data(), a.data.size()) == 0);
    }
}

TEST_CASE("ternary_runs_on: every SIMD family runs SIMD-packed weights, scalar only its own") {
    const ternary_case c = random_ternary(70, 128, 4);
    const packed_ternary scalar = pack_ternary(c.i2s.data(), 70, 128, 1.0f, isa::scalar);
    CHECK(ternary_runs_on(scalar, isa::scalar));
    CHECK_FALSE(ternary_runs_on(scalar, isa::avx2));
    CHECK_FALSE(ternary_runs_on(scalar, isa::avx512_vnni));
    for (const isa packed_for : test::simd_families) {
        if (!test::family_runs_here(packed_for))
            continue;
        CAPTURE(isa_name(packed_for));
        const packed_ternary w = pack_ternary(c.i2s.data(), 70, 128, 1.0f, packed_for);
        CHECK_FALSE(ternary_runs_on(w, isa::scalar));
        for (const isa run_as : test::simd_families)
            CHECK(ternary_runs_on(w, run_as) == isa_supported(run_as));
        const quantized_acts a = random_acts(2, 128, 1);
        std::vector<float> y(2 * 70);
        CHECK_THROWS_AS(ternary_matmul(w, a, y.data(), 70, 1, isa::scalar), std::invalid_argument);
    }
}

TEST_CASE("every SIMD family runs weights packed for any SIMD family, equal to scalar") {
    // Rows off the 64-row tile (and off the 32-row passes), every token count from 1 to 100 so
    // each register tile, remainder and unpack-first block is reached, and K from one block up.
    constexpr shape cross[] = {{100, 256, 0}, {37, 128, 0}, {130, 640, 0}};
    for (const shape& s : cross) {
        CAPTURE(s.rows);
        CAPTURE(s.cols);
        const ternary_case c = random_ternary(s.rows, s.cols, s.rows * 5 + s.cols);
        const packed_ternary ref = pack_ternary(c.i2s.data(), s.rows, s.cols, 0.31f, isa::scalar);
        for (const isa packed_for : test::simd_families) {
            if (!test::family_runs_here(packed_for))
                continue;
            const packed_ternary w = pack_ternary(c.i2s.data(), s.rows, s.cols, 0.31f, packed_for);
            for (const isa run_as : test::simd_families) {
                if (!isa_supported(run_as))
                    continue;
                CAPTURE(isa_name(packed_for));
                CAPTURE(isa_name(run_as));
                for (std::size_t n_tok = 1; n_tok <= 100; ++n_tok) {
                    CAPTURE(n_tok);
                    const quantized_acts a =
                        random_acts(n_tok, s.cols, static_cast<std::uint32_t>(n_tok * 31));
                    std::vector<float> y(n_tok * s.rows, std::numeric_limits<float>::quiet_NaN());
                    ternary_matmul(w, a, y.data(), s.rows, 2, run_as);
                    CHECK(first_bit_difference(y, run(ref, a, 1)) == -1);
                }
            }
        }
    }
}

TEST_CASE("ternary_matmul_group equals separate ternary_matmul calls bit for bit, every family") {
    // A layer's Q, K, V and its gate and up as groups of ragged row counts over one input, on
    // 1, 2 and 3 threads (thread ranges then start and end inside different products).
    struct group_case {
        std::vector<std::uint32_t> rows;
        std::uint32_t cols;
        std::size_t n_tok;
    };
    const group_case cases[] = {
        {{256, 64, 64}, 256, 1}, {{130, 33, 33}, 384, 5},    {{1, 3, 200}, 128, 7},
        {{512, 512}, 256, 13},   {{65, 127, 64, 1}, 128, 2}, {{2560, 640, 640}, 2560, 1},
        {{100, 100}, 1024, 97},
    };
    const std::vector<isa> families = families_here();
    for (const isa family : families) {
        CAPTURE(isa_name(family));
        for (const auto& gc : cases) {
            CAPTURE(gc.rows.size());
            CAPTURE(gc.cols);
            CAPTURE(gc.n_tok);
            const quantized_acts a = random_acts(gc.n_tok, gc.cols, 7 + gc.cols);
            std::vector<packed_ternary> ws;
            for (std::size_t i = 0; i < gc.rows.size(); ++i) {
                const ternary_case c = random_ternary(gc.rows[i], gc.cols,
                                                      static_cast<std::uint32_t>(31 * i + gc.cols));
                ws.push_back(pack_ternary(c.i2s.data(), gc.rows[i], gc.cols,
                                          0.5f + 0.25f * static_cast<float>(i), family));
                REQUIRE(ws.back().family == family);
            }
            for (int threads : {1, 2, 3}) {
                CAPTURE(threads);
                // Outputs strided as in the engine: each product's rows in a wider buffer.
                std::vector<std::vector<float>> got(ws.size());
                std::vector<ternary_product> group;
                for (std::size_t i = 0; i < ws.size(); ++i) {
                    got[i].assign(gc.n_tok * (ws[i].rows + 5),
                                  std::numeric_limits<float>::quiet_NaN());
                    group.push_back({&ws[i], got[i].data(), ws[i].rows + 5});
                }
                ternary_matmul_group(group, a, threads, family);
                for (std::size_t i = 0; i < ws.size(); ++i) {
                    CAPTURE(i);
                    std::vector<float> want(gc.n_tok * (ws[i].rows + 5),
                                            std::numeric_limits<float>::quiet_NaN());
                    ternary_matmul(ws[i], a, want.data(), ws[i].rows + 5, 1, family);
                    // Equal where written, and the gaps between rows untouched (NaN in both).
                    CHECK(first_bit_difference(got[i], want) == -1);
                }
            }
        }
    }
}

TEST_CASE("a product with too few tiles for its threads is split over tokens too, bit for bit") {
    // When tokens are split (detail::token_groups): the 2B shape's 2,560-row projections have 40
    // tiles, too few for 16 threads, and are cut into token groups; on 2 threads they are not.
    CHECK(detail::token_groups(40, 512, 16, 16) == 2); // 5 halves a thread, not 2.5 tiles
    CHECK(detail::token_groups(40, 32, 16, 16) == 2);
    CHECK(detail::token_groups(40, 31, 16, 16) == 1);   // groups of at least 16 tokens
    CHECK(detail::token_groups(40, 512, 2, 16) == 1);   // 20 tiles a thread already
    CHECK(detail::token_groups(216, 512, 16, 16) == 2); // gate and up: 27 halves, not 13.5 tiles
    CHECK(detail::token_groups(60, 512, 16, 16) == 4);  // Q, K, V: 15 quarters, not 7.5 halves
    CHECK(detail::token_groups(60, 32, 16, 16) == 1);   // halves share out no better
    CHECK(detail::token_groups(3, 100, 2, 16) == 2);
    CHECK(detail::token_groups(3, 100, 1, 16) == 1);
    CHECK(detail::token_groups(40, 100, 16, 64) == 1); // the AVX2 family's groups: 64 or more
    CHECK(detail::token_groups(40, 512, 16, 64) == 2);
    // Ragged rows and token counts that do not divide into the groups, on thread counts that
    // split (every part written once: y starts as NaN), in every family.
    const shape split_shapes[] = {
        {64, 256, 32},   {65, 128, 47},   {200, 384, 100}, {130, 640, 33},
        {320, 256, 96},  {31, 1024, 77},  {1, 128, 64},    {64, 256, 128},
        {130, 384, 131}, {200, 256, 300}, {320, 640, 200},
    };
    const std::vector<isa> families = families_here();
    for (const isa family : families) {
        CAPTURE(isa_name(family));
        for (const shape& s : split_shapes) {
            CAPTURE(s.rows);
            CAPTURE(s.cols);
            CAPTURE(s.n_tok);
            const ternary_case c = random_ternary(s.rows, s.cols, s.rows * 5 + s.cols);
            const quantized_acts a = random_acts(s.n_tok, s.cols, 3 + s.rows);
            const packed_ternary ref =
                pack_ternary(c.i2s.data(), s.rows, s.cols, 0.031f, isa::scalar);
            const packed_ternary w = pack_ternary(c.i2s.data(), s.rows, s.cols, 0.031f, family);
            const std::vector<float> expect = run(ref, a, 1);
            // The scalar family's parts are 16 rows, and the AVX2 family's token groups at least
            // 64 tokens (kernels/ternary_matmul.cpp, rows_kernel).
            const std::size_t grain = family == isa::scalar ? 16 : ternary_tile_rows(family);
            const std::size_t tiles = (s.rows + grain - 1) / grain;
            const std::size_t min_tokens = family == isa::avx2 ? 64 : 16;
            bool split_seen = false;
            for (int threads : {2, 3, 7, 16}) {
                CAPTURE(threads);
                split_seen |= detail::token_groups(tiles, s.n_tok, threads, min_tokens) > 1;
                CHECK(first_bit_difference(run(w, a, threads), expect) == -1);
            }
            if (s.n_tok >= 2 * min_tokens)
                CHECK(split_seen);
        }
    }
}
