#include "kernels/q8_matmul.hpp"

#include "kernels/cpu/q8_kernels.hpp"
#include "kernels/f16.hpp"
#include "kernels/parallel.hpp"

#include <algorithm>
#include <cmath>

namespace bitnet::kernels {
namespace {

// One block of 32 floats as ggml's quantize_row_q8_0_ref: returns d (not yet rounded to F16) and
// writes roundf(x · (1 / d)). roundf (half away from zero) is spelled out as truncation plus a
// compare, which the compiler vectorizes, where a libm call per value would dominate loading (328 M
// values on the 2B-4T shape). Values are clamped to ±127 first (|x · id| <= 127 for finite blocks;
// NaN becomes 0), so the conversion to int is always defined.
float quantize_block(const float* x, std::int8_t* q) {
    float amax = 0.0f;
    for (std::size_t j = 0; j < q8_0_block; ++j)
        amax = std::max(amax, std::fabs(x[j])); // ggml's MAX; std::fmax is a libm call
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (std::size_t j = 0; j < q8_0_block; ++j) {
        float v = x[j] * id;
        v = v > 127.0f ? 127.0f : v;
        v = v < -127.0f ? -127.0f : v;
        v = v == v ? v : 0.0f;
        const int i = static_cast<int>(v);            // toward zero
        const float frac = v - static_cast<float>(i); // exact
        q[j] = static_cast<std::int8_t>(i + (frac >= 0.5f ? 1 : 0) - (frac <= -0.5f ? 1 : 0));
    }
    return d;
}

// The summation order every family follows (see q8_matmul.hpp), written plainly: each block's
// exact dot product, whatever order its 32 products are taken in, then the lanes in block order.
void q8_0_rows_scalar(const cpu::q8_0_args& a) {
    const std::size_t nb = a.k / q8_0_block;
    for (std::size_t m = a.row_begin; m < a.row_end; ++m) {
        const std::int8_t* w = a.w + m * a.k;
        const std::uint16_t* ws = a.w_scale + m * nb;
        for (std::size_t t = 0; t < a.n_tok; ++t) {
            const auto* q = reinterpret_cast<const std::int8_t*>(a.q + t * a.k);
            const float* qs = a.q_scale + t * nb;
            float acc[q8_0_dot_lanes] = {};
            for (std::size_t b = 0; b < nb; ++b) {
                std::int32_t dot = 0;
                for (std::size_t j = 0; j < q8_0_block; ++j) {
                    const std::size_t at = q8_0_value_offset(b * q8_0_block + j, a.k);
                    dot += w[at] * q[at];
                }
                const float s = f16_to_f32(ws[b]) * qs[b];
                const std::size_t l = b % q8_0_dot_lanes;
                acc[l] = std::fma(static_cast<float>(dot), s, acc[l]);
            }
            for (std::size_t width = q8_0_dot_lanes / 2; width > 0; width /= 2)
                for (std::size_t i = 0; i < width; ++i)
                    acc[i] += acc[i + width];
            a.y[t * a.ldy + m] = acc[0];
        }
    }
}

} // namespace

std::size_t q8_0_value_offset(std::size_t k, std::size_t cols) noexcept {
    const std::size_t nb = cols / q8_0_block;
    const std::size_t b = k / q8_0_block;
    const std::size_t group = b / q8_0_group_blocks;
    const std::size_t g_blocks = std::min(q8_0_group_blocks, nb - group * q8_0_group_blocks);
    const std::size_t word = (k % q8_0_block) / 4; // the vector v of the layout
    const std::size_t lane = b % q8_0_group_blocks;
    return group * q8_0_group_blocks * q8_0_block + 4 * (word * g_blocks + lane) + k % 4;
}

packed_q8_0 pack_q8_0(const std::uint16_t* f16, std::uint32_t rows, std::uint32_t cols,
                      isa family) {
    packed_q8_0 w;
    w.rows = rows;
    w.cols = cols;
    w.family = best_isa_up_to(family);
    const std::size_t nb = cols / q8_0_block;
    w.values = aligned_buffer(std::size_t{rows} * cols);
    w.scales = aligned_buffer(std::size_t{rows} * nb * sizeof(std::uint16_t));
    auto* values = w.values.as<std::int8_t>();
    auto* scales = w.scales.as<std::uint16_t>();
    std::vector<std::uint32_t> offset(cols);
    for (std::size_t k = 0; k < cols; ++k)
        offset[k] = static_cast<std::uint32_t>(q8_0_value_offset(k, cols));
    parallel_ranges(rows, 256, resolve_threads(0), [&](std::size_t begin, std::size_t end) {
        float x[q8_0_block];
        std::int8_t q[q8_0_block];
        for (std::size_t m = begin; m < end; ++m)
            for (std::size_t b = 0; b < nb; ++b) {
                const std::size_t k0 = b * q8_0_block;
                for (std::size_t j = 0; j < q8_0_block; ++j)
                    x[j] = f16_to_f32(f16[m * cols + k0 + j]);
                scales[m * nb + b] = f32_to_f16(quantize_block(x, q));
                for (std::size_t j = 0; j < q8_0_block; ++j)
                    values[m * cols + offset[k0 + j]] = q[j];
            }
    });
    return w;
}

void quantize_q8_0(const float* x, std::size_t n_rows, std::size_t k, std::size_t ldx,
                   q8_0_acts& out) {
    const std::size_t nb = k / q8_0_block;
    out.n_rows = n_rows;
    out.k = k;
    out.q.resize(n_rows * k);
    out.scale.resize(n_rows * nb);
    for (std::size_t t = 0; t < n_rows; ++t)
        for (std::size_t b = 0; b < nb; ++b)
            out.scale[t * nb + b] =
                quantize_block(x + t * ldx + b * q8_0_block, out.q.data() + t * k + b * q8_0_block);
}

void q8_0_matmul(const packed_q8_0& w, const q8_0_acts& acts, float* y, std::size_t ldy,
                 int n_threads) {
    q8_0_matmul(w, acts, y, ldy, n_threads, w.family);
}

void q8_0_matmul(const packed_q8_0& w, const q8_0_acts& acts, float* y, std::size_t ldy,
                 int n_threads, isa family) {
    family = best_isa_up_to(family);
    // The activations in the weights' layout, made once per call; the VNNI family multiplies
    // unsigned by signed bytes and takes them as q + 128 (a sign-bit flip).
    const std::size_t k = w.cols;
    const std::uint8_t flip = family == isa::avx512_vnni ? 0x80u : 0x00u;
    std::vector<std::uint8_t> q(acts.n_rows * k);
    for (std::size_t i = 0; i < k; ++i) {
        const std::size_t at = q8_0_value_offset(i, k);
        for (std::size_t t = 0; t < acts.n_rows; ++t)
            q[t * k + at] = static_cast<std::uint8_t>(acts.q[t * k + i]) ^ flip;
    }
    void (*rows_fn)(const cpu::q8_0_args&) = q8_0_rows_scalar;
    if (family == isa::avx2)
        rows_fn = cpu::q8_0_rows_avx2;
    else if (family == isa::avx512_vnni)
        rows_fn = cpu::q8_0_rows_avx512;
    parallel_ranges(
        w.rows, 64, resolve_threads(n_threads), [&](std::size_t begin, std::size_t end) {
            std::vector<std::int32_t> scratch(cpu::q8_0_scratch_ints(k));
            rows_fn({w.values.as<std::int8_t>(), w.scales.as<std::uint16_t>(), k, q.data(),
                     acts.scale.data(), acts.n_rows, y, ldy, begin, end, scratch.data()});
        });
}

} // namespace bitnet::kernels
