// The CUDA kernels of kernels/cuda/ against the CPU kernels, bit for bit, through the ops
// interface (alloc, upload, run, download): the same checks run on the simulated grid in every
// build (cuda_*_sim_test.cpp) and on a real device in the `gpu` suite (tests/gpu/). Each check
// fills the output with a sentinel first, so a write outside the contract's rows shows too.
#pragma once

#include "cuda_sim_util.hpp"
#include "kernel_test_util.hpp"
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/ternary_gpu_layout.hpp"
#include "kernels/f16.hpp"
#include "kernels/f16_matmul.hpp"
#include "kernels/ternary_matmul.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace bitnet::test::cuda {

namespace kc = bitnet::kernels::cuda;

inline constexpr float sentinel = -12345.5f;

/// Bytes equal (for int8 codes).
inline long first_byte_difference(const std::vector<std::int8_t>& a,
                                  const std::vector<std::int8_t>& b) {
    if (a.size() != b.size())
        return 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i])
            return static_cast<long>(i);
    return -1;
}

// ---- quantize ---------------------------------------------------------------------------------

struct quantize_shape {
    std::uint32_t rows;
    std::uint32_t k;
};
/// One row to the prefill width, k off any power of two, k below one warp, the 2B model's widths.
inline const std::vector<quantize_shape> quantize_shapes = {
    {1, 1}, {1, 7}, {3, 100}, {2, 128}, {5, 255}, {1, 2560}, {4, 2560}, {2, 6912}, {70, 384},
};

/// Activations with the cases that matter: values whose product with the scale lands on .5 (the
/// rounding ties), an all-zero row (the 1e-5 floor), a row of tiny values, and plain noise.
inline std::vector<float> quantize_input(const quantize_shape& s, std::size_t ldx,
                                         std::uint32_t seed) {
    std::vector<float> x = random_floats(s.rows * ldx, seed, -4.0f, 4.0f);
    std::mt19937 rng(seed + 1);
    for (std::size_t r = 0; r < s.rows; ++r) {
        float* row = x.data() + r * ldx;
        if (r % 4 == 1) {
            // max 127: scale 1, every half-integer is a tie.
            for (std::size_t i = 0; i < s.k; ++i)
                row[i] = static_cast<float>(static_cast<int>(rng() % 255) - 127) + 0.5f;
            row[0] = 127.0f;
        } else if (r % 4 == 2) {
            for (std::size_t i = 0; i < s.k; ++i)
                row[i] = 0.0f;
        } else if (r % 4 == 3) {
            for (std::size_t i = 0; i < s.k; ++i)
                row[i] *= 1e-7f;
        }
    }
    return x;
}

inline void check_quantize(kc::ops& o, const quantize_shape& s, std::uint32_t seed) {
    CAPTURE(s.rows);
    CAPTURE(s.k);
    const std::size_t ldx = s.k + 3;
    const std::size_t ldq = (s.k + 15) / 16 * 16 + 16;
    const std::vector<float> x = quantize_input(s, ldx, seed);
    kernels::quantized_acts expect;
    kernels::quantize_activations(x.data(), s.rows, s.k, ldx, expect, kernels::isa::scalar);

    device_vector<float> dx(o, x);
    device_vector<std::int8_t> dq(o, std::vector<std::int8_t>(s.rows * ldq, 99));
    device_vector<float> dscale(o, std::vector<float>(s.rows, sentinel));
    kc::quantize_args a;
    a.x = dx.get();
    a.ldx = static_cast<std::uint32_t>(ldx);
    a.n_rows = s.rows;
    a.k = s.k;
    a.q = dq.get();
    a.ldq = static_cast<std::uint32_t>(ldq);
    a.scale = dscale.get();
    o.run(a);
    const std::vector<std::int8_t> q = dq.download();
    std::vector<std::int8_t> want(s.rows * ldq, 99);
    for (std::size_t r = 0; r < s.rows; ++r)
        std::memcpy(want.data() + r * ldq, expect.q.data() + r * s.k, s.k);
    CHECK(first_byte_difference(q, want) == -1);
    CHECK(first_bit_difference(dscale.download(), expect.scale) == -1);
}

// ---- ternary_gemm -----------------------------------------------------------------------------

