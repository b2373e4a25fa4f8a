// Attention over a Q8_0 KV cache: every vector family equals the scalar twin bit for bit (ragged
// context lengths, several block sizes and GQA groupings, both probability roundings); the
// scalar twin equals attention over the dequantized values computed in double within float
// error; and store_kv_row quantizes as ggml's block_q8_0 does (each value within half a step of
// its block's scale, the largest at ±127).
#include "kernel_test_util.hpp"
#include "kernels/attention.hpp"
#include "kernels/f16.hpp"

#include <cmath>

using namespace bitnet;
using namespace bitnet::test;

namespace {

/// A paged cache whose rows are `n_kv_head` heads of `head_dim` random floats stored as Q8_0.
struct q8_cache {
    std::vector<std::vector<std::uint16_t>> k, v;
    std::vector<const std::uint16_t*> k_ptrs, v_ptrs;
    std::vector<std::vector<float>> k_src, v_src; ///< per position, the floats before quantizing
};

q8_cache random_q8_cache(std::uint32_t n_ctx, std::uint32_t block_tokens, std::uint32_t n_kv_head,
                         std::uint32_t head_dim, std::uint32_t seed) {
    q8_cache c;
    const std::size_t row = n_kv_head * kernels::kv_head_halves(head_dim, true);
    const std::uint32_t n_blocks = (n_ctx + block_tokens - 1) / block_tokens;
    for (std::uint32_t b = 0; b < n_blocks; ++b) {
        c.k.emplace_back(block_tokens * row);
        c.v.emplace_back(block_tokens * row);
        for (std::uint32_t r = 0; r < block_tokens; ++r) {
            const auto fk =
                random_floats(std::size_t{n_kv_head} * head_dim, seed + 4 * (b * 64 + r), -2, 2);
            const auto fv = random_floats(std::size_t{n_kv_head} * head_dim,
                                          seed + 4 * (b * 64 + r) + 1, -2, 2);
            kernels::store_kv_row(fk.data(), n_kv_head, head_dim, true, c.k[b].data() + r * row);
            kernels::store_kv_row(fv.data(), n_kv_head, head_dim, true, c.v[b].data() + r * row);
            c.k_src.push_back(fk);
            c.v_src.push_back(fv);
        }
    }
    for (std::uint32_t b = 0; b < n_blocks; ++b) {
        c.k_ptrs.push_back(c.k[b].data());
        c.v_ptrs.push_back(c.v[b].data());
    }
    return c;
}

/// Value i of a Q8_0 row (blocks of an F16 scale and 32 int8), as the format defines it.
float dequant(const std::uint16_t* row, std::size_t i) {
    const std::uint16_t* block = row + i / 32 * 17;
    return kernels::f16_to_f32(block[0]) *
           static_cast<float>(reinterpret_cast<const std::int8_t*>(block + 1)[i % 32]);
}

} // namespace

TEST_CASE("store_kv_row: Q8_0 blocks as ggml quantizes them, 17 halves per 32 values") {
    CHECK(kernels::kv_head_halves(128, true) == 68);
    CHECK(kernels::kv_head_halves(128, false) == 128);
    for (std::uint32_t seed = 1; seed < 20; ++seed) {
        auto x = random_floats(3 * 64, seed, -5, 5);
        if (seed == 3)
            std::fill(x.begin(), x.begin() + 32, 0.0f); // an all-zero block: scale 0, values 0
        std::vector<std::uint16_t> row(3 * kernels::kv_head_halves(64, true));
        kernels::store_kv_row(x.data(), 3, 64, true, row.data());
        for (std::size_t b = 0; b < x.size() / 32; ++b) {
            float amax = 0;
            for (std::size_t i = 0; i < 32; ++i)
                amax = std::max(amax, std::fabs(x[b * 32 + i]));
            const float d = kernels::f16_to_f32(row[b * 17]);
            CHECK(d == kernels::f16_to_f32(kernels::f32_to_f16(amax / 127.0f)));
            int largest = 0;
            for (std::size_t i = 0; i < 32; ++i) {
                const float got = dequant(row.data(), b * 32 + i);
                // Half a step of the exact scale, plus the F16 rounding of the scale itself.
                CHECK(std::fabs(got - x[b * 32 + i]) <= amax / 127.0f * 0.5f + amax * 1e-3f);
                largest = std::max(largest,
                                   std::abs(static_cast<int>(reinterpret_cast<const std::int8_t*>(
                                       row.data() + b * 17 + 1)[i])));
            }
            CHECK(largest == (amax > 0 ? 127 : 0));
        }
    }
}

