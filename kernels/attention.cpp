#include "kernels/attention.hpp"

#include "kernels/f16.hpp"

#include <algorithm>
#include <cmath>

namespace bitnet::kernels {

void attention_one_token(const float* q, const attention_shape& shape, const paged_kv& kv,
                         bool round_probs_f16, float* out, attention_scratch& scratch) {
    const std::uint32_t hd = shape.head_dim;
    const std::uint32_t group = shape.n_head / shape.n_kv_head;
    const std::size_t row_stride = static_cast<std::size_t>(shape.n_kv_head) * hd;
    scratch.scores.resize(kv.n_ctx);
    scratch.q16.resize(hd);
    float* s = scratch.scores.data();
    for (std::uint32_t h = 0; h < shape.n_head; ++h) {
        const std::size_t kv_off = static_cast<std::size_t>(h / group) * hd;
        for (std::uint32_t d = 0; d < hd; ++d)
            scratch.q16[d] = f16_to_f32(f32_to_f16(q[static_cast<std::size_t>(h) * hd + d]));
        float max_s = -INFINITY;
        for (std::uint32_t p = 0; p < kv.n_ctx; ++p) {
            const std::uint16_t* k =
                kv.k_blocks[p / kv.block_tokens] + (p % kv.block_tokens) * row_stride + kv_off;
            float dot = 0.0f;
            for (std::uint32_t d = 0; d < hd; ++d)
                dot += f16_to_f32(k[d]) * scratch.q16[d];
            s[p] = dot * shape.scale;
            max_s = std::max(max_s, s[p]);
        }
        double sum = 0.0;
        for (std::uint32_t p = 0; p < kv.n_ctx; ++p) {
            s[p] = std::exp(s[p] - max_s);
            sum += s[p];
        }
        const auto inv = static_cast<float>(1.0 / sum);
        for (std::uint32_t p = 0; p < kv.n_ctx; ++p) {
            s[p] *= inv;
            if (round_probs_f16)
                s[p] = f16_to_f32(f32_to_f16(s[p]));
        }
        float* o = out + static_cast<std::size_t>(h) * hd;
        std::fill(o, o + hd, 0.0f);
        for (std::uint32_t p = 0; p < kv.n_ctx; ++p) {
            const std::uint16_t* v =
                kv.v_blocks[p / kv.block_tokens] + (p % kv.block_tokens) * row_stride + kv_off;
            const float w = s[p];
            for (std::uint32_t d = 0; d < hd; ++d)
                o[d] += f16_to_f32(v[d]) * w;
        }
    }
}

} // namespace bitnet::kernels
