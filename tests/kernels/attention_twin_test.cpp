// The vector attention families equal the scalar twin bit for bit on random paged caches:
// ragged context lengths, blocks of several sizes, GQA groupings, both probability roundings.
#include "kernel_test_util.hpp"
#include "kernels/attention.hpp"
#include "kernels/f16.hpp"

#include <cmath>

using namespace bitnet;
using namespace bitnet::test;

namespace {

struct paged_cache {
    std::vector<std::vector<std::uint16_t>> k, v;
    std::vector<const std::uint16_t*> k_ptrs, v_ptrs;
};

paged_cache random_cache(std::uint32_t n_ctx, std::uint32_t block_tokens, std::size_t row,
                         std::uint32_t seed) {
    paged_cache c;
    const std::uint32_t n_blocks = (n_ctx + block_tokens - 1) / block_tokens;
    for (std::uint32_t b = 0; b < n_blocks; ++b) {
        for (auto* dst : {&c.k, &c.v}) {
            const auto f = random_floats(block_tokens * row, seed + b * 2 + (dst == &c.v), -2, 2);
            std::vector<std::uint16_t> h(f.size());
            for (std::size_t i = 0; i < f.size(); ++i)
                h[i] = kernels::f32_to_f16(f[i]);
            dst->push_back(std::move(h));
        }
    }
    for (std::uint32_t b = 0; b < n_blocks; ++b) {
        c.k_ptrs.push_back(c.k[b].data());
        c.v_ptrs.push_back(c.v[b].data());
    }
    return c;
}

} // namespace

TEST_CASE("attention: every family equals the scalar twin bit for bit") {
    struct shape_case {
        std::uint32_t n_head, n_kv_head, head_dim, block_tokens;
    };
    // Groups of 1 to 4 query heads per KV head: the AVX-512 scores take 16, 8, 5 and 4 positions
    // at a time for them, and the context lengths fall on and around those passes (and around
    // the AVX2 values' 128-position blocks, whose sums carry over between blocks).
    const shape_case shapes[] = {
        {4, 2, 64, 16}, {8, 8, 16, 7},  {20, 5, 128, 16}, {2, 1, 48, 5},
        {6, 2, 32, 4},  {3, 1, 272, 16}}; // the last: AVX2 reads query rows longer than 256 where
                                          // they are
    std::uint32_t seed = 1;
    for (const shape_case& sc : shapes) {
        for (std::uint32_t n_ctx :
             {1u, 2u, 4u, 5u, 9u, 15u, 16u, 17u, 33u, 70u, 128u, 137u, 300u}) {
            for (bool round_probs : {false, true}) {
                CAPTURE(sc.head_dim);
                CAPTURE(n_ctx);
                CAPTURE(round_probs);
                const std::size_t row = std::size_t{sc.n_kv_head} * sc.head_dim;
                const paged_cache cache = random_cache(n_ctx, sc.block_tokens, row, ++seed);
                const kernels::paged_kv kv{cache.k_ptrs.data(), cache.v_ptrs.data(),
                                           sc.block_tokens, n_ctx};
                const kernels::attention_shape shape{
                    sc.n_head, sc.n_kv_head, sc.head_dim,
                    1.0f / std::sqrt(static_cast<float>(sc.head_dim))};
                const auto q = random_floats(std::size_t{sc.n_head} * sc.head_dim, ++seed, -3, 3);
                kernels::attention_scratch scratch;
                std::vector<float> want(q.size());
                kernels::attention_one_token(q.data(), shape, kv, round_probs, want.data(), scratch,
                                             kernels::isa::scalar);
                for (float x : want)
                    REQUIRE(std::isfinite(x));
                for (kernels::isa family : simd_families) {
                    if (!family_runs_here(family))
                        continue;
                    CAPTURE(std::string(kernels::isa_name(family)));
                    std::vector<float> got(q.size());
                    kernels::attention_one_token(q.data(), shape, kv, round_probs, got.data(),
                                                 scratch, family);
                    CHECK(first_bit_difference(want, got) == -1);
                }
            }
        }
    }
}

TEST_CASE("attention: one key gives back its value row, equal scores average the values") {
    // n_ctx = 1: softmax is exactly 1, so the output is V[0] (per query head's KV head).
    const std::uint32_t hd = 32;
    paged_cache c = random_cache(2, 16, 2 * hd, 99);
    const kernels::paged_kv kv1{c.k_ptrs.data(), c.v_ptrs.data(), 16, 1};
    const kernels::attention_shape shape{4, 2, hd, 0.25f};
    const auto q = random_floats(4 * hd, 5, -1, 1);
    kernels::attention_scratch scratch;
    std::vector<float> out(4 * hd);
    kernels::attention_one_token(q.data(), shape, kv1, false, out.data(), scratch);
    for (std::uint32_t h = 0; h < 4; ++h)
        for (std::uint32_t d = 0; d < hd; ++d)
            CHECK(out[h * hd + d] == kernels::f16_to_f32(c.v[0][(h / 2) * hd + d]));

    // Two identical keys: weights 1/2 each, the output is the mean of the two value rows.
    for (std::uint32_t i = 0; i < 2 * hd; ++i)
        c.k[0][2 * hd + i] = c.k[0][i];
    const kernels::paged_kv kv2{c.k_ptrs.data(), c.v_ptrs.data(), 16, 2};
    kernels::attention_one_token(q.data(), shape, kv2, false, out.data(), scratch);
    for (std::uint32_t h = 0; h < 4; ++h)
        for (std::uint32_t d = 0; d < hd; ++d) {
            const float v0 = kernels::f16_to_f32(c.v[0][(h / 2) * hd + d]);
            const float v1 = kernels::f16_to_f32(c.v[0][2 * hd + (h / 2) * hd + d]);
            CHECK(out[h * hd + d] == doctest::Approx(0.5f * (v0 + v1)).epsilon(1e-6));
        }
}