TEST_CASE("attention over Q8_0 KV: every family equals the scalar twin bit for bit, and the twin "
          "equals attention over the dequantized values") {
    struct shape_case {
        std::uint32_t n_head, n_kv_head, head_dim, block_tokens;
    };
    // As in attention_twin_test.cpp: groups of 1 to 4, contexts around the AVX-512 score passes.
    const shape_case shapes[] = {
        {4, 2, 64, 16}, {8, 8, 32, 7}, {20, 5, 128, 16}, {2, 1, 96, 5}, {6, 2, 64, 4}};
    std::uint32_t seed = 100;
    for (const shape_case& sc : shapes) {
        for (std::uint32_t n_ctx :
             {1u, 2u, 4u, 5u, 9u, 15u, 16u, 17u, 33u, 70u, 128u, 137u, 300u}) {
            for (bool round_probs : {false, true}) {
                CAPTURE(sc.head_dim);
                CAPTURE(sc.n_kv_head);
                CAPTURE(n_ctx);
                CAPTURE(round_probs);
                const auto cache =
                    random_q8_cache(n_ctx, sc.block_tokens, sc.n_kv_head, sc.head_dim, ++seed);
                const kernels::paged_kv kv{cache.k_ptrs.data(), cache.v_ptrs.data(),
                                           sc.block_tokens, n_ctx, true};
                const float scale = 1.0f / std::sqrt(static_cast<float>(sc.head_dim));
                const kernels::attention_shape shape{sc.n_head, sc.n_kv_head, sc.head_dim, scale};
                const auto q = random_floats(std::size_t{sc.n_head} * sc.head_dim, ++seed, -3, 3);
                kernels::attention_scratch scratch;
                std::vector<float> want(q.size());
                kernels::attention_one_token(q.data(), shape, kv, round_probs, want.data(), scratch,
                                             kernels::isa::scalar);
                for (kernels::isa family : simd_families) {
                    if (!family_runs_here(family))
                        continue;
                    CAPTURE(std::string(kernels::isa_name(family)));
                    std::vector<float> got(q.size());
                    kernels::attention_one_token(q.data(), shape, kv, round_probs, got.data(),
                                                 scratch, family);
                    CHECK(first_bit_difference(want, got) == -1);
                }
                // Reference: softmax over the dequantized keys in double (q rounded to F16 as
                // the kernel does), values dequantized.
                const std::size_t row = sc.n_kv_head * kernels::kv_head_halves(sc.head_dim, true);
                const std::uint32_t group = sc.n_head / sc.n_kv_head;
                for (std::uint32_t h = 0; h < sc.n_head; ++h) {
                    const std::size_t off =
                        (h / group) * kernels::kv_head_halves(sc.head_dim, true);
                    std::vector<double> s(n_ctx);
                    double mx = -1e300;
                    for (std::uint32_t p = 0; p < n_ctx; ++p) {
                        const std::uint16_t* kr =
                            cache.k_ptrs[p / sc.block_tokens] + (p % sc.block_tokens) * row + off;
                        double dot = 0;
                        for (std::uint32_t d = 0; d < sc.head_dim; ++d)
                            dot += double{dequant(kr, d)} *
                                   kernels::f16_to_f32(kernels::f32_to_f16(q[h * sc.head_dim + d]));
                        s[p] = dot * scale;
                        mx = std::max(mx, s[p]);
                    }
                    double sum = 0;
                    for (auto& x : s)
                        sum += (x = std::exp(x - mx));
                    for (std::uint32_t d = 0; d < sc.head_dim; ++d) {
                        double o = 0;
                        for (std::uint32_t p = 0; p < n_ctx; ++p) {
                            const std::uint16_t* vr = cache.v_ptrs[p / sc.block_tokens] +
                                                      (p % sc.block_tokens) * row + off;
                            o += s[p] / sum * dequant(vr, d);
                        }
                        CHECK(std::fabs(o - want[h * sc.head_dim + d]) < 2e-3);
                    }
                }
            }
        }
    }
}
