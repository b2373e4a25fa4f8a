// The CUDA RMSNorm (kernels/cuda/norm.cuh), RoPE (rope.cuh) and elementwise (elementwise.cuh)
// kernels against the CPU through the ops interface, bit for bit: the same checks run on the
// simulated grid (cuda_{norm,rope,elementwise}_sim_test.cpp) and on a real device (tests/gpu/).
// None of these kernels calls a function whose device version differs from the host's (sqrt and
// division are correctly rounded on both; never build with --use_fast_math), so they are bit for
// bit on a device too.
#pragma once

#include "cuda_sim_util.hpp"
#include "kernel_test_util.hpp"
#include "kernels/activation.hpp"
#include "kernels/cuda/ops.hpp"
#include "kernels/rms_norm.hpp"
#include "kernels/rope.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace bitnet::test::cuda {

namespace kc = bitnet::kernels::cuda;

// ---- rms_norm ---------------------------------------------------------------------------------

/// Runs rms_norm on `o`; rows (when gathering) index x's rows, out has n_out rows of ld (in
/// place: written over x, which then has n_out rows).
inline std::vector<float> run_rms_norm(kc::ops& o, const std::vector<float>& x,
                                       const std::vector<float>& g,
                                       const std::vector<std::int32_t>& rows, std::uint32_t n_out,
                                       std::uint32_t n, std::uint32_t ld, float eps,
                                       bool in_place = false) {
    device_vector<float> dx(o, x);
    device_vector<float> dg(o, g);
    device_vector<float> dy(o, std::vector<float>(std::size_t{n_out} * ld));
    device_vector<std::int32_t> drows(o, rows.empty() ? std::vector<std::int32_t>{0} : rows);
    kc::rms_norm_args a;
    a.x = dx.get();
    a.ldx = ld;
    a.weight = dg.get();
    a.y = in_place ? dx.get() : dy.get();
    a.ldy = ld;
    a.n_rows = n_out;
    a.n = n;
    a.eps = eps;
    a.rows = rows.empty() ? nullptr : drows.get();
    o.run(a);
    return in_place ? dx.download() : dy.download();
}

struct norm_case {
    std::uint32_t n_rows;
    std::uint32_t n;
    std::uint32_t ld;
    bool gather;
};

/// Ragged widths around the 256-thread block and the 2B model's, padded strides, gathered rows.
inline const std::vector<norm_case> norm_cases = {
    {1, 1, 1, false},      {3, 7, 9, false},       {2, 31, 31, true},
    {4, 256, 260, false},  {3, 257, 257, true},    {2, 1000, 1003, false},
    {5, 2560, 2560, true}, {1, 6912, 6912, false}, {2, 2561, 2600, true}};

inline void check_rms_norm_table(kc::ops& o) {
    std::uint32_t seed = 100;
    for (const norm_case& c : norm_cases) {
        CAPTURE(c.n_rows);
        CAPTURE(c.n);
        CAPTURE(c.gather);
        const std::uint32_t n_src = c.gather ? c.n_rows + 3 : c.n_rows;
        const std::vector<float> x = random_floats(std::size_t{n_src} * c.ld, ++seed, -3.0f, 3.0f);
        const std::vector<float> g = random_floats(c.n, ++seed, 0.5f, 1.5f);
        std::vector<std::int32_t> rows;
        if (c.gather)
            for (std::uint32_t r = 0; r < c.n_rows; ++r)
                rows.push_back(static_cast<std::int32_t>((r * 5 + 2) % n_src));
        const float eps = 1e-5f;

        std::vector<float> want(std::size_t{c.n_rows} * c.ld, 0.0f);
        for (std::uint32_t r = 0; r < c.n_rows; ++r) {
            const std::size_t src = c.gather ? static_cast<std::size_t>(rows[r]) : r;
            kernels::rms_norm(x.data() + src * c.ld, g.data(), 1, c.n, c.ld, eps,
                              want.data() + std::size_t{r} * c.ld);
        }
        const std::vector<float> got = run_rms_norm(o, x, g, rows, c.n_rows, c.n, c.ld, eps);
        CHECK(first_bit_difference(got, want) == -1);
    }
}