struct ternary_shape {
    std::uint32_t rows; ///< M
    std::uint32_t cols; ///< K
    std::uint32_t n_tok;
};
/// Rows on and off the GEMV's 8-row blocks and the GEMM's 64-row tiles, K from one 128-column
/// chunk to the 2B model's FFN width, tokens across the GEMV/GEMM switch (4) and the GEMM's
/// 16-token tiles, up to 70.
inline const std::vector<ternary_shape> ternary_shapes = {
    {1, 128, 1},   {7, 256, 1},   {9, 128, 2},    {63, 384, 3},  {65, 128, 4},
    {64, 2560, 1}, {130, 256, 5}, {33, 128, 16},  {64, 512, 17}, {100, 256, 31},
    {70, 128, 70}, {17, 6912, 2}, {129, 1024, 9}, {3, 2560, 70},
};

/// Random I2_S bytes: every 2-bit code 0..3 (3 never comes from bitnet.cpp; it must read as 0).
inline std::vector<std::uint8_t> random_i2s(std::uint32_t rows, std::uint32_t cols,
                                            std::uint32_t seed) {
    std::vector<std::uint8_t> b(static_cast<std::size_t>(rows) * cols / 4);
    std::mt19937 rng(seed);
    for (auto& v : b)
        v = static_cast<std::uint8_t>(rng());
    return b;
}

/// The CPU's answer: the scalar family, then out_multiplier as cpu_engine::bitlinear.
inline std::vector<float> cpu_bitlinear(const std::vector<std::uint8_t>& i2s,
                                        const ternary_shape& s, float w_scale,
                                        const kernels::quantized_acts& acts, std::size_t ldy,
                                        float out_multiplier) {
    const kernels::packed_ternary w =
        kernels::pack_ternary(i2s.data(), s.rows, s.cols, w_scale, kernels::isa::scalar);
    std::vector<float> y(s.n_tok * ldy, sentinel);
    kernels::ternary_matmul(w, acts, y.data(), ldy, 1, kernels::isa::scalar);
    if (out_multiplier != 1.0f)
        for (std::size_t t = 0; t < s.n_tok; ++t)
            for (std::uint32_t m = 0; m < s.rows; ++m)
                y[t * ldy + m] *= out_multiplier;
    return y;
}

inline void check_ternary_gemm(kc::ops& o, const ternary_shape& s, std::uint32_t seed,
                               float out_multiplier) {
    CAPTURE(s.rows);
    CAPTURE(s.cols);
    CAPTURE(s.n_tok);
    CAPTURE(out_multiplier);
    const std::vector<std::uint8_t> i2s = random_i2s(s.rows, s.cols, seed);
    const float w_scale = 0.0123f + 0.001f * static_cast<float>(seed % 7);
    const std::vector<float> x = random_floats(s.n_tok * s.cols, seed + 5, -3.0f, 3.0f);
    kernels::quantized_acts acts;
    kernels::quantize_activations(x.data(), s.n_tok, s.cols, s.cols, acts, kernels::isa::scalar);
    const std::size_t ldy = s.rows + 5;
    const std::vector<float> expect = cpu_bitlinear(i2s, s, w_scale, acts, ldy, out_multiplier);

    device_vector<std::uint8_t> dw(o, kc::pack_ternary_gpu(i2s.data(), s.rows, s.cols));
    device_vector<std::int8_t> dq(o, acts.q);
    device_vector<float> dscale(o, acts.scale);
    device_vector<float> dy(o, std::vector<float>(s.n_tok * ldy, sentinel));
    kc::ternary_gemm_args a;
    a.w = dw.get();
    a.rows = s.rows;
    a.cols = s.cols;
    a.w_scale = w_scale;
    a.q = dq.get();
    a.ldq = s.cols;
    a.act_scale = dscale.get();
    a.n_rows = s.n_tok;
    a.y = dy.get();
    a.ldy = static_cast<std::uint32_t>(ldy);
    a.out_multiplier = out_multiplier;
    o.run(a);
    CHECK(first_bit_difference(dy.download(), expect) == -1);
}

// ---- f16_gemm ---------------------------------------------------------------------------------

