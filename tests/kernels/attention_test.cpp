// Single-token attention over a paged F16 KV cache (kernels/attention.hpp) against softmax
// attention written in double from the same F16 values, with GQA and a partial last block.
#include "kernels/attention.hpp"

#include "kernel_test_util.hpp"
#include "kernels/f16.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace bitnet;
using namespace bitnet::kernels;

namespace {

float round_f16(float v) {
    return f16_to_f32(f32_to_f16(v));
}

} // namespace

TEST_CASE("attention_one_token matches softmax(K q / sqrt(d)) V with GQA over pages") {
    attention_shape shape;
    shape.n_head = 4;
    shape.n_kv_head = 2;
    shape.head_dim = 64;
    shape.scale = 1.0f / std::sqrt(64.0f);
    const std::uint32_t block_tokens = 16;
    const std::uint32_t n_ctx = 37; // three blocks, the last one partial
    const std::size_t row = static_cast<std::size_t>(shape.n_kv_head) * shape.head_dim;
    const std::uint32_t n_blocks = (n_ctx + block_tokens - 1) / block_tokens;

    // Pages allocated out of order, as a block allocator would hand them out.
    std::vector<std::vector<std::uint16_t>> k_pages(n_blocks);
    std::vector<std::vector<std::uint16_t>> v_pages(n_blocks);
    std::vector<const std::uint16_t*> k_ptrs(n_blocks);
    std::vector<const std::uint16_t*> v_ptrs(n_blocks);
    for (std::uint32_t b = 0; b < n_blocks; ++b) {
        const std::vector<float> kf = test::random_floats(block_tokens * row, 10 + b, -2.0f, 2.0f);
        const std::vector<float> vf = test::random_floats(block_tokens * row, 20 + b, -1.0f, 1.0f);
        const std::uint32_t slot = n_blocks - 1 - b;
        k_pages[slot].resize(kf.size());
        v_pages[slot].resize(vf.size());
        for (std::size_t i = 0; i < kf.size(); ++i) {
            k_pages[slot][i] = f32_to_f16(kf[i]);
            v_pages[slot][i] = f32_to_f16(vf[i]);
        }
        k_ptrs[b] = k_pages[slot].data();
        v_ptrs[b] = v_pages[slot].data();
    }
    paged_kv kv{k_ptrs.data(), v_ptrs.data(), block_tokens, n_ctx};
    const std::vector<float> q = test::random_floats(
        static_cast<std::size_t>(shape.n_head) * shape.head_dim, 5, -2.0f, 2.0f);

    for (const bool round_probs : {false, true}) {
        CAPTURE(round_probs);
        std::vector<float> out(q.size());
        attention_scratch scratch;
        attention_one_token(q.data(), shape, kv, round_probs, out.data(), scratch);
        const std::uint32_t group = shape.n_head / shape.n_kv_head;
        for (std::uint32_t h = 0; h < shape.n_head; ++h) {
            const std::size_t off = static_cast<std::size_t>(h / group) * shape.head_dim;
            std::vector<double> s(n_ctx);
            double max_s = -INFINITY;
            for (std::uint32_t p = 0; p < n_ctx; ++p) {
                const std::uint16_t* k = k_ptrs[p / block_tokens] + (p % block_tokens) * row + off;
                double dot = 0.0;
                for (std::uint32_t d = 0; d < shape.head_dim; ++d)
                    dot += static_cast<double>(f16_to_f32(k[d])) *
                           round_f16(q[h * shape.head_dim + d]);
                s[p] = dot * shape.scale;
                max_s = std::max(max_s, s[p]);
            }
            double sum = 0.0;
            for (double& v : s) {
                v = std::exp(v - max_s);
                sum += v;
            }
            for (std::uint32_t d = 0; d < shape.head_dim; ++d) {
                double o = 0.0;
                for (std::uint32_t p = 0; p < n_ctx; ++p) {
                    const std::uint16_t* v =
                        v_ptrs[p / block_tokens] + (p % block_tokens) * row + off;
                    o += s[p] / sum * f16_to_f32(v[d]);
                }
                // F16 probabilities carry a relative error up to 2^-11 each.
                const double tol = round_probs ? 2e-3 : 1e-5;
                CHECK(std::fabs(out[h * shape.head_dim + d] - o) <= tol);
            }
        }
    }
}

TEST_CASE("attention over one position returns that position's value") {
    attention_shape shape{2, 1, 8, 0.5f};
    const std::vector<float> vf = test::random_floats(8, 3, -1.0f, 1.0f);
    std::vector<std::uint16_t> k(8, f32_to_f16(1.0f));
    std::vector<std::uint16_t> v(8);
    for (std::size_t i = 0; i < 8; ++i)
        v[i] = f32_to_f16(vf[i]);
    const std::uint16_t* kp = k.data();
    const std::uint16_t* vp = v.data();
    paged_kv kv{&kp, &vp, 4, 1};
    const std::vector<float> q = test::random_floats(16, 4, -1.0f, 1.0f);
    std::vector<float> out(16);
    attention_scratch scratch;
    attention_one_token(q.data(), shape, kv, true, out.data(), scratch);
    for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t d = 0; d < 8; ++d)
            CHECK(out[h * 8 + d] == f16_to_f32(v[d]));
}