/// x[0]² = 1 and 255 squares of 2^-56: added in index order each tiny square is rounded away (sum
/// 1), while the block adds them among themselves first (sum 1 + 15·2^-52). With eps =
/// 11589·2^-32, mean + eps is exactly halfway between two floats for the CPU (ties to even: down,
/// to 2^-8·(1 + 5794·2^-23)) and just above halfway for the block's sum (up), and the two
/// neighbours' 1/sqrt differ (a pair found by search): without the order check the scale would be
/// one ulp off.
inline void check_rms_norm_cpu_order(kc::ops& o) {
    const std::uint32_t n = 256;
    std::vector<float> x(n, 0x1p-28f);
    x[0] = 1.0f;
    const std::vector<float> g = random_floats(n, 9, 0.5f, 1.5f);
    const float eps = 11589.0f * 0x1p-32f;
    std::vector<float> want(n);
    kernels::rms_norm(x.data(), g.data(), 1, n, n, eps, want.data());
    const std::vector<float> got = run_rms_norm(o, x, g, {}, 1, n, n, eps);
    CHECK(first_bit_difference(got, want) == -1);
    // The premise: the CPU's scale is the one of the rounded-down neighbour.
    const float down = 0x1p-8f * (1.0f + 5794.0f * 0x1p-23f);
    const float up = std::nextafter(down, 1.0f);
    REQUIRE(1.0f / std::sqrt(down) != 1.0f / std::sqrt(up));
    CHECK(want[0] == (x[0] * (1.0f / std::sqrt(down))) * g[0]);
}

/// In place (y = x), and zero rows: nothing launched (a launch of no blocks would be an error on
/// a device), nothing read.
inline void check_rms_norm_in_place_and_empty(kc::ops& o) {
    const std::uint32_t n = 300;
    const std::uint32_t rows = 3;
    const std::vector<float> x = random_floats(std::size_t{rows} * n, 4, -2.0f, 2.0f);
    const std::vector<float> g = random_floats(n, 5, 0.5f, 1.5f);
    std::vector<float> want(x.size());
    kernels::rms_norm(x.data(), g.data(), rows, n, n, 1e-6f, want.data());

    CHECK(first_bit_difference(run_rms_norm(o, x, g, {}, rows, n, n, 1e-6f, true), want) == -1);

    kc::rms_norm_args a;
    a.n = n;
    a.n_rows = 0;
    a.x = nullptr; // nothing may be read
    o.run(a);
    o.finish();
}

// ---- rope -------------------------------------------------------------------------------------

struct rope_case {
    std::uint32_t n_rows, n_heads, head_dim, pad;
    float base;
};

/// Head sizes odd and not powers of two, padded rows, the 2B model's 20 heads of 128.
inline const std::vector<rope_case> rope_cases = {
    {1, 1, 2, 0, 10000.0f},   {3, 5, 7, 1, 10000.0f}, {4, 20, 128, 0, 500000.0f},
    {2, 3, 100, 5, 10000.0f}, {5, 9, 6, 3, 1000.0f},  {2, 64, 64, 0, 500000.0f},
    {3, 2, 255, 2, 10000.0f}};

