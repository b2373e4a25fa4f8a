#include "kernels/ternary_matmul.hpp"

#include "kernels/parallel.hpp"

#include <algorithm>
#include <cmath>

namespace bitnet::kernels {
namespace {

void quantize_row_scalar(const float* x, std::size_t k, std::int8_t* q, float& scale,
                         std::int32_t& sum) {
    double max = 1e-5;
    for (std::size_t i = 0; i < k; ++i)
        max = std::max(max, static_cast<double>(std::fabs(x[i])));
    const auto s = static_cast<float>(127.0 / max);
    std::int32_t total = 0;
    for (std::size_t i = 0; i < k; ++i) {
        // nearbyint in the default rounding mode = round half to even, as ggml's magic-number
        // nearest_int.
        const float r = std::nearbyint(x[i] * s);
        const auto v = static_cast<std::int8_t>(std::clamp(r, -128.0f, 127.0f));
        q[i] = v;
        total += v;
    }
    scale = s;
    sum = total;
}

} // namespace

void quantize_activations(const float* x, std::size_t n_rows, std::size_t k, std::size_t ldx,
                          quantized_acts& out, isa /*family*/) {
    out.resize(n_rows, k);
    for (std::size_t t = 0; t < n_rows; ++t)
        quantize_row_scalar(x + t * ldx, k, out.q.data() + t * k, out.scale[t], out.sum[t]);
}

packed_ternary pack_ternary(const std::uint8_t* i2s_codes, std::uint32_t rows, std::uint32_t cols,
                            float scale, isa /*family*/) {
    packed_ternary w;
    w.rows = rows;
    w.cols = cols;
    w.scale = scale;
    w.family = isa::scalar;
    w.data = aligned_buffer(static_cast<std::size_t>(rows) * cols / 4);
    // Code 3 never appears in bitnet.cpp's files but reads as 0 there (dequantize_row_i2_s);
    // map it to code 1 here so no kernel has to care.
    std::uint8_t* dst = w.data.data();
    for (std::size_t i = 0; i < w.data.size(); ++i) {
        std::uint8_t b = i2s_codes[i];
        for (int shift = 0; shift < 8; shift += 2)
            if (((b >> shift) & 3) == 3)
                b = static_cast<std::uint8_t>(b & ~(2u << shift));
        dst[i] = b;
    }
    return w;
}

namespace detail {

void ternary_rows_scalar(const packed_ternary& w, const quantized_acts& acts, float* y,
                         std::size_t ldy, std::uint32_t row_begin, std::uint32_t row_end) {
    const std::size_t k = w.cols;
    const std::size_t row_bytes = k / 4;
    for (std::uint32_t m = row_begin; m < row_end; ++m) {
        const std::uint8_t* row = w.data.data() + m * row_bytes;
        for (std::size_t t = 0; t < acts.n_rows; ++t) {
            const std::int8_t* q = acts.q.data() + t * k;
            std::int32_t dot = 0;
            for (std::size_t b = 0; b < k / 128; ++b) {
                const std::uint8_t* block = row + 32 * b;
                const std::int8_t* qb = q + 128 * b;
                for (std::size_t p = 0; p < 32; ++p) {
                    const std::uint8_t byte = block[p];
                    dot += ((byte >> 6) & 3) * qb[p] + ((byte >> 4) & 3) * qb[32 + p] +
                           ((byte >> 2) & 3) * qb[64 + p] + (byte & 3) * qb[96 + p];
                }
            }
            y[t * ldy + m] = static_cast<float>(dot - acts.sum[t]) / acts.scale[t] * w.scale;
        }
    }
}

} // namespace detail

void ternary_matmul(const packed_ternary& w, const quantized_acts& acts, float* y, std::size_t ldy,
                    int n_threads) {
    const detail::ternary_rows_fn rows_fn = detail::ternary_rows_scalar;
    parallel_ranges(w.rows, 16, resolve_threads(n_threads),
                    [&](std::size_t begin, std::size_t end) {
                        rows_fn(w, acts, y, ldy, static_cast<std::uint32_t>(begin),
                                static_cast<std::uint32_t>(end));
                    });
}

} // namespace bitnet::kernels
