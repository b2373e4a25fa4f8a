#include "kernels/ternary_matmul.hpp"

#include "kernels/cpu/isa_kernels.hpp"
#include "kernels/parallel.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

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

// Code 3 never appears in bitnet.cpp's files but reads as 0 there (dequantize_row_i2_s); every
// layout stores it as code 1 so no kernel has to care.
constexpr std::uint8_t fix_code(std::uint8_t c) noexcept {
    return c == 3 ? 1 : c;
}

// The tiled layout every SIMD family reads (kernels/cpu/isa_kernels.hpp): tiles of `tile` rows,
// the last one padded with zero codes; inside a tile, for each step s of 4 columns, `tile` bytes
// whose byte j holds at bits 2v+1..2v the code of row (tile/4)·v + j/4, column 4s + j%4.
void pack_tiled(const std::uint8_t* i2s, std::uint32_t rows, std::uint32_t cols,
                std::uint8_t* dst) {
    constexpr std::uint32_t tile = cpu::simd_tile_rows;
    const std::size_t n_tiles = (rows + tile - 1) / tile;
    const std::size_t tile_bytes = static_cast<std::size_t>(tile) * cols / 4;
    const std::uint32_t quarter = tile / 4;
    parallel_ranges(n_tiles, 1, resolve_threads(0), [&](std::size_t begin, std::size_t end) {
        // The tile's codes unpacked one per byte: tile · cols bytes (160 KiB at 64 × 2560).
        std::vector<std::uint8_t> codes(static_cast<std::size_t>(tile) * cols);
        for (std::size_t ti = begin; ti < end; ++ti) {
            for (std::uint32_t r = 0; r < tile; ++r) {
                std::uint8_t* c = codes.data() + static_cast<std::size_t>(r) * cols;
                const std::size_t row = ti * tile + r;
                if (row >= rows) {
                    std::fill(c, c + cols, std::uint8_t{1});
                    continue;
                }
                const std::uint8_t* src = i2s + row * cols / 4;
                for (std::size_t b = 0; b < cols / 128; ++b)
                    for (std::size_t p = 0; p < 32; ++p) {
                        const std::uint8_t byte = src[32 * b + p];
                        c[128 * b + p] = fix_code((byte >> 6) & 3);
                        c[128 * b + 32 + p] = fix_code((byte >> 4) & 3);
                        c[128 * b + 64 + p] = fix_code((byte >> 2) & 3);
                        c[128 * b + 96 + p] = fix_code(byte & 3);
                    }
            }
            std::uint8_t* out = dst + ti * tile_bytes;
            for (std::size_t s = 0; s < cols / 4; ++s)
                for (std::uint32_t j = 0; j < tile; ++j) {
                    std::uint8_t byte = 0;
                    for (std::uint32_t v = 0; v < 4; ++v) {
                        const std::size_t r = quarter * v + j / 4;
                        byte |= static_cast<std::uint8_t>(codes[r * cols + 4 * s + j % 4] << 2 * v);
                    }
                    *out++ = byte;
                }
        }
    });
}

} // namespace

std::uint32_t ternary_tile_rows(isa family) noexcept {
    switch (family) {
    case isa::scalar:
        return 1;
    case isa::avx2:
    case isa::avx512_vnni:
        return cpu::simd_tile_rows;
    }
    return 1;
}

bool ternary_runs_on(const packed_ternary& w, isa family) noexcept {
    // Two layouts: I2_S for scalar, the shared tiles for every SIMD family.
    const bool same_layout = (w.family == isa::scalar) == (family == isa::scalar);
    return same_layout && isa_supported(family);
}

void quantize_activation_rows(const float* x, std::size_t r0, std::size_t r1, std::size_t ldx,
                              quantized_acts& out, isa family) {
    const std::size_t k = out.k;
    family = best_isa_up_to(family);
    for (std::size_t t = r0; t < r1; ++t) {
        const cpu::quantize_args a{x + t * ldx, k, out.q.data() + t * k, &out.scale[t],
                                   &out.sum[t]};
        switch (family) {
        case isa::scalar:
            quantize_row_scalar(a.x, k, a.q, *a.scale, *a.sum);
            break;
        case isa::avx2:
            cpu::quantize_row_avx2(a);
            break;
        case isa::avx512_vnni:
            cpu::quantize_row_avx512(a);
            break;
        }
    }
}

