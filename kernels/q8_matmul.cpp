#include "kernels/q8_matmul.hpp"

#include "kernels/cpu/q8_kernels.hpp"
#include "kernels/f16.hpp"
#include "kernels/parallel.hpp"

#include <cmath>

namespace bitnet::kernels {
namespace {

// std::roundf (half away from zero, as ggml's reference rounds) without a libm call per value:
// without SSE4.1 the compiler cannot inline roundf, and packing calls this 328 M times. |v| is at
// most 127 plus rounding for finite blocks; anything else (NaN, inf from a broken file) saturates
// instead of reaching an undefined float-to-int conversion.
float round_half_away(float v) {
    if (!(std::fabs(v) <= 127.0f))
        return v > 0.0f ? 127.0f : (v < 0.0f ? -127.0f : 0.0f);
    const int i = static_cast<int>(v);            // toward zero
    const float frac = v - static_cast<float>(i); // exact
    return static_cast<float>(frac >= 0.5f ? i + 1 : (frac <= -0.5f ? i - 1 : i));
}

// One block of 32 floats as ggml's quantize_row_q8_0_ref: returns d (not yet rounded to F16).
float quantize_block(const float* x, std::int8_t* q) {
    float amax = 0.0f;
    for (std::size_t j = 0; j < q8_0_block; ++j)
        amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (std::size_t j = 0; j < q8_0_block; ++j)
        q[j] = static_cast<std::int8_t>(round_half_away(x[j] * id));
    return d;
}

// The summation order every family follows (see q8_matmul.hpp), written plainly.
void q8_0_rows_scalar(const cpu::q8_0_args& a) {
    const std::size_t nb = a.k / q8_0_block;
    for (std::size_t m = a.row_begin; m < a.row_end; ++m) {
        const std::int8_t* w = a.w + m * a.k;
        const std::uint16_t* ws = a.w_scale + m * nb;
        for (std::size_t t = 0; t < a.n_tok; ++t) {
            const std::int8_t* q = a.q + t * a.k;
            const float* qs = a.q_scale + t * nb;
            float acc[q8_0_dot_lanes] = {};
            for (std::size_t c = 0; c * 64 < a.k; ++c)
                for (std::size_t l = 0; l < q8_0_dot_lanes; ++l) {
                    const std::size_t k0 = 64 * c + 4 * l;
                    if (k0 >= a.k)
                        break;
                    std::int32_t dot = 0;
                    for (std::size_t j = 0; j < 4; ++j)
                        dot += w[k0 + j] * q[k0 + j];
                    const std::size_t b = k0 / q8_0_block;
                    const float s = f16_to_f32(ws[b]) * qs[b];
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
    parallel_ranges(rows, 256, resolve_threads(0), [&](std::size_t begin, std::size_t end) {
        float x[q8_0_block];
        for (std::size_t m = begin; m < end; ++m)
            for (std::size_t b = 0; b < nb; ++b) {
                const std::size_t k0 = m * cols + b * q8_0_block;
                for (std::size_t j = 0; j < q8_0_block; ++j)
                    x[j] = f16_to_f32(f16[k0 + j]);
                scales[m * nb + b] = f32_to_f16(quantize_block(x, values + k0));
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
    // The VNNI family multiplies unsigned by signed bytes: it takes the activations as q + 128
    // (a sign-bit flip), made once per call.
    std::vector<std::uint8_t> q_unsigned(w.family == isa::avx512_vnni ? acts.q.size() : 0);
    for (std::size_t i = 0; i < q_unsigned.size(); ++i)
        q_unsigned[i] = static_cast<std::uint8_t>(acts.q[i]) ^ 0x80u;
    void (*rows_fn)(const cpu::q8_0_args&) = q8_0_rows_scalar;
    if (w.family == isa::avx2)
        rows_fn = cpu::q8_0_rows_avx2;
    else if (w.family == isa::avx512_vnni)
        rows_fn = cpu::q8_0_rows_avx512;
    parallel_ranges(w.rows, 64, resolve_threads(n_threads),
                    [&](std::size_t begin, std::size_t end) {
                        rows_fn({w.values.as<std::int8_t>(), w.scales.as<std::uint16_t>(), w.cols,
                                 acts.q.data(), acts.scale.data(), acts.n_rows, y, ldy, begin, end,
                                 q_unsigned.data()});
                    });
}

} // namespace bitnet::kernels
