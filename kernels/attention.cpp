#include "kernels/attention.hpp"

#include "kernels/cpu/attention_kernels.hpp"
#include "kernels/f16.hpp"

#include <algorithm>
#include <cmath>

namespace bitnet::kernels {
namespace {

using cpu::attention_head_args;

const std::uint16_t* row_of(const std::uint16_t* const* blocks, const attention_head_args& a,
                            std::uint32_t p) {
    return blocks[p / a.block_tokens] + (p % a.block_tokens) * a.row_stride + a.kv_offset;
}

// The scalar twins: they define the order the vector families follow.

void scores_scalar(const attention_head_args& a, float* scores) {
    for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
        const std::uint16_t* k = row_of(a.k_blocks, a, p);
        float lanes[16] = {};
        for (std::uint32_t d = 0; d < a.head_dim; ++d)
            lanes[d % 16] = std::fma(f16_to_f32(k[d]), a.q16[d], lanes[d % 16]);
        for (std::uint32_t w = 8; w >= 1; w /= 2)
            for (std::uint32_t i = 0; i < w; ++i)
                lanes[i] = lanes[i] + lanes[i + w];
        scores[p] = lanes[0] * a.scale;
    }
}

void values_scalar(const attention_head_args& a, const float* probs, float* out) {
    std::fill(out, out + a.head_dim, 0.0f);
    for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
        const std::uint16_t* v = row_of(a.v_blocks, a, p);
        for (std::uint32_t d = 0; d < a.head_dim; ++d)
            out[d] = std::fma(f16_to_f32(v[d]), probs[p], out[d]);
    }
}

/// Value d of a Q8_0 row: its block's scale times its int8 (exact in float).
float q8_value(const std::uint16_t* row, std::uint32_t d) {
    const std::uint16_t* block = row + (d / cpu::q8_block_values) * cpu::q8_block_halves;
    const auto* q = reinterpret_cast<const std::int8_t*>(block + 1);
    return f16_to_f32(block[0]) * static_cast<float>(q[d % cpu::q8_block_values]);
}

void scores_q8_scalar(const attention_head_args& a, float* scores) {
    for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
        const std::uint16_t* k = row_of(a.k_blocks, a, p);
        float lanes[16] = {};
        for (std::uint32_t d = 0; d < a.head_dim; ++d)
            lanes[d % 16] = std::fma(q8_value(k, d), a.q16[d], lanes[d % 16]);
        for (std::uint32_t w = 8; w >= 1; w /= 2)
            for (std::uint32_t i = 0; i < w; ++i)
                lanes[i] = lanes[i] + lanes[i + w];
        scores[p] = lanes[0] * a.scale;
    }
}

void values_q8_scalar(const attention_head_args& a, const float* probs, float* out) {
    std::fill(out, out + a.head_dim, 0.0f);
    for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
        const std::uint16_t* v = row_of(a.v_blocks, a, p);
        for (std::uint32_t d = 0; d < a.head_dim; ++d)
            out[d] = std::fma(q8_value(v, d), probs[p], out[d]);
    }
}

} // namespace

void store_kv_row(const float* x, std::uint32_t n_heads, std::uint32_t head_dim, bool q8_0,
                  std::uint16_t* out) {
    const std::size_t n = std::size_t{n_heads} * head_dim;
    if (!q8_0) {
        for (std::size_t i = 0; i < n; ++i)
            out[i] = f32_to_f16(x[i]);
        return;
    }
    for (std::size_t b = 0; b < n / cpu::q8_block_values; ++b) {
        const float* xb = x + b * cpu::q8_block_values;
        std::uint16_t* block = out + b * cpu::q8_block_halves;
        float amax = 0.0f;
        for (std::size_t i = 0; i < cpu::q8_block_values; ++i)
            amax = std::max(amax, std::fabs(xb[i]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        block[0] = f32_to_f16(d);
        auto* q = reinterpret_cast<std::int8_t*>(block + 1);
        for (std::size_t i = 0; i < cpu::q8_block_values; ++i)
            q[i] = static_cast<std::int8_t>(std::lround(xb[i] * id));
    }
}

void attention_one_token(const float* q, const attention_shape& shape, const paged_kv& kv,
                         bool round_probs_f16, float* out, attention_scratch& scratch, isa family) {
    const std::uint32_t hd = shape.head_dim;
    if (hd % 16 != 0 || !isa_supported(family))
        family = isa::scalar;
    auto scores_fn = kv.q8_0 ? scores_q8_scalar : scores_scalar;
    auto values_fn = kv.q8_0 ? values_q8_scalar : values_scalar;
    if (family == isa::avx2) {
        scores_fn = kv.q8_0 ? cpu::attention_scores_q8_avx2 : cpu::attention_scores_avx2;
        values_fn = kv.q8_0 ? cpu::attention_values_q8_avx2 : cpu::attention_values_avx2;
    } else if (family == isa::avx512_vnni) {
        scores_fn = kv.q8_0 ? cpu::attention_scores_q8_avx512 : cpu::attention_scores_avx512;
        values_fn = kv.q8_0 ? cpu::attention_values_q8_avx512 : cpu::attention_values_avx512;
    }
    const std::uint32_t group = shape.n_head / shape.n_kv_head;
    scratch.scores.resize(kv.n_ctx);
    scratch.q16.resize(hd);
    float* s = scratch.scores.data();
    attention_head_args a;
    a.q16 = scratch.q16.data();
    a.k_blocks = kv.k_blocks;
    a.v_blocks = kv.v_blocks;
    a.block_tokens = kv.block_tokens;
    const std::size_t head_halves = kv_head_halves(hd, kv.q8_0);
    a.row_stride = shape.n_kv_head * head_halves;
    a.n_ctx = kv.n_ctx;
    a.head_dim = hd;
    a.scale = shape.scale;
    for (std::uint32_t h = 0; h < shape.n_head; ++h) {
        a.kv_offset = (h / group) * head_halves;
        for (std::uint32_t d = 0; d < hd; ++d)
            scratch.q16[d] = f16_to_f32(f32_to_f16(q[static_cast<std::size_t>(h) * hd + d]));
        scores_fn(a, s);
        float max_s = -INFINITY;
        for (std::uint32_t p = 0; p < kv.n_ctx; ++p)
            max_s = std::max(max_s, s[p]);
        // ggml_soft_max: expf in float, the sum in double, one multiply by 1/sum.
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
        values_fn(a, s, out + static_cast<std::size_t>(h) * hd);
    }
}

} // namespace bitnet::kernels
