#include "kernels/attention.hpp"

#include "kernels/cpu/attention_kernels.hpp"
#include "kernels/f16.hpp"
#include "kernels/f16_round.hpp"
#include "kernels/softmax.hpp"

#include <algorithm>
#include <cmath>

namespace bitnet::kernels {
namespace {

using cpu::attention_head_args;

const std::uint16_t* row_of(const std::uint16_t* const* blocks, const attention_head_args& a,
                            std::uint32_t p) {
    return blocks[p / a.block_tokens] + (p % a.block_tokens) * a.row_stride + a.kv_offset;
}

/// Value d of an F16 row.
float f16_value(const std::uint16_t* row, std::uint32_t d) {
    return f16_to_f32(row[d]);
}

/// Value d of a Q8_0 row: its block's scale times its int8 (exact in float).
float q8_value(const std::uint16_t* row, std::uint32_t d) {
    const std::uint16_t* block = row + (d / cpu::q8_block_values) * cpu::q8_block_halves;
    const auto* q = reinterpret_cast<const std::int8_t*>(block + 1);
    return f16_to_f32(block[0]) * static_cast<float>(q[d % cpu::q8_block_values]);
}

// The scalar twins: one head at a time, in the order every family follows per head.

template <float (*Value)(const std::uint16_t*, std::uint32_t)>
void scores_scalar(const attention_head_args& a, float* scores) {
    for (std::uint32_t g = 0; g < a.group; ++g) {
        const float* q16 = a.q16 + std::size_t{g} * a.head_dim;
        for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
            const std::uint16_t* k = row_of(a.k_blocks, a, p);
            float lanes[16] = {};
            for (std::uint32_t d = 0; d < a.head_dim; ++d)
                lanes[d % 16] = std::fma(Value(k, d), q16[d], lanes[d % 16]);
            for (std::uint32_t w = 8; w >= 1; w /= 2)
                for (std::uint32_t i = 0; i < w; ++i)
                    lanes[i] = lanes[i] + lanes[i + w];
            scores[std::size_t{g} * a.n_ctx + p] = lanes[0] * a.scale;
        }
    }
}

template <float (*Value)(const std::uint16_t*, std::uint32_t)>
void values_scalar(const attention_head_args& a, const float* probs, float* out) {
    for (std::uint32_t g = 0; g < a.group; ++g) {
        float* o = out + std::size_t{g} * a.head_dim;
        const float* pr = probs + std::size_t{g} * a.n_ctx;
        std::fill(o, o + a.head_dim, 0.0f);
        for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
            const std::uint16_t* v = row_of(a.v_blocks, a, p);
            for (std::uint32_t d = 0; d < a.head_dim; ++d)
                o[d] = std::fma(Value(v, d), pr[p], o[d]);
        }
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
    attention_kv_heads(q, shape, kv, round_probs_f16, out, scratch, 0, shape.n_kv_head, family);
}

void attention_kv_heads(const float* q, const attention_shape& shape, const paged_kv& kv,
                        bool round_probs_f16, float* out, attention_scratch& scratch,
                        std::uint32_t kv_begin, std::uint32_t kv_end, isa family) {
    const std::uint32_t hd = shape.head_dim;
    if (hd % 16 != 0 || !isa_supported(family))
        family = isa::scalar;
    auto scores_fn = kv.q8_0 ? scores_scalar<q8_value> : scores_scalar<f16_value>;
    auto values_fn = kv.q8_0 ? values_scalar<q8_value> : values_scalar<f16_value>;
    if (family == isa::avx2) {
        scores_fn = kv.q8_0 ? cpu::attention_scores_q8_avx2 : cpu::attention_scores_avx2;
        values_fn = kv.q8_0 ? cpu::attention_values_q8_avx2 : cpu::attention_values_avx2;
    } else if (family == isa::avx512_vnni) {
        scores_fn = kv.q8_0 ? cpu::attention_scores_q8_avx512 : cpu::attention_scores_avx512;
        values_fn = kv.q8_0 ? cpu::attention_values_q8_avx512 : cpu::attention_values_avx512;
    }
    const std::uint32_t group = shape.n_head / shape.n_kv_head;
    scratch.scores.resize(std::size_t{group} * kv.n_ctx);
    scratch.q16.resize(std::size_t{group} * hd);
    float* s = scratch.scores.data();
    attention_head_args a;
    a.q16 = scratch.q16.data();
    a.group = group;
    a.k_blocks = kv.k_blocks;
    a.v_blocks = kv.v_blocks;
    a.block_tokens = kv.block_tokens;
    const std::size_t head_halves = kv_head_halves(hd, kv.q8_0);
    a.head_halves = head_halves;
    a.row_stride = shape.n_kv_head * head_halves;
    a.n_ctx = kv.n_ctx;
    a.head_dim = hd;
    a.scale = shape.scale;
    // The query heads of one KV head together: kv head h reads query heads [h·group, (h+1)·group).
    for (std::uint32_t kvh = kv_begin; kvh < kv_end && kvh < shape.n_kv_head; ++kvh) {
        a.kv_offset = kvh * head_halves;
        const float* q_group = q + std::size_t{kvh} * group * hd;
        round_to_f16(q_group, scratch.q16.data(), std::size_t{group} * hd, family);
        scores_fn(a, s);
        softmax_rows(s, group, kv.n_ctx, round_probs_f16, family);
        values_fn(a, s, out + std::size_t{kvh} * group * hd);
    }
}

} // namespace bitnet::kernels
