// The CUDA RoPE body (kernels/cuda/rope.cuh) on the simulated grid against kernels::rope_apply,
// bit for bit: both styles, head sizes odd and not powers of two, padded rows, positions in any
// order (the angle table is the CPU's, computed by kernels::rope_angles_for).
#include "cuda_sim_util.hpp"
#include "kernel_test_util.hpp"
#include "kernels/cuda/ops.hpp"
#include "kernels/rope.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

using namespace bitnet;
using namespace bitnet::kernels;

TEST_SUITE("cuda_sim") {

    TEST_CASE("cuda_sim rope matches kernels::rope_apply bit for bit, NEOX and normal") {
        struct rope_case {
            std::uint32_t n_rows, n_heads, head_dim, pad;
            float base;
        };
        const rope_case cases[] = {{1, 1, 2, 0, 10000.0f},     {3, 5, 7, 1, 10000.0f},
                                   {4, 20, 128, 0, 500000.0f}, {2, 3, 100, 5, 10000.0f},
                                   {5, 9, 6, 3, 1000.0f},      {2, 64, 64, 0, 500000.0f},
                                   {3, 2, 255, 2, 10000.0f}};
        std::uint32_t seed = 300;
        for (const rope_case& c : cases) {
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
                std::vector<float> table(static_cast<std::size_t>(n_pos) * c.head_dim, NAN);
                rope_angles angles;
                for (const std::int32_t p : pos) {
                    rope_angles_for(static_cast<std::uint32_t>(p), c.head_dim, c.base, nullptr,
                                    angles);
                    float* row = table.data() + static_cast<std::size_t>(p) * c.head_dim;
                    for (std::uint32_t i = 0; i < c.head_dim / 2; ++i) {
                        row[i] = angles.cos[i];
                        row[c.head_dim / 2 + i] = angles.sin[i];
                    }
                }
                const std::vector<float> x = test::random_floats(
                    static_cast<std::size_t>(c.n_rows) * ld, ++seed, -4.0f, 4.0f);

                std::vector<float> want = x;
                for (std::uint32_t r = 0; r < c.n_rows; ++r) {
                    rope_angles_for(static_cast<std::uint32_t>(pos[r]), c.head_dim, c.base, nullptr,
                                    angles);
                    rope_apply(want.data() + static_cast<std::size_t>(r) * ld, c.n_heads,
                               c.head_dim, neox ? rope_style::neox : rope_style::norm, angles);
                }

                const auto o = cuda::make_simulated_ops();
                test::device_vector<float> dx(*o, x);
                test::device_vector<float> dtable(*o, table);
                test::device_vector<std::int32_t> dpos(*o, pos);
                cuda::rope_args a;
                a.x = dx.get();
                a.ldx = ld;
                a.n_rows = c.n_rows;
                a.n_heads = c.n_heads;
                a.head_dim = c.head_dim;
                a.neox = neox;
                a.cos_sin = dtable.get();
                a.pos = dpos.get();
                o->run(a);
                const std::vector<float> got = dx.download();
                CHECK(test::first_bit_difference(got, want) == -1);
                if (c.n_rows > 1) // rows past the first are at positions other than 0
                    CHECK(test::first_bit_difference(got, x) != -1);
            }
        }
    }

} // TEST_SUITE
