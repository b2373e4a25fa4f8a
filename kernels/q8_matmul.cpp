#include "kernels/q8_matmul.hpp"

#include "kernels/cpu/q8_kernels.hpp"
#include "kernels/f16.hpp"
#include "kernels/parallel.hpp"

#include <algorithm>
#include <cmath>

namespace bitnet::kernels {
namespace {

void q8_dots_scalar(const cpu::q8_args& a) {
    const std::size_t n_rows = a.row_end - a.row_begin;
    for (std::size_t m = a.row_begin; m < a.row_end; ++m) {
        const std::int8_t* w = a.w + m * a.k;
        for (std::size_t t = 0; t < a.n_tok; ++t) {
            const std::int8_t* q = a.q + t * a.k;
            std::int32_t dot = 0;
            for (std::size_t i = 0; i < a.k; ++i)
                dot += w[i] * q[i];
            a.dots[t * n_rows + (m - a.row_begin)] = dot;
        }
    }
}

} // namespace

packed_q8 pack_q8_rows(const std::uint16_t* f16, std::uint32_t rows, std::uint32_t cols,
                       isa family) {
    packed_q8 w;
    w.rows = rows;
    w.cols = cols;
    w.family = best_isa_up_to(family);
    w.row_scale.resize(rows);
    w.row_sum.resize(rows);
    w.data = aligned_buffer(static_cast<std::size_t>(rows) * cols);
    auto* dst = w.data.as<std::int8_t>();
    parallel_ranges(rows, 256, resolve_threads(0), [&](std::size_t begin, std::size_t end) {
        std::vector<float> row(cols);
        for (std::size_t m = begin; m < end; ++m) {
            float max = 0.0f;
            for (std::uint32_t k = 0; k < cols; ++k) {
                row[k] = f16_to_f32(f16[m * cols + k]);
                max = std::max(max, std::fabs(row[k]));
            }
            const float scale = max > 0.0f ? max / 127.0f : 1.0f;
            const float inv = 1.0f / scale;
            std::int32_t sum = 0;
            for (std::uint32_t k = 0; k < cols; ++k) {
                const float r = std::nearbyint(row[k] * inv); // half to even
                const auto v = static_cast<std::int8_t>(std::clamp(r, -127.0f, 127.0f));
                dst[m * cols + k] = v;
                sum += v;
            }
            w.row_scale[m] = scale;
            w.row_sum[m] = sum;
        }
    });
    return w;
}

void q8_matmul(const packed_q8& w, const quantized_acts& acts, float* y, std::size_t ldy,
               int n_threads) {
    const std::size_t n_tok = acts.n_rows;
    // Rows in blocks that keep the per-block integer results small and the weight rows streaming.
    constexpr std::size_t block = 64;
    parallel_ranges(
        w.rows, block, resolve_threads(n_threads), [&](std::size_t begin, std::size_t end) {
            std::vector<std::int32_t> dots(n_tok * block);
            // The VNNI family multiplies unsigned by signed bytes: it takes the
            // activations as q + 128 (a sign-bit flip), made once per call.
            std::vector<std::uint8_t> scratch(w.family == isa::avx512_vnni ? n_tok * w.cols : 0);
            for (std::size_t i = 0; i < scratch.size(); ++i)
                scratch[i] = static_cast<std::uint8_t>(acts.q[i]) ^ 0x80u;
            for (std::size_t b0 = begin; b0 < end; b0 += block) {
                const std::size_t b1 = std::min(end, b0 + block);
                const cpu::q8_args a{w.data.as<std::int8_t>(),
                                     w.row_sum.data(),
                                     w.cols,
                                     acts.q.data(),
                                     n_tok,
                                     b0,
                                     b1,
                                     dots.data(),
                                     scratch.data()};
                switch (w.family) {
                case isa::scalar:
                    q8_dots_scalar(a);
                    break;
                case isa::avx2:
                    cpu::q8_dots_avx2(a);
                    break;
                case isa::avx512_vnni:
                    cpu::q8_dots_avx512(a);
                    break;
                }
                const std::size_t n = b1 - b0;
                for (std::size_t t = 0; t < n_tok; ++t)
                    for (std::size_t m = b0; m < b1; ++m)
                        y[t * ldy + m] = static_cast<float>(dots[t * n + (m - b0)]) /
                                         acts.scale[t] * w.row_scale[m];
            }
        });
}

} // namespace bitnet::kernels