/// Both styles, positions in any order; the angle table is the CPU's (kernels::rope_angles_for).
inline void check_rope_table(kc::ops& o) {
    std::uint32_t seed = 300;
    for (const rope_case& c : rope_cases) {
        for (const bool neox : {true, false}) {
            CAPTURE(c.n_rows);
            CAPTURE(c.n_heads);
            CAPTURE(c.head_dim);
            CAPTURE(neox);
            const std::uint32_t ld = c.n_heads * c.head_dim + c.pad;
            const std::uint32_t n_pos = 4100;
            std::mt19937 rng(++seed);
            std::uniform_int_distribution<std::int32_t> pick(0, n_pos - 1);
            std::vector<std::int32_t> pos(c.n_rows);
            for (auto& p : pos)
                p = pick(rng);
            pos[0] = 0; // the identity rotation, where cos = 1 and sin = 0 exactly

            // The table: per position, cos[head_dim/2] then sin[head_dim/2], row stride
            // head_dim. Only the positions used are filled; the rest must never be read.
            std::vector<float> table(std::size_t{n_pos} * c.head_dim, NAN);
            kernels::rope_angles angles;
            for (const std::int32_t p : pos) {
                kernels::rope_angles_for(static_cast<std::uint32_t>(p), c.head_dim, c.base, nullptr,
                                         angles);
                float* row = table.data() + static_cast<std::size_t>(p) * c.head_dim;
                for (std::uint32_t i = 0; i < c.head_dim / 2; ++i) {
                    row[i] = angles.cos[i];
                    row[c.head_dim / 2 + i] = angles.sin[i];
                }
            }
            const std::vector<float> x =
                random_floats(std::size_t{c.n_rows} * ld, ++seed, -4.0f, 4.0f);

            std::vector<float> want = x;
            for (std::uint32_t r = 0; r < c.n_rows; ++r) {
                kernels::rope_angles_for(static_cast<std::uint32_t>(pos[r]), c.head_dim, c.base,
                                         nullptr, angles);
                kernels::rope_apply(want.data() + std::size_t{r} * ld, c.n_heads, c.head_dim,
                                    neox ? kernels::rope_style::neox : kernels::rope_style::norm,
                                    angles);
            }

            device_vector<float> dx(o, x);
            device_vector<float> dtable(o, table);
            device_vector<std::int32_t> dpos(o, pos);
            kc::rope_args a;
            a.x = dx.get();
            a.ldx = ld;
            a.n_rows = c.n_rows;
            a.n_heads = c.n_heads;
            a.head_dim = c.head_dim;
            a.neox = neox;
            a.cos_sin = dtable.get();
            a.pos = dpos.get();
            o.run(a);
            const std::vector<float> got = dx.download();
            CHECK(first_bit_difference(got, want) == -1);
            if (c.n_rows > 1) // rows past the first are at positions other than 0
                CHECK(first_bit_difference(got, x) != -1);
        }
    }
}

// ---- relu_sqr_gate, add -----------------------------------------------------------------------

/// 1 and 255..257 straddle a block, 16777217 = 2^16 blocks of 256 plus one: the grid is capped at
/// 2^16 blocks, so the last element is reached only through the grid-stride loop.
inline constexpr std::uint64_t elementwise_sizes[] = {1,   3,    255,    256,
                                                      257, 6912, 100003, (1u << 24) + 1};

/// Against kernels::gated_activation's scalar family, into another buffer and in place.
inline void check_relu_sqr_gate_table(kc::ops& o) {
    std::uint32_t seed = 500;
    for (const std::uint64_t n : elementwise_sizes) {
        CAPTURE(n);
        std::vector<float> g = random_floats(n, ++seed, -3.0f, 3.0f);
        const std::vector<float> u = random_floats(n, ++seed, -2.0f, 2.0f);
        if (n > 3) { // the edges of relu: signed zeros and a NaN go through g > 0 like the CPU's
            g[0] = -0.0f;
            g[1] = 0.0f;
            g[2] = NAN;
        }
        std::vector<float> want(n);
        kernels::gated_activation(kernels::ffn_activation::relu_sqr, g.data(), u.data(), n,
                                  want.data(), 1, kernels::isa::scalar);

        device_vector<float> dg(o, g);
        device_vector<float> du(o, u);
        device_vector<float> dz(o, n);
        for (const bool in_place : {false, true}) {
            CAPTURE(in_place);
            kc::relu_sqr_gate_args a;
            a.g = dg.get();
            a.u = du.get();
            a.z = in_place ? dg.get() : dz.get();
            a.n = n;
            o.run(a);
            CHECK(first_bit_difference(in_place ? dg.download() : dz.download(), want) == -1);
        }
    }
}

/// The residual x += d against a plain loop.
inline void check_add_table(kc::ops& o) {
    std::uint32_t seed = 600;
    for (const std::uint64_t n : elementwise_sizes) {
        CAPTURE(n);
        const std::vector<float> x = random_floats(n, ++seed, -10.0f, 10.0f);
        const std::vector<float> d = random_floats(n, ++seed, -1e-3f, 1e-3f);
        std::vector<float> want(n);
        for (std::uint64_t i = 0; i < n; ++i)
            want[i] = x[i] + d[i];

        device_vector<float> dx(o, x);
        device_vector<float> dd(o, d);
        kc::add_args a;
        a.x = dx.get();
        a.d = dd.get();
        a.n = n;
        o.run(a);
        CHECK(first_bit_difference(dx.download(), want) == -1);
    }
}

} // namespace bitnet::test::cuda