struct f16_shape {
    std::uint32_t rows;
    std::uint32_t cols;
    std::uint32_t n_tok;
};
/// cols below, on and off the 16 lanes and the 512-column chunks, multiples of 8 (16-byte rows:
/// the vector loads) and not, multiples of 8 but not of 16 (a thread pair's last step half past
/// the end); rows off the 128-row blocks; tokens off the 4-token blocks.
inline const std::vector<f16_shape> f16_shapes = {
    {1, 1, 1},     {15, 15, 1},  {17, 16, 2},   {16, 17, 3}, {33, 100, 4},  {5, 513, 5},
    {40, 1030, 9}, {3, 2560, 1}, {20, 512, 12}, {6, 40, 1},  {130, 520, 3}, {129, 1032, 6},
};

inline void check_f16_gemm(kc::ops& o, const f16_shape& s, std::uint32_t seed, bool gather) {
    CAPTURE(s.rows);
    CAPTURE(s.cols);
    CAPTURE(s.n_tok);
    CAPTURE(gather);
    const std::vector<float> wf = random_floats(std::size_t{s.rows} * s.cols, seed, -1.0f, 1.0f);
    std::vector<std::uint16_t> w(wf.size());
    for (std::size_t i = 0; i < w.size(); ++i)
        w[i] = kernels::f32_to_f16(wf[i]);
    // x has more rows than tokens; the gather picks n_tok of them, out of order.
    const std::size_t ldx = s.cols + 7;
    const std::uint32_t x_rows_total = s.n_tok * 2 + 1;
    const std::vector<float> x = random_floats(x_rows_total * ldx, seed + 3, -2.0f, 2.0f);
    std::vector<std::int32_t> pick(s.n_tok);
    for (std::uint32_t t = 0; t < s.n_tok; ++t)
        pick[t] = gather ? static_cast<std::int32_t>((2 * t + 1 + seed) % x_rows_total)
                         : static_cast<std::int32_t>(t);
    std::vector<float> xg(std::size_t{s.n_tok} * s.cols);
    for (std::uint32_t t = 0; t < s.n_tok; ++t)
        std::memcpy(xg.data() + std::size_t{t} * s.cols, x.data() + pick[t] * ldx,
                    s.cols * sizeof(float));
    const std::size_t ldy = s.rows + 2;
    std::vector<float> expect(s.n_tok * ldy, sentinel);
    kernels::f16_matmul(w.data(), s.rows, s.cols, xg.data(), s.n_tok, s.cols, expect.data(), ldy, 1,
                        kernels::isa::scalar);

    device_vector<std::uint16_t> dw(o, w);
    device_vector<float> dx(o, x);
    device_vector<std::int32_t> drows(o, pick);
    device_vector<float> dy(o, std::vector<float>(s.n_tok * ldy, sentinel));
    kc::f16_gemm_args a;
    a.w = dw.get();
    a.rows = s.rows;
    a.cols = s.cols;
    a.x = dx.get();
    a.ldx = static_cast<std::uint32_t>(ldx);
    a.n_rows = s.n_tok;
    a.y = dy.get();
    a.ldy = static_cast<std::uint32_t>(ldy);
    a.x_rows = gather ? drows.get() : nullptr;
    o.run(a);
    CHECK(first_bit_difference(dy.download(), expect) == -1);
}

// ---- the tables: every shape of a kernel, with fixed seeds (the simulated and the gpu suites) ---

inline void check_quantize_table(kc::ops& o) {
    std::uint32_t seed = 1;
    for (const auto& s : quantize_shapes)
        check_quantize(o, s, seed++);
}

/// With and without out_multiplier (BitNet's per-projection scale, applied after the product).
inline void check_ternary_gemm_table(kc::ops& o) {
    std::uint32_t seed = 21;
    for (const auto& s : ternary_shapes) {
        check_ternary_gemm(o, s, seed++, 1.0f);
        check_ternary_gemm(o, s, seed++, 0.3f);
    }
}

/// With and without the gather of x rows.
inline void check_f16_gemm_table(kc::ops& o) {
    std::uint32_t seed = 11;
    for (const auto& s : f16_shapes) {
        check_f16_gemm(o, s, seed++, false);
        check_f16_gemm(o, s, seed++, true);
    }
}

} // namespace bitnet::test::cuda