void quantize_activations(const float* x, std::size_t n_rows, std::size_t k, std::size_t ldx,
                          quantized_acts& out, isa family, int n_threads) {
    out.resize(n_rows, k);
    const int threads = n_rows * k < row_parallel_from ? 1 : n_threads;
    parallel_ranges(n_rows, 1, threads, [&](std::size_t r0, std::size_t r1) {
        quantize_activation_rows(x, r0, r1, ldx, out, family);
    });
}

packed_ternary pack_ternary(const std::uint8_t* i2s_codes, std::uint32_t rows, std::uint32_t cols,
                            float scale, isa family) {
    packed_ternary w;
    w.rows = rows;
    w.cols = cols;
    w.scale = scale;
    w.family = best_isa_up_to(family);
    if (w.family != isa::scalar) {
        const std::uint32_t tile = cpu::simd_tile_rows;
        const std::size_t n_tiles = (rows + tile - 1) / tile;
        w.data = aligned_buffer(n_tiles * tile * cols / 4);
        pack_tiled(i2s_codes, rows, cols, w.data.data());
        return w;
    }
    w.data = aligned_buffer(static_cast<std::size_t>(rows) * cols / 4);
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
                         std::size_t ldy, const rows_part& part) {
    const std::size_t k = w.cols;
    const std::size_t row_bytes = k / 4;
    for (std::uint32_t m = part.row_begin; m < part.row_end; ++m) {
        const std::uint8_t* row = w.data.data() + m * row_bytes;
        for (std::size_t t = part.tok_begin; t < part.tok_end; ++t) {
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

namespace {

// The arguments of one SIMD call, with this thread's scratch for an unpacked tile. The scratch
// lives as long as the thread (a compute pool worker or the caller), grown to the widest k seen.
// A part's tokens are a window on the activations and on y.
cpu::ternary_args simd_args(const packed_ternary& w, const quantized_acts& acts, float* y,
                            std::size_t ldy, const rows_part& part) {
    thread_local aligned_buffer scratch;
    const std::size_t need = cpu::ternary_scratch_bytes(w.cols);
    if (scratch.size() < need)
        scratch = aligned_buffer(need);
    const std::size_t t0 = part.tok_begin;
    return {w.data.data(),
            w.rows,
            w.cols,
            w.scale,
            acts.q.data() + t0 * acts.k,
            acts.scale.data() + t0,
            acts.sum.data() + t0,
            part.tok_end - t0,
            y + t0 * ldy,
            ldy,
            part.row_begin,
            part.row_end,
            scratch.data()};
}

} // namespace

void ternary_rows_avx2(const packed_ternary& w, const quantized_acts& acts, float* y,
                       std::size_t ldy, const rows_part& part) {
    cpu::ternary_rows_avx2(simd_args(w, acts, y, ldy, part));
}

void ternary_rows_avx512(const packed_ternary& w, const quantized_acts& acts, float* y,
                         std::size_t ldy, const rows_part& part) {
    cpu::ternary_rows_avx512(simd_args(w, acts, y, ldy, part));
}

std::size_t token_groups(std::size_t tiles, std::size_t tokens, int threads,
                         std::size_t min_tokens) noexcept {
    const auto t = static_cast<std::size_t>(std::max(threads, 1));
    if (t <= 1 || tiles == 0)
        return 1;
    // The busiest thread's units over the mean (parallel_ranges ends the threads within a unit of
    // each other): 40 tiles are 3 for some of 16 threads and 2 for others (1.2); 80 halves, 5
    // each (1.0).
    const auto loss = [&](std::size_t g) {
        const std::size_t units = tiles * g;
        return static_cast<double>((units + t - 1) / t * t) / static_cast<double>(units);
    };
    const std::size_t cap =
        std::min(tokens / std::max<std::size_t>(min_tokens, 1), max_token_groups);
    std::size_t best = 1;
    for (std::size_t g = 2; g <= cap && loss(best) > 1.0 + split_loss_tolerated; ++g)
        if (loss(g) < loss(best) - 1e-9)
            best = g;
    return best;
}

} // namespace detail

void ternary_matmul(const packed_ternary& w, const quantized_acts& acts, float* y, std::size_t ldy,
                    int n_threads) {
    ternary_matmul(w, acts, y, ldy, n_threads, w.family);
}

namespace {

/// `family`'s rows function, the rows a thread's range is a multiple of (its tile), and the
/// fewest tokens worth a part of their own.
struct rows_kernel {
    detail::ternary_rows_fn fn = detail::ternary_rows_scalar;
    std::size_t grain = 16;
    std::size_t min_split_tokens = detail::min_split_tokens;
};

rows_kernel rows_kernel_for(const packed_ternary& w, isa family) {
    if (!ternary_runs_on(w, family))
        throw std::invalid_argument("ternary_matmul: weights packed for " +
                                    std::string(isa_name(w.family)) + " cannot run under " +
                                    std::string(isa_name(family)) + " on this CPU");
    switch (family) {
    case isa::scalar:
        break;
    case isa::avx2:
        return {detail::ternary_rows_avx2, cpu::simd_tile_rows, detail::min_split_tokens_unpacked};
    case isa::avx512_vnni:
        return {detail::ternary_rows_avx512, cpu::simd_tile_rows, detail::min_split_tokens};
    }
    return {};
}

/// Calls fn(tile_begin, tile_end, tok_begin, tok_end) on parts covering `tiles` tiles × `tokens`
/// tokens once each, on up to `threads` threads. The units handed out (parallel_ranges) are tiles,
/// or (tile, token group) pairs where tiles alone share out unevenly (detail::token_groups): a
/// 2,560-row projection has 40 tiles, 3 for half of 16 threads and 2 for the others, while 80
/// halves are 5 for each. Units are tile-major, so a range is the end of one tile's groups, whole
/// tiles over every token, and the start of another's: only the tiles at a range's ends are read
/// once per part. Every element is computed by the same code either way.
template <class Fn>
void split_tiles(const rows_kernel& k, std::size_t tiles, std::size_t tokens, int threads,
                 Fn&& fn) {
    const std::size_t g = detail::token_groups(tiles, tokens, threads, k.min_split_tokens);
    const auto tok = [&](std::size_t j) { return tokens * j / g; };
    parallel_ranges(tiles * g, 1, threads, [&](std::size_t u0, std::size_t u1) {
        if (u0 % g != 0) {
            const std::size_t tile = u0 / g, stop = std::min(u1, (tile + 1) * g);
            fn(tile, tile + 1, tok(u0 - tile * g), tok(stop - tile * g));
            u0 = stop;
        }
        if (u0 >= u1)
            return;
        if (u1 / g > u0 / g)
            fn(u0 / g, u1 / g, std::size_t{0}, tokens);
        if (u1 % g != 0)
            fn(u1 / g, u1 / g + 1, std::size_t{0}, tok(u1 % g));
    });
}

} // namespace

void ternary_matmul_group(std::span<const ternary_product> group, const quantized_acts& acts,
                          int n_threads, isa family) {
    if (group.empty())
        return;
    rows_kernel k;
    std::size_t tiles = 0;
    for (const auto& p : group) {
        k = rows_kernel_for(*p.w, family);
        tiles += (p.w->rows + k.grain - 1) / k.grain;
    }
    // Whole tiles of each product in turn: a range of tiles may end in one product and go on in
    // the next, and a thread never shares a tile's rows for the same tokens.
    split_tiles(k, tiles, acts.n_rows, resolve_threads(n_threads),
                [&](std::size_t begin, std::size_t end, std::size_t t0, std::size_t t1) {
                    std::size_t first = 0;
                    for (const auto& p : group) {
                        const std::size_t n = (p.w->rows + k.grain - 1) / k.grain;
                        const std::size_t lo = std::max(begin, first),
                                          hi = std::min(end, first + n);
                        if (lo < hi)
                            k.fn(*p.w, acts, p.y, p.ldy,
                                 {static_cast<std::uint32_t>((lo - first) * k.grain),
                                  static_cast<std::uint32_t>(
                                      std::min<std::size_t>(p.w->rows, (hi - first) * k.grain)),
                                  t0, t1});
                        first += n;
                    }
                });
}

void ternary_matmul(const packed_ternary& w, const quantized_acts& acts, float* y, std::size_t ldy,
                    int n_threads, isa family) {
    const rows_kernel k = rows_kernel_for(w, family);
    // Parts are whole tiles (the last may be partial), so a thread never shares a tile's rows for
    // the same tokens.
    const std::size_t tiles = (w.rows + k.grain - 1) / k.grain;
    split_tiles(k, tiles, acts.n_rows, resolve_threads(n_threads),
                [&](std::size_t begin, std::size_t end, std::size_t t0, std::size_t t1) {
                    k.fn(w, acts, y, ldy,
                         {static_cast<std::uint32_t>(begin * k.grain),
                          static_cast<std::uint32_t>(std::min<std::size_t>(w.rows, end * k.grain)),
                          t0, t1});
                });
}

} // namespace bitnet::kernels
